-- Schema v13: device peaks, for how close each operation runs to its device's roofline. Like the
-- kernel rules: the packaged rows (source 'builtin', sql/rules/device_peaks.csv) and a user's own
-- (tracedb rules add my_peaks.csv), tried first.

-- Dense peak throughput and memory bandwidth of a device, matched to a trace by its recorded
-- device name. User rows are tried before built-in ones; within a source, lower priorities first.
-- Columns:
--   source     'builtin' or the name of the user's file
--   priority   order of trial (lower first)
--   regex      RE2 expression matched against the trace's device name, case-insensitively
--   device     the device the row describes
--   fp32       dense FP32 matrix peak, TFLOP/s (NULL: not published)
--   tf32       dense TF32 matrix peak, TFLOP/s
--   bf16       dense BF16 matrix peak, TFLOP/s
--   fp16       dense FP16 matrix peak, TFLOP/s
--   fp8        dense FP8 matrix peak, TFLOP/s
--   mem_tbps   memory bandwidth, TB/s (10^12 bytes per second)
--   reference  where the numbers come from (the vendor's datasheet)
CREATE TABLE device_peaks (
    source    VARCHAR NOT NULL,
    priority  INTEGER NOT NULL,
    regex     VARCHAR NOT NULL,
    device    VARCHAR NOT NULL,
    fp32      DOUBLE,
    tf32      DOUBLE,
    bf16      DOUBLE,
    fp16      DOUBLE,
    fp8       DOUBLE,
    mem_tbps  DOUBLE,
    reference VARCHAR
);
