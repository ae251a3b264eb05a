-- include: classify.kernel_ops
-- include: classify.launches
-- include: core.events

-- Each kernel's operation from the current rules: the context rules of kernel_rules for the
-- kernels they cover (they need each kernel's launch, sql/modules/classify/launches.sql), else the
-- operation of its name (kernel_name_ops, sql/modules/classify/kernel_ops.sql). The order is explained
-- at the top of sql/modules/classify/kernel_ops.sql.

-- The ranks (in _kernel_rules_ordered) of the context rules (match cpu_op, collective or
-- annotation) whose pattern the text of a context of that kind matches (scalar macro). Like
-- _regex_rule_hits (sql/modules/classify/kernel_ops.sql), tracedb replaces this definition before every
-- derivation with one that writes each pattern out (tracedb.facts.refresh_regex_rules), so that
-- a pattern is compiled once per query rather than once per text: the same result.
-- Generated: tracedb.facts.refresh_regex_rules writes this macro out; the text here is its placeholder.
CREATE OR REPLACE MACRO _context_rule_hits(context_kind, context_text) AS (
    SELECT coalesce(list(rank ORDER BY rank), []) FROM _kernel_rules_ordered r
    WHERE r.match = context_kind AND regexp_matches(context_text, r.pattern)
);

-- Operation of every GPU kernel, computed from the current rules (kernel_ops holds the stored
-- result; the two agree until the rules change, and tracedb refresh brings them together): the
-- first context rule matching what the kernel was launched for, else its name's operation. What
-- a covered kernel was launched for: its launching cpu_op, the Collective name of a launching
-- record_param_comms, and every annotation enclosing the kernel on its device or its launch on
-- the launching thread (nccl:all_reduce, ...).
-- Columns:
--   trace_id    trace the kernel belongs to
--   kernel_id   row of kernels
--   op          operation family ("Dense GEMM", "Attention", ...; "Other" when no rule matched)
--   pattern     the rule that matched (its label), for showing which names fell where
--   decided_by  cpu_op, collective or annotation (a context rule), inductor, name, fusion or none
CREATE OR REPLACE VIEW _kernel_ops_live AS
WITH named AS MATERIALIZED (
    -- each kernel with the operation its name gives: computed once, for every kernel
    SELECT k.trace_id, k.kernel_id, k.pid, k.ts_ns, coalesce(t.platform, 'unknown') AS platform,
           o.op, o.pattern, o.decided_by
    FROM kernels k
    JOIN traces t USING (trace_id)
    JOIN kernel_name_ops o ON o.platform = coalesce(t.platform, 'unknown') AND o.name = coalesce(k.name, '')
    WHERE _in_scope(k.trace_id)
), launched AS (
    -- the kernels some context rule covers, with their launch
    SELECT n.*, l.cpu_op, l.cpu_op_id, l.pid AS cpu_pid, l.tid AS cpu_tid, l.launch_ts_ns
    FROM named n LEFT JOIN kernel_launches l USING (trace_id, kernel_id)
    WHERE EXISTS (SELECT 1 FROM kernel_rules r
                  WHERE r.match IN ('cpu_op', 'collective', 'annotation') AND (r.covers = '*' OR r.covers = n.op))
), contexts(trace_id, kernel_id, platform, name_op, context, text) AS MATERIALIZED (
    SELECT trace_id, kernel_id, platform, op, 'cpu_op', cpu_op FROM launched WHERE cpu_op IS NOT NULL
    UNION ALL
    SELECT l.trace_id, l.kernel_id, l.platform, l.op, 'collective', o.args->>'Collective name'
    FROM launched l JOIN cpu_ops o ON o.trace_id = l.trace_id AND o.event_id = l.cpu_op_id
    WHERE o.args->>'Collective name' IS NOT NULL AND _in_scope(o.trace_id)
    UNION ALL
    SELECT l.trace_id, l.kernel_id, l.platform, l.op, 'annotation', a.name
    FROM launched l JOIN annotations a
      ON a.trace_id = l.trace_id
     AND ((a.on_gpu AND a.pid = l.pid AND a.ts_ns <= l.ts_ns AND l.ts_ns < a.ts_ns + coalesce(a.dur_ns, 0))
       OR (NOT a.on_gpu AND a.pid = l.cpu_pid AND a.tid = l.cpu_tid
           AND a.ts_ns <= l.launch_ts_ns AND l.launch_ts_ns <= a.ts_ns + coalesce(a.dur_ns, 0)))
    WHERE _in_scope(a.trace_id)
), matched AS (
    -- the context rules each distinct text matches, found once per text (a few hundred), not
    -- once per kernel
    SELECT context, text, unnest(_context_rule_hits(context, text)) AS rank
    FROM (SELECT DISTINCT context, text FROM contexts)
), by_context AS (
    SELECT c.trace_id, c.kernel_id, arg_min(r, r.rank) AS r
    FROM contexts c
    JOIN matched m ON m.context = c.context AND m.text = c.text
    JOIN _kernel_rules_ordered r
      ON r.rank = m.rank AND (r.covers = '*' OR r.covers = c.name_op)
     AND (r.platform = 'any' OR r.platform = c.platform)
    GROUP BY c.trace_id, c.kernel_id
)
SELECT n.trace_id, n.kernel_id, coalesce(b.r.op, n.op) AS op, coalesce(b.r.label, n.pattern) AS pattern,
       coalesce(b.r.match, n.decided_by) AS decided_by
FROM named n
LEFT JOIN by_context b USING (trace_id, kernel_id);
