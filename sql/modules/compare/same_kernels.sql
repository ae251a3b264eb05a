-- include: classify.align
-- include: compare.pairs

-- Kernels that both traces run under the very same name (Triton kernels, PyTorch native kernels,
-- vendor-neutral libraries): the one place where two traces compare kernel for kernel. The seed
-- takes them from the aligned pairs of each layer; here every kernel of the two traces counts, so
-- kernels outside layers (embedding, sampling) compare too. alignment_pairs.same_kernel gives the
-- seed's per-place view.

-- Kernels with identical names on both sides, count for count and time for time (table macro).
-- Parameters: trace_a, trace_b: trace names or ids; want_phase: prefill, decode, mixed or none,
-- NULL for every phase.
-- Columns:
--   kernel      the kernel name both sides run
--   op          its operation family on side A
--   a_kernels   times A runs it
--   b_kernels   times B runs it
--   a_avg_ns    mean duration in A
--   b_avg_ns    mean duration in B
--   a_total_ns  total duration in A
--   b_total_ns  total duration in B
--   ratio       a_avg_ns / b_avg_ns: above 1 when the kernel is slower in A
--   gap_ns      a_total_ns - b_total_ns
--   faster      'A', 'B' or 'equal': the side whose mean duration is lower
CREATE OR REPLACE MACRO same_kernels(trace_a, trace_b, want_phase) AS TABLE
WITH per_side AS (
    SELECT side, name, first(align_op ORDER BY align_op) AS op, count(*) AS kernels, sum(dur_ns) AS total_ns, avg(dur_ns) AS avg_ns
    FROM pair_kernels(trace_a, trace_b, want_phase)
    GROUP BY side, name
), a AS (SELECT * FROM per_side WHERE side = 'A'), b AS (SELECT * FROM per_side WHERE side = 'B')
SELECT a.name AS kernel, a.op, a.kernels AS a_kernels, b.kernels AS b_kernels,
       a.avg_ns AS a_avg_ns, b.avg_ns AS b_avg_ns, a.total_ns AS a_total_ns, b.total_ns AS b_total_ns,
       a.avg_ns / nullif(b.avg_ns, 0) AS ratio,
       a.total_ns - b.total_ns AS gap_ns,
       CASE WHEN a.avg_ns < b.avg_ns THEN 'A' WHEN b.avg_ns < a.avg_ns THEN 'B' ELSE 'equal' END AS faster
FROM a JOIN b ON a.name = b.name;
