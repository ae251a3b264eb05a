-- Strings of events too long to keep in line, read whole again.

-- A string of an event kept whole in long_texts (longer than 16 KiB: its event's tables hold its
-- first characters and a note), by trace, event and JSON Pointer (/name); NULL when there is none.
CREATE OR REPLACE MACRO long_text(want_trace, want_event, want_field) AS (
    SELECT string_agg(text, '' ORDER BY piece) FROM long_texts
    WHERE trace_id = want_trace AND event_id = want_event AND field = want_field
);
