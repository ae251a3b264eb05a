-- include: classify.align
-- include: core.events

-- Each kernel's place among the calls of its operation within its layer, and the operation before
-- it: stored at load (kernel_facts.occurrence, prev_op), read by the layer-by-layer comparisons.

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
