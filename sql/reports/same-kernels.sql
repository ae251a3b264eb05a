-- Report: same-kernels
-- Kernels both traces run under the very same name (Triton, PyTorch native, shared libraries),
-- compared count for count and time for time, largest gap first; then how many each side wins.
-- Example: tracedb report same-kernels --trace h100_bert-small --vs mi300_bert-small
-- Parameters:
--   trace = NULL   trace A (name or #id)
--   vs = NULL      trace B (name or #id)
--   phase = NULL   only kernels of this phase: prefill, decode, mixed or none (NULL: all)
--   limit = NULL   rows of the kernels table (NULL: all)
-- Columns:
--   kernel      kernel           kernel name
--   op          text             operation family
--   a_kernels   count     total  times A runs it
--   b_kernels   count     total  times B runs it
--   a_avg_ns    duration  wide   mean duration in A
--   b_avg_ns    duration  wide   mean duration in B
--   ratio       ratio            a_avg_ns / b_avg_ns
--   a_total_ns  duration  total  total duration in A
--   b_total_ns  duration  total  total duration in B
--   gap_ns      duration  total  a_total_ns - b_total_ns
--   faster      text             A, B or equal (by mean duration)
SELECT kernel, op, a_kernels, b_kernels, a_avg_ns, b_avg_ns, ratio, a_total_ns, b_total_ns,
       gap_ns, faster
FROM same_kernels($trace, $vs, $phase)
ORDER BY abs(gap_ns) DESC, kernel
LIMIT $limit;

-- Section: summary
-- The seed's same-kernel summary: how many, the mean ratio, and where each side is faster.
-- Columns:
--   same_kernels  count     kernel names both sides run
--   mean_ratio    ratio     mean of a_avg_ns / b_avg_ns over them
--   a_faster      count     kernels faster in A
--   b_faster      count     kernels faster in B
--   a_total_ns    duration  A's time in them
--   b_total_ns    duration  B's time in them
SELECT count(*) AS same_kernels,
       avg(ratio ORDER BY kernel) AS mean_ratio,  -- in one order: a sum of doubles depends on the order of its terms
       count(*) FILTER (faster = 'A') AS a_faster, count(*) FILTER (faster = 'B') AS b_faster,
       coalesce(sum(a_total_ns), 0) AS a_total_ns, coalesce(sum(b_total_ns), 0) AS b_total_ns
FROM same_kernels($trace, $vs, $phase);
