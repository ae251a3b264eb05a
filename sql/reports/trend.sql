-- Report: trend
-- Each operation's time across traces in order: of a parameter or top-level key of the traces (-p key=NAME, e.g. a date or a version given with load --meta), or of load time; with the change from the trace before.
-- Chart: op -> total_ns by trace_name  Time per operation, a bar per trace in order
-- Example: tracedb report trend --trace '*bert*'
-- Parameters:
--   traces = NULL  the traces: names, #ids or glob patterns ('nightly_*')
--   key = NULL     the parameter or top-level key that orders them, numbers as numbers (NULL: load time)
--   phase = NULL   only kernels of this phase: prefill, decode, mixed or none (NULL: all)
--   limit = NULL   operations shown, those with the most time over all the traces first (NULL: every one)
-- Columns:
--   op          text             operation family
--   step        count            the trace's place in the order
--   trace_name  text             trace name
--   key_value   text             its value of the key (its load time without a key)
--   tied        text             yes when another trace has the same value of the key: those follow in name order
--   kernels     count            kernels of the operation in the trace
--   total_ns    duration         their total time
--   change      ratio            total_ns over the trace before's (above 1: slower than before)
WITH c AS (SELECT * FROM trend_ops($traces, $key, $phase)),
top AS (SELECT op, sum(total_ns) AS all_ns FROM c GROUP BY op ORDER BY all_ns DESC, op LIMIT $limit)
SELECT c.op, c.step, c.trace AS trace_name, c.key_value, c.tied, c.kernels, c.total_ns, c.change
FROM c JOIN top USING (op)
ORDER BY top.all_ns DESC, c.op, c.step;
