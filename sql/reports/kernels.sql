-- Report: kernels
-- Top kernels by total time: each distinct kernel name per phase with its operation, matching
-- rule and most common cpu_op.
-- Example: tracedb report kernels --trace h100_bert-small --limit 10
-- Parameters:
--   trace = NULL   trace name or #id (NULL: every trace)
--   phase = NULL   only this phase: prefill, decode, mixed or none (NULL: all)
--   limit = 25     rows per trace, largest total first
-- Columns:
--   trace      text            trace name
--   kernel     kernel          kernel name
--   op         text            operation family
--   pattern    text      wide  the classification rule that matched
--   phase      text            prefill, decode, mixed or none
--   cpu_op     text      wide  the cpu_op issuing it most often (NULL on graph replays)
--   kernels    count     total  times it ran
--   total_ns   duration  total  sum of its durations
--   avg_ns     duration         mean duration
--   share_pct  percent   total  share of the trace's GPU kernel time (within the phase filter)
WITH k AS (
    SELECT trace_id, trace, name, op, pattern, phase, cpu_op, dur_ns
    FROM selected_kernels($trace, $phase)
), rows AS (
    SELECT trace_id, trace, name AS kernel, op, pattern, phase, mode(cpu_op ORDER BY cpu_op) AS cpu_op,
           count(*) AS kernels, sum(dur_ns) AS total_ns, avg(dur_ns) AS avg_ns
    FROM k GROUP BY trace_id, trace, name, op, pattern, phase
)
SELECT trace, kernel, op, pattern, phase, cpu_op, kernels, total_ns, avg_ns,
       100.0 * total_ns / sum(total_ns) OVER (PARTITION BY trace_id) AS share_pct
FROM rows
QUALIFY row_number() OVER (PARTITION BY trace_id ORDER BY total_ns DESC, kernel, phase) <= $limit
ORDER BY trace_id, total_ns DESC, kernel, phase;
