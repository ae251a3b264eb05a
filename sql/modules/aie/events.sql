-- AMD AIE (NPU) traces written by mlir-aie: their events in cycles and in one vocabulary.
-- Depends on: other_events, aie_tiles (sql/schema/006_aie.sql).

-- CamelCase words and digits to UPPER_SNAKE_CASE (scalar macro): PortRunning0 -> PORT_RUNNING_0.
CREATE OR REPLACE MACRO _aie_snake(word) AS
upper(regexp_replace(regexp_replace(regexp_replace(word,
    '([a-z])([A-Z])', '\1_\2', 'g'),
    '([A-Za-z])([0-9])', '\1_\2', 'g'),
    '([0-9])([A-Za-z])', '\1_\2', 'g'));

-- The name of an mlir-aie trace event in the current vocabulary (scalar macro). Current names
-- (INSTR_EVENT_0, LOCK_STALL, PORT_RUNNING_0, ...) are kept; the older CamelCase names map to
-- them: the renamed ones by the list below, the rest word by word (PortRunning0 -> PORT_RUNNING_0,
-- LockStall -> LOCK_STALL, S2mm0StartTask -> DMA_S2MM_0_START_TASK).
CREATE OR REPLACE MACRO aie_event_name(raw) AS
CASE
    WHEN raw IS NULL OR NOT regexp_matches(raw, '[a-z]') THEN raw
    WHEN raw IN ('Event0', 'KernelStarts') THEN 'INSTR_EVENT_0'
    WHEN raw IN ('Event1', 'KernelDone') THEN 'INSTR_EVENT_1'
    WHEN raw IN ('LockAcquireInstr', 'LockAcquireReq') THEN 'INSTR_LOCK_ACQUIRE_REQ'
    WHEN raw IN ('LockReleaseInstr', 'LockReleaseReq') THEN 'INSTR_LOCK_RELEASE_REQ'
    WHEN raw IN ('VectorInstr', 'InstrVector', 'KernelExecutesVectorInstruction') THEN 'INSTR_VECTOR'
    WHEN regexp_matches(raw, '^(S2mm|Mm2s)') THEN 'DMA_' || upper(left(raw, 4)) || '_' || _aie_snake(substr(raw, 5))
    ELSE _aie_snake(raw)
END;

-- Every B/E event of an mlir-aie trace, in cycles, with its tile and its name in the common
-- vocabulary. The events themselves live in other_events (as any Chrome B/E event does); this is
-- their AIE reading.
-- Columns:
--   trace_id     trace the event belongs to
--   event_id     index of the event in the file's event list
--   pid          tile process (aie_tiles)
--   trace_kind   core, mem, shim or memtile
--   tile_name    the tile as named in the trace (e.g. tile2,1)
--   tid          trace slot
--   ph           B (begin) or E (end)
--   name         event name in the common vocabulary (aie_event_name)
--   raw_name     event name as written in the file
--   ts_cycles    time, AIE clock cycles (the file's ts)
--   args         all args as JSON
CREATE OR REPLACE VIEW aie_events AS
SELECT o.trace_id, o.event_id, o.pid, t.trace_kind, t.tile_name, o.tid, o.ph, aie_event_name(o.name) AS name,
       o.name AS raw_name, o.ts_ns // 1000 AS ts_cycles, o.args
FROM other_events o
JOIN aie_tiles t ON t.trace_id = o.trace_id AND t.pid = o.pid
WHERE o.ph IN ('B', 'E');
