-- Report: critical-path
-- The critical path of each step: the longest chain of dependent work through the step's host
-- operations, runtime calls, kernels, copies and synchronisations (tracedb.critical, the graph of
-- Holistic Trace Analysis's critical_path_analysis), its length and its split by what bounds it.
-- Time off the path runs in the shadow of the path: making it faster saves nothing until it is on
-- the path. A trace without steps is one window, the whole trace.
-- Computed: critical_steps  the path of each step (critical_steps, critical_edges)
-- Chart: step -> host_ns,compute_ns,communication_ns,memcpy_ns,launch_ns,kernel_kernel_ns stacked  Critical path by bound
-- Example: tracedb report critical-path --trace h100_bert-small
-- Parameters:
--   trace = NULL          trace name or #id (NULL: every trace)
--   step = NULL integer option  only this step (NULL: every step)
--   phase = NULL          only the steps of this phase: prefill, decode, mixed or none
--   limit = 20            steps shown per trace (the first)
-- Columns:
--   trace             text             trace name
--   step              id               the step (kernel_facts.iteration); empty for a trace without steps
--   span_ns           duration  total  the step's recorded span on the host (its annotation or frame)
--   work_ns           duration  wide   the recorded span of its work: from the first host operation's start to the last end, device work included
--   replay_ns         duration  wide   work_ns as the graph replays it unchanged (each node at the latest of its dependencies): within 1 % of work_ns where the graph holds every dependency
--   path_ns           duration  total  the critical path's length
--   host_ns           duration  total  of it, host operations and runtime calls (the host bounds the step)
--   compute_ns        duration  total  kernels that compute
--   communication_ns  duration  total  collective kernels
--   memcpy_ns         duration  total  copies and memsets
--   launch_ns         duration  total  launch delays of work launched onto an empty stream
--   kernel_kernel_ns  duration  total  gaps between work queued on one stream
--   host_pct          percent          host_ns share of the path
--   gpu_pct           percent          compute, communication and copies' share of the path
--   dropped           count     wide   edges left out of the graph because they would run backwards in time (clock skew, a missing correlation)
SELECT t.name AS trace, s.step, s.span_ns, s.work_ns, s.replay_ns, s.path_ns, s.host_ns, s.compute_ns, s.communication_ns, s.memcpy_ns,
       s.launch_ns, s.kernel_kernel_ns, 100.0 * s.host_ns / nullif(s.path_ns, 0) AS host_pct,
       100.0 * (s.compute_ns + s.communication_ns + s.memcpy_ns) / nullif(s.path_ns, 0) AS gpu_pct, s.dropped
FROM critical_steps s JOIN traces t USING (trace_id)
QUALIFY row_number() OVER (PARTITION BY s.trace_id ORDER BY s.step NULLS LAST) <= coalesce($limit, 1e18)
ORDER BY s.trace_id, s.step NULLS LAST;

-- Section: on the path
-- The operations and kernels with the most time on the critical path, over the steps shown: what
-- to make faster to shorten the step (the host operations, and the kernels with the cpu_op that
-- launched them).
-- Columns:
--   trace      text             trace name
--   bound      text             host, compute, communication, memcpy/memset, launch overhead or kernel-to-kernel overhead
--   name       kernel           the host operation, runtime call or kernel
--   cpu_op     text             the cpu_op that launched a kernel
--   steps      count            steps whose path runs through it
--   edges      count     wide   its edges on the paths
--   on_path_ns duration  total  its time on the paths
--   path_pct   percent          share of the paths' length
WITH shown AS (
    SELECT * FROM critical_steps
    QUALIFY row_number() OVER (PARTITION BY trace_id ORDER BY step NULLS LAST) <= coalesce($limit, 1e18)
), per_event AS (
    SELECT e.trace_id, e.bound, coalesce(e.name, '(' || e.type || ')') AS name, mode(f.cpu_op) AS cpu_op,
           count(DISTINCT e.step) AS steps, count(*) AS edges, sum(e.weight_ns) AS on_path_ns
    FROM critical_edges e
    JOIN shown s ON s.trace_id = e.trace_id AND s.step IS NOT DISTINCT FROM e.step
    LEFT JOIN kernel_facts f ON e.source = 'kernels' AND f.trace_id = e.trace_id AND f.kernel_id = e.event_id
    WHERE e.weight_ns > 0
    GROUP BY e.trace_id, e.bound, coalesce(e.name, '(' || e.type || ')')
)
SELECT t.name AS trace, p.bound, p.name, p.cpu_op, p.steps, p.edges, p.on_path_ns,
       100.0 * p.on_path_ns / nullif((SELECT sum(path_ns) FROM shown s WHERE s.trace_id = p.trace_id), 0) AS path_pct
FROM per_event p JOIN traces t USING (trace_id)
ORDER BY p.trace_id, p.on_path_ns DESC, p.name;
