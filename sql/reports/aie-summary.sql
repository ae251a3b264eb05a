-- Report: aie-summary
-- AIE GEMM run as a whole: over the perf iterations every core tile has, the run's time is the
-- slowest core's span; average, best and worst GMAC/s and utilisation. The seed
-- post-processor's aggregate JSON with --format json. Parameters left out come from the trace's
-- --meta or path, else the defaults of sql/modules/aie/rates.sql.
-- Example: tracedb report aie-summary --trace mlir-aie_parse-trace_test1
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
--   trace                  text             trace name
--   cores                  count            core tiles in the trace
--   count                  count            perf iterations present on every core
--   iterations_considered  text             their indices
--   avg_runtime_cycles     count            mean run time per iteration, cycles
--   avg_gmacs_per_second   count            mean GMAC/s
--   best_iteration         id               iteration with the highest GMAC/s (first on a tie)
--   best_gmacs_per_second  count            its GMAC/s
--   worst_iteration        id               iteration with the lowest GMAC/s
--   worst_gmacs_per_second count            its GMAC/s
--   utilisation_pct        percent          mean share of peak_macs x cores per cycle
--   note                   text     note    what was aggregated
--   average                text     json     runtime_cycles and gmacs_per_second averaged (JSON output only)
--   best                   text     json     the best iteration (JSON output only)
--   worst                  text     json     the worst iteration (JSON output only)
--   per_iteration          text     json     every iteration considered (JSON output only)
SELECT trace, cores, count, iterations_considered, average.runtime_cycles AS avg_runtime_cycles,
       average.gmacs_per_second AS avg_gmacs_per_second, best.iteration_index AS best_iteration,
       best.gmacs_per_second AS best_gmacs_per_second, worst.iteration_index AS worst_iteration,
       worst.gmacs_per_second AS worst_gmacs_per_second, utilisation_pct, note, average, best, worst,
       per_iteration
FROM aie_system_summary(want_trace := $trace, want_m := $M, want_k := $K, want_n := $N, want_rows := $rows,
                        want_cols := $cols, want_warmup := $warmup, want_iterations := $iterations,
                        want_clock_ghz := $clock_ghz, want_peak_macs := $peak_macs)
ORDER BY trace_id;

-- Section: per_iteration
-- Each perf iteration present on every core: the slowest core's span and the rates it gives.
-- Columns:
--   trace             text             trace name
--   iteration_index   id               0-based iteration
--   cores             count            core tiles holding it
--   runtime_cycles    count    total   the longest core span of the iteration, cycles
--   gmacs_per_second  count            M x K x N at clock_ghz over runtime_cycles
--   utilisation_pct   percent          M x K x N against peak_macs x cores per cycle
SELECT trace, iteration_index, cores, runtime_cycles, gmacs_per_second, utilisation_pct
FROM aie_system_iterations(want_trace := $trace, want_m := $M, want_k := $K, want_n := $N, want_rows := $rows,
                           want_cols := $cols, want_warmup := $warmup, want_iterations := $iterations,
                           want_clock_ghz := $clock_ghz, want_peak_macs := $peak_macs)
ORDER BY trace_id, iteration_index;
