-- Device tasks of an Ascend trace in Chrome form (torch_npu's trace_view.json, msprof's timeline),
-- inside the load's transaction, with the parameter $trace_id, once its events are typed
-- (sql/ingest/chrome_split.sql). The tasks are the X events of the process named "Ascend
-- Hardware"; they have no category, so the split left them in other_events. They move to kernels
-- (one home per event: they leave other_events), with what Ascend records of them (args Task
-- Type, Stream Id, Task Id, Model Id) in ascend_kernels; cat and id, which kernels have no column
-- for, go to extra. A trace without such a process is left as it is. The host side links to the
-- tasks through async_npu / HostToDevice flows (the view kernel_launches).

CREATE OR REPLACE TEMP TABLE _ascend_tasks AS
SELECT o.*
FROM other_events o
WHERE o.trace_id = $trace_id AND o.ph = 'X'
  AND o.pid IN (SELECT pid FROM metadata_events
                WHERE trace_id = $trace_id AND name = 'process_name' AND value = 'Ascend Hardware');

INSERT INTO kernels (trace_id, kernel_id, name, ts_ns, dur_ns, pid, tid, stream, args, extra)
SELECT trace_id, event_id, name, ts_ns, dur_ns, pid, tid, TRY_CAST(args->>'Stream Id' AS BIGINT), args,
       nullif(json_merge_patch(coalesce(extra, '{}'::JSON), json_object('cat', cat, 'id', id)), '{}'::JSON)
FROM _ascend_tasks;

INSERT INTO ascend_kernels (trace_id, kernel_id, task_type, task_id, stream_id, model_id)
SELECT trace_id, event_id, args->>'Task Type', TRY_CAST(args->>'Task Id' AS BIGINT),
       TRY_CAST(args->>'Stream Id' AS BIGINT), TRY_CAST(args->>'Model Id' AS BIGINT)
FROM _ascend_tasks;

DELETE FROM other_events
WHERE trace_id = $trace_id AND event_id IN (SELECT event_id FROM _ascend_tasks);

UPDATE traces SET format = 'torch_npu', platform = 'Ascend'
WHERE trace_id = $trace_id AND EXISTS (SELECT 1 FROM _ascend_tasks);

DROP TABLE _ascend_tasks;
