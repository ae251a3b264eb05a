-- Staging objects of one load of a Chrome trace, created by the loader before the events are read,
-- outside the load's transaction (tracedb.ingest.loader: staged rows then spill to disk freely),
-- and dropped when the load ends, committed or not (tracedb.ingest.bulk.drop_staging).
-- Both readers end in _typed_all, which the split reads: the bulk reader types most events
-- straight from their text (sql/ingest/chrome_bulk.sql, which redefines _typed_all to add them);
-- the events the streaming reader or the exact Python path parse go through _staging_events and
-- are typed into _typed by the split's first statement.
--
-- _staging_events columns (one row per event parsed in Python, tracedb.ingest.chrome.EventStager):
--   event_id  index of the event in the file's event list
--   ts_ns     exact start in integer nanoseconds (NULL when the event has no ts)
--   dur_ns    exact duration in integer nanoseconds (NULL when the event has no dur)
--   args      the event's args as JSON text, digits exactly as in the file
--   rest      every other key of the event (ph, cat, name, pid, tid, id, ...) as JSON text
--
-- _staging_rejected columns (events set aside, for rejected_events):
--   event_id  index of the event in the file's event list
--   reason    why the event cannot be typed
--   raw       the event as JSON text
--
-- _staging_long columns (string values too long to keep in line, for long_texts: the staged
-- event holds each cut, followed by a note):
--   event_id  index of the event in the file's event list
--   field     where in the event, as a JSON Pointer (/name, /args/...)
--   piece     0-based position of the piece in the string
--   text      the piece (tracedb.ingest.chrome.LONG_PIECE_CHARS characters, the last one fewer)
--
-- _typed columns (one row per event, ready for the event tables):
--   event_id  index of the event in the file's event list
--   ts_ns     exact start in integer nanoseconds
--   dur_ns    exact duration in integer nanoseconds
--   ph, cat, name, pid, tid, id, bp, s  the event's fields of those names, as text
--   args      the event's args as JSON
--   rest      the event as JSON when it may have keys no column holds (ts, dur and args are
--             ignored in it), else NULL
--   dest      the event table the event goes to

-- The event table of an event. X events by category, as Kineto's activity types name them: a
-- device's work (kernel; mtia_ccp_events, an MTIA device's events) to kernels, gpu_memcpy and
-- gpu_memset to memory_ops, the runtime and driver calls of every device (cuda_runtime,
-- cuda_driver, mtia_runtime, xpu_runtime, xpu_driver, privateuse1_runtime, privateuse1_driver,
-- glow_runtime) to runtime_calls, cpu_op, python_function, user_annotation/gpu_user_annotation;
-- s/t/f flows, i/I instants, C counters, M metadata; everything else to other_events.
CREATE OR REPLACE TEMP MACRO _dest(ph, cat) AS
    CASE
        WHEN ph = 'X' THEN CASE cat
            WHEN 'kernel' THEN 'kernels'
            WHEN 'mtia_ccp_events' THEN 'kernels'
            WHEN 'gpu_memcpy' THEN 'memory_ops'
            WHEN 'gpu_memset' THEN 'memory_ops'
            WHEN 'cuda_runtime' THEN 'runtime_calls'
            WHEN 'cuda_driver' THEN 'runtime_calls'
            WHEN 'mtia_runtime' THEN 'runtime_calls'
            WHEN 'xpu_runtime' THEN 'runtime_calls'
            WHEN 'xpu_driver' THEN 'runtime_calls'
            WHEN 'privateuse1_runtime' THEN 'runtime_calls'
            WHEN 'privateuse1_driver' THEN 'runtime_calls'
            WHEN 'glow_runtime' THEN 'runtime_calls'
            WHEN 'cpu_op' THEN 'cpu_ops'
            WHEN 'python_function' THEN 'python_functions'
            WHEN 'user_annotation' THEN 'annotations'
            WHEN 'gpu_user_annotation' THEN 'annotations'
            ELSE 'other_events' END
        WHEN ph IN ('s', 't', 'f') THEN 'flows'
        WHEN ph IN ('i', 'I') THEN 'instants'
        WHEN ph = 'C' THEN 'counters'
        WHEN ph = 'M' THEN 'metadata_events'
        ELSE 'other_events'
    END;

-- Keys of an event that its table has no column for: rest minus the keys set to null in patch
-- (every patch names ts, dur and args: they have columns of their own).
-- (json_merge_patch takes a NULL rest for an empty object, hence the CASE).
CREATE OR REPLACE TEMP MACRO _extra(rest, patch) AS
    CASE WHEN rest IS NOT NULL THEN nullif(json_merge_patch(rest, patch), '{}'::JSON) END;

-- An args value as json_extract(args, '$.' || quoted_key) gives it, taken from the json_transform
-- that reads the typed args (transformed). That one gives SQL NULL for a key whose value is null,
-- where json_extract gives JSON null: only then is args parsed again. quoted_key: the key as
-- written in args, quotes included.
CREATE OR REPLACE TEMP MACRO _args_json(transformed, args, quoted_key) AS
    CASE WHEN transformed IS NOT NULL THEN transformed
         WHEN contains(args::VARCHAR, quoted_key) THEN json_extract(args, '$.' || quoted_key) END;

CREATE OR REPLACE TEMP TABLE _staging_events (
    event_id BIGINT, ts_ns BIGINT, dur_ns BIGINT, args VARCHAR, rest VARCHAR
);

CREATE OR REPLACE TEMP TABLE _staging_rejected (event_id BIGINT, reason VARCHAR, raw VARCHAR);

CREATE OR REPLACE TEMP TABLE _staging_long (event_id BIGINT, field VARCHAR, piece INTEGER, text VARCHAR);

CREATE OR REPLACE TEMP TABLE _typed (
    event_id BIGINT, ts_ns BIGINT, dur_ns BIGINT,
    ph VARCHAR, cat VARCHAR, name VARCHAR, pid VARCHAR, tid VARCHAR, id VARCHAR, bp VARCHAR, s VARCHAR,
    args JSON, rest JSON, dest VARCHAR
);

-- Every typed event of the load (the bulk reader adds its own).
CREATE OR REPLACE TEMP VIEW _typed_all AS SELECT * FROM _typed;
