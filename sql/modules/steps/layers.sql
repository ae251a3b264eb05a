-- include: classify.kernel_ops
-- include: core.events
-- include: steps.phases

-- Layers of one trace: each forward pass split into the model's layers.
--
-- A forward pass is a kernel's iteration (kernel_phases: a phase step, else a ProfilerStep, else
-- a step found from the model's frames), unless the step runs the model several times: a step
-- whose outermost module calls launch most of its kernels, the class launching the most of them
-- called two or more times (an object detector called five times in one ProfilerStep, a diffusion
-- transformer once per denoising step; not a model called once beside a sampler module), has one
-- pass per outermost module call; the passes of such a trace are then numbered 0, 1, ... in time
-- order over its steps. A trace without steps has one pass per call of the model's outermost module where such
-- calls launch most of its kernels (nn.Module: Owlv2ForObjectDetection_0, called five times: five
-- passes), else the whole trace is one pass. Kernels of a pass-per-call step launched outside
-- every call belong to no pass.
--
-- Module rule, first: a trace recorded with module frames (with_modules) names its layers. The
-- layer modules are the classes named like a layer (ending in Layer or Block: BertLayer,
-- Qwen2DecoderLayer, Owlv2EncoderLayer, TransformerBlock) that run two or more times within one
-- call of the outermost module; each call of such a module, outermost where they nest (a
-- TransformerBlock's AttentionBlock is inside its layer), is one layer, numbered in order within
-- the pass over every stack (a vision encoder's 24 layers, then a text encoder's 12: 36). A kernel
-- belongs to the layer whose frame was running on the launching thread when it was launched.
--
-- Marker rule, for a pass where no kernel was launched inside a layer module, or where most of its
-- marker kernels were launched outside them (a compiled transformer beside text encoders with
-- module frames): markers are the
-- kernels whose operation marks a layer: Attention for transformers, SSM for state-space models
-- (a hybrid has both). Consecutive marker kernels form one marker group, so an attention that runs
-- as several kernels (QKV + reduce, split-KV + combine) counts once; a pass with L marker groups
-- has L layers.
--
-- Where a layer starts: the kernels that lead to the first marker (norm, QKV GEMM, rotary, cache
-- write) repeat at the end of every gap between markers. Their count is the longest n for which
-- the last n kernels before the first marker and the last n kernels of the first gap run the same
-- operations; that many kernels before each marker group belong to its layer. The rest of a gap belongs to the layer
-- before, and after the last marker group only as many kernels as the last gap leaves to its
-- layer are taken (the rest: final norm, LM head, sampling). Kernels outside layers get NULL.
-- A pass without markers falls back to the seed loader's rule: every correlation group of 70+
-- kernels holding an attention and a GEMM kernel is a layer.

-- True for a module class named like a model layer (scalar macro): BertLayer, LlamaDecoderLayer,
-- Owlv2EncoderLayer, GPT2Block, TransformerBlock; not LayerNorm or T5LayerFF.
CREATE OR REPLACE MACRO is_layer_class(class) AS regexp_matches(class, '(?i)(layer|block)$');

-- Calls of the model's modules, from the module frames (python_function events named
-- 'nn.Module: Class_N'), with how they nest on their thread.
-- Columns:
--   trace_id   trace of the frame
--   event_id   event of the frame in python_functions
--   pid, tid   the thread running it
--   ts_ns      start, nanoseconds
--   end_ns     end, nanoseconds
--   module     the module as the trace names it (BertLayer_3)
--   class      its class (BertLayer)
--   top_level  true when no other module frame on the thread encloses it (a call of the model's
--              outermost module)
CREATE OR REPLACE VIEW _module_calls AS
WITH m AS (
    SELECT trace_id, event_id, pid, tid, ts_ns, ts_ns + dur_ns AS end_ns, substr(name, 12) AS module,
           regexp_extract(name, '^nn\.Module: (.+)_[0-9]+$', 1) AS class
    FROM python_functions
    WHERE starts_with(name, 'nn.Module: ') AND dur_ns IS NOT NULL AND _in_scope(trace_id)
)
SELECT trace_id, event_id, pid, tid, ts_ns, end_ns, module, nullif(class, '') AS class,
       coalesce(max(end_ns) OVER (PARTITION BY trace_id, pid, tid ORDER BY ts_ns, end_ns DESC, event_id
                                  ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), ts_ns) <= ts_ns AS top_level
FROM m;

