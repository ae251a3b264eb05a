-- include: classify.align
-- include: compare.pairs
-- include: core.selection

-- Fusion differences between two traces: the seed fusion analyzer's three detectors, run in its
-- order, each skipping a fused operation type an earlier finding already reported.
--
--   1 explicit  an operation whose name holds '+' (a fused kernel rule such as RMSNorm+GEMM, or
--               the parts of a 'Fused (Unknown)' kernel) found on one side only: that side fuses
--               the parts the other side runs separately.
--   2 sequence  an operation found on one side only (not 'Other'), seen at least 5 times, and
--               preceded by one same operation more than 80 % of the time, where the other side
--               runs that preceding operation: the other side fuses the pair into it.
--   3 count     an operation on both sides (not 'Other') with at least 50 kernels on the two
--               together, one side running it at least 1.5x as often: the side with fewer fuses.
--
-- Kernels are taken in start order over the whole trace (within the phase under a phase filter),
-- as the seed does. Where the seed would report the parts of an explicit fusion again, tracedb
-- first credits each fused kernel to the operations it holds: an operation that a fused operation
-- of the other side contains is not a sequence candidate (the separate RMSNorm before the GEMM
-- that the other side fuses), and count imbalances compare counts with fused kernels counted for
-- each of their parts (the GEMMs that the other side runs as RMSNorm+GEMM). A fused operation
-- itself is never a sequence candidate (the explicit detector covers it; "B runs X+RMSNorm+GEMM
-- separately" would read the fusion backwards); it takes part in count imbalances by its own count.

-- Fusion findings between two traces, most time at stake first within each detector (table macro).
-- Parameters: trace_a, trace_b: trace names or ids; want_phase: prefill, decode, mixed or none,
-- NULL for every phase.
-- Columns:
--   finding           1, 2, ... in the order the detectors report
--   detector          explicit, sequence or count
--   fused_side        name of the trace that fuses (runs fewer kernels)
--   fused_op          the fused kernel type on that side
--   sample_kernel     the fused side's most frequent kernel name of that type
--   unfused_side      name of the trace that runs the parts separately
--   unfused_sequence  the operations the unfused side runs instead, in order ('A → B' for a
--                     sequence, 'A + B' for the parts of an explicit fusion)
--   unfused_kernel    the unfused side's most frequent kernel of the last operation of the sequence
--   fused_count       kernels of fused_op on the fused side
--   unfused_count     kernels of the unfused sequence's operations on the unfused side (for a
--                     count finding, with fused kernels counted for their parts, as compared)
--   pattern_count     occurrences of the pattern (seed: fused kernels; unique kernels; extra calls)
--   confidence        share of occurrences that follow the pattern (0 to 1)
--   evidence          the finding in one sentence, with the trace names
--   fused_side_ns     time the fused side spends in the operations involved
--   unfused_side_ns   time the unfused side spends in the same operations
--   at_stake_ns       what the unfused side spends more there, unfused_side_ns - fused_side_ns, and 0
--                     when the fused side spends as much or more (its fusion saves it nothing)
CREATE OR REPLACE MACRO fusion_findings(trace_a, trace_b, want_phase) AS TABLE
WITH k AS MATERIALIZED (
    SELECT side, align_op AS op, name, ts_ns, kernel_id, dur_ns, prev_op
    FROM pair_kernels(trace_a, trace_b, want_phase)
), sides AS (
    SELECT 'A' AS side, 'B' AS other, trace_name(trace_a) AS name, trace_name(trace_b) AS other_name
    UNION ALL
    SELECT 'B', 'A', trace_name(trace_b), trace_name(trace_a)
), ops AS MATERIALIZED (
    -- per side and operation: kernels, time, the most frequent kernel name, and the parts
    SELECT side, op, sum(n) AS n, sum(ns) AS ns, first(name ORDER BY n DESC, name) AS sample,
           CASE WHEN contains(op, '+') THEN fused_part_ops(op) END AS parts
    FROM (SELECT side, op, name, count(*) AS n, sum(dur_ns) AS ns FROM k GROUP BY side, op, name)
    GROUP BY side, op
), credited AS (
    -- per side and operation: kernels, counting also the fused kernels that hold the operation
    SELECT o.side, o.op, o.n, o.n + coalesce(sum(f.n), 0) AS n_credited
    FROM ops o LEFT JOIN ops f ON f.side = o.side AND list_contains(f.parts, o.op)
    GROUP BY o.side, o.op, o.n
), explicit AS (
    SELECT 1 AS detector_rank, 'explicit' AS detector, s.side AS fused, s.other AS unfused,
           o.op AS fused_op, o.n AS fused_count, o.parts AS sequence,
           array_to_string(o.parts, ' + ') AS unfused_sequence,
           o.n AS pattern_count, 1.0 AS confidence,
           s.name || ' fuses ' || array_to_string(o.parts, ' + ') || ' into ' || o.op || ' (' || o.n || ' calls)' AS evidence,
           list_distinct(list_append(o.parts, o.op)) AS involved
    FROM ops o JOIN sides s USING (side)
    WHERE o.parts IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM ops x WHERE x.side = s.other AND x.op = o.op)
), ordered AS (
    -- the kernel before each one: stored for the whole trace; within a phase, re-derived among
    -- the phase's kernels (one branch is empty, so the window runs only under a phase filter)
    SELECT side, op, prev_op AS prev FROM k WHERE want_phase IS NULL
    UNION ALL
    SELECT side, op, lag(op) OVER (PARTITION BY side ORDER BY ts_ns, kernel_id) AS prev FROM k WHERE want_phase IS NOT NULL
), before AS (
    -- per unique operation: its most common predecessor and how often that precedes it
    SELECT side, op, first(prev ORDER BY c DESC, prev) AS prev, max(c) AS c
    FROM (SELECT side, op, prev, count(*) AS c FROM ordered WHERE prev IS NOT NULL GROUP BY ALL)
    GROUP BY side, op
), sequence_candidates AS (
    SELECT 2 AS detector_rank, 'sequence' AS detector, s.other AS fused, s.side AS unfused,
           b.prev AS fused_op, p.n AS fused_count, [b.prev, o.op] AS sequence,
           b.prev || ' → ' || o.op AS unfused_sequence,
           o.n AS pattern_count, b.c / o.n AS confidence,
           s.name || ' runs ' || b.prev || '+' || o.op || ' separately, ' || s.other_name || ' fuses into ' || b.prev AS evidence,
           [b.prev, o.op] AS involved
    FROM ops o
    JOIN sides s USING (side)
    JOIN before b USING (side, op)
    JOIN ops p ON p.side = s.other AND p.op = b.prev
    WHERE o.op <> 'Other' AND o.parts IS NULL AND o.n >= 5 AND b.c / o.n > 0.8
      AND NOT EXISTS (SELECT 1 FROM ops x WHERE x.side = s.other AND x.op = o.op)
      AND NOT EXISTS (SELECT 1 FROM ops f WHERE f.side = s.other AND list_contains(f.parts, o.op))
), count_candidates AS (
    SELECT 3 AS detector_rank, 'count' AS detector,
           CASE WHEN a.n_credited > b.n_credited THEN 'B' ELSE 'A' END AS fused,
           CASE WHEN a.n_credited > b.n_credited THEN 'A' ELSE 'B' END AS unfused,
           a.op AS fused_op, least(a.n_credited, b.n_credited) AS fused_count, [a.op] AS sequence,
           a.op AS unfused_sequence, greatest(a.n_credited, b.n_credited) AS unfused_credited,
           greatest(a.n_credited, b.n_credited) - least(a.n_credited, b.n_credited) AS pattern_count,
           (greatest(a.n_credited, b.n_credited) - least(a.n_credited, b.n_credited)) / greatest(a.n_credited, b.n_credited) AS confidence,
           NULL AS evidence,
           list_distinct([a.op] || coalesce((SELECT list(f.op) FROM ops f WHERE list_contains(f.parts, a.op)), [])) AS involved
    FROM credited a JOIN credited b ON a.side = 'A' AND b.side = 'B' AND a.op = b.op
    WHERE a.op <> 'Other' AND a.n_credited + b.n_credited >= 50
      AND greatest(a.n_credited, b.n_credited) >= 1.5 * least(a.n_credited, b.n_credited)
), kept AS (
    -- the seed's de-duplication: a fused type reported once, by the first detector to find it
    SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY fused_op ORDER BY detector_rank, pattern_count DESC, fused, unfused_sequence) AS dup
                   FROM (SELECT * FROM explicit UNION ALL BY NAME SELECT * FROM sequence_candidates
                         UNION ALL BY NAME SELECT * FROM count_candidates))
    WHERE dup = 1
), timed AS (
    SELECT f.*, fs.name AS fused_side, us.name AS unfused_side,
           (SELECT coalesce(sum(o.ns), 0) FROM ops o WHERE o.side = f.fused AND list_contains(f.involved, o.op)) AS fused_side_ns,
           (SELECT coalesce(sum(o.ns), 0) FROM ops o WHERE o.side = f.unfused AND list_contains(f.involved, o.op)) AS unfused_side_ns,
           coalesce(f.unfused_credited,
                    (SELECT coalesce(sum(o.n), 0) FROM ops o WHERE o.side = f.unfused AND list_contains(f.sequence, o.op))) AS unfused_count,
           (SELECT o.sample FROM ops o WHERE o.side = f.fused AND o.op = f.fused_op) AS sample_kernel,
           (SELECT o.sample FROM ops o WHERE o.side = f.unfused AND o.op = f.sequence[-1]) AS unfused_kernel
    FROM kept f
    JOIN sides fs ON fs.side = f.fused
    JOIN sides us ON us.side = f.unfused
)
SELECT row_number() OVER (ORDER BY detector_rank, unfused_side_ns - fused_side_ns DESC, fused_op)::INTEGER AS finding,
       detector, fused_side, fused_op, sample_kernel, unfused_side, unfused_sequence, unfused_kernel,
       fused_count, unfused_count, pattern_count, confidence,
       coalesce(evidence, unfused_side || ' calls ' || fused_op || ' '
                || printf('%.1f', (fused_count + pattern_count) / fused_count) || 'x more ('
                || (fused_count + pattern_count) || ' vs ' || fused_count || '), ' || fused_side || ' likely fuses') AS evidence,
       fused_side_ns, unfused_side_ns, greatest(unfused_side_ns - fused_side_ns, 0) AS at_stake_ns
