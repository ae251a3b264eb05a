-- Each operation's kernels and time on the BERT pair: one name per operation across vendors
-- (both sides have Attention, Dense GEMM, LayerNorm... under the same names).
SELECT t.name AS trace, o.op, count(*) AS kernels, sum(k.dur_ns) AS total_ns
FROM kernels k JOIN traces t USING (trace_id) JOIN kernel_ops o USING (trace_id, kernel_id)
WHERE t.name IN ('h100_bert-small', 'mi300_bert-small')
GROUP BY ALL ORDER BY ALL;
