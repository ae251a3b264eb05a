-- What launched each kernel: the runtime/driver call with the kernel's correlation id, and the
-- cpu_op sharing its External id. A CUDA/HIP graph replay launches many kernels with one call,
-- so many kernels share one launch row; each kernel still gets exactly one row.

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
WHERE correlation IS NOT NULL
QUALIFY row_number() OVER (PARTITION BY trace_id, correlation
                           ORDER BY cat = 'cuda_runtime' DESC, event_id) = 1;

-- One cpu_op per External id: the innermost (latest starting) when several share it.
-- Columns:
--   trace_id     trace of the op
--   external_id  External id
--   event_id     event_id of the op in cpu_ops
--   name         operator name, e.g. aten::mm
CREATE OR REPLACE VIEW _cpu_op_by_external AS
SELECT trace_id, external_id, arg_max(event_id, ts_ns) AS event_id, arg_max(name, ts_ns) AS name
FROM cpu_ops
WHERE external_id IS NOT NULL
GROUP BY trace_id, external_id;

-- Each kernel with the call that launched it and the cpu_op that issued it.
-- Columns:
--   trace_id         trace the kernel belongs to
--   kernel_id        row of kernels
--   launch_id        event_id of the launching call in runtime_calls (NULL when none recorded)
--   launch_name      API of the launching call (cudaLaunchKernel, hipGraphLaunch, ...)
--   launch_ts_ns     start of the launching call, nanoseconds
--   pid              process of the launching thread
--   tid              launching thread
--   graph            true when the call launched a CUDA/HIP graph (a replay)
--   launch_delay_ns  kernel start minus launch start, nanoseconds
--   external_id      the kernel's External id, else that of its launching call
--   cpu_op_id        event_id of the issuing cpu_op in cpu_ops (NULL when none)
--   cpu_op           name of the issuing cpu_op, e.g. aten::mm
CREATE OR REPLACE VIEW kernel_launches AS
SELECT k.trace_id, k.kernel_id, l.launch_id, l.name AS launch_name, l.ts_ns AS launch_ts_ns,
       l.pid, l.tid, coalesce(contains(lower(l.name), 'graphlaunch'), false) AS graph,
       k.ts_ns - l.ts_ns AS launch_delay_ns,
       coalesce(k.external_id, l.external_id) AS external_id,
       c.event_id AS cpu_op_id, c.name AS cpu_op
FROM kernels k
LEFT JOIN _launch_calls l ON l.trace_id = k.trace_id AND l.correlation = k.correlation
LEFT JOIN _cpu_op_by_external c
       ON c.trace_id = k.trace_id AND c.external_id = coalesce(k.external_id, l.external_id);
