-- Report: compare
-- Two traces operation by operation: calls, kernels, mean time per call and total time on each side, ratio and gap,
-- grouped as A slower / A faster / within 10 % (then operations found on one side only), with the
-- cpu_op that issues each and the kernels behind the time.
-- Chart: op -> a_total_ns,b_total_ns  Time per operation, A and B side by side
-- Strips: A's slowest and typical step above B's (or -p step=N): streams and idle gaps
-- Example: tracedb report compare --trace h100_bert-small --vs mi300_bert-small
-- Parameters:
--   trace = NULL   trace A (name or #id)
--   vs = NULL      trace B (name or #id)
--   phase = NULL   only kernels of this phase: prefill, decode, mixed or none (NULL: all)
--   limit = NULL   rows of the operations table (NULL: every operation)
--   step = NULL integer  the step the HTML's timeline strips draw (NULL: the slowest and a typical one)
-- Columns:
--   status         text             A slower, A faster, within 10%, only A or only B (by total time)
--   op             text             operation family
--   a_calls        count     total  calls of the operation in A (a call's kernels, e.g. a GEMM and its split-K reduction, count once)
--   b_calls        count     total  calls in B
--   a_kernels      count     total wide  kernels in A
--   b_kernels      count     total wide  kernels in B
--   a_total_ns     duration  total  total kernel time in A
--   b_total_ns     duration  total  total kernel time in B
--   gap_ns         duration  total  a_total_ns - b_total_ns
--   ratio          ratio            a_avg_ns / b_avg_ns (above 1: A's calls are slower one for one)
--   a_avg_ns       duration  wide   mean time of a call in A
--   b_avg_ns       duration  wide   mean time of a call in B
--   a_cpu_op       text      wide   cpu_op issuing most of A's kernels of the operation
--   b_cpu_op       text      wide   cpu_op issuing most of B's kernels of the operation
--   a_top_kernels  kernel    wide   A's three kernel names with the most time, with their share
--   b_top_kernels  kernel    wide   B's three kernel names with the most time, with their share
SELECT status, op, a_calls, b_calls, a_kernels, b_kernels, a_total_ns, b_total_ns, gap_ns, ratio, a_avg_ns, b_avg_ns,
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

-- Section: why
-- Shown: first
-- What to fix first: the causes of the wall-clock gap ranked by the time at stake (the report why,
-- with its defaults: gaps of 20 µs and more told apart, twelve findings before the remainder).
-- Shared: step_windows, device_activity  read by the findings many times each
-- Columns:
--   rank         id               1 first: the largest time at stake; the remainder last
--   kind         text             the finding's kind (see tracedb report why)
--   at_stake_ns  duration  total  what the slower side gains if this part matched the other side
--   per_step_ns  duration         the same per step of the slower side
--   where        text      wide   the code to look at
--   next         text      note   the command that shows the evidence
--   finding      text             what is slower and by how much, both sides' numbers
SELECT rank, kind, at_stake_ns, per_step_ns, "where", next, finding
FROM why_findings($trace, $vs, $phase, 20, 12, NULL)
ORDER BY rank;

-- Section: wall-clock
-- Shown: first
-- Each side's span on the GPU split into parts that add up to it: idle time, each operation's
-- kernel time, kernels running at once (counted once), memcpy no kernel hides; the gaps of the
-- parts add up to the gap of the spans, so the largest gaps say where the wall-clock difference
-- comes from. With --phase: the steps of that phase.
-- Chart: part -> a_ns,b_ns  Wall-clock time by part, A and B side by side
-- Shared: step_windows, device_activity  read by the GPU timeline of each side
-- Columns:
--   part        text             span (the whole), idle, an operation, overlap (kernels at once), exposed memcpy
--   a_ns        duration         A's time in the part
--   b_ns        duration         B's time in the part
--   gap_ns      duration         a_ns - b_ns (the parts below the span add up to the span's gap)
--   gap_pct     percent          the part's share of the span's gap
SELECT part, a_ns, b_ns, gap_ns,
       CASE WHEN ord > 1 THEN 100.0 * gap_ns / nullif(sum(gap_ns) FILTER (ord = 1) OVER (), 0) END AS gap_pct
FROM compare_wall($trace, $vs, $phase)
ORDER BY ord, abs(gap_ns) DESC, part;

-- Section: steps
-- The steps of both traces paired in order within each phase: each side's span, idle time and
-- what filled the rest, and how much longer or shorter the step ran than its pair.
-- Chart: pair+phase+side -> compute_ns,exposed_comm_ns,exposed_memcpy_ns,idle_ns stacked  Wall-clock time of each step
-- Columns:
--   pair               id               1, 2, ... within the phase
--   phase              text             the steps' phase
--   side               text             A or B
--   step               id               the side's step number
--   span_ns            duration         the step's span on the GPU
--   idle_ns            duration         idle time in it
--   compute_ns         duration         computation
--   exposed_comm_ns    duration         communication no computation hides
--   exposed_memcpy_ns  duration  wide   memcpy nothing hides
--   vs_other_ns        duration         span minus the paired step's (empty: no pair)
SELECT pair, phase, side, step, span_ns, idle_ns, compute_ns, exposed_comm_ns, exposed_memcpy_ns, vs_other_ns
FROM compare_steps($trace, $vs, $phase)
ORDER BY CASE phase WHEN 'prefill' THEN 1 WHEN 'decode' THEN 2 WHEN 'mixed' THEN 3 ELSE 4 END, pair, side;
