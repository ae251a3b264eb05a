-- include: classify.align
-- include: compare.pairs

-- Layer-by-layer alignment of two traces (the seed aligner, in SQL). Each trace is already split
-- into forward passes and layers (kernel_layers); within a layer, kernels are paired by operation
-- and place over every forward pass of both traces at once. A pair missing on one side, or run
-- more often on one side, is where the two traces differ in fusion.
--
-- The place of a kernel is its occurrence among the layer's kernels of the same operation (the
-- 2nd Dense GEMM of the layer), where the seed uses the absolute position: one extra or fused
-- kernel early in a layer then no longer shifts every later pair. A fused kernel counts as an
-- occurrence of each operation it holds, so after B's RMSNorm+GEMM, B's next GEMM pairs with A's
-- second GEMM, not its first. The occurrence is stored per kernel (kernel_facts.occurrence); a
-- phase filter keeps or drops whole forward passes, so it never changes a kept kernel's occurrence.

-- Role of a dense GEMM in a transformer layer, from a kernel name or a Python frame (scalar macro):
-- 'QKV', 'O', 'FFN_up', 'FFN_down', or NULL when the text names none.
CREATE OR REPLACE MACRO gemm_role(text) AS
CASE WHEN regexp_matches(text, '(?i)qkv|q_proj|k_proj|v_proj|query_key_value|selfattention') THEN 'QKV'
     WHEN regexp_matches(text, '(?i)o_proj|out_proj|attn_out|selfoutput|(^|[^a-z])out([^a-z]|$)') THEN 'O'
     WHEN regexp_matches(text, '(?i)gate_up|up_proj|gate_proj|intermediate|(^|[^a-z])fc1|(^|[^a-z])up([^a-z]|$)') THEN 'FFN_up'
     WHEN regexp_matches(text, '(?i)down_proj|(^|[^a-z])fc2|bertoutput|(^|[^a-z])down([^a-z]|$)') THEN 'FFN_down'
END;

