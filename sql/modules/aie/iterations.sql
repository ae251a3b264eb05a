-- include: aie.kernels

-- Iterations of the kernel loop on AIE core tiles, split at long LOCK_STALLs as the seed AIE
-- post-processor splits them: an iteration boundary is the end of a LOCK_STALL lasting at least
-- aie_lock_stall_factor() (20) times the core's median kernel duration, and a kernel belongs to
-- the iteration opened by the last boundary strictly before its start.
-- One departure from the seed: a boundary that would open an iteration with no kernel (one
-- before the first kernel, or right after another boundary) is ignored, where the seed counts
-- an empty iteration; iterations are numbered over the kernels' iterations only.
-- Depends on: aie_kernels, aie_spans, aie_tiles.

-- A LOCK_STALL this many times the median kernel duration ends an iteration (scalar macro).
CREATE OR REPLACE MACRO aie_lock_stall_factor() AS 20.0;

-- LOCK_STALL spans of every core tile, with whether each ends an iteration.
-- Columns:
--   trace_id            trace of the tile
--   pid                 core tile process (aie_tiles)
--   tile_name           the tile as named in the trace
--   start_cycles        cycle of the LOCK_STALL begin
--   end_cycles          cycle of its end
--   dur_cycles          its length in cycles
--   median_kernel_cycles median kernel duration of the core (aie_kernels)
--   is_boundary         dur_cycles >= aie_lock_stall_factor() x median_kernel_cycles
CREATE OR REPLACE VIEW aie_lock_stalls AS
SELECT s.trace_id, s.pid, t.tile_name, s.start_cycles, s.end_cycles, s.dur_cycles, m.median_kernel_cycles,
       coalesce(s.dur_cycles >= aie_lock_stall_factor() * m.median_kernel_cycles, false) AS is_boundary
FROM aie_spans s
JOIN aie_tiles t ON t.trace_id = s.trace_id AND t.pid = s.pid AND t.trace_kind = 'core'
LEFT JOIN (SELECT trace_id, pid, median(dur_cycles) AS median_kernel_cycles FROM aie_kernels GROUP BY ALL) m
       ON m.trace_id = s.trace_id AND m.pid = s.pid
WHERE s.name = 'LOCK_STALL' AND s.status = 'closed';

-- Every kernel of a core tile with the iteration it belongs to.
-- Columns:
--   trace_id          trace of the tile
--   pid               core tile process
--   tile_name         the tile as named in the trace
--   kernel_index      0-based index of the kernel on its core
--   start_cycles      cycle the kernel starts
--   end_cycles        cycle it ends
--   dur_cycles        its length in cycles
--   boundaries_before iteration boundaries strictly before its start
--   iteration_index   0-based iteration: the rank of boundaries_before among the core's kernels
CREATE OR REPLACE VIEW aie_kernel_iterations AS
WITH boundaries AS (
    SELECT DISTINCT trace_id, pid, end_cycles AS ts FROM aie_lock_stalls WHERE is_boundary
), timeline AS (  -- at equal cycles the kernel first: a boundary counts only strictly before a start
    SELECT trace_id, pid, start_cycles AS ts, 0 AS is_boundary, kernel_index FROM aie_kernels
    UNION ALL
    SELECT trace_id, pid, ts, 1, NULL FROM boundaries
), counted AS (
    SELECT *, sum(is_boundary) OVER (PARTITION BY trace_id, pid ORDER BY ts, is_boundary
                                     ROWS UNBOUNDED PRECEDING) AS boundaries_before
    FROM timeline
)
SELECT k.trace_id, k.pid, k.tile_name, k.kernel_index, k.start_cycles, k.end_cycles, k.dur_cycles,
       c.boundaries_before::BIGINT AS boundaries_before,
       dense_rank() OVER (PARTITION BY k.trace_id, k.pid ORDER BY c.boundaries_before) - 1 AS iteration_index
