-- Typing of an Ascend profiler CSV (tracedb.ingest.ascend_csv): the staged records of one file
-- become kernels (platform Ascend) and ascend_kernels, inside the load's transaction, with the
-- parameters $trace_id and $format (ascend-kernel-details, ascend-op-summary or
-- ascend-forward-pass). The three layouts name the same things differently; each column below
-- takes the first of its names the file has (msprof's op_summary: Op Name, OP Type, Task Type,
-- Task Start Time(us), ...). Cells keep their text in kernels.args; N/A reads as NULL.
--
-- _csv_rows columns:
--   event_id  index of the record in the file (0-based, blank lines not counted)
--   ts_ns     exact start in integer nanoseconds (NULL when the file has no start or says N/A)
--   dur_ns    exact duration in integer nanoseconds
--   wait_ns   exact wait time in integer nanoseconds (NULL when none)
--   cells     every cell as written, keyed by its header, as JSON text

-- A cell by header name, NULL when the file has no such column or writes N/A (or nothing).
CREATE OR REPLACE TEMP MACRO _cell(cells, header) AS
    CASE WHEN trim(json_extract_string(cells, '$."' || header || '"')) NOT IN ('', 'N/A', 'NA', 'null', 'None')
         THEN trim(json_extract_string(cells, '$."' || header || '"')) END;

-- Shapes written as """81920,4096;8192,512""" reach us with their inner quotes: drop them.
CREATE OR REPLACE TEMP MACRO _shape(text) AS nullif(trim(text, '"'), '');

-- The headers typed into their own columns; the others are kept as numbers in pmu.
CREATE OR REPLACE TEMP MACRO _typed_headers() AS [
    'Step Id', 'Model ID', 'Model Name', 'Infer ID', 'Task ID', 'Stream ID', 'Device_id', 'Name', 'Op Name',
    'Type', 'OP Type', 'OP State', 'Accelerator Core', 'Task Type', 'Start Time(us)', 'Task Start Time(us)',
    'Duration(us)', 'Task Duration(us)', 'Wait Time(us)', 'Task Wait Time(us)', 'Block Dim', 'Mix Block Dim',
    'HF32 Eligible', 'Input Shapes', 'Input Data Types', 'Input Formats', 'Output Shapes', 'Output Data Types',
    'Output Formats', 'Context ID'];

CREATE OR REPLACE TEMP TABLE _csv_typed AS
SELECT event_id, ts_ns, dur_ns, wait_ns, cells::JSON AS cells,
       coalesce(_cell(cells, 'Name'), _cell(cells, 'Op Name'), _cell(cells, 'Type'), _cell(cells, 'OP Type')) AS name,
       -- Type keeps its text ('' when empty) so that an empty Type stays told apart from no Type column
       coalesce(trim(json_extract_string(cells, '$."Type"')), trim(json_extract_string(cells, '$."OP Type"')))
           AS op_type,
       TRY_CAST(_cell(cells, 'Stream ID') AS BIGINT) AS stream_id,
       TRY_CAST(_cell(cells, 'Device_id') AS BIGINT) AS device_id
FROM _csv_rows;

INSERT INTO kernels (trace_id, kernel_id, name, ts_ns, dur_ns, pid, tid, stream, device, args)
SELECT $trace_id, event_id, name, ts_ns, dur_ns, device_id::VARCHAR, stream_id::VARCHAR, stream_id, device_id, cells
FROM _csv_typed;

INSERT INTO ascend_kernels
SELECT $trace_id, event_id, op_type,
       _cell(cells, 'OP State'),
       coalesce(_cell(cells, 'Accelerator Core'), _cell(cells, 'Task Type')),
       NULL,
       TRY_CAST(_cell(cells, 'Task ID') AS BIGINT),
       stream_id,
       TRY_CAST(_cell(cells, 'Model ID') AS BIGINT),
       TRY_CAST(_cell(cells, 'Step Id') AS BIGINT),
       device_id,
       TRY_CAST(_cell(cells, 'Context ID') AS BIGINT),
       TRY_CAST(_cell(cells, 'Block Dim') AS INTEGER),
       TRY_CAST(_cell(cells, 'Mix Block Dim') AS INTEGER),
       wait_ns,
       _cell(cells, 'HF32 Eligible'),
       _shape(_cell(cells, 'Input Shapes')),
       _cell(cells, 'Input Data Types'),
       _cell(cells, 'Input Formats'),
       _shape(_cell(cells, 'Output Shapes')),
       _cell(cells, 'Output Data Types'),
       _cell(cells, 'Output Formats'),
       CASE WHEN len(pmu_keys) > 0 THEN
           to_json(map_from_entries(list_transform(pmu_keys, lambda k: {'key': k, 'value': TRY_CAST(_cell(cells, k) AS DOUBLE)})))
       END
FROM (SELECT *, list_filter(json_keys(cells), lambda k: NOT list_contains(_typed_headers(), k)) AS pmu_keys
      FROM _csv_typed);

INSERT INTO rejected_events SELECT $trace_id, event_id, reason, raw FROM _staging_rejected;

UPDATE traces SET format = $format, platform = 'Ascend' WHERE trace_id = $trace_id;

DROP TABLE _csv_typed;