-- Kernel pairs of two traces, layer by layer (table macro).
-- Parameters: trace_a, trace_b: trace names or ids; want_phase: prefill, decode, mixed or none,
-- NULL for every phase.
-- Columns:
--   layer         0-based layer within the forward pass
--   position      0-based place in the layer of the pair's first kernel (A's, else B's)
--   op            operation (a guessed fusion: its parts, e.g. RMSNorm+GEMM)
--   occurrence    0-based occurrence of the operation within the layer: the pairing key with op
--   detail        for a Dense GEMM: QKV, O, FFN_up or FFN_down, from the kernel names, else from
--                 the innermost Python frame of the launch that names one; NULL when none does
--   a_kernel      A's most frequent kernel name at the place (NULL when A has none)
--   b_kernel      B's most frequent kernel name at the place (NULL when B has none)
--   a_calls       A's operation calls at the place, over every forward pass (kernel_facts.call_id)
--   b_calls       B's operation calls at the place, over every forward pass
--   a_kernels     A's kernels at the place, over every forward pass (a call's helper kernels, such as a
--                 split-K reduction, included)
--   b_kernels     B's kernels at the place, over every forward pass
--   a_avg_ns      mean time of A's calls: their kernels' durations summed (NULL when A has none)
--   b_avg_ns      mean time of B's calls (NULL when B has none)
--   a_total_ns    total duration of A's kernels
--   b_total_ns    total duration of B's kernels
--   ratio         a_avg_ns / b_avg_ns (NULL when B has no kernel)
--   gap_ns        a_avg_ns - b_avg_ns (a missing side counting 0), per call (the seed aligner's per
--                 kernel, where each call runs one kernel)
--   same_kernel   true when both sides run the same kernel name
--   fusion_note   what the counts say about fusion, with the trace names: one side fuses a fused
--                 operation, runs a kernel the other may fuse, or runs a kernel 1.5x as often (GEMM
--                 helper kernels not counted)
CREATE OR REPLACE MACRO alignment_pairs(trace_a, trace_b, want_phase) AS TABLE
WITH placed AS (
    SELECT side, trace_id, layer, position, occurrence, align_op AS op, name, dur_ns, stack_id, call_id,
           helper IS NOT NULL AS helper
    FROM pair_kernels(trace_a, trace_b, want_phase) WHERE layer IS NOT NULL
), names AS (
    SELECT side, layer, op, occurrence, name, helper, count(*) AS n, sum(dur_ns) AS ns, min(position) AS position,
           first(trace_id) AS trace_id, first(stack_id ORDER BY stack_id) FILTER (stack_id IS NOT NULL) AS stack_id
    FROM placed GROUP BY side, layer, op, occurrence, name, helper
), calls AS (
    SELECT side, layer, op, occurrence, count(DISTINCT call_id) AS calls FROM placed GROUP BY ALL
), places AS (
    -- the kernel named for a place is its most frequent one that is not a helper
    SELECT side, layer, op, occurrence, sum(n) AS kernels, sum(n) FILTER (NOT helper) AS main_kernels,
           sum(ns) AS total_ns, min(position) AS position,
           first(name ORDER BY helper, n DESC, name) AS kernel,
           first(trace_id) AS trace_id,
           first(stack_id ORDER BY helper, n DESC, name) AS stack_id
    FROM names GROUP BY side, layer, op, occurrence
), a AS (SELECT * FROM places JOIN calls USING (side, layer, op, occurrence) WHERE side = 'A'),
b AS (SELECT * FROM places JOIN calls USING (side, layer, op, occurrence) WHERE side = 'B'),
labels AS (SELECT trace_name(trace_a) AS a_name, trace_name(trace_b) AS b_name),
paired AS (
    SELECT coalesce(a.layer, b.layer) AS layer, coalesce(a.position, b.position) AS position,
           coalesce(a.op, b.op) AS op, coalesce(a.occurrence, b.occurrence) AS occurrence,
           a.kernel AS a_kernel, b.kernel AS b_kernel,
           coalesce(a.calls, 0) AS a_calls, coalesce(b.calls, 0) AS b_calls,
           coalesce(a.kernels, 0) AS a_kernels, coalesce(b.kernels, 0) AS b_kernels,
           coalesce(a.main_kernels, 0) AS a_main, coalesce(b.main_kernels, 0) AS b_main,
           a.total_ns / a.calls AS a_avg_ns, b.total_ns / b.calls AS b_avg_ns,
           coalesce(a.total_ns, 0) AS a_total_ns, coalesce(b.total_ns, 0) AS b_total_ns,
           a.trace_id AS a_trace_id, a.stack_id AS a_stack_id, b.trace_id AS b_trace_id, b.stack_id AS b_stack_id
    FROM a FULL JOIN b ON a.layer = b.layer AND a.op = b.op AND a.occurrence = b.occurrence
)
SELECT p.layer, p.position, p.op, p.occurrence,
       CASE WHEN p.op = 'Dense GEMM' THEN coalesce(
           gemm_role(p.a_kernel), gemm_role(p.b_kernel),
           list_filter(list_transform(list_reverse(sa.python_stack), lambda f: gemm_role(f)), lambda r: r IS NOT NULL)[1],
           list_filter(list_transform(list_reverse(sb.python_stack), lambda f: gemm_role(f)), lambda r: r IS NOT NULL)[1])
       END AS detail,
       p.a_kernel, p.b_kernel, p.a_calls, p.b_calls, p.a_kernels, p.b_kernels, p.a_avg_ns, p.b_avg_ns, p.a_total_ns, p.b_total_ns,
       p.a_avg_ns / nullif(p.b_avg_ns, 0) AS ratio,
       coalesce(p.a_avg_ns, 0) - coalesce(p.b_avg_ns, 0) AS gap_ns,
       coalesce(p.a_kernel = p.b_kernel, false) AS same_kernel,
       CASE WHEN p.a_kernels > 0 AND p.b_kernels = 0 THEN
                CASE WHEN contains(p.op, '+') THEN l.a_name || ' fuses ' || p.op || ' into ' || coalesce(p.a_kernel, '')
                     WHEN p.op NOT IN ('Attention', 'Dense GEMM', 'KV Cache', 'MoE GEMM', 'MoE Routing')
                     THEN l.a_name || ' runs ' || coalesce(p.a_kernel, '') || ', ' || l.b_name || ' may fuse it into another kernel' END
            WHEN p.a_kernels = 0 AND p.b_kernels > 0 THEN
                CASE WHEN contains(p.op, '+') THEN l.b_name || ' fuses ' || p.op || ' into ' || coalesce(p.b_kernel, '')
                     WHEN p.op NOT IN ('Attention', 'Dense GEMM', 'KV Cache', 'MoE GEMM', 'MoE Routing')
                     THEN l.b_name || ' runs ' || coalesce(p.b_kernel, '') || ', ' || l.a_name || ' may fuse it into another kernel' END
            WHEN p.b_main > 0 AND p.a_main > 1.5 * p.b_main THEN
                l.a_name || ' runs ' || coalesce(p.a_kernel, '') || ' ' || printf('%.1f', p.a_main / p.b_main) || 'x more → ' || l.b_name || ' fuses'
            WHEN p.a_main > 0 AND p.b_main > 1.5 * p.a_main THEN
                l.b_name || ' runs ' || coalesce(p.b_kernel, '') || ' ' || printf('%.1f', p.b_main / p.a_main) || 'x more → ' || l.a_name || ' fuses'
       END AS fusion_note
