-- Report: summary
-- Per trace: GPU kernel time and count, busy versus idle time of the device (as the timeline
-- report counts them: kernels, memcpy and memset), and time by operation.
-- Example: tracedb report summary
-- Parameters:
--   trace = NULL   trace name or #id (NULL: every trace)
--   phase = NULL   only kernels of this phase: prefill, decode, mixed or none (NULL: all); span, busy and idle then sum that phase's steps
-- Columns:
--   trace        text            trace name
--   platform     text            NVIDIA, AMD, ...
--   device       text      wide  device name from the trace's device properties
--   kernels      count     total  GPU kernels run
--   gpu_time_ns  duration  total  sum of kernel durations
--   span_ns      duration         first device activity's start to the last one's end (kernels, memcpy, memset; gpu_timeline)
--   busy_ns      duration         time at least one kernel, memcpy or memset was running (overlaps counted once)
--   idle_ns      duration         span minus busy: the device ran nothing
--   busy_pct     percent          busy share of the span
--   by_op        text             operations by share of kernel time, largest first
WITH k AS (
    SELECT trace_id, dur_ns, op FROM selected_kernels($trace, $phase)
), per_op AS (
    SELECT trace_id, op, sum(dur_ns) AS op_ns FROM k GROUP BY trace_id, op
), totals AS (
    SELECT trace_id, count(*) AS kernels, sum(dur_ns) AS gpu_time_ns FROM k GROUP BY trace_id
), wall AS (
    -- the whole trace's window, or the steps of the phase asked for
    SELECT trace_id, sum(span_ns) AS span_ns, sum(busy_ns) AS busy_ns, sum(idle_ns) AS idle_ns
    FROM gpu_timeline
    WHERE trace_id IN (SELECT trace_id FROM totals)
      AND CASE WHEN $phase IS NULL THEN step IS NULL ELSE step IS NOT NULL AND phase = $phase END
    GROUP BY trace_id
)
SELECT t.name AS trace, t.platform, t.device_name AS device, s.kernels, s.gpu_time_ns, w.span_ns,
       w.busy_ns, w.idle_ns, 100.0 * w.busy_ns / nullif(w.span_ns, 0) AS busy_pct,
       (SELECT string_agg(op || ' ' || printf('%.1f', 100.0 * op_ns / s.gpu_time_ns) || '%', ', '
                          ORDER BY op_ns DESC)
        FROM per_op o WHERE o.trace_id = s.trace_id) AS by_op
FROM totals s
JOIN traces t USING (trace_id)
LEFT JOIN wall w USING (trace_id)
ORDER BY t.trace_id;
