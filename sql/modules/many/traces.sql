-- include: classify.align
-- include: core.params
-- include: core.selection

-- Many traces at once: the traces a list of names or patterns selects, each operation's time across
-- them (compare_traces), and across traces ordered by a parameter or by load time (trend_ops).

-- The traces a list of names, #ids or glob patterns ('h100_*') selects, in the order the list
-- names them (a pattern's traces by id), each once (table macro).
-- Parameters: wanted: a list of texts.
-- Columns:
--   trace_id  trace selected
--   trace     its name
--   position  1 for the first trace (the one the others are compared with), 2, ...
CREATE OR REPLACE MACRO chosen_traces(wanted) AS TABLE
WITH w AS (SELECT unnest(wanted) AS want, generate_subscripts(wanted, 1) AS i)
SELECT trace_id, name AS trace, row_number() OVER (ORDER BY min(w.i), trace_id) AS position
FROM traces t JOIN w ON is_trace(t.name, t.trace_id, w.want)
                     OR (regexp_matches(w.want, '[*?\[]') AND t.name GLOB w.want)
GROUP BY trace_id, name;

-- Per operation and trace: kernels and time on each of the traces selected, with the ratio to the
-- first (table macro). An operation a trace does not run has a row with 0 kernels there.
-- Parameters: wanted: a list of trace names, #ids or glob patterns; want_phase: prefill, decode,
-- mixed or none, NULL for every phase.
-- Columns:
--   op        operation family (a guessed fusion: its parts, as compare_ops)
--   position  the trace's place in the selection (1: the first)
--   trace     trace name
--   kernels   kernels of the operation in the trace
--   total_ns  their total time
--   avg_ns    their mean time (NULL without kernels)
--   share     total_ns over the trace's kernel time
--   ratio     total_ns over the first trace's total_ns of the operation (NULL when either has none)
CREATE OR REPLACE MACRO compare_traces(wanted, want_phase) AS TABLE
WITH c AS MATERIALIZED (SELECT * FROM chosen_traces(wanted)),
k AS (
    SELECT c.position, align_op(f.op, f.pattern) AS op, k.dur_ns
    FROM c JOIN kernels k USING (trace_id) JOIN kernel_facts f USING (trace_id, kernel_id)
    WHERE want_phase IS NULL OR f.phase = want_phase
), per AS (
    SELECT position, op, count(*) AS kernels, sum(dur_ns) AS total_ns, avg(dur_ns) AS avg_ns
    FROM k GROUP BY ALL
), grid AS (
    SELECT c.position, c.trace, o.op FROM c CROSS JOIN (SELECT DISTINCT op FROM per) o
)
SELECT g.op, g.position, g.trace, coalesce(p.kernels, 0) AS kernels, coalesce(p.total_ns, 0) AS total_ns,
       p.avg_ns,
       coalesce(p.total_ns, 0) / nullif(sum(coalesce(p.total_ns, 0)) OVER (PARTITION BY g.position), 0) AS share,
       p.total_ns / nullif(first(p.total_ns) OVER (PARTITION BY g.op ORDER BY g.position), 0) AS ratio
FROM grid g LEFT JOIN per p USING (position, op);

-- The value a trace has for a key: its parameter (tracedb load --meta KEY=VALUE, or read from its
-- path), else the top-level key of its file (a JSON text as written there), else NULL (scalar macro).
CREATE OR REPLACE MACRO trace_key(t_id, want_key) AS coalesce(
    trace_param(t_id, want_key),
    (SELECT CASE WHEN json_type(value) = 'VARCHAR' THEN value ->> '$' ELSE CAST(value AS VARCHAR) END
     FROM trace_metadata WHERE trace_id = t_id AND key = want_key ORDER BY position LIMIT 1));

-- Each operation's time across the traces selected, ordered by a key's value (numbers as numbers,
-- then texts) or, without a key, by load time (table macro).
-- Parameters: wanted: a list of trace names, #ids or glob patterns; order_key: a parameter or
-- top-level key of the traces (NULL: when each was loaded); want_phase: as compare_traces.
-- Columns:
--   op        operation family
--   step      the trace's place in the order (1: the first)
--   trace     trace name
--   key_value the trace's value of the key (its load time without a key)
--   tied      true when another trace has the same value: those follow in name order
--   kernels   kernels of the operation in the trace
--   total_ns  their total time
--   change    total_ns over the previous trace's total_ns of the operation (NULL for the first, or
--             when the previous one had none)
CREATE OR REPLACE MACRO trend_ops(wanted, order_key, want_phase) AS TABLE
WITH c AS MATERIALIZED (
    SELECT c.trace_id, c.trace,
           CASE WHEN order_key IS NULL THEN CAST(t.loaded_at AS VARCHAR) ELSE trace_key(c.trace_id, order_key) END
               AS key_value,
           t.loaded_at
    FROM chosen_traces(wanted) c JOIN traces t USING (trace_id)
), ordered AS (
    -- traces of one value of the key follow in name order (tied says so)
    SELECT *, row_number() OVER (ORDER BY TRY_CAST(key_value AS DOUBLE) NULLS LAST, key_value NULLS LAST,
                                          CASE WHEN order_key IS NULL THEN loaded_at END, trace, trace_id) AS step,
           count(*) OVER (PARTITION BY key_value) > 1 AS tied
    FROM c
), cmp AS (SELECT * FROM compare_traces((SELECT list('#' || trace_id ORDER BY step) FROM ordered), want_phase))
SELECT cmp.op, o.step, o.trace, o.key_value, o.tied, cmp.kernels, cmp.total_ns,
       cmp.total_ns / nullif(lag(cmp.total_ns) OVER (PARTITION BY cmp.op ORDER BY o.step), 0) AS change
