-- Where the reports start: kernels with their stored facts, filtered by trace and phase.

-- True when a trace (its name and id) is the one a user named (scalar macro): the one rule every
-- --trace, --vs and macro parameter follows. A text names a trace by its name, or by its id written
-- '#ID' ('1' is the trace named 1, '#1' the trace of id 1); an integer is an id.
CREATE OR REPLACE MACRO is_trace(t_name, t_id, want) AS
    CASE WHEN typeof(want) IN ('TINYINT', 'SMALLINT', 'INTEGER', 'BIGINT', 'HUGEINT',
                               'UTINYINT', 'USMALLINT', 'UINTEGER', 'UBIGINT')
         THEN CAST(t_id AS VARCHAR) = CAST(want AS VARCHAR)
         ELSE t_name = CAST(want AS VARCHAR) OR '#' || CAST(t_id AS VARCHAR) = CAST(want AS VARCHAR) END;

-- The ids of the traces a name selects, for the macros that take a list of ids (scalar macro):
-- NULL (every trace) when want is NULL, [] when it names no trace.
CREATE OR REPLACE MACRO wanted_ids(want) AS
    CASE WHEN want IS NOT NULL THEN
        (SELECT coalesce(list(trace_id), []) FROM traces WHERE is_trace(name, trace_id, want)) END;

-- Kernels of the selected traces and phase with their facts (table macro).
-- Parameters: want_trace: trace name or #id, NULL for every trace; want_phase: prefill, decode,
-- mixed or none, NULL for every phase.
-- Columns: trace_id, trace (name), kernel_id, name (kernel name), ts_ns, end_ns, dur_ns, and the
-- kernel_facts columns op, pattern, phase, phase_source, iteration, annotation, launch_id, cpu_op,
-- stack_id, forward_pass, layer, position, occurrence, prev_op, call_id.
CREATE OR REPLACE MACRO selected_kernels(want_trace, want_phase) AS TABLE
SELECT t.trace_id, t.name AS trace, k.kernel_id, k.name, k.ts_ns, k.ts_ns + k.dur_ns AS end_ns, k.dur_ns,
       f.op, f.pattern, f.phase, f.phase_source, f.iteration, f.annotation, f.launch_id, f.cpu_op, f.stack_id,
       f.forward_pass, f.layer, f.position, f.occurrence, f.prev_op, f.call_id
FROM kernels k
JOIN kernel_facts f USING (trace_id, kernel_id)
JOIN traces t USING (trace_id)
WHERE (want_trace IS NULL OR is_trace(t.name, t.trace_id, want_trace))
  AND (want_phase IS NULL OR f.phase = want_phase);

-- The traces of a comparison, each with its side (table macro): A is the trace trace_a names, B
-- the one trace_b names (NULL: no trace on that side).
-- Columns:
--   side      'A' or 'B'
--   trace_id  the side's trace
--   name      its name
CREATE OR REPLACE MACRO compared_sides(trace_a, trace_b) AS TABLE
SELECT 'A' AS side, trace_id, name FROM traces WHERE trace_a IS NOT NULL AND is_trace(name, trace_id, trace_a)
UNION ALL
SELECT 'B', trace_id, name FROM traces WHERE trace_b IS NOT NULL AND is_trace(name, trace_id, trace_b);
