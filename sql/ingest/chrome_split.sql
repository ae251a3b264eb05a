-- Typing of Chrome-trace events: one batch of the staging relation _staging_events is split into
-- the event tables. The loader runs these statements for every batch, inside the load's
-- transaction, with the parameter $trace_id.
--
-- _staging_events columns (written by tracedb.ingest.chrome):
--   event_id  index of the event in the file's event list
--   ts_ns     exact start in integer nanoseconds (NULL when the event has no ts)
--   dur_ns    exact duration in integer nanoseconds (NULL when the event has no dur)
--   args      the event's args as JSON text, digits exactly as in the file
--   rest      every other key of the event (ph, cat, name, pid, tid, id, ...) as JSON text
--
-- Routing: X events by category (kernel, gpu_memcpy/gpu_memset, cuda_runtime/cuda_driver, cpu_op,
-- python_function, user_annotation/gpu_user_annotation); s/t/f flows, i/I instants, C counters,
-- M metadata; everything else to other_events. A key a table has no column for goes to its extra.
-- The args each analysis needs become typed columns; args keeps all of them.

-- Keys of an event that its table has no column for: rest minus the keys set to null in patch.
CREATE OR REPLACE TEMP MACRO _extra(rest, patch) AS nullif(json_merge_patch(rest, patch), '{}'::JSON);

-- The batch with the event's fields parsed once and its destination table.
CREATE OR REPLACE TEMP TABLE _batch AS
SELECT event_id, ts_ns, dur_ns, args::JSON AS args, rest::JSON AS rest,
       f.ph, f.cat, f.name, f.pid, f.tid, f.id, f.bp, f.s,
       CASE
           WHEN f.ph = 'X' THEN CASE f.cat
               WHEN 'kernel' THEN 'kernels'
               WHEN 'gpu_memcpy' THEN 'memory_ops'
               WHEN 'gpu_memset' THEN 'memory_ops'
               WHEN 'cuda_runtime' THEN 'runtime_calls'
               WHEN 'cuda_driver' THEN 'runtime_calls'
               WHEN 'cpu_op' THEN 'cpu_ops'
               WHEN 'python_function' THEN 'python_functions'
               WHEN 'user_annotation' THEN 'annotations'
               WHEN 'gpu_user_annotation' THEN 'annotations'
               ELSE 'other_events' END
           WHEN f.ph IN ('s', 't', 'f') THEN 'flows'
           WHEN f.ph IN ('i', 'I') THEN 'instants'
           WHEN f.ph = 'C' THEN 'counters'
           WHEN f.ph = 'M' THEN 'metadata_events'
           ELSE 'other_events'
       END AS dest
FROM (
    SELECT *, json_transform(rest, '{"ph": "VARCHAR", "cat": "VARCHAR", "name": "VARCHAR", "pid": "VARCHAR",
        "tid": "VARCHAR", "id": "VARCHAR", "bp": "VARCHAR", "s": "VARCHAR"}') AS f
    FROM _staging_events
);

INSERT INTO kernels
SELECT $trace_id, event_id, name, ts_ns, dur_ns, pid, tid,
       a.correlation, a."External id", a.stream, a.device, a.context, a.queued, a.grid, a.block,
       a."registers per thread", a."shared memory", a."blocks per SM", a."warps per SM",
       a."est. achieved occupancy %", a.kind, args,
       _extra(rest, '{"ph": null, "cat": null, "name": null, "pid": null, "tid": null}')
FROM (
    SELECT *, json_transform(args, '{"correlation": "BIGINT", "External id": "BIGINT", "stream": "BIGINT",
        "device": "BIGINT", "context": "BIGINT", "queued": "BIGINT", "grid": "INTEGER[]", "block": "INTEGER[]",
        "registers per thread": "INTEGER", "shared memory": "BIGINT", "blocks per SM": "DOUBLE",
        "warps per SM": "DOUBLE", "est. achieved occupancy %": "DOUBLE", "kind": "VARCHAR"}') AS a
    FROM _batch WHERE dest = 'kernels'
);

INSERT INTO memory_ops
SELECT $trace_id, event_id, cat, name, ts_ns, dur_ns, pid, tid,
       a.correlation, a."External id", a.stream, a.device, a.context, a.kind, a.bytes,
       a."memory bandwidth (GB/s)", args,
       _extra(rest, '{"ph": null, "cat": null, "name": null, "pid": null, "tid": null}')
