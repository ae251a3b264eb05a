-- A TensorCast performance-model trace, inside the load's transaction, with the parameter
-- $trace_id, once its events are typed (sql/ingest/chrome_split.sql); the loader runs this script
-- for the traces sql/ingest/chrome_kind.sql recognises as TensorCast's. TensorCast writes
-- {"traceEvents": [...]} of X events without a category, one per modelled operator call, whose
-- args are texts: kernel_type (comma-joined for a composite operator), source (MEASURED,
-- INTERPOLATED, ... for an operator found in the profiling data), composite and
-- sub_kernel_durations; process_name metadata names the model processes (the profiling one
-- names itself profiling or empirical). Such a trace has no profiler categories at all. Its
-- operators stay in other_events (the view tc_ops reads them); tracedb.ingest.tensorcast then
-- parses their sub_kernel_durations.

UPDATE traces SET format = 'tensorcast', platform = 'model' WHERE trace_id = $trace_id;
