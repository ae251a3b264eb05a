-- include: classify.kernel_ops
-- include: classify.launches
-- include: core.events

-- Phases and iterations: which model step (prefill, decode, mixed) each kernel belongs to.
-- Step annotations are recognised by annotation_patterns (sql/rules/annotation_patterns.csv).
-- A kernel takes the step enclosing it on the GPU timeline (gpu_user_annotation) when there is
-- one; otherwise the step enclosing its launch on the launching CPU thread, found by an ASOF
-- join of the launch time to the annotations (kernels often start after the CPU annotation has
-- ended, so the kernel's own time cannot be used there).

-- Capture group g of an RE2 match (regexp_extract wants a constant group number).
CREATE OR REPLACE MACRO _regex_group(s, re, g) AS
    CASE g WHEN 0 THEN regexp_extract(s, re, 0) WHEN 1 THEN regexp_extract(s, re, 1)
           WHEN 2 THEN regexp_extract(s, re, 2) WHEN 3 THEN regexp_extract(s, re, 3)
           WHEN 4 THEN regexp_extract(s, re, 4) WHEN 5 THEN regexp_extract(s, re, 5)
           WHEN 6 THEN regexp_extract(s, re, 6) WHEN 7 THEN regexp_extract(s, re, 7)
           WHEN 8 THEN regexp_extract(s, re, 8) WHEN 9 THEN regexp_extract(s, re, 9) END;

-- Annotation patterns in the order they are tried: user patterns first, then by priority.
-- Columns:
--   rank              order of trial (1 first)
--   role              phase or step
--   format            name of the annotation format
--   regex             RE2 expression
--   phase             fixed phase, or NULL
--   context_group     capture group of the prefill amount
--   generation_group  capture group of the decode amount
--   number_group      capture group of the step number
CREATE OR REPLACE VIEW _annotation_patterns_ordered AS
SELECT row_number() OVER (ORDER BY source = 'builtin', priority, source, format) AS rank,
       role, format, regex, phase, context_group, generation_group, number_group
FROM annotation_patterns;

-- Every annotation that matches an annotation pattern, with what it says.
-- Columns:
--   trace_id           trace of the annotation
--   event_id           row of annotations
--   on_gpu             true for a GPU-side (gpu_user_annotation) copy
--   pid                process (device on the GPU side)
--   tid                thread (stream on the GPU side)
--   name               annotation text
--   ts_ns              start, nanoseconds
--   end_ns             end, nanoseconds
--   role               phase (a model step) or step (a ProfilerStep-like iteration)
--   format             the matching pattern's format name
--   phase              prefill, decode, mixed or none for role phase; NULL for role step
--   context_amount     prefill work named in the annotation (tokens or requests), if any
--   generation_amount  decode work named in the annotation, if any
--   number             step number written in the annotation (ProfilerStep#N), if any
CREATE OR REPLACE VIEW step_annotations AS
WITH hits AS (
    SELECT a.trace_id, a.event_id, a.on_gpu, a.pid, a.tid, a.name, a.ts_ns,
           a.ts_ns + coalesce(a.dur_ns, 0) AS end_ns, arg_min(p, p.rank) AS p
    FROM annotations a
    JOIN _annotation_patterns_ordered p ON regexp_matches(a.name, p.regex)
    WHERE _in_scope(a.trace_id)
    GROUP BY ALL
), parsed AS (
    SELECT *,
           TRY_CAST(replace(_regex_group(name, p.regex, p.context_group), '_', '') AS HUGEINT) AS ctx,
           TRY_CAST(replace(_regex_group(name, p.regex, p.generation_group), '_', '') AS HUGEINT) AS gen
    FROM hits
)
SELECT trace_id, event_id, on_gpu, pid, tid, name, ts_ns, end_ns, p.role AS role, p.format AS format,
       CASE WHEN p.role <> 'phase' THEN NULL
            WHEN p.phase IS NOT NULL THEN p.phase
            WHEN ctx > 0 AND gen > 0 THEN 'mixed'
            WHEN ctx > 0 THEN 'prefill'
            WHEN gen > 0 THEN 'decode'
            ELSE 'none' END AS phase,
       ctx AS context_amount, gen AS generation_amount,
       TRY_CAST(_regex_group(name, p.regex, p.number_group) AS BIGINT) AS number
FROM parsed;

-- The steps of each trace: step annotations not nested in another of the same role on the same
-- thread (SGLang writes step[DECODE ...] inside execute_..._generation_...), numbered in time
-- order per trace, side (CPU or GPU) and role.
-- Columns:
--   trace_id  trace of the step
--   event_id  row of annotations
--   on_gpu    true for a GPU-side annotation
--   pid       process (device on the GPU side)
--   tid       thread (stream on the GPU side)
--   name      annotation text
--   ts_ns     start, nanoseconds
--   end_ns    end, nanoseconds
--   role      phase or step
--   phase     prefill, decode, mixed or none (NULL for role step)
--   number    step number written in the annotation, if any
--   ordinal   1, 2, ... in time order among the trace's steps of this role and side
CREATE OR REPLACE VIEW trace_steps AS
SELECT trace_id, event_id, on_gpu, pid, tid, name, ts_ns, end_ns, role, phase, number,
       row_number() OVER (PARTITION BY trace_id, on_gpu, role ORDER BY ts_ns, event_id) AS ordinal
FROM (
    SELECT *, coalesce(max(end_ns) OVER (PARTITION BY trace_id, on_gpu, role, pid, tid
                                         ORDER BY ts_ns, end_ns DESC, event_id
                                         ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) >= end_ns,
                       false) AS nested
    FROM step_annotations
)
WHERE NOT nested;

-- Step frame patterns in the order they are tried: user patterns first, then by priority (the
-- order is total, so that a rank names the same pattern in every query).
-- Columns:
--   rank       order of trial (1 first)
--   framework  who writes the frame (vllm, sglang, any, ...)
--   regex      RE2 expression matched against the frame name
--   phase      fixed phase of a step bounded by or holding such a frame, or NULL
CREATE OR REPLACE VIEW _step_frame_patterns_ordered AS
SELECT row_number() OVER (ORDER BY source = 'builtin', priority, source, framework, regex, phase) AS rank,
       framework, regex, phase
FROM step_frame_patterns;

-- The ranks (in _step_frame_patterns_ordered) of the step frame patterns a frame name matches
-- (scalar macro). Like _regex_rule_hits (sql/modules/classify/kernel_ops.sql), tracedb replaces this
-- definition before every derivation with one that writes each pattern out
-- (tracedb.facts.refresh_regex_rules), so that a pattern is compiled once per query rather than
-- once per name: the same result.
-- Generated: tracedb.facts.refresh_regex_rules writes this macro out; the text here is its placeholder.
CREATE OR REPLACE MACRO _step_frame_rule_hits(frame_name) AS (
    SELECT coalesce(list(rank ORDER BY rank), []) FROM _step_frame_patterns_ordered p
    WHERE regexp_matches(frame_name, p.regex)
);

-- Python frames matching a step frame pattern, in traces without step annotations.
-- Columns:
--   trace_id   trace of the frame
--   event_id   row of python_functions
--   pid        process
--   tid        thread
--   name       frame name
--   ts_ns      start, nanoseconds
--   end_ns     end, nanoseconds
--   rank       rank of the first matching pattern
--   framework  that pattern's framework
--   phase      that pattern's fixed phase, or NULL
CREATE OR REPLACE VIEW _step_frame_hits AS
WITH unannotated AS MATERIALIZED (
    SELECT trace_id FROM traces WHERE _in_scope(trace_id)
    EXCEPT SELECT trace_id FROM step_annotations
), frames AS MATERIALIZED (
    SELECT f.trace_id, f.event_id, f.pid, f.tid, f.name, f.ts_ns, f.dur_ns
    FROM python_functions f SEMI JOIN unannotated u USING (trace_id)
    WHERE _in_scope(f.trace_id)
), matched AS (
    -- each distinct frame name is matched once, by the first pattern it matches
    SELECT n.name, p
    FROM (SELECT name, list_min(_step_frame_rule_hits(name)) AS rank FROM (SELECT DISTINCT name FROM frames)) n
    JOIN _step_frame_patterns_ordered p ON p.rank = n.rank
)
SELECT f.trace_id, f.event_id, f.pid, f.tid, f.name, f.ts_ns, f.ts_ns + coalesce(f.dur_ns, 0) AS end_ns,
       m.p.rank AS rank, m.p.framework AS framework, m.p.phase AS phase
FROM frames f JOIN matched m USING (name);

-- Steps found from frames in a trace without step annotations: the outermost matching frames of
-- each thread (vLLM's execute_model holds the model's forward; a model forward holds its layers').
-- Columns:
--   trace_id     trace of the step
--   event_id     row of python_functions (the bounding frame)
--   pid          process
--   tid          thread
--   name         frame name
--   ts_ns        start, nanoseconds
--   end_ns       end, nanoseconds
--   framework    framework of the frame's pattern
--   frame_phase  fixed phase of the frame's pattern, else of the first frame inside it that has one
--                (SGLang's forward_extend / forward_decode inside ModelRunner.forward); NULL if none
--   ordinal      1, 2, ... in time order among the trace's frame steps
CREATE OR REPLACE VIEW _frame_steps AS
WITH hits AS MATERIALIZED (
    SELECT * FROM _step_frame_hits
), outermost AS (
    SELECT * FROM (
        SELECT *, coalesce(max(end_ns) OVER (PARTITION BY trace_id, pid, tid
                                             ORDER BY ts_ns, end_ns DESC, event_id
                                             ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) >= end_ns,
                           false) AS nested
        FROM hits)
    WHERE NOT nested
), named AS (
    SELECT o.trace_id, o.event_id,
           arg_min(h.phase, (h.event_id <> o.event_id, h.ts_ns, h.rank)) FILTER (h.phase IS NOT NULL) AS frame_phase
    FROM outermost o
    JOIN hits h ON h.trace_id = o.trace_id AND h.pid = o.pid AND h.tid = o.tid
               AND h.ts_ns >= o.ts_ns AND h.end_ns <= o.end_ns
    GROUP BY o.trace_id, o.event_id
)
SELECT o.trace_id, o.event_id, o.pid, o.tid, o.name, o.ts_ns, o.end_ns, o.framework, n.frame_phase,
       row_number() OVER (PARTITION BY o.trace_id ORDER BY o.ts_ns, o.event_id) AS ordinal
FROM outermost o JOIN named n USING (trace_id, event_id);

-- (the kernels of each frame step were a view of their own in earlier versions)
DROP VIEW IF EXISTS _frame_step_kernel_ids;

-- Steps found from frames, with what each processed and its phase (the steps, and the kernels of
-- each, are found once here). A step's phase, in order:
--   frame         the step's frame pattern (or one inside it) fixes it;
--   tokens        its GEMMs' inputs are [batch, sequence, hidden] with sequence 1: decode;
--   graph replay  a vLLM or SGLang step whose kernels ran mostly from a CUDA/HIP graph launch:
--                 decode (they capture graphs of decode batches, whole or in pieces between
--                 which the attention runs eagerly, as vLLM v1 does, and run prefills eagerly);
-- and once a trace has decode steps, a step with longer sequences than theirs is prefill
-- (tokens), and an eager step (with kernels) beside graph-replayed decode steps is prefill (graph
-- replay; a decode batch larger than every captured graph also runs eagerly, and is counted so).
-- Otherwise none: a batch of flattened tokens alone does not say whether it holds one token per
-- sequence, and a trace that never decodes (an encoder, a diffusion model, a training loop) has no
-- prefill either.
-- Columns:
--   trace_id      trace of the step
--   ordinal       1, 2, ... in time order (the kernels' iteration)
--   event_id      the step's frame (python_functions)
--   name          frame name
--   framework     framework of the frame's pattern
--   pid           process
--   tid           thread
--   ts_ns         start, nanoseconds
--   end_ns        end, nanoseconds
--   kernels       GPU kernels launched in the step
--   graph_kernels of which ran from a graph launch
--   tokens        rows of the step's GEMMs (the most common), from Input Dims; NULL without them
--   seq_len       sequence length of the step's GEMM inputs when they are [batch, sequence, hidden]
--   graph_replay  true for a vLLM / SGLang step whose kernels ran mostly from a graph launch
--                 (whole graphs, or pieces with the attention eager between them)
--   phase         prefill, decode or none (mixed is not told from frames)
--   phase_source  frame, tokens, graph replay; NULL when nothing decided the phase
--   kernel_ids    the step's kernels (kernel_id), so that its kernels need not be found again
CREATE OR REPLACE VIEW frame_steps AS
WITH steps AS MATERIALIZED (
    SELECT * FROM _frame_steps
), k AS MATERIALIZED (
    -- the GPU kernels of the traces with frame steps: a kernel belongs to the step enclosing its
    -- launch on the launching thread, else on any thread of the trace (reads the stored
    -- operations: tracedb derives them first)
    SELECT k.trace_id, k.kernel_id, l.pid AS cpu_pid, l.tid AS cpu_tid, l.launch_ts_ns,
           l.graph, l.cpu_op_id, o.op
    FROM kernels k
    JOIN kernel_launches l USING (trace_id, kernel_id)
    JOIN kernel_ops o USING (trace_id, kernel_id)
    WHERE _in_scope(k.trace_id) AND k.trace_id IN (SELECT trace_id FROM steps)
), on_thread AS (
    SELECT k.trace_id, k.kernel_id, s.event_id AS step_id
    FROM k ASOF JOIN steps s
      ON s.trace_id = k.trace_id AND s.pid = k.cpu_pid AND s.tid = k.cpu_tid AND s.ts_ns <= k.launch_ts_ns
    WHERE k.launch_ts_ns <= s.end_ns
), any_thread AS (
    SELECT k.trace_id, k.kernel_id, s.event_id AS step_id
    FROM k ASOF JOIN steps s ON s.trace_id = k.trace_id AND s.ts_ns <= k.launch_ts_ns
    WHERE k.launch_ts_ns <= s.end_ns
), sk AS MATERIALIZED (
    -- each step's kernels: step_id the step's frame (event_id in python_functions), graph true
    -- when a CUDA/HIP graph launch ran the kernel, cpu_op_id the launching cpu_op (NULL for a
    -- graph replay)
    SELECT k.trace_id, k.kernel_id, coalesce(t.step_id, a.step_id) AS step_id, k.graph, k.op, k.cpu_op_id
    FROM k LEFT JOIN on_thread t USING (trace_id, kernel_id) LEFT JOIN any_thread a USING (trace_id, kernel_id)
    WHERE coalesce(t.step_id, a.step_id) IS NOT NULL
), gemm_inputs AS (
    -- the first matrix input of every GEMM of a step: the cpu_ops that launched its GEMM kernels,
    -- and its aten::linear / aten::matmul calls (which keep the [batch, sequence, hidden] shape
    -- the aten::mm inside them flattens)
    SELECT s.trace_id, s.event_id AS step_id,
           list_filter(TRY_CAST(c.input_dims AS BIGINT[][]), lambda d: len(d) >= 2)[1] AS x
    FROM steps s
    JOIN cpu_ops c ON c.trace_id = s.trace_id AND c.pid = s.pid AND c.tid = s.tid
                  AND c.ts_ns >= s.ts_ns AND c.ts_ns <= s.end_ns
    WHERE _in_scope(c.trace_id) AND c.input_dims IS NOT NULL
      AND (c.name IN ('aten::linear', 'aten::matmul')
           OR c.event_id IN (SELECT cpu_op_id FROM sk WHERE op LIKE '%GEMM%' AND cpu_op_id IS NOT NULL))
), tokens AS (
    -- rows multiply in DOUBLE and come back only when they fit: a file's dims are not trusted
    -- to keep a product inside BIGINT, and a negative dim is no shape
    SELECT trace_id, step_id,
           mode(TRY_CAST(list_reduce(list_transform(x[:len(x) - 1], lambda d: d::DOUBLE), lambda a, b: a * b)
                         AS BIGINT)) AS tokens,
           mode(x[len(x) - 1]) FILTER (len(x) >= 3) AS seq_len
    FROM gemm_inputs WHERE x IS NOT NULL AND list_min(x) >= 0
    GROUP BY trace_id, step_id
), evidence AS (
    SELECT s.trace_id, s.ordinal, s.event_id, s.name, s.framework, s.pid, s.tid, s.ts_ns, s.end_ns,
           s.frame_phase, count(k.kernel_id) AS kernels, count(*) FILTER (k.graph) AS graph_kernels,
           t.tokens, t.seq_len,
           -- a serving engine's decode replay: vLLM and SGLang capture graphs of decode batches, whole
           -- (attention inside: FULL graphs, SGLang) or in pieces with the attention run eagerly
           -- between them (vLLM v1's piecewise graphs), and run a prefill eagerly; a diffusion or
           -- training step replayed from a graph says nothing about decoding
           any_value(s.framework) IN ('vllm', 'sglang')
               AND count(*) FILTER (k.graph) > count(k.kernel_id) / 2 AS graph_replay,
           list(k.kernel_id ORDER BY k.kernel_id) FILTER (k.kernel_id IS NOT NULL) AS kernel_ids
    FROM steps s
    LEFT JOIN sk k ON k.trace_id = s.trace_id AND k.step_id = s.event_id
    LEFT JOIN tokens t ON t.trace_id = s.trace_id AND t.step_id = s.event_id
    GROUP BY ALL
), first_pass AS (
    SELECT *,
           CASE WHEN frame_phase IS NOT NULL THEN frame_phase
                WHEN seq_len = 1 THEN 'decode'
                WHEN graph_replay THEN 'decode' END AS phase1,
           CASE WHEN frame_phase IS NOT NULL THEN 'frame'
                WHEN seq_len = 1 THEN 'tokens'
                WHEN graph_replay THEN 'graph replay' END AS source1
    FROM evidence
), decided AS (
    SELECT *,
           max(seq_len) FILTER (phase1 = 'decode') OVER w AS decode_seq_len,
           count(*) FILTER (phase1 = 'decode') OVER w AS decode_steps,
           count(*) FILTER (phase1 = 'decode' AND source1 = 'graph replay') OVER w AS replayed_steps
    FROM first_pass
    WINDOW w AS (PARTITION BY trace_id)
), sourced AS (
    SELECT *,
           CASE WHEN phase1 IS NOT NULL THEN source1
                WHEN decode_steps = 0 THEN NULL
                WHEN seq_len > coalesce(decode_seq_len, 1) THEN 'tokens'
                WHEN replayed_steps > 0 AND NOT graph_replay AND kernels > 0 THEN 'graph replay'
           END AS phase_source
    FROM decided
)
SELECT trace_id, ordinal, event_id, name, framework, pid, tid, ts_ns, end_ns, kernels, graph_kernels,
       tokens, seq_len, graph_replay,
       coalesce(phase1, CASE WHEN phase_source IS NOT NULL THEN 'prefill' ELSE 'none' END) AS phase,
       phase_source, kernel_ids
FROM sourced;

-- The GPU kernels of every frame step, with the step's phase and what decided it.
-- Columns:
--   trace_id      trace the kernel belongs to
--   kernel_id     row of kernels
--   ordinal       the step's ordinal (iteration)
--   name          the step's frame name
--   phase         prefill, decode or none
--   phase_source  frame, tokens, graph replay, or NULL (none: nothing decided it)
CREATE OR REPLACE VIEW _frame_step_kernels AS
SELECT trace_id, unnest(kernel_ids) AS kernel_id, ordinal, name, phase, phase_source
FROM frame_steps WHERE len(kernel_ids) > 0;

-- Phase and iteration of every GPU kernel, computed from the stored operations (kernel_phases
-- holds the stored result). Step annotations decide where a trace has them; frame steps
-- (_frame_step_kernels) where it has none.
-- Columns:
--   trace_id      trace the kernel belongs to
--   kernel_id     row of kernels
--   phase         prefill, decode, mixed, or none (nothing tells it)
--   iteration     the model step it belongs to: ordinal of its phase step in the trace, else the
--                 number of its ProfilerStep, else the ordinal of its frame step; NULL outside
--                 every step
--   annotation    text of the annotation that decided (phase step, else ProfilerStep), or the
--                 name of the step's frame; NULL outside every step
--   phase_source  annotation, frame, tokens or graph replay; NULL when nothing decided the phase
CREATE OR REPLACE VIEW _kernel_phases_live AS
WITH k AS MATERIALIZED (
    SELECT k.trace_id, k.kernel_id, k.pid, k.ts_ns, l.pid AS cpu_pid, l.tid AS cpu_tid,
           l.launch_ts_ns
    FROM kernels k LEFT JOIN kernel_launches l USING (trace_id, kernel_id)
    WHERE _in_scope(k.trace_id)
), steps AS MATERIALIZED (
    SELECT * FROM trace_steps
), gpu_phase AS (
    SELECT k.trace_id, k.kernel_id, s.phase, s.ordinal, s.name
    FROM k ASOF JOIN (SELECT * FROM steps WHERE on_gpu AND role = 'phase') s
      ON s.trace_id = k.trace_id AND s.pid = k.pid AND s.ts_ns <= k.ts_ns
    WHERE k.ts_ns < s.end_ns
), cpu_phase AS (
    -- the launching thread's step first; a step on another thread of the trace otherwise
    -- (autograd and helper threads launch kernels inside the main thread's steps)
    SELECT k.trace_id, k.kernel_id, s.phase, s.ordinal, s.name
    FROM k ASOF JOIN (SELECT * FROM steps WHERE NOT on_gpu AND role = 'phase') s
      ON s.trace_id = k.trace_id AND s.pid = k.cpu_pid AND s.tid = k.cpu_tid AND s.ts_ns <= k.launch_ts_ns
    WHERE k.launch_ts_ns <= s.end_ns
), any_phase AS (
    SELECT k.trace_id, k.kernel_id, s.phase, s.ordinal, s.name
    FROM k ASOF JOIN (SELECT * FROM steps WHERE NOT on_gpu AND role = 'phase') s
      ON s.trace_id = k.trace_id AND s.ts_ns <= k.launch_ts_ns
    WHERE k.launch_ts_ns <= s.end_ns
), gpu_step AS (
    SELECT k.trace_id, k.kernel_id, coalesce(s.number, s.ordinal) AS number, s.name
    FROM k ASOF JOIN (SELECT * FROM steps WHERE on_gpu AND role = 'step') s
      ON s.trace_id = k.trace_id AND s.pid = k.pid AND s.ts_ns <= k.ts_ns
    WHERE k.ts_ns < s.end_ns
), cpu_step AS (
    -- ProfilerStep ranges cover every thread of the process: match on time alone
    SELECT k.trace_id, k.kernel_id, coalesce(s.number, s.ordinal) AS number, s.name
    FROM k ASOF JOIN (SELECT * FROM steps WHERE NOT on_gpu AND role = 'step') s
      ON s.trace_id = k.trace_id AND s.ts_ns <= k.launch_ts_ns
    WHERE k.launch_ts_ns <= s.end_ns
)
SELECT k.trace_id, k.kernel_id,
       coalesce(gp.phase, cp.phase, ap.phase, fs.phase, 'none') AS phase,
       coalesce(gp.ordinal, cp.ordinal, ap.ordinal, gs.number, cs.number, fs.ordinal) AS iteration,
       coalesce(gp.name, cp.name, ap.name, gs.name, cs.name, fs.name) AS annotation,
       CASE WHEN coalesce(gp.phase, cp.phase, ap.phase) IS NOT NULL THEN 'annotation'
            ELSE fs.phase_source END AS phase_source
FROM k
LEFT JOIN gpu_phase gp USING (trace_id, kernel_id)
LEFT JOIN cpu_phase cp USING (trace_id, kernel_id)
LEFT JOIN any_phase ap USING (trace_id, kernel_id)
LEFT JOIN gpu_step gs USING (trace_id, kernel_id)
LEFT JOIN cpu_step cs USING (trace_id, kernel_id)
LEFT JOIN _frame_step_kernels fs USING (trace_id, kernel_id);

-- Phase and iteration of every GPU kernel (stored in kernel_facts).
-- Columns:
--   trace_id      trace the kernel belongs to
--   kernel_id     row of kernels
--   phase         prefill, decode, mixed, or none (nothing tells it)
--   iteration     the model step it belongs to: ordinal of its phase step in the trace, else the
--                 number of its ProfilerStep, else the ordinal of its frame step; NULL outside
--                 every step
--   annotation    text of the annotation that decided (phase step, else ProfilerStep), or the
--                 name of the step's frame; NULL outside every step
--   phase_source  annotation (a step annotation names the phase), frame (the step's frame does),
--                 tokens (the Input Dims of its GEMMs), graph replay; NULL when nothing decided it
CREATE OR REPLACE VIEW kernel_phases AS
SELECT trace_id, kernel_id, phase, iteration, annotation, phase_source
FROM kernel_facts WHERE _in_scope(trace_id);
