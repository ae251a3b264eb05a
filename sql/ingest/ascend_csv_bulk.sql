-- Ascend CSV records read by DuckDB's CSV reader (tracedb.ingest.ascend_csv): _csv_raw holds one
-- row per record, every cell as text, in file order (rowid - $first_rowid is the record's index),
-- plus a NULL column for each typed header the file lacks (named in $added) and the marker column
-- __tracedb_none. Times are taken exactly from their text when it has at most three decimals;
-- a record SQL cannot type that way (more decimals, an exponent, a duration that is missing,
-- negative or not a number, a start or end beyond ±2^62 ns) flags the whole file for the Python reader, which types it exactly or
-- sets the record aside with its reason. Parameters: $first_rowid, $added, $typed (the typed
-- headers, tracedb.ingest.ascend_csv.TYPED_HEADERS).
--
-- _csv_bulk columns: those of _csv_typed (documented in sql/ingest/ascend_csv.sql), and
--   needs_python  a time SQL cannot take exactly (see above)
-- When no record needs Python, the reader renames _csv_bulk to _csv_typed. The macros _cell and
-- _exact_ns are those of sql/ingest/ascend_csv_stage.sql.

-- One pass over _csv_raw, no join (the records stay in DuckDB's buffer pool, which spills): the
-- inner SELECT casts the counter columns (those not typed) to numbers beside the record's own
-- computed columns, all named __*; the outer one packs the counters into pmu.
CREATE OR REPLACE TEMP TABLE _csv_bulk AS
SELECT __rid - $first_rowid AS event_id, __ts_ns AS ts_ns, __dur_ns AS dur_ns, __wait_ns AS wait_ns,
       __cells AS cells,
       nullif(json_merge_patch(to_json(struct_pack(*COLUMNS(lambda c: NOT starts_with(c, '__') OR c = '__tracedb_none'))),
                               '{"__tracedb_none": null}'), '{}'::JSON)::VARCHAR AS pmu,
       __c AS c,
       (__start IS NOT NULL AND __ts_ns IS NULL) OR __dur_ns IS NULL OR __dur_ns < 0
       OR (__wait IS NOT NULL AND __wait_ns IS NULL)
       -- a start or end beyond ±2^62 ns (tracedb.ingest.chrome.TIME_LIMIT): set aside in Python
       OR coalesce(__ts_ns NOT BETWEEN -4611686018427387903 AND 4611686018427387903
                   OR __ts_ns::HUGEINT + __dur_ns >= 4611686018427387904, false) AS needs_python
FROM (
    SELECT *, _exact_ns(__start) AS __ts_ns, _exact_ns(__dur) AS __dur_ns, _exact_ns(__wait) AS __wait_ns
    FROM (
        SELECT rowid AS __rid,
               coalesce(_cell("Start Time(us)"), _cell("Task Start Time(us)")) AS __start,
               coalesce(_cell("Duration(us)"), _cell("Task Duration(us)")) AS __dur,
               coalesce(_cell("Wait Time(us)"), _cell("Task Wait Time(us)")) AS __wait,
               to_json(struct_pack(*COLUMNS(lambda c: NOT list_contains($added, c) AND c <> '__tracedb_none')))::VARCHAR
                   AS __cells,
               struct_pack("Name", "Op Name", "Type", "OP Type", "OP State", "Accelerator Core", "Task Type", "Task ID",
                           "Stream ID", "Model ID", "Step Id", "Device_id", "Context ID", "Block Dim", "Mix Block Dim",
                           "HF32 Eligible", "Input Shapes", "Input Data Types", "Input Formats", "Output Shapes",
                           "Output Data Types", "Output Formats") AS __c,
               TRY_CAST(COLUMNS(lambda c: NOT list_contains($typed, c)) AS DOUBLE)
        FROM _csv_raw
    )
);
