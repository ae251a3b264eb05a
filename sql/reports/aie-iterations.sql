-- Report: aie-iterations
-- AIE core tiles, per iteration of the kernel loop (split at long LOCK_STALLs): kernels, kernel
-- cycles, span, phase and GMAC/s; the seed post-processor's details table (--format markdown) and
-- per-core JSON (section cores, --format json). Parameters left out come from the trace's
-- --meta or path, else the defaults of sql/modules/aie/rates.sql.
-- Chart: trace+tile_name+iteration_index -> total_span_cycles  Cycles per iteration and core
-- Example: tracedb report aie-iterations --trace mlir-aie_parse-trace_test1 -p clock_ghz=1.0
-- Rows: mlir-aie traces
-- Parameters:
--   trace = NULL        trace name or #id (NULL: every mlir-aie trace)
--   M = NULL            GEMM rows of A and C
--   K = NULL            GEMM inner dimension
--   N = NULL            GEMM columns of B and C
--   rows = NULL         rows of cores the GEMM runs on (default: the core tiles traced)
--   cols = NULL         columns of cores (default 1)
--   warmup = NULL       warmup iterations before the measured ones (default 0)
--   iterations = NULL   measured iterations (default: all after warmup)
--   clock_ghz = NULL    AIE clock, GHz (default 1.25)
--   peak_macs = NULL    peak MACs per cycle per core (default 64)
-- Columns:
--   trace                text            trace name
--   tile_name            text            core tile as named in the trace
--   iteration_index      id              0-based iteration on the core
--   phase                text            warmup, perf or extra
--   num_kernels          count    total  kernels in the iteration
--   avg_duration_cycles  count           mean kernel cycles
--   min_duration_cycles  count           shortest kernel, cycles
--   max_duration_cycles  count           longest kernel, cycles
--   total_span_cycles    count           first kernel start to last kernel end, cycles
--   gmacs_per_second     count           M x K x N / cores per iteration, at clock_ghz over the span
--   utilisation_pct      percent         that work against peak_macs per cycle over the span
--   first_start          id              cycle of the first kernel's start
--   last_end             id              cycle of the last kernel's end
SELECT trace, tile_name, iteration_index, phase, num_kernels, avg_duration_cycles, min_duration_cycles,
       max_duration_cycles, total_span_cycles, gmacs_per_second, utilisation_pct, first_start, last_end
FROM aie_core_iterations(want_trace := $trace, want_m := $M, want_k := $K, want_n := $N, want_rows := $rows,
                         want_cols := $cols, want_warmup := $warmup, want_iterations := $iterations,
                         want_clock_ghz := $clock_ghz, want_peak_macs := $peak_macs)
ORDER BY trace_id, pid, iteration_index;

-- Section: cores
-- Per core tile: the fields of the seed's per-core JSON (iterations as a list in JSON output).
-- Columns:
--   trace                          text            trace name
--   pid                            id              tile process
--   tile_name                      text            core tile as named in the trace
--   median_kernel_duration_cycles  count           median kernel cycles after robust pairing
--   lock_stall_boundary_count      count           LOCK_STALL ends that mark iteration boundaries
--   detected_total_iterations      count    total  iterations holding kernels
--   expected_total_iterations      count           warmup + iterations
--   seed_iterations                count           iterations the seed would count, empty ones included
--   performance_window             text            indices of the perf iterations
--   mismatch_note                  text     note   why detected and expected differ
--   iterations                     text     json   the core's iterations (JSON output only)
SELECT trace, pid, tile_name, median_kernel_duration_cycles, lock_stall_boundary_count,
       detected_total_iterations, expected_total_iterations, seed_iterations, performance_window,
       mismatch_note, iterations
FROM aie_core_summary(want_trace := $trace, want_m := $M, want_k := $K, want_n := $N, want_rows := $rows,
                      want_cols := $cols, want_warmup := $warmup, want_iterations := $iterations,
                      want_clock_ghz := $clock_ghz, want_peak_macs := $peak_macs)
ORDER BY trace_id, pid;

-- Section: run
-- The parameters the tables above used, and where the trace's own came from.
-- Columns:
--   trace          text   trace name
--   hwid           text   hardware id from the run's path or --meta
--   gemm_m         count  M
--   gemm_k         count  K
--   gemm_n         count  N
--   rows           count  rows of cores
--   cols           count  columns of cores
--   cores          count  cores the work is divided over (rows x cols, else the core tiles traced)
--   core_tiles     count  core tiles in the trace
--   warmup         count  warmup iterations
--   iterations     count  measured iterations (empty: all after warmup)
--   clock_ghz      ratio  AIE clock, GHz
--   peak_macs      count  peak MACs per cycle per core
--   macs_per_core  count  one iteration's MACs per core
--   given          text   the trace's stored parameters, key=value (source)
SELECT r.trace, r.hwid, r.gemm_m, r.gemm_k, r.gemm_n, r.rows, r.cols, r.cores, r.core_tiles, r.warmup,
       r.iterations, r.clock_ghz, r.peak_macs, r.macs_per_core,
       (SELECT string_agg(p.key || '=' || p.value || ' (' || p.source || ')', ', ' ORDER BY p.source, p.key)
        FROM trace_params p WHERE p.trace_id = r.trace_id) AS given
FROM aie_run(want_trace := $trace, want_m := $M, want_k := $K, want_n := $N, want_rows := $rows,
             want_cols := $cols, want_warmup := $warmup, want_iterations := $iterations,
             want_clock_ghz := $clock_ghz, want_peak_macs := $peak_macs) r
ORDER BY r.trace_id;
