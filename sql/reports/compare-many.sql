-- Report: compare-many
-- Several traces operation by operation: kernels and time of each operation on each trace, with the ratio to the first trace (tracedb report compare --trace A --vs B --vs C, or --trace 'h100_*').
-- Chart: op -> total_ns by trace_name  Time per operation, a bar per trace
-- Alias: compare when many
-- Example: tracedb report compare-many --trace '*bert*' --vs tc
-- Parameters:
--   traces = NULL  the traces: names, #ids or glob patterns ('h100_*'); the first is the one the others are compared with
--   phase = NULL   only kernels of this phase: prefill, decode, mixed or none (NULL: all)
--   limit = NULL   operations shown, those with the most time over all the traces first (NULL: every one)
-- Columns:
--   op          text             operation family
--   trace_name  text             trace, in the order selected (the first is the reference)
--   kernels     count            kernels of the operation in the trace (0: it does not run it)
--   total_ns    duration         their total time
--   avg_ns      duration         their mean time
--   share_pct   percent          the operation's share of the trace's kernel time
--   ratio       ratio            total_ns over the first trace's total_ns for the operation (empty when either lacks it)
WITH c AS (SELECT * FROM compare_traces($traces, $phase)),
top AS (SELECT op, sum(total_ns) AS all_ns FROM c GROUP BY op ORDER BY all_ns DESC, op LIMIT $limit)
SELECT c.op, c.trace AS trace_name, c.kernels, c.total_ns, c.avg_ns, 100 * c.share AS share_pct, c.ratio
FROM c JOIN top USING (op)
ORDER BY top.all_ns DESC, c.op, c.position;

-- Section: traces
-- The traces compared, in order, with their kernel time.
-- Columns:
--   position    count            place in the comparison (1: the reference)
--   trace_name  text             trace name
--   platform    text             NVIDIA, AMD, ...
--   device      text             device name
--   kernels     count            kernels
--   total_ns    duration         kernel time
--   ratio       ratio            total_ns over the first trace's
WITH per AS (
    SELECT position, sum(kernels) AS kernels, sum(total_ns) AS total_ns
    FROM compare_traces($traces, $phase) GROUP BY position
)
SELECT c.position, c.trace AS trace_name, t.platform, t.device_name AS device, coalesce(p.kernels, 0) AS kernels,
       coalesce(p.total_ns, 0) AS total_ns,
       p.total_ns / nullif(first(p.total_ns) OVER (ORDER BY c.position), 0) AS ratio
FROM chosen_traces($traces) c JOIN traces t USING (trace_id) LEFT JOIN per p USING (position)
ORDER BY c.position;
