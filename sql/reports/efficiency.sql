-- Report: efficiency
-- The same operator, shape and dtype on two traces, each on its own device's roofline: time, achieved TFLOP/s and share of the device's peak on either side, the ratio of their call times and which side is further from its roof; the most time at stake first (efficiency_pairs).
-- Example: tracedb report efficiency --trace h100_bert-small --vs mi300_bert-small
-- Parameters:
--   trace = NULL   trace A (name or #id)
--   vs = NULL      trace B (name or #id)
--   limit = NULL   rows (NULL: every shape)
-- Columns:
--   cpu_op       text             the operator
--   shape        text             its shape (GEMM M×N×K, attention B×H×N_q×N_kv×d, ...)
--   dtype        text      wide   data type
--   a_calls      count     total wide  calls in A
--   b_calls      count     total wide  calls in B
--   a_total_ns   duration  total  A's GPU time in them
--   b_total_ns   duration  total  B's
--   a_tflops     number    wide   A's achieved TFLOP/s
--   b_tflops     number    wide   B's
--   a_peak_pct   percent          A's share of its device's bounding peak
--   b_peak_pct   percent          B's
--   ratio        ratio     wide   mean time of a call in A over B's
--   further      text             the side further from its own roof
--   at_stake_ns  duration  total  a_total_ns - b_total_ns
--   assumption   text      note   what either side's FLOPs and bytes assume that its trace does not record ('A: ...; B: ...')
SELECT cpu_op, shape, dtype, a_calls, b_calls, a_total_ns, b_total_ns, a_tflops, b_tflops, a_peak_pct, b_peak_pct,
       ratio, further, at_stake_ns, assumption
FROM efficiency_pairs($trace, $vs)
ORDER BY abs(at_stake_ns) DESC, cpu_op, shape
LIMIT $limit;

-- Section: summary
-- Per family (GEMM, attention, convolution, elementwise, memory) and side: the time, and the share
-- of it spent in shapes running below half their device's peak.
-- Columns:
--   family         text             gemm, attention, conv, elementwise or memory
--   a_total_ns     duration  total  A's time in the family
--   b_total_ns     duration  total  B's
--   a_below_half   percent          share of A's time in shapes below 50 % of their peak
--   b_below_half   percent          share of B's
WITH shapes AS MATERIALIZED (
    SELECT * FROM roofline_shapes_of((SELECT coalesce(list(DISTINCT trace_id), []) FROM compared_sides($trace, $vs)))
), a AS (SELECT * FROM shapes WHERE is_trace(trace, trace_id, $trace)),
b AS (SELECT * FROM shapes WHERE is_trace(trace, trace_id, $vs)),
s AS (
    SELECT 'A' AS side, family, total_ns, peak_pct FROM a
    UNION ALL SELECT 'B', family, total_ns, peak_pct FROM b
)
SELECT family, coalesce(sum(total_ns) FILTER (side = 'A'), 0) AS a_total_ns,
       coalesce(sum(total_ns) FILTER (side = 'B'), 0) AS b_total_ns,
       100.0 * sum(total_ns) FILTER (side = 'A' AND peak_pct < 50) / nullif(sum(total_ns) FILTER (side = 'A' AND peak_pct IS NOT NULL), 0) AS a_below_half,
       100.0 * sum(total_ns) FILTER (side = 'B' AND peak_pct < 50) / nullif(sum(total_ns) FILTER (side = 'B' AND peak_pct IS NOT NULL), 0) AS b_below_half
FROM s
GROUP BY family
ORDER BY greatest(a_total_ns, b_total_ns) DESC;
