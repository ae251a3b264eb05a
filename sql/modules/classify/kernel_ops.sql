-- include: core.events

-- Kernel classification: every GPU kernel gets exactly one operation family, from the rules in
-- kernel_rules (sql/rules/kernel_rules.csv plus any rules the user added), in this order:
-- 1. context rules (match cpu_op, collective, annotation): what the kernel was launched for
--    refines the family its name gives (a generic RCCL kernel launched for an allreduce is an
--    All-Reduce); only for the kernels of the families they cover;
-- 2. name rules in rank order: inductor rules read the operations an Inductor kernel's name lists
--    (triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_0 is an RMSNorm), the others match the name;
-- 3. the fused-name heuristic (match fusion), then "Other".
-- Name rules are matched against distinct kernel names, not against every kernel, so classifying
-- a trace of millions of kernels costs one pass over its few hundred names; context rules read
-- the context of the few kernels they cover.

-- Kernel rules in the order they are tried: user rules before built-in ones, then by priority (the
-- order is total, so that a rank names the same rule in every query: the written-out macros below
-- hold ranks).
-- Columns:
--   rank      order of trial (1 first)
--   source    'builtin' or the user's rules file
--   priority  priority within the source
--   platform  NVIDIA, AMD or any
--   match     name rules: prefix, contains, regex, inductor or fusion; context rules: cpu_op,
--             collective or annotation
--   pattern   text or RE2 expression as written
--   needle    lower-cased pattern, for the case-insensitive prefix and contains matches
--   op        operation family
--   label     name of the rule
--   covers    context rules: the family (given by the name rules) they refine, * for any
CREATE OR REPLACE VIEW _kernel_rules_ordered AS
SELECT row_number() OVER (ORDER BY source = 'builtin', priority, source, label, pattern, platform, match, op, covers)
           AS rank,
       source, priority, platform, match, pattern, lower(pattern) AS needle, op, label, covers
FROM kernel_rules;

-- The operations an Inductor kernel's name lists: 'add_mean_mul_pow_rsqrt' of
-- triton_red_fused_add_mean_mul_pow_rsqrt_0 (Inductor names a pointwise, reduction or persistent
-- reduction kernel after the aten operations it fuses, sorted); '' for any other name.
CREATE OR REPLACE MACRO inductor_ops(name) AS
    regexp_extract(name, '^triton_(?:poi|red|per)_fused_(.+)_[0-9]+$', 1);

-- The ranks (in _kernel_rules_ordered) of the regex rules a kernel name matches on its platform
-- (scalar macro). This definition reads the rules table; tracedb replaces it before every
-- derivation and whenever rules are loaded by one with each rule's pattern written out
-- (tracedb.facts.refresh_regex_rules), so that each pattern is compiled once per query rather
-- than once per name: the same result.
-- Generated: tracedb.facts.refresh_regex_rules writes this macro out; the text here is its placeholder.
CREATE OR REPLACE MACRO _regex_rule_hits(kernel_name, kernel_platform) AS (
    SELECT coalesce(list(rank ORDER BY rank), []) FROM _kernel_rules_ordered r
    WHERE r.match = 'regex' AND (r.platform = 'any' OR r.platform = kernel_platform)
      AND regexp_matches(kernel_name, r.pattern)
);

-- A digest of the rule macros tracedb last wrote out (_regex_rule_hits, _inductor_rule_hits,
-- _context_rule_hits, _step_frame_rule_hits), '' until it has: a derivation rewrites them only when
-- the rules give other texts (tracedb.facts.refresh_regex_rules; scalar macro).
-- Generated: tracedb.facts.refresh_regex_rules writes this macro out; the text here is its placeholder.
CREATE OR REPLACE MACRO _rule_hits_digest() AS '';

-- The ranks of the inductor rules the operations of an Inductor kernel's name (inductor_ops)
-- match on its platform (scalar macro); replaced like _regex_rule_hits, for the same reason.
-- Generated: tracedb.facts.refresh_regex_rules writes this macro out; the text here is its placeholder.
CREATE OR REPLACE MACRO _inductor_rule_hits(fused_ops, kernel_platform) AS (
    SELECT coalesce(list(rank ORDER BY rank), []) FROM _kernel_rules_ordered r
    WHERE r.match = 'inductor' AND (r.platform = 'any' OR r.platform = kernel_platform)
      AND regexp_matches(fused_ops, r.pattern)
);