-- The calls of the model's outermost module, numbered in time order: a trace's forward passes
-- where it has no steps (_pass_kernels), and what a layer module's repeats are counted within.
-- Columns:
--   trace_id   trace
--   pid        process running the call
--   tid        thread running the call
--   ts_ns      start, nanoseconds
--   end_ns     end, nanoseconds
--   top_call   0-based order of the call in the trace
--   class      the module's class (Owlv2ForObjectDetection)
CREATE OR REPLACE VIEW _top_module_calls AS
    SELECT trace_id, pid, tid, ts_ns, end_ns,
           row_number() OVER (PARTITION BY trace_id ORDER BY ts_ns, event_id) - 1 AS top_call, class
    FROM _module_calls WHERE top_level;

-- The calls of the model's layer modules (the module rule above), each with the call of the
-- outermost module it runs in.
-- Columns:
--   trace_id   trace
--   event_id   event of the layer's frame in python_functions
--   pid, tid   the thread running it
--   ts_ns      start, nanoseconds
--   end_ns     end, nanoseconds
--   module     the layer module (BertLayer_3)
--   top_call   0-based order of the outermost module call it runs in, in the trace
CREATE OR REPLACE VIEW _layer_calls AS
WITH tops AS (
    SELECT * FROM _top_module_calls
), candidates AS (
    SELECT c.trace_id, c.event_id, c.pid, c.tid, c.ts_ns, c.end_ns, c.module, c.class, t.top_call
    FROM (SELECT * FROM _module_calls WHERE is_layer_class(class)) c
    ASOF JOIN tops t ON t.trace_id = c.trace_id AND t.pid = c.pid AND t.tid = c.tid AND t.ts_ns <= c.ts_ns
    WHERE c.end_ns <= t.end_ns
), repeated AS (
    -- a layer class runs two or more times within one call of the model
    SELECT * FROM (SELECT *, count(*) OVER (PARTITION BY trace_id, class, top_call) AS n FROM candidates)
    QUALIFY max(n) OVER (PARTITION BY trace_id, class) >= 2
), outermost AS (
    SELECT *, coalesce(max(end_ns) OVER (PARTITION BY trace_id, pid, tid ORDER BY ts_ns, end_ns DESC, event_id
                                         ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), ts_ns) <= ts_ns AS outer_layer
    FROM repeated
)
SELECT trace_id, event_id, pid, tid, ts_ns, end_ns, module, top_call FROM outermost WHERE outer_layer;

-- Architecture of each trace from its kernels' operations (the seed's detection).
-- Columns:
--   trace_id      trace
--   architecture  transformer, ssm, hybrid or unknown
--   attention     kernels classified Attention
--   ssm           kernels classified SSM
CREATE OR REPLACE VIEW trace_architecture AS
SELECT t.trace_id,
       CASE WHEN count(*) FILTER (o.op = 'Attention') > 0 AND count(*) FILTER (o.op = 'SSM') > 0 THEN 'hybrid'
            WHEN count(*) FILTER (o.op = 'Attention') > 0 THEN 'transformer'
            WHEN count(*) FILTER (o.op = 'SSM') > 0 THEN 'ssm'
            ELSE 'unknown' END AS architecture,
       count(*) FILTER (o.op = 'Attention') AS attention,
       count(*) FILTER (o.op = 'SSM') AS ssm
FROM traces t LEFT JOIN kernel_ops o USING (trace_id)
GROUP BY t.trace_id;

