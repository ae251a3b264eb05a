-- include: core.events

-- What launched each kernel: the runtime/driver call with the kernel's correlation id, and the
-- cpu_op sharing its External id. A CUDA/HIP graph replay launches many kernels with one call,
-- so many kernels share one launch row; each kernel still gets exactly one row. Ascend device
-- tasks (torch_npu trace_view.json) carry no correlation: a flow links each to the host instead
-- (async_npu from the issuing cpu_op, HostToDevice from the CANN launch call).

-- One launching call per correlation id (a runtime call is preferred over a driver call, then the
-- earliest), so that joins on correlation never multiply kernels.
-- Columns:
--   trace_id     trace of the call
--   correlation  correlation id
--   launch_id    event_id of the call in runtime_calls
--   name         API name, e.g. cudaLaunchKernel, hipGraphLaunch, cuLaunchKernel
--   ts_ns        start of the call, nanoseconds
--   pid          process of the calling thread
--   tid          calling thread
--   external_id  External id of the call (links it to its cpu_op)
CREATE OR REPLACE VIEW _launch_calls AS
SELECT trace_id, correlation, event_id AS launch_id, name, ts_ns, pid, tid, external_id
FROM runtime_calls
WHERE correlation IS NOT NULL AND _in_scope(trace_id)
QUALIFY row_number() OVER (PARTITION BY trace_id, correlation
                           ORDER BY cat = 'cuda_runtime' DESC, event_id) = 1;

-- One cpu_op per External id: the innermost (latest starting) when several share it.
-- Columns:
--   trace_id     trace of the op
--   external_id  External id
--   event_id     event_id of the op in cpu_ops
--   name         operator name, e.g. aten::mm
CREATE OR REPLACE VIEW _cpu_op_by_external AS
SELECT trace_id, external_id, arg_max(event_id, (ts_ns, event_id)) AS event_id,
       arg_max(name, (ts_ns, event_id)) AS name
FROM cpu_ops
WHERE external_id IS NOT NULL AND _in_scope(trace_id)
GROUP BY trace_id, external_id;

-- Ascend device tasks with the flow that links them to the host: the flow's finish binds to the
-- task enclosing it on the same process and thread, its start to the host thread. An async_npu
-- flow (from the issuing cpu_op) is preferred over a HostToDevice one (from the CANN launch).
-- Columns:
--   trace_id   trace of the task
--   kernel_id  row of kernels
--   launch_id  event_id of the flow's start in flows
--   name       the flow's name (torch_to_npu, HostToDevice, ...)
--   ts_ns      start of the flow, nanoseconds (the host op's start)
--   pid        process of the host thread
--   tid        host thread
CREATE OR REPLACE VIEW _flow_launches AS
WITH finishes AS (
    SELECT trace_id, cat, flow_id, pid, tid, ts_ns FROM flows
    WHERE ph = 'f' AND cat IN ('async_npu', 'HostToDevice') AND _in_scope(trace_id)
), starts AS (
    SELECT trace_id, cat, flow_id, event_id, name, ts_ns, pid, tid FROM flows
    WHERE ph = 's' AND cat IN ('async_npu', 'HostToDevice') AND _in_scope(trace_id)
), tasks AS (
    SELECT f.trace_id, f.cat, f.flow_id, k.kernel_id
    FROM finishes f
    ASOF JOIN (SELECT * FROM kernels WHERE _in_scope(trace_id)) k ON k.trace_id = f.trace_id AND k.pid = f.pid AND k.tid = f.tid AND k.ts_ns <= f.ts_ns
    WHERE f.ts_ns <= k.ts_ns + coalesce(k.dur_ns, 0)
)
SELECT t.trace_id, t.kernel_id, s.event_id AS launch_id, s.name, s.ts_ns, s.pid, s.tid
FROM tasks t JOIN starts s ON s.trace_id = t.trace_id AND s.cat = t.cat AND s.flow_id = t.flow_id
QUALIFY row_number() OVER (PARTITION BY t.trace_id, t.kernel_id ORDER BY t.cat = 'async_npu' DESC, s.event_id) = 1;

-- The cpu_op a flow starts from: the latest starting op on the flow's thread at or before the
-- flow, if it is still running then.
-- Columns:
--   trace_id   trace of the flow
--   launch_id  event_id of the flow's start in flows
--   event_id   event_id of the op in cpu_ops
--   name       operator name
CREATE OR REPLACE VIEW _cpu_op_by_flow AS
SELECT l.trace_id, l.launch_id, c.event_id, c.name
FROM (SELECT DISTINCT trace_id, launch_id, ts_ns, pid, tid FROM _flow_launches) l
ASOF JOIN (SELECT * FROM cpu_ops WHERE _in_scope(trace_id)) c ON c.trace_id = l.trace_id AND c.pid = l.pid AND c.tid = l.tid AND c.ts_ns <= l.ts_ns
WHERE l.ts_ns <= c.ts_ns + coalesce(c.dur_ns, 0);

-- Each kernel with the call that launched it and the cpu_op that issued it.
-- Columns:
--   trace_id         trace the kernel belongs to
--   kernel_id        row of kernels
--   launch_id        event_id of the launching call in runtime_calls, or for an Ascend task of the start of its flow in flows (NULL when none recorded)
--   launch_name      API of the launching call (cudaLaunchKernel, hipGraphLaunch, ...), or the flow's name
--   launch_ts_ns     start of the launching call (of the flow), nanoseconds
--   pid              process of the launching thread
--   tid              launching thread
--   graph            true when the call launched a CUDA/HIP graph (a replay)
--   launch_delay_ns  kernel start minus launch start, nanoseconds
--   external_id      the kernel's External id, else that of its launching call
--   cpu_op_id        event_id of the issuing cpu_op in cpu_ops (NULL when none)
--   cpu_op           name of the issuing cpu_op, e.g. aten::mm
CREATE OR REPLACE VIEW kernel_launches AS
SELECT k.trace_id, k.kernel_id, coalesce(l.launch_id, fl.launch_id) AS launch_id,
       coalesce(l.name, fl.name) AS launch_name, coalesce(l.ts_ns, fl.ts_ns) AS launch_ts_ns,
       coalesce(l.pid, fl.pid) AS pid, coalesce(l.tid, fl.tid) AS tid,
       coalesce(contains(lower(l.name), 'graphlaunch'), false) AS graph,
       k.ts_ns - coalesce(l.ts_ns, fl.ts_ns) AS launch_delay_ns,
       coalesce(k.external_id, l.external_id) AS external_id,
       coalesce(c.event_id, fc.event_id) AS cpu_op_id, coalesce(c.name, fc.name) AS cpu_op
FROM kernels k
LEFT JOIN _launch_calls l ON l.trace_id = k.trace_id AND l.correlation = k.correlation
LEFT JOIN _cpu_op_by_external c
       ON c.trace_id = k.trace_id AND c.external_id = coalesce(k.external_id, l.external_id)
LEFT JOIN _flow_launches fl ON k.correlation IS NULL AND fl.trace_id = k.trace_id AND fl.kernel_id = k.kernel_id
LEFT JOIN _cpu_op_by_flow fc ON fc.trace_id = fl.trace_id AND fc.launch_id = fl.launch_id
WHERE _in_scope(k.trace_id);
