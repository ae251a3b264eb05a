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

-- The operations a fused operation name stands for (scalar macro): 'RMSNorm+GEMM' gives
-- ['RMSNorm', 'Dense GEMM']. Parts named as kernel rules name operations map to themselves; the
-- parts the fusion heuristic writes (GEMM, SwiGLU, SiLU, GELU, ReLU, Norm) map to the operations
-- that run them unfused. A name without '+' gives itself.
CREATE OR REPLACE MACRO fused_part_ops(fused) AS
flatten(list_transform(string_split(fused, '+'), lambda part:
    CASE trim(part)
        WHEN 'GEMM' THEN ['Dense GEMM']
        WHEN 'SwiGLU' THEN ['Activation']
        WHEN 'SiLU' THEN ['Activation']
        WHEN 'GELU' THEN ['Activation']
        WHEN 'ReLU' THEN ['Activation']
        WHEN 'Norm' THEN ['RMSNorm', 'LayerNorm', 'Normalization']
        ELSE [trim(part)]
    END));

-- The operation two traces are compared by (scalar macro): the kernel's operation, or for a
-- 'Fused (Unknown)' kernel the parts it was guessed to hold (its pattern, e.g. 'RMSNorm+GEMM').
CREATE OR REPLACE MACRO align_op(op, pattern) AS CASE WHEN op = 'Fused (Unknown)' THEN pattern ELSE op END;

-- The comparison keys of every kernel, computed from the stored operations, layers and calls
-- (kernel_facts.occurrence and prev_op hold the stored result).
-- Columns:
--   trace_id    trace the kernel belongs to
--   kernel_id   row of kernels
--   occurrence  0-based occurrence of the kernel's operation call within its layer, a fused kernel
--               counting once for each operation it holds (fused_part_ops); the kernels of one
--               call (kernel_facts.call_id: a GEMM and its split-K reduction) share it, so a
--               helper kernel never shifts the calls after it; NULL outside layers
--   prev_op     operation of the kernel started just before it in the trace (start order, then
--               kernel_id), a 'Fused (Unknown)' kernel by its parts; NULL for the first
CREATE OR REPLACE VIEW _kernel_order_live AS
WITH k AS MATERIALIZED (
    SELECT k.trace_id, k.kernel_id, k.ts_ns, f.forward_pass, f.layer, f.position,
           coalesce(f.call_id, k.kernel_id) AS call_id, align_op(f.op, f.pattern) AS op
    FROM kernels k JOIN kernel_facts f USING (trace_id, kernel_id)
    WHERE _in_scope(k.trace_id)
), covers AS (
    -- the operations each layered kernel stands for: its own, and a fused kernel's parts
    SELECT trace_id, kernel_id, forward_pass, layer, position, op, call_id,
           unnest(CASE WHEN contains(op, '+') THEN list_distinct(list_prepend(op, fused_part_ops(op))) ELSE [op] END) AS covered
    FROM k WHERE layer IS NOT NULL
), calls AS (
    -- a call's place in the layer is that of its first kernel there
    SELECT *, min(position) OVER (PARTITION BY trace_id, forward_pass, layer, covered, call_id) AS call_position
    FROM covers
), occurrences AS (
    SELECT trace_id, kernel_id,
           dense_rank() OVER (PARTITION BY trace_id, forward_pass, layer, covered ORDER BY call_position, call_id) - 1 AS occurrence
    FROM calls
    QUALIFY covered = op
)
SELECT k.trace_id, k.kernel_id, o.occurrence,
       lag(k.op) OVER (PARTITION BY k.trace_id ORDER BY k.ts_ns, k.kernel_id) AS prev_op
FROM k LEFT JOIN occurrences o USING (trace_id, kernel_id);

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
