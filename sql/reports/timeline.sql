-- Report: timeline
-- Where the wall-clock time goes on the GPU, for the whole trace and step by step: busy and idle
-- time, computation, communication and memcpy, and how much of the communication and memcpy no
-- computation hides (TraceLens's gpu_timeline; the view gpu_timeline).
-- Chart: trace+window -> compute_ns,exposed_comm_ns,exposed_memcpy_ns,idle_ns stacked  Wall-clock time of each window
-- Strips: each trace's slowest and typical step (or -p step=N): its streams and idle gaps
-- Example: tracedb report timeline --trace h100_bert-small
-- Parameters:
--   trace = NULL   trace name or #id (NULL: every trace)
--   phase = NULL   only the steps of this phase: prefill, decode, mixed or none (NULL: the whole trace and every step)
--   limit = NULL   step rows per trace (NULL: every step)
--   step = NULL integer  the step the HTML's timeline strips draw (NULL: the slowest and a typical one)
-- Columns:
--   trace              text             trace name
--   window             text             whole trace, or the step (its number and annotation or frame)
--   step               id        wide   step number (kernel_facts.iteration); empty for the whole trace
--   phase              text             the step's phase
--   span_ns            duration         first device activity's start to last activity's end
--   busy_ns            duration         kernels, memcpy and memset running (overlaps counted once)
--   idle_ns            duration         span minus busy: nothing ran on the GPU
--   idle_pct           percent          idle share of the span
--   compute_ns         duration         computation (compute kernels and memsets, overlaps counted once)
--   comm_ns            duration  wide   communication (collective kernels)
--   exposed_comm_ns    duration         communication that no computation overlaps
--   memcpy_ns          duration  wide   memcpy
--   exposed_memcpy_ns  duration         memcpy that neither computation nor communication overlaps
--   kernels            count            kernels run
WITH t AS (
    SELECT g.*, tr.name AS trace, tr.trace_id AS tid,
           row_number() OVER (PARTITION BY g.trace_id, g.step IS NULL ORDER BY g.step) AS nth
    FROM gpu_timeline g JOIN traces tr USING (trace_id)
    WHERE ($trace IS NULL OR is_trace(tr.name, tr.trace_id, $trace))
      AND ($phase IS NULL OR g.phase = $phase)
), names AS (
    SELECT trace_id, step, any_value(name ORDER BY ts_ns) AS name FROM step_windows GROUP BY ALL
)
SELECT trace, CASE WHEN t.step IS NULL THEN 'whole trace'
                   ELSE 'step ' || t.step || coalesce(': ' || n.name, '') END AS window,
       t.step, t.phase, span_ns, busy_ns, idle_ns, 100.0 * idle_ns / nullif(span_ns, 0) AS idle_pct,
       compute_ns, comm_ns, exposed_comm_ns, memcpy_ns, exposed_memcpy_ns, kernels
FROM t LEFT JOIN names n ON n.trace_id = t.trace_id AND n.step = t.step
WHERE t.step IS NULL OR $limit IS NULL OR nth <= $limit
ORDER BY t.tid, t.step NULLS FIRST;
