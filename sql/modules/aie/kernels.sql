-- include: aie.events

-- Kernel runs on AIE core tiles, paired the way the seed AIE post-processor pairs them: a kernel
-- starts at an INSTR_EVENT_0 begin and ends at an INSTR_EVENT_1 end. Robust pairing, per core:
--   1. a preliminary greedy pairing of every start with the first unused end after it gives the
--      median duration d (at least 1 cycle);
--   2. starts, and ends, closer than max(1, floor(0.25 d)) cycles to the last one kept are
--      duplicates and dropped;
--   3. walking forward, a start is taken when it lies after the last kernel's end, and paired
--      with the first end after it;
--   4. durations outside [max(1, floor(m/3)), max(lo + 1, floor(3 m))], m their median, are
--      outliers and dropped, unless that drops them all.
-- Each step is a window computation over the sorted times; only step 2 walks (a recursive CTE),
-- and only inside runs of three or more times closer than the gap to each other.
-- Depends on: aie_events, aie_tiles.

-- The kernel marks of every core tile: INSTR_EVENT_0 begins (starts) and INSTR_EVENT_1 ends.
-- Columns:
--   trace_id  trace of the tile
--   pid       core tile process (aie_tiles)
--   event_id  index of the event in the file
--   ts        cycle of the mark
--   is_start  true for a kernel start, false for an end
CREATE OR REPLACE VIEW _aie_kernel_marks AS
SELECT trace_id, pid, event_id, ts_cycles AS ts, name = 'INSTR_EVENT_0' AS is_start
FROM aie_events
WHERE trace_kind = 'core'
  AND ((name = 'INSTR_EVENT_0' AND ph = 'B') OR (name = 'INSTR_EVENT_1' AND ph = 'E'));

-- Per core tile: the raw kernel marks, the preliminary median duration and the duplicate gap.
-- Columns:
--   trace_id       trace of the tile
--   pid            core tile process (aie_tiles)
--   starts         INSTR_EVENT_0 begins
--   ends           INSTR_EVENT_1 ends
--   prelim_pairs   pairs of the preliminary greedy pairing
--   prelim_median  floor of their median duration, at least 1 (cycles)
--   min_gap        duplicate gap: max(1, floor(0.25 x prelim_median)) (cycles)
CREATE OR REPLACE VIEW aie_kernel_gaps AS
WITH marks AS (
    SELECT * FROM _aie_kernel_marks
), seq AS (
    SELECT *,
           sum(CASE WHEN is_start THEN 0 ELSE 1 END) OVER (
               PARTITION BY trace_id, pid ORDER BY ts, is_start, event_id ROWS UNBOUNDED PRECEDING) AS ends_upto,
           row_number() OVER (PARTITION BY trace_id, pid, is_start ORDER BY ts, event_id) - 1 AS idx
    FROM marks
), starts AS (
    SELECT *, idx + greatest(0, max(ends_upto - idx) OVER (
               PARTITION BY trace_id, pid ORDER BY idx ROWS UNBOUNDED PRECEDING)) AS end_idx
    FROM seq WHERE is_start
), prelim AS (
    SELECT s.trace_id, s.pid, e.ts - s.ts AS dur
    FROM starts s
    JOIN seq e ON NOT e.is_start AND e.trace_id = s.trace_id AND e.pid = s.pid AND e.idx = s.end_idx
), per_core AS (
    SELECT t.trace_id, t.pid,
           (SELECT count(*) FROM marks m WHERE m.trace_id = t.trace_id AND m.pid = t.pid AND m.is_start) AS starts,
           (SELECT count(*) FROM marks m WHERE m.trace_id = t.trace_id AND m.pid = t.pid AND NOT m.is_start) AS ends,
           (SELECT count(*) FROM prelim p WHERE p.trace_id = t.trace_id AND p.pid = t.pid) AS prelim_pairs,
           (SELECT median(p.dur) FROM prelim p WHERE p.trace_id = t.trace_id AND p.pid = t.pid) AS prelim_med
    FROM aie_tiles t WHERE t.trace_kind = 'core'
)
SELECT trace_id, pid, starts, ends, prelim_pairs,
       greatest(1, coalesce(floor(prelim_med), 1))::BIGINT AS prelim_median,
       greatest(1, floor(0.25 * greatest(1, coalesce(floor(prelim_med), 1))))::BIGINT AS min_gap
FROM per_core;

