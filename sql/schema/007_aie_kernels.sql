-- Schema v7: the kernel runs of AIE core tiles, stored when a trace loads (and again whenever the
-- views change) by sql/derive/aie_kernels.sql from the view _aie_kernels_live, so the iteration
-- views and AIE reports read them instead of pairing the marks again on every question.

-- (A schema v6 database has a view of this name from an earlier sql/views: the table replaces it.)
DROP VIEW IF EXISTS aie_kernels;

-- Kernel runs of every AIE core tile after robust pairing and the outlier filter (the rules are
-- in sql/modules/aie/kernels.sql).
-- Columns:
--   trace_id      trace of the tile
--   pid           core tile process (aie_tiles)
--   tile_name     the tile as named in the trace (e.g. tile2,1)
--   kernel_index  0-based index of the kernel on its core, in time order
--   start_cycles  cycle of its INSTR_EVENT_0 begin
--   end_cycles    cycle of its INSTR_EVENT_1 end
--   dur_cycles    end_cycles - start_cycles
CREATE TABLE aie_kernels (
    trace_id     INTEGER NOT NULL,
    pid          VARCHAR NOT NULL,
    tile_name    VARCHAR,
    kernel_index BIGINT NOT NULL,
    start_cycles BIGINT NOT NULL,
    end_cycles   BIGINT NOT NULL,
    dur_cycles   BIGINT NOT NULL
);
