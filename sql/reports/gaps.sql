-- Report: gaps
-- The GPU's idle gaps longer than a threshold and their causes, the same hole in many steps read as
-- one finding: per cause and place in the code (the launching thread's innermost Python frame and
-- cpu_op over the gap, a synchronising call, the activity before and after), how many gaps, in
-- which steps, and the idle time they cost, largest first. Causes (the macro gpu_idle_gaps): host
-- launched late (HTA's host wait), synchronisation, queued and waiting (HTA's kernel wait), no
-- launch recorded.
-- Chart: cause+frame -> idle_ns  Idle time per finding
-- Strips: each trace's slowest and typical step (or -p step=N): where in the step its gaps sit
-- Example: tracedb report gaps --trace h100_bert-small -p min_gap_us=20
-- Rows: traces with an idle gap longer than the threshold
-- Parameters:
--   trace = NULL       trace name or #id (NULL: every trace)
--   phase = NULL       only gaps before a kernel of this phase: prefill, decode, mixed or none (NULL: all)
--   min_gap_us = 50    the shortest gap counted, in microseconds
--   limit = NULL       findings per trace (NULL: every finding)
--   step = NULL integer  the step the HTML's timeline strips draw (NULL: the slowest and a typical one)
-- Columns:
--   trace         text             trace name
--   cause         text             host launched late, synchronisation, queued and waiting, no launch recorded
--   frame         text             innermost Python frame of the launching thread over the gap
--   gaps          count     total  gaps of this finding
--   idle_ns       duration  total  idle time of those gaps
--   max_ns        duration         the longest of them
--   steps         text             the steps they sit in (between steps: 'between')
--   sync_call     text             synchronising call (or device sync event) inside the gaps
--   frame_cpu_op  text      wide   innermost cpu_op of the launching thread over the gap
--   before        kernel    wide   activity that ended last before the gap
--   after         kernel           activity that ended the gap
--   after_op      text      wide   its operation
WITH g AS (
    SELECT g.*, t.name AS trace
    FROM gpu_idle_gaps($trace, 1000 * $min_gap_us) g JOIN traces t USING (trace_id)
    WHERE $phase IS NULL OR g.phase = $phase
), found AS (
    SELECT trace_id, trace, cause, frame, frame_cpu_op, sync_call, before_name AS before, after_name AS after,
           after_op, count(*) AS gaps, sum(idle_ns) AS idle_ns, max(idle_ns) AS max_ns,
           concat_ws(', ', nullif(array_to_string(list_sort(list(DISTINCT step) FILTER (NOT between_steps)), ', '), ''),
                     CASE WHEN bool_or(between_steps OR step IS NULL) THEN 'between' END) AS steps
    FROM g GROUP BY ALL
)
SELECT trace, cause, frame, gaps, idle_ns, max_ns, steps, sync_call, frame_cpu_op, before, after, after_op
FROM found
QUALIFY $limit IS NULL OR row_number() OVER (PARTITION BY trace_id ORDER BY idle_ns DESC) <= $limit
ORDER BY trace_id, idle_ns DESC, frame;

-- Section: each
-- Every gap of at least min_gap_us, in time order, with its step and what the host was doing.
-- Columns:
--   trace              text             trace name
--   gap                id               1, 2, ... in time order
--   step               id               step of the kernel after the gap
--   phase              text             its phase
--   idle_ns            duration  total  length of the gap
--   cause              text             host launched late, synchronisation, queued and waiting, no launch recorded
--   launched_after_ns  duration         the next activity's launch after the device went idle (negative: before)
--   frame              text             innermost Python frame of the launching thread over the gap
--   sync_call          text             synchronising call inside the gap
--   frame_cpu_op       text      wide   innermost cpu_op over the gap
--   before             kernel    wide   activity before the gap
--   after              kernel           activity after the gap
SELECT t.name AS trace, gap, step, phase, idle_ns, cause, launched_after_ns, frame, sync_call, frame_cpu_op,
       before_name AS before, after_name AS after
FROM gpu_idle_gaps($trace, 1000 * $min_gap_us) g JOIN traces t USING (trace_id)
WHERE $phase IS NULL OR g.phase = $phase
ORDER BY g.trace_id, gap;
