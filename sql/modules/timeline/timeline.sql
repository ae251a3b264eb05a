-- include: classify.launches
-- include: steps.phases

-- The GPU timeline: where the wall-clock time of each trace and of each of its steps goes on the
-- device. Quantities as TraceLens's GPUEventAnalyser defines them: the device activity is every
-- kernel, memcpy and memset; a window's total time (span) runs from its first activity's start
-- to its last activity's end; busy is the union of the activity (streams that overlap counted
-- once) and idle the rest of the span; computation is the union of compute kernels and memsets,
-- communication the union of collective kernels, memcpy the union of copies; the exposed part of
-- communication is what computation does not overlap, that of memcpy what neither computation nor
-- communication overlaps. So span = compute + exposed comm + exposed memcpy + idle, exactly.
-- A kernel is communication when its operation is a collective (kernel_ops: Communication,
-- All-Reduce, All-Gather, Reduce-Scatter, Broadcast, All-to-All, Send/Recv), where TraceLens looks
-- for 'nccl' in the kernel's name: the same kernels on NVIDIA and ROCm traces, and vLLM's custom
-- all-reduce and other collectives besides.

-- True for the operations that are collective communication.
CREATE OR REPLACE MACRO is_comm_op(op) AS
    op IN ('Communication', 'All-Reduce', 'All-Gather', 'Reduce-Scatter', 'Broadcast', 'All-to-All', 'Send/Recv');

-- Host-side interval of every model step, numbered as kernel_facts.iteration numbers them: the
-- phase steps of a trace that has them, else its ProfilerStep#N ranges, else its frame steps.
-- Columns:
--   trace_id  trace of the step
--   step      the step's number (kernel_facts.iteration)
--   name      annotation text or frame name
--   pid       process of the annotation or frame
--   tid       thread of the annotation or frame
--   ts_ns     start, nanoseconds
--   end_ns    end, nanoseconds
CREATE OR REPLACE VIEW step_windows AS
WITH steps AS (
    SELECT trace_id, ordinal AS step, name, pid, tid, ts_ns, end_ns, 1 AS source
    FROM trace_steps WHERE NOT on_gpu AND role = 'phase'
    UNION ALL
    SELECT trace_id, coalesce(number, ordinal), name, pid, tid, ts_ns, end_ns, 2
    FROM trace_steps WHERE NOT on_gpu AND role = 'step'
    UNION ALL
    SELECT trace_id, ordinal, name, pid, tid, ts_ns, end_ns, 3 FROM _frame_steps
)
SELECT trace_id, step, name, pid, tid, ts_ns, end_ns
FROM steps
QUALIFY source = min(source) OVER (PARTITION BY trace_id);

-- Every interval of device activity: kernels (with their derived facts) and memory operations
-- (which take the step whose host interval holds their launch).
-- Columns:
--   trace_id       trace of the activity
--   kind           kernel, memcpy or memset
--   event_id       kernel_id of kernels, event_id of memory_ops
--   name           kernel or copy name
--   ts_ns          start on the device, nanoseconds
--   end_ns         end on the device, nanoseconds
--   dur_ns         duration, nanoseconds
--   device         device
--   stream         stream
--   op             the kernel's operation (Memcpy / Memset for memory operations)
--   pattern        label of the kernel rule that decided the operation; NULL for memory operations
--   class          compute, comm or memcpy (memsets are compute, as TraceLens counts them)
--   step           model step (kernel_facts.iteration), NULL outside every step
--   phase          the kernel's phase; NULL for memory operations
--   cpu_op         cpu_op that launched a kernel
--   launch_pid     process of the launching runtime call, NULL when none is known
--   launch_tid     thread of the launching runtime call
--   launch_ts_ns   start of the launching runtime call
--   launch_end_ns  end of the launching runtime call
CREATE OR REPLACE VIEW device_activity AS
WITH mem AS (
    SELECT m.trace_id, m.event_id, m.cat, m.name, m.ts_ns, m.dur_ns, m.device, m.stream,
           r.pid AS launch_pid, r.tid AS launch_tid, r.ts_ns AS launch_ts_ns,
           r.ts_ns + coalesce(r.dur_ns, 0) AS launch_end_ns
    FROM memory_ops m
    LEFT JOIN _launch_calls l ON l.trace_id = m.trace_id AND l.correlation = m.correlation
    LEFT JOIN runtime_calls r ON r.trace_id = l.trace_id AND r.event_id = l.launch_id
    WHERE m.dur_ns IS NOT NULL AND m.ts_ns IS NOT NULL
)
SELECT k.trace_id, 'kernel' AS kind, k.kernel_id AS event_id, k.name, k.ts_ns, k.ts_ns + k.dur_ns AS end_ns,
       k.dur_ns, k.device, k.stream, f.op, f.pattern, CASE WHEN is_comm_op(f.op) THEN 'comm' ELSE 'compute' END AS class,
       f.iteration AS step, f.phase, f.cpu_op, r.pid AS launch_pid, r.tid AS launch_tid,
       r.ts_ns AS launch_ts_ns, r.ts_ns + coalesce(r.dur_ns, 0) AS launch_end_ns
