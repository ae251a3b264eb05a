-- Kernel classification: every GPU kernel gets exactly one operation family, from the rules in
-- kernel_rules (sql/rules/kernel_rules.csv plus any rules the user added).
-- Rules are matched against distinct kernel names, not against every kernel, so classifying a
-- trace of millions of kernels costs one pass over its few hundred names.

-- Kernel rules in the order they are tried: user rules before built-in ones, then by priority.
-- Columns:
--   rank      order of trial (1 first)
--   source    'builtin' or the user's rules file
--   priority  priority within the source
--   platform  NVIDIA, AMD or any
--   match     prefix, contains or regex
--   pattern   text or RE2 expression as written
--   needle    lower-cased pattern, for the case-insensitive prefix and contains matches
--   op        operation family
--   label     name of the rule
CREATE OR REPLACE VIEW _kernel_rules_ordered AS
SELECT row_number() OVER (ORDER BY source = 'builtin', priority, source, label, pattern) AS rank,
       source, priority, platform, match, pattern, lower(pattern) AS needle, op, label
FROM kernel_rules;

-- Operation of each distinct kernel name on each platform: the first rule that matches, else
-- "Other" labelled with the start of the name (as the seed classifier does).
-- Columns:
--   platform  platform of the traces holding the name (NVIDIA, AMD, ...; 'unknown' when NULL)
--   name      kernel name ('' when the kernel had none)
--   op        operation family
--   pattern   label of the matching rule, or the first 40 characters of the name for "Other"
--   source    source of the matching rule (NULL for "Other")
CREATE OR REPLACE VIEW kernel_name_ops AS
WITH names AS (
    SELECT DISTINCT coalesce(t.platform, 'unknown') AS platform, coalesce(k.name, '') AS name
    FROM kernels k JOIN traces t USING (trace_id)
), hits AS (
    SELECT n.platform, n.name, arg_min(r, r.rank) AS r
    FROM names n
    JOIN _kernel_rules_ordered r
      ON (r.platform = 'any' OR r.platform = n.platform)
     AND CASE r.match
             WHEN 'prefix' THEN starts_with(lower(n.name), r.needle)
             WHEN 'contains' THEN contains(lower(n.name), r.needle)
             WHEN 'regex' THEN regexp_matches(n.name, r.pattern)
             ELSE false
         END
    GROUP BY n.platform, n.name
)
SELECT n.platform, n.name,
       coalesce(h.r.op, 'Other') AS op,
       coalesce(h.r.label, left(n.name, 40)) AS pattern,
       h.r.source AS source
FROM names n LEFT JOIN hits h USING (platform, name);

-- Operation of every GPU kernel, computed from the current rules (kernel_ops holds the stored
-- result; the two agree until the rules change, and tracedb refresh brings them together).
-- Columns:
--   trace_id   trace the kernel belongs to
--   kernel_id  row of kernels
--   op         operation family ("Dense GEMM", "Attention", ...; "Other" when no rule matched)
--   pattern    the rule that matched (its label), for showing which names fell where
CREATE OR REPLACE VIEW _kernel_ops_live AS
SELECT k.trace_id, k.kernel_id, o.op, o.pattern
FROM kernels k
JOIN traces t USING (trace_id)
JOIN kernel_name_ops o ON o.platform = coalesce(t.platform, 'unknown') AND o.name = coalesce(k.name, '');

-- Operation of every GPU kernel (stored in kernel_facts when the trace was loaded or refreshed).
-- Columns:
--   trace_id   trace the kernel belongs to
--   kernel_id  row of kernels
--   op         operation family ("Dense GEMM", "Attention", ...; "Other" when no rule matched)
--   pattern    the rule that matched (its label), for showing which names fell where
CREATE OR REPLACE VIEW kernel_ops AS
SELECT trace_id, kernel_id, op, pattern FROM kernel_facts;
