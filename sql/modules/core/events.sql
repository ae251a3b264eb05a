-- Views over the raw event tables: every event in one place, process/thread names, counters.

-- True for every trace, except while tracedb derives one trace's facts (tracedb.facts): it then
-- sets the variable tracedb_scope to that trace's id, and the analysis views read that trace's
-- rows alone. DuckDB folds the variable into each scan's filter, which skips other traces' row
-- groups, so deriving a trace costs the same in a database of one trace as in one of a thousand.
CREATE OR REPLACE MACRO _in_scope(t) AS t = coalesce(getvariable('tracedb_scope'), t);

-- Every event of every trace, whichever table holds it, in one shape. Counting it per trace
-- gives the file's event count less the rejected events.
-- Columns:
--   trace_id    trace the event belongs to
--   event_id    index of the event in the file's event list
--   table_name  table holding the event's typed row
--   ph          phase letter (X for the typed duration tables)
--   cat         category (NULL when the event had none)
--   name        event name
--   ts_ns       start, nanoseconds
--   dur_ns      duration, nanoseconds (NULL for instants, flows, counters, metadata)
--   pid         process field as text
--   tid         thread field as text
--   args        all args as JSON
CREATE OR REPLACE VIEW all_events AS
SELECT trace_id, kernel_id AS event_id, 'kernels' AS table_name, 'X' AS ph, coalesce(extra ->> 'cat', 'kernel') AS cat, name,
       ts_ns, dur_ns, pid, tid, args FROM kernels
UNION ALL
SELECT trace_id, event_id, 'memory_ops', 'X', cat, name, ts_ns, dur_ns, pid, tid, args FROM memory_ops
UNION ALL
SELECT trace_id, event_id, 'runtime_calls', 'X', cat, name, ts_ns, dur_ns, pid, tid, args FROM runtime_calls
UNION ALL
SELECT trace_id, event_id, 'cpu_ops', 'X', 'cpu_op', name, ts_ns, dur_ns, pid, tid, args FROM cpu_ops
UNION ALL
SELECT trace_id, event_id, 'python_functions', 'X', 'python_function', name, ts_ns, dur_ns, pid, tid, args
FROM python_functions
UNION ALL
SELECT trace_id, event_id, 'annotations', 'X', cat, name, ts_ns, dur_ns, pid, tid, args FROM annotations
UNION ALL
SELECT trace_id, event_id, 'flows', ph, cat, name, ts_ns, NULL, pid, tid, args FROM flows
UNION ALL
SELECT trace_id, event_id, 'instants', ph, cat, name, ts_ns, NULL, pid, tid, args FROM instants
UNION ALL
SELECT trace_id, event_id, 'counters', 'C', cat, name, ts_ns, NULL, pid, tid, args FROM counters
UNION ALL
SELECT trace_id, event_id, 'metadata_events', 'M', NULL, name, ts_ns, NULL, pid, tid, args FROM metadata_events
UNION ALL
SELECT trace_id, event_id, 'other_events', ph, cat, name, ts_ns, dur_ns, pid, tid, args FROM other_events;

-- Name of each process, from process_name metadata events (the last one wins).
-- Columns:
--   trace_id  trace the process belongs to
--   pid       process field as text
--   name      process name, e.g. python3, or the device label
CREATE OR REPLACE VIEW process_names AS
SELECT trace_id, pid, arg_max(value, event_id) AS name
FROM metadata_events
WHERE name = 'process_name'
GROUP BY trace_id, pid;

-- Name of each thread, from thread_name metadata events (the last one wins).
-- Columns:
--   trace_id  trace the thread belongs to
--   pid       process field as text
--   tid       thread field as text
--   name      thread name, e.g. "thread 4242 (python3)" or "stream 7"
CREATE OR REPLACE VIEW thread_names AS
SELECT trace_id, pid, tid, arg_max(value, event_id) AS name
FROM metadata_events
WHERE name = 'thread_name'
GROUP BY trace_id, pid, tid;

-- One row per series value of each counter event.
-- Columns:
--   trace_id  trace the sample belongs to
--   event_id  the counter event
--   name      counter name
--   series    key of the value inside the counter's args
--   ts_ns     time, nanoseconds
--   pid       process field as text
--   value     the value (NULL when it is not a number)
CREATE OR REPLACE VIEW counter_values AS
SELECT c.trace_id, c.event_id, c.name, k.series, c.ts_ns, c.pid,
       TRY_CAST(json_extract_string(c.args, '$."' || replace(k.series, '"', '\"') || '"') AS DOUBLE) AS value
FROM counters c, LATERAL (SELECT unnest(json_keys(c.args)) AS series) k
WHERE json_type(c.args) = 'OBJECT';
