-- Report: ops
-- Per operation and phase: kernels, total and mean time, share of the trace's GPU time, and the
-- kernels that take most of it.
-- Chart: trace+op+phase -> total_ns  GPU time per operation
-- Example: tracedb report ops --trace h100_bert-small
-- Parameters:
--   trace = NULL   trace name or #id (NULL: every trace)
--   phase = NULL   only this phase: prefill, decode, mixed or none (NULL: all)
--   limit = 30     rows per trace, largest total first
-- Columns:
--   trace        text            trace name
--   op           text            operation family
--   phase        text            prefill, decode, mixed or none
--   kernels      count     total  kernels run
--   total_ns     duration  total  sum of their durations
--   avg_ns       duration         mean duration
--   share_pct    percent   total  share of the trace's GPU kernel time (within the phase filter)
--   top_kernels  kernel           the three kernel names with the most time, with their share of the row
WITH k AS (
    SELECT trace_id, trace, op, phase, name, dur_ns
    FROM selected_kernels($trace, $phase)
), by_name AS (
    SELECT trace_id, op, phase, name, sum(dur_ns) AS name_ns FROM k GROUP BY ALL
), rows AS (
    SELECT trace_id, trace, op, phase, count(*) AS kernels, sum(dur_ns) AS total_ns,
           avg(dur_ns) AS avg_ns
    FROM k GROUP BY ALL
)
SELECT r.trace, r.op, r.phase, r.kernels, r.total_ns, r.avg_ns,
       100.0 * r.total_ns / sum(r.total_ns) OVER (PARTITION BY r.trace_id) AS share_pct,
       (SELECT string_agg(n.name || ' (' || printf('%.0f', 100.0 * n.name_ns / r.total_ns) || '%)', '; '
                          ORDER BY n.name_ns DESC)
        FROM (SELECT * FROM by_name n WHERE n.trace_id = r.trace_id AND n.op = r.op AND n.phase = r.phase
              ORDER BY n.name_ns DESC LIMIT 3) n) AS top_kernels
FROM rows r
QUALIFY row_number() OVER (PARTITION BY r.trace_id ORDER BY r.total_ns DESC, r.op, r.phase) <= $limit
ORDER BY r.trace_id, r.total_ns DESC, r.op, r.phase;
