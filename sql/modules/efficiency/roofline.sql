-- include: classify.launches
-- include: core.events
-- include: core.selection
-- include: core.types
-- include: efficiency.sequences

-- Efficiency: the work of each operator call from its recorded shapes (FLOPs and bytes moved), the
-- device's peaks, and where each call sits on the roofline.
--
-- A call is a cpu_op whose name says what it computes (perf_family): an attention op outside any
-- other (aten::scaled_dot_product_attention, not the backend op it calls: two vendors' calls then
-- pair by name); a GEMM or convolution outside attention that holds no other (aten::addmm inside
-- aten::linear is the call, aten::linear is not counted again); a memory-bound op outside all
-- these (a convolution's bias add is part of the convolution). Its GPU
-- time is the duration of every kernel, memcpy and memset launched on its thread while it ran,
-- summed (as TraceLens counts an op's kernel time: aten::convolution with its cuDNN transposes and
-- memsets). Its FLOPs and bytes come from its Input Dims, Input type and Concrete Inputs by the
-- published formulas (TraceLens's PerfModel), per family:
--   GEMM (aten::mm, addmm, bmm, baddbmm, matmul, linear, _scaled_mm; vLLM's rocm_unquantized_gemm
--     and AITER's gemm_a16w16, laid out as linear): FLOPs 2·B·M·N·K, plus B·M·N
--     with a bias; bytes (B·M·K + B·K·N + B·M·N + the bias's elements) × the element size
--   attention (aten::_scaled_dot_product_{flash,efficient,cudnn}_attention, scaled_dot_product_
--     attention, _flash_attention_forward, _efficient_attention_forward): FLOPs
--     2·B·H·N_q·N_kv·(d_qk + d_v), halved when causal; bytes (Q + K + V + O elements) × size
--   convolution (aten::convolution): FLOPs 2·N·C_out·(output positions)·(C_in / groups)·(kernel
--     positions); bytes (input + weight + output elements) × size (no bias term, as TraceLens)
--   elementwise (aten::add, mul, gelu, silu, ...): FLOPs one per output element; bytes the tensor
--     inputs and an output as large as the largest input
--   LayerNorm and GroupNorm (aten::native_layer_norm, native_group_norm, AITER's _groupnorm_run):
--     with a weight and a bias of C elements, TraceLens's Normalization: FLOPs 5n + 6C, bytes
--     (2n + 6C) × the element size for n input elements; without them, the input read and the output
--     written and no FLOPs
--   batch norm, softmax, reductions, copies (native_batch_norm, _softmax, sum, mean, copy_, ...): bytes
--     the tensor inputs read and an output as large as the largest input written (a reduction's
--     small output is not counted, copy_'s destination is among its inputs); no FLOPs
--   RMSNorm of the serving libraries (vLLM's _C::rms_norm and fused_add_rms_norm, AITER's rms_norm,
--     rmsnorm, add_rmsnorm, rmsnorm2d_fwd_with_add_ck, SGLang's rmsnorm): x [..., C] the first
--     input whose last dimension is the weight's C (the weight: the last 1-D input), n its elements;
--     FLOPs (n / C)·(2C + 2) + 2n, plus n when it adds a residual ('add' in its name); bytes x read
--     and written and the weight read, (2n + C)·size, plus 2n·size for the residual read and written
--   rotary embedding (vLLM's _C::rotary_embedding, SGLang's rotary_embedding: positions, query,
--     key, ...): FLOPs 3 per query and key element, bytes each read and written once
--   silu_and_mul (vLLM's, SGLang's: out [..., d], input [..., 2d]): FLOPs 5 per output element
--     (SiLU 4, the product 1), bytes the input read and the output written
--   a KV-cache store (vLLM's reshape_and_cache[_flash], SGLang's store_cache: the new keys and
--     values first): bytes the new keys and values read and written into the cache; no FLOPs
--   fused MoE (vLLM's rocm_aiter_fused_moe, fused_experts; the innermost MoE op) given its expert
--     weights, x [T, H], w1 [E, I·(1 or 2 gated), H / p], w2 [E, H, I / p] (p = 2 for FP4 weights
--     packed two to a byte), routing weights [T, k], TraceLens's FusedMoE: FLOPs 2·T·H·I·k·(2 or 3
--     gated) + T·H·(2k − 1) (the weighted sum of the experts' outputs); bytes x read and the output
--     written, and the weights of the experts a uniform routing touches, E_active = E·(1 − ((E −
--     k)/E)^T), read: E_active·I·H·(2 or 3)·the weight's size
--   MoE without its expert weights (vLLM's moe_forward around Triton's matmul_ogs kernels: GPT-OSS),
--     x [T, H] and the router's logits [T, E], TraceLens's UnfusedMoE up and down: FLOPs 2·T·H·I·k·(1
--     or 2 gated) + 2·T·I·H·k; bytes x read and written, T·k·I written and read between the two,
--     and E_active·I·H·(2 or 3) weights. I is the expert's intermediate size: a model-shapes rule's
--     (tracedb rules add model-shapes FILE), else the hidden size (TraceLens's assumption, exact for
--     GPT-OSS); k the rule's, else the top-k op's argument inside the call, else the routing
--     tensors' [T, k]; gated when its kernels' names say _swiglu or _glu, the weights' size 0.5 or 1
--     when they say mxfp4 or fp8 (else the activations'). Each assumption is said (assumption).
--   Inductor kernels (triton_{poi,red,per}_fused_<ops>_<n>, the cpu_op torch.compile's wrapper
--     records for each launch): its elements the numels its Concrete Inputs give (the last for a
--     pointwise kernel, xnumel; the last two for a reduction, xnumel·rnumel), TraceLens's
--     TritonCompiled model: FLOPs per element the sum over the operations its name lists
--     (inductor_flops_per_element), bytes every tensor input read (its buffers, outputs among
--     them) and, for a pointwise kernel, xnumel elements of its first input's type written
--   serving attention (vLLM's unified_attention, SGLang's and AITER's paged attention: a non-aten
--     op named for attention whose first input is the queries [tokens, H_q, d_qk]; K and V the
--     next two inputs of three or more dimensions other than the output, [..., H_kv, d]): FLOPs
--     and bytes from the sequence sums of the step annotation around it (step_sequence_sums,
--     inference_attention_flops and _bytes), the annotation of the replay for a graph's kernels
-- A call whose shapes were not recorded, or not in a form these read, gets NULL and a reason.

-- Model shapes in the order they are tried: user rows first, then by priority.
-- Columns: rank (order of trial, 1 first), source, priority, regex, model, hidden, intermediate,
-- experts, top_k, reference (as model_shapes).
CREATE OR REPLACE VIEW _model_shapes_ordered AS
SELECT row_number() OVER (ORDER BY source = 'builtin', priority, source, regex) AS rank,
       source, priority, regex, model, hidden, intermediate, experts, top_k, reference
FROM model_shapes;

-- True for a serving framework's GEMM op that takes its operands as aten::linear does (x [..., K],
-- weight [N, K], bias [N] or none), by the shapes real traces record: vLLM's
-- rocm_unquantized_gemm, AITER's gemm_a16w16 (SGLang, vLLM on ROCm) (scalar macro).
CREATE OR REPLACE MACRO is_linear_gemm(op) AS op IN ('vllm::rocm_unquantized_gemm', 'aiter::gemm_a16w16');

-- FLOPs per element of an Inductor kernel (scalar macro), from the operations its name lists
-- (triton_{poi,red,per}_fused_<ops>_<n>, the ops joined by '_'), TraceLens's costs per word: 1 for
-- add, sub, mul, div, relu, mean, sum, abs, neg, ne, eq, lt, gt; 2 for pow, sqrt, rsqrt, var,
-- reciprocal; 4 for exp, log, sigmoid, tanh, silu; 8 for gelu; 0 for any other (copies, views,
-- addmm: the GEMM is an op of its own). Ops whose name holds one of those words but computes
-- something else (index_add, scatter_add, leaky_relu, log_softmax, log_sigmoid, *_backward) count 0.
CREATE OR REPLACE MACRO inductor_flops_per_element(name) AS
    list_sum(list_transform(
        string_split(regexp_replace(regexp_extract(name, '^triton_(?:poi|red|per)_fused_(.+)_[0-9]+$', 1),
                                    '(index_add|scatter_add|scatter_reduce|leaky_relu|log_softmax|log_sigmoid(_forward)?|[a-z0-9]+_backward)',
                                    '', 'g'), '_'),
        lambda w: CASE WHEN w IN ('add', 'sub', 'mul', 'div', 'relu', 'mean', 'sum', 'abs', 'neg', 'ne', 'eq', 'lt', 'gt') THEN 1
                       WHEN w IN ('pow', 'sqrt', 'rsqrt', 'var', 'reciprocal') THEN 2
                       WHEN w IN ('exp', 'log', 'sigmoid', 'tanh', 'silu') THEN 4
                       WHEN w = 'gelu' THEN 8 ELSE 0 END));

-- The family of a cpu_op's computation, for its FLOPs and bytes (scalar macro): gemm, attention,
-- inference_attention, moe, conv, inductor, rmsnorm, normalization, rope, act_mul, kv_store, elementwise,
-- memory, or NULL for any other op. The serving libraries' fused quantising norms (rmsnorm_quant,
-- ..._dynamicquant) write a quantised output of their own layout and stay unmodelled.
CREATE OR REPLACE MACRO perf_family(op) AS CASE
    WHEN op IN ('aten::mm', 'aten::addmm', 'aten::bmm', 'aten::baddbmm', 'aten::matmul', 'aten::linear',
                'aten::_scaled_mm') OR is_linear_gemm(op) THEN 'gemm'
    WHEN op IN ('aten::_scaled_dot_product_flash_attention', 'aten::_scaled_dot_product_efficient_attention',
                'aten::_scaled_dot_product_cudnn_attention', 'aten::scaled_dot_product_attention',
                'aten::_flash_attention_forward', 'aten::_efficient_attention_forward') THEN 'attention'
    WHEN op = 'aten::convolution' THEN 'conv'
    WHEN regexp_matches(op, '^triton_(poi|red|per)_fused_.+_[0-9]+$') THEN 'inductor'
    -- the serving libraries' forward ops: in a namespace of their own (vllm::, _C::, aiter::,
    -- sgl_kernel::, sglang_profiler::), never an Inductor kernel (triton_poi_fused__scaled_dot_...)
    -- nor an autograd node or a backward op (FusedRMSNormAffineFunctionBackward)
    WHEN starts_with(op, 'autograd::') OR regexp_matches(lower(op), 'backward|bwd') THEN NULL
    WHEN contains(op, '::') AND NOT starts_with(op, 'aten::') AND regexp_matches(lower(op), 'attention')
         AND NOT contains(lower(op), 'cache') THEN 'inference_attention'
    WHEN contains(op, '::') AND NOT starts_with(op, 'aten::') AND regexp_matches(lower(op), 'fused_moe|moe_forward|fused_experts')
        THEN 'moe'
    WHEN contains(op, '::') AND NOT starts_with(op, 'aten::') AND regexp_matches(lower(op), 'rms_?norm')
         AND NOT contains(lower(op), 'quant') THEN 'rmsnorm'
    WHEN op IN ('aten::native_layer_norm', 'aten::native_group_norm')
         OR (contains(op, '::') AND NOT starts_with(op, 'aten::') AND regexp_matches(lower(op), '(group|layer)_?norm')
             AND NOT contains(lower(op), 'quant')) THEN 'normalization'
    WHEN contains(op, '::') AND NOT starts_with(op, 'aten::') AND regexp_matches(op, '::(batched_)?rotary_embedding$') THEN 'rope'
    WHEN contains(op, '::') AND NOT starts_with(op, 'aten::') AND regexp_matches(op, '::silu_and_mul$') THEN 'act_mul'
    WHEN contains(op, '::') AND NOT starts_with(op, 'aten::')
         AND regexp_matches(op, '::(reshape_and_cache(_flash)?|store_cache|store_kvcache)$') THEN 'kv_store'
    WHEN regexp_matches(op, '^aten::(add|sub|mul|div|where|gelu|silu|relu|sigmoid|tanh|exp|neg|rsqrt|sqrt|pow|clamp|maximum|minimum)_?$')
        THEN 'elementwise'
    WHEN regexp_matches(op, '^aten::(native_batch_norm|_fused_rms_norm|_softmax|_log_softmax|sum|mean|amax|amin|argmax|argmin|cumsum|copy_)$')
        THEN 'memory'
END;

-- The operation a call computes, as two vendors' traces both name it (scalar macro): a serving
-- library's norm, rotary embedding, activation or attention under its family's name (vLLM's
-- _C::rms_norm and AITER's rmsnorm are both RMSNorm), any other op under its own name.
CREATE OR REPLACE MACRO perf_op(op, family) AS CASE family
    WHEN 'rmsnorm' THEN 'RMSNorm' WHEN 'normalization' THEN CASE WHEN contains(lower(op), 'group') THEN 'GroupNorm'
                                                                  ELSE 'LayerNorm' END
    WHEN 'rope' THEN 'rotary embedding' WHEN 'act_mul' THEN 'silu_and_mul'
    WHEN 'inference_attention' THEN 'serving attention' WHEN 'kv_store' THEN 'KV-cache store'
    WHEN 'moe' THEN 'fused MoE' ELSE op END;

-- The data type class of an Input type for the peak table (scalar macro): fp32, bf16, fp16, fp8,
-- or NULL for another type.
CREATE OR REPLACE MACRO peak_dtype(t) AS CASE
    WHEN t IS NULL THEN NULL
    WHEN regexp_matches(lower(t), 'float8|fp8') THEN 'fp8'
    WHEN contains(lower(t), 'bfloat16') THEN 'bf16'
    WHEN regexp_matches(lower(t), '(^|:)half$|float16') THEN 'fp16'
    WHEN lower(t) IN ('float', 'c10::float', 'float32') THEN 'fp32'
END;

-- Elements of a tensor of the given dims (scalar macro); NULL for a scalar's [] or no dims.
CREATE OR REPLACE MACRO numel(d) AS
    CASE WHEN d IS NULL OR len(d) = 0 THEN NULL
         ELSE list_reduce(list_transform(d, lambda x: x::DOUBLE), lambda a, b: a * b) END;

-- The operator calls of the traces of a list of trace ids (NULL: every trace) with their work,
-- reading those traces' rows alone (table macro): the rows of op_work, below, for those traces.
CREATE OR REPLACE MACRO op_work_of(want_ids) AS TABLE
WITH r AS (
    SELECT c.trace_id, c.event_id, c.name AS cpu_op, perf_family(c.name) AS family, c.pid, c.tid, c.ts_ns,
           c.ts_ns + c.dur_ns AS end_ns, TRY_CAST(c.input_dims AS BIGINT[][]) AS dims,
           TRY_CAST(c.input_types AS VARCHAR[]) AS types, TRY_CAST(c.concrete_inputs AS VARCHAR[]) AS concrete,
           c.input_dims IS NULL AS unrecorded
    FROM cpu_ops c
    WHERE perf_family(c.name) IS NOT NULL AND c.dur_ns IS NOT NULL AND _in_scope(c.trace_id)
      AND (want_ids IS NULL OR list_contains(want_ids, c.trace_id))
), attention AS (
    -- attention: the outermost attention op (aten::scaled_dot_product_attention rather than the
    -- backend it chose, so that two vendors' calls pair by name)
    SELECT * FROM r WHERE family IN ('attention', 'inference_attention')
    QUALIFY coalesce(max(end_ns) OVER (PARTITION BY trace_id, pid, tid ORDER BY ts_ns, end_ns DESC, event_id
                                       ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), ts_ns) <= ts_ns
), experts AS (
    -- a MoE: the innermost MoE op (vLLM's moe_forward around AITER's fused MoE taking the weights)
    SELECT * FROM r WHERE family = 'moe'
    QUALIFY coalesce(lead(ts_ns) OVER (PARTITION BY trace_id, pid, tid ORDER BY ts_ns, end_ns DESC, event_id)
                     >= end_ns, true)
), held AS (
    -- the calls that run inside another call of their thread: inside attention or a MoE op (whose
    -- inner GEMMs, norms and copies are theirs), or inside any call that is neither elementwise nor
    -- memory. A call is inside one of a set when the latest end among those of the set started
    -- before it (at its start, first) reaches its end: one ordered pass, however deep the nesting.
    SELECT trace_id, event_id, coalesce(owner_end >= end_ns, false) AS owned, coalesce(heavy_end >= end_ns, false) AS in_heavy
    FROM (SELECT *,
                 max(CASE WHEN family IN ('attention', 'inference_attention', 'moe') THEN end_ns END) OVER w AS owner_end,
                 max(CASE WHEN family NOT IN ('elementwise', 'memory') THEN end_ns END) OVER w AS heavy_end
          FROM (SELECT trace_id, event_id, family, pid, tid, ts_ns, end_ns, 0 AS candidate FROM r
                UNION ALL
                SELECT trace_id, event_id, family, pid, tid, ts_ns, end_ns, 1 FROM r)
          WINDOW w AS (PARTITION BY trace_id, pid, tid ORDER BY ts_ns, candidate ROWS UNBOUNDED PRECEDING))
    WHERE candidate = 1
), compute AS (
    -- GEMMs and convolutions outside attention and MoE: the innermost (aten::addmm, not aten::linear)
    SELECT g.* FROM r g JOIN held h USING (trace_id, event_id)
    WHERE g.family IN ('gemm', 'conv') AND NOT h.owned
    QUALIFY coalesce(lead(g.ts_ns) OVER (PARTITION BY g.trace_id, g.pid, g.tid ORDER BY g.ts_ns, g.end_ns DESC, g.event_id)
                     >= g.end_ns, true)
), fused AS (
    -- the serving libraries' norms and rotary embeddings, and Inductor kernels, outside attention,
    -- the outermost (the copies and adds they run inside are theirs)
    SELECT f.* FROM r f JOIN held h USING (trace_id, event_id)
    WHERE f.family IN ('rmsnorm', 'normalization', 'rope', 'act_mul', 'kv_store', 'inductor') AND NOT h.owned
    QUALIFY coalesce(max(f.end_ns) OVER (PARTITION BY f.trace_id, f.pid, f.tid ORDER BY f.ts_ns, f.end_ns DESC, f.event_id
                                         ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), f.ts_ns) <= f.ts_ns
), light AS (
    -- the memory-bound ops outside every GEMM, attention, convolution, norm and rotary embedding
    -- (a convolution's bias add is part of the convolution), the innermost
    SELECT l.* FROM r l JOIN held h USING (trace_id, event_id)
    WHERE l.family IN ('elementwise', 'memory') AND NOT h.in_heavy
    QUALIFY coalesce(lead(l.ts_ns) OVER (PARTITION BY l.trace_id, l.pid, l.tid ORDER BY l.ts_ns, l.end_ns DESC, l.event_id) >= l.end_ns, true)
), calls AS (
    SELECT * FROM attention UNION ALL SELECT * FROM experts UNION ALL SELECT * FROM compute
    UNION ALL SELECT * FROM fused UNION ALL SELECT * FROM light
), activity AS (
    SELECT d.trace_id, d.dur_ns, r.pid, r.tid, r.ts_ns AS launch_ns
    FROM (SELECT trace_id, correlation, dur_ns FROM kernels
          WHERE _in_scope(trace_id) AND (want_ids IS NULL OR list_contains(want_ids, trace_id))
          UNION ALL SELECT trace_id, correlation, dur_ns FROM memory_ops
          WHERE _in_scope(trace_id) AND (want_ids IS NULL OR list_contains(want_ids, trace_id))) d
    JOIN (SELECT * FROM _launch_calls WHERE want_ids IS NULL OR list_contains(want_ids, trace_id)) r
      ON r.trace_id = d.trace_id AND r.correlation = d.correlation
), timed AS (
    SELECT c.trace_id, c.event_id, count(*) AS kernels, sum(a.dur_ns) AS gpu_ns
    FROM activity a
    ASOF JOIN calls c ON c.trace_id = a.trace_id AND c.pid = a.pid AND c.tid = a.tid AND c.ts_ns <= a.launch_ns
    WHERE a.launch_ns < c.end_ns
    GROUP BY ALL
), gemm AS (
    -- A [..., M, K] and B [..., K, N] of each GEMM form, its batches and its bias's elements
    SELECT *, CASE cpu_op
                  WHEN 'aten::addmm' THEN dims[2] WHEN 'aten::baddbmm' THEN dims[2] ELSE dims[1] END AS a,
              CASE cpu_op
                  WHEN 'aten::addmm' THEN dims[3] WHEN 'aten::baddbmm' THEN dims[3]
                  WHEN 'aten::linear' THEN list_reverse(dims[2])
                  ELSE CASE WHEN is_linear_gemm(cpu_op) THEN list_reverse(dims[2]) ELSE dims[2] END END AS b,
              CASE cpu_op
                  WHEN 'aten::addmm' THEN numel(dims[1]) WHEN 'aten::baddbmm' THEN numel(dims[1])
                  WHEN 'aten::linear' THEN numel(dims[3]) WHEN 'aten::_scaled_mm' THEN numel(dims[5])
                  ELSE CASE WHEN is_linear_gemm(cpu_op) THEN numel(dims[3]) END END AS bias
    FROM calls WHERE family = 'gemm'
), gemm_mnk AS (
    SELECT *, CASE WHEN len(a) >= 2 THEN a[-2] ELSE 1 END AS m, a[-1] AS k,
              CASE WHEN len(b) >= 2 THEN b[-1] ELSE 1 END AS n,
              CASE WHEN cpu_op = 'aten::linear' OR is_linear_gemm(cpu_op) THEN 1
                   ELSE greatest(coalesce(numel(a[:-3]), 1), coalesce(numel(b[:-3]), 1)) END AS batch,
              CASE WHEN cpu_op = 'aten::linear' OR is_linear_gemm(cpu_op) THEN numel(a[:-2]) END AS rows
    FROM gemm
), gemm_work AS (
    SELECT trace_id, event_id, coalesce(rows, m) AS m, n, k, batch, bias, types[1] AS dtype,
           (CASE WHEN batch > 1 THEN TRY_CAST(batch AS HUGEINT) || '×' ELSE '' END)
               || TRY_CAST(coalesce(rows, m) AS HUGEINT) || '×' || n || '×' || k
               || CASE WHEN bias > 0 THEN '+bias' ELSE '' END AS shape
    FROM gemm_mnk
), attn AS (
    -- Q, K, V as [B, H, N, d] (the _forward ops write [B, N, H, d]), and the causal flag
    SELECT *, cpu_op IN ('aten::_flash_attention_forward', 'aten::_efficient_attention_forward') AS bnhd,
           lower(CASE cpu_op
               WHEN 'aten::_scaled_dot_product_flash_attention' THEN concrete[5]
               WHEN 'aten::scaled_dot_product_attention' THEN concrete[6]
               WHEN 'aten::_flash_attention_forward' THEN concrete[9]
               WHEN 'aten::_efficient_attention_forward' THEN CASE WHEN concrete[10] NOT IN ('', '0') THEN 'true' END
               ELSE concrete[7] END) = 'true' AS causal
    FROM calls WHERE family = 'attention'
), serving AS (
    -- serving attention: the queries [tokens, H_q, d_qk]; K and V the next two inputs of three or
    -- more dimensions once the output (the first of them shaped as the queries, when there are
    -- three or more) is left out
    SELECT *, dims[1] AS q, list_filter(dims[2:], lambda d: len(d) >= 3) AS later
    FROM calls WHERE family = 'inference_attention'
), serving_kv AS (
    SELECT * REPLACE (CASE WHEN len(later) >= 3 AND list_position(later, q) IS NOT NULL
                           THEN later[:list_position(later, q) - 1] || later[list_position(later, q) + 1:]
                           ELSE later END AS later)
    FROM serving
), serving_heads AS (
    SELECT c.trace_id, c.event_id, c.types[1] AS dtype,
           CASE WHEN len(c.q) = 3 AND len(c.later) >= 2 THEN
               {'h_q': c.q[2], 'h_kv': c.later[1][-2], 'd_qk': c.q[3], 'd_v': c.later[2][-1]} END AS heads
    FROM serving_kv c
), serving_work AS (
    -- with the sums of the step annotation around the call (a live call: a graph's replays take
    -- theirs in op_roofline_of)
    SELECT h.trace_id, h.event_id, h.dtype, h.heads,
           serving_attention_shape(h.heads, s.c_sq, s.c_sk, s.c_sqsk, s.g_sq, s.g_sk, s.g_sqsk) AS shape,
           inference_attention_flops(h.heads.h_q, h.heads.d_qk, h.heads.d_v, s.c_sqsk, s.c_sqsq, s.g_sqsk) AS flops,
           inference_attention_bytes(h.heads.h_q, h.heads.h_kv, h.heads.d_qk, h.heads.d_v, s.c_sq, s.c_sk, s.g_sq, s.g_sk,
                                     dtype_bytes(h.dtype)) AS bytes,
           serving_attention_why(h.heads, s.event_id IS NOT NULL) AS why
    FROM serving_heads h JOIN serving c USING (trace_id, event_id)
    LEFT JOIN step_sequence_sums s ON s.trace_id = c.trace_id AND s.ts_ns <= c.ts_ns AND c.ts_ns < s.end_ns
    QUALIFY row_number() OVER (PARTITION BY h.trace_id, h.event_id ORDER BY s.ts_ns DESC NULLS LAST) = 1
), rms AS (
    -- the weight: the last 1-D input; x: the first input whose last dimension is the weight's
    SELECT *, list_filter(dims, lambda d: len(d) = 1)[-1][1] AS channels FROM calls WHERE family = 'rmsnorm'
), rms_work AS (
    SELECT trace_id, event_id, x[2] AS dtype, array_to_string(x[1], '×') AS shape, channels,
           numel(x[1]) AS n, contains(lower(cpu_op), 'add') AS residual
    FROM (SELECT *, list_filter(list_zip(dims, types), lambda p: len(p[1]) >= 2 AND p[1][-1] = channels)[1] AS x
          FROM rms)
    WHERE x IS NOT NULL
), normalization AS (
    -- x the first input; the weight and the bias its two 1-D inputs of one length C
    SELECT trace_id, event_id, types[1] AS dtype, array_to_string(dims[1], '×') AS shape, numel(dims[1]) AS n,
           list_filter(dims[2:], lambda d: len(d) = 1) AS params
    FROM calls WHERE family = 'normalization' AND len(dims) >= 1 AND len(dims[1]) >= 2
), rope AS (
    -- rotary_embedding(positions, query, key, ...): the query and the key
    SELECT trace_id, event_id, types[2] AS dtype, array_to_string(dims[2], '×') || ', ' || array_to_string(dims[3], '×') AS shape,
           numel(dims[2]) + coalesce(numel(dims[3]), 0) AS n
    FROM calls WHERE family = 'rope' AND len(dims) >= 3 AND len(dims[2]) >= 2
), act_mul AS (
    -- out [..., d] and input [..., 2d], in either order: the output the smaller
    SELECT trace_id, event_id, types[1] AS dtype, array_to_string(dims[1], '×') || ', ' || array_to_string(dims[2], '×') AS shape,
           least(numel(dims[1]), numel(dims[2])) AS n_out, greatest(numel(dims[1]), numel(dims[2])) AS n_in
    FROM calls WHERE family = 'act_mul' AND len(dims) >= 2
), moe AS (
    -- a fused MoE given its expert weights: x [T, H], w1 [E, I or 2I (gated), H / p], w2 [E, H, I / p],
    -- the routing weights [T, k]; p elements packed in one (2 for FP4 weights: H over w1's last
    -- dimension), whose element size is the weight type's over p
    SELECT trace_id, event_id, types[1] AS dtype, dtype_bytes(types[2]) / pack AS w_bytes, t, h, e, i, k,
           dims[2][2] = 2::HUGEINT * i AS gated,
           t || '×' || h || ' x, ' || array_to_string(dims[2], '×') || ' w1, top-' || k AS shape
    FROM (SELECT *, dims[1][1] AS t, dims[1][2] AS h, dims[2][1] AS e, dims[4][2] AS k,
                 dims[1][2] // dims[2][3] AS pack, dims[3][3] * (dims[1][2] // dims[2][3]) AS i
          FROM calls
          WHERE family = 'moe' AND len(dims) >= 4 AND len(dims[1]) = 2 AND len(dims[2]) = 3 AND len(dims[3]) = 3
            AND len(dims[4]) = 2 AND dims[2][1] = dims[3][1] AND dims[3][2] = dims[1][2] AND dims[2][3] > 0
            AND dims[1][2] % dims[2][3] = 0 AND dims[1][2] // dims[2][3] IN (1, 2))
), moe_bare AS (
    -- a MoE op without its expert weights among its inputs (vLLM's moe_forward around Triton's
    -- matmul_ogs kernels, GPT-OSS): the hidden states x [T, H] and the router's logits [T, E]
    SELECT c.*, t.name AS in_trace FROM calls c JOIN traces t USING (trace_id)
    WHERE c.family = 'moe' AND len(c.dims) >= 2 AND len(c.dims[1]) = 2 AND len(c.dims[2]) = 2
      AND c.dims[2][1] = c.dims[1][1] AND c.dims[2][2] > 0
      AND (c.trace_id, c.event_id) NOT IN (SELECT (trace_id, event_id) FROM moe)
), moe_rule AS (
    -- the model-shape rule of each (the first whose regex the op's or the trace's name holds)
    SELECT b.trace_id, b.event_id, s.model, s.hidden, s.intermediate, s.experts, s.top_k
    FROM moe_bare b JOIN _model_shapes_ordered s
      ON regexp_matches(b.cpu_op, s.regex) OR regexp_matches(b.in_trace, s.regex)
    QUALIFY row_number() OVER (PARTITION BY b.trace_id, b.event_id ORDER BY s.rank) = 1
), moe_inside AS (
    -- what runs inside it on its thread: the top-k op's k (TopK, aten::topk: its second argument),
    -- the routing tensors' [T, k] (the sort of the tokens by expert, a top-k softmax), and the
    -- names of the kernels it launches (matmul_ogs ..._swiglu: gated; mxfp4, fp8: the weights' type)
    SELECT b.trace_id, b.event_id,
           any_value(TRY_CAST(TRY_CAST(o.concrete_inputs AS VARCHAR[])[2] AS BIGINT))
               FILTER (o.name IN ('TopK', 'aten::topk')) AS topk_arg,
           any_value(TRY_CAST(o.input_dims AS BIGINT[][])[1][2])
               FILTER (regexp_matches(o.name, '(?i)sorttokens|topk_softmax|topk_sigmoid|routing')
                       AND TRY_CAST(o.input_dims AS BIGINT[][])[1][1] = b.dims[1][1]
                       AND TRY_CAST(o.input_dims AS BIGINT[][])[1][2] < b.dims[2][2]) AS topk_shape
    FROM moe_bare b
    JOIN cpu_ops o ON o.trace_id = b.trace_id AND o.pid = b.pid AND o.tid = b.tid
                  AND o.ts_ns >= b.ts_ns AND o.ts_ns < b.end_ns AND o.event_id <> b.event_id
    GROUP BY b.trace_id, b.event_id
), moe_kernels AS (
    SELECT b.trace_id, b.event_id, lower(string_agg(coalesce(rc.args ->> 'kernel', k.name), ' ')) AS names
    FROM moe_bare b
    JOIN runtime_calls rc ON rc.trace_id = b.trace_id AND rc.pid = b.pid AND rc.tid = b.tid
                         AND rc.ts_ns >= b.ts_ns AND rc.ts_ns < b.end_ns
    LEFT JOIN kernel_launches l ON l.trace_id = rc.trace_id AND l.launch_id = rc.event_id
    LEFT JOIN kernels k ON k.trace_id = l.trace_id AND k.kernel_id = l.kernel_id
    GROUP BY b.trace_id, b.event_id
), moe_assumed AS (
    -- TraceLens's unfused MoE (an up projection, gated or not, and a down projection, per token
    -- and expert chosen), each size from a rule where one applies, else as recorded, else assumed,
    -- and each assumption said
    SELECT b.trace_id, b.event_id, b.types[1] AS dtype, b.dims[1][1] AS t,
           coalesce(r.hidden, b.dims[1][2]) AS h, coalesce(r.experts, b.dims[2][2]) AS e,
           coalesce(r.intermediate, r.hidden, b.dims[1][2]) AS i,
           coalesce(r.top_k, m.topk_arg, m.topk_shape) AS k,
           coalesce(regexp_matches(n.names, '_swiglu|_glu'), false) AS gated,
           CASE WHEN regexp_matches(n.names, 'mxfp4|fp4') THEN 0.5
                WHEN regexp_matches(n.names, 'fp8|e4m3') THEN 1 ELSE dtype_bytes(b.types[1]) END AS w_bytes,
           nullif(concat_ws('; ',
               CASE WHEN r.model IS NOT NULL THEN 'sizes of ' || r.model || ' (model_shapes)' END,
               CASE WHEN r.intermediate IS NULL THEN 'intermediate = hidden (expert weights not recorded)' END,
               CASE WHEN r.top_k IS NULL AND m.topk_arg IS NULL AND m.topk_shape IS NOT NULL
                    THEN 'top-k ' || m.topk_shape || ' from the routing tensors'' shape' END,
               CASE WHEN NOT regexp_matches(coalesce(n.names, ''), 'mxfp4|fp4|fp8|e4m3')
                    THEN 'weights of the activations'' type' END), '') AS assumption
    FROM moe_bare b
    LEFT JOIN moe_rule r USING (trace_id, event_id)
    LEFT JOIN moe_inside m USING (trace_id, event_id)
    LEFT JOIN moe_kernels n USING (trace_id, event_id)
), moe_unfused AS (
    SELECT *, e * (1 - power((e - k)::DOUBLE / e, t)) AS e_active,
           t || '×' || h || ' x, ' || e || ' experts, top-' || k || CASE WHEN gated THEN ', gated' ELSE '' END AS shape
    FROM moe_assumed WHERE k > 0 AND k <= e
), kv_store AS (
    SELECT trace_id, event_id, types[1] AS dtype, array_to_string(dims[1], '×') || ', ' || array_to_string(dims[2], '×') AS shape,
           numel(dims[1]) + numel(dims[2]) AS n
    FROM calls WHERE family = 'kv_store' AND len(dims) >= 2
), inductor AS (
    -- the numels: its non-empty Concrete Inputs (the trailing Scalars xnumel, rnumel); its buffers:
    -- every input but a Scalar (a 0-d tensor one element)
    SELECT trace_id, event_id, starts_with(cpu_op, 'triton_poi_') AS pointwise, inductor_flops_per_element(cpu_op) AS per_element,
           list_transform(list_filter(concrete, lambda v: v IS NOT NULL AND v <> ''), lambda v: TRY_CAST(v AS DOUBLE)) AS numels,
           list_filter(list_zip(dims, types), lambda p: p[2] IS NOT NULL AND p[2] NOT IN ('Scalar', '')) AS buffers
    FROM calls WHERE family = 'inductor'
), inductor_work AS (
    SELECT trace_id, event_id, buffers[1][2] AS dtype,
           array_to_string(list_transform(buffers, lambda p: '[' || array_to_string(p[1], '×') || ']'), ', ')
               || ' n=' || CASE WHEN pointwise THEN numels[-1]::HUGEINT::VARCHAR
                                ELSE numels[-2]::HUGEINT || '×' || numels[-1]::HUGEINT END AS shape,
           per_element * CASE WHEN pointwise THEN numels[-1] ELSE numels[-2] * numels[-1] END AS flops,
           list_sum(list_transform(buffers, lambda p: coalesce(numel(p[1]), 1) * dtype_bytes(p[2])))
               + CASE WHEN pointwise THEN numels[-1] * dtype_bytes(buffers[1][2]) ELSE 0 END AS bytes,
           CASE WHEN len(numels) < CASE WHEN pointwise THEN 1 ELSE 2 END
                THEN 'Inductor kernel without its numels among the Concrete Inputs' END AS why
    FROM inductor
    WHERE len(buffers) >= 1 AND coalesce(list_bool_and(list_transform(numels, lambda x: x IS NOT NULL)), true)
), attn_dims AS (
    SELECT *, dims[1][1] AS b,
           CASE WHEN bnhd THEN dims[1][3] ELSE dims[1][2] END AS h,
           CASE WHEN bnhd THEN dims[2][3] ELSE dims[2][2] END AS h_kv,
           CASE WHEN bnhd THEN dims[1][2] ELSE dims[1][3] END AS n_q,
           CASE WHEN bnhd THEN dims[2][2] ELSE dims[2][3] END AS n_kv,
           dims[1][4] AS d_qk, dims[3][4] AS d_v
    FROM attn
), attn_work AS (
    SELECT trace_id, event_id, types[1] AS dtype,
           CASE WHEN len(dims[1]) = 4 AND len(dims[2]) = 4 AND len(dims[3]) = 4 THEN
               2::DOUBLE * b * h * n_q * n_kv * (d_qk::DOUBLE + d_v) / CASE WHEN causal THEN 2 ELSE 1 END END AS flops,
           CASE WHEN len(dims[1]) = 4 AND len(dims[2]) = 4 AND len(dims[3]) = 4 THEN
               (numel(dims[1]) + numel(dims[2]) + numel(dims[3]) + 1::DOUBLE * b * h * n_q * d_v) END AS elements,
           b || '×' || h || '×' || n_q || '×' || n_kv || '×' || d_qk || CASE WHEN causal THEN ' causal' ELSE '' END AS shape,
           CASE WHEN len(dims[1]) <> 4 THEN 'variable-length attention: the sequence lengths are not recorded' END AS why
    FROM attn_dims
), conv AS (
    SELECT *, dims[1] AS x, dims[2] AS w,
           TRY_CAST(concrete[4] AS BIGINT[]) AS stride, TRY_CAST(concrete[5] AS BIGINT[]) AS pad,
           TRY_CAST(concrete[6] AS BIGINT[]) AS dil, lower(concrete[7]) = 'true' AS transposed
    FROM calls WHERE family = 'conv'
), conv_out AS (
    -- in DOUBLE, exact for every real size, never overflowing for a recorded one
    SELECT *, list_transform(range(1, len(x) - 1), lambda i:
               floor((x[i + 2]::DOUBLE + 2 * coalesce(pad[i], pad[1], 0) - coalesce(dil[i], dil[1], 1)::DOUBLE * (w[i + 2] - 1) - 1)
                     / coalesce(stride[i], stride[1], 1)) + 1) AS out_sp
    FROM conv
), conv_work AS (
    SELECT trace_id, event_id, types[1] AS dtype, transposed,
           CASE WHEN NOT transposed AND len(x) >= 3 AND len(w) = len(x) THEN
               2::DOUBLE * x[1] * w[1] * numel(out_sp) * w[2] * numel(w[3:]) END AS flops,
           CASE WHEN NOT transposed AND len(x) >= 3 AND len(w) = len(x) THEN
               numel(x) + numel(w) + 1::DOUBLE * x[1] * w[1] * numel(out_sp) END AS elements,
           array_to_string(x, '×') || ' * ' || array_to_string(w, '×') || ' /' || array_to_string(stride, ',') AS shape
    FROM conv_out
), simple AS (
    -- tensor inputs (dims of a tensor type), the largest as the output
    SELECT *, list_filter(list_zip(dims, types), lambda p: p[1] IS NOT NULL AND len(p[1]) > 0
                                                   AND p[2] NOT IN ('Scalar', 'ScalarList', 'TensorList', '')) AS tensors
    FROM calls WHERE family IN ('elementwise', 'memory')
), simple_work AS (
    SELECT trace_id, event_id, family, types[1] AS dtype,
           -- a reduction writes little, copy_ counts its destination among its inputs
           regexp_matches(cpu_op, '^aten::(sum|mean|amax|amin|argmax|argmin|copy_)$') AS no_output,
           list_sum(list_transform(tensors, lambda p: numel(p[1]) * dtype_bytes(p[2]))) AS in_bytes,
           list_max(list_transform(tensors, lambda p: numel(p[1]))) AS out_numel,
           array_to_string(list_transform(tensors, lambda p: array_to_string(p[1], '×')), ', ') AS shape
    FROM simple
), work AS (
    SELECT trace_id, event_id, dtype, shape,
           2::DOUBLE * batch * m * n * k + CASE WHEN bias > 0 THEN 1::DOUBLE * batch * m * n ELSE 0 END AS flops,
           (1::DOUBLE * batch * m * k + 1::DOUBLE * batch * k * n + 1::DOUBLE * batch * m * n + coalesce(bias, 0))
               * dtype_bytes(dtype) AS bytes,
           NULL::VARCHAR AS why
    FROM gemm_work
    UNION ALL
    SELECT trace_id, event_id, dtype, shape, flops, elements * dtype_bytes(dtype), why FROM attn_work
    UNION ALL
    SELECT trace_id, event_id, dtype, shape, flops, elements * dtype_bytes(dtype),
           CASE WHEN transposed THEN 'transposed convolution: not modelled' END FROM conv_work
    UNION ALL
    SELECT trace_id, event_id, dtype, shape, CASE WHEN family = 'elementwise' THEN out_numel END,
           in_bytes + CASE WHEN no_output THEN 0 ELSE out_numel * dtype_bytes(dtype) END,
           NULL FROM simple_work
    UNION ALL
    SELECT trace_id, event_id, dtype, shape, flops, bytes, why FROM serving_work
    UNION ALL
    SELECT trace_id, event_id, dtype, shape || CASE WHEN residual THEN ' +residual' ELSE '' END,
           n / channels * (2::DOUBLE * channels + 2) + 2 * n + CASE WHEN residual THEN n ELSE 0 END,
           (2 * n + channels + CASE WHEN residual THEN 2 * n ELSE 0 END) * dtype_bytes(dtype), NULL
    FROM rms_work
    UNION ALL
    -- affine with a bias: TraceLens's Normalization, 5n + 6C FLOPs, (2n + 6C) elements; else the
    -- input read, the output written and the parameters read, no FLOPs
    SELECT trace_id, event_id, dtype, shape,
           CASE WHEN len(params) = 2 AND params[1] = params[2] THEN 5 * n + 6::DOUBLE * params[1][1] END,
           CASE WHEN len(params) = 2 AND params[1] = params[2] THEN 2 * n + 6::DOUBLE * params[1][1]
                ELSE 2 * n + coalesce(list_sum(list_transform(params, lambda d: d[1]::DOUBLE)), 0) END * dtype_bytes(dtype),
           NULL
    FROM normalization
    UNION ALL
    SELECT trace_id, event_id, dtype, shape, flops, bytes, why FROM inductor_work
    UNION ALL
    SELECT trace_id, event_id, dtype, shape, 3 * n, 2 * n * dtype_bytes(dtype), NULL FROM rope
    UNION ALL
    SELECT trace_id, event_id, dtype, shape, 5 * n_out, (n_in + n_out) * dtype_bytes(dtype), NULL FROM act_mul
    UNION ALL
    SELECT trace_id, event_id, dtype, shape, NULL, 2 * n * dtype_bytes(dtype), NULL FROM kv_store
    UNION ALL
    SELECT trace_id, event_id, dtype, shape,
           2::DOUBLE * t * h * i * k * CASE WHEN gated THEN 3 ELSE 2 END + 1::DOUBLE * t * h * (2::DOUBLE * k - 1),
           2::DOUBLE * t * h * dtype_bytes(dtype)
               + e * (1 - power((e - k)::DOUBLE / e, t)) * i * h * CASE WHEN gated THEN 3 ELSE 2 END * w_bytes,
           NULL FROM moe
    UNION ALL
    -- the up projection (x read, the active experts' gate and up weights read, T·k·I written) and the
    -- down projection (T·k·I read, the active experts' down weights read, x written)
    SELECT trace_id, event_id, dtype, shape,
           2::DOUBLE * t * h * i * k * CASE WHEN gated THEN 2 ELSE 1 END + 2::DOUBLE * t * i * h * k,
           2::DOUBLE * t * h * dtype_bytes(dtype) + 2::DOUBLE * t * i * k * dtype_bytes(dtype)
               + e_active * i * h * CASE WHEN gated THEN 3 ELSE 2 END * w_bytes,
           NULL FROM moe_unfused
    UNION ALL
    SELECT c.trace_id, c.event_id, c.types[1], NULL, NULL, NULL,
           CASE WHEN (c.trace_id, c.event_id) IN (SELECT (trace_id, event_id) FROM moe_assumed)
                THEN 'MoE without its expert weights and no top-k recorded (tracedb rules add model-shapes FILE gives it)'
                ELSE 'MoE without its expert weights or the router''s logits among its inputs in the form read here' END
    FROM calls c WHERE c.family = 'moe'
      AND (c.trace_id, c.event_id) NOT IN (SELECT (trace_id, event_id) FROM moe)
      AND (c.trace_id, c.event_id) NOT IN (SELECT (trace_id, event_id) FROM moe_unfused)
)
SELECT c.trace_id, c.event_id, c.cpu_op, c.family, w.shape, w.dtype,
       TRY_CAST(w.flops AS BIGINT) AS flops, TRY_CAST(w.bytes AS BIGINT) AS bytes,
       CASE WHEN c.unrecorded THEN 'no shapes recorded (record_shapes=False)'
            WHEN w.flops >= 9.223372036854775808e18 OR w.bytes >= 9.223372036854775808e18 THEN 'FLOPs or bytes of 2^63 and more: not kept'
            WHEN c.dims IS NULL THEN 'Input Dims not in a form read here'
            WHEN w.flops IS NULL AND w.bytes IS NULL THEN coalesce(w.why, 'shapes do not say this call''s work')
            WHEN w.bytes IS NULL THEN 'element size of ' || coalesce(w.dtype, 'its type') || ' unknown'
            WHEN w.flops IS NULL AND c.family IN ('gemm', 'attention', 'conv') THEN coalesce(w.why, 'shapes do not say its FLOPs') END AS reason,
       coalesce(t.kernels, 0) AS kernels, coalesce(t.gpu_ns, 0) AS gpu_ns, h.heads,
       CASE WHEN w.flops IS NOT NULL OR w.bytes IS NOT NULL THEN a.assumption END AS assumption
FROM calls c
LEFT JOIN work w USING (trace_id, event_id)
LEFT JOIN timed t USING (trace_id, event_id)
LEFT JOIN serving_heads h USING (trace_id, event_id)
LEFT JOIN moe_assumed a USING (trace_id, event_id);

-- One operator call's work from its shapes (the header above says which formula applies).
-- Columns:
--   trace_id   trace of the call
--   event_id   the cpu_op's event in cpu_ops
--   cpu_op     operator name
--   family     gemm, attention, inference_attention, moe, conv, inductor, rmsnorm, normalization, rope,
--              act_mul, kv_store, elementwise or memory (perf_family)
--   shape      the shape that decides its work: GEMM 'M×N×K' (with 'B× ' batches and '+bias'),
--              attention 'B×H×N_q×N_kv×d' (with ' causal'), serving attention 'H_q×d_qk q,
--              H_kv×d_v kv' and the step's tokens (serving_attention_shape), convolution 'input *
--              weight /stride', a norm its input (with ' +residual'), MoE 'T×H x, w1, top-k', an
--              Inductor kernel its buffers and numels ('[2×4096×9728], [9728] n=79691776'), others
--              the input dims
--   dtype      data type of its first input (Input type)
--   flops      floating-point operations of one call (NULL when the shapes do not say, or 2^63 and more)
--   bytes      bytes moved by one call (NULL when the shapes do not say, or 2^63 and more)
--   reason     why flops or bytes are NULL, else NULL
--   kernels    kernels, memcpys and memsets it launched
--   gpu_ns     their durations summed
--   heads      serving attention: {h_q, h_kv, d_qk, d_v} (its work is the step's: a replay of a
--              captured call takes the sums of the replay's step); NULL for other families
--   assumption what flops and bytes assume that the trace does not record, each assumption said
--              ('intermediate = hidden (expert weights not recorded)'); NULL when nothing is assumed
CREATE OR REPLACE VIEW op_work AS SELECT * FROM op_work_of(NULL);

-- Kernels replayed from a CUDA/HIP graph carry no shapes: their cpu_ops ran when the graph was
-- captured. Where the capture trace of the same run is loaded too (vLLM and SGLang can write both),
-- each replay is matched to the launches recorded at capture: the graph's kernels run in the order
-- they were captured, so the replay's k-th kernel is the capture's (k + d)-th launch for the offset
-- d at which the most kernel names agree (ROCm's launch calls name their kernel; at least 90 % of
-- the replay's kernels must agree, and only the kernels whose names agree are matched). Each matched
-- kernel then counts to the captured cpu_op that launched it, with that call's shapes.
-- Columns:
--   trace_id        the replay trace
--   capture_id      the capture trace it was matched to
--   launch_id       the graph launch (one replay of the graph)
--   kernel_id       the replayed kernel
--   call_event_id   the captured cpu_op (in the capture trace) that launched it (op_roofline counts
--                   the kernel to the modelled call holding that op)
--   matched_pct     share of the replay's kernels whose names agree at the chosen offset
CREATE OR REPLACE VIEW replayed_kernel_calls AS
WITH rep AS MATERIALIZED (
    SELECT k.trace_id, l.launch_id, k.kernel_id, k.name,
           row_number() OVER (PARTITION BY k.trace_id, l.launch_id ORDER BY k.ts_ns, k.kernel_id) AS j,
           count(*) OVER (PARTITION BY k.trace_id, l.launch_id) AS n
    FROM kernels k JOIN kernel_launches l USING (trace_id, kernel_id)
    WHERE l.graph AND _in_scope(k.trace_id)
), cap AS MATERIALIZED (
    -- launches recorded while a graph was captured: they name their kernel, and no kernel ran
    -- for them then (a capture trace may replay its graph too, and run eagerly before)
    SELECT r.trace_id, r.args ->> 'kernel' AS name, c.event_id AS call_event_id,
           row_number() OVER (PARTITION BY r.trace_id ORDER BY r.ts_ns, r.event_id) AS i
    FROM runtime_calls r
    LEFT JOIN _cpu_op_by_external c ON c.trace_id = r.trace_id AND c.external_id = r.external_id
    WHERE r.args ->> 'kernel' IS NOT NULL AND contains(lower(r.name), 'launchkernel')
      AND NOT EXISTS (SELECT 1 FROM kernel_launches l WHERE l.trace_id = r.trace_id AND l.launch_id = r.event_id)
), pairs AS (
    SELECT rep.trace_id, rep.launch_id, rep.kernel_id, rep.j, rep.n, cap.trace_id AS capture_id,
           cap.i - rep.j AS d, cap.call_event_id
    FROM rep JOIN cap ON cap.name = rep.name
), best AS (
    SELECT trace_id, launch_id, capture_id, d, count(*) AS agree, any_value(n) AS n
    FROM pairs GROUP BY trace_id, launch_id, capture_id, d
    QUALIFY row_number() OVER (PARTITION BY trace_id, launch_id ORDER BY count(*) DESC, capture_id, d) = 1
)
SELECT p.trace_id, p.capture_id, p.launch_id, p.kernel_id, p.call_event_id, 100.0 * b.agree / b.n AS matched_pct
FROM pairs p JOIN best b USING (trace_id, launch_id, capture_id, d)
WHERE b.agree >= 0.9 * b.n AND p.call_event_id IS NOT NULL;

-- Device peaks in the order they are tried: user rows first, then by priority.
-- Columns: rank (order of trial, 1 first), source, device, regex, fp32, tf32, bf16, fp16, fp8,
-- mem_tbps, reference (as device_peaks).
CREATE OR REPLACE VIEW _device_peaks_ordered AS
SELECT row_number() OVER (ORDER BY source = 'builtin', priority, source, regex) AS rank,
       source, device, regex, fp32, tf32, bf16, fp16, fp8, mem_tbps, reference
FROM device_peaks;

-- The peaks of each trace's device: the first device_peaks row whose regex matches its recorded
-- device name (case-insensitively); NULL peaks when none does (no percentages, never a guess).
-- Columns:
--   trace_id     trace
--   device_name  the device the trace recorded (traces.device_name)
--   device       the device_peaks row matched (NULL: none)
--   fp32         dense FP32 matrix peak, TFLOP/s (NULL: not published, or no row)
--   tf32         dense TF32 matrix peak, TFLOP/s
--   bf16         dense BF16 matrix peak, TFLOP/s
--   fp16         dense FP16 matrix peak, TFLOP/s
--   fp8          dense FP8 matrix peak, TFLOP/s
--   mem_tbps     memory bandwidth, TB/s
--   reference    the row's source document
CREATE OR REPLACE VIEW trace_peaks AS
SELECT t.trace_id, t.device_name, p.device, p.fp32, p.tf32, p.bf16, p.fp16, p.fp8, p.mem_tbps, p.reference
FROM traces t
LEFT JOIN _device_peaks_ordered p ON t.device_name IS NOT NULL AND regexp_matches(t.device_name, p.regex, 'i')
QUALIFY row_number() OVER (PARTITION BY t.trace_id ORDER BY p.rank NULLS LAST) = 1;

-- The calls of the traces of a list of trace ids (NULL: every trace) on their roofline, reading
-- those traces' rows (and their capture traces') alone (table macro): the rows of op_roofline,
-- below, for those traces.
CREATE OR REPLACE MACRO op_roofline_of(want_ids) AS TABLE
WITH matched AS MATERIALIZED (
    SELECT * FROM replayed_kernel_calls WHERE want_ids IS NULL OR list_contains(want_ids, trace_id)
), work AS MATERIALIZED (
    -- the calls of the traces wanted and of their capture traces, in one op_work_of: the macro is
    -- large, and DuckDB plans each use of it anew (two took half of a report's planning)
    SELECT * FROM op_work_of(CASE WHEN want_ids IS NOT NULL THEN
                                 list_distinct(want_ids || (SELECT coalesce(list(capture_id), []) FROM matched)) END)
), modelled AS MATERIALIZED (
    -- the capture traces' modelled calls with their spans on their threads
    SELECT o.*, c.pid, c.tid, c.ts_ns, c.ts_ns + c.dur_ns AS end_ns
    FROM work o JOIN cpu_ops c USING (trace_id, event_id)
    WHERE o.trace_id IN (SELECT capture_id FROM matched)
), replayed_calls AS (
    -- a replay's kernels, counted to the captured calls (replayed_kernel_calls) with their shapes:
    -- one call per captured call and replay of the graph
    SELECT m.trace_id, o.event_id, o.cpu_op, o.family, o.shape, o.dtype, o.flops, o.bytes,
           o.reason, count(*) AS kernels, sum(k.dur_ns) AS gpu_ns, o.heads, o.assumption, min(l.launch_ts_ns) AS launch_ns
    FROM matched m
    JOIN kernels k ON k.trace_id = m.trace_id AND k.kernel_id = m.kernel_id
    JOIN kernel_launches l ON l.trace_id = m.trace_id AND l.kernel_id = m.kernel_id
    -- the captured call is the modelled op whose span on its thread holds the op that launched
    -- the kernel (aten::convolution around aten::cudnn_convolution, the attention op around its
    -- backend's), as a live call's kernels are counted
    -- (the modelled calls are the ones looked among, a few thousand where the capture's thread
    -- holds a hundred thousand cpu_ops: the range join is the modelled calls' alone)
    JOIN cpu_ops launcher ON launcher.trace_id = m.capture_id AND launcher.event_id = m.call_event_id
    JOIN modelled o ON o.trace_id = m.capture_id AND o.pid = launcher.pid AND o.tid = launcher.tid
                   AND o.ts_ns <= launcher.ts_ns AND launcher.ts_ns <= o.end_ns
    GROUP BY m.trace_id, m.launch_id, o.event_id, o.cpu_op, o.family, o.shape, o.dtype, o.flops, o.bytes, o.reason,
             o.heads, o.assumption
), replayed AS (
    -- serving attention replayed: the work of the sequences of the replay's step (the annotation
    -- around the graph's launch), not of the capture's
    SELECT r.trace_id, r.event_id, r.cpu_op, r.family,
           CASE WHEN r.family = 'inference_attention' AND r.heads IS NOT NULL
                THEN serving_attention_shape(r.heads, s.c_sq, s.c_sk, s.c_sqsk, s.g_sq, s.g_sk, s.g_sqsk)
                ELSE r.shape END AS shape, r.dtype,
           CASE WHEN r.family = 'inference_attention' THEN TRY_CAST(
               inference_attention_flops(r.heads.h_q, r.heads.d_qk, r.heads.d_v, s.c_sqsk, s.c_sqsq, s.g_sqsk) AS BIGINT)
               ELSE r.flops END AS flops,
           CASE WHEN r.family = 'inference_attention' THEN TRY_CAST(
               inference_attention_bytes(r.heads.h_q, r.heads.h_kv, r.heads.d_qk, r.heads.d_v, s.c_sq, s.c_sk, s.g_sq,
                                         s.g_sk, dtype_bytes(r.dtype)) AS BIGINT)
               ELSE r.bytes END AS bytes,
           CASE WHEN r.family <> 'inference_attention' THEN r.reason
                ELSE serving_attention_why(r.heads, s.event_id IS NOT NULL) END AS reason,
           r.kernels, r.gpu_ns, r.heads, r.assumption
    FROM replayed_calls r
    LEFT JOIN step_sequence_sums s ON s.trace_id = r.trace_id AND s.ts_ns <= r.launch_ns AND r.launch_ns < s.end_ns
    QUALIFY row_number() OVER (PARTITION BY r.trace_id, r.event_id, r.launch_ns ORDER BY s.ts_ns DESC NULLS LAST) = 1
), calls AS (
    SELECT * FROM work WHERE want_ids IS NULL OR list_contains(want_ids, trace_id)
    UNION ALL SELECT * FROM replayed
), w AS (
    SELECT o.*, p.device,
           CASE peak_dtype(o.dtype) WHEN 'fp32' THEN p.fp32 WHEN 'bf16' THEN p.bf16 WHEN 'fp16' THEN p.fp16
                                    WHEN 'fp8' THEN p.fp8 END AS peak_tflops,
           p.mem_tbps AS peak_tbps
    FROM calls o JOIN trace_peaks p USING (trace_id)
)
SELECT trace_id, event_id, cpu_op, family, shape, dtype, flops, bytes, reason, assumption, kernels, gpu_ns,
       flops / nullif(bytes, 0) AS intensity,
       flops / nullif(gpu_ns, 0) / 1000 AS tflops, bytes / nullif(gpu_ns, 0) / 1000 AS tbps,
       peak_tflops, peak_tbps,
       CASE WHEN bytes IS NULL AND flops IS NULL THEN NULL
            WHEN flops IS NULL THEN 'memory'
            WHEN peak_tflops IS NULL OR peak_tbps IS NULL THEN NULL
            WHEN flops / nullif(bytes, 0) >= peak_tflops / peak_tbps THEN 'compute' ELSE 'memory' END AS bound,
       100 * CASE WHEN flops IS NULL AND bytes IS NOT NULL THEN bytes / nullif(gpu_ns, 0) / 1000 / peak_tbps
                  WHEN peak_tflops IS NULL THEN NULL  -- no compute peak for its dtype: no ridge to place it by
                  WHEN flops / nullif(bytes, 0) >= peak_tflops / peak_tbps THEN flops / nullif(gpu_ns, 0) / 1000 / peak_tflops
                  ELSE bytes / nullif(gpu_ns, 0) / 1000 / peak_tbps END AS peak_pct
FROM w;

-- Each call's place on its device's roofline: op_work with the trace's peaks, and in a replay trace
-- the captured calls its graph kernels were matched to (replayed_kernel_calls; event_id is then the
-- captured cpu_op's, in the capture trace).
-- Columns:
--   trace_id     trace of the call
--   event_id     the cpu_op's event in cpu_ops
--   cpu_op       operator name
--   family       gemm, attention, inference_attention, moe, conv, rmsnorm, normalization, rope, act_mul, kv_store,
--                elementwise or memory (perf_family)
--   shape        the shape that decides its work (as op_work)
--   dtype        data type of its first input
--   flops        FLOPs of one call (NULL when the shapes do not say)
--   bytes        bytes moved by one call (NULL when the shapes do not say)
--   reason       why flops or bytes are NULL
--   assumption   what flops and bytes assume that the trace does not record (a MoE's expert sizes)
--   kernels      kernels, memcpys and memsets it launched
--   gpu_ns       their durations summed
--   intensity    flops / bytes, FLOP per byte
--   tflops       achieved TFLOP/s: flops / gpu_ns / 1000
--   tbps         achieved TB/s: bytes / gpu_ns / 1000
--   peak_tflops  the device's dense peak for the call's dtype (fp32 for float: TF32 use is not
--                recorded), TFLOP/s; NULL when the device or the dtype has none
--   peak_tbps    the device's memory bandwidth, TB/s
--   bound        compute or memory: the side of the ridge point (peak_tflops / peak_tbps FLOP per
--                byte) its intensity falls on; memory for a call without FLOPs
--   peak_pct     achieved share of the bound resource's peak, percent
CREATE OR REPLACE VIEW op_roofline AS SELECT * FROM op_roofline_of(NULL);

-- Each (cpu_op, shape, dtype) of the traces of a list of trace ids (NULL: every trace) on their
-- roofline: calls, time, achieved rates and the share of the bounding peak (table macro). One use
-- reads any number of traces: a comparison plans op_roofline_of once (roofline_shapes, below,
-- takes a trace's name).
-- Columns:
--   trace_id     the trace
--   trace        its name
--   cpu_op       operator name
--   family       gemm, attention, inference_attention, moe, conv, rmsnorm, normalization, rope, act_mul, kv_store,
--                elementwise or memory (perf_family)
--   shape        the shape that decides its work (as op_work)
--   dtype        data type of its first input
--   calls        calls of that shape
--   total_ns     their GPU time
--   flops        FLOPs of one call
--   bytes        bytes moved by one call
--   intensity    FLOP per byte
--   tflops       achieved TFLOP/s: all their FLOPs over all their time
--   tbps         achieved TB/s
--   peak_tflops  the device's dense peak for the dtype, TFLOP/s
--   peak_tbps    the device's memory bandwidth, TB/s
--   bound        compute or memory (by the ridge point); memory without FLOPs
--   peak_pct     achieved share of the bounding peak, percent
--   reason       why FLOPs or bytes are missing
--   assumption   what its FLOPs and bytes assume that the trace does not record (a MoE's expert sizes)
CREATE OR REPLACE MACRO roofline_shapes_of(want_ids) AS TABLE
WITH g AS (
    SELECT r.trace_id, t.name AS trace, r.cpu_op, r.family, r.shape, r.dtype, count(*) AS calls,
           sum(r.gpu_ns) AS total_ns, any_value(r.flops) AS flops, any_value(r.bytes) AS bytes,
           sum(r.flops) AS all_flops, sum(r.bytes) AS all_bytes, any_value(r.peak_tflops) AS peak_tflops,
           any_value(r.peak_tbps) AS peak_tbps, any_value(r.reason) AS reason, any_value(r.assumption) AS assumption
    FROM op_roofline_of(want_ids) r
    JOIN traces t USING (trace_id)
    WHERE r.gpu_ns > 0
    GROUP BY ALL
), r AS (
    SELECT *, flops / nullif(bytes, 0) AS intensity, all_flops / total_ns / 1000 AS tflops,
           all_bytes / total_ns / 1000 AS tbps
    FROM g
)
SELECT trace_id, trace, cpu_op, family, shape, dtype, calls, total_ns, flops, bytes, intensity, tflops, tbps,
       peak_tflops, peak_tbps,
       CASE WHEN flops IS NULL AND bytes IS NOT NULL THEN 'memory'
            WHEN intensity IS NULL OR peak_tflops IS NULL OR peak_tbps IS NULL THEN NULL
            WHEN intensity >= peak_tflops / peak_tbps THEN 'compute' ELSE 'memory' END AS bound,
       100 * CASE WHEN flops IS NULL AND bytes IS NOT NULL THEN tbps / peak_tbps
                  WHEN peak_tflops IS NULL THEN NULL  -- no compute peak for its dtype: no ridge to place it by
                  WHEN intensity >= peak_tflops / peak_tbps THEN tflops / peak_tflops
                  ELSE tbps / peak_tbps END AS peak_pct,
       reason, assumption
FROM r;

-- roofline_shapes_of for one trace, or every trace (table macro; the same columns).
-- Parameters: want_trace: trace name or #id, NULL for every trace.
CREATE OR REPLACE MACRO roofline_shapes(want_trace) AS TABLE
SELECT * FROM roofline_shapes_of(wanted_ids(want_trace));

-- The same (cpu_op, shape, dtype) on two traces side by side, each on its own device's roofline
-- (table macro): the cross-vendor efficiency comparison. The serving libraries' norms, rotary
-- embeddings, activations and attention pair by their operation (perf_op) and shape, whatever
-- each vendor's library calls them.
-- Parameters: trace_a, trace_b: trace names or ids.
-- Columns:
--   cpu_op       operator name (the operation, perf_op, when the two name it differently)
--   family       gemm, attention, inference_attention, moe, conv, rmsnorm, normalization, rope, act_mul, kv_store, elementwise or memory
--   shape        the shape compared
--   dtype        its data type
--   a_calls      calls in A
--   b_calls      calls in B
--   a_total_ns   A's GPU time in them
--   b_total_ns   B's
--   a_tflops     A's achieved TFLOP/s (NULL without FLOPs)
--   b_tflops     B's
--   a_tbps       A's achieved TB/s
--   b_tbps       B's
--   a_peak_pct   A's share of its device's bounding peak
--   b_peak_pct   B's
--   ratio        mean time of a call in A over B's
--   further      the side further from its own roof (lower peak_pct): A or B
--   at_stake_ns  a_total_ns - b_total_ns
--   assumption   what either side's FLOPs and bytes assume that its trace does not record ('A: ...; B: ...')
CREATE OR REPLACE MACRO efficiency_pairs(trace_a, trace_b) AS TABLE
WITH shapes AS MATERIALIZED (
    SELECT * FROM roofline_shapes_of((SELECT coalesce(list(DISTINCT trace_id), []) FROM compared_sides(trace_a, trace_b)))
), a AS (SELECT * FROM shapes WHERE is_trace(trace, trace_id, trace_a)),
b AS (SELECT * FROM shapes WHERE is_trace(trace, trace_id, trace_b))
SELECT CASE WHEN a.cpu_op <> b.cpu_op THEN perf_op(a.cpu_op, a.family) ELSE coalesce(a.cpu_op, b.cpu_op) END AS cpu_op,
       coalesce(a.family, b.family) AS family,
       coalesce(a.shape, b.shape) AS shape, coalesce(a.dtype, b.dtype) AS dtype,
       coalesce(a.calls, 0) AS a_calls, coalesce(b.calls, 0) AS b_calls,
       coalesce(a.total_ns, 0) AS a_total_ns, coalesce(b.total_ns, 0) AS b_total_ns,
       a.tflops AS a_tflops, b.tflops AS b_tflops, a.tbps AS a_tbps, b.tbps AS b_tbps,
       a.peak_pct AS a_peak_pct, b.peak_pct AS b_peak_pct,
       (a.total_ns / a.calls) / nullif(b.total_ns / b.calls, 0) AS ratio,
       CASE WHEN a.peak_pct < b.peak_pct THEN 'A' WHEN b.peak_pct < a.peak_pct THEN 'B' END AS further,
       coalesce(a.total_ns, 0) - coalesce(b.total_ns, 0) AS at_stake_ns,
       nullif(concat_ws('; ', CASE WHEN a.assumption IS NOT NULL THEN 'A: ' || a.assumption END,
                        CASE WHEN b.assumption IS NOT NULL THEN 'B: ' || b.assumption END), '') AS assumption
FROM a FULL JOIN b ON perf_op(a.cpu_op, a.family) = perf_op(b.cpu_op, b.family) AND a.shape IS NOT DISTINCT FROM b.shape
                    AND a.dtype IS NOT DISTINCT FROM b.dtype;
