-- include: classify.align
-- include: compare.pairs

-- Per-operation comparison of two traces (the seed analyzer's operations table).

-- Per operation: calls, kernels, mean time per call and total time on each side, their ratio and gap, the group the
-- operation falls in, the most common issuing cpu_op and the kernels behind the time (table macro).
-- Parameters: trace_a, trace_b: trace names or ids; want_phase: prefill, decode, mixed or none,
-- NULL for every phase.
-- Columns:
--   op             operation family (a guessed fusion: its parts, e.g. RMSNorm+GEMM)
--   status         'A slower' (A's total time more than 10 % above B's), 'A faster' (B's more than
--                  10 % above A's), 'within 10%', 'only A' or 'only B' (the seed formatter's
--                  groups; its analyzer drew them at a 5 ms gap, which no small trace reaches)
--   a_calls        calls of the operation in A (kernel_facts.call_id: the kernels of one cpu_op
--                  call, a GEMM with its split-K reduction, count once; a kernel replayed from a
--                  graph is a call of its own)
--   b_calls        calls of the operation in B
--   a_kernels      kernels of the operation in A
--   b_kernels      kernels of the operation in B
--   a_avg_ns       mean time of a call in A (its kernels' durations summed)
--   b_avg_ns       mean time of a call in B
--   a_total_ns     total kernel time in A
--   b_total_ns     total kernel time in B
--   ratio          a_avg_ns / b_avg_ns: above 1 when A's calls are slower one for one
--   gap_ns         a_total_ns - b_total_ns: what the operation costs A more than B in all
--   a_cpu_op       cpu_op that issued most of A's kernels of the operation
--   b_cpu_op       cpu_op that issued most of B's kernels of the operation
--   a_top_kernels  A's three kernel names with the most time, with their share of the row
--   b_top_kernels  B's three kernel names with the most time, with their share of the row
CREATE OR REPLACE MACRO compare_ops(trace_a, trace_b, want_phase) AS TABLE
WITH k AS MATERIALIZED (
    SELECT side, align_op AS op, name, cpu_op, dur_ns, call_id FROM pair_kernels(trace_a, trace_b, want_phase)
), per_side AS (
    SELECT side, op, count(DISTINCT call_id) AS calls, count(*) AS kernels,
           sum(dur_ns) / count(DISTINCT call_id) AS avg_ns, sum(dur_ns) AS total_ns
    FROM k GROUP BY side, op
), cpu AS (
    SELECT side, op, first(cpu_op ORDER BY n DESC, cpu_op) AS cpu_op
    FROM (SELECT side, op, cpu_op, count(*) AS n FROM k WHERE cpu_op IS NOT NULL GROUP BY ALL)
    GROUP BY side, op
), tops AS (
    SELECT side, op,
           string_agg(name || ' (' || printf('%.0f', 100.0 * ns / nullif(op_ns, 0)) || '%)', '; '
                      ORDER BY ns DESC, name) FILTER (rk <= 3) AS top_kernels
    FROM (SELECT side, op, name, sum(dur_ns) AS ns,
                 sum(sum(dur_ns)) OVER (PARTITION BY side, op) AS op_ns,
                 row_number() OVER (PARTITION BY side, op ORDER BY sum(dur_ns) DESC, name) AS rk
          FROM k GROUP BY side, op, name)
    GROUP BY side, op
), sides AS (
    SELECT p.*, c.cpu_op, t.top_kernels
    FROM per_side p LEFT JOIN cpu c USING (side, op) LEFT JOIN tops t USING (side, op)
), a AS (SELECT * FROM sides WHERE side = 'A'), b AS (SELECT * FROM sides WHERE side = 'B')
SELECT coalesce(a.op, b.op) AS op,
       CASE WHEN b.op IS NULL THEN 'only A'
            WHEN a.op IS NULL THEN 'only B'
            WHEN a.total_ns > 1.1 * b.total_ns THEN 'A slower'
            WHEN b.total_ns > 1.1 * a.total_ns THEN 'A faster'
            ELSE 'within 10%' END AS status,
       coalesce(a.calls, 0) AS a_calls, coalesce(b.calls, 0) AS b_calls,
       coalesce(a.kernels, 0) AS a_kernels, coalesce(b.kernels, 0) AS b_kernels,
       a.avg_ns AS a_avg_ns, b.avg_ns AS b_avg_ns,
       coalesce(a.total_ns, 0) AS a_total_ns, coalesce(b.total_ns, 0) AS b_total_ns,
       a.avg_ns / nullif(b.avg_ns, 0) AS ratio,
       coalesce(a.total_ns, 0) - coalesce(b.total_ns, 0) AS gap_ns,
       a.cpu_op AS a_cpu_op, b.cpu_op AS b_cpu_op,
       a.top_kernels AS a_top_kernels, b.top_kernels AS b_top_kernels
FROM a FULL JOIN b USING (op);
