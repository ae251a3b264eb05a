-- Report: phases
-- Per phase: iterations, kernels, GPU time and its share, and GPU time per iteration.
-- Example: tracedb report phases --trace h100_bert-small
-- Parameters:
--   trace = NULL   trace name or #id (NULL: every trace)
-- Columns:
--   trace            text            trace name
--   phase            text            prefill, decode, mixed or none
--   decided_by       text            how: annotation, frame, tokens, graph replay (several: comma-separated)
--   iterations       count     total  distinct iterations (model steps) with kernels of the phase
--   kernels          count     total  kernels run
--   total_ns         duration  total  sum of their durations
--   share_pct        percent   total  share of the trace's GPU kernel time
--   per_iteration_ns duration         GPU time per iteration
--   first_annotation text             annotation (or step frame) of the phase's first iteration
WITH k AS (
    SELECT trace_id, trace, phase, phase_source, iteration, annotation, ts_ns, dur_ns
    FROM selected_kernels($trace, NULL)
)
SELECT trace, phase, string_agg(DISTINCT phase_source, ', ' ORDER BY phase_source) AS decided_by,
       count(DISTINCT iteration) AS iterations, count(*) AS kernels,
       sum(dur_ns) AS total_ns,
       100.0 * sum(dur_ns) / sum(sum(dur_ns)) OVER (PARTITION BY trace_id) AS share_pct,
       sum(dur_ns) / nullif(count(DISTINCT iteration), 0) AS per_iteration_ns,
       arg_min(annotation, (ts_ns, annotation)) AS first_annotation
FROM k
GROUP BY trace_id, trace, phase
ORDER BY trace_id, CASE phase WHEN 'prefill' THEN 1 WHEN 'decode' THEN 2 WHEN 'mixed' THEN 3 ELSE 4 END;
