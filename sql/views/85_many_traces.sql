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
--   ratio     total_ns over the first trace's total_ns of the operation (NULL when the first has none)
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
       coalesce(p.total_ns, 0) / nullif(first(p.total_ns) OVER (PARTITION BY g.op ORDER BY g.position), 0) AS ratio
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
    SELECT *, row_number() OVER (ORDER BY TRY_CAST(key_value AS DOUBLE) NULLS LAST, key_value NULLS LAST,
                                          loaded_at, trace_id) AS step
    FROM c
), cmp AS (SELECT * FROM compare_traces((SELECT list('#' || trace_id ORDER BY step) FROM ordered), want_phase))
SELECT cmp.op, o.step, o.trace, o.key_value, cmp.kernels, cmp.total_ns,
       cmp.total_ns / nullif(lag(cmp.total_ns) OVER (PARTITION BY cmp.op ORDER BY o.step), 0) AS change
FROM cmp JOIN ordered o ON o.step = cmp.position;
