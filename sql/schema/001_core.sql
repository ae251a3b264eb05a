-- Schema v1: traces, their metadata and devices, and one table per family of trace events.
--
-- Conventions: every event table carries trace_id (a row of traces) and the event's index in
-- the file's event list (kernel_id in kernels, event_id elsewhere), so (trace_id, event index)
-- names any event across all tables. Times are integer nanoseconds converted exactly from the
-- file's decimal microseconds. pid and tid keep the file's value as text (Kineto mixes integers
-- and names such as "Spans"). args holds every arg of the event as JSON; extra holds any other
-- key of the event that has no column of its own (NULL when there is none).
-- The comment block above each CREATE is applied as COMMENT ON TABLE / COLUMN, so the DuckDB
-- shell shows it (SELECT * FROM duckdb_columns()).

-- Source of trace ids: ids grow and are never reused, even after a trace is removed.
CREATE SEQUENCE trace_ids START 1;

-- One row per loaded trace file.
-- Columns:
--   trace_id        identifier of the trace; every event table refers to it
--   name            unique name of the trace (default: file name without trace suffixes)
--   source_path     absolute path of the file it was loaded from
--   sha256          SHA-256 of the file's bytes as stored (compressed if gzip)
--   file_bytes      size of the file in bytes
--   format          input format: kineto, ...
--   platform        NVIDIA, AMD, CPU or unknown
--   device_name     name of the first device in the trace's device properties
--   event_count     events in the file's event list, rejected ones included
--   rejected_count  events set aside in rejected_events
--   complete        false when the file ended early or broke off with a JSON error
--   problem         why the trace is incomplete (position and parser message), or what was set aside or replaced in a complete one (malformed events, invalid surrogate escapes); else NULL
--   loaded_at       when the load committed (local time)
--   load_seconds    wall time of the load
--   tracedb_version version of tracedb that loaded it
CREATE TABLE traces (
    trace_id        INTEGER PRIMARY KEY,
    name            VARCHAR NOT NULL UNIQUE,
    source_path     VARCHAR,
    sha256          VARCHAR,
    file_bytes      BIGINT,
    format          VARCHAR,
    platform        VARCHAR,
    device_name     VARCHAR,
    event_count     BIGINT,
    rejected_count  BIGINT,
    complete        BOOLEAN,
    problem         VARCHAR,
    loaded_at       TIMESTAMP,
    load_seconds    DOUBLE,
    tracedb_version VARCHAR
);

-- Every top-level key of a trace file other than its event list, in file order.
-- Columns:
--   trace_id  trace the key belongs to
--   position  order of the key in the file (0-based)
--   key       the key, e.g. schemaVersion, deviceProperties, traceName
--   value     its value as JSON
CREATE TABLE trace_metadata (
    trace_id INTEGER NOT NULL,
    position INTEGER NOT NULL,
    key      VARCHAR NOT NULL,
    value    JSON
);

