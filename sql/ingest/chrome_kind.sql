-- Which kind of Chrome trace a trace is, told from its typed events (parameter $trace_id), so that
-- the loader (tracedb.ingest.readers) runs the finish script of that kind only:
--   mlir-aie    a process named like an AIE tile trace ("core_trace for tile2,1", "mem(0,2)", ...):
--               sql/ingest/aie_finish.sql
--   torch_npu   X events in a process named "Ascend Hardware": sql/ingest/ascend_finish.sql
--   tensorcast  operators without profiler categories whose args or process names are TensorCast's
--               (the conditions of sql/ingest/tensorcast_finish.sql): tensorcast_finish.sql
--   kineto      anything else (PyTorch profiler traces): no finish of its own
-- Columns:
--   kind  one of the four above
SELECT CASE
    WHEN EXISTS (SELECT 1 FROM metadata_events
                 WHERE trace_id = $trace_id AND name = 'process_name'
                   AND regexp_matches(value, '^(memtile|core|mem|shim|intfc)(_trace for .*\d.*|\(\s*\d+\s*,\s*\d+\s*\))$'))
        THEN 'mlir-aie'
    WHEN EXISTS (SELECT 1 FROM other_events o
                 WHERE o.trace_id = $trace_id AND o.ph = 'X'
                   AND o.pid IN (SELECT pid FROM metadata_events
                                 WHERE trace_id = $trace_id AND name = 'process_name' AND value = 'Ascend Hardware'))
        THEN 'torch_npu'
    WHEN NOT EXISTS (SELECT 1 FROM kernels WHERE trace_id = $trace_id)
     AND NOT EXISTS (SELECT 1 FROM cpu_ops WHERE trace_id = $trace_id)
     AND NOT EXISTS (SELECT 1 FROM runtime_calls WHERE trace_id = $trace_id)
     AND NOT EXISTS (SELECT 1 FROM other_events WHERE trace_id = $trace_id AND ph = 'X' AND cat IS NOT NULL)
     AND (EXISTS (SELECT 1 FROM other_events WHERE trace_id = $trace_id AND ph = 'X'
                    AND (json_exists(args, '$.kernel_type') OR json_exists(args, '$.sub_kernel_durations')
                         OR json_exists(args, '$.composite') OR json_exists(args, '$.source')))
          OR EXISTS (SELECT 1 FROM metadata_events WHERE trace_id = $trace_id AND name = 'process_name'
                       AND regexp_matches(lower(value), 'profiling|empirical|analytic|tensorcast|tensor_cast')))
        THEN 'tensorcast'
    ELSE 'kineto'
END AS kind;
