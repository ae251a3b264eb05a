-- include: aie.kernels

-- Stores the kernel runs of one trace's AIE core tiles (parameter $trace_id): the table
-- aie_kernels (sql/schema/007_aie_kernels.sql) from the view _aie_kernels_live. A trace without
-- AIE tiles stores nothing.
-- When: format = 'mlir-aie'

DELETE FROM aie_kernels WHERE trace_id = $trace_id;

INSERT INTO aie_kernels
SELECT trace_id, pid, tile_name, kernel_index, start_cycles, end_cycles, dur_cycles
FROM _aie_kernels_live
WHERE trace_id = $trace_id;
