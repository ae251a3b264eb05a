-- Recognising a TensorCast performance-model trace, inside the load's transaction, with the
-- parameter $trace_id, once its events are typed (sql/ingest/chrome_split.sql). TensorCast writes
-- {"traceEvents": [...]} of X events without a category, one per modelled operator call, whose
-- args are texts: kernel_type (comma-joined for a composite operator), source (MEASURED,
-- INTERPOLATED, ... for an operator found in the profiling data), composite and
-- sub_kernel_durations; process_name metadata names the model processes (the profiling one
-- names itself profiling or empirical). Such a trace has no profiler categories at all. Its
-- operators stay in other_events (the view tc_ops reads them); tracedb.ingest.tensorcast then
-- parses their sub_kernel_durations.

UPDATE traces SET format = 'tensorcast', platform = 'model'
WHERE trace_id = $trace_id AND format = 'kineto'
  AND NOT EXISTS (SELECT 1 FROM kernels WHERE trace_id = $trace_id)
  AND NOT EXISTS (SELECT 1 FROM cpu_ops WHERE trace_id = $trace_id)
  AND NOT EXISTS (SELECT 1 FROM runtime_calls WHERE trace_id = $trace_id)
  AND NOT EXISTS (SELECT 1 FROM other_events WHERE trace_id = $trace_id AND ph = 'X' AND cat IS NOT NULL)
  AND (EXISTS (SELECT 1 FROM other_events WHERE trace_id = $trace_id AND ph = 'X'
                 AND (json_exists(args, '$.kernel_type') OR json_exists(args, '$.sub_kernel_durations')
                      OR json_exists(args, '$.composite') OR json_exists(args, '$.source')))
       OR EXISTS (SELECT 1 FROM metadata_events WHERE trace_id = $trace_id AND name = 'process_name'
                    AND regexp_matches(lower(value), 'profiling|empirical|analytic|tensorcast|tensor_cast')));
