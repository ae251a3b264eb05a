-- Python stacks: the chain of python_function frames enclosing each kernel's launch.
-- The innermost frame is found by an ASOF join of the launch time to the frames of the
-- launching thread; the chain up to the root follows Python parent id (recursive CTE). Stacks
-- are built once per launching call, so a graph replay (one call, many kernels) costs one stack.

-- One frame per Python id (ids are unique within a trace; the first wins if one repeats).
-- Columns:
--   trace_id   trace of the frame
--   python_id  Python id
--   parent_id  Python id of the calling frame
--   name       frame text, e.g. vllm/model_executor/models/llama.py(340): forward
--   ts_ns      start, nanoseconds
--   end_ns     end, nanoseconds
CREATE OR REPLACE VIEW _python_frames AS
SELECT trace_id, python_id, arg_min(python_parent_id, event_id) AS parent_id,
       arg_min(name, event_id) AS name, arg_min(ts_ns, event_id) AS ts_ns,
       arg_min(ts_ns + coalesce(dur_ns, 0), event_id) AS end_ns
FROM python_functions
WHERE python_id IS NOT NULL AND _in_scope(trace_id)
GROUP BY trace_id, python_id;

-- One-line summary of a Python stack, after the seed loader: the innermost frame naming vllm/,
-- a model or an FX graph (<eval_with_key>), else the innermost frame; a path longer than 53
-- characters (45 on graph replays) is cut to its last part (vllm/...llama.py(340): forward);
-- "<built-in method X of ... at 0x...>" is cut to "<built-in method X>"; and the tag
-- [CUDA graph] is added when the stack passes through torch/cuda/graphs (a graph replay).
-- _stack_pick and _stack_shorten are its parts.
CREATE OR REPLACE MACRO _stack_pick(stack) AS coalesce(
    list_filter(stack, lambda f: regexp_matches(lower(f), 'vllm/|model|<eval_with_key>'))[-1], stack[-1]);
CREATE OR REPLACE MACRO _stack_shorten(f, n) AS
    CASE WHEN starts_with(f, '<built-in') THEN regexp_replace(f, ' of .* at 0x[0-9a-fA-F]+>$', '>')
         WHEN length(f) > n AND contains(f, '/')
             THEN CASE WHEN contains(f, 'vllm/') THEN 'vllm/...' ELSE '...' END || string_split(f, '/')[-1]
         ELSE f END;
CREATE OR REPLACE MACRO stack_summary(stack) AS
    CASE WHEN stack IS NULL OR len(stack) = 0 THEN NULL
         WHEN list_bool_or(list_transform(stack, lambda f: contains(f, 'torch/cuda/graphs')))
             THEN _stack_shorten(_stack_pick(stack), 45) || ' [CUDA graph]'
         ELSE _stack_shorten(_stack_pick(stack), 53) END;

-- Python stack of each launching call, outermost frame first.
-- Columns:
--   trace_id      trace of the call
--   launch_id     event_id of the call in runtime_calls
--   python_stack  frame names enclosing the call, outermost first (NULL without Python frames)
--   summary       stack_summary of the stack
CREATE OR REPLACE VIEW _launch_stacks_live AS
WITH stacks AS MATERIALIZED (
WITH RECURSIVE launches AS (
    SELECT DISTINCT trace_id, launch_id, launch_ts_ns, pid, tid
    FROM kernel_launches WHERE launch_id IS NOT NULL
), leaves AS (
    -- latest frame starting at or before the call on its thread: the innermost enclosing frame
    -- or a finished frame nested inside it, whose ancestors lead to it
    SELECT l.trace_id, l.launch_id, l.launch_ts_ns, f.python_id AS leaf_id
    FROM launches l ASOF JOIN (SELECT * FROM python_functions WHERE _in_scope(trace_id)) f
      ON f.trace_id = l.trace_id AND f.pid = l.pid AND f.tid = l.tid AND f.ts_ns <= l.launch_ts_ns
    WHERE f.python_id IS NOT NULL
), chain(trace_id, leaf_id, depth, python_id, parent_id, name, end_ns) AS (
    SELECT f.trace_id, f.python_id, 0, f.python_id, f.parent_id, f.name, f.end_ns
    FROM _python_frames f SEMI JOIN (SELECT DISTINCT trace_id, leaf_id FROM leaves) d
      ON d.trace_id = f.trace_id AND d.leaf_id = f.python_id
    UNION ALL
    SELECT c.trace_id, c.leaf_id, c.depth + 1, p.python_id, p.parent_id, p.name, p.end_ns
    FROM chain c JOIN _python_frames p ON p.trace_id = c.trace_id AND p.python_id = c.parent_id
    WHERE c.depth < 255 AND p.python_id <> c.python_id
), chains AS (
    SELECT trace_id, leaf_id,
           list({'name': name, 'end_ns': end_ns} ORDER BY depth DESC) AS frames
    FROM chain GROUP BY trace_id, leaf_id
)
SELECT l.trace_id, l.launch_id,
       -- frames that ended before the call are finished siblings' descendants, not enclosing
       list_transform(list_filter(c.frames, lambda f: f.end_ns >= l.launch_ts_ns), lambda f: f.name)
           AS python_stack
FROM leaves l JOIN chains c USING (trace_id, leaf_id)
), summaries AS (
    -- a summary per distinct stack: thousands of launches share a few hundred stacks
    SELECT python_stack, stack_summary(python_stack) AS summary
    FROM (SELECT DISTINCT python_stack FROM stacks)
)
SELECT s.trace_id, s.launch_id, s.python_stack, m.summary
FROM stacks s LEFT JOIN summaries m ON m.python_stack = s.python_stack;

-- Each kernel's cpu_op and Python stack (stored in kernel_facts and python_stacks).
-- Columns:
--   trace_id      trace the kernel belongs to
--   kernel_id     row of kernels
--   cpu_op        the cpu_op that issued it (via External id), e.g. aten::mm; NULL when none
--   python_stack  Python frames enclosing its launch, outermost first (NULL without frames)
--   summary       one line: innermost vllm/model frame (with [CUDA graph] on replays), else the
--                 innermost frame, else the cpu_op
CREATE OR REPLACE VIEW kernel_stacks AS
SELECT f.trace_id, f.kernel_id, f.cpu_op, s.python_stack, coalesce(s.summary, f.cpu_op) AS summary
FROM kernel_facts f
LEFT JOIN python_stacks s USING (trace_id, stack_id);
