-- Python stacks: the chain of python_function frames enclosing each kernel's launch.
-- The innermost frame is found by an ASOF join of the launch time to the frames of the
-- launching thread; the chain up to the root follows Python parent id (recursive CTE), once per
-- innermost frame; the frames of the chain that ended before the call are left out.

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
-- The picked frame is bound once, as a lambda's argument: a macro's argument is written out
-- wherever the body names it, and inside a CASE DuckDB computes each copy (_stack_shorten names
-- its frame six times).
CREATE OR REPLACE MACRO stack_summary(stack) AS
    CASE WHEN len(stack) > 0 THEN list_transform([_stack_pick(stack)], lambda picked:
        CASE WHEN list_bool_or(list_transform(stack, lambda f: contains(f, 'torch/cuda/graphs')))
             THEN _stack_shorten(picked, 45) || ' [CUDA graph]'
             ELSE _stack_shorten(picked, 53) END)[1] END;

-- The innermost Python frame of each launching call: the latest frame starting at or before the
-- call on its thread, which is the innermost enclosing frame or a finished frame nested inside
-- it, whose ancestors lead to it.
-- Columns:
--   trace_id      trace of the call
--   launch_id     event_id of the call in runtime_calls
--   launch_ts_ns  start of the call, nanoseconds
--   leaf_id       Python id of that frame
CREATE OR REPLACE VIEW _launch_leaves_live AS
WITH launches AS (
    SELECT DISTINCT trace_id, launch_id, launch_ts_ns, pid, tid
    FROM kernel_launches WHERE launch_id IS NOT NULL
)
SELECT l.trace_id, l.launch_id, l.launch_ts_ns, f.python_id AS leaf_id
FROM launches l ASOF JOIN (SELECT * FROM python_functions WHERE _in_scope(trace_id)) f
  ON f.trace_id = l.trace_id AND f.pid = l.pid AND f.tid = l.tid AND f.ts_ns <= l.launch_ts_ns
WHERE f.python_id IS NOT NULL;

-- The chain of frames from each leaf of the table named by leaves (columns trace_id, leaf_id, as
-- _launch_leaves_live) up to the root, by Python parent id: built once per leaf, however many
-- calls share it (a graph replay, a loop). The walk follows the ids alone (one parent per id, as
-- _python_frames takes it), so its join stays small whatever the number of frames; names and
-- ends are then read for the frames on some chain only.
-- Columns:
--   trace_id  trace of the leaf
--   leaf_id   Python id of the leaf
--   frames    the chain, outermost first: {depth, name, end_ns} per frame (depth 0: the leaf)
CREATE OR REPLACE MACRO _stack_chains_of(leaves) AS TABLE
WITH RECURSIVE links AS MATERIALIZED (
    SELECT trace_id, python_id, arg_min(python_parent_id, event_id) AS parent_id
    FROM python_functions
    WHERE python_id IS NOT NULL AND _in_scope(trace_id)
    GROUP BY trace_id, python_id
), chain(trace_id, leaf_id, depth, python_id, parent_id) AS (
    SELECT f.trace_id, f.python_id, 0, f.python_id, f.parent_id
    FROM links f SEMI JOIN (SELECT DISTINCT trace_id, leaf_id FROM query_table(leaves)) d
      ON d.trace_id = f.trace_id AND d.leaf_id = f.python_id
    UNION ALL
    SELECT c.trace_id, c.leaf_id, c.depth + 1, p.python_id, p.parent_id
    FROM chain c JOIN links p ON p.trace_id = c.trace_id AND p.python_id = c.parent_id
    WHERE c.depth < 255 AND p.python_id <> c.python_id
), frames AS (
    SELECT trace_id, python_id, arg_min(name, event_id) AS name,
           arg_min(ts_ns + coalesce(dur_ns, 0), event_id) AS end_ns
    FROM python_functions
    SEMI JOIN (SELECT DISTINCT trace_id, python_id FROM chain) c USING (trace_id, python_id)
    WHERE _in_scope(trace_id)
    GROUP BY trace_id, python_id
)
-- sorted per chain (by depth, the first field) rather than by an ordered aggregate: the same
-- order, without the aggregate sorting inside every group
SELECT c.trace_id, c.leaf_id, list_reverse_sort(list({'depth': c.depth, 'name': f.name, 'end_ns': f.end_ns})) AS frames
FROM chain c JOIN frames f USING (trace_id, python_id)
GROUP BY c.trace_id, c.leaf_id;

-- The frames of a chain still open at a call: those that had not ended before it (the others are
-- finished siblings' descendants, not enclosing). ended, the number that had ended, says which:
-- those whose end is after the ended-th smallest end (_last_ended). So a stack is known from
-- (leaf, ended) alone, and the derivation builds each once (sql/derive/kernel_facts.sql).
CREATE OR REPLACE MACRO _ended_frames(frames, ts_ns) AS
    list_count(list_filter(frames, lambda f: f.end_ns < ts_ns));
CREATE OR REPLACE MACRO _last_ended(frames, ended) AS
    CASE WHEN ended > 0 THEN list_sort(list_transform(frames, lambda g: g.end_ns))[ended] END;
CREATE OR REPLACE MACRO _open_frames(frames, last_ended) AS
    list_transform(list_filter(frames, lambda f: f.end_ns IS NOT NULL
                                                 AND (last_ended IS NULL OR f.end_ns > last_ended)),
                   lambda f: f.name);

-- Python stack of each launching call, outermost frame first.
-- Columns:
--   trace_id      trace of the call
--   launch_id     event_id of the call in runtime_calls
--   python_stack  frame names enclosing the call, outermost first (NULL without Python frames)
--   summary       stack_summary of the stack
CREATE OR REPLACE VIEW _launch_stacks_live AS
WITH stacks AS MATERIALIZED (
    SELECT trace_id, launch_id, _open_frames(frames, last_ended) AS python_stack
    FROM (
        SELECT l.trace_id, l.launch_id, c.frames,
               _last_ended(c.frames, _ended_frames(c.frames, l.launch_ts_ns)) AS last_ended
        FROM _launch_leaves_live l JOIN _stack_chains_of('_launch_leaves_live') c USING (trace_id, leaf_id)
    )
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
