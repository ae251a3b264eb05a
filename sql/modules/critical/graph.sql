-- include: classify.launches
-- include: core.selection
-- include: timeline.gaps
-- include: timeline.timeline

-- The events a step's dependency graph is built from (tracedb.critical builds the graph and walks
-- it: a longest path over events ordered in time is one pass, which SQL does not express). A window
-- holds the host operations and runtime calls that start in it and last (HTA's clipping), and the
-- kernels, copies and memsets those calls launched.

-- True for a runtime call the calling thread waits in until the device has worked through a stream
-- or an event (HTA's blocking calls: device, stream and event synchronize, an event query, the
-- copies that may synchronise), for CUDA and HIP alike (scalar macro): the host's time inside it
-- is the device's, not the host's.
CREATE OR REPLACE MACRO is_blocking_call(name) AS
    is_sync_call(name) OR regexp_matches(name, '^(cuda|hip)(EventQuery|MemcpyAsync)$');

-- The windows a trace's critical path is found in (table macro): each step (step_windows, on the
-- thread of its annotation or frame), and the whole trace.
-- Parameters: want_trace: a trace name or #id.
-- Columns:
--   trace_id  the trace
--   step      the step's number (kernel_facts.iteration); NULL for the whole trace
--   ts_ns     the window's start, nanoseconds
--   end_ns    its end
CREATE OR REPLACE MACRO critical_windows(want_trace) AS TABLE
SELECT w.trace_id, w.step, w.ts_ns, w.end_ns
FROM step_windows w JOIN traces t USING (trace_id)
WHERE is_trace(t.name, t.trace_id, want_trace)
UNION ALL
SELECT e.trace_id, NULL, min(e.ts_ns), max(e.ts_ns + coalesce(e.dur_ns, 0))
FROM (SELECT trace_id, ts_ns, dur_ns FROM cpu_ops UNION ALL SELECT trace_id, ts_ns, dur_ns FROM runtime_calls
      UNION ALL SELECT trace_id, ts_ns, dur_ns FROM kernels) e
JOIN traces t USING (trace_id)
WHERE is_trace(t.name, t.trace_id, want_trace)
GROUP BY e.trace_id;

-- The nodes of a window's graph, each an event with a start and an end (table macro): host
-- operations and runtime calls starting in [lo_ns, hi_ns] and lasting, and the device work they
-- launched. Parameters: want_id: a trace id; lo_ns, hi_ns: the window.
-- Columns:
--   kind         host (a cpu_op or a runtime call), kernel, memcpy or memset
--   event_id     the event's row in its table (cpu_ops, runtime_calls, kernels, memory_ops)
--   source       its table
--   name         its name
--   pid, tid     the host thread (host events), or the device's track as the trace writes it (device work)
--   stream       the device stream (device events)
--   ts_ns        start, nanoseconds
--   end_ns       end
--   correlation  a runtime call's correlation id (the cuda_sync events and event records name it)
--   blocking     a runtime call the thread waits in for the device (is_blocking_call)
--   launch_id    the runtime call that launched device work (runtime_calls.event_id)
--   bound        what the device work is: compute, communication or memcpy/memset
CREATE OR REPLACE MACRO critical_events(want_id, lo_ns, hi_ns) AS TABLE
WITH host AS (
    SELECT 'host' AS kind, event_id, 'cpu_ops' AS source, name, pid, tid, NULL::BIGINT AS stream, ts_ns,
           ts_ns + dur_ns AS end_ns, NULL::BIGINT AS correlation, false AS blocking
    FROM cpu_ops WHERE trace_id = want_id AND dur_ns > 0 AND ts_ns BETWEEN lo_ns AND hi_ns
    UNION ALL
    SELECT 'host', event_id, 'runtime_calls', name, pid, tid, NULL, ts_ns, ts_ns + dur_ns, correlation,
           is_blocking_call(name)
    FROM runtime_calls WHERE trace_id = want_id AND dur_ns > 0 AND ts_ns BETWEEN lo_ns AND hi_ns
), launches AS (
    SELECT event_id, correlation FROM host WHERE source = 'runtime_calls' AND correlation IS NOT NULL
)
SELECT kind, event_id, source, name, pid, tid, stream, ts_ns, end_ns, correlation, blocking,
       NULL::BIGINT AS launch_id, NULL AS bound
FROM host
UNION ALL
SELECT 'kernel', k.kernel_id, 'kernels', k.name, k.pid, k.tid, TRY_CAST(k.stream AS BIGINT), k.ts_ns, k.ts_ns + k.dur_ns,
       k.correlation, false, l.launch_id,
       CASE WHEN is_comm_op(f.op) THEN 'communication' ELSE 'compute' END
FROM kernels k
JOIN kernel_launches l USING (trace_id, kernel_id)
JOIN kernel_facts f USING (trace_id, kernel_id)
WHERE k.trace_id = want_id AND k.dur_ns > 0 AND l.launch_id IN (SELECT event_id FROM launches)
UNION ALL
SELECT CASE WHEN m.cat = 'gpu_memset' THEN 'memset' ELSE 'memcpy' END, m.event_id, 'memory_ops', m.name, m.pid, m.tid,
       TRY_CAST(m.stream AS BIGINT), m.ts_ns, m.ts_ns + m.dur_ns, m.correlation, false, l.event_id, 'memcpy/memset'
FROM memory_ops m
JOIN launches l ON l.correlation = m.correlation
WHERE m.trace_id = want_id AND m.dur_ns > 0;

-- The device's synchronisation records of a window (Kineto's cuda_sync events): those made by a
-- runtime call starting in it (table macro). Parameters: as critical_events.
-- Columns:
--   kind             Context Sync, Stream Sync, Event Sync or Stream Wait Event
--   ts_ns, end_ns    the record's time on the device
--   stream           the stream synchronised (Stream Sync) or made to wait (Stream Wait Event)
--   correlation      the runtime call's correlation id (cudaDeviceSynchronize, cudaStreamWaitEvent, ...)
--   wait_on_stream   the stream of the event waited on (Event Sync, Stream Wait Event)
--   record_corr      the correlation id of the cudaEventRecord of that event
CREATE OR REPLACE MACRO critical_syncs(want_id, lo_ns, hi_ns) AS TABLE
SELECT coalesce(json_extract_string(args, '$.cuda_sync_kind'), name) AS kind, ts_ns, ts_ns + coalesce(dur_ns, 0) AS end_ns,
       TRY_CAST(json_extract(args, '$.stream') AS BIGINT) AS stream,
       TRY_CAST(json_extract(args, '$.correlation') AS BIGINT) AS correlation,
       TRY_CAST(json_extract(args, '$.wait_on_stream') AS BIGINT) AS wait_on_stream,
       TRY_CAST(json_extract(args, '$.wait_on_cuda_event_record_corr_id') AS BIGINT) AS record_corr
FROM other_events
WHERE trace_id = want_id AND cat = 'cuda_sync'
  AND TRY_CAST(json_extract(args, '$.correlation') AS BIGINT) IN (
      SELECT correlation FROM runtime_calls WHERE trace_id = want_id AND ts_ns BETWEEN lo_ns AND hi_ns);
