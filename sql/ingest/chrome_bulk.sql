-- Bulk typing of a Chrome trace read by DuckDB's JSON reader (tracedb.ingest.bulk): _raw holds
-- one row per event with its exact text, in file order. Times are taken from that text exactly;
-- an event SQL cannot take exactly is flagged for the Python path (tracedb.ingest.chrome's
-- EventStager), which types it as the streaming reader would. Parameter: $first_rowid, the
-- rowid of _raw's first row (rowids inside a transaction do not start at 0).
--
-- _raw columns:
--   raw  the event's JSON text as written in the file; rowid - $first_rowid is the event's index
--
-- _bulk columns (read by the split through _typed_all):
--   event_id      index of the event in the file's event list
--   f             the event's ts, dur, ph, cat, name, pid, tid, id, bp, s as text, args as JSON
--   has_ph        the event is an object with a ph key (a bare array of them is a trace)
--   ts_ns         exact start in integer nanoseconds, when ts is a number of at most 3 decimals
--   dur_ns        exact duration in integer nanoseconds, likewise
--   dest          the event table the event goes to
--   rest          the event's text when it has keys its table has no column for (they go to its
--                 extra; a key with a null value counts as one), or when it needs Python; else NULL
--   needs_python  SQL cannot type the event exactly: not an object; ts or dur missing from the
--                 text, with an exponent or sub-nanosecond digits, out of range, negative (dur) or
--                 null; a number elsewhere that a double cannot hold exactly (16 digits or
--                 more, an exponent) or NaN/Infinity; 255 or more brackets (deep nesting)
--
-- _flagged columns (the events that need Python, typed by tracedb.ingest.bulk):
--   event_id  index of the event in the file's event list
--   raw       the event's JSON text
--
-- The first "ts"/"dur" in the text is taken for the event's own only when it agrees with the
-- top-level value DuckDB parses; when a nested key comes first the event is flagged instead. The
-- search for long numbers leaves out that ts, which may have 17 digits and more; dur cannot have
-- them and at most 3 decimals.

CREATE OR REPLACE TEMP TABLE _bulk AS
SELECT event_id, f, f.ph IS NOT NULL AS has_ph, ts_ns, dur_ns, dest,
       -- more keys than the table has columns for: count the keys against the known ones present
       CASE WHEN needs_python OR len(json_keys(raw)) >
                (f.ph IS NOT NULL)::INT + (f.cat IS NOT NULL)::INT + (f.name IS NOT NULL)::INT
                + (f.pid IS NOT NULL)::INT + (f.tid IS NOT NULL)::INT + (f.ts IS NOT NULL)::INT
                + (f.dur IS NOT NULL)::INT + (f.args IS NOT NULL)::INT
                + CASE dest WHEN 'flows' THEN (f.id IS NOT NULL)::INT + (f.bp IS NOT NULL)::INT
                            WHEN 'instants' THEN (f.s IS NOT NULL)::INT
                            WHEN 'other_events' THEN (f.id IS NOT NULL)::INT
                            ELSE 0 END
            THEN raw END AS rest,
       needs_python
FROM (
    SELECT event_id, raw, f, ts_ns, dur_ns, dest,
           CASE
               WHEN NOT starts_with(raw, '{') THEN true
               WHEN f.ts IS NULL AND contains(raw, '"ts"') THEN true  -- null, or only a nested ts
               WHEN (f.ts IS NULL) <> (ts_text IS NULL) THEN true
               WHEN ts_text IS NOT NULL
                    AND (ts_ns IS NULL OR TRY_CAST(ts_text AS DOUBLE) <> TRY_CAST(f.ts AS DOUBLE)) THEN true
               WHEN f.dur IS NULL THEN dur_text IS NOT NULL OR contains(raw, '"dur"')
               WHEN dur_text IS NULL OR dur_ns IS NULL OR dur_ns < 0 THEN true
               WHEN TRY_CAST(dur_text AS DOUBLE) <> TRY_CAST(f.dur AS DOUBLE) THEN true
               WHEN length(raw) > 500
                    AND length(raw) - length(replace(replace(raw, '{', ''), '[', '')) > 254 THEN true
               ELSE regexp_matches(replace(raw, ts_match, ''),
                                   '[0-9.]{17,}\s*[,}\]]|[0-9][eE][-+]?[0-9]+\s*[,}\]]|[:,\[]\s*-?(?i:nan|inf)')
           END AS needs_python
    FROM (
        SELECT *, _dest(f.ph, f.cat) AS dest,
               TRY_CAST(TRY_CAST(ts_text AS DECIMAL(38, 3)) * 1000 AS BIGINT) AS ts_ns,
               TRY_CAST(TRY_CAST(dur_text AS DECIMAL(38, 3)) * 1000 AS BIGINT) AS dur_ns
        FROM (
            SELECT *,
                   nullif(regexp_extract(ts_match, '^"ts"\s*:\s*"?(-?[0-9]+(?:\.[0-9]{1,3})?)"?\s*[,}]$', 1), '')
                       AS ts_text,
                   nullif(regexp_extract(dur_match, '^"dur"\s*:\s*"?(-?[0-9]+(?:\.[0-9]{1,3})?)"?\s*[,}]$', 1), '')
                       AS dur_text
            FROM (
                SELECT rowid - $first_rowid AS event_id, raw,
                       json_transform(raw, '{"ts": "VARCHAR", "dur": "VARCHAR", "ph": "VARCHAR", "cat": "VARCHAR",
                           "name": "VARCHAR", "pid": "VARCHAR", "tid": "VARCHAR", "id": "VARCHAR", "bp": "VARCHAR",
                           "s": "VARCHAR", "args": "JSON"}') AS f,
                       regexp_extract(raw, '"ts"\s*:\s*"?-?[0-9][0-9.]*"?\s*[,}]', 0) AS ts_match,
                       regexp_extract(raw, '"dur"\s*:\s*"?-?[0-9][0-9.]*"?\s*[,}]', 0) AS dur_match
                FROM _raw
            )
        )
    )
);

-- The split reads the events typed here where they are, next to those typed from _staging_events.
CREATE OR REPLACE TEMP VIEW _typed_all AS
SELECT event_id, ts_ns, dur_ns, f.ph, f.cat, f.name, f.pid, f.tid, f.id, f.bp, f.s, f.args, rest, dest
FROM _bulk WHERE NOT needs_python
UNION ALL
SELECT * FROM _typed;

CREATE OR REPLACE TEMP TABLE _flagged AS
SELECT event_id, rest::VARCHAR AS raw FROM _bulk WHERE needs_python ORDER BY event_id;
