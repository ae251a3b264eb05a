-- The BERT pair's GEMMs and attention on the roofline: FLOPs and bytes of one call per shape,
-- the same on either vendor for the same shape.
SELECT t.name AS trace, w.cpu_op, w.shape, w.dtype, w.flops, w.bytes, count(*) AS calls
FROM op_work w JOIN traces t USING (trace_id)
WHERE t.name IN ('h100_bert-small', 'mi300_bert-small') AND w.flops IS NOT NULL
GROUP BY ALL ORDER BY ALL;
