-- include: aie.iterations
-- include: core.params
-- include: core.selection

-- Work and rates of AIE GEMM runs: per-core iterations with phases and GMAC/s, the seed's
-- per-core summary, and the system aggregate over the perf iterations every core has.
--
-- Every macro here takes the trace and the run's parameters; a parameter left NULL is read from
-- trace_params (tracedb load --meta, or the mlir-aie path layout), else defaults:
--   want_m, want_k, want_n  GEMM size M x K x N (no default: GMAC/s is NULL without it)
--   want_rows, want_cols    rows x cols of cores the GEMM is spread over (default: the core
--                           tiles in the trace, as rows x 1)
--   want_warmup             warmup iterations before the measured ones (default 0)
--   want_iterations         measured (perf) iterations (default: every iteration after warmup)
--   want_clock_ghz          AIE clock in GHz (default 1.25)
--   want_peak_macs          peak MACs per cycle per core (default 64)
-- Depends on: aie_iterations, aie_cores, trace_params, traces.

-- The parameters of each selected mlir-aie trace, resolved (table macro).
-- Columns: trace_id, trace (name), hwid, gemm_m, gemm_k, gemm_n, rows, cols, cores (rows x cols,
-- or the core tiles in the trace), core_tiles (core tiles in the trace), warmup, iterations (NULL:
-- all after warmup), expected_iterations (warmup + iterations, NULL without iterations),
-- clock_ghz, peak_macs, macs_per_core (M x K x N / max(1, cores): one iteration's work per core).
CREATE OR REPLACE MACRO aie_run(want_trace := NULL, want_m := NULL, want_k := NULL, want_n := NULL,
                                want_rows := NULL, want_cols := NULL, want_warmup := NULL,
                                want_iterations := NULL, want_clock_ghz := NULL, want_peak_macs := NULL) AS TABLE
WITH r AS (
    SELECT t.trace_id, t.name AS trace, trace_param(t.trace_id, 'hwid') AS hwid,
           coalesce(TRY_CAST(want_m AS BIGINT), TRY_CAST(trace_param(t.trace_id, 'M') AS BIGINT)) AS gemm_m,
           coalesce(TRY_CAST(want_k AS BIGINT), TRY_CAST(trace_param(t.trace_id, 'K') AS BIGINT)) AS gemm_k,
           coalesce(TRY_CAST(want_n AS BIGINT), TRY_CAST(trace_param(t.trace_id, 'N') AS BIGINT)) AS gemm_n,
           coalesce(TRY_CAST(want_rows AS BIGINT), TRY_CAST(trace_param(t.trace_id, 'rows') AS BIGINT)) AS rows,
           coalesce(TRY_CAST(want_cols AS BIGINT), TRY_CAST(trace_param(t.trace_id, 'cols') AS BIGINT)) AS cols,
           (SELECT count(*) FROM aie_tiles a WHERE a.trace_id = t.trace_id AND a.trace_kind = 'core') AS core_tiles,
           greatest(0, coalesce(TRY_CAST(want_warmup AS BIGINT),
                                TRY_CAST(trace_param(t.trace_id, 'warmup') AS BIGINT), 0)) AS warmup,
           -- greatest() skips NULLs: an unknown count stays NULL
           CASE WHEN coalesce(TRY_CAST(want_iterations AS BIGINT),
                              TRY_CAST(trace_param(t.trace_id, 'iterations') AS BIGINT)) IS NOT NULL
                THEN greatest(0, coalesce(TRY_CAST(want_iterations AS BIGINT),
                                          TRY_CAST(trace_param(t.trace_id, 'iterations') AS BIGINT))) END AS iterations,
           coalesce(TRY_CAST(want_clock_ghz AS DOUBLE), TRY_CAST(trace_param(t.trace_id, 'clock_ghz') AS DOUBLE),
                    1.25) AS clock_ghz,
           coalesce(TRY_CAST(want_peak_macs AS DOUBLE), TRY_CAST(trace_param(t.trace_id, 'peak_macs') AS DOUBLE),
                    64) AS peak_macs
    FROM traces t
    WHERE t.format = 'mlir-aie' AND (want_trace IS NULL OR is_trace(t.name, t.trace_id, want_trace))
)
SELECT trace_id, trace, hwid, gemm_m, gemm_k, gemm_n, rows, cols,
       coalesce(rows * cols, nullif(core_tiles, 0)) AS cores, core_tiles, warmup, iterations,
       warmup + iterations AS expected_iterations, clock_ghz, peak_macs,
       CAST(gemm_m AS DOUBLE) * gemm_k * gemm_n / greatest(1, coalesce(rows * cols, core_tiles)) AS macs_per_core
FROM r;

-- Every iteration of every core tile with its phase and rates: the seed's details table
-- (table macro; parameters above).
-- Columns: trace_id, trace, pid, tile_name, iteration_index, phase (warmup, perf or extra: the
-- first `warmup` iterations, then `iterations` of them, then the rest), num_kernels,
-- avg_duration_cycles, min_duration_cycles, max_duration_cycles, total_span_cycles, first_start,
-- last_end, gmacs_per_second (macs_per_core x clock_ghz / total_span_cycles; 0 for an empty span,
-- as the seed), utilisation_pct (macs_per_core / (total_span_cycles x peak_macs)).
CREATE OR REPLACE MACRO aie_core_iterations(want_trace := NULL, want_m := NULL, want_k := NULL, want_n := NULL,
                                            want_rows := NULL, want_cols := NULL, want_warmup := NULL,
                                            want_iterations := NULL, want_clock_ghz := NULL,
                                            want_peak_macs := NULL) AS TABLE
SELECT r.trace_id, r.trace, i.pid, i.tile_name, i.iteration_index,
       CASE WHEN i.iteration_index < least(r.warmup, c.iterations) THEN 'warmup'
            WHEN i.iteration_index < least(least(r.warmup, c.iterations) + coalesce(r.iterations, c.iterations),
                                           c.iterations) THEN 'perf'
            ELSE 'extra' END AS phase,
       i.num_kernels, i.avg_duration_cycles, i.min_duration_cycles, i.max_duration_cycles, i.total_span_cycles,
       i.first_start, i.last_end,
       CASE WHEN i.total_span_cycles > 0 THEN r.macs_per_core * r.clock_ghz / i.total_span_cycles
            WHEN r.macs_per_core IS NOT NULL THEN 0.0 END AS gmacs_per_second,
       CASE WHEN i.total_span_cycles > 0
            THEN 100.0 * r.macs_per_core / (i.total_span_cycles * r.peak_macs) END AS utilisation_pct
FROM aie_run(want_trace := want_trace, want_m := want_m, want_k := want_k, want_n := want_n,
             want_rows := want_rows, want_cols := want_cols, want_warmup := want_warmup,
             want_iterations := want_iterations, want_clock_ghz := want_clock_ghz,
             want_peak_macs := want_peak_macs) r
JOIN aie_iterations i ON i.trace_id = r.trace_id
JOIN aie_cores c ON c.trace_id = i.trace_id AND c.pid = i.pid;

-- One row per core tile with the fields of the seed's per-core JSON (table macro; parameters
-- above).
-- Columns: trace_id, trace, pid (as a number), tile_name,
-- median_kernel_duration_cycles, lock_stall_boundary_count, detected_total_iterations,
-- expected_total_iterations, mismatch_note (the seed's sentences when detected and expected
-- differ), iterations (list of the per-iteration structs of aie_core_iterations),
-- performance_window (indices of the perf iterations), seed_iterations (aie_cores).
CREATE OR REPLACE MACRO aie_core_summary(want_trace := NULL, want_m := NULL, want_k := NULL, want_n := NULL,
                                         want_rows := NULL, want_cols := NULL, want_warmup := NULL,
                                         want_iterations := NULL, want_clock_ghz := NULL,
                                         want_peak_macs := NULL) AS TABLE
