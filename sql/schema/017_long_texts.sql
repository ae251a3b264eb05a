-- Schema v17: strings of an event too long to keep in line. A string value longer than 16 KiB
-- (tracedb.ingest.chrome.LONG_TEXT_CHARS; real kernel names run to 5 KiB) is kept in its event's
-- tables as its first characters and a note ("…[N characters, sha256 XXXXXXXX; whole in
-- long_texts]"), and here whole, in pieces of 1,000 characters in order: DuckDB holds every long
-- string of a table's row group in memory when it writes one, so that many of them took more than
-- a load's memory (60 kernel names of 5 MiB, 5,000 of 60 KiB), while pieces under 4 KiB spill to
-- disk.
-- Read a string whole with string_agg(text, '' ORDER BY piece), or the long_text macro.

-- A long string value of an event, in pieces.
-- Columns:
--   trace_id  trace the event came from
--   event_id  index of the event in the file's event list
--   field     where in the event, as a JSON Pointer (RFC 6901): /name, /args/Input Dims/0
--   piece     0-based position of this piece in the string
--   text      the piece: 1,000 characters, the last one fewer
CREATE TABLE IF NOT EXISTS long_texts (
    trace_id INTEGER NOT NULL,
    event_id BIGINT NOT NULL,
    field    VARCHAR NOT NULL,
    piece    INTEGER NOT NULL,
    text     VARCHAR NOT NULL
);