FROM timed
ORDER BY finding;

-- What each side of a fusion comparison fuses: the seed's summary counts, one row per side
-- (table macro).
-- Parameters: trace_a, trace_b: trace names or ids; want_phase: prefill, decode, mixed or none,
-- NULL for every phase.
-- Columns:
--   side          A or B
--   trace         trace name
--   platform      platform of the trace
--   device        device of the trace
--   kernels       kernels compared (within the phase filter)
--   gpu_ns        their total time
--   fuses         findings where this side is the one that fuses
--   at_stake_ns   time the other side spends more in the operations this side fuses
CREATE OR REPLACE MACRO fusion_summary(trace_a, trace_b, want_phase) AS TABLE
WITH f AS (SELECT * FROM fusion_findings(trace_a, trace_b, want_phase)),
per_side AS (
    SELECT side, count(*) AS kernels, coalesce(sum(dur_ns), 0) AS gpu_ns
    FROM pair_kernels(trace_a, trace_b, want_phase) GROUP BY side
), sides AS (
    SELECT 'A' AS side, trace_a AS want UNION ALL SELECT 'B', trace_b
)
SELECT s.side, t.name AS trace, t.platform, t.device_name AS device,
       coalesce(p.kernels, 0) AS kernels, coalesce(p.gpu_ns, 0) AS gpu_ns,
       (SELECT count(*) FROM f WHERE f.fused_side = t.name) AS fuses,
       (SELECT coalesce(sum(f.at_stake_ns), 0) FROM f WHERE f.fused_side = t.name) AS at_stake_ns
FROM sides s
JOIN traces t ON is_trace(t.name, t.trace_id, s.want)
LEFT JOIN per_side p ON p.side = s.side
ORDER BY s.side;
