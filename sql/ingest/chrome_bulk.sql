-- Bulk typing of a Chrome trace read by DuckDB's JSON reader (tracedb.ingest.bulk): _raw holds
-- one row per event with its exact text, in file order. Each event is typed from its parsed
-- fields: ts and dur as DECIMAL(38, 9), which DuckDB takes from the number's text (never through
-- a double), the other fields as text and args as JSON. An event SQL cannot take exactly is
-- flagged for the Python path (tracedb.ingest.chrome's EventStager), which types it as the
-- streaming reader would. Parameters: $first_rowid, the rowid of _raw's first row (rowids inside a
-- transaction do not start at 0); $max_event_chars, the most text one event may hold;
-- $long_text_chars, the longest string kept in line.
--
-- _raw_parts columns (_raw, in ranges of rows read side by side: tracedb.ingest.bulk._raw_parts):
--   row_id  the row's rowid in _raw; row_id - $first_rowid is the event's index
--   raw     the event's JSON text as written in the file
--
-- _bulk columns (read by the split through _typed_all):
--   event_id      index of the event in the file's event list
--   ts_ns         exact start in integer nanoseconds (NULL without ts)
--   dur_ns        exact duration in integer nanoseconds (NULL without dur)
--   dest          the event table the event goes to
--   ph, cat, pid, tid, id, bp, s  the event's fields as text
--   name, args    its name, and its args as JSON, for every table but python_functions (else NULL)
--   py_name, py_args  the same for python_functions (else NULL)
--   rest          the event's text when it has keys its table has no column for (they go to its
--                 extra; a key with a null value counts as one), or when it needs Python; else NULL
--   needs_python  SQL cannot type the event exactly: not an object; more text than one event may hold
--                 (Python sets it aside), or than a string kept in line (Python cuts such a string); ts or dur null, not a number,
--                 a boolean, with sub-nanosecond digits, beyond the 64-bit nanosecond range, or
--                 negative (dur), a start or end beyond ±2^62 ns; a key given twice (Python keeps the last value, DuckDB the first);
--                 outside ts, a number a double cannot hold exactly (17 characters of digits and
--                 points or more, an exponent), a fraction DuckDB writes back with other digits
--                 (1.10 as 1.1, 0.0000001 as 1e-7; dur aside too), or NaN/Infinity; 255 or more
--                 brackets (deep nesting). Only some events are searched for these (below)
--
-- _flagged columns (the events that need Python, typed by tracedb.ingest.bulk):
--   event_id  index of the event in the file's event list
--   raw       the event's JSON text
--
-- Which texts are searched. DuckDB reads a number with a fraction or an exponent through a double
-- and writes it back as the double's shortest text (a point or an "e" in it), keeps an integer
-- exactly (beyond 64 bits as written) and NaN or Infinity as written; a DECIMAL target (ts, dur)
-- reads the number's own text. The Python path keeps args exactly as written, sets aside an event
-- with an integer beyond 64 bits or NaN/Infinity anywhere, and types the text fields (ph, cat,
-- name, pid, tid, id, bp, s) with the same json_transform as here. So the two can differ only for
-- an event whose args, written back, hold a digit before a point or an "e", 19 digits in a row,
-- or NaN or Infinity; whose text fields hold such an integer, NaN or Infinity, or an object or
-- array; or which has keys that go to the extra (re-read from its text). Only such an event's text
-- is searched, by the regular expression below, as it always was; every other event is typed from
-- its fields alone (on the corpus's 62 MB trace, 1,982 of 239,093 events are searched). For the
-- rest, deep nesting is counted in args, the one place it can be.
--
-- The search for long numbers looks at values and array elements. A value of the key "ts" is left
-- out, since the event's own ts may have 17 digits and more and is taken exactly above; an event
-- whose text has "ts" as a key twice (one nested in args or another object) goes to Python, so a
-- nested ts is never taken for the event's own. (A "{" inside a string, as in a kernel name's
-- {lambda()#1}, no longer counts: the search looks at keys, not braces.)

-- Whether an event's typed fields may differ from its text (see above): f is its json_transform.
CREATE OR REPLACE TEMP MACRO _may_differ(f) AS
    coalesce(regexp_matches(f.args::VARCHAR, '[0-9][.eE]|[0-9]{19}|(?i:nan|inf)'), false)
    OR regexp_matches(concat_ws('|', f.ph, f.cat, f.pid, f.tid, f.id, f.bp, f.s),
                      '(?:^|\|)(?:-?[0-9]{19}|[\[{]|-?(?i:nan|inf|infinity)(?:\||$))')
    OR coalesce(regexp_matches(f.name, '^(?:-?[0-9]{19}|[\[{]|-?(?i:nan|inf|infinity)$)'), false);

-- More than most opening brackets in text (a bound on its nesting; a short text has too few).
CREATE OR REPLACE TEMP MACRO _deep(text, most) AS
    strlen(text) > 2 * most AND strlen(text) - strlen(replace(replace(text, '{', ''), '[', '')) > most;

CREATE OR REPLACE TEMP TABLE _bulk AS
SELECT event_id, ts_ns, dur_ns, dest, f.ph, f.cat, f.pid, f.tid, f.id, f.bp, f.s,
       CASE WHEN dest <> 'python_functions' THEN f.name END AS name,
       CASE WHEN dest <> 'python_functions' THEN f.args END AS args,
       CASE WHEN dest = 'python_functions' THEN f.name END AS py_name,
       CASE WHEN dest = 'python_functions' THEN f.args END AS py_args,
       CASE WHEN needs_python OR more_keys THEN raw END AS rest,
       needs_python
FROM (
    SELECT event_id, raw, f, ts_ns, dur_ns, dest, more_keys,
           CASE
               WHEN NOT starts_with(raw, '{') THEN true
               -- more text than one event may hold (tracedb.ingest.chrome.MAX_EVENT_CHARS): set aside there
               WHEN strlen(raw) > $max_event_chars THEN true
               -- text enough for a string too long to keep in line (tracedb.ingest.chrome.LONG_TEXT_CHARS,
               -- characters; strlen counts bytes, never fewer): Python keeps it in long_texts
               WHEN strlen(raw) > $long_text_chars THEN true
               -- a key twice: JSON parsers in Python and JavaScript keep the last value, DuckDB the
               -- first (only an event with more keys than its known fields can have one twice)
               WHEN more_keys AND len(keys) <> len(list_distinct(keys)) THEN true
               WHEN f.ts IS NULL THEN contains(raw, '"ts"')  -- null, not a number, or only a nested ts
               WHEN ts_ns IS NULL THEN true  -- sub-nanosecond digits or out of range
               WHEN f.dur IS NULL THEN contains(raw, '"dur"')
               WHEN dur_ns IS NULL OR dur_ns < 0 THEN true
               ELSE false
           END
           -- a start or end beyond ±2^62 ns (tracedb.ingest.chrome.TIME_LIMIT): set aside in Python
           OR CASE
               WHEN ts_ns IS NULL THEN false
               WHEN ts_ns NOT BETWEEN -4611686018427387903 AND 4611686018427387903 THEN true
               ELSE coalesce(ts_ns::HUGEINT + dur_ns >= 4611686018427387904, false)
           END
           OR CASE
               -- true and false read as 1 and 0
               WHEN f.ts IN (0, 1) AND json_type(raw, '$.ts') = 'BOOLEAN' THEN true
               WHEN f.dur IN (0, 1) AND json_type(raw, '$.dur') = 'BOOLEAN' THEN true
               -- the common case: nothing in the fields that may differ from the text
               -- (args is nested one level below the event: 254 brackets in it are 255 in the event)
               WHEN NOT (more_keys OR _may_differ(f)) THEN coalesce(_deep(f.args::VARCHAR, 253), false)
               WHEN _deep(raw, 254) THEN true
               -- a long number under another key, in an array or after a second "ts" key; an
               -- exponent; NaN or Infinity as a value (each followed by what ends a value, so
               -- that "info" in a name is not one); a fraction DuckDB writes back otherwise (a
               -- zero after its last digit, 1.10; below 1e-6 without an exponent, 0.0000001)
               -- under a key but ts or dur, or in an array. (?s:.*): any text, newlines too
               ELSE regexp_matches(raw,
                   '(?:[^s]|[^t]s|[^"]ts)"\s*:\s*-?[0-9.]{17,}|[\[,]\s*-?[0-9.]{17,}'
                   || '|[0-9][eE][-+]?[0-9]+\s*[,}\]]|[:,\[]\s*-?(?i:nan|inf(?:inity)?)\s*[,}\]]'
                   || '|(?:(?:[^sr]|[^t]s|[^"]ts|[^u]r|[^d]ur|[^"]dur)"\s*:|[\[,])\s*-?'
                   || '(?:[0-9]+\.[0-9]*[0-9]0|0\.0{6}[0-9]*)\s*[,}\]]'
                   || '|"ts"\s*:(?s:.*)"ts"\s*:')
           END AS needs_python
    FROM (
        SELECT *,
               -- more keys than the table has columns for (a key with a null value counts as
               -- one): the keys counted against the known ones present
               len(keys) >
                   (f.ph IS NOT NULL)::INT + (f.cat IS NOT NULL)::INT + (f.name IS NOT NULL)::INT
                   + (f.pid IS NOT NULL)::INT + (f.tid IS NOT NULL)::INT + (f.ts IS NOT NULL)::INT
                   + (f.dur IS NOT NULL)::INT + (f.args IS NOT NULL)::INT
                   + CASE dest WHEN 'flows' THEN (f.id IS NOT NULL)::INT + (f.bp IS NOT NULL)::INT
                               WHEN 'instants' THEN (f.s IS NOT NULL)::INT
                               WHEN 'other_events' THEN (f.id IS NOT NULL)::INT
                               ELSE 0 END AS more_keys
        FROM (
            SELECT event_id, raw, f, json_keys(CASE WHEN strlen(raw) <= $long_text_chars THEN raw END) AS keys,
                   _dest(f.ph, f.cat) AS dest,
                   -- whole nanoseconds within 64 bits: the cast rounds sub-nanosecond digits, so
                   -- a value the cast changed (or could not take) gives NULL
                   CASE WHEN ts_x = TRY_CAST(ts_x AS BIGINT) THEN TRY_CAST(ts_x AS BIGINT) END AS ts_ns,
                   CASE WHEN dur_x = TRY_CAST(dur_x AS BIGINT) THEN TRY_CAST(dur_x AS BIGINT) END AS dur_ns
            FROM (
                SELECT *, try(f.ts * 1000) AS ts_x, try(f.dur * 1000) AS dur_x  -- NULL past DECIMAL(38, 9)
                FROM (
                    -- an event of more text than a string kept in line is parsed in Python alone
                    -- (DuckDB holds what it parses of a whole vector of events at once: 200 events
                    -- of 40 KiB of Input Dims among 600 took the load's 192 MB)
                    SELECT row_id - $first_rowid AS event_id, raw,
                           json_transform(CASE WHEN strlen(raw) <= $long_text_chars THEN raw END,
                               '{"ts": "DECIMAL(38, 9)", "dur": "DECIMAL(38, 9)", "ph": "VARCHAR",
                               "cat": "VARCHAR", "name": "VARCHAR", "pid": "VARCHAR", "tid": "VARCHAR", "id": "VARCHAR",
                               "bp": "VARCHAR", "s": "VARCHAR", "args": "JSON"}') AS f
                    FROM _raw_parts
                )
            )
        )
    )
);

-- The split reads the events typed here where they are, next to those typed from _staging_events.
-- Each of its statements reads the rows of one table; DuckDB reads a column of every block that
-- holds such a row, and the Python frames (most events, their names and args most bytes) are in
-- every block: their texts sit in columns of their own, so that the other tables' statements
-- read them as NULLs (on a 1 GiB trace of 3 million frames, the split took 5.8 s, 5.0 with this).
CREATE OR REPLACE TEMP VIEW _typed_all AS
SELECT event_id, ts_ns, dur_ns, ph, cat, name, pid, tid, id, bp, s, args, rest, dest
FROM _bulk WHERE NOT needs_python AND dest <> 'python_functions'
UNION ALL
SELECT event_id, ts_ns, dur_ns, ph, cat, py_name, pid, tid, id, bp, s, py_args, rest, dest
FROM _bulk WHERE NOT needs_python AND dest = 'python_functions'
UNION ALL
SELECT * FROM _typed;

CREATE OR REPLACE TEMP TABLE _flagged AS
SELECT event_id, rest::VARCHAR AS raw FROM _bulk WHERE needs_python ORDER BY event_id;