FROM cmp JOIN ordered o ON o.step = cmp.position;

-- The text a glob pattern's wildcards matched in a name (scalar macro): 'h100_bert' against
-- 'h100_*' gives 'bert'; '?' matches one character, '*' any run; NULL when the name does not
-- match. Other characters match themselves.
CREATE OR REPLACE MACRO glob_part(name, pattern) AS
    CASE WHEN name GLOB pattern THEN regexp_replace(
        name,
        '^' || regexp_replace(regexp_replace(regexp_replace(pattern, '([.+^${}()|\[\]\\])', '\\\1', 'g'),
                                             '\*', '(.*)', 'g'), '\?', '(.)', 'g') || '$',
        array_to_string(list_transform(range(1, 1 + length(pattern) - length(replace(replace(pattern, '*', ''), '?', ''))),
                                       lambda i: '\' || i), ''))
    END;

-- Traces paired across two name patterns by what their wildcards matched (table macro): with
-- 'h100_*' and 'mi300_*', h100_bert-small pairs with mi300_bert-small. A trace the other pattern
-- has no partner for is listed alone.
-- Parameters: pattern_a, pattern_b: glob patterns of trace names.
-- Columns:
--   pair        1, 2, ... in the order of the matched part
--   key         what the wildcards matched ('bert-small')
--   a_trace_id  A's trace (NULL when only B has the key)
--   a_trace     its name
--   b_trace_id  B's trace (NULL when only A has it)
--   b_trace     its name
CREATE OR REPLACE MACRO trace_pairs(pattern_a, pattern_b) AS TABLE
WITH a AS (
    SELECT trace_id, name, glob_part(name, pattern_a) AS key FROM traces WHERE name GLOB pattern_a
), b AS (
    SELECT trace_id, name, glob_part(name, pattern_b) AS key FROM traces WHERE name GLOB pattern_b
), a1 AS (SELECT * FROM a QUALIFY row_number() OVER (PARTITION BY key ORDER BY trace_id DESC) = 1),
b1 AS (SELECT * FROM b QUALIFY row_number() OVER (PARTITION BY key ORDER BY trace_id DESC) = 1)
SELECT row_number() OVER (ORDER BY coalesce(a1.key, b1.key)) AS pair, coalesce(a1.key, b1.key) AS key,
       a1.trace_id AS a_trace_id, a1.name AS a_trace, b1.trace_id AS b_trace_id, b1.name AS b_trace
FROM a1 FULL JOIN b1 ON a1.key = b1.key AND a1.trace_id IS DISTINCT FROM b1.trace_id;

-- Each operation of each pair of traces (trace_pairs) side by side (table macro): calls and time
-- on either side, as compare_ops counts them.
-- Parameters: pattern_a, pattern_b: glob patterns of trace names; want_phase: as compare_ops.
-- Columns:
--   pair        the pair (trace_pairs)
--   key         what the wildcards matched
--   a_trace     A's trace name
--   b_trace     B's trace name
--   op          operation family
--   a_calls     calls of the operation in A
--   b_calls     calls in B
--   a_total_ns  A's kernel time in the operation
--   b_total_ns  B's
--   gap_ns      a_total_ns - b_total_ns
--   ratio       mean time of a call in A over B's
CREATE OR REPLACE MACRO compare_pairs(pattern_a, pattern_b, want_phase) AS TABLE
WITH p AS MATERIALIZED (SELECT * FROM trace_pairs(pattern_a, pattern_b) WHERE a_trace_id IS NOT NULL AND b_trace_id IS NOT NULL),
ids AS (SELECT a_trace_id AS trace_id FROM p UNION SELECT b_trace_id FROM p),
per AS (
    SELECT f.trace_id, align_op(f.op, f.pattern) AS op, count(DISTINCT coalesce(f.call_id, f.kernel_id)) AS calls,
           sum(k.dur_ns) AS total_ns
    FROM ids JOIN kernel_facts f USING (trace_id) JOIN kernels k USING (trace_id, kernel_id)
    WHERE want_phase IS NULL OR f.phase = want_phase
    GROUP BY ALL
)
, sides AS (
    SELECT p.pair, p.key, p.a_trace, p.b_trace, 'A' AS side, per.op, per.calls, per.total_ns
    FROM p JOIN per ON per.trace_id = p.a_trace_id
    UNION ALL
    SELECT p.pair, p.key, p.a_trace, p.b_trace, 'B' AS side, per.op, per.calls, per.total_ns
    FROM p JOIN per ON per.trace_id = p.b_trace_id
), both_sides AS (
    SELECT pair, key, a_trace, b_trace, op,
           coalesce(sum(calls) FILTER (side = 'A'), 0) AS a_calls, coalesce(sum(calls) FILTER (side = 'B'), 0) AS b_calls,
           coalesce(sum(total_ns) FILTER (side = 'A'), 0) AS a_total_ns,
           coalesce(sum(total_ns) FILTER (side = 'B'), 0) AS b_total_ns
    FROM sides GROUP BY ALL
)
SELECT pair, key, a_trace, b_trace, op, a_calls, b_calls, a_total_ns, b_total_ns, a_total_ns - b_total_ns AS gap_ns,
       (a_total_ns / nullif(a_calls, 0)) / nullif(b_total_ns / nullif(b_calls, 0), 0) AS ratio
FROM both_sides;