WITH its AS (
    SELECT * FROM aie_core_iterations(want_trace := want_trace, want_m := want_m, want_k := want_k,
                                      want_n := want_n, want_rows := want_rows, want_cols := want_cols,
                                      want_warmup := want_warmup, want_iterations := want_iterations,
                                      want_clock_ghz := want_clock_ghz, want_peak_macs := want_peak_macs)
), per_core AS (
    SELECT trace_id, pid,
           list({'num_kernels': num_kernels, 'avg_duration_cycles': avg_duration_cycles,
                 'min_duration_cycles': min_duration_cycles, 'max_duration_cycles': max_duration_cycles,
                 'total_span_cycles': total_span_cycles, 'first_start': first_start, 'last_end': last_end,
                 'gmacs_per_second': gmacs_per_second, 'iteration_index': iteration_index, 'phase': phase}
                ORDER BY iteration_index) AS iterations,
           list(iteration_index ORDER BY iteration_index) FILTER (WHERE phase = 'perf') AS performance_window
    FROM its GROUP BY ALL
)
SELECT r.trace_id, r.trace, TRY_CAST(c.pid AS BIGINT) AS pid, c.tile_name,
       c.median_kernel_cycles AS median_kernel_duration_cycles,
       c.boundaries AS lock_stall_boundary_count,
       c.iterations AS detected_total_iterations,
       r.expected_iterations AS expected_total_iterations,
       CASE WHEN c.kernels = 0 THEN 'No valid kernel pairs detected after robust filtering.'
            WHEN c.iterations < r.expected_iterations
                THEN printf('Detected %d iterations but expected %d. Proceeding with available iterations.',
                            c.iterations, r.expected_iterations)
            WHEN c.iterations > r.expected_iterations
                THEN printf('Detected %d iterations but expected %d. Truncating to first %d iterations for phase labeling.',
                            c.iterations, r.expected_iterations, r.expected_iterations)
       END AS mismatch_note,
       coalesce(p.iterations, []) AS iterations,
       coalesce(p.performance_window, []) AS performance_window,
       c.seed_iterations
