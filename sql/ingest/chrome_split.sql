-- Typing of Chrome-trace events: the staged events of one trace are split into the event tables.
-- The loader runs these statements once per trace, inside the load's transaction, with the
-- parameter $trace_id, after either reader has filled the staging tables of
-- sql/ingest/chrome_stage.sql (their columns are documented there).
--
-- A key a table has no column for goes to its extra. The args each analysis needs become typed
-- columns; args keeps all of them.

-- The events parsed in Python, with their fields parsed once and their destination table.
INSERT INTO _typed
SELECT event_id, ts_ns, dur_ns, f.ph, f.cat, f.name, f.pid, f.tid, f.id, f.bp, f.s, args::JSON, rest::JSON,
       _dest(f.ph, f.cat)
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
       -- a device event of another category than kernel (mtia_ccp_events) keeps it in extra
       CASE WHEN cat = 'kernel' THEN _extra(rest,
           '{"ts": null, "dur": null, "args": null, "ph": null, "cat": null, "name": null, "pid": null, "tid": null}')
       ELSE json_merge_patch(coalesce(_extra(rest,
           '{"ts": null, "dur": null, "args": null, "ph": null, "cat": null, "name": null, "pid": null, "tid": null}'),
           '{}'), json_object('cat', cat)) END
FROM (
    SELECT *, json_transform(args, '{"correlation": "BIGINT", "External id": "BIGINT", "stream": "BIGINT",
        "device": "BIGINT", "context": "BIGINT", "queued": "BIGINT", "grid": "INTEGER[]", "block": "INTEGER[]",
        "registers per thread": "INTEGER", "shared memory": "BIGINT", "blocks per SM": "DOUBLE",
        "warps per SM": "DOUBLE", "est. achieved occupancy %": "DOUBLE", "kind": "VARCHAR"}') AS a
    FROM _typed_all WHERE dest = 'kernels'
);

INSERT INTO memory_ops
SELECT $trace_id, event_id, cat, name, ts_ns, dur_ns, pid, tid,
       a.correlation, a."External id", a.stream, a.device, a.context, a.kind, a.bytes,
       a."memory bandwidth (GB/s)", args,
       _extra(rest,
           '{"ts": null, "dur": null, "args": null, "ph": null, "cat": null, "name": null, "pid": null, "tid": null}')
FROM (
    SELECT *, json_transform(args, '{"correlation": "BIGINT", "External id": "BIGINT", "stream": "BIGINT",
        "device": "BIGINT", "context": "BIGINT", "kind": "VARCHAR", "bytes": "BIGINT",
        "memory bandwidth (GB/s)": "DOUBLE"}') AS a
    FROM _typed_all WHERE dest = 'memory_ops'
);

INSERT INTO runtime_calls
SELECT $trace_id, event_id, cat, name, ts_ns, dur_ns, pid, tid,
       a.correlation, a."External id", coalesce(a.cbid, a.cid), args,
       _extra(rest,
           '{"ts": null, "dur": null, "args": null, "ph": null, "cat": null, "name": null, "pid": null, "tid": null}')
FROM (
    SELECT *, json_transform(args, '{"correlation": "BIGINT", "External id": "BIGINT", "cbid": "BIGINT",
        "cid": "BIGINT"}') AS a
    FROM _typed_all WHERE dest = 'runtime_calls'
);

INSERT INTO cpu_ops
SELECT $trace_id, event_id, name, ts_ns, dur_ns, pid, tid,
       a."External id", a."Sequence number", a."Fwd thread id", a."Record function id", a."Ev Idx",
       _args_json(a."Input Dims", args, '"Input Dims"'), _args_json(a."Input type", args, '"Input type"'),
       _args_json(a."Input Strides", args, '"Input Strides"'),
       _args_json(a."Concrete Inputs", args, '"Concrete Inputs"'),
       args,
       _extra(rest,
           '{"ts": null, "dur": null, "args": null, "ph": null, "cat": null, "name": null, "pid": null, "tid": null}')
FROM (
    SELECT *, json_transform(args, '{"External id": "BIGINT", "Sequence number": "BIGINT",
        "Fwd thread id": "BIGINT", "Record function id": "BIGINT", "Ev Idx": "BIGINT",
        "Input Dims": "JSON", "Input type": "JSON", "Input Strides": "JSON", "Concrete Inputs": "JSON"}') AS a
    FROM _typed_all WHERE dest = 'cpu_ops'
);

INSERT INTO python_functions
SELECT $trace_id, event_id, name, ts_ns, dur_ns, pid, tid,
       a."Python id", a."Python parent id", a."Python thread", args,
       _extra(rest,
           '{"ts": null, "dur": null, "args": null, "ph": null, "cat": null, "name": null, "pid": null, "tid": null}')
FROM (
    SELECT *, json_transform(args, '{"Python id": "BIGINT", "Python parent id": "BIGINT",
        "Python thread": "BIGINT"}') AS a
    FROM _typed_all WHERE dest = 'python_functions'
);

INSERT INTO annotations
SELECT $trace_id, event_id, cat, cat = 'gpu_user_annotation', name, ts_ns, dur_ns, pid, tid,
       a."External id", a.correlation, a.device, a.stream, args,
       _extra(rest,
           '{"ts": null, "dur": null, "args": null, "ph": null, "cat": null, "name": null, "pid": null, "tid": null}')
FROM (
    SELECT *, json_transform(args, '{"External id": "BIGINT", "correlation": "BIGINT", "device": "BIGINT",
        "stream": "BIGINT"}') AS a
    FROM _typed_all WHERE dest = 'annotations'
);

INSERT INTO flows
SELECT $trace_id, event_id, ph, cat, name, id, ts_ns, pid, tid, bp, args,
       _extra(rest,
           '{"ts": null, "dur": null, "args": null, "ph": null, "cat": null, "name": null, "pid": null, "tid": null, "id": null, "bp": null}')
FROM _typed_all WHERE dest = 'flows';

INSERT INTO instants
SELECT $trace_id, event_id, ph, cat, name, s, ts_ns, pid, tid, args,
       _extra(rest,
           '{"ts": null, "dur": null, "args": null, "ph": null, "cat": null, "name": null, "pid": null, "tid": null, "s": null}')
FROM _typed_all WHERE dest = 'instants';

INSERT INTO counters
SELECT $trace_id, event_id, cat, name, ts_ns, pid, tid, args,
       _extra(rest,
           '{"ts": null, "dur": null, "args": null, "ph": null, "cat": null, "name": null, "pid": null, "tid": null}')
FROM _typed_all WHERE dest = 'counters';

INSERT INTO metadata_events
SELECT $trace_id, event_id, name, pid, tid, ts_ns,
       coalesce(json_extract_string(args, '$.name'), json_extract_string(args, '$.sort_index'),
                json_extract_string(args, '$.labels')),
       args, _extra(rest,
           '{"ts": null, "dur": null, "args": null, "ph": null, "name": null, "pid": null, "tid": null}')
FROM _typed_all WHERE dest = 'metadata_events';

INSERT INTO other_events
SELECT $trace_id, event_id, ph, cat, name, ts_ns, dur_ns, pid, tid, id, args,
       _extra(rest,
           '{"ts": null, "dur": null, "args": null, "ph": null, "cat": null, "name": null, "pid": null, "tid": null, "id": null}')
FROM _typed_all WHERE dest = 'other_events';

INSERT INTO rejected_events SELECT $trace_id, event_id, reason, raw FROM _staging_rejected;

INSERT INTO long_texts SELECT $trace_id, event_id, field, piece, text FROM _staging_long;
