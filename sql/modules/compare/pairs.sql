-- include: classify.align
-- include: classify.kernel_ops
-- include: core.selection

-- Two traces side by side: the starting point of every comparison (compare, alignment, fusion,
-- same kernels). The two traces are any pair (two GPUs, two vendors, two software versions);
-- they are called A and B after the order they are given in, and labelled by their names and
-- platforms, never by a vendor assumed from the position.

-- The label of a trace in comparison titles: name, platform and device (scalar macro).
-- Parameters: want: trace name or #id. Returns e.g. 'h100_bert-small (NVIDIA, NVIDIA H100 80GB HBM3)',
-- NULL when no trace has that name or #id.
CREATE OR REPLACE MACRO trace_label(want) AS (
    SELECT name || ' (' || concat_ws(', ', coalesce(platform, 'unknown platform'), device_name) || ')'
    FROM traces WHERE is_trace(name, trace_id, want)
    ORDER BY trace_id LIMIT 1
);

-- The name of a trace given by name or #id (scalar macro); NULL when there is none.
CREATE OR REPLACE MACRO trace_name(want) AS (
    SELECT name FROM traces WHERE is_trace(name, trace_id, want)
    ORDER BY trace_id LIMIT 1
);

-- Kernels of two traces, each tagged with its side, filtered by phase (table macro).
-- Parameters: trace_a, trace_b: trace names or ids (the same trace on both sides is allowed);
-- want_phase: prefill, decode, mixed or none, NULL for every phase.
-- Columns: side ('A' or 'B'), trace_id, trace (name), kernel_id, name (kernel name), ts_ns, end_ns,
-- dur_ns, op, pattern, align_op (op, or for a 'Fused (Unknown)' kernel the fused parts it was
-- guessed to hold, e.g. 'RMSNorm+GEMM'), phase, iteration, cpu_op, stack_id, forward_pass, layer,
-- position, occurrence (of the operation within the layer), prev_op (operation of the kernel
-- before it in the whole trace), call_id (the operation call it belongs to), helper (gemm_helper:
-- what a GEMM library's helper kernel does, NULL for any other kernel).
CREATE OR REPLACE MACRO pair_kernels(trace_a, trace_b, want_phase) AS TABLE
SELECT side, trace_id, trace, kernel_id, name, ts_ns, end_ns, dur_ns, op, pattern,
       align_op(op, pattern) AS align_op,
       phase, iteration, cpu_op, stack_id, forward_pass, layer, position, occurrence, prev_op,
       call_id, gemm_helper(name) AS helper
FROM (
    SELECT 'A' AS side, * FROM selected_kernels(trace_a, want_phase) WHERE trace_a IS NOT NULL
    UNION ALL
    SELECT 'B' AS side, * FROM selected_kernels(trace_b, want_phase) WHERE trace_b IS NOT NULL
);
