-- Schema v3: derived facts of every kernel, computed by SQL (sql/derive/kernel_facts.sql) when a
-- trace is loaded and again whenever the rules or the analysis views change, so that questions
-- asked afterwards read them instead of re-deriving them. The views kernel_ops, kernel_phases,
-- kernel_stacks and kernel_layers read these tables.

-- Distinct Python stacks of a trace (a stack is stored once, however many kernels share it).
-- Columns:
--   trace_id      trace the stack belongs to
--   stack_id      identifier of the stack within the trace
--   python_stack  frame names, outermost first
--   summary       one-line summary (stack_summary)
CREATE TABLE python_stacks (
    trace_id     INTEGER NOT NULL,
    stack_id     BIGINT NOT NULL,
    python_stack VARCHAR[],
    summary      VARCHAR
);

-- What the analysis views derived for every GPU kernel.
-- Columns:
--   trace_id      trace the kernel belongs to
--   kernel_id     row of kernels
--   op            operation family (kernel rules)
--   pattern       label of the matching rule
--   phase         prefill, decode, mixed or none
--   iteration     model step the kernel belongs to (NULL outside every step)
--   annotation    annotation that decided the phase or iteration
--   launch_id     event_id of the launching call in runtime_calls
--   cpu_op        name of the issuing cpu_op
--   stack_id      Python stack of the launch (python_stacks), NULL without frames
--   forward_pass  forward pass used for layers (NULL outside every step)
--   layer         0-based layer within the pass (NULL outside layers)
--   position      0-based place within the layer
CREATE TABLE kernel_facts (
    trace_id     INTEGER NOT NULL,
    kernel_id    BIGINT NOT NULL,
    op           VARCHAR,
    pattern      VARCHAR,
    phase        VARCHAR,
    iteration    BIGINT,
    annotation   VARCHAR,
    launch_id    BIGINT,
    cpu_op       VARCHAR,
    stack_id     BIGINT,
    forward_pass BIGINT,
    layer        INTEGER,
    position     INTEGER
);
