-- Ascend CSV records read by the Python reader (tracedb.ingest.ascend_csv, the path of files DuckDB's
-- CSV reader cannot take exactly): each staged record's cells parsed once into _csv_typed, whose
-- columns sql/ingest/ascend_csv.sql documents.
--
-- _csv_rows columns (one row per record that can be a kernel):
--   event_id, ts_ns, dur_ns, wait_ns, cells, pmu  as in _csv_typed

CREATE OR REPLACE TEMP TABLE _csv_typed AS
SELECT event_id, ts_ns, dur_ns, wait_ns, cells, pmu,
       json_transform(cells, '{"Name": "VARCHAR", "Op Name": "VARCHAR", "Type": "VARCHAR",
           "OP Type": "VARCHAR", "OP State": "VARCHAR", "Accelerator Core": "VARCHAR", "Task Type": "VARCHAR",
           "Task ID": "VARCHAR", "Stream ID": "VARCHAR", "Model ID": "VARCHAR", "Step Id": "VARCHAR",
           "Device_id": "VARCHAR", "Context ID": "VARCHAR", "Block Dim": "VARCHAR", "Mix Block Dim": "VARCHAR",
           "HF32 Eligible": "VARCHAR", "Input Shapes": "VARCHAR", "Input Data Types": "VARCHAR",
           "Input Formats": "VARCHAR", "Output Shapes": "VARCHAR", "Output Data Types": "VARCHAR",
           "Output Formats": "VARCHAR"}') AS c
FROM _csv_rows;