-- Kernel marks left after dropping duplicates: a mark is kept when it is at least min_gap cycles
-- after the last kept mark of its kind. A mark min_gap or more after the mark before it is always
-- kept, so the walk only runs inside runs of three or more closer marks.
-- Columns:
--   trace_id  trace of the tile
--   pid       core tile process
--   is_start  true for a kernel start (INSTR_EVENT_0 B), false for an end (INSTR_EVENT_1 E)
--   ts        cycle of the mark
CREATE OR REPLACE VIEW _aie_kept_marks AS
WITH RECURSIVE marks AS (
    SELECT m.*, g.min_gap
    FROM _aie_kernel_marks m
    JOIN aie_kernel_gaps g ON g.trace_id = m.trace_id AND g.pid = m.pid
), runs AS (
    SELECT *, sum(CASE WHEN gap IS NULL OR gap >= min_gap THEN 1 ELSE 0 END) OVER (
               PARTITION BY trace_id, pid, is_start ORDER BY ts, event_id ROWS UNBOUNDED PRECEDING) AS run
    FROM (SELECT *, ts - lag(ts) OVER (PARTITION BY trace_id, pid, is_start ORDER BY ts, event_id) AS gap FROM marks)
), sized AS (
    SELECT *, count(*) OVER (PARTITION BY trace_id, pid, is_start, run) AS run_size
    FROM runs
), dense AS (  -- the distinct times of long runs, each with the first time a kept mark there allows
    SELECT d.*, n.ts AS next_ts
    FROM (SELECT DISTINCT trace_id, pid, is_start, run, ts, min_gap FROM sized WHERE run_size >= 3) d
    ASOF LEFT JOIN (SELECT DISTINCT trace_id, pid, is_start, run, ts FROM sized WHERE run_size >= 3) n
        ON n.trace_id = d.trace_id AND n.pid = d.pid AND n.is_start = d.is_start AND n.run = d.run
       AND d.ts + d.min_gap <= n.ts
), walk(trace_id, pid, is_start, run, ts) AS (
    SELECT trace_id, pid, is_start, run, min(ts) FROM dense GROUP BY ALL
    UNION ALL
    SELECT d.trace_id, d.pid, d.is_start, d.run, d.next_ts
    FROM walk w
    JOIN dense d ON d.trace_id = w.trace_id AND d.pid = w.pid AND d.is_start = w.is_start AND d.run = w.run
                AND d.ts = w.ts
    WHERE d.next_ts IS NOT NULL
)
SELECT trace_id, pid, is_start, min(ts) AS ts FROM sized WHERE run_size < 3 GROUP BY trace_id, pid, is_start, run
UNION ALL
SELECT trace_id, pid, is_start, ts FROM walk;

-- Kernel runs of every AIE core tile after robust pairing and the outlier filter, as derived now
-- (sql/derive/aie_kernels.sql stores them in the table aie_kernels when a trace loads).
-- Pairing walks the kept starts and ends in time order: the first start, then the first end after
-- it, then the first start after that end, and so on. In the merged order a time holding both a
-- start and an end serves as whichever the walk is waiting for; so every mark whose (resolved)
-- kind differs from the one before it is taken, and the k-th start taken pairs with the k-th end.
-- Columns:
--   trace_id      trace of the tile
--   pid           core tile process (aie_tiles)
--   tile_name     the tile as named in the trace (e.g. tile2,1)
--   kernel_index  0-based index of the kernel on its core, in time order
--   start_cycles  cycle of its INSTR_EVENT_0 begin
--   end_cycles    cycle of its INSTR_EVENT_1 end
--   dur_cycles    end_cycles - start_cycles
CREATE OR REPLACE VIEW _aie_kernels_live AS
WITH tokens AS (  -- S, E, or X for a time holding both
    SELECT trace_id, pid, ts,
           CASE WHEN bool_or(is_start) AND bool_or(NOT is_start) THEN 'X'
                WHEN bool_or(is_start) THEN 'S' ELSE 'E' END AS tok
    FROM _aie_kept_marks GROUP BY ALL
), grouped AS (
    SELECT *, sum(CASE WHEN tok <> 'X' THEN 1 ELSE 0 END) OVER w AS grp,
           coalesce(last_value(CASE WHEN tok <> 'X' THEN tok END IGNORE NULLS) OVER w, 'E') AS last_plain
    FROM tokens
    WINDOW w AS (PARTITION BY trace_id, pid ORDER BY ts ROWS UNBOUNDED PRECEDING)
), resolved AS (  -- an X after plain kind K, the p-th of a row of Xs, is not-K for odd p, else K
    SELECT trace_id, pid, ts,
           CASE WHEN tok <> 'X' THEN tok
                WHEN ((row_number() OVER (PARTITION BY trace_id, pid, grp ORDER BY ts)
                       - CASE WHEN grp > 0 THEN 1 ELSE 0 END) % 2 = 1) = (last_plain = 'E') THEN 'S'
                ELSE 'E' END AS kind
    FROM grouped
), taken AS (
    SELECT trace_id, pid, ts, kind,
           row_number() OVER (PARTITION BY trace_id, pid, kind ORDER BY ts) AS k
    FROM (SELECT *, coalesce(lag(kind) OVER (PARTITION BY trace_id, pid ORDER BY ts), 'E') AS prev_kind FROM resolved)
    WHERE kind <> prev_kind
), pairs AS (
    SELECT s.trace_id, s.pid, s.ts AS start_cycles, e.ts AS end_cycles, e.ts - s.ts AS dur_cycles
    FROM taken s JOIN taken e ON e.trace_id = s.trace_id AND e.pid = s.pid AND e.k = s.k
    WHERE s.kind = 'S' AND e.kind = 'E'
), bounds AS (
    SELECT trace_id, pid, greatest(1, floor((1.0 / 3.0) * median(dur_cycles)))::BIGINT AS lo,
           floor(3.0 * median(dur_cycles))::BIGINT AS hi3
    FROM pairs GROUP BY ALL
), judged AS (
    SELECT p.*, p.dur_cycles BETWEEN b.lo AND greatest(b.lo + 1, b.hi3) AS inside,
           bool_or(p.dur_cycles BETWEEN b.lo AND greatest(b.lo + 1, b.hi3)) OVER (PARTITION BY p.trace_id, p.pid) AS any_inside
    FROM pairs p JOIN bounds b ON b.trace_id = p.trace_id AND b.pid = p.pid
)
SELECT j.trace_id, j.pid, t.tile_name,
       row_number() OVER (PARTITION BY j.trace_id, j.pid ORDER BY j.start_cycles) - 1 AS kernel_index,
       j.start_cycles, j.end_cycles, j.dur_cycles
FROM judged j
JOIN aie_tiles t ON t.trace_id = j.trace_id AND t.pid = j.pid
WHERE j.inside OR NOT j.any_inside;