-- Kernels of each forward pass in order, with their marker groups and layer module calls.
-- Columns:
--   trace_id      trace
--   kernel_id     row of kernels
--   forward_pass  iteration of the kernel; in a trace with steps that run the model several times,
--                 the order (0, 1, ...) of its pass (a call of the outermost module, or a step);
--                 for a trace without steps, the order (0, 1, ...) of the outermost module call
--                 that launched it (NULL outside every call) where such calls launch most of the
--                 trace's kernels, else 0; NULL outside
--   seq           1, 2, ... in start order within the pass
--   op            operation family
--   is_marker     true for a layer-marker kernel
--   grp           marker groups started at or before this kernel in the pass (0 before the first)
--   correlation   correlation id of the kernel
--   name          kernel name
--   layer_call    event_id of the layer module call (_layer_calls) whose frame was running when the
--                 kernel was launched; NULL when none
--   layer_ts_ns   start of that call
--   layer_module  its module (BertLayer_3)
CREATE OR REPLACE VIEW _pass_kernels AS
WITH stepped AS (
    SELECT DISTINCT trace_id FROM kernel_phases WHERE iteration IS NOT NULL
), tops AS (
    SELECT * FROM _top_module_calls
), launched AS (
    -- where each kernel was launched from: the thread and time of its runtime call
    SELECT f.trace_id, f.kernel_id, r.pid, r.tid, r.ts_ns
    FROM kernel_facts f JOIN runtime_calls r ON r.trace_id = f.trace_id AND r.event_id = f.launch_id
    WHERE _in_scope(f.trace_id)
), in_top AS (
    SELECT l.trace_id, l.kernel_id, t.top_call
    FROM launched l
    ASOF JOIN tops t ON t.trace_id = l.trace_id AND t.pid = l.pid AND t.tid = l.tid AND t.ts_ns <= l.ts_ns
    WHERE l.ts_ns < t.end_ns
), in_layer AS (
    SELECT l.trace_id, l.kernel_id, c.event_id AS layer_call, c.ts_ns AS layer_ts_ns, c.module AS layer_module
    FROM launched l
    ASOF JOIN _layer_calls c ON c.trace_id = l.trace_id AND c.pid = l.pid AND c.tid = l.tid AND c.ts_ns <= l.ts_ns
    WHERE l.ts_ns < c.end_ns
), moduled AS (
    -- traces whose outermost module calls hold most of their kernels' launches: their passes; a
    -- stray top-level module (a sampler called outside the model) does not make a trace's passes
    SELECT l.trace_id FROM launched l LEFT JOIN in_top t USING (trace_id, kernel_id)
    GROUP BY l.trace_id HAVING 2 * count(t.top_call) > count(*)
), step_calls AS (
    -- steps in which the outermost module calls launch most of the kernels and the class launching
    -- the most of them runs two or more times: a pass per call
    SELECT trace_id, iteration
    FROM (
        SELECT p.trace_id, p.iteration, t.class, count(*) AS kernels, count(DISTINCT it.top_call) AS calls,
               sum(count(*)) OVER (PARTITION BY p.trace_id, p.iteration) AS step_kernels,
               sum(count(it.top_call)) OVER (PARTITION BY p.trace_id, p.iteration) AS in_calls
        FROM kernel_phases p JOIN stepped USING (trace_id)
        LEFT JOIN in_top it USING (trace_id, kernel_id)
        LEFT JOIN tops t ON t.trace_id = it.trace_id AND t.top_call = it.top_call
        WHERE p.iteration IS NOT NULL AND _in_scope(p.trace_id)
        GROUP BY p.trace_id, p.iteration, t.class
    )
    WHERE class IS NOT NULL AND 2 * in_calls > step_kernels
    QUALIFY row_number() OVER (PARTITION BY trace_id, iteration ORDER BY kernels DESC, class) = 1 AND calls >= 2
), keyed AS (
    SELECT k.trace_id, k.kernel_id, k.correlation, k.name, k.ts_ns, o.op,
           CASE WHEN a.trace_id IS NOT NULL THEN p.iteration
                WHEN m.trace_id IS NOT NULL THEN it.top_call
                ELSE 0 END AS forward_pass,
           -- in a trace with pass-per-call steps: (step, call) for such a step's kernels in a call,
           -- (step, -1) for another step's, NULL outside
           CASE WHEN sc.iteration IS NOT NULL AND it.top_call IS NOT NULL THEN [p.iteration, it.top_call]
                WHEN sc.iteration IS NULL AND p.iteration IS NOT NULL THEN [p.iteration, -1] END AS call_key,
           bool_or(sc.iteration IS NOT NULL) OVER (PARTITION BY k.trace_id) AS per_call,
           o.op IN ('Attention', 'SSM') AS is_marker,
           il.layer_call, il.layer_ts_ns, il.layer_module
    FROM kernels k
    JOIN kernel_ops o USING (trace_id, kernel_id)
    JOIN kernel_phases p USING (trace_id, kernel_id)
    LEFT JOIN stepped a USING (trace_id)
    LEFT JOIN moduled m USING (trace_id)
    LEFT JOIN in_top it USING (trace_id, kernel_id)
    LEFT JOIN in_layer il USING (trace_id, kernel_id)
    LEFT JOIN step_calls sc ON sc.trace_id = k.trace_id AND sc.iteration = p.iteration
    WHERE _in_scope(k.trace_id)
), passes AS (
    SELECT * REPLACE (
           CASE WHEN NOT per_call THEN forward_pass
                WHEN call_key IS NOT NULL THEN dense_rank() OVER (PARTITION BY trace_id, call_key IS NULL ORDER BY call_key) - 1
           END AS forward_pass)
    FROM keyed
), seqd AS (
    SELECT *, row_number() OVER (PARTITION BY trace_id, forward_pass ORDER BY ts_ns, kernel_id) AS seq
    FROM passes
), starts AS (
    SELECT *, is_marker AND NOT coalesce(lag(is_marker) OVER w, false) AS group_start
    FROM seqd WINDOW w AS (PARTITION BY trace_id, forward_pass ORDER BY seq)
)
SELECT trace_id, kernel_id, forward_pass, seq, op, is_marker,
       sum(group_start::INTEGER) OVER (PARTITION BY trace_id, forward_pass ORDER BY seq) AS grp,
       correlation, name, layer_call, layer_ts_ns, layer_module
