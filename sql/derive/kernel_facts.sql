-- include: classify.align
-- include: classify.kernel_ops
-- include: classify.kernel_ops_live
-- include: classify.launches
-- include: steps.layers
-- include: steps.order
-- include: steps.phases
-- include: steps.stacks

-- Derives kernel_facts and python_stacks of one trace ($trace_id) from the live definitions in
-- sql/modules (_kernel_ops_live, _kernel_phases_live, _launch_leaves_live, _stack_frames_of,
-- _launch_stack_keys_of, _open_stacks_of, _kernel_layers_live, _kernel_order_live).
-- Runs inside the load transaction, and again for every trace when rules or views change; a trace
-- without kernels (an AIE or TensorCast trace, a CPU-only profile) has neither, so it is skipped.
-- When: EXISTS (SELECT 1 FROM kernels k WHERE k.trace_id = traces.trace_id)

DELETE FROM kernel_facts WHERE trace_id = $trace_id;

DELETE FROM python_stacks WHERE trace_id = $trace_id;

-- Each kernel's launch, read by the operations, phases, stacks and calls below: found once here
-- (a temporary table shadows the view while it exists, as the kernel_facts stages do below).
CREATE OR REPLACE TEMP TABLE kernel_launches AS
SELECT * FROM kernel_launches WHERE trace_id = $trace_id;

-- Python stacks: each launch's innermost frame and how many frames of its chain had ended
-- (sql/modules/steps/stacks.sql); a stack is built once per distinct (leaf, ended), summarised and
-- numbered once per distinct stack, not once per launch.
CREATE OR REPLACE TEMP TABLE _derive_leaves AS
SELECT * FROM _launch_leaves_live WHERE trace_id = $trace_id;

CREATE OR REPLACE TEMP TABLE _derive_chain_frames AS
SELECT * FROM _stack_frames_of('_derive_leaves');

CREATE OR REPLACE TEMP TABLE _derive_keys AS
SELECT * FROM _launch_stack_keys_of('_derive_leaves', '_derive_chain_frames');

CREATE OR REPLACE TEMP TABLE _derive_stack_ids AS
WITH stacks AS MATERIALIZED (
    SELECT * FROM _open_stacks_of('_derive_keys', '_derive_chain_frames')
), numbered AS (
    -- a summary per distinct stack: different leaves often share one
    SELECT stack_key, python_stack, stack_summary(python_stack) AS summary,
           row_number() OVER (ORDER BY python_stack) AS stack_id
    FROM (SELECT DISTINCT stack_key, python_stack FROM stacks)
)
SELECT s.trace_id, s.leaf_id, s.ended, n.python_stack, n.summary, n.stack_id
FROM stacks s JOIN numbered n USING (stack_key);

INSERT INTO python_stacks
SELECT DISTINCT trace_id, stack_id, python_stack, summary FROM _derive_stack_ids;

CREATE OR REPLACE TEMP TABLE _derive_stacks AS
SELECT k.trace_id, k.launch_id, n.stack_id
FROM _derive_keys k JOIN _derive_stack_ids n USING (trace_id, leaf_id, ended);

-- kernel_facts is built in stages, each a temporary table named kernel_facts: while it exists the
-- views read it in place of the stored table (DuckDB looks temporary objects up first), so the
-- phases see the operations, the layers the phases, the order the layers, and the stored table
-- is written once, at the end, with every column (no UPDATE of stored rows).
CREATE OR REPLACE TEMP TABLE kernel_facts AS SELECT * FROM kernel_facts LIMIT 0;

-- a kernel's call: the kernels of one directly launched cpu_op call with the same operation; a
-- GEMM helper kernel (gemm_helper) that is not already one with its GEMM joins the kernel before
-- it on its stream when that kernel has its operation
INSERT INTO temp.kernel_facts (trace_id, kernel_id, op, pattern, decided_by, launch_id, cpu_op, stack_id, call_id)
WITH base AS MATERIALIZED (
    SELECT k.trace_id, k.kernel_id, k.pid, k.tid, k.ts_ns, o.op, o.pattern, o.decided_by,
           l.launch_id, l.cpu_op, s.stack_id, gemm_helper(k.name) IS NOT NULL AS helper,
           CASE WHEN l.cpu_op_id IS NOT NULL AND NOT l.graph
                THEN first(k.kernel_id ORDER BY k.ts_ns, k.kernel_id)
                         OVER (PARTITION BY l.cpu_op_id, align_op(o.op, o.pattern))
                ELSE k.kernel_id END AS own_call
    FROM kernels k
    JOIN _kernel_ops_live o USING (trace_id, kernel_id)
    JOIN kernel_launches l USING (trace_id, kernel_id)
    LEFT JOIN _derive_stacks s ON s.trace_id = k.trace_id AND s.launch_id = l.launch_id
    WHERE k.trace_id = $trace_id
), before AS (
    -- each kernel's predecessor on its stream, for the helpers that stand alone
    SELECT h.kernel_id, p.own_call, p.op AS prev_op
    FROM (SELECT * FROM base WHERE helper AND own_call = kernel_id) h
    ASOF JOIN (SELECT * FROM base WHERE NOT helper) p
           ON p.pid = h.pid AND p.tid = h.tid AND p.ts_ns < h.ts_ns
)
SELECT b.trace_id, b.kernel_id, b.op, b.pattern, b.decided_by, b.launch_id, b.cpu_op, b.stack_id,
       CASE WHEN p.prev_op = b.op THEN p.own_call ELSE b.own_call END
FROM base b LEFT JOIN before p USING (kernel_id);

-- phases read the operations just staged (a step replayed from a graph is told by its attention)
CREATE OR REPLACE TEMP TABLE kernel_facts AS
SELECT f.* REPLACE (p.phase AS phase, p.iteration AS iteration, p.annotation AS annotation,
                    p.phase_source AS phase_source)
FROM temp.kernel_facts f LEFT JOIN _kernel_phases_live p USING (trace_id, kernel_id);

-- layers are cut from the operations and phases just staged
CREATE OR REPLACE TEMP TABLE kernel_facts AS
SELECT f.* REPLACE (l.forward_pass AS forward_pass, l.layer AS layer, l.position AS position,
                    l.layer_source AS layer_source, l.layer_module AS layer_module)
FROM temp.kernel_facts f LEFT JOIN _kernel_layers_live l USING (trace_id, kernel_id);

-- the comparison keys follow from the layers and operations just staged; then the stored table
-- is written, once the stage no longer hides it
CREATE OR REPLACE TEMP TABLE _derive_facts AS
SELECT f.* REPLACE (o.occurrence AS occurrence, o.prev_op AS prev_op)
FROM temp.kernel_facts f LEFT JOIN _kernel_order_live o USING (trace_id, kernel_id);

DROP TABLE temp.kernel_facts;

INSERT INTO kernel_facts BY NAME SELECT * FROM _derive_facts;

DROP TABLE _derive_facts;

DROP TABLE _derive_stacks;

DROP TABLE _derive_stack_ids;

DROP TABLE _derive_keys;

DROP TABLE _derive_chain_frames;

DROP TABLE _derive_leaves;

DROP TABLE temp.kernel_launches;
