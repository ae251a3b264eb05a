-- include: core.params
-- include: core.selection

-- TensorCast performance model against an Ascend profile, per kernel type: the comparison of
-- TensorCast's generate_op_comparison.py, in SQL. The model side is a TensorCast trace (format
-- tensorcast: its operators in other_events, their parsed sub_kernel_durations in tc_sub_kernels)
-- with an op_mapping.yaml (op_mappings); the measured side is any trace with kernels, normally an
-- Ascend profiler CSV (kernel types from ascend_kernels.op_type). Durations are summed exactly in
-- nanoseconds and rounded half to even from the exact value at the end (the script rounds
-- binary floats, which can differ by 0.1 on an exact tie such as 1275.35).

-- Operators of TensorCast traces: every X event of a trace of format tensorcast.
-- Columns:
--   trace_id           trace of the operator
--   event_id           its event (other_events)
--   pid                process of the event
--   process_name       name of that process (process_name metadata), NULL when unnamed
--   name               operator, e.g. torch.ops.aten.mm.default
--   short_name         name without torch.ops. (the name op mappings and the report use)
--   ts_ns              start, nanoseconds
--   dur_ns             modelled duration, nanoseconds
--   kernel_type        arg kernel_type as text: the profile kernel type(s) the model found, comma-joined for a composite operator; NULL for an analytic (MISS) operator (a JSON true/false reads True/False, as the script's str() writes them; any other non-text value its JSON text)
--   hit                true when kernel_type holds a kernel type: a true value in Python's sense (not '', 0, false, [] or {}) other than '?'
--   source             arg source (MEASURED, INTERPOLATED, ...)
--   composite          arg composite as text
--   sub_kernel_status  valid, empty or malformed for an operator with sub_kernel_durations (tc_sub_kernel_lists), else NULL
CREATE OR REPLACE VIEW tc_ops AS
WITH names AS (
    SELECT trace_id, pid, arg_min(value, event_id) AS process_name
    FROM metadata_events WHERE name = 'process_name'
    GROUP BY trace_id, pid
)
SELECT o.trace_id, o.event_id, o.pid, n.process_name, o.name, replace(o.name, 'torch.ops.', '') AS short_name,
       o.ts_ns, o.dur_ns,
       CASE kt_type WHEN 'VARCHAR' THEN json_extract_string(o.args, '$.kernel_type')
                    WHEN 'BOOLEAN' THEN CASE WHEN kt_text = 'true' THEN 'True' ELSE 'False' END
                    WHEN 'NULL' THEN NULL
                    ELSE kt_text
       END AS kernel_type,
       coalesce(CASE kt_type WHEN 'VARCHAR' THEN json_extract_string(o.args, '$.kernel_type') NOT IN ('', '?')
                             WHEN 'BOOLEAN' THEN kt_text = 'true'
                             WHEN 'ARRAY' THEN kt_text <> '[]'
                             WHEN 'OBJECT' THEN kt_text <> '{}'
                             WHEN 'NULL' THEN false
                             ELSE TRY_CAST(kt_text AS DOUBLE) <> 0
                END, false) AS hit,
       json_extract_string(o.args, '$.source') AS source,
       json_extract_string(o.args, '$.composite') AS composite,
       l.status AS sub_kernel_status
FROM (SELECT *, json_type(args, '$.kernel_type') AS kt_type, json_extract(args, '$.kernel_type')::VARCHAR AS kt_text
      FROM other_events) o
JOIN traces t ON t.trace_id = o.trace_id AND t.format = 'tensorcast'
LEFT JOIN names n ON n.trace_id = o.trace_id AND n.pid = o.pid
LEFT JOIN tc_sub_kernel_lists l ON l.trace_id = o.trace_id AND l.event_id = o.event_id
WHERE o.ph = 'X';

-- The process whose operators a TensorCast trace models with profiling data: the first process
-- named with "profiling" or "empirical", else the only process with operators.
-- Columns:
--   trace_id  TensorCast trace
--   pid       the profiling process, NULL when it cannot be told
--   found_by  named (by its process name) or sole (the only process with operators); NULL when none
--   pids      every process with operators, as written
CREATE OR REPLACE VIEW tc_profiling_pids AS
WITH named AS (
    SELECT m.trace_id, arg_min(m.pid, m.event_id) AS pid
    FROM metadata_events m JOIN traces t ON t.trace_id = m.trace_id AND t.format = 'tensorcast'
    WHERE m.name = 'process_name'
      AND (contains(lower(m.value), 'profiling') OR contains(lower(m.value), 'empirical'))
    GROUP BY m.trace_id
), with_ops AS (
    SELECT trace_id, list(DISTINCT pid ORDER BY pid) AS pids FROM tc_ops GROUP BY trace_id
)
SELECT t.trace_id,
       coalesce(n.pid, CASE WHEN len(w.pids) = 1 THEN w.pids[1] END) AS pid,
       CASE WHEN n.pid IS NOT NULL THEN 'named' WHEN len(w.pids) = 1 THEN 'sole' END AS found_by,
       coalesce(w.pids, []) AS pids
FROM traces t
LEFT JOIN named n ON n.trace_id = t.trace_id
LEFT JOIN with_ops w ON w.trace_id = t.trace_id
WHERE t.format = 'tensorcast';

-- One entry per operator name of each op mapping: an entry under operator_mappings before one
-- at the top level of the same name.
-- Columns: those of op_mappings.
CREATE OR REPLACE VIEW _op_mapping_entries AS
SELECT * FROM op_mappings
QUALIFY row_number() OVER (PARTITION BY trace_id, op_name ORDER BY section = 'operator_mappings' DESC, position) = 1;

-- The op mapping a comparison uses (scalar macro): the one named (name or #id; an error when it is
-- not an op mapping), else the one loaded with the TensorCast trace (load --op-mapping), else the
-- only one loaded; NULL when none is loaded, an error when several are and none is named.
CREATE OR REPLACE MACRO tc_mapping_id(tc_trace_id, want_mapping) AS (
    SELECT CASE
        WHEN want_mapping IS NOT NULL THEN coalesce(
            (SELECT max(trace_id) FROM traces WHERE is_trace(name, trace_id, want_mapping) AND format = 'op-mapping'),
            error('no op mapping named ' || CAST(want_mapping AS VARCHAR) || ' (load one: tracedb load op_mapping.yaml)'))
        WHEN trace_param(tc_trace_id, 'op_mapping') IS NOT NULL THEN coalesce(
            (SELECT max(trace_id) FROM traces
             WHERE name = trace_param(tc_trace_id, 'op_mapping') AND format = 'op-mapping'),
            error('the op mapping ' || trace_param(tc_trace_id, 'op_mapping')
                  || ' loaded with this TensorCast trace is no longer in the database; name one with --mapping'))
        WHEN (SELECT count(*) FROM traces WHERE format = 'op-mapping') > 1 THEN
            error('several op mappings are loaded (' ||
                  (SELECT string_agg(name, ', ' ORDER BY trace_id) FROM traces WHERE format = 'op-mapping')
                  || '); name one with --mapping NAME')
        ELSE (SELECT max(trace_id) FROM traces WHERE format = 'op-mapping')
    END
);

-- The TensorCast side of the comparison, one row per kernel type (table macro). Operators of the
-- profiling process only; zero-cost operators (op mapping zero_cost) skipped. An operator with a
-- kernel_type (other than '?') is a HIT: its time goes to its kernel types by its valid
-- sub_kernel_durations, else evenly over the comma-separated types; an all_reduce operator whose
-- types lack hcom_allReduce_ also counts one hcom_allReduce_ call (its time is in the fused
-- kernel). Any other operator is a MISS: its time goes to the op mapping's kernel_type for it,
-- else to its own name. Names are looked up without torch.ops., then as written.
-- Parameters: tc_trace_id: the TensorCast trace; mapping_id: the op mapping (NULL: none).
-- Columns:
--   kernel_type  kernel type
--   total_ns     modelled time, nanoseconds (a DOUBLE: an even split need not be whole)
--   count        calls
--   hit_count    calls from HIT operators
--   miss_count   calls from MISS operators
--   funcs        operators contributing, without torch.ops., in order of first appearance
--   status       HIT, MISS, or PARTIAL when both contribute
CREATE OR REPLACE MACRO tc_kernel_types(tc_trace_id, mapping_id) AS TABLE
WITH ops AS (
    SELECT o.event_id, o.name, o.short_name, o.dur_ns, o.kernel_type, o.sub_kernel_status,
           CASE WHEN s.entry IS NOT NULL AND s.entry::VARCHAR <> '{}' THEN s.zero_cost ELSE f.zero_cost END AS zero_cost,
           CASE WHEN s.entry IS NOT NULL AND s.entry::VARCHAR <> '{}' THEN s.kernel_type ELSE f.kernel_type END
               AS mapped_type,
           o.hit,
           list_filter(list_transform(string_split(coalesce(o.kernel_type, ''), ','),
                                      lambda x: regexp_replace(x, '^\s+|\s+$', '', 'g')),
                       lambda x: x <> '') AS sub_types
    FROM tc_ops o
    JOIN tc_profiling_pids p ON p.trace_id = o.trace_id AND p.pid = o.pid
    LEFT JOIN _op_mapping_entries s ON s.trace_id = mapping_id AND s.op_name = o.short_name
    LEFT JOIN _op_mapping_entries f ON f.trace_id = mapping_id AND f.op_name = o.name
    WHERE o.trace_id = tc_trace_id
), kept AS (
    SELECT * FROM ops WHERE NOT coalesce(zero_cost, false)
), parts AS (
    -- HIT with valid sub_kernel_durations: each pair
    SELECT k.event_id, sk.position AS ord, sk.kernel_type, sk.dur_ns::DOUBLE AS dur_ns, 1 AS hit, 0 AS miss,
           k.short_name
    FROM kept k JOIN tc_sub_kernels sk ON sk.trace_id = tc_trace_id AND sk.event_id = k.event_id
    WHERE k.hit AND k.sub_kernel_status = 'valid'
    UNION ALL
    -- HIT otherwise: the duration split evenly over the kernel types
    SELECT event_id, ord - 1, sub_types[ord], dur_ns::DOUBLE / len(sub_types), 1, 0, short_name
    FROM (SELECT *, unnest(range(1, len(sub_types) + 1)) AS ord
          FROM kept WHERE hit AND coalesce(sub_kernel_status, '') <> 'valid')
    UNION ALL
    -- an all_reduce HIT whose kernel types lack hcom_allReduce_: one more call, no time
    SELECT event_id, 1000000, 'hcom_allReduce_', 0.0, 1, 0, short_name
    FROM kept WHERE hit AND contains(lower(name), 'all_reduce') AND NOT list_contains(sub_types, 'hcom_allReduce_')
    UNION ALL
    -- MISS: the op mapping's kernel type, else the operator's name
    SELECT event_id, 0, coalesce(nullif(mapped_type, ''), name), dur_ns::DOUBLE, 0, 1, short_name
    FROM kept WHERE NOT hit
), firsts AS (
    SELECT kernel_type, short_name, min(event_id * 2000000 + ord) AS first_at
    FROM parts GROUP BY kernel_type, short_name
)
SELECT p.kernel_type, sum(p.dur_ns) AS total_ns, count(*) AS count, sum(p.hit) AS hit_count, sum(p.miss) AS miss_count,
       (SELECT list(f.short_name ORDER BY f.first_at) FROM firsts f WHERE f.kernel_type = p.kernel_type) AS funcs,
       CASE WHEN sum(p.hit) > 0 AND sum(p.miss) > 0 THEN 'PARTIAL' WHEN sum(p.hit) > 0 THEN 'HIT' ELSE 'MISS' END
           AS status
FROM parts p
GROUP BY p.kernel_type;

-- The measured side, one row per kernel type (table macro): the kernels of a profile by their
-- type (ascend_kernels.op_type; the kernel name where the profile records no type), rows with an
-- empty type skipped. hcom_* kernels run on parallel HCCL and AI CPU streams: those sharing a
-- start (whole microseconds) and a type count once, with the longest duration. *AicpuKernel
-- rows are skipped.
-- Parameters: prof_trace_id: the profile.
-- Columns:
--   kernel_type   kernel type
--   total_ns      measured time, nanoseconds
--   count         kernels (hcom groups counted once)
--   merged        hcom kernels folded into another of the same start and type
--   skipped       *AicpuKernel kernels left out
CREATE OR REPLACE MACRO prof_kernel_types(prof_trace_id) AS TABLE
WITH typed AS (
    SELECT k.ts_ns, k.dur_ns,
           CASE WHEN a.op_type IS NOT NULL THEN regexp_replace(a.op_type, '^\s+|\s+$', '', 'g') ELSE k.name END
               AS kernel_type
    FROM kernels k
    LEFT JOIN ascend_kernels a ON a.trace_id = k.trace_id AND a.kernel_id = k.kernel_id
    WHERE k.trace_id = prof_trace_id
), rows AS (
    SELECT * FROM typed WHERE kernel_type IS NOT NULL AND kernel_type <> ''
), hcom AS (
    SELECT kernel_type, max(dur_ns) AS dur_ns, count(*) - 1 AS merged
    FROM rows WHERE starts_with(kernel_type, 'hcom_')
    GROUP BY coalesce(ts_ns // 1000, 0), kernel_type
), parts AS (
    SELECT kernel_type, dur_ns, 0 AS merged, 0 AS skipped FROM rows
    WHERE NOT starts_with(kernel_type, 'hcom_') AND NOT ends_with(kernel_type, 'AicpuKernel')
    UNION ALL
    SELECT kernel_type, dur_ns, merged, 0 FROM hcom
    UNION ALL
    SELECT kernel_type, NULL, 0, 1 FROM rows
    WHERE NOT starts_with(kernel_type, 'hcom_') AND ends_with(kernel_type, 'AicpuKernel')
)
SELECT kernel_type, coalesce(sum(dur_ns), 0)::BIGINT AS total_ns, count(dur_ns) AS count, sum(merged)::BIGINT AS merged,
       sum(skipped)::BIGINT AS skipped
FROM parts
GROUP BY kernel_type;

-- Microseconds rounded to 0.1, half to even, from nanoseconds (scalar macro).
CREATE OR REPLACE MACRO _us_tenths(ns) AS round_even(CAST(ns AS DECIMAL(38, 3)) * 0.001, 1);

-- A ratio computed in doubles rounded to 0.1, half to even, as its exact value would be: nine
-- decimals first drop the double's last-bit noise (0.15 is 0.1499999999999999944 as a double).
CREATE OR REPLACE MACRO _tenths(x) AS round_even(CAST(x AS DECIMAL(38, 9)), 1);

-- The comparison, one row per kernel type either side has (table macro), in the script's order:
-- by the larger of the two times, then by kernel type.
-- Parameters: want_trace: the TensorCast trace (name or #id); want_vs: the profile (name or #id);
-- want_forward_passes: forward passes the profile holds (NULL: the profile's forward_passes
-- parameter from load --meta, else 1); want_mapping: the op mapping (NULL: see tc_mapping_id).
-- Columns:
--   kernel_type      kernel type
--   tc_funcs         first three TensorCast operators contributing (without torch.ops.)
--   tc_total_us      modelled time, µs (0.1)
--   tc_count         modelled calls
--   prof_per_fwd_us  measured time per forward pass, µs (0.1)
--   prof_count       measured kernels per forward pass, rounded half to even
--   error_pct        (tc - prof) / prof x 100 of the unrounded times; 0 without measured time
--   count_error_pct  (tc_count - prof count per pass) / that count x 100; 0 without measured kernels
--   prof_share_pct   share of the measured time per pass (of the rounded times, as the script prints it)
--   status           HIT, MISS, PARTIAL, or unmodelled when TensorCast has no such kernel type
--   hcom_merged      measured hcom kernels folded into a parallel one (per forward pass)
--   aicpu_skipped    measured *AicpuKernel kernels left out per forward pass, in the whole profile (the same on every row)
CREATE OR REPLACE MACRO tc_vs_prof(want_trace, want_vs, want_forward_passes := NULL, want_mapping := NULL) AS TABLE
WITH ids AS MATERIALIZED (
    SELECT tc.trace_id AS tc_id, pr.trace_id AS prof_id,
           CASE WHEN tc.format <> 'tensorcast' THEN
                    error('trace ' || tc.name || ' is not a TensorCast trace (format ' || coalesce(tc.format, '?') || ')')
                WHEN pp.pid IS NULL THEN
                    error('cannot tell the profiling process of TensorCast trace ' || tc.name || ': no process is named '
                          || 'profiling or empirical and operators come from ' || len(pp.pids) || ' processes ('
                          || array_to_string(pp.pids, ', ') || ')')
                WHEN NOT EXISTS (SELECT 1 FROM kernels k WHERE k.trace_id = pr.trace_id) THEN
                    error('trace ' || pr.name || ' has no kernels to compare with (format ' || coalesce(pr.format, '?') || ')')
           END AS problem,
           coalesce(CAST(want_forward_passes AS VARCHAR), trace_param(pr.trace_id, 'forward_passes'), '1') AS fwd_text
    FROM traces tc
    JOIN traces pr ON is_trace(pr.name, pr.trace_id, want_vs)
    LEFT JOIN tc_profiling_pids pp ON pp.trace_id = tc.trace_id
    WHERE is_trace(tc.name, tc.trace_id, want_trace)
), run AS MATERIALIZED (
    SELECT tc_id, prof_id, problem,
           CASE WHEN TRY_CAST(fwd_text AS BIGINT) >= 1 THEN CAST(fwd_text AS BIGINT)
                ELSE error('forward passes must be a whole number of at least 1, not ' || fwd_text) END AS n_fwd,
           tc_mapping_id(tc_id, want_mapping) AS mapping_id
    FROM ids
    WHERE problem IS NULL  -- evaluates the checks above: each raises its error
), tc AS (
    -- uncorrelated calls (scalar subqueries, not a lateral join): DuckDB 1.4 readers of the file
    -- cannot run an outer join over correlated columns
    SELECT * FROM tc_kernel_types((SELECT tc_id FROM run), (SELECT mapping_id FROM run))
), prof_all AS (
    SELECT * FROM prof_kernel_types((SELECT prof_id FROM run))
), prof AS (
    SELECT * FROM prof_all WHERE count > 0  -- a type made only of skipped kernels is not compared
), joined AS (
    SELECT coalesce(tc.kernel_type, prof.kernel_type) AS kernel_type,
           coalesce(array_to_string(tc.funcs[1:3], ', '), '') AS tc_funcs,
           coalesce(tc.total_ns, 0) AS tc_ns, coalesce(tc.count, 0) AS tc_count,
           coalesce(prof.total_ns, 0)::DOUBLE / run.n_fwd AS prof_ns,
           coalesce(prof.count, 0)::DOUBLE / run.n_fwd AS prof_count,
           coalesce(tc.status, 'unmodelled') AS status,
           coalesce(prof.merged, 0)::DOUBLE / run.n_fwd AS hcom_merged,
           (SELECT coalesce(sum(skipped), 0) FROM prof_all)::DOUBLE / run.n_fwd AS aicpu_skipped
    FROM tc FULL OUTER JOIN prof ON prof.kernel_type = tc.kernel_type, run
), rounded AS (
    SELECT *, _us_tenths(tc_ns) AS tc_total_us, _us_tenths(prof_ns) AS prof_per_fwd_us FROM joined
)
SELECT kernel_type, tc_funcs, tc_total_us, tc_count, prof_per_fwd_us,
       round_even(prof_count, 0)::BIGINT AS prof_count,
       CASE WHEN prof_ns > 0 THEN _tenths((tc_ns - prof_ns) / prof_ns * 100) ELSE 0 END AS error_pct,
       CASE WHEN prof_count > 0 THEN _tenths((tc_count - prof_count) / prof_count * 100) ELSE 0 END
           AS count_error_pct,
       CASE WHEN sum(prof_per_fwd_us) OVER () > 0
            THEN _tenths(prof_per_fwd_us / sum(prof_per_fwd_us) OVER () * 100) ELSE 0 END AS prof_share_pct,
       status, hcom_merged, aicpu_skipped
FROM rounded
ORDER BY greatest(tc_total_us, prof_per_fwd_us) DESC, kernel_type;
