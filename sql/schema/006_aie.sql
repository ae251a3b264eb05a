-- Schema v6: AMD AIE (NPU) traces written by mlir-aie, and the run parameters of any trace.
--
-- An mlir-aie trace is a Chrome event array in AIE clock cycles with one process per traced
-- (trace kind, tile). Its events keep their single home in other_events and metadata_events like
-- any Chrome trace; the view aie_events gives them in cycles with one event vocabulary, and the
-- tables below hold what the loader derives once: the tiles and the B/E spans.

-- Parameters of the run a trace records, given with `tracedb load --meta KEY=VALUE` or read
-- from the trace's path (mlir-aie GEMM layout <hwid>-gemm_<M>_<K>_<N>-<rows>_row_<cols>_col/
-- traces/trace_mm_<M>_<K>_<N>.json). Reports read them where a parameter is not given.
-- Columns:
--   trace_id  trace the parameter belongs to
--   key       parameter name as given (case matters: M is the GEMM size, m a tile size)
--   value     its value as text
--   source    meta (given at load) or path (parsed from the file's path)
CREATE TABLE trace_params (
    trace_id INTEGER NOT NULL,
    key      VARCHAR NOT NULL,
    value    VARCHAR,
    source   VARCHAR NOT NULL
);

-- One row per traced (trace kind, tile) of an mlir-aie trace: a process named like
-- "core_trace for tile2,1", "memtile_trace for tile1,1", "shim_trace for tile(0,0)".
-- Columns:
--   trace_id      trace the tile belongs to
--   pid           process field of the tile's events
--   process_name  the process name as written
--   trace_kind    core, mem, shim or memtile (the older intfc_trace is shim)
--   tile_name     the tile as named after "for" (e.g. tile2,1), the seed's tile_name
--   tile_row      row of the tile: "tileR,C" is row R, column C as mlir-aie writes it; "tile(C,R)"
--                 follows MLIR's aie.tile(col, row)
--   tile_col      column of the tile
--   slots         trace slots named by thread_name events (at most 8 per tile)
CREATE TABLE aie_tiles (
    trace_id     INTEGER NOT NULL,
    pid          VARCHAR NOT NULL,
    process_name VARCHAR,
    trace_kind   VARCHAR,
    tile_name    VARCHAR,
    tile_row     INTEGER,
    tile_col     INTEGER,
    slots        INTEGER
);

-- B/E spans of an mlir-aie trace: per tile and event name, the begins and ends in time order,
-- each begin paired with the first unused end strictly after it (the seed's greedy pairing). A
-- begin never closed before the end of the trace, and an end with no begin, are kept and flagged.
-- Columns:
--   trace_id        trace the span belongs to
--   pid             tile process (aie_tiles)
--   tid             trace slot of the event
--   name            event name in the common vocabulary (aie_event_name)
--   begin_event_id  event_id of the B event (NULL for an end without a begin)
--   end_event_id    event_id of the E event (NULL when never closed)
--   start_cycles    cycle of the B event
--   end_cycles      cycle of the E event
--   dur_cycles      end_cycles - start_cycles (NULL unless closed)
--   status          closed, unclosed (B never closed) or unopened (E with no B before it)
CREATE TABLE aie_spans (
    trace_id       INTEGER NOT NULL,
    pid            VARCHAR NOT NULL,
    tid            VARCHAR,
    name           VARCHAR NOT NULL,
    begin_event_id BIGINT,
    end_event_id   BIGINT,
    start_cycles   BIGINT,
    end_cycles     BIGINT,
    dur_cycles     BIGINT,
    status         VARCHAR NOT NULL
);
