-- Schema v8: Huawei Ascend profiles, TensorCast performance-model traces and their op mappings.
--
-- Ascend device tasks are kernels like any other: a row of kernels (platform Ascend) each, from a
-- profiler CSV (kernel_details.csv, msprof op_summary_*.csv, TensorCast's forward-pass CSVs) or
-- from the "Ascend Hardware" process of a torch_npu trace_view.json. What only Ascend records sits
-- beside them in ascend_kernels. A TensorCast trace keeps its modelled operators where a Chrome
-- trace keeps events no table models (other_events; the view tc_ops reads them); the tables below
-- hold what the loader parses out of their args. An op_mapping.yaml is loaded like a trace
-- (format op-mapping): one row of traces, its entries in op_mappings, its other top-level keys in
-- trace_metadata.

-- What an Ascend profile records of each kernel besides the common columns of kernels.
-- Columns:
--   trace_id          trace the kernel belongs to
--   kernel_id         row of kernels
--   op_type           operator type (CSV Type / OP Type, e.g. MatMulV2) as written, trimmed ('' when the cell is empty); NULL when the source has no such column (trace_view.json)
--   op_state          OP State (static, dynamic)
--   accelerator_core  core the task ran on (Accelerator Core, or op_summary's Task Type: AI_CORE, AI_VECTOR_CORE, MIX_AIC, AI_CPU, ...)
--   task_type         Task Type of a trace_view.json task (KERNEL_AICORE, KERNEL_AIVEC, ...)
--   task_id           Task ID
--   stream_id         Stream ID
--   model_id          Model ID
--   step_id           Step Id (torch_npu profiler step)
--   device_id         Device_id
--   context_id        Context ID (NULL when N/A)
--   block_dim         Block Dim: cores the task was split over
--   mix_block_dim     Mix Block Dim (mixed cube/vector tasks)
--   wait_ns           Wait Time: idle time before the task on its stream, nanoseconds
--   hf32_eligible     HF32 Eligible (YES/NO)
--   input_shapes      Input Shapes, e.g. 81920,4096;8192,512 (one shape per input, ';'-separated)
--   input_data_types  Input Data Types, e.g. DT_BF16;DT_BF16
--   input_formats     Input Formats, e.g. ND;ND
--   output_shapes     Output Shapes
--   output_data_types Output Data Types
--   output_formats    Output Formats
--   pmu               the remaining columns (PMU counters such as aic_mac_ratio, cube_utilization(%)) as a JSON object of numbers; NULL when none
CREATE TABLE ascend_kernels (
    trace_id          INTEGER NOT NULL,
    kernel_id         BIGINT NOT NULL,
    op_type           VARCHAR,
    op_state          VARCHAR,
    accelerator_core  VARCHAR,
    task_type         VARCHAR,
    task_id           BIGINT,
    stream_id         BIGINT,
    model_id          BIGINT,
    step_id           BIGINT,
    device_id         BIGINT,
    context_id        BIGINT,
    block_dim         INTEGER,
    mix_block_dim     INTEGER,
    wait_ns           BIGINT,
    hf32_eligible     VARCHAR,
    input_shapes      VARCHAR,
    input_data_types  VARCHAR,
    input_formats     VARCHAR,
    output_shapes     VARCHAR,
    output_data_types VARCHAR,
    output_formats    VARCHAR,
    pmu               JSON
);

-- Entries of an op_mapping.yaml: how TensorCast maps a framework operator to the kernel type a
-- profile records. Entries sit under operator_mappings or directly at the top level.
-- Columns:
--   trace_id                trace row of the mapping file (format op-mapping)
--   position                order of the entry in the file (0-based)
--   section                 operator_mappings, or top for an entry at the top level
--   op_name                 operator as written, e.g. aten.mm.default (with or without torch.ops.)
--   kernel_type             kernel type of the profile, e.g. MatMulV2 (NULL when none)
--   alternate_kernel_types  other kernel types the operator may run as
--   zero_cost               true for an operator that costs no device time (views, reshapes)
--   category                category, e.g. communication
--   composite               true for an operator made of several kernels
--   sub_kernels             the kernel types of a composite operator
--   entry                   the whole entry as JSON
CREATE TABLE op_mappings (
    trace_id               INTEGER NOT NULL,
    position               INTEGER NOT NULL,
    section                VARCHAR NOT NULL,
    op_name                VARCHAR NOT NULL,
    kernel_type            VARCHAR,
    alternate_kernel_types VARCHAR[],
    zero_cost              BOOLEAN,
    category               VARCHAR,
    composite              BOOLEAN,
    sub_kernels            VARCHAR[],
    entry                  JSON
);

-- The sub_kernel_durations arg of each TensorCast operator that has one: a Python-literal list
-- of (kernel type, duration in microseconds) pairs, parsed without evaluating it.
-- Columns:
--   trace_id  trace of the operator
--   event_id  the operator's event (other_events)
--   raw       the arg as written
--   status    valid (a non-empty list of (name, number) pairs), empty (an empty list, or an empty
--             text) or malformed (anything else: the duration is then split evenly)
--   problem   why a malformed value is malformed, else NULL
--   pairs     pairs in a valid list, else 0
CREATE TABLE tc_sub_kernel_lists (
    trace_id INTEGER NOT NULL,
    event_id BIGINT NOT NULL,
    raw      VARCHAR,
    status   VARCHAR NOT NULL,
    problem  VARCHAR,
    pairs    INTEGER NOT NULL
);

-- One row per pair of a valid sub_kernel_durations list.
-- Columns:
--   trace_id     trace of the operator
--   event_id     the operator's event (other_events)
--   position     place of the pair in the list (0-based)
--   kernel_type  the pair's kernel type
--   dur_ns       the pair's duration, nanoseconds (from the number's shortest decimal text; sub-nanosecond digits rounded half to even)
CREATE TABLE tc_sub_kernels (
    trace_id    INTEGER NOT NULL,
    event_id    BIGINT NOT NULL,
    position    INTEGER NOT NULL,
    kernel_type VARCHAR,
    dur_ns      BIGINT
);

-- The formats and platforms traces may now have.
COMMENT ON COLUMN traces.format IS 'input format: kineto, mlir-aie, torch_npu (trace_view.json), tensorcast, ascend-kernel-details, ascend-op-summary, ascend-forward-pass or op-mapping';
COMMENT ON COLUMN traces.platform IS 'NVIDIA, AMD, Ascend, AIE, model (a performance-model trace), CPU or unknown';
