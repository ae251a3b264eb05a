-- Report: layers
-- Per layer: GPU time summed over the forward passes, per pass, its share, and the operations
-- taking it. Kernels outside every layer (embedding, final norm, LM head, sampling) form the row
-- with an empty layer.
-- Example: tracedb report layers --trace h100_bert-small
-- Parameters:
--   trace = NULL   trace name or #id (NULL: every trace)
--   phase = NULL   only passes of this phase: prefill, decode, mixed or none (NULL: all)
--   limit = 200    rows per trace, in layer order
-- Columns:
--   trace        text            trace name
--   layer        id              0-based layer (empty: outside layers)
--   passes       count           forward passes in which the layer ran
--   kernels      count     total  kernels run in the layer
--   total_ns     duration  total  sum of their durations
--   per_pass_ns  duration         GPU time per pass
--   share_pct    percent   total  share of the trace's GPU kernel time
--   top_ops      text            operations by share of the layer's time, largest first
WITH k AS (
    SELECT trace_id, trace, layer, forward_pass, op, dur_ns
    FROM selected_kernels($trace, $phase)
), per_op AS (
    SELECT trace_id, layer, op, sum(dur_ns) AS op_ns FROM k GROUP BY ALL
), rows AS (
    SELECT trace_id, trace, layer, count(DISTINCT forward_pass) AS passes, count(*) AS kernels,
           sum(dur_ns) AS total_ns
    FROM k GROUP BY ALL
)
SELECT r.trace, r.layer, r.passes, r.kernels, r.total_ns, r.total_ns / nullif(r.passes, 0) AS per_pass_ns,
       100.0 * r.total_ns / sum(r.total_ns) OVER (PARTITION BY r.trace_id) AS share_pct,
       (SELECT string_agg(o.op || ' ' || printf('%.0f', 100.0 * o.op_ns / r.total_ns) || '%', ', '
                          ORDER BY o.op_ns DESC)
        FROM per_op o WHERE o.trace_id = r.trace_id AND o.layer IS NOT DISTINCT FROM r.layer) AS top_ops
FROM rows r
QUALIFY row_number() OVER (PARTITION BY r.trace_id ORDER BY r.layer NULLS LAST) <= $limit
ORDER BY r.trace_id, r.layer NULLS LAST;
