-- include: classify.launches
-- include: core.events

-- Python stacks: the chain of python_function frames enclosing each kernel's launch.
-- The innermost frame is found by an ASOF join of the launch time to the frames of the
-- launching thread; the chain up to the root follows Python parent id (recursive CTE), once per
-- innermost frame; the frames of the chain that ended before the call are left out, and each
-- distinct stack is put together once.

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
-- _launch_leaves_live) up to the root, by Python parent id, one row per frame: built once per
-- leaf, however many calls share it (a graph replay, a loop). The walk follows the ids alone (one
-- parent per id, as _python_frames takes it), so its join stays small whatever the number of
-- frames; names and ends are then read for the frames on some chain only. The rows stay flat:
-- the stacks are put together from them once per distinct stack (_open_stacks_of), since a list
-- of names per leaf was most of the stacks' time.
-- Columns:
--   trace_id  trace of the leaf
--   leaf_id   Python id of the leaf
--   depth     0 for the leaf, 1 for its caller, ...
--   name      frame text
--   end_ns    end of the frame, nanoseconds
CREATE OR REPLACE MACRO _stack_frames_of(leaves) AS TABLE
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
SELECT c.trace_id, c.leaf_id, c.depth, f.name, f.end_ns
FROM chain c JOIN frames f USING (trace_id, python_id);

-- Each call of the table named by leaves (columns trace_id, launch_id, launch_ts_ns, leaf_id) with
-- how many frames of its leaf's chain (the table named by frames, as _stack_frames_of gives it)
-- had ended before it: those are finished siblings' descendants, not enclosing frames. So a stack
-- is known from (leaf, ended) alone, and each is built once (_open_stacks_of).
-- Columns:
--   trace_id, launch_id, leaf_id  as in leaves
--   ended       frames of the chain that ended before the call
--   last_ended  the latest end among them (NULL when none)
CREATE OR REPLACE MACRO _launch_stack_keys_of(leaves, frames) AS TABLE
SELECT l.trace_id, l.launch_id, l.leaf_id,
       count(c.end_ns) FILTER (c.end_ns < l.launch_ts_ns) AS ended,
       max(c.end_ns) FILTER (c.end_ns < l.launch_ts_ns) AS last_ended
FROM query_table(leaves) l JOIN query_table(frames) c USING (trace_id, leaf_id)
GROUP BY l.trace_id, l.launch_id, l.leaf_id;

-- The stack of each distinct (leaf, ended) of the table named by keys (as _launch_stack_keys_of):
-- the frames of the leaf's chain (the table named by frames) still open, those ending after the
-- last that had ended, outermost first. Each is first told by the ids of its frames' names
-- (numbers compare and group far faster than lists of texts), and its names are read once per
-- distinct stack.
-- Columns:
--   trace_id, leaf_id, ended  as in keys
--   stack_key     the stack's frame names as numbers: equal keys, equal stacks (within one query)
--   python_stack  the frame names, outermost first ([] when every frame had ended)
CREATE OR REPLACE MACRO _open_stacks_of(keys, frames) AS TABLE
WITH names AS MATERIALIZED (
    SELECT name, row_number() OVER (ORDER BY name) AS name_id
    FROM (SELECT DISTINCT name FROM query_table(frames))
), keyed AS MATERIALIZED (
    -- sorted per stack by depth (the first field), not by an ordered aggregate: the same order,
    -- without the aggregate sorting inside every group
    SELECT k.trace_id, k.leaf_id, k.ended,
           coalesce(list_transform(
               list_reverse_sort(list({'depth': c.depth, 'name_id': n.name_id})
                   FILTER (c.end_ns IS NOT NULL AND (k.last_ended IS NULL OR c.end_ns > k.last_ended))),
               lambda f: f.name_id), []) AS stack_key
    FROM (SELECT DISTINCT trace_id, leaf_id, ended, last_ended FROM query_table(keys)) k
    JOIN query_table(frames) c USING (trace_id, leaf_id)
    JOIN names n ON n.name IS NOT DISTINCT FROM c.name
    GROUP BY k.trace_id, k.leaf_id, k.ended
), named AS (
    SELECT stack_key, list_transform(stack_key, lambda i: all_names[i]) AS python_stack
    FROM (SELECT DISTINCT stack_key FROM keyed),
         (SELECT list(name ORDER BY name_id) AS all_names FROM names)
)
SELECT k.trace_id, k.leaf_id, k.ended, k.stack_key, n.python_stack
FROM keyed k JOIN named n USING (stack_key);

-- (earlier versions built a list of frames per leaf with these)
DROP MACRO TABLE IF EXISTS _stack_chains_of;
DROP MACRO IF EXISTS _ended_frames;
DROP MACRO IF EXISTS _last_ended;
DROP MACRO IF EXISTS _open_frames;

-- The frames of the chain of every launching call's innermost frame (_stack_frames_of over
-- _launch_leaves_live: a view, so that the stacks below are defined by the same macros as the
-- derivation's). Columns: as _stack_frames_of.
CREATE OR REPLACE VIEW _launch_stack_frames_live AS
SELECT * FROM _stack_frames_of('_launch_leaves_live');

-- Each launching call's key to its stack (_launch_stack_keys_of over _launch_leaves_live).
-- Columns: as _launch_stack_keys_of.
CREATE OR REPLACE VIEW _launch_stack_keys_live AS
SELECT * FROM _launch_stack_keys_of('_launch_leaves_live', '_launch_stack_frames_live');

-- Python stack of each launching call, outermost frame first.
-- Columns:
--   trace_id      trace of the call
--   launch_id     event_id of the call in runtime_calls
--   python_stack  frame names enclosing the call, outermost first (NULL without Python frames)
--   summary       stack_summary of the stack
CREATE OR REPLACE VIEW _launch_stacks_live AS
WITH stacks AS MATERIALIZED (
    SELECT k.trace_id, k.launch_id, s.python_stack
    FROM _launch_stack_keys_live k
    JOIN _open_stacks_of('_launch_stack_keys_live', '_launch_stack_frames_live') s USING (trace_id, leaf_id, ended)
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