FROM kernels k
JOIN kernel_facts f USING (trace_id, kernel_id)
LEFT JOIN runtime_calls r ON r.trace_id = k.trace_id AND r.event_id = f.launch_id
WHERE k.dur_ns IS NOT NULL AND k.ts_ns IS NOT NULL
UNION ALL
SELECT m.trace_id, CASE WHEN m.cat = 'gpu_memset' THEN 'memset' ELSE 'memcpy' END, m.event_id, m.name, m.ts_ns,
       m.ts_ns + m.dur_ns, m.dur_ns, m.device, m.stream,
       CASE WHEN m.cat = 'gpu_memset' THEN 'Memset' ELSE 'Memcpy' END, NULL,
       CASE WHEN m.cat = 'gpu_memset' THEN 'compute' ELSE 'memcpy' END,
       CASE WHEN m.launch_ts_ns <= w.end_ns THEN w.step END, NULL, NULL, m.launch_pid, m.launch_tid,
       m.launch_ts_ns, m.launch_end_ns
FROM mem m
ASOF LEFT JOIN step_windows w ON w.trace_id = m.trace_id AND w.ts_ns <= m.launch_ts_ns;

-- Wall-clock breakdown of the device's time, for each trace as a whole and for each of its steps
-- (TraceLens's gpu_timeline, per step). Per step, the window is the step's own activity: its
-- kernels, and the copies launched inside it; the time between steps counts in the trace's row.
-- Columns:
--   trace_id           trace
--   step               model step (kernel_facts.iteration); NULL on the row of the whole trace
--   phase              the step's phase (prefill, decode, mixed, none); NULL on the trace's row
--   first_ns           start of the window's first activity, nanoseconds
--   span_ns            first activity's start to last activity's end
--   busy_ns            union of kernels, memcpy and memset: overlapping streams counted once
--   idle_ns            span_ns - busy_ns: nothing ran on the device
--   compute_ns         union of compute kernels and memsets
--   comm_ns            union of collective kernels
--   exposed_comm_ns    communication not overlapped by computation
--   memcpy_ns          union of memcpy
--   exposed_memcpy_ns  memcpy overlapped by neither computation nor communication
--   kernel_ns          sum of kernel durations (overlaps counted as often as they run)
--   kernels            kernels in the window
--   memcpys            memcpy and memset operations in the window
CREATE OR REPLACE VIEW gpu_timeline AS
WITH a AS MATERIALIZED (
    SELECT trace_id, step, phase, kind, class, ts_ns, end_ns, dur_ns FROM device_activity
), scoped AS (
    SELECT trace_id, false AS per_step, NULL::BIGINT AS step, phase, kind, class, ts_ns, end_ns, dur_ns FROM a
    UNION ALL
    SELECT trace_id, true, step, phase, kind, class, ts_ns, end_ns, dur_ns FROM a WHERE step IS NOT NULL
), sets AS (
    -- each interval in every union it belongs to: all, compute, comm, compute+comm, memcpy
    SELECT *, unnest(CASE class WHEN 'compute' THEN ['all', 'compute', 'cc']
                                WHEN 'comm' THEN ['all', 'comm', 'cc'] ELSE ['all', 'memcpy'] END) AS part
    FROM scoped
), covered AS (
    -- what each interval adds to the union of those starting before it (sorted by start, the
    -- earlier intervals cover everything from this start up to their latest end)
    SELECT *, greatest(0, end_ns - greatest(ts_ns, coalesce(
                max(end_ns) OVER (PARTITION BY trace_id, per_step, step, part ORDER BY ts_ns, end_ns
                                  ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), ts_ns))) AS new_ns
    FROM sets
), windows AS (
    SELECT trace_id, per_step, step,
           mode(phase) FILTER (kind = 'kernel' AND part = 'all') AS phase,
           min(ts_ns) AS first_ns, max(end_ns) - min(ts_ns) AS span_ns,
           sum(new_ns) FILTER (part = 'all') AS busy_ns,
           coalesce(sum(new_ns) FILTER (part = 'compute'), 0) AS compute_ns,
           coalesce(sum(new_ns) FILTER (part = 'comm'), 0) AS comm_ns,
           coalesce(sum(new_ns) FILTER (part = 'cc'), 0) AS cc_ns,
           coalesce(sum(new_ns) FILTER (part = 'memcpy'), 0) AS memcpy_ns,
           coalesce(sum(dur_ns) FILTER (part = 'all' AND kind = 'kernel'), 0) AS kernel_ns,
           count(*) FILTER (part = 'all' AND kind = 'kernel') AS kernels,
           count(*) FILTER (part = 'all' AND kind <> 'kernel') AS memcpys
    FROM covered
    GROUP BY trace_id, per_step, step
)
SELECT trace_id, step, CASE WHEN per_step THEN phase END AS phase, first_ns, span_ns, busy_ns::BIGINT AS busy_ns,
       (span_ns - busy_ns)::BIGINT AS idle_ns, compute_ns::BIGINT AS compute_ns, comm_ns::BIGINT AS comm_ns,
       (cc_ns - compute_ns)::BIGINT AS exposed_comm_ns, memcpy_ns::BIGINT AS memcpy_ns,
       (busy_ns - cc_ns)::BIGINT AS exposed_memcpy_ns, kernel_ns::BIGINT AS kernel_ns, kernels, memcpys
FROM windows;