FROM (
    SELECT *, json_transform(args, '{"correlation": "BIGINT", "External id": "BIGINT", "stream": "BIGINT",
        "device": "BIGINT", "context": "BIGINT", "kind": "VARCHAR", "bytes": "BIGINT",
        "memory bandwidth (GB/s)": "DOUBLE"}') AS a
    FROM _batch WHERE dest = 'memory_ops'
);

INSERT INTO runtime_calls
SELECT $trace_id, event_id, cat, name, ts_ns, dur_ns, pid, tid,
       a.correlation, a."External id", coalesce(a.cbid, a.cid), args,
       _extra(rest, '{"ph": null, "cat": null, "name": null, "pid": null, "tid": null}')
FROM (
    SELECT *, json_transform(args, '{"correlation": "BIGINT", "External id": "BIGINT", "cbid": "BIGINT",
        "cid": "BIGINT"}') AS a
    FROM _batch WHERE dest = 'runtime_calls'
);

INSERT INTO cpu_ops
SELECT $trace_id, event_id, name, ts_ns, dur_ns, pid, tid,
       a."External id", a."Sequence number", a."Fwd thread id", a."Record function id", a."Ev Idx",
       json_extract(args, '$."Input Dims"'), json_extract(args, '$."Input type"'),
       json_extract(args, '$."Input Strides"'), json_extract(args, '$."Concrete Inputs"'),
       args,
       _extra(rest, '{"ph": null, "cat": null, "name": null, "pid": null, "tid": null}')
FROM (
    SELECT *, json_transform(args, '{"External id": "BIGINT", "Sequence number": "BIGINT",
        "Fwd thread id": "BIGINT", "Record function id": "BIGINT", "Ev Idx": "BIGINT"}') AS a
    FROM _batch WHERE dest = 'cpu_ops'
);

INSERT INTO python_functions
SELECT $trace_id, event_id, name, ts_ns, dur_ns, pid, tid,
       a."Python id", a."Python parent id", a."Python thread", args,
       _extra(rest, '{"ph": null, "cat": null, "name": null, "pid": null, "tid": null}')
FROM (
    SELECT *, json_transform(args, '{"Python id": "BIGINT", "Python parent id": "BIGINT",
        "Python thread": "BIGINT"}') AS a
    FROM _batch WHERE dest = 'python_functions'
);

INSERT INTO annotations
SELECT $trace_id, event_id, cat, cat = 'gpu_user_annotation', name, ts_ns, dur_ns, pid, tid,
       a."External id", a.correlation, a.device, a.stream, args,
       _extra(rest, '{"ph": null, "cat": null, "name": null, "pid": null, "tid": null}')
FROM (
    SELECT *, json_transform(args, '{"External id": "BIGINT", "correlation": "BIGINT", "device": "BIGINT",
        "stream": "BIGINT"}') AS a
    FROM _batch WHERE dest = 'annotations'
);

INSERT INTO flows
SELECT $trace_id, event_id, ph, cat, name, id, ts_ns, pid, tid, bp, args,
       _extra(rest, '{"ph": null, "cat": null, "name": null, "pid": null, "tid": null, "id": null, "bp": null}')
FROM _batch WHERE dest = 'flows';

INSERT INTO instants
SELECT $trace_id, event_id, ph, cat, name, s, ts_ns, pid, tid, args,
       _extra(rest, '{"ph": null, "cat": null, "name": null, "pid": null, "tid": null, "s": null}')
FROM _batch WHERE dest = 'instants';

INSERT INTO counters
SELECT $trace_id, event_id, cat, name, ts_ns, pid, tid, args,
       _extra(rest, '{"ph": null, "cat": null, "name": null, "pid": null, "tid": null}')
FROM _batch WHERE dest = 'counters';

INSERT INTO metadata_events
SELECT $trace_id, event_id, name, pid, tid, ts_ns,
       coalesce(json_extract_string(args, '$.name'), json_extract_string(args, '$.sort_index'),
                json_extract_string(args, '$.labels')),
       args, _extra(rest, '{"ph": null, "name": null, "pid": null, "tid": null}')
FROM _batch WHERE dest = 'metadata_events';

INSERT INTO other_events
SELECT $trace_id, event_id, ph, cat, name, ts_ns, dur_ns, pid, tid, id, args,
       _extra(rest, '{"ph": null, "cat": null, "name": null, "pid": null, "tid": null, "id": null}')
FROM _batch WHERE dest = 'other_events';