FROM paired p
CROSS JOIN labels l
LEFT JOIN python_stacks sa ON sa.trace_id = p.a_trace_id AND sa.stack_id = p.a_stack_id
LEFT JOIN python_stacks sb ON sb.trace_id = p.b_trace_id AND sb.stack_id = p.b_stack_id;

-- Layers of two traces side by side: the seed aligner's per-layer totals and the seed analyzer's
-- layer-wise breakdown (table macro).
-- Parameters: trace_a, trace_b: trace names or ids; want_phase: prefill, decode, mixed or none,
-- NULL for every phase.
-- Columns:
--   layer       0-based layer within the forward pass
--   status      'A slower' (A's time 0.1 ms and 1.2x above B's), 'A faster' (B's 0.1 ms and 1.2x
--               above A's), 'similar', 'only A' or 'only B' (the seed analyzer's thresholds)
--   a_passes    forward passes of A that reach the layer
--   b_passes    forward passes of B that reach the layer
--   a_kernels   A's kernels in the layer, over every pass
--   b_kernels   B's kernels in the layer, over every pass
--   a_total_ns  A's kernel time in the layer, over every pass
--   b_total_ns  B's kernel time in the layer, over every pass
--   ratio       a_total_ns / b_total_ns
--   gap_ns      a_total_ns - b_total_ns
CREATE OR REPLACE MACRO alignment_layers(trace_a, trace_b, want_phase) AS TABLE
WITH per_side AS (
    SELECT side, layer, count(DISTINCT forward_pass) AS passes, count(*) AS kernels, sum(dur_ns) AS total_ns
    FROM pair_kernels(trace_a, trace_b, want_phase) WHERE layer IS NOT NULL
    GROUP BY side, layer
), a AS (SELECT * FROM per_side WHERE side = 'A'), b AS (SELECT * FROM per_side WHERE side = 'B')
SELECT coalesce(a.layer, b.layer) AS layer,
       CASE WHEN b.layer IS NULL THEN 'only A'
            WHEN a.layer IS NULL THEN 'only B'
            WHEN a.total_ns - b.total_ns > 100000 AND a.total_ns > 1.2 * b.total_ns THEN 'A slower'
            WHEN b.total_ns - a.total_ns > 100000 AND b.total_ns > 1.2 * a.total_ns THEN 'A faster'
            ELSE 'similar' END AS status,
       coalesce(a.passes, 0) AS a_passes, coalesce(b.passes, 0) AS b_passes,
       coalesce(a.kernels, 0) AS a_kernels, coalesce(b.kernels, 0) AS b_kernels,
       coalesce(a.total_ns, 0) AS a_total_ns, coalesce(b.total_ns, 0) AS b_total_ns,
       a.total_ns / nullif(b.total_ns, 0) AS ratio,
       coalesce(a.total_ns, 0) - coalesce(b.total_ns, 0) AS gap_ns
FROM a FULL JOIN b ON a.layer = b.layer;