-- Operation of each distinct kernel name on each platform: the first rule that matches, else
-- "Other" labelled with the start of the name (as the seed classifier does). A rule of match
-- 'fusion' is the seed's fusion heuristic: it matches a name that contains its pattern and
-- names two or more operations by keyword (rmsnorm, layernorm, rsqrt, swiglu, silu, gelu, relu,
-- gemm, matmul, mm_, softmax, attention, reduce, embedding); the kernel is then labelled with
-- those operations joined by '+' (e.g. 'RMSNorm+GEMM'), without a generic Norm beside RMSNorm or
-- LayerNorm, or SiLU beside SwiGLU.
-- Columns:
--   platform  platform of the traces holding the name (NVIDIA, AMD, ...; 'unknown' when NULL)
--   name      kernel name ('' when the kernel had none)
--   op        operation family
--   pattern   label of the matching rule, the named operations for a 'fusion' rule, or the first
--             40 characters of the name for "Other"
--   source    source of the matching rule (NULL for "Other")
--   decided_by  inductor (an inductor rule), fusion (the fused-name heuristic), name (another name
--               rule) or none (no rule matched: Other)
CREATE OR REPLACE VIEW kernel_name_ops AS
WITH names AS (
    SELECT platform, name, lower(name) AS lname, _regex_rule_hits(name, platform) AS regex_hits,
           CASE WHEN inductor_ops(name) <> '' THEN _inductor_rule_hits(inductor_ops(name), platform)
                ELSE [] END AS inductor_hits
    FROM (SELECT DISTINCT coalesce(t.platform, 'unknown') AS platform, coalesce(k.name, '') AS name
          FROM kernels k JOIN traces t USING (trace_id)
          WHERE _in_scope(k.trace_id))
), keywords(ord, keyword, part) AS (
    VALUES (1, 'embedding', 'Embedding'), (2, 'rmsnorm', 'RMSNorm'), (3, 'layernorm', 'LayerNorm'),
           (4, 'rsqrt', 'Norm'), (5, 'swiglu', 'SwiGLU'), (6, 'silu', 'SiLU'), (7, 'gelu', 'GELU'),
           (8, 'relu', 'ReLU'), (9, 'gemm', 'GEMM'), (10, 'matmul', 'GEMM'), (11, 'mm_', 'GEMM'),
           (12, 'softmax', 'Softmax'), (13, 'attention', 'Attention'), (14, 'reduce', 'Reduce')
), named AS (
    -- the operations each name names, in keyword order
    SELECT platform, name, list(part ORDER BY ord) AS parts
    FROM (SELECT n.platform, n.name, kw.part, min(kw.ord) AS ord
          FROM names n JOIN keywords kw ON contains(n.lname, kw.keyword)
          GROUP BY n.platform, n.name, kw.part)
    GROUP BY platform, name
), fused AS (
    SELECT platform, name, array_to_string(parts, '+') AS parts
    FROM (SELECT platform, name,
                 list_filter(parts, lambda p: NOT (p = 'Norm' AND (list_contains(parts, 'RMSNorm') OR list_contains(parts, 'LayerNorm')))
                                          AND NOT (p = 'SiLU' AND list_contains(parts, 'SwiGLU'))) AS parts
          FROM named)
    WHERE len(parts) >= 2
), hits AS (
    SELECT n.platform, n.name, arg_min(r, r.rank) AS r
    FROM names n
    LEFT JOIN fused f USING (platform, name)
    JOIN _kernel_rules_ordered r
      ON (r.platform = 'any' OR r.platform = n.platform)
     AND CASE r.match
             WHEN 'prefix' THEN starts_with(n.lname, r.needle)
             WHEN 'contains' THEN contains(n.lname, r.needle)
             WHEN 'regex' THEN list_contains(n.regex_hits, r.rank)
             WHEN 'inductor' THEN list_contains(n.inductor_hits, r.rank)
             WHEN 'fusion' THEN f.parts IS NOT NULL AND contains(n.lname, r.needle)
             ELSE false
         END
    GROUP BY n.platform, n.name
)
SELECT n.platform, n.name,
       coalesce(h.r.op, 'Other') AS op,
       coalesce(CASE WHEN h.r.match = 'fusion' THEN f.parts ELSE h.r.label END, left(n.name, 40)) AS pattern,
       h.r.source AS source,
       CASE WHEN h.r.match IS NULL THEN 'none' WHEN h.r.match IN ('inductor', 'fusion') THEN h.r.match
            ELSE 'name' END AS decided_by
FROM names n LEFT JOIN hits h USING (platform, name) LEFT JOIN fused f USING (platform, name);

-- Operation of every GPU kernel (stored in kernel_facts when the trace was loaded or refreshed).
-- Columns:
--   trace_id    trace the kernel belongs to
--   kernel_id   row of kernels
--   op          operation family ("Dense GEMM", "Attention", ...; "Other" when no rule matched)
--   pattern     the rule that matched (its label), for showing which names fell where
--   decided_by  what decided: cpu_op, collective or annotation (a context rule: what the kernel
--               was launched for), inductor (the operations an Inductor name lists), name (a name
--               rule), fusion (the fused-name heuristic), none (no rule matched: Other)
CREATE OR REPLACE VIEW kernel_ops AS
SELECT trace_id, kernel_id, op, pattern, decided_by FROM kernel_facts WHERE _in_scope(trace_id);

-- What a GEMM library's helper kernel does for the GEMM it follows, from its name (scalar macro):
-- 'split-K reduction' for cuBLAS/cuBLASLt's splitKreduce_kernel and CUTLASS's ReduceSplitK (a GEMM
-- split over K sums its partial results in a second kernel), 'GSU reduction' for hipBLASLt/Tensile's
-- ..._PostGSU<n>... kernels (the same after a global split-U GEMM); NULL for any other kernel.
-- Such a kernel belongs to the GEMM call before it (kernel_facts.call_id).
CREATE OR REPLACE MACRO gemm_helper(name) AS
CASE WHEN contains(name, 'splitKreduce') OR contains(name, 'ReduceSplitK') THEN 'split-K reduction'
     WHEN regexp_matches(name, '_PostGSU[0-9]') THEN 'GSU reduction'
END;