FROM starts
WHERE forward_pass IS NOT NULL;

-- Layer of every GPU kernel, computed from the stored operations and phases (kernel_layers holds
-- the stored result).
-- Columns:
--   trace_id      trace the kernel belongs to
--   kernel_id     row of kernels
--   forward_pass  the forward pass (kernel_phases.iteration, or a call of the outermost module in a step
--                 that runs it several times; without steps, the outermost module call, else 0)
--   layer         0-based layer within the pass; NULL before the first layer and after the last
--   position      0-based place of the kernel within its layer (NULL when layer is NULL)
--   layer_source  the rule that gave the layer: module, marker or correlation (NULL outside layers)
--   layer_module  the layer's module (BertLayer_3) for a module layer, else NULL
CREATE OR REPLACE VIEW _kernel_layers_live AS
WITH pk AS MATERIALIZED (
    SELECT * FROM _pass_kernels
), groups AS MATERIALIZED (
    -- start and end (seq) of every marker group of every pass
    SELECT trace_id, forward_pass, grp, min(seq) AS s, max(seq) AS e
    FROM pk WHERE is_marker GROUP BY ALL
), shape AS (
    -- per pass: number of groups, the first gap's bounds and the last gap's length
    SELECT trace_id, forward_pass, max(grp) AS groups,
           max(s) FILTER (grp = 1) AS s1, max(e) FILTER (grp = 1) AS e1, max(s) FILTER (grp = 2) AS s2,
           max(s) FILTER (grp = max_grp) - max(e) FILTER (grp = max_grp - 1) - 1 AS last_gap
    FROM (SELECT *, max(grp) OVER (PARTITION BY trace_id, forward_pass) AS max_grp FROM groups)
    GROUP BY ALL
), lead_in AS (
    -- a: the longest n such that the last n kernels before the first marker group and the last n
    -- kernels of the first gap run the same operations (as a multiset: the first layer may order
    -- a fused kernel differently). Multisets compare by two running sums of operation hashes.
    SELECT trace_id, forward_pass, max(j) FILTER (pre_h1 = gap_h1 AND pre_h2 = gap_h2) AS a
    FROM (
        SELECT sh.trace_id, sh.forward_pass, sh.s1 - k.seq AS j,
               sum(hash(k.op)::HUGEINT) OVER w AS pre_h1, sum(hash(k.op || '#')::HUGEINT) OVER w AS pre_h2
        FROM shape sh JOIN pk k USING (trace_id, forward_pass)
        WHERE sh.groups >= 2 AND k.seq < sh.s1 AND sh.s1 - k.seq <= sh.s2 - sh.e1 - 1
        WINDOW w AS (PARTITION BY sh.trace_id, sh.forward_pass ORDER BY k.seq DESC)
    ) pre
    JOIN (
        SELECT sh.trace_id, sh.forward_pass, sh.s2 - k.seq AS j,
               sum(hash(k.op)::HUGEINT) OVER w AS gap_h1, sum(hash(k.op || '#')::HUGEINT) OVER w AS gap_h2
        FROM shape sh JOIN pk k USING (trace_id, forward_pass)
        WHERE sh.groups >= 2 AND k.seq > sh.e1 AND k.seq < sh.s2
        WINDOW w AS (PARTITION BY sh.trace_id, sh.forward_pass ORDER BY k.seq DESC)
    ) gap USING (trace_id, forward_pass, j)
    GROUP BY trace_id, forward_pass
), bounds AS (
    SELECT sh.trace_id, sh.forward_pass, sh.groups, coalesce(li.a, 0) AS a,
           CASE WHEN sh.groups >= 2 THEN sh.last_gap - coalesce(li.a, 0) END AS b
    FROM shape sh LEFT JOIN lead_in li USING (trace_id, forward_pass)
), by_marker AS (
    SELECT k.trace_id, k.kernel_id, k.forward_pass,
           CASE WHEN nxt.s IS NOT NULL AND k.seq >= nxt.s - b.a AND (k.grp = 0 OR k.seq > cur.e) THEN k.grp + 1
                WHEN k.grp = 0 THEN NULL
                WHEN k.grp = b.groups AND b.b IS NOT NULL AND k.seq > cur.e + b.b THEN NULL
                ELSE k.grp END - 1 AS layer,
           k.seq
    FROM pk k
    JOIN bounds b USING (trace_id, forward_pass)
    LEFT JOIN groups cur ON cur.trace_id = k.trace_id AND cur.forward_pass = k.forward_pass AND cur.grp = k.grp
    LEFT JOIN groups nxt ON nxt.trace_id = k.trace_id AND nxt.forward_pass = k.forward_pass AND nxt.grp = k.grp + 1
), corr_groups AS (
    -- seed fallback for passes without markers: big correlation groups with attention and GEMM
    SELECT trace_id, forward_pass, correlation,
           row_number() OVER (PARTITION BY trace_id, forward_pass ORDER BY correlation) - 1 AS layer
    FROM (
        SELECT trace_id, forward_pass, correlation
        FROM pk k
        WHERE correlation IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM groups g
                          WHERE g.trace_id = k.trace_id AND g.forward_pass = k.forward_pass)
        GROUP BY trace_id, forward_pass, correlation
        HAVING count(*) >= 70
           AND bool_or(regexp_matches(lower(name), 'attention|fmha'))
           AND bool_or(regexp_matches(lower(name), 'cijk_|nvjet|wvsplitk|gemm'))
    )
), by_corr AS (
    SELECT k.trace_id, k.kernel_id, k.forward_pass, c.layer, k.seq, 'correlation' AS layer_source,
           NULL::VARCHAR AS layer_module
    FROM pk k
    JOIN corr_groups c USING (trace_id, forward_pass, correlation)
), by_module AS (
    -- module rule: the layer calls in the pass, in order
    SELECT trace_id, kernel_id, forward_pass,
           dense_rank() OVER (PARTITION BY trace_id, forward_pass ORDER BY layer_ts_ns, layer_call) - 1 AS layer,
           seq, 'module' AS layer_source, layer_module
    FROM pk WHERE layer_call IS NOT NULL
), module_passes AS (
    -- passes the module rule splits: some kernel runs in a layer module, and at least half of the
    -- pass's marker kernels do (a pipeline whose compiled transformer records no module frames
    -- keeps the marker rule, though its text encoders' layers have frames)
    SELECT trace_id, forward_pass FROM pk GROUP BY ALL
    HAVING count(layer_call) > 0 AND 2 * count(*) FILTER (is_marker AND layer_call IS NOT NULL) >= count(*) FILTER (is_marker)
), by_rules AS (
    SELECT * FROM by_module SEMI JOIN module_passes USING (trace_id, forward_pass)
    UNION ALL
    SELECT l.* FROM (SELECT *, 'marker' AS layer_source, NULL::VARCHAR AS layer_module
                     FROM by_marker WHERE layer IS NOT NULL
                     UNION ALL SELECT * FROM by_corr) l
    ANTI JOIN module_passes USING (trace_id, forward_pass)
)
SELECT k.trace_id, k.kernel_id, p.forward_pass, l.layer,
       CASE WHEN l.layer IS NOT NULL THEN
           row_number() OVER (PARTITION BY k.trace_id, p.forward_pass, l.layer ORDER BY l.seq) - 1 END AS position,
       l.layer_source, l.layer_module
FROM kernels k
LEFT JOIN pk p USING (trace_id, kernel_id)
LEFT JOIN by_rules l USING (trace_id, kernel_id)
WHERE _in_scope(k.trace_id);

-- Layer of every GPU kernel (stored in kernel_facts).
-- Columns:
--   trace_id      trace the kernel belongs to
--   kernel_id     row of kernels
--   forward_pass  the forward pass (kernel_phases.iteration, or a call of the outermost module in a step
--                 that runs it several times; without steps, the outermost module call, else 0)
--   layer         0-based layer within the pass; NULL before the first layer and after the last
--   position      0-based place of the kernel within its layer (NULL when layer is NULL)
--   layer_source  the rule that gave the layer: module (the model's layer module frames), marker
--                 (attention/SSM marker kernels) or correlation (large correlation groups); NULL
--                 outside layers
--   layer_module  the layer's module as the trace names it (BertLayer_3) for a module layer
CREATE OR REPLACE VIEW kernel_layers AS
SELECT trace_id, kernel_id, forward_pass, layer, position, layer_source, layer_module FROM kernel_facts;