-- One row per entry of a trace's deviceProperties list.
-- Columns:
--   trace_id                   trace the device belongs to
--   device                     device index (the entry's id)
--   name                       device name, e.g. NVIDIA H100 80GB HBM3 (NULL when empty)
--   total_global_mem_bytes     device memory in bytes
--   compute_major              compute capability, major (gfx major on AMD)
--   compute_minor              compute capability, minor
--   num_sms                    streaming multiprocessors / compute units
--   warp_size                  threads per warp (32 NVIDIA, 64 AMD)
--   max_threads_per_block      limit of threads per block
--   max_threads_per_sm         limit of resident threads per multiprocessor
--   regs_per_block             registers available to a block
--   regs_per_sm                registers per multiprocessor
--   shared_mem_per_block_bytes shared memory per block
--   shared_mem_per_sm_bytes    shared memory per multiprocessor
--   properties                 the whole entry as JSON
CREATE TABLE devices (
    trace_id                   INTEGER NOT NULL,
    device                     BIGINT,
    name                       VARCHAR,
    total_global_mem_bytes     BIGINT,
    compute_major              INTEGER,
    compute_minor              INTEGER,
    num_sms                    INTEGER,
    warp_size                  INTEGER,
    max_threads_per_block      INTEGER,
    max_threads_per_sm         INTEGER,
    regs_per_block             INTEGER,
    regs_per_sm                INTEGER,
    shared_mem_per_block_bytes BIGINT,
    shared_mem_per_sm_bytes    BIGINT,
    properties                 JSON
);

-- GPU kernels (Kineto category kernel).
-- Columns:
--   trace_id             trace the kernel belongs to
--   kernel_id            index of the event in the file's event list
--   name                 kernel name as recorded (demangled on NVIDIA)
--   ts_ns                start, integer nanoseconds on the trace clock
--   dur_ns               duration in nanoseconds
--   pid                  process field (the device on most traces)
--   tid                  thread field (the stream on most traces)
--   correlation          id shared with the runtime call that launched it
--   external_id          id shared with the cpu_op that issued it (NULL in graph replays)
--   stream               GPU stream
--   device               GPU index
--   context              CUDA context
--   queued               queue time reported by CUPTI
--   grid                 grid dimensions [x, y, z]
--   block                block dimensions [x, y, z]
--   registers_per_thread registers per thread
--   shared_memory_bytes  static + dynamic shared memory per block
--   blocks_per_sm        blocks per multiprocessor
--   warps_per_sm         warps per multiprocessor
--   occupancy_pct        estimated achieved occupancy, percent
--   kind                 ROCm dispatch kind (e.g. Dispatch Kernel)
--   args                 all args of the event as JSON
--   extra                other keys of the event as JSON, NULL when none
CREATE TABLE kernels (
    trace_id             INTEGER NOT NULL,
    kernel_id            BIGINT NOT NULL,
    name                 VARCHAR,
    ts_ns                BIGINT,
    dur_ns               BIGINT,
    pid                  VARCHAR,
    tid                  VARCHAR,
    correlation          BIGINT,
    external_id          BIGINT,
    stream               BIGINT,
    device               BIGINT,
    context              BIGINT,
    queued               BIGINT,
    grid                 INTEGER[],
    block                INTEGER[],
    registers_per_thread INTEGER,
    shared_memory_bytes  BIGINT,
    blocks_per_sm        DOUBLE,
    warps_per_sm         DOUBLE,
    occupancy_pct        DOUBLE,
    kind                 VARCHAR,
    args                 JSON,
    extra                JSON
);

-- GPU memory copies and memsets (categories gpu_memcpy and gpu_memset).
-- Columns:
--   trace_id       trace the operation belongs to
--   event_id       index of the event in the file's event list
--   cat            gpu_memcpy or gpu_memset
--   name           e.g. Memcpy HtoD (Pinned -> Device)
--   ts_ns          start, nanoseconds
--   dur_ns         duration, nanoseconds
--   pid            process field (the device)
--   tid            thread field (the stream)
--   correlation    id shared with the runtime call that issued it
--   external_id    id shared with the cpu_op that issued it
--   stream         GPU stream
--   device         GPU index
--   context        CUDA context
--   kind           ROCm copy kind (e.g. DtoD)
--   bytes          bytes copied or set
--   bandwidth_gbs  bandwidth reported by the profiler, GB/s
--   args           all args as JSON
--   extra          other keys of the event as JSON
CREATE TABLE memory_ops (
    trace_id      INTEGER NOT NULL,
    event_id      BIGINT NOT NULL,
    cat           VARCHAR,
    name          VARCHAR,
    ts_ns         BIGINT,
    dur_ns        BIGINT,
    pid           VARCHAR,
    tid           VARCHAR,
    correlation   BIGINT,
    external_id   BIGINT,
    stream        BIGINT,
    device        BIGINT,
    context       BIGINT,
    kind          VARCHAR,
    bytes         BIGINT,
    bandwidth_gbs DOUBLE,
    args          JSON,
    extra         JSON
);

-- CUDA/HIP runtime and driver API calls (categories cuda_runtime and cuda_driver; ROCm uses
-- cuda_runtime for hip* calls).
-- Columns:
--   trace_id     trace the call belongs to
--   event_id     index of the event in the file's event list
--   cat          cuda_runtime or cuda_driver
--   name         API name, e.g. cudaLaunchKernel, hipGraphLaunch, cuLaunchKernel
--   ts_ns        start, nanoseconds
--   dur_ns       duration, nanoseconds
--   pid          process id
--   tid          CPU thread id
--   correlation  id shared with the kernels / memory ops the call launched
--   external_id  id shared with the enclosing cpu_op
--   callback_id  CUPTI cbid (NVIDIA) or cid (ROCm)
--   args         all args as JSON
--   extra        other keys of the event as JSON
CREATE TABLE runtime_calls (
    trace_id    INTEGER NOT NULL,
    event_id    BIGINT NOT NULL,
    cat         VARCHAR,
    name        VARCHAR,
    ts_ns       BIGINT,
    dur_ns      BIGINT,
    pid         VARCHAR,
    tid         VARCHAR,
    correlation BIGINT,
    external_id BIGINT,
    callback_id BIGINT,
    args        JSON,
    extra       JSON
);

-- PyTorch operators on the CPU (category cpu_op).
-- Columns:
--   trace_id           trace the op belongs to
--   event_id           index of the event in the file's event list
--   name               operator, e.g. aten::mm
--   ts_ns              start, nanoseconds
--   dur_ns             duration, nanoseconds
--   pid                process id
--   tid                thread id
--   external_id        id shared with the runtime calls and kernels it issued
--   sequence_number    autograd sequence number
--   fwd_thread_id      forward thread id (backward ops)
--   record_function_id record function id
--   ev_idx             Kineto's own event index (Ev Idx)
--   input_dims         Input Dims as JSON (list of shapes)
--   input_types        Input type as JSON (list of dtype names)
--   input_strides      Input Strides as JSON
--   concrete_inputs    Concrete Inputs as JSON
--   args               all args as JSON
--   extra              other keys of the event as JSON
CREATE TABLE cpu_ops (
    trace_id           INTEGER NOT NULL,
    event_id           BIGINT NOT NULL,
    name               VARCHAR,
    ts_ns              BIGINT,
    dur_ns             BIGINT,
    pid                VARCHAR,
    tid                VARCHAR,
    external_id        BIGINT,
    sequence_number    BIGINT,
    fwd_thread_id      BIGINT,
    record_function_id BIGINT,
    ev_idx             BIGINT,
    input_dims         JSON,
    input_types        JSON,
    input_strides      JSON,
    concrete_inputs    JSON,
    args               JSON,
    extra              JSON
);

-- Python frames recorded with with_stack=True (category python_function).
-- Columns:
--   trace_id         trace the frame belongs to
--   event_id         index of the event in the file's event list
--   name             frame, e.g. vllm/model_executor/models/llama.py(340): forward
--   ts_ns            start, nanoseconds
--   dur_ns           duration, nanoseconds
--   pid              process id
--   tid              thread id
--   python_id        Python id of the frame
--   python_parent_id Python id of the calling frame (NULL at a root)
--   python_thread    Python thread index
--   args             all args as JSON
--   extra            other keys of the event as JSON
CREATE TABLE python_functions (
    trace_id         INTEGER NOT NULL,
    event_id         BIGINT NOT NULL,
    name             VARCHAR,
    ts_ns            BIGINT,
    dur_ns           BIGINT,
    pid              VARCHAR,
    tid              VARCHAR,
    python_id        BIGINT,
    python_parent_id BIGINT,
    python_thread    BIGINT,
    args             JSON,
    extra            JSON
);

-- User annotations: record_function ranges on the CPU (user_annotation) and their GPU-side
-- projections (gpu_user_annotation), e.g. ProfilerStep#6, execute_context_1(...)_generation_0(0).
-- Columns:
--   trace_id     trace the annotation belongs to
--   event_id     index of the event in the file's event list
--   cat          user_annotation or gpu_user_annotation
--   on_gpu       true for gpu_user_annotation
--   name         annotation text
--   ts_ns        start, nanoseconds
--   dur_ns       duration, nanoseconds
--   pid          process id (device for GPU annotations)
--   tid          thread id (stream for GPU annotations)
--   external_id  External id
--   correlation  correlation id, when present
--   device       GPU index (GPU annotations)
--   stream       GPU stream (GPU annotations)
--   args         all args as JSON
--   extra        other keys of the event as JSON
CREATE TABLE annotations (
    trace_id    INTEGER NOT NULL,
    event_id    BIGINT NOT NULL,
    cat         VARCHAR,
    on_gpu      BOOLEAN,
    name        VARCHAR,
    ts_ns       BIGINT,
    dur_ns      BIGINT,
    pid         VARCHAR,
    tid         VARCHAR,
    external_id BIGINT,
    correlation BIGINT,
    device      BIGINT,
    stream      BIGINT,
    args        JSON,
    extra       JSON
);

-- Flow events (ph s, t, f): CPU-to-GPU launch links (ac2g), forward/backward links (fwdbwd), ...
-- Columns:
--   trace_id  trace the flow event belongs to
--   event_id  index of the event in the file's event list
--   ph        s (start), t (step) or f (finish)
--   cat       flow category, e.g. ac2g, fwdbwd
--   name      flow name
--   flow_id   the event's id as text (the correlation id for ac2g)
--   ts_ns     time, nanoseconds
--   pid       process field
--   tid       thread field
--   bp        binding point (e = enclosing slice)
--   args      all args as JSON
--   extra     other keys of the event as JSON
CREATE TABLE flows (
    trace_id INTEGER NOT NULL,
    event_id BIGINT NOT NULL,
    ph       VARCHAR,
    cat      VARCHAR,
    name     VARCHAR,
    flow_id  VARCHAR,
    ts_ns    BIGINT,
    pid      VARCHAR,
    tid      VARCHAR,
    bp       VARCHAR,
    args     JSON,
    extra    JSON
);

-- Instant events (ph i or I): memory events ([memory]), iteration starts, markers.
-- Columns:
--   trace_id  trace the instant belongs to
--   event_id  index of the event in the file's event list
--   ph        i or I
--   cat       category, NULL when the event has none
--   name      instant name
--   scope     s field: t (thread), p (process) or g (global)
--   ts_ns     time, nanoseconds
--   pid       process field
--   tid       thread field
--   args      all args as JSON
--   extra     other keys of the event as JSON
CREATE TABLE instants (
    trace_id INTEGER NOT NULL,
    event_id BIGINT NOT NULL,
    ph       VARCHAR,
    cat      VARCHAR,
    name     VARCHAR,
    scope    VARCHAR,
    ts_ns    BIGINT,
    pid      VARCHAR,
    tid      VARCHAR,
    args     JSON,
    extra    JSON
);

-- Counter events (ph C): each arg is one series value at ts.
-- Columns:
--   trace_id  trace the sample belongs to
--   event_id  index of the event in the file's event list
--   cat       category, NULL when none
--   name      counter name
--   ts_ns     time, nanoseconds
--   pid       process field
--   tid       thread field
--   args      the series values as JSON ({"series": value, ...})
--   extra     other keys of the event as JSON
CREATE TABLE counters (
    trace_id INTEGER NOT NULL,
    event_id BIGINT NOT NULL,
    cat      VARCHAR,
    name     VARCHAR,
    ts_ns    BIGINT,
    pid      VARCHAR,
    tid      VARCHAR,
    args     JSON,
    extra    JSON
);

-- Metadata events (ph M): process and thread names, sort indices, labels.
-- Columns:
--   trace_id  trace the event belongs to
--   event_id  index of the event in the file's event list
--   name      process_name, thread_name, process_sort_index, thread_sort_index, process_labels, ...
--   pid       process field
--   tid       thread field
--   ts_ns     time, nanoseconds (NULL when absent)
--   value     the event's main value as text (args.name, args.sort_index or args.labels)
--   args      all args as JSON
--   extra     other keys of the event as JSON
CREATE TABLE metadata_events (
    trace_id INTEGER NOT NULL,
    event_id BIGINT NOT NULL,
    name     VARCHAR,
    pid      VARCHAR,
    tid      VARCHAR,
    ts_ns    BIGINT,
    value    VARCHAR,
    args     JSON,
    extra    JSON
);

-- Every event no other table models: B/E duration events, X events of other categories (Trace,
-- overhead, cuda_sync, ...), async and object events, events without ph.
-- Columns:
--   trace_id  trace the event belongs to
--   event_id  index of the event in the file's event list
--   ph        phase letter as written, NULL when missing
--   cat       category, NULL when missing
--   name      event name
--   ts_ns     time, nanoseconds
--   dur_ns    duration, nanoseconds (X events)
--   pid       process field
--   tid       thread field
--   id        id field as text
--   args      all args as JSON
--   extra     other keys of the event as JSON
CREATE TABLE other_events (
    trace_id INTEGER NOT NULL,
    event_id BIGINT NOT NULL,
    ph       VARCHAR,
    cat      VARCHAR,
    name     VARCHAR,
    ts_ns    BIGINT,
    dur_ns   BIGINT,
    pid      VARCHAR,
    tid      VARCHAR,
    id       VARCHAR,
    args     JSON,
    extra    JSON
);

-- Events set aside while loading because they cannot be typed: a ts that is not a number, a null
-- or negative dur, an integer beyond 64 bits, args nested too deeply, an entry that is not an
-- object. The rest of the trace loads normally.
-- Columns:
--   trace_id  trace the event came from
--   event_id  index of the event in the file's event list
--   reason    why it was set aside
--   raw       the event as JSON text
CREATE TABLE rejected_events (
    trace_id INTEGER NOT NULL,
    event_id BIGINT NOT NULL,
    reason   VARCHAR NOT NULL,
    raw      VARCHAR
);