FROM aie_run(want_trace := want_trace, want_m := want_m, want_k := want_k, want_n := want_n,
             want_rows := want_rows, want_cols := want_cols, want_warmup := want_warmup,
             want_iterations := want_iterations, want_clock_ghz := want_clock_ghz,
             want_peak_macs := want_peak_macs) r
JOIN aie_cores c ON c.trace_id = r.trace_id
LEFT JOIN per_core p ON p.trace_id = c.trace_id AND p.pid = c.pid;

-- The system aggregate per perf iteration present on every core tile of the trace (table macro;
-- parameters above): the run's time is the slowest core's span.
-- Columns: trace_id, trace, iteration_index, cores (core tiles holding it), runtime_cycles (max
-- total_span_cycles across cores), gmacs_per_second (M x K x N x clock_ghz / runtime_cycles),
-- utilisation_pct (M x K x N / (runtime_cycles x peak_macs x cores)).
CREATE OR REPLACE MACRO aie_system_iterations(want_trace := NULL, want_m := NULL, want_k := NULL, want_n := NULL,
                                              want_rows := NULL, want_cols := NULL, want_warmup := NULL,
                                              want_iterations := NULL, want_clock_ghz := NULL,
                                              want_peak_macs := NULL) AS TABLE
WITH r AS (
    SELECT * FROM aie_run(want_trace := want_trace, want_m := want_m, want_k := want_k, want_n := want_n,
                          want_rows := want_rows, want_cols := want_cols, want_warmup := want_warmup,
                          want_iterations := want_iterations, want_clock_ghz := want_clock_ghz,
                          want_peak_macs := want_peak_macs)
), perf AS (
    SELECT trace_id, iteration_index, count(*) AS cores, max(total_span_cycles) AS runtime_cycles
    FROM aie_core_iterations(want_trace := want_trace, want_m := want_m, want_k := want_k, want_n := want_n,
                             want_rows := want_rows, want_cols := want_cols, want_warmup := want_warmup,
                             want_iterations := want_iterations, want_clock_ghz := want_clock_ghz,
                             want_peak_macs := want_peak_macs)
    WHERE phase = 'perf'
    GROUP BY ALL
)
SELECT r.trace_id, r.trace, p.iteration_index, p.cores, p.runtime_cycles,
       CASE WHEN p.runtime_cycles > 0 THEN CAST(r.gemm_m AS DOUBLE) * r.gemm_k * r.gemm_n * r.clock_ghz / p.runtime_cycles
            WHEN r.gemm_m IS NOT NULL THEN 0.0 END AS gmacs_per_second,
       CASE WHEN p.runtime_cycles > 0
            THEN 100.0 * CAST(r.gemm_m AS DOUBLE) * r.gemm_k * r.gemm_n / (p.runtime_cycles * r.peak_macs * r.cores)
       END AS utilisation_pct
