-- Report: fusion
-- Where one trace fuses kernels the other runs separately: explicit fused operations found on one
-- side only, sequence patterns (an operation found on one side only that follows one same
-- operation more than 80 % of the time), and count imbalances (1.5x or more, 50+ kernels), with
-- the time at stake; then what each side fuses, and the per-layer fusion notes of the alignment.
-- Chart: finding+fused_op -> at_stake_ns  Time at stake per finding
-- Example: tracedb report fusion --trace h100_bert-small --vs mi300_bert-small
-- Parameters:
--   trace = NULL   trace A (name or #id)
--   vs = NULL      trace B (name or #id)
--   phase = NULL   only kernels of this phase: prefill, decode, mixed or none (NULL: all)
--   limit = NULL   rows of the findings and notes tables (NULL: all)
-- Columns:
--   finding           id                1, 2, ... in the order the detectors report
--   detector          text              explicit, sequence or count
--   fused_side        text              A or B: the trace that fuses (runs fewer kernels)
--   fused_op          text              the fused kernel type there
--   sample_kernel     kernel    wide    its most frequent kernel of that type
--   unfused_side      text              A or B: the trace that runs the parts separately
--   unfused_sequence  text              what it runs instead
--   fused_count       count  wide       fused side's kernels of the fused type
--   unfused_count     count  wide       unfused side's kernels of the sequence
--   confidence        percent  wide     share of occurrences that follow the pattern
--   at_stake_ns       duration          time the unfused side spends more in the operations involved (0 when it spends less: the fusion saves nothing)
--   evidence          text      note    the finding in one sentence
SELECT finding, detector, CASE fused_side WHEN trace_name($trace) THEN 'A' ELSE 'B' END AS fused_side, fused_op,
       sample_kernel, CASE unfused_side WHEN trace_name($trace) THEN 'A' ELSE 'B' END AS unfused_side,
       unfused_sequence, fused_count, unfused_count, 100 * confidence AS confidence, at_stake_ns, evidence
FROM fusion_findings($trace, $vs, $phase)
ORDER BY finding
LIMIT $limit;

-- Section: sides
-- What each side fuses: findings where it is the fusing side, and the time the other side spends
-- more in those operations.
-- Columns:
--   side         text              A or B
--   trace        text              trace name
--   platform     text              platform
--   device       text              device
--   kernels      count             kernels compared
--   gpu_ns       duration          their total time
--   fuses        count     total   findings where this side fuses
--   at_stake_ns  duration  total   time the other side spends more in the operations this side fuses
SELECT side, trace, platform, device, kernels, gpu_ns, fuses, at_stake_ns
FROM fusion_summary($trace, $vs, $phase);

-- Section: layer notes
-- Places within a layer where the alignment's counts point to fusion, one row per distinct note
-- and operation (a note that holds in every layer is one row, not one per layer), the most
-- widespread first.
-- Columns:
--   side         text                 A or B: the side that runs the kernel
--   what         text                 fuses it (a fused operation the other lacks), runs it (the other has none there: it may fuse it), or runs it more (1.5x or more: the other fuses)
--   op           text                 operation at that place
--   kernel       kernel               that side's kernel
--   layers       count                layers where the note holds
--   which        text                 those layers, as ranges (0-31, 40)
--   a_kernels    count   total wide   A's kernels there, over every pass and layer
--   b_kernels    count   total wide   B's kernels there, over every pass and layer
--   fusion_note  text           wide  the note as a sentence, with the trace names
WITH notes AS (
    SELECT fusion_note, op, layer, sum(a_kernels) AS a_kernels, sum(b_kernels) AS b_kernels,
           CASE WHEN sum(a_kernels) > sum(b_kernels) THEN 'A' ELSE 'B' END AS side,
           CASE WHEN sum(a_kernels) > sum(b_kernels) THEN first(a_kernel) ELSE first(b_kernel) END AS kernel,
           CASE WHEN least(sum(a_kernels), sum(b_kernels)) > 0 THEN 'runs it more, the other fuses'
                WHEN contains(op, '+') THEN 'fuses it'
                ELSE 'runs it, the other may fuse it' END AS what
    FROM alignment_pairs($trace, $vs, $phase)
    WHERE fusion_note IS NOT NULL
    GROUP BY fusion_note, op, layer
), runs AS (
    -- consecutive layers of one note form a run (gaps and islands)
    SELECT fusion_note, op, min(layer) AS lo, max(layer) AS hi
    FROM (SELECT *, layer - row_number() OVER (PARTITION BY fusion_note, op ORDER BY layer) AS island FROM notes)
    GROUP BY fusion_note, op, island
)
SELECT first(n.side) AS side, first(n.what) AS what, n.op, first(n.kernel) AS kernel, count(*) AS layers,
       (SELECT string_agg(CASE WHEN lo = hi THEN lo::VARCHAR ELSE lo || '-' || hi END, ', ' ORDER BY lo)
        FROM runs r WHERE r.fusion_note = n.fusion_note AND r.op = n.op) AS which,
       sum(n.a_kernels) AS a_kernels, sum(n.b_kernels) AS b_kernels, n.fusion_note
FROM notes n
GROUP BY n.fusion_note, n.op
ORDER BY layers DESC, n.op, n.fusion_note
LIMIT $limit;
