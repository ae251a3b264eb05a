-- Report: summary
-- Per trace: GPU kernel time and count, busy versus idle time of the GPU, and time by operation.
-- Parameters:
--   trace = NULL   trace name or #id (NULL: every trace)
--   phase = NULL   only kernels of this phase: prefill, decode, mixed or none (NULL: all)
-- Columns:
--   trace        text            trace name
--   platform     text            NVIDIA, AMD, ...
--   device       text            device name from the trace's device properties
--   kernels      count     total  GPU kernels run
--   gpu_time_ns  duration  total  sum of kernel durations
--   span_ns      duration         first kernel start to last kernel end
--   busy_ns      duration         time at least one kernel was running (overlaps counted once)
--   idle_ns      duration         span minus busy: the GPU ran no kernel
--   busy_pct     percent          busy share of the span
--   by_op        text             operations by share of GPU time, largest first
WITH k AS (
    SELECT trace_id, ts_ns, end_ns, dur_ns, op
    FROM selected_kernels($trace, $phase)
), islands AS (
    -- a kernel starting after every earlier kernel has ended opens a new busy interval
    SELECT trace_id, ts_ns, end_ns,
           ts_ns > coalesce(max(end_ns) OVER (PARTITION BY trace_id ORDER BY ts_ns, end_ns
                                              ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), ts_ns - 1)
               AS opens
    FROM k
), busy AS (
    SELECT trace_id, sum(hi - lo) AS busy_ns
    FROM (SELECT trace_id, min(ts_ns) AS lo, max(end_ns) AS hi
          FROM (SELECT *, sum(opens::INTEGER) OVER (PARTITION BY trace_id ORDER BY ts_ns, end_ns) AS island
                FROM islands)
          GROUP BY trace_id, island)
    GROUP BY trace_id
), per_op AS (
    SELECT trace_id, op, sum(dur_ns) AS op_ns FROM k GROUP BY trace_id, op
), totals AS (
    SELECT trace_id, count(*) AS kernels, sum(dur_ns) AS gpu_time_ns,
           max(end_ns) - min(ts_ns) AS span_ns
    FROM k GROUP BY trace_id
)
SELECT t.name AS trace, t.platform, t.device_name AS device, s.kernels, s.gpu_time_ns, s.span_ns,
       b.busy_ns, s.span_ns - b.busy_ns AS idle_ns, 100.0 * b.busy_ns / nullif(s.span_ns, 0) AS busy_pct,
       (SELECT string_agg(op || ' ' || printf('%.1f', 100.0 * op_ns / s.gpu_time_ns) || '%', ', '
                          ORDER BY op_ns DESC)
        FROM per_op o WHERE o.trace_id = s.trace_id) AS by_op
FROM totals s
JOIN traces t USING (trace_id)
JOIN busy b USING (trace_id)
ORDER BY t.trace_id;