FROM aie_kernels k
JOIN counted c ON c.trace_id = k.trace_id AND c.pid = k.pid AND c.kernel_index = k.kernel_index;

-- One row per iteration of every core tile: the seed's per-iteration summary.
-- Columns:
--   trace_id            trace of the tile
--   pid                 core tile process
--   tile_name           the tile as named in the trace
--   iteration_index     0-based iteration on the core
--   num_kernels         kernels in the iteration
--   avg_duration_cycles mean kernel duration
--   min_duration_cycles shortest kernel
--   max_duration_cycles longest kernel
--   total_span_cycles   last_end - first_start
--   first_start         start of its first kernel (cycle)
--   last_end            end of its last kernel (cycle)
CREATE OR REPLACE VIEW aie_iterations AS
SELECT trace_id, pid, any_value(tile_name) AS tile_name, iteration_index,
       count(*) AS num_kernels, avg(dur_cycles) AS avg_duration_cycles,
       min(dur_cycles) AS min_duration_cycles, max(dur_cycles) AS max_duration_cycles,
       arg_max(end_cycles, (start_cycles, end_cycles)) - min(start_cycles) AS total_span_cycles,
       min(start_cycles) AS first_start, arg_max(end_cycles, (start_cycles, end_cycles)) AS last_end
FROM aie_kernel_iterations
GROUP BY trace_id, pid, iteration_index;

-- One row per core tile: what robust pairing and iteration splitting found.
-- Columns:
--   trace_id                  trace of the tile
--   pid                       core tile process
--   tile_name                 the tile as named in the trace (the seed's tile_name)
--   tile_row                  row of the tile
--   tile_col                  column of the tile
--   starts                    INSTR_EVENT_0 begins in the trace
--   ends                      INSTR_EVENT_1 ends in the trace
--   kernels                   kernels after robust pairing and the outlier filter
--   median_kernel_cycles      their median duration (NULL without kernels)
--   lock_stalls               closed LOCK_STALL spans
--   boundaries                distinct boundary cycles (the seed's lock_stall_boundary_count)
--   seed_iterations           iterations the seed would count, empty ones included: 1 + the
--                             boundaries before the last kernel's start (0 without kernels)
--   iterations                iterations holding kernels (detected_total_iterations)
CREATE OR REPLACE VIEW aie_cores AS
WITH k AS (
    SELECT trace_id, pid, count(*) AS kernels, median(dur_cycles) AS median_kernel_cycles,
           max(start_cycles) AS last_start
    FROM aie_kernels GROUP BY ALL
), s AS (
    SELECT trace_id, pid, count(*) AS lock_stalls,
           list(DISTINCT end_cycles) FILTER (WHERE is_boundary) AS boundary_ends
    FROM aie_lock_stalls GROUP BY ALL
), i AS (
    SELECT trace_id, pid, count(*) AS iterations FROM aie_iterations GROUP BY ALL
)
SELECT t.trace_id, t.pid, t.tile_name, t.tile_row, t.tile_col, g.starts, g.ends,
       coalesce(k.kernels, 0) AS kernels, k.median_kernel_cycles,
       coalesce(s.lock_stalls, 0) AS lock_stalls,
       len(coalesce(s.boundary_ends, [])) AS boundaries,
       CASE WHEN k.kernels IS NULL THEN 0
            ELSE 1 + len(list_filter(coalesce(s.boundary_ends, []), lambda b: b < k.last_start)) END
           AS seed_iterations,
       coalesce(i.iterations, 0) AS iterations
FROM aie_tiles t
JOIN aie_kernel_gaps g ON g.trace_id = t.trace_id AND g.pid = t.pid
LEFT JOIN k ON k.trace_id = t.trace_id AND k.pid = t.pid
LEFT JOIN s ON s.trace_id = t.trace_id AND s.pid = t.pid
LEFT JOIN i ON i.trace_id = t.trace_id AND i.pid = t.pid
WHERE t.trace_kind = 'core';
