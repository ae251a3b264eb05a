-- Staging objects of one load of an Ascend profiler CSV, created by tracedb.ingest.ascend_csv before
-- the records are read, outside the load's transaction: the macros both readers' SQL and the typing
-- (sql/ingest/ascend_csv_bulk.sql, ascend_csv_records.sql, ascend_csv.sql) share, and the table of
-- records set aside (its columns are those of _staging_rejected in sql/ingest/chrome_stage.sql).

-- A cell's text, NULL when the file writes N/A (or nothing).
CREATE OR REPLACE TEMP MACRO _cell(text) AS
    CASE WHEN trim(text) NOT IN ('', 'N/A', 'NA', 'null', 'None') THEN trim(text) END;

-- Shapes written as """81920,4096;8192,512""" reach us with their inner quotes: drop them.
CREATE OR REPLACE TEMP MACRO _shape(text) AS nullif(trim(_cell(text), '"'), '');

-- Exact nanoseconds from a microsecond text of at most three decimals (spaces, tabs around it
-- allowed); NULL for any other text.
CREATE OR REPLACE TEMP MACRO _exact_ns(text) AS
    TRY_CAST(TRY_CAST(nullif(regexp_extract(trim(text, E' \t\r\n'), '^-?[0-9]+(\.[0-9]{1,3})?$', 0), '')
                      AS DECIMAL(38, 3)) * 1000 AS BIGINT);

CREATE OR REPLACE TEMP TABLE _staging_rejected (event_id BIGINT, reason VARCHAR, raw VARCHAR);
