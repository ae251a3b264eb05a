-- Layers of one trace: each forward pass split into model layers at layer-marker kernels.
--
-- A forward pass is a kernel's iteration (kernel_phases: a phase step, else a ProfilerStep, else
-- a step found from the model's frames), or the whole trace when no kernel of it is in a step.
-- Markers are the kernels whose operation marks a layer: Attention for transformers, SSM for
-- state-space models (a hybrid has both). Consecutive marker kernels form one marker group, so an attention that runs as several
-- kernels (QKV + reduce, split-KV + combine) counts once; a pass with L marker groups has L layers.
--
-- Where a layer starts: the kernels that lead to the first marker (norm, QKV GEMM, rotary, cache
-- write) repeat at the end of every gap between markers. Their count is the longest n for which
-- the last n kernels before the first marker and the last n kernels of the first gap run the same
-- operations; that many kernels before each marker group belong to its layer. The rest of a gap belongs to the layer
-- before, and after the last marker group only as many kernels as the last gap leaves to its
-- layer are taken (the rest: final norm, LM head, sampling). Kernels outside layers get NULL.
-- A pass without markers falls back to the seed loader's rule: every correlation group of 70+
-- kernels holding an attention and a GEMM kernel is a layer.

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

-- Kernels of each forward pass in order, with their marker groups.
-- Columns:
--   trace_id      trace
--   kernel_id     row of kernels
--   forward_pass  iteration of the kernel, 0 for a trace without steps, NULL outside
--   seq           1, 2, ... in start order within the pass
--   op            operation family
--   is_marker     true for a layer-marker kernel
--   grp           marker groups started at or before this kernel in the pass (0 before the first)
--   correlation   correlation id of the kernel
--   name          kernel name
CREATE OR REPLACE VIEW _pass_kernels AS
WITH stepped AS (
    SELECT DISTINCT trace_id FROM kernel_phases WHERE iteration IS NOT NULL
), passes AS (
    SELECT k.trace_id, k.kernel_id, k.correlation, k.name, k.ts_ns, o.op,
           CASE WHEN a.trace_id IS NULL THEN 0 ELSE p.iteration END AS forward_pass,
           o.op IN ('Attention', 'SSM') AS is_marker
    FROM kernels k
    JOIN kernel_ops o USING (trace_id, kernel_id)
    JOIN kernel_phases p USING (trace_id, kernel_id)
    LEFT JOIN stepped a USING (trace_id)
    WHERE _in_scope(k.trace_id)
), seqd AS (
    SELECT *, row_number() OVER (PARTITION BY trace_id, forward_pass ORDER BY ts_ns, kernel_id) AS seq
    FROM passes
), starts AS (
    SELECT *, is_marker AND NOT coalesce(lag(is_marker) OVER w, false) AS group_start
    FROM seqd WINDOW w AS (PARTITION BY trace_id, forward_pass ORDER BY seq)
)
SELECT trace_id, kernel_id, forward_pass, seq, op, is_marker,
       sum(group_start::INTEGER) OVER (PARTITION BY trace_id, forward_pass ORDER BY seq) AS grp,
       correlation, name
FROM starts
WHERE forward_pass IS NOT NULL;

-- Layer of every GPU kernel, computed from the stored operations and phases (kernel_layers holds
-- the stored result).
-- Columns:
--   trace_id      trace the kernel belongs to
--   kernel_id     row of kernels
--   forward_pass  the forward pass (kernel_phases.iteration; 0 when the trace has no steps)
--   layer         0-based layer within the pass; NULL before the first layer and after the last
--   position      0-based place of the kernel within its layer (NULL when layer is NULL)
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
    SELECT k.trace_id, k.kernel_id, k.forward_pass, c.layer, k.seq
    FROM pk k
    JOIN corr_groups c USING (trace_id, forward_pass, correlation)
)
SELECT k.trace_id, k.kernel_id, p.forward_pass, l.layer,
       CASE WHEN l.layer IS NOT NULL THEN
           row_number() OVER (PARTITION BY k.trace_id, p.forward_pass, l.layer ORDER BY l.seq) - 1 END AS position
FROM kernels k
LEFT JOIN pk p USING (trace_id, kernel_id)
LEFT JOIN (SELECT * FROM by_marker WHERE layer IS NOT NULL
           UNION ALL SELECT * FROM by_corr) l USING (trace_id, kernel_id)
WHERE _in_scope(k.trace_id);

-- Layer of every GPU kernel (stored in kernel_facts).
-- Columns:
--   trace_id      trace the kernel belongs to
--   kernel_id     row of kernels
--   forward_pass  the forward pass (kernel_phases.iteration; 0 when the trace has no steps)
--   layer         0-based layer within the pass; NULL before the first layer and after the last
--   position      0-based place of the kernel within its layer (NULL when layer is NULL)
CREATE OR REPLACE VIEW kernel_layers AS
SELECT trace_id, kernel_id, forward_pass, layer, position FROM kernel_facts;
