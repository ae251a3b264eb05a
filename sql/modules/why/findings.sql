-- include: classify.align
-- include: compare.wall_clock
-- include: core.selection
-- include: efficiency.roofline
-- include: timeline.collectives
-- include: timeline.gaps
-- include: timeline.timeline

-- Why one trace is slower than another, and what to fix first: the causes of a wall-clock gap
-- ranked by the time at stake, each pointing at code.
-- The span of each side is split as compare_wall splits it (idle, each operation's kernel time,
-- kernels at once, exposed memcpy), and each part again by its cause: idle by the gaps' causes and
-- the Python frame where the host spent them, an operation's time into per-call speed and number of
-- calls, a collective's into waiting and transfer. A finding's time at stake is what the slower
-- side gains if that part matched the faster one, so the findings, with a remainder for what none
-- explains, add up to the gap of the spans exactly.

-- The hints in the order they are tried: user rows first, then by priority.
-- Columns: rank (order of trial, 1 first), source, priority, kind, hint (as why_hints).
CREATE OR REPLACE VIEW _why_hints_ordered AS
SELECT row_number() OVER (ORDER BY source = 'builtin', priority, source, kind) AS rank, source, priority, kind, hint
FROM why_hints;

-- A duration for a sentence (scalar macro): '22.31 ms', '740 µs', '12 ns'; NULL for NULL.
CREATE OR REPLACE MACRO _why_time(ns) AS
    CASE WHEN abs(ns) >= 1e6 THEN printf('%.2f ms', ns / 1e6)
         WHEN abs(ns) >= 1e3 THEN printf('%.0f µs', ns / 1e3)
         ELSE printf('%d ns', ns::BIGINT) END;

-- The evidence of a collective's waiting (scalar macro): calls, the median call, the waiting and
-- how much of it sits in calls above ten times the median. c: a row of why_findings' comm.
CREATE OR REPLACE MACRO _why_waiting(calls, c) AS
    calls || ' calls, median ' || _why_time(c.typical_ns) || ', ' || _why_time(c.wait_ns) || ' waiting'
    || CASE WHEN c.long_calls > 0 THEN ' (' || _why_time(c.long_wait_ns) || ' of it in ' || c.long_calls
            || ' calls above 10x the median, ' || c.long_early
            || ' of them the first or second collective of their step)' ELSE '' END
    || ', sized by ' || c.sized_by;

-- The part a collective kernel's time is counted in (scalar macro): its collective, what runs it,
-- and over a whole trace its phase, so that a finding carries one kernel's per-call time: NCCL's and
-- RCCL's kernels (named nccl..., RCCL keeping NCCL's names) are one library on either vendor, any
-- other (a framework's custom all-reduce) is told by its function's name, which both vendors'
-- builds of the framework share: 'All-Reduce · NCCL/RCCL · prefill', 'All-Reduce ·
-- vllm::cross_device_reduce_1stage · decode'.
-- Parameters: op: the collective (align_op); name: the kernel's name; phase: its phase; whole:
-- true when the findings are the whole trace's (the phase is then part of the key).
CREATE OR REPLACE MACRO _why_comm_part(op, name, phase, whole) AS
    op || ' · ' || CASE WHEN regexp_matches(name, '^\s*(nccl|rccl)', 'i') THEN 'NCCL/RCCL'
                        ELSE coalesce(nullif(regexp_extract(name, '([A-Za-z_][A-Za-z0-9_:]*)\s*[<(]', 1), ''), name) END
       || CASE WHEN whole AND phase IS NOT NULL AND phase <> 'none' THEN ' · ' || phase ELSE '' END;

-- The part an operation's kernel time is counted in (scalar macro): the operation, and over a
-- whole trace its phase, so that a finding carries one kind of call's per-call time (a decode GEMM
-- and a prefill GEMM of one layer run different kernels at different speeds): 'Dense GEMM ·
-- decode'. Parameters: op: the operation (align_op); phase: its kernel's phase; whole: true when
-- the findings are the whole trace's.
CREATE OR REPLACE MACRO _why_op_part(op, phase, whole) AS
    op || CASE WHEN whole AND phase IS NOT NULL AND phase <> 'none' THEN ' · ' || phase ELSE '' END;

-- A trace name as one word of a shell command (scalar macro): quoted when it holds anything but
-- letters, digits and . _ - # + = , / : @ %.
CREATE OR REPLACE MACRO _shell_word(name) AS
    CASE WHEN regexp_full_match(name, '[A-Za-z0-9._#+=,/:@%-]+') THEN name
         ELSE '''' || replace(name, '''', '''\''''') || '''' END;

-- A Python frame's name without its line number and object addresses (scalar macro):
-- 'vllm/model_executor/models/llama.py(374): forward' gives 'vllm/model_executor/models/llama.py:
-- forward', '<built-in method repeat of Tensor object at 0x7cbd8414bd40>' gives '<built-in method
-- repeat of Tensor object>'.
CREATE OR REPLACE MACRO frame_key(name) AS
    regexp_replace(regexp_replace(name, '\(\d+\): ', ': '), ' at 0x[0-9a-fA-F]+', '', 'g');

-- The part of why an idle gap of gpu_idle_gaps counts to (scalar macros): its kind by its cause, and
-- what it is told apart by: the Python frame holding the host (frame_match: its key across the
-- traces), the synchronising call, or the operation the device waited to start.
CREATE OR REPLACE MACRO _why_gap_kind(cause) AS
    CASE cause WHEN 'host launched late' THEN 'host-bound idle' WHEN 'synchronisation' THEN 'synchronisation idle'
               WHEN 'queued and waiting' THEN 'queued idle' ELSE 'idle without launches' END;
CREATE OR REPLACE MACRO _why_gap_what(cause, frame_match, frame, sync_call, after_op) AS
    CASE cause WHEN 'host launched late' THEN coalesce(frame_match, frame_key(frame), '(no Python frame)')
               WHEN 'synchronisation' THEN coalesce(sync_call, '')
               WHEN 'queued and waiting' THEN coalesce(after_op, '') ELSE '' END;

