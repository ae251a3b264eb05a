-- Report: compare-pairs
-- Traces of two name patterns paired by what their wildcards match (tracedb report compare --trace 'h100_*' --vs 'mi300_*': h100_bert with mi300_bert), each pair compared: an overview of the pairs, then each pair's operations, the largest gaps first.
-- Alias: compare when patterns
-- Example: tracedb report compare-pairs --trace 'h100_*' --vs 'mi300_*'
-- Parameters:
--   trace = NULL   pattern of the A traces' names ('h100_*')
--   vs = NULL      pattern of the B traces' names ('mi300_*')
--   phase = NULL   only kernels of this phase: prefill, decode, mixed or none (NULL: all)
--   limit = NULL   rows of each table (NULL: all)
-- Columns:
--   key         text             what the wildcards matched: the pair's common part
--   a_trace     text      wide   A's trace (empty: no A trace has this part)
--   b_trace     text      wide   B's trace (empty: no B trace has this part)
--   paired      text             both, only A or only B
--   a_span_ns   duration         A's wall-clock span on the GPU
--   b_span_ns   duration         B's
--   a_total_ns  duration  total  A's kernel time
--   b_total_ns  duration  total  B's kernel time
--   gap_ns      duration  total  a_total_ns - b_total_ns
--   top_op      text             the operation with the largest gap in the pair
--   top_gap_ns  duration         its gap
WITH p AS (SELECT * FROM trace_pairs($trace, $vs)),
ops AS (SELECT * FROM compare_pairs($trace, $vs, $phase)),
totals AS (
    SELECT pair, sum(a_total_ns) AS a_total_ns, sum(b_total_ns) AS b_total_ns,
           arg_max(op, abs(gap_ns)) AS top_op, arg_max(gap_ns, abs(gap_ns)) AS top_gap_ns
    FROM ops GROUP BY pair
), spans AS (
    SELECT trace_id, span_ns FROM gpu_timeline WHERE step IS NULL
)
SELECT p.key, p.a_trace, p.b_trace,
       CASE WHEN p.a_trace IS NULL THEN 'only B' WHEN p.b_trace IS NULL THEN 'only A' ELSE 'both' END AS paired,
       sa.span_ns AS a_span_ns, sb.span_ns AS b_span_ns,
       t.a_total_ns, t.b_total_ns, t.a_total_ns - t.b_total_ns AS gap_ns, t.top_op, t.top_gap_ns
FROM p LEFT JOIN totals t USING (pair)
LEFT JOIN spans sa ON sa.trace_id = p.a_trace_id LEFT JOIN spans sb ON sb.trace_id = p.b_trace_id
ORDER BY p.a_trace IS NULL OR p.b_trace IS NULL, abs(t.a_total_ns - t.b_total_ns) DESC NULLS LAST, p.key
LIMIT $limit;

-- Section: ops
-- Each pair's operations, the largest gaps over every pair first.
-- Columns:
--   key         text             the pair's common part
--   op          text             operation family
--   a_calls     count     total  calls in A
--   b_calls     count     total  calls in B
--   a_total_ns  duration  total  A's time in the operation
--   b_total_ns  duration  total  B's
--   gap_ns      duration  total  a_total_ns - b_total_ns
--   ratio       ratio            mean time of a call in A over B's
--   a_trace     text      wide   A's trace
--   b_trace     text      wide   B's trace
SELECT key, op, a_calls, b_calls, a_total_ns, b_total_ns, gap_ns, ratio, a_trace, b_trace
FROM compare_pairs($trace, $vs, $phase)
ORDER BY abs(gap_ns) DESC, key, op
LIMIT $limit;
