-- include: steps.layers
-- include: timeline.gaps
-- include: timeline.timeline

-- A window of a trace as Chrome-trace events for Perfetto UI (tracedb export --perfetto): the
-- trace's own events that start in the window (kernels, memcpys and memsets, runtime calls, cpu_ops,
-- Python frames, annotations, flows, and the process and thread names), and tracedb's findings on a
-- process of their own (perfetto_pid): a track of steps, one of layers and one of idle gaps, each
-- gap a slice named by its cause with its frame and idle time in its args. tracedb.perfetto writes
-- these rows as JSON (ts and dur in microseconds, exact to the nanosecond) with the why findings.

-- The process id of tracedb's tracks in an export of a trace (scalar macro): above every numeric
-- pid of the trace, so that no track of the trace's own is merged into them.
CREATE OR REPLACE MACRO perfetto_pid(want_trace_id) AS (
    SELECT greatest(coalesce(max(TRY_CAST(pid AS BIGINT)), 0), 0) + 1000000
    FROM (SELECT pid FROM kernels WHERE trace_id = want_trace_id
          UNION ALL SELECT pid FROM cpu_ops WHERE trace_id = want_trace_id
          UNION ALL SELECT pid FROM metadata_events WHERE trace_id = want_trace_id)
);

-- The events of a window (table macro): want_trace_id, the window [from_ns, to_ns), and the
-- shortest idle gap drawn (min_gap_ns).
-- Columns:
--   ph     Chrome-trace phase: X (a slice), s / t / f (a flow), M (a name)
--   cat    category (the trace's own, or tracedb for its tracks)
--   name   slice name
--   pid    process (as the trace writes it; tracedb's tracks: perfetto_pid)
--   tid    thread or stream
--   ts_ns  start, nanoseconds (NULL for a name)
--   dur_ns duration, nanoseconds (NULL but for slices)
--   id     flow id (flows only)
--   bp     flow binding point (flows only)
--   args   args as JSON
--   sort   order of the rows in the file: names first, then by start
CREATE OR REPLACE MACRO perfetto_window(want_trace_id, from_ns, to_ns, min_gap_ns) AS TABLE
WITH tracks AS (
    SELECT perfetto_pid(want_trace_id) AS pid
), own AS (
    SELECT 'X' AS ph, 'kernel' AS cat, name, pid, tid, ts_ns, dur_ns, NULL AS id, NULL AS bp, args
    FROM kernels WHERE trace_id = want_trace_id AND ts_ns >= from_ns AND ts_ns < to_ns
    UNION ALL
    SELECT 'X', cat, name, pid, tid, ts_ns, dur_ns, NULL, NULL, args
    FROM memory_ops WHERE trace_id = want_trace_id AND ts_ns >= from_ns AND ts_ns < to_ns
    UNION ALL
    SELECT 'X', cat, name, pid, tid, ts_ns, dur_ns, NULL, NULL, args
    FROM runtime_calls WHERE trace_id = want_trace_id AND ts_ns >= from_ns AND ts_ns < to_ns
    UNION ALL
    SELECT 'X', 'cpu_op', name, pid, tid, ts_ns, dur_ns, NULL, NULL, args
    FROM cpu_ops WHERE trace_id = want_trace_id AND ts_ns >= from_ns AND ts_ns < to_ns
    UNION ALL
    SELECT 'X', 'python_function', name, pid, tid, ts_ns, dur_ns, NULL, NULL, args
    FROM python_functions WHERE trace_id = want_trace_id AND ts_ns >= from_ns AND ts_ns < to_ns
    UNION ALL
    SELECT 'X', cat, name, pid, tid, ts_ns, dur_ns, NULL, NULL, args
    FROM annotations WHERE trace_id = want_trace_id AND ts_ns >= from_ns AND ts_ns < to_ns
    UNION ALL
    SELECT ph, cat, name, pid, tid, ts_ns, NULL, flow_id, bp, args
    FROM flows WHERE trace_id = want_trace_id AND ts_ns >= from_ns AND ts_ns < to_ns
    UNION ALL
    SELECT 'M', NULL, name, pid, tid, NULL, NULL, NULL, NULL, args
    FROM metadata_events WHERE trace_id = want_trace_id AND name IN ('process_name', 'thread_name',
                                                                     'process_sort_index', 'thread_sort_index')
), steps AS (
    -- each step whose device activity lies in the window: first start to last end
    SELECT 'X' AS ph, 'tracedb' AS cat, name, ts_ns, dur_ns, args
    FROM (
        SELECT 'step ' || a.step || coalesce(' (' || mode(a.phase) || ')', '') AS name,
               min(a.ts_ns) AS ts_ns, max(a.end_ns) - min(a.ts_ns) AS dur_ns, max(a.end_ns) AS end_ns,
               json_object('step', a.step, 'kernels', count(*) FILTER (a.kind = 'kernel')) AS args
        FROM device_activity a
        WHERE a.trace_id = want_trace_id AND a.step IS NOT NULL
        GROUP BY a.step
    )
    WHERE ts_ns >= from_ns AND end_ns <= to_ns
), layers AS (
    SELECT 'X' AS ph, 'tracedb' AS cat,
           'layer ' || l.layer || coalesce(': ' || any_value(l.layer_module), '') AS name,
           min(k.ts_ns) AS ts_ns, max(k.ts_ns + k.dur_ns) - min(k.ts_ns) AS dur_ns,
           json_object('forward_pass', l.forward_pass, 'layer', l.layer, 'kernels', count(*)) AS args
    FROM kernel_layers l JOIN kernels k USING (trace_id, kernel_id)
    WHERE l.trace_id = want_trace_id AND l.layer IS NOT NULL AND k.ts_ns >= from_ns AND k.ts_ns < to_ns
    GROUP BY l.forward_pass, l.layer
), gaps AS (
    SELECT 'X' AS ph, 'tracedb' AS cat, 'idle: ' || cause AS name, start_ns AS ts_ns, idle_ns AS dur_ns,
           json_object('cause', cause, 'frame', frame, 'at_stake_us', idle_ns / 1000.0, 'step', step,
                       'frame_cpu_op', frame_cpu_op, 'sync_call', sync_call, 'before', before_name,
                       'after', after_name, 'after_op', after_op) AS args
    FROM gpu_idle_gaps(want_trace_id, min_gap_ns)
    WHERE start_ns >= from_ns AND end_ns <= to_ns
), ours AS (
    SELECT ph, cat, name, 1 AS track, ts_ns, dur_ns, args FROM steps
    UNION ALL SELECT ph, cat, name, 2, ts_ns, dur_ns, args FROM layers
    UNION ALL SELECT ph, cat, name, 3, ts_ns, dur_ns, args FROM gaps
)
SELECT ph, cat, name, pid, tid, ts_ns, dur_ns, id, bp, args, CASE WHEN ph = 'M' THEN 0 ELSE 1 END AS sort FROM own
UNION ALL
SELECT o.ph, o.cat, o.name, t.pid::VARCHAR, o.track::VARCHAR, o.ts_ns, o.dur_ns, NULL, NULL, o.args, 1
FROM ours o, tracks t
UNION ALL
-- the names of tracedb's process and tracks
SELECT 'M', NULL, n.kind, t.pid::VARCHAR, n.tid, NULL, NULL, NULL, NULL, json_object('name', n.label), 0
FROM tracks t, (VALUES ('process_name', '0', 'tracedb findings'), ('thread_name', '1', 'steps'),
                       ('thread_name', '2', 'layers'), ('thread_name', '3', 'idle gaps'),
                       ('thread_name', '4', 'why'), ('thread_name', '5', 'critical path')) n(kind, tid, label);
