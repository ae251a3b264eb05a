-- Facts about an mlir-aie (AMD AIE) trace, derived inside the load's transaction once its events
-- are typed (sql/ingest/chrome_split.sql), with the parameter $trace_id. A trace with no process
-- named like an AIE tile trace is left as it is. The tables filled here are documented in
-- sql/schema/006_aie.sql.

-- Tiles: one per process named "<kind>_trace for tileR,C" (mlir-aie: row R, column C),
-- "<kind>_trace for tile(C,R)" or "<kind>(C,R)" (MLIR's aie.tile(col, row)), or
-- "<kind>_trace for column C, row R".
INSERT INTO aie_tiles
WITH named AS (
    SELECT pid, value AS process_name,
           regexp_extract(value, '^(memtile|core|mem|shim|intfc)(_trace\b|\()', 1) AS kind,
           CASE WHEN value LIKE '% for %' THEN trim(split_part(value, ' for ', 2)) ELSE value END AS tile_name
    FROM metadata_events
    WHERE trace_id = $trace_id AND name = 'process_name' AND pid IS NOT NULL
      AND regexp_matches(value, '^(memtile|core|mem|shim|intfc)(_trace for .*\d.*|\(\s*\d+\s*,\s*\d+\s*\))$')
), located AS (
    SELECT *,
           regexp_extract(tile_name, '^tile\s*(\d+)\s*,\s*(\d+)$', ['r', 'c']) AS rc,
           regexp_extract(tile_name, '\(\s*(\d+)\s*,\s*(\d+)\s*\)', ['c', 'r']) AS cr,
           regexp_extract(tile_name, 'column\s*(\d+)\s*,\s*row\s*(\d+)', ['c', 'r']) AS cr2
    FROM named
)
SELECT $trace_id, pid, process_name,
       CASE kind WHEN 'intfc' THEN 'shim' ELSE kind END,
       tile_name,
       TRY_CAST(coalesce(nullif(rc.r, ''), nullif(cr.r, ''), nullif(cr2.r, '')) AS INTEGER),
       TRY_CAST(coalesce(nullif(rc.c, ''), nullif(cr.c, ''), nullif(cr2.c, '')) AS INTEGER),
       (SELECT count(*) FROM metadata_events m
        WHERE m.trace_id = $trace_id AND m.pid = located.pid AND m.name = 'thread_name')
FROM located;

-- A tile event must have a name and a time at a whole cycle: any other is set aside, with its reason.
INSERT INTO rejected_events
SELECT $trace_id, o.event_id,
       CASE WHEN o.name IS NULL THEN 'AIE event without a name'
            WHEN o.ts_ns IS NULL THEN 'AIE event without a time'
            ELSE 'AIE event time is not a whole number of cycles' END,
       json_object('name', o.name, 'ph', o.ph, 'ts', CAST(o.ts_ns AS DECIMAL(38, 3)) / 1000, 'pid', o.pid,
                   'tid', o.tid, 'args', o.args)::VARCHAR
FROM other_events o JOIN aie_tiles t ON t.trace_id = o.trace_id AND t.pid = o.pid
WHERE o.trace_id = $trace_id AND t.trace_id = $trace_id AND o.ph IN ('B', 'E')
  AND (o.ts_ns % 1000 <> 0 OR o.name IS NULL OR o.ts_ns IS NULL);

DELETE FROM other_events o
WHERE o.trace_id = $trace_id AND o.ph IN ('B', 'E') AND (o.ts_ns % 1000 <> 0 OR o.name IS NULL OR o.ts_ns IS NULL)
  AND o.pid IN (SELECT pid FROM aie_tiles WHERE trace_id = $trace_id);

-- Spans: per tile and event name, each begin paired with the first unused end strictly after it.
-- With begins and ends in one time order (an end before a begin at the same cycle), ends_upto is
-- the number of ends at or before a begin; the i-th begin then takes end number
-- i + max(0, max over k <= i of (ends_upto_k - k)), the index the seed's two-pointer walk reaches.
INSERT INTO aie_spans
WITH ev AS (
    SELECT event_id, pid, tid, name, ph, ts_cycles AS ts
    FROM aie_events WHERE trace_id = $trace_id
), seq AS (
    SELECT *,
           sum(CASE WHEN ph = 'E' THEN 1 ELSE 0 END) OVER (
               PARTITION BY pid, name ORDER BY ts, ph = 'B', event_id ROWS UNBOUNDED PRECEDING) AS ends_upto,
           row_number() OVER (PARTITION BY pid, name, ph ORDER BY ts, event_id) - 1 AS idx
    FROM ev
), begins AS (
    SELECT *, idx + greatest(0, max(ends_upto - idx) OVER (
               PARTITION BY pid, name ORDER BY idx ROWS UNBOUNDED PRECEDING)) AS end_idx
    FROM seq WHERE ph = 'B'
), ends AS (
    SELECT * FROM seq WHERE ph = 'E'
)
SELECT $trace_id, coalesce(b.pid, e.pid), coalesce(b.tid, e.tid), coalesce(b.name, e.name),
       b.event_id, e.event_id, b.ts, e.ts, e.ts - b.ts,
       CASE WHEN b.event_id IS NULL THEN 'unopened' WHEN e.event_id IS NULL THEN 'unclosed' ELSE 'closed' END
FROM begins b
FULL JOIN ends e ON e.pid = b.pid AND e.name = b.name AND e.idx = b.end_idx;

UPDATE traces SET format = 'mlir-aie', platform = 'AIE'
WHERE trace_id = $trace_id AND EXISTS (SELECT 1 FROM aie_tiles WHERE trace_id = $trace_id);
