-- Typing of an Ascend profiler CSV (tracedb.ingest.ascend_csv): the staged records of one file
-- become kernels (platform Ascend) and ascend_kernels, inside the load's transaction, with the
-- parameters $trace_id and $format (ascend-kernel-details, ascend-op-summary or
-- ascend-forward-pass). The three layouts name the same things differently; each column below
-- takes the first of its names the file has (msprof's op_summary: Op Name, OP Type, Task Type,
-- Task Start Time(us), ...). Cells keep their text in kernels.args; N/A reads as NULL in the typed
-- columns (but op_type keeps the Type cell as written, '' when empty, as the comparison reads it). Either
-- reader leaves the records in _csv_typed (sql/ingest/ascend_csv_bulk.sql from DuckDB's CSV
-- reader, sql/ingest/ascend_csv_records.sql from the Python one); the macros _cell and _shape are
-- those of sql/ingest/ascend_csv_stage.sql.
--
-- _csv_typed columns:
--   event_id  index of the record in the file (0-based, blank lines not counted)
--   ts_ns     exact start in integer nanoseconds (NULL when the file has no start or says N/A)
--   dur_ns    exact duration in integer nanoseconds
--   wait_ns   exact wait time in integer nanoseconds (NULL when none)
--   cells     every cell as written, keyed by its header, as JSON text
--   pmu       the cells of the other columns (PMU counters; tracedb.ingest.ascend_csv.TYPED_HEADERS
--             names the typed ones) as numbers, NULL for N/A, as JSON text; NULL when there are none
--   c         the typed headers' cells as text (a STRUCT; NULL for a header the file lacks)

INSERT INTO kernels (trace_id, kernel_id, name, ts_ns, dur_ns, pid, tid, stream, device, args)
SELECT $trace_id, event_id, coalesce(_cell(c."Name"), _cell(c."Op Name"), _cell(c."Type"), _cell(c."OP Type")),
       ts_ns, dur_ns, device_id::VARCHAR, stream_id::VARCHAR, stream_id, device_id, cells::JSON
FROM (SELECT *, TRY_CAST(_cell(c."Stream ID") AS BIGINT) AS stream_id,
             TRY_CAST(_cell(c."Device_id") AS BIGINT) AS device_id
      FROM _csv_typed);

INSERT INTO ascend_kernels
SELECT $trace_id, event_id,
       -- Type keeps its text ('' when empty) so that an empty Type stays told apart from no Type column
       trim(coalesce(c."Type", c."OP Type")),
       _cell(c."OP State"), coalesce(_cell(c."Accelerator Core"), _cell(c."Task Type")),
       NULL, TRY_CAST(_cell(c."Task ID") AS BIGINT), TRY_CAST(_cell(c."Stream ID") AS BIGINT),
       TRY_CAST(_cell(c."Model ID") AS BIGINT), TRY_CAST(_cell(c."Step Id") AS BIGINT),
       TRY_CAST(_cell(c."Device_id") AS BIGINT), TRY_CAST(_cell(c."Context ID") AS BIGINT),
       TRY_CAST(_cell(c."Block Dim") AS INTEGER), TRY_CAST(_cell(c."Mix Block Dim") AS INTEGER), wait_ns,
       _cell(c."HF32 Eligible"), _shape(c."Input Shapes"), _cell(c."Input Data Types"), _cell(c."Input Formats"),
       _shape(c."Output Shapes"), _cell(c."Output Data Types"), _cell(c."Output Formats"), pmu::JSON
FROM _csv_typed;

INSERT INTO rejected_events SELECT $trace_id, event_id, reason, raw FROM _staging_rejected;

UPDATE traces SET format = $format, platform = 'Ascend' WHERE trace_id = $trace_id;