-- The frame each Python frame name of the given traces is matched by across two traces (table
-- macro): its file and function (frame_key), and where one trace records two functions of that
-- name in one file (LlamaForCausalLM.forward and LlamaModel.forward of llama.py), their order in
-- the file, by the line where each starts (PyTorch's profiler names a frame by the line of its
-- call, the function's first): 'llama.py: forward #1', 'llama.py: forward #2'. Not the line itself:
-- two builds of one library (torch's module.py on the H100 and on the MI300X) number it
-- differently, and the same frame would not match.
-- Parameters: ids: a list of trace ids.
-- Columns:
--   trace_id  the trace
--   name      the frame's name as the trace records it (file(line): function)
--   frame     the key it is matched by
CREATE OR REPLACE MACRO frame_keys(ids) AS TABLE
WITH named AS (
    SELECT DISTINCT trace_id, name, frame_key(name) AS base,
           TRY_CAST(regexp_extract(name, '\((\d+)\): ', 1) AS BIGINT) AS line
    FROM python_functions WHERE list_contains(ids, trace_id)
), ordered AS (
    SELECT *, dense_rank() OVER (PARTITION BY trace_id, base ORDER BY line) AS nth FROM named
)
SELECT trace_id, name,
       base || CASE WHEN max(nth) OVER (PARTITION BY trace_id, base) > 1 THEN ' #' || nth ELSE '' END AS frame
FROM ordered;

-- The steps host_frames counts on each side (table macros): host_frame_windows, each step's window
-- on the thread of its annotation or frame (step_windows), in the phase asked for; host_frame_steps,
-- their number per side, or 1 for a side whose trace has none (its whole trace counts, windowed false).
-- Parameters: trace_a, trace_b, want_phase: as host_frames.
CREATE OR REPLACE MACRO host_frame_windows(trace_a, trace_b, want_phase) AS TABLE
SELECT s.side, s.trace_id, w.step, w.pid, w.tid, w.ts_ns, w.end_ns
FROM compared_sides(trace_a, trace_b) s JOIN step_windows w USING (trace_id)
WHERE want_phase IS NULL
   OR (w.trace_id, w.step) IN (SELECT (trace_id, step) FROM gpu_timeline WHERE phase = want_phase);

CREATE OR REPLACE MACRO host_frame_steps(trace_a, trace_b, want_phase) AS TABLE
WITH windows AS (SELECT * FROM host_frame_windows(trace_a, trace_b, want_phase))
SELECT side, trace_id, count(*) AS steps, true AS windowed FROM windows GROUP BY ALL
UNION ALL
SELECT side, trace_id, 1, false FROM compared_sides(trace_a, trace_b) s
WHERE NOT EXISTS (SELECT 1 FROM windows w WHERE w.side = s.side);

-- The calls of Python frames host_frames counts (table macro): inside the steps counted (the whole
-- trace where it has none), each on its own thread, and a frame that calls itself once (its
-- outermost call). Parameters: as host_frames_of.
-- Columns:
--   side      A or B
--   trace_id  the trace
--   frame     the frame's key (frame_keys): file and function
--   name      the frame's name as the trace records it
--   nid       the name's number (one per trace and name)
--   pid, tid  the thread
--   ts_ns     the call's start, nanoseconds
--   end_ns    its end
--   dur_ns    its duration
CREATE OR REPLACE MACRO host_frame_calls(trace_a, trace_b, want_phase, wanted) AS TABLE
WITH sides AS MATERIALIZED (SELECT * FROM compared_sides(trace_a, trace_b)), windows AS MATERIALIZED (
    SELECT * FROM host_frame_windows(trace_a, trace_b, want_phase)
), counted AS (
    SELECT * FROM host_frame_steps(trace_a, trace_b, want_phase)
), keys AS MATERIALIZED (
    -- each frame name once, numbered in the order of the names, with the key it is matched by,
    -- numbered too: the frames below carry numbers rather than names
    SELECT trace_id, name, frame, row_number() OVER (ORDER BY trace_id, name) AS nid,
           dense_rank() OVER (ORDER BY frame) AS fid
    FROM frame_keys((SELECT list(trace_id) FROM sides))
    WHERE wanted IS NULL OR list_contains(wanted, frame)
), placed AS (
    -- each frame with the end of the last counted window of its thread to start before it, by an
    -- ASOF join (a thread's steps follow one another): it starts inside that window when it starts
    -- before that end
    SELECT f.trace_id, f.event_id, f.pid, f.tid, f.nid, f.fid, f.ts_ns, f.dur_ns, w.end_ns AS window_end
    FROM (SELECT f.*, k.nid, k.fid FROM python_functions f JOIN keys k ON k.trace_id = f.trace_id AND k.name = f.name
          WHERE f.dur_ns IS NOT NULL) f
    ASOF LEFT JOIN (SELECT DISTINCT trace_id, pid, tid, ts_ns, end_ns FROM windows) w
      ON w.trace_id = f.trace_id AND w.pid = f.pid AND w.tid = f.tid AND w.ts_ns <= f.ts_ns
), frames AS (
    -- the frames inside the counted windows (anywhere in a trace without steps), each frame once
    -- where it calls itself: a frame inside another of the same key on its thread is left out
    SELECT c.side, f.trace_id, f.event_id, f.pid, f.tid, f.nid, f.fid, f.ts_ns, f.ts_ns + f.dur_ns AS end_ns, f.dur_ns
    FROM counted c JOIN placed f USING (trace_id)
    WHERE NOT c.windowed OR f.ts_ns < f.window_end
), outer_only AS (
    SELECT * FROM frames
    QUALIFY coalesce(max(end_ns) OVER (PARTITION BY trace_id, pid, tid, fid ORDER BY ts_ns, end_ns DESC, event_id
                                       ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), ts_ns) <= ts_ns
)
SELECT o.side, o.trace_id, k.frame, k.name, o.nid, o.pid, o.tid, o.ts_ns, o.end_ns, o.dur_ns
FROM outer_only o JOIN keys k USING (nid);

-- The host time of host_frames (below) for the frames of a list of keys alone (table macro; NULL:
-- every frame), as why asks for the frames it names: the frames of other keys are never read.
-- Parameters: trace_a, trace_b, want_phase: as host_frames; wanted: a list of frame keys or NULL.
-- Columns: those of host_frames.
CREATE OR REPLACE MACRO host_frames_of(trace_a, trace_b, want_phase, wanted) AS TABLE
WITH calls AS MATERIALIZED (
    SELECT * FROM host_frame_calls(trace_a, trace_b, want_phase, wanted)
), counted AS (
    SELECT * FROM host_frame_steps(trace_a, trace_b, want_phase)
), per_key AS (
    SELECT side, frame, nid, any_value(name) AS name, count(*) AS calls, sum(dur_ns) AS ns FROM calls GROUP BY ALL
), per_side AS (
    SELECT p.side, p.frame, arg_max(p.name, (p.calls, -p.nid)) AS name, sum(p.calls) AS calls, sum(p.ns) AS ns,
           any_value(c.steps) AS steps
    FROM per_key p JOIN counted c USING (side)
    GROUP BY p.side, p.frame
), a AS (SELECT * FROM per_side WHERE side = 'A'), b AS (SELECT * FROM per_side WHERE side = 'B')
SELECT coalesce(a.frame, b.frame) AS frame, a.name AS a_name, b.name AS b_name,
       a.calls / a.steps AS a_calls, b.calls / b.steps AS b_calls,
       coalesce(a.ns / a.steps, 0)::BIGINT AS a_step_ns, coalesce(b.ns / b.steps, 0)::BIGINT AS b_step_ns,
       (coalesce(a.ns / a.steps, 0) - coalesce(b.ns / b.steps, 0))::BIGINT AS gap_step_ns,
       (SELECT any_value(steps) FROM counted WHERE side = 'A') AS a_steps,
       (SELECT any_value(steps) FROM counted WHERE side = 'B') AS b_steps
FROM a FULL JOIN b USING (frame);

-- Host time per Python frame of two traces, per step, side by side (table macro): where each
-- host spends its steps, frames matched by file and function (frame_keys), also when one side
-- never enters a frame the other spends its time in. A frame's time counts its callees
-- (inclusive); a frame that calls itself counts once.
-- Parameters: trace_a, trace_b: trace names or ids (trace_b NULL: one trace); want_phase: only the
-- steps of this phase (NULL: every step, or the whole trace when it has no steps).
-- Columns:
--   frame        the frame: file and function, with its order in the file where the trace records
--                two functions of that name in it (frame_keys)
--   a_name       the frame as A records it (file(line): function), NULL when A never enters it
--   b_name       the same in B
--   a_calls      A's calls of the frame per step
--   b_calls      B's calls per step
--   a_step_ns    A's time in the frame per step (inclusive of its callees)
--   b_step_ns    B's time per step
--   gap_step_ns  a_step_ns - b_step_ns
--   a_steps      steps of A counted (1 when the trace has none: the whole trace)
--   b_steps      steps of B counted
CREATE OR REPLACE MACRO host_frames(trace_a, trace_b, want_phase) AS TABLE
SELECT * FROM host_frames_of(trace_a, trace_b, want_phase, NULL);

-- The causes of the wall-clock gap between two traces, largest first, with what fixing each would
-- save (table macro). With trace_b NULL: one trace against its own ideal (idle against none, each
-- modelled operation against its device's roofline, waiting in collectives against none).
-- Parameters: trace_a, trace_b: trace names or ids; want_phase: the steps of this phase (NULL: the
-- whole traces); min_gap_us: idle gaps shorter than this are counted together as short gaps, the
-- longer ones by cause and frame; shown: the findings listed before the remainder; saves: what
-- fixing each part saves (a map of part to nanoseconds, tracedb.savings's why_savings; NULL: not
-- known), which chooses the parts listed where it is known: first where the slower side loses
-- time, the parts that save most (else those with most at stake); then where it is faster, the
-- largest. Without it, the largest parts either way.
-- Columns:
--   rank         1, 2, ... by what fixing saves (else the time at stake), losses first; the remainder last
--   kind         host-bound idle, synchronisation idle, queued idle, short gaps, idle without
--                launches, slower kernels, more kernels or calls, collective waiting, collective
--                transfer, less overlap, exposed memcpy, roofline (one trace), remainder
--   finding      one sentence naming both sides' numbers
--   at_stake_ns  what the slower side gains if this part matched the other side (one trace: its
--                ideal); the findings with the remainder add up to the gap of the spans
--   per_step_ns  at_stake_ns per step of the slower side (NULL when it has no steps)
--   where        the code to look at: a Python frame (file(line): function), a synchronising call,
--                an operation with its cpu_op, a collective kernel
--   slower       the slower side's trace name
--   a_ns         A's time in the part (one trace: its time)
--   b_ns         B's time in the part (one trace: the ideal)
--   a_detail     A's evidence: counts, per-call times, the frame's own time and callees
--   b_detail     B's evidence
--   hint         what usually causes a finding of this kind (why_hints)
--   next         the tracedb command that shows the evidence
--   part         the key of the part (kind|what), stable across runs, for joining
--   assumption   one trace's roofline finding: what its FLOPs and bytes assume that the trace does not record
--   answer       on the first row only: the answer in one sentence (how much slower, and the first
--                finding with its time at stake)
CREATE OR REPLACE MACRO why_findings(trace_a, trace_b, want_phase, min_gap_us, shown, saves) AS TABLE
WITH sides AS MATERIALIZED (SELECT * FROM compared_sides(trace_a, trace_b)), keys AS MATERIALIZED (
    -- the frames' keys, worked out once for the gaps and the loops of host-bound frames
    SELECT * FROM frame_keys((SELECT list(trace_id) FROM sides))
), wall AS MATERIALIZED (
    SELECT * FROM compare_wall(trace_a, trace_b, want_phase)
), spans AS MATERIALIZED (
    SELECT a_ns AS a_span, b_ns AS b_span,
           CASE WHEN trace_b IS NULL OR a_ns >= b_ns THEN 'A' ELSE 'B' END AS slow
    FROM wall WHERE part = 'span'
), windows AS MATERIALIZED (
    SELECT s.side, g.* FROM sides s JOIN gpu_timeline g USING (trace_id)
    WHERE g.step IS NOT NULL AND (want_phase IS NULL OR g.phase = want_phase)
), steps AS (
    SELECT side, count(*) AS steps FROM windows GROUP BY side
), idle AS (
    SELECT side, idle_ns FROM (SELECT 'A' AS side, a_ns AS idle_ns FROM wall WHERE part = 'idle'
                               UNION ALL SELECT 'B', b_ns FROM wall WHERE part = 'idle' AND trace_b IS NOT NULL)
), gaps AS MATERIALIZED (
    -- the gaps of at least min_gap_us in the parts compared (in a phase: inside its steps)
    SELECT s.side, g.*, k.frame AS frame_match
    FROM sides s
    JOIN gpu_idle_gaps_of((SELECT coalesce(list(DISTINCT trace_id), []) FROM sides), 1000 * min_gap_us) g USING (trace_id)
    LEFT JOIN keys k ON k.trace_id = g.trace_id AND k.name = g.frame
    WHERE want_phase IS NULL OR (NOT g.between_steps AND (g.trace_id, g.step) IN (SELECT (trace_id, step) FROM windows))
), gap_groups AS (
    SELECT side,
           _why_gap_kind(cause) AS kind, _why_gap_what(cause, frame_match, frame, sync_call, after_op) AS what,
           sum(idle_ns) AS ns, count(*) AS n, max(idle_ns) AS longest_ns,
           mode(frame ORDER BY frame) AS frame, mode(after_cpu_op ORDER BY after_cpu_op) AS after_cpu_op,
           sum(frame_self_ns) AS self_ns, sum(host_ns) AS host_ns,
           arg_max(callees, (idle_ns, start_ns)) AS callees
    FROM gaps GROUP BY ALL
), short AS (
    -- the idle time outside the gaps counted above: gaps shorter than min_gap_us
    SELECT i.side, 'short gaps' AS kind, '' AS what,
           i.idle_ns - coalesce((SELECT sum(ns) FROM gap_groups g WHERE g.side = i.side), 0) AS ns
    FROM idle i
), ops AS (
    -- each operation's kernel time (memsets as Memset), calls and kernels, as compare_wall counts it,
    -- over a whole trace per phase (_why_op_part); a collective's by the kernel that runs it and its
    -- phase (_why_comm_part)
    SELECT s.side, CASE WHEN d.class = 'comm' THEN _why_comm_part(align_op(d.op, d.pattern), d.name, d.phase, want_phase IS NULL)
                        ELSE _why_op_part(wall_part(d.kind, d.op, d.pattern), d.phase, want_phase IS NULL) END AS op,
           sum(d.dur_ns) AS ns, count(*) AS kernels,
           count(DISTINCT coalesce(f.call_id, -d.event_id)) AS calls, bool_or(d.class = 'comm') AS comm,
           mode(d.cpu_op ORDER BY d.cpu_op) AS cpu_op, mode(d.name ORDER BY d.name) AS kernel
    FROM sides s JOIN device_activity d USING (trace_id)
    LEFT JOIN kernel_facts f ON d.kind = 'kernel' AND f.trace_id = d.trace_id AND f.kernel_id = d.event_id
    WHERE d.kind <> 'memcpy'
      AND (want_phase IS NULL OR (d.trace_id, d.step) IN (SELECT (trace_id, step) FROM windows))
    GROUP BY ALL
), comm_calls AS MATERIALIZED (
    SELECT s.side, _why_comm_part(align_op(f.op, f.pattern), c.name, c.phase, want_phase IS NULL) AS op,
           c.* EXCLUDE (op),
           row_number() OVER (PARTITION BY c.trace_id, c.step ORDER BY c.ts_ns, c.kernel_id) AS in_step
    FROM sides s JOIN collective_calls c USING (trace_id)
    JOIN kernel_facts f ON f.trace_id = c.trace_id AND f.kernel_id = c.kernel_id
    WHERE want_phase IS NULL OR (c.trace_id, c.step) IN (SELECT (trace_id, step) FROM windows)
), comm AS (
    SELECT side, op, sum(wait_ns) AS wait_ns, count(*) AS calls, median(typical_ns) AS typical_ns,
           string_agg(DISTINCT sized_by, ', ' ORDER BY sized_by DESC) AS sized_by,
           count(*) FILTER (dur_ns > 10 * typical_ns) AS long_calls,
           coalesce(sum(wait_ns) FILTER (dur_ns > 10 * typical_ns), 0) AS long_wait_ns,
           count(*) FILTER (dur_ns > 10 * typical_ns AND in_step <= 2) AS long_early
    FROM comm_calls GROUP BY ALL
), other_parts AS (
    SELECT 'A' AS side, part, a_ns AS ns FROM wall WHERE part IN ('overlap (kernels at once)', 'exposed memcpy')
    UNION ALL
    SELECT 'B', part, b_ns FROM wall WHERE part IN ('overlap (kernels at once)', 'exposed memcpy') AND trace_b IS NOT NULL
), roof AS (
    -- one trace: each modelled operation's time above its roofline, per cpu_op
    SELECT r.cpu_op, count(*) AS calls, sum(r.gpu_ns) AS ns,
           sum(greatest(coalesce(r.flops / r.peak_tflops / 1000, 0), coalesce(r.bytes / r.peak_tbps / 1000, 0))) AS ideal_ns,
           mode(r.shape ORDER BY r.shape) AS shape, mode(r.bound ORDER BY r.bound) AS bound, median(r.peak_pct) AS peak_pct,
           string_agg(DISTINCT r.assumption, '; ' ORDER BY r.assumption) AS assumption
    FROM op_roofline_of((SELECT list(trace_id) FROM sides WHERE side = 'A')) r
    WHERE trace_b IS NULL AND r.gpu_ns > 0 AND r.peak_pct IS NOT NULL
    GROUP BY r.cpu_op
), op_pairs AS (
    -- an operation on both sides; cf: the slower side's calls at the other side's time per call
    -- (all of its time when the other side has none; nothing when it has none itself)
    SELECT coalesce(a.op, b.op) AS op, a.ns AS a_t, b.ns AS b_t, a.calls AS a_c, b.calls AS b_c,
           a.kernels AS a_k, b.kernels AS b_k, a.cpu_op AS a_cpu, b.cpu_op AS b_cpu, a.kernel AS a_kernel,
           b.kernel AS b_kernel, coalesce(a.comm, b.comm) AS comm, sp.slow,
           CASE WHEN sp.slow = 'A' THEN CASE WHEN a.calls IS NULL THEN 0 WHEN b.calls IS NULL THEN a.ns
                                             ELSE a.calls * b.ns / b.calls END
                ELSE CASE WHEN b.calls IS NULL THEN 0 WHEN a.calls IS NULL THEN b.ns
                          ELSE b.calls * a.ns / a.calls END END AS cf
    FROM (SELECT * FROM ops WHERE side = 'A') a
    FULL JOIN (SELECT * FROM ops WHERE side = 'B') b USING (op)
    CROSS JOIN spans sp
), parts AS (
    -- every part of both sides: a_part and b_part, whose difference (the slower side's less the
    -- other's) is the time at stake; a_ns and b_ns, each side's time in it as shown; evidence
    SELECT kind, what, sum(ns) FILTER (side = 'A') AS a_part, sum(ns) FILTER (side = 'B') AS b_part,
           sum(ns) FILTER (side = 'A') AS a_ns, sum(ns) FILTER (side = 'B') AS b_ns,
           first(frame ORDER BY ns DESC) FILTER (side = 'A') AS a_where,
           first(frame ORDER BY ns DESC) FILTER (side = 'B') AS b_where,
           any_value(n || ' gaps, longest ' || _why_time(longest_ns)
                     || coalesce(', the frame''s own time ' || _why_time(self_ns), '')
                     || coalesce(', its callees ' || callees, '')) FILTER (side = 'A') AS a_detail,
           any_value(n || ' gaps, longest ' || _why_time(longest_ns)
                     || coalesce(', the frame''s own time ' || _why_time(self_ns), '')
                     || coalesce(', its callees ' || callees, '')) FILTER (side = 'B') AS b_detail,
           sum(self_ns) FILTER (side = 'A') AS a_self, sum(self_ns) FILTER (side = 'B') AS b_self,
           any_value(callees) FILTER (side = 'A') AS a_callees, any_value(callees) FILTER (side = 'B') AS b_callees,
           sum(n) FILTER (side = 'A') AS a_n, sum(n) FILTER (side = 'B') AS b_n
    FROM (SELECT side, kind, what, ns, n, longest_ns, coalesce(frame, after_cpu_op) AS frame,
                 CASE WHEN kind = 'host-bound idle' THEN self_ns END AS self_ns,
                 CASE WHEN kind = 'host-bound idle' THEN callees END AS callees
          FROM gap_groups
          UNION ALL BY NAME
          SELECT side, kind, what, ns FROM short)
    GROUP BY kind, what
    UNION ALL BY NAME
    -- a computation: its calls at the other side's speed first (speed), then the calls it has
    -- more (count); the slower side's time is in one part, the other's in the other
    SELECT CASE WHEN speed THEN 'slower kernels' ELSE 'more kernels or calls' END AS kind, op AS what,
           CASE WHEN speed = (slow = 'A') THEN coalesce(a_t, 0) ELSE cf END AS a_part,
           CASE WHEN speed = (slow = 'A') THEN cf ELSE coalesce(b_t, 0) END AS b_part,
           a_t AS a_ns, b_t AS b_ns, a_cpu AS a_where, b_cpu AS b_where,
           a_c || ' calls, ' || a_k || ' kernels, ' || _why_time(a_t / a_c) || ' a call' AS a_detail,
           b_c || ' calls, ' || b_k || ' kernels, ' || _why_time(b_t / b_c) || ' a call' AS b_detail,
           a_c AS a_calls, b_c AS b_calls, a_t / a_c AS a_per, b_t / b_c AS b_per, a_k AS a_n, b_k AS b_n
    FROM op_pairs CROSS JOIN (VALUES (true), (false)) AS parts(speed)
    WHERE NOT comm
    UNION ALL BY NAME
    -- a collective: its waiting, then the rest of its time (transfer)
    SELECT 'collective waiting' AS kind, o.op AS what, ca.wait_ns AS a_part, cb.wait_ns AS b_part,
           ca.wait_ns AS a_ns, cb.wait_ns AS b_ns, o.a_kernel AS a_where, o.b_kernel AS b_where,
           _why_waiting(o.a_c, ca) AS a_detail, _why_waiting(o.b_c, cb) AS b_detail,
           ca.long_calls AS a_n, cb.long_calls AS b_n, o.a_c AS a_calls, o.b_c AS b_calls,
           ca.typical_ns AS a_per, cb.typical_ns AS b_per
    FROM op_pairs o
    LEFT JOIN (SELECT * FROM comm WHERE side = 'A') ca USING (op)
    LEFT JOIN (SELECT * FROM comm WHERE side = 'B') cb USING (op)
    WHERE o.comm
    UNION ALL BY NAME
    SELECT 'collective transfer' AS kind, o.op AS what,
           o.a_t - coalesce(ca.wait_ns, 0) AS a_part, o.b_t - coalesce(cb.wait_ns, 0) AS b_part,
           o.a_t - coalesce(ca.wait_ns, 0) AS a_ns, o.b_t - coalesce(cb.wait_ns, 0) AS b_ns,
           o.a_kernel AS a_where, o.b_kernel AS b_where,
           o.a_c || ' calls, median ' || _why_time(ca.typical_ns) || ' a call' AS a_detail,
           o.b_c || ' calls, median ' || _why_time(cb.typical_ns) || ' a call' AS b_detail,
           o.a_c AS a_calls, o.b_c AS b_calls, ca.typical_ns AS a_per, cb.typical_ns AS b_per
    FROM op_pairs o
    LEFT JOIN (SELECT * FROM comm WHERE side = 'A') ca USING (op)
    LEFT JOIN (SELECT * FROM comm WHERE side = 'B') cb USING (op)
    WHERE o.comm
    UNION ALL BY NAME
    SELECT CASE part WHEN 'exposed memcpy' THEN 'exposed memcpy' ELSE 'less overlap' END AS kind, '' AS what,
           sum(ns) FILTER (side = 'A') AS a_part, sum(ns) FILTER (side = 'B') AS b_part,
           sum(ns) FILTER (side = 'A') AS a_ns, sum(ns) FILTER (side = 'B') AS b_ns
    FROM other_parts GROUP BY part
    UNION ALL BY NAME
    SELECT 'roofline' AS kind, cpu_op AS what, ns AS a_part, ideal_ns AS b_part, ns AS a_ns, ideal_ns AS b_ns,
           cpu_op AS a_where,
           calls || ' calls of ' || shape || ', ' || printf('%.0f', peak_pct) || ' % of the ' || bound
               || ' peak (median)' AS a_detail,
           'at the roofline: ' || _why_time(ideal_ns) AS b_detail, calls AS a_calls, assumption
    FROM roof
), staked AS (
    SELECT p.*,
           CASE WHEN s.slow = 'A' THEN coalesce(p.a_part, 0) - coalesce(p.b_part, 0)
                ELSE coalesce(p.b_part, 0) - coalesce(p.a_part, 0) END AS stake,
           s.slow, s.a_span, s.b_span
    FROM parts p, spans s
    -- one trace: the operations' kernel time is in the roofline rows; its other parts stand as they are
    WHERE trace_b IS NOT NULL OR p.kind NOT IN ('slower kernels', 'more kernels or calls', 'collective transfer', 'less overlap')
), worth AS (
    -- what a part is listed by: where the slower side loses time, what fixing it saves (else its
    -- time at stake); where it is faster, its time at stake
    SELECT *, CASE WHEN stake > 0 THEN coalesce(map_extract_value(saves, kind || '|' || what), stake)
                   ELSE abs(stake) END AS worth
    FROM staked WHERE stake <> 0
), chosen AS (
    -- the parts listed: with what fixing saves known, where the slower side loses time, worth most
    -- first (what to fix first), then where it is faster, the largest; without, the largest either
    -- way, so that what no finding explains is small
    SELECT * FROM worth
    QUALIFY row_number() OVER (ORDER BY saves IS NOT NULL AND stake < 0, worth DESC, abs(stake) DESC, kind, what)
            <= coalesce(shown, 12)
), ranked AS (
    -- the slower side's losses first, worth most first; then where it is faster, largest first
    SELECT *, row_number() OVER (ORDER BY stake < 0, worth DESC, abs(stake) DESC, kind, what) AS rank FROM chosen
), listed AS (
    -- subj: the side a finding's sentence is about: the slower side where it loses time, the other
    -- side where the slower one is faster (its idle, its slower kernels)
    SELECT *, CASE WHEN stake >= 0 THEN slow WHEN slow = 'A' THEN 'B' ELSE 'A' END AS subj FROM ranked
), host_step AS (
    SELECT * FROM host_frames_of(trace_a, trace_b, want_phase,
                                 coalesce((SELECT list(what) FROM listed WHERE kind = 'host-bound idle'), []::VARCHAR[]))
), names AS (
    SELECT (SELECT name FROM sides WHERE side = 'A') AS a_name, (SELECT name FROM sides WHERE side = 'B') AS b_name,
           (SELECT steps FROM steps WHERE side = 'A') AS a_steps, (SELECT steps FROM steps WHERE side = 'B') AS b_steps
), loop_frames AS MATERIALIZED (
    -- the calls of the listed host-bound frames on each side (found first: their callees next)
    SELECT s.side, k.frame AS what, f.trace_id, f.python_id
    FROM sides s
    JOIN keys k ON k.trace_id = s.trace_id
    JOIN python_functions f ON f.trace_id = k.trace_id AND f.name = k.name
    WHERE k.frame IN (SELECT what FROM listed WHERE kind = 'host-bound idle')
), loop_calls AS (
    -- the calls a listed host-bound frame makes (its direct Python callees, C functions included)
    -- on each side, with the time since the frame's previous call of the same callee: a Python loop
    -- shows as many calls of one callee a short time apart
    SELECT f.side, f.what, frame_key(c.name) AS callee,
           c.ts_ns - lag(c.ts_ns) OVER (PARTITION BY c.trace_id, c.python_parent_id, frame_key(c.name)
                                        ORDER BY c.ts_ns, c.event_id) AS spacing_ns
    FROM loop_frames f
    JOIN python_functions c ON c.trace_id = f.trace_id AND c.python_parent_id = f.python_id
), loops AS (
    SELECT side, what, callee, count(*) AS calls, median(spacing_ns) AS spacing_ns FROM loop_calls GROUP BY ALL
), sentences AS (
    SELECT l.*, n.*, h.a_step_ns AS a_frame_ns, h.b_step_ns AS b_frame_ns,
           lp.callee AS loop_callee, lp.calls / coalesce(CASE l.subj WHEN 'A' THEN n.a_steps ELSE n.b_steps END, 1)
               AS loop_calls, lp.spacing_ns AS loop_spacing,
           coalesce(lo.calls, 0) / coalesce(CASE l.subj WHEN 'A' THEN n.b_steps ELSE n.a_steps END, 1) AS loop_other,
           CASE l.slow WHEN 'A' THEN n.a_name ELSE n.b_name END AS slow_name,
           CASE l.slow WHEN 'A' THEN n.a_steps ELSE n.b_steps END AS slow_steps,
           CASE l.subj WHEN 'A' THEN n.a_name ELSE n.b_name END AS s_name,
           CASE l.subj WHEN 'A' THEN n.b_name ELSE n.a_name END AS f_name,
           CASE l.subj WHEN 'A' THEN l.a_ns ELSE l.b_ns END AS s_ns,
           CASE l.subj WHEN 'A' THEN l.b_ns ELSE l.a_ns END AS f_ns,
           CASE l.subj WHEN 'A' THEN n.a_steps ELSE n.b_steps END AS s_steps,
           CASE l.subj WHEN 'A' THEN l.a_where ELSE l.b_where END AS s_where,
           CASE l.subj WHEN 'A' THEN l.a_self ELSE l.b_self END AS s_self,
           CASE l.subj WHEN 'A' THEN l.a_callees ELSE l.b_callees END AS s_callees,
           CASE l.subj WHEN 'A' THEN h.a_step_ns ELSE h.b_step_ns END AS s_frame_ns,
           CASE l.subj WHEN 'A' THEN h.b_step_ns ELSE h.a_step_ns END AS f_frame_ns,
           CASE l.subj WHEN 'A' THEN l.a_calls ELSE l.b_calls END AS s_calls,
           CASE l.subj WHEN 'A' THEN l.b_calls ELSE l.a_calls END AS f_calls,
           CASE l.subj WHEN 'A' THEN l.a_per ELSE l.b_per END AS s_per,
           CASE l.subj WHEN 'A' THEN l.b_per ELSE l.a_per END AS f_per,
           CASE l.subj WHEN 'A' THEN l.a_n ELSE l.b_n END AS s_n,
           CASE l.subj WHEN 'A' THEN l.b_n ELSE l.a_n END AS f_n,
           CASE l.subj WHEN 'A' THEN l.a_detail ELSE l.b_detail END AS s_detail,
           CASE WHEN trace_b IS NULL THEN 'its ideal' ELSE CASE l.subj WHEN 'A' THEN n.b_name ELSE n.a_name END END AS other,
           min(CASE WHEN l.kind = 'host-bound idle' THEN l.rank END) OVER () AS host_rank
    FROM listed l CROSS JOIN names n
    LEFT JOIN host_step h ON l.kind = 'host-bound idle' AND h.frame = l.what
    -- the callee the frame calls most on the side the sentence is about, and the other side's calls of it
    LEFT JOIN (SELECT * FROM loops QUALIFY row_number() OVER (PARTITION BY side, what ORDER BY calls DESC, callee) = 1) lp
           ON l.kind = 'host-bound idle' AND lp.what = l.what AND lp.side = l.subj
    LEFT JOIN loops lo ON lo.what = l.what AND lo.callee = lp.callee AND lo.side <> l.subj
), written AS (
    SELECT rank, CASE WHEN stake >= 0 THEN kind
                      WHEN kind = 'slower kernels' THEN 'faster kernels'
                      WHEN kind = 'more kernels or calls' THEN 'fewer kernels or calls'
                      WHEN kind = 'collective transfer' THEN 'faster collective transfer'
                      WHEN kind = 'less overlap' THEN 'more overlap'
                      ELSE 'less ' || kind END AS shown_kind,
           kind, stake, slow, s_name, slow_name, slow_steps, a_ns, b_ns, a_detail, b_detail, what, s_steps, assumption,
           CASE WHEN kind = 'host-bound idle' THEN coalesce(s_where, what)
                WHEN kind IN ('synchronisation idle', 'queued idle') THEN nullif(what, '') || coalesce(' (' || s_where || ')', '')
                WHEN kind IN ('slower kernels', 'more kernels or calls') THEN what || coalesce(' (' || s_where || ')', '')
                WHEN kind IN ('collective waiting', 'collective transfer') THEN what || coalesce(': ' || s_where, '')
                WHEN kind = 'roofline' THEN what END AS "where",
           CASE kind
               WHEN 'host-bound idle' THEN
                   s_name || '''s GPU idles ' || _why_time(coalesce(s_ns, 0)) || coalesce(' (' || _why_time(s_ns / s_steps) || ' a step)', '')
                   || ' in ' || coalesce(s_n, 0) || ' gap(s) while its host runs ' || coalesce(s_where, 'no recorded Python frame')
                   || coalesce(' (' || _why_time(s_self) || ' of it the frame''s own time'
                               || coalesce('; then ' || s_callees, '') || ')', '')
                   || CASE WHEN loop_calls >= 2 THEN '; in it, ' || format('{:,}', round(loop_calls)::BIGINT) || ' calls a step to '
                           || loop_callee || coalesce(', one every ' || _why_time(loop_spacing), '')
                           || CASE WHEN trace_b IS NOT NULL THEN ' (' || other || ': '
                                   || CASE WHEN loop_other > 0 THEN format('{:,}', round(loop_other)::BIGINT) ELSE 'none' END
                                   || ')' ELSE '' END
                           ELSE '' END
                   || '; ' || other || ' idles ' || _why_time(coalesce(f_ns, 0)) || ' there'
                   || CASE WHEN s_frame_ns IS NOT NULL THEN '. Host time in this frame per step: ' || s_name || ' '
                           || _why_time(s_frame_ns) || ', ' || other || ' ' || _why_time(f_frame_ns)
                           || CASE WHEN coalesce(f_frame_ns, 0) = 0 THEN ' (never enters it)' ELSE '' END ELSE '' END
               WHEN 'synchronisation idle' THEN
                   s_name || '''s GPU idles ' || _why_time(coalesce(s_ns, 0)) || ' in ' || coalesce(s_n, 0) || ' gap(s) while its host waits in '
                   || coalesce(nullif(what, ''), 'a synchronising call') || coalesce(' under ' || s_where, '')
                   || '; ' || other || ' ' || _why_time(coalesce(f_ns, 0))
               WHEN 'queued idle' THEN
                   s_name || '''s GPU idles ' || _why_time(coalesce(s_ns, 0)) || ' in ' || coalesce(s_n, 0) || ' gap(s) with the next work ('
                   || coalesce(nullif(what, ''), 'unknown') || ') already launched: a dependency or launch latency; '
                   || other || ' ' || _why_time(coalesce(f_ns, 0))
               WHEN 'short gaps' THEN
                   s_name || '''s GPU idles ' || _why_time(coalesce(s_ns, 0)) || ' in gaps shorter than ' || min_gap_us || ' µs (launch overhead between kernels); '
                   || other || ' ' || _why_time(coalesce(f_ns, 0))
               WHEN 'idle without launches' THEN
                   s_name || '''s GPU idles ' || _why_time(coalesce(s_ns, 0)) || ' before work whose launch the trace does not record; '
                   || other || ' ' || _why_time(coalesce(f_ns, 0))
               WHEN 'slower kernels' THEN
                   what || coalesce(' (' || s_where || ')', '') || ' takes ' || _why_time(s_per) || ' a call on ' || s_name || ' against ' || _why_time(f_per)
                   || ' on ' || other || ' (' || printf('%.2f', s_per / nullif(f_per, 0)) || 'x) over ' || s_calls::BIGINT || ' calls'
               WHEN 'more kernels or calls' THEN
                   what || coalesce(' (' || s_where || ')', '') || ' runs ' || coalesce(s_calls::BIGINT, 0) || ' calls in ' || coalesce(s_n::BIGINT, 0) || ' kernels on ' || s_name
                   || ' against ' || coalesce(f_calls::BIGINT, 0) || ' calls in ' || coalesce(f_n::BIGINT, 0) || ' kernels on ' || other
                   || CASE WHEN coalesce(f_calls, 0) = 0 THEN ' (only on ' || s_name || ')' ELSE '' END
               WHEN 'collective waiting' THEN
                   what || coalesce(' (' || s_where || ')', '') || ' waits ' || _why_time(coalesce(s_ns, 0)) || ' on ' || s_name || ' against ' || _why_time(coalesce(f_ns, 0))
                   || ' on ' || other || ': time above the median call, waiting for a slower rank'
                   || CASE WHEN s_n > 0 THEN '; ' || s_detail ELSE '' END
                   || CASE WHEN host_rank IS NOT NULL AND host_rank < rank AND s_n > 0
                           THEN '; the long calls follow the host stall of finding ' || host_rank ELSE '' END
               WHEN 'collective transfer' THEN
                   what || coalesce(' (' || s_where || ')', '') || ' transfers for ' || _why_time(s_per) || ' a call (median) on ' || s_name || ' against '
                   || _why_time(f_per) || ' on ' || other || ', ' || _why_time(coalesce(s_ns, 0)) || ' against ' || _why_time(coalesce(f_ns, 0)) || ' in all'
               WHEN 'less overlap' THEN
                   s_name || ' hides ' || _why_time(-coalesce(s_ns, 0)) || ' of kernel time under other kernels against '
                   || _why_time(-coalesce(f_ns, 0)) || ' on ' || other
               WHEN 'exposed memcpy' THEN
                   s_name || ' spends ' || _why_time(coalesce(s_ns, 0)) || ' in copies nothing hides against ' || _why_time(coalesce(f_ns, 0)) || ' on ' || other
               WHEN 'roofline' THEN
                   what || ' runs ' || _why_time(coalesce(s_ns, 0)) || ' on ' || s_name || ' where its device''s peak allows '
                   || _why_time(f_ns) || ': ' || s_detail
           END || CASE WHEN stake < 0 THEN ': ' || slow_name || ' is ' || _why_time(-stake) || ' faster here' ELSE '' END
           AS finding,
           CASE WHEN kind = 'host-bound idle' THEN
                    'tracedb report host-frames --trace ' || _shell_word(a_name) || coalesce(' --vs ' || _shell_word(b_name), '')
               WHEN kind IN ('synchronisation idle', 'queued idle', 'short gaps', 'idle without launches') THEN
                    'tracedb report gaps --trace ' || _shell_word(s_name)
               WHEN kind = 'slower kernels' THEN
                    'tracedb report compare --trace ' || _shell_word(a_name) || ' --vs ' || _shell_word(b_name)
               WHEN kind = 'more kernels or calls' THEN
                    'tracedb report fusion --trace ' || _shell_word(a_name) || ' --vs ' || _shell_word(b_name)
               WHEN kind IN ('collective waiting', 'collective transfer') THEN
                    'tracedb report collectives --trace ' || _shell_word(s_name)
               WHEN kind = 'roofline' THEN 'tracedb report roofline --trace ' || _shell_word(s_name)
               ELSE 'tracedb report timeline --trace ' || _shell_word(s_name) END
           || CASE WHEN want_phase IS NOT NULL AND kind NOT IN ('more kernels or calls', 'less overlap', 'exposed memcpy', 'roofline')
                   THEN ' --phase ' || want_phase ELSE '' END AS next
    FROM sentences
), remainder AS (
    SELECT s.slow, s.a_span, s.b_span, n.a_name, n.b_name, CASE s.slow WHEN 'A' THEN n.a_steps ELSE n.b_steps END AS s_steps,
           CASE s.slow WHEN 'A' THEN n.a_name ELSE n.b_name END AS s_name,
           CASE WHEN trace_b IS NULL THEN s.a_span ELSE abs(s.a_span - s.b_span) END
               - coalesce((SELECT sum(stake) FROM listed), 0) AS stake,
           coalesce((SELECT sum(stake) FROM staked WHERE stake < 0 AND (kind, what) NOT IN (SELECT (kind, what) FROM listed)), 0) AS offsets,
           coalesce((SELECT sum(stake) FROM staked WHERE stake > 0 AND (kind, what) NOT IN (SELECT (kind, what) FROM listed)), 0) AS unlisted,
           (SELECT count(*) FROM staked WHERE stake <> 0) - (SELECT count(*) FROM listed) AS more_parts
    FROM spans s CROSS JOIN names n
)
SELECT w.rank, w.shown_kind AS kind, w.finding, w.stake::BIGINT AS at_stake_ns, (w.stake / w.slow_steps)::BIGINT AS per_step_ns,
       w."where", w.slow_name AS slower, w.a_ns::BIGINT AS a_ns, w.b_ns::BIGINT AS b_ns, w.a_detail, w.b_detail,
       CASE WHEN w.stake >= 0 THEN h.hint END AS hint, w.next, w.kind || '|' || w.what AS part, w.assumption,
       CASE WHEN w.rank = 1 THEN
           CASE WHEN trace_b IS NULL THEN w.slow_name || '''s span is ' || _why_time(sp.a_span)
                ELSE w.slow_name || ' is ' || _why_time(abs(sp.a_span - sp.b_span)) || ' slower than '
                     || CASE w.slow WHEN 'A' THEN n.b_name ELSE n.a_name END || ' ('
                     || printf('%.1f', 100.0 * abs(sp.a_span - sp.b_span) / nullif(least(sp.a_span, sp.b_span), 0)) || ' %)' END
           || CASE WHEN w.stake > 0 THEN '; first fix: ' || w.shown_kind || coalesce(' in ' || w."where", '') || ', '
                                         || _why_time(w.stake) || CASE WHEN trace_b IS NULL THEN ' above its ideal' ELSE ' at stake' END
                   ELSE '; no single part explains it' END END AS answer
FROM written w
CROSS JOIN spans sp CROSS JOIN names n
LEFT JOIN (SELECT kind, first(hint ORDER BY rank) AS hint FROM _why_hints_ordered GROUP BY kind) h USING (kind)
UNION ALL
SELECT (SELECT count(*) FROM listed) + 1, 'remainder',
       CASE WHEN trace_b IS NULL
            THEN 'The rest of ' || r.s_name || '''s span: kernel time at the roofline, operations the roofline does not model, and kernels at once'
            ELSE 'What no finding above explains: ' || _why_time(r.unlisted) || ' in smaller parts where '
                 || r.s_name || ' is slower, less ' || _why_time(-r.offsets) || ' where it is faster'
                 || ' (' || printf('%.1f', 100.0 * abs(r.stake) / nullif(abs(r.a_span - r.b_span), 0)) || ' % of the gap)' END
       || CASE WHEN r.more_parts > 0 THEN '; ' || r.more_parts || ' more part(s): --limit all' ELSE '' END,
       r.stake::BIGINT, (r.stake / r.s_steps)::BIGINT, NULL, r.s_name, NULL, NULL, NULL, NULL,
       (SELECT first(hint ORDER BY rank) FROM _why_hints_ordered WHERE kind = 'remainder'),
       CASE WHEN trace_b IS NULL THEN 'tracedb report timeline --trace ' || _shell_word(r.a_name)
            ELSE 'tracedb report compare --trace ' || _shell_word(r.a_name) || ' --vs ' || _shell_word(r.b_name) END
           || CASE WHEN want_phase IS NOT NULL THEN ' --phase ' || want_phase ELSE '' END,
       'remainder|', NULL,
       CASE WHEN (SELECT count(*) FROM listed) = 0 THEN
           r.s_name || CASE WHEN trace_b IS NULL THEN '''s span is ' || _why_time(r.a_span)
                            ELSE ' is ' || _why_time(abs(r.a_span - r.b_span)) || ' slower' END
           || '; no single part explains it' END
FROM remainder r
WHERE (SELECT count(*) FROM sides) > 0
ORDER BY 1;