FROM r JOIN perf p ON p.trace_id = r.trace_id
WHERE p.cores = r.core_tiles;

-- The seed's aggregate JSON, one row per selected trace (table macro; parameters above).
-- Columns: trace_id, trace, iterations_considered (indices), count, average (struct of
-- runtime_cycles, gmacs_per_second), best and worst (the iteration with the highest and lowest
-- GMAC/s, the first on a tie; by runtime without M, K, N), per_iteration (list of
-- aie_system_iterations structs), note, cores (core tiles), utilisation_pct (mean over the
-- iterations considered).
CREATE OR REPLACE MACRO aie_system_summary(want_trace := NULL, want_m := NULL, want_k := NULL, want_n := NULL,
                                           want_rows := NULL, want_cols := NULL, want_warmup := NULL,
                                           want_iterations := NULL, want_clock_ghz := NULL,
                                           want_peak_macs := NULL) AS TABLE
WITH r AS (
    SELECT * FROM aie_run(want_trace := want_trace, want_m := want_m, want_k := want_k, want_n := want_n,
                          want_rows := want_rows, want_cols := want_cols, want_warmup := want_warmup,
                          want_iterations := want_iterations, want_clock_ghz := want_clock_ghz,
                          want_peak_macs := want_peak_macs)
), s AS (
    SELECT *, {'iteration_index': iteration_index, 'runtime_cycles': runtime_cycles,
               'gmacs_per_second': gmacs_per_second} AS it
    FROM aie_system_iterations(want_trace := want_trace, want_m := want_m, want_k := want_k, want_n := want_n,
                               want_rows := want_rows, want_cols := want_cols, want_warmup := want_warmup,
                               want_iterations := want_iterations, want_clock_ghz := want_clock_ghz,
                               want_peak_macs := want_peak_macs)
), agg AS (
    SELECT trace_id,
           list(iteration_index ORDER BY iteration_index) AS iterations_considered,
           count(*) AS count,
           {'runtime_cycles': avg(runtime_cycles), 'gmacs_per_second': avg(gmacs_per_second)} AS average,
           first(it ORDER BY gmacs_per_second DESC NULLS LAST, runtime_cycles, iteration_index) AS best,
           first(it ORDER BY gmacs_per_second NULLS LAST, runtime_cycles DESC, iteration_index) AS worst,
           list(it ORDER BY iteration_index) AS per_iteration,
           avg(utilisation_pct) AS utilisation_pct
    FROM s GROUP BY trace_id
)
SELECT r.trace_id, r.trace, coalesce(a.iterations_considered, []) AS iterations_considered,
       coalesce(a.count, 0) AS count, a.average, a.best, a.worst, coalesce(a.per_iteration, []) AS per_iteration,
       CASE WHEN r.core_tiles = 0 THEN 'No cores to aggregate.'
            WHEN a.count IS NULL THEN 'No common perf iterations across all cores.'
            ELSE 'Only iterations present on all cores are considered.' END AS note,
       r.core_tiles AS cores, a.utilisation_pct
FROM r LEFT JOIN agg a ON a.trace_id = r.trace_id;
