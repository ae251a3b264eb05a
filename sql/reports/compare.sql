-- Report: compare
-- Two traces operation by operation: kernels, mean and total time on each side, ratio and gap,
-- grouped as A slower / A faster / within 10 % (then operations found on one side only), with the
-- cpu_op that issues each and the kernels behind the time.
-- Chart: op -> a_total_ns,b_total_ns  Time per operation, A and B side by side
-- Parameters:
--   trace = NULL   trace A (name or #id)
--   vs = NULL      trace B (name or #id)
--   phase = NULL   only kernels of this phase: prefill, decode, mixed or none (NULL: all)
--   limit = NULL   rows of the operations table (NULL: every operation)
-- Columns:
--   status         text             A slower, A faster, within 10%, only A or only B (by total time)
--   op             text             operation family
--   a_kernels      count     total  kernels in A
--   b_kernels      count     total  kernels in B
--   a_total_ns     duration  total  total kernel time in A
--   b_total_ns     duration  total  total kernel time in B
--   gap_ns         duration  total  a_total_ns - b_total_ns
--   ratio          ratio            a_avg_ns / b_avg_ns (above 1: A's kernels are slower one for one)
--   a_avg_ns       duration  wide   mean kernel duration in A
--   b_avg_ns       duration  wide   mean kernel duration in B
--   a_cpu_op       text      wide   cpu_op issuing most of A's kernels of the operation
--   b_cpu_op       text      wide   cpu_op issuing most of B's kernels of the operation
--   a_top_kernels  kernel    wide   A's three kernel names with the most time, with their share
--   b_top_kernels  kernel    wide   B's three kernel names with the most time, with their share
SELECT status, op, a_kernels, b_kernels, a_total_ns, b_total_ns, gap_ns, ratio, a_avg_ns, b_avg_ns,
       a_cpu_op, b_cpu_op, a_top_kernels, b_top_kernels
FROM compare_ops($trace, $vs, $phase)
ORDER BY list_position(['A slower', 'A faster', 'within 10%', 'only A', 'only B'], status), abs(gap_ns) DESC, op
LIMIT $limit;

-- Section: summary
-- Operations per group, with the time each group costs on either side.
-- Columns:
--   status      text             A slower, A faster, within 10%, only A or only B
--   ops         count     total  operations in the group
--   a_total_ns  duration  total  A's kernel time in those operations
--   b_total_ns  duration  total  B's kernel time in those operations
--   gap_ns      duration  total  a_total_ns - b_total_ns
SELECT status, count(*) AS ops, sum(a_total_ns) AS a_total_ns, sum(b_total_ns) AS b_total_ns,
       sum(gap_ns) AS gap_ns
FROM compare_ops($trace, $vs, $phase)
GROUP BY status
ORDER BY list_position(['A slower', 'A faster', 'within 10%', 'only A', 'only B'], status);
