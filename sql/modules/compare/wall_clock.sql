-- include: classify.align
-- include: core.selection
-- include: timeline.timeline

-- Two traces compared in wall-clock time: where the difference of their spans comes from, and
-- step by step.

-- The wall-clock part of a device activity (scalar macro): its operation as the kernels' tables
-- name it (align_op), a memset the runtime ran (cudaMemsetAsync: a memory operation, not a kernel)
-- apart from the kernels that fill memory, so that "Memset" is the same time in every section.
CREATE OR REPLACE MACRO wall_part(kind, op, pattern) AS
    CASE WHEN kind = 'memset' THEN 'Memset (runtime call)' ELSE align_op(op, pattern) END;

-- The span of each trace (or of its steps of one phase) split into parts that add up to it
-- exactly: idle time, each operation's kernel time (the runtime's memsets apart: wall_part),
-- minus the time kernels ran at once on several streams (counted once in the span), plus the
-- memcpy time no kernel overlapped. So the gap of the spans is the sum of the gaps of the parts (table macro).
-- Parameters: trace_a, trace_b: trace names or ids; want_phase: prefill, decode, mixed or none,
-- NULL for the whole traces (with a phase: the steps of that phase).
-- Columns:
--   part    span (the total), idle, an operation, overlap (kernels at once), exposed memcpy
--   a_ns    the part's time in A (overlap: negative)
--   b_ns    the part's time in B
--   gap_ns  a_ns - b_ns; the parts' gaps add up to the span's
--   ord     1 span, 2 idle, 3 operations, 4 overlap, 5 exposed memcpy: the order the parts add in
CREATE OR REPLACE MACRO compare_wall(trace_a, trace_b, want_phase) AS TABLE
WITH sides AS MATERIALIZED (SELECT * FROM compared_sides(trace_a, trace_b)), windows AS MATERIALIZED (
    SELECT s.side, g.* FROM sides s JOIN gpu_timeline g USING (trace_id)
    WHERE CASE WHEN want_phase IS NULL THEN g.step IS NULL ELSE g.step IS NOT NULL AND g.phase = want_phase END
), ops AS (
    SELECT s.side, wall_part(d.kind, d.op, d.pattern) AS part, sum(d.dur_ns) AS ns
    FROM sides s JOIN device_activity d USING (trace_id)
    WHERE d.kind <> 'memcpy'
      AND (want_phase IS NULL OR (d.trace_id, d.step) IN (SELECT (trace_id, step) FROM windows))
    GROUP BY ALL
), parts AS (
    SELECT side, 1 AS ord, 'span' AS part, sum(span_ns) AS ns FROM windows GROUP BY side
    UNION ALL
    SELECT side, 2, 'idle', sum(idle_ns) FROM windows GROUP BY side
    UNION ALL
    SELECT side, 3, part, ns FROM ops
    UNION ALL
    SELECT w.side, 4, 'overlap (kernels at once)',
           sum(w.busy_ns - w.exposed_memcpy_ns) - any_value(o.ns)
    FROM windows w JOIN (SELECT side, sum(ns) AS ns FROM ops GROUP BY side) o USING (side) GROUP BY w.side
    UNION ALL
    SELECT side, 5, 'exposed memcpy', sum(exposed_memcpy_ns) FROM windows GROUP BY side
)
SELECT part, coalesce(sum(ns) FILTER (side = 'A'), 0)::BIGINT AS a_ns,
       coalesce(sum(ns) FILTER (side = 'B'), 0)::BIGINT AS b_ns,
       (coalesce(sum(ns) FILTER (side = 'A'), 0) - coalesce(sum(ns) FILTER (side = 'B'), 0))::BIGINT AS gap_ns,
       min(ord) AS ord
FROM parts GROUP BY part;

-- The steps of two traces side by side, paired in order within each phase (A's first decode
-- with B's first decode, ...): each side's wall-clock parts per step (table macro).
-- Parameters: trace_a, trace_b: trace names or ids; want_phase: only steps of this phase (NULL: all).
-- Columns:
--   pair               1, 2, ... the pair's order within its phase
--   phase              the steps' phase
--   side               A or B
--   trace_id           the side's trace
--   step               the side's step number (kernel_facts.iteration)
--   span_ns            the step's span on the device
--   busy_ns            busy time
--   idle_ns            idle time
--   compute_ns         computation
--   exposed_comm_ns    communication no computation overlaps
--   exposed_memcpy_ns  memcpy nothing overlaps
--   vs_other_ns        this step's span minus the paired step's on the other side (NULL: no pair)
CREATE OR REPLACE MACRO compare_steps(trace_a, trace_b, want_phase) AS TABLE
WITH sides AS MATERIALIZED (SELECT * FROM compared_sides(trace_a, trace_b)), steps AS (
    SELECT s.side, g.*, row_number() OVER (PARTITION BY s.side, g.phase ORDER BY g.step) AS pair
    FROM sides s JOIN gpu_timeline g USING (trace_id)
    WHERE g.step IS NOT NULL AND (want_phase IS NULL OR g.phase = want_phase)
)
SELECT pair, phase, side, trace_id, step, span_ns, busy_ns, idle_ns, compute_ns, exposed_comm_ns,
       exposed_memcpy_ns,
       CASE WHEN count(*) OVER (PARTITION BY phase, pair) = 2
            THEN 2 * span_ns - sum(span_ns) OVER (PARTITION BY phase, pair) END AS vs_other_ns
FROM steps;
