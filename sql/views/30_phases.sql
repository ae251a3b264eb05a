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

-- Phase and iteration of every GPU kernel, computed live (kernel_phases holds the stored result).
-- Columns:
--   trace_id    trace the kernel belongs to
--   kernel_id   row of kernels
--   phase       prefill, decode, mixed, or none (no phase annotation encloses it)
--   iteration   the model step it belongs to: ordinal of its phase step in the trace, else the
--               number of its ProfilerStep; NULL outside every step
--   annotation  text of the annotation that decided (phase step, else ProfilerStep), or NULL
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
       coalesce(gp.phase, cp.phase, ap.phase, 'none') AS phase,
       coalesce(gp.ordinal, cp.ordinal, ap.ordinal, gs.number, cs.number) AS iteration,
       coalesce(gp.name, cp.name, ap.name, gs.name, cs.name) AS annotation
FROM k
LEFT JOIN gpu_phase gp USING (trace_id, kernel_id)
LEFT JOIN cpu_phase cp USING (trace_id, kernel_id)
LEFT JOIN any_phase ap USING (trace_id, kernel_id)
LEFT JOIN gpu_step gs USING (trace_id, kernel_id)
LEFT JOIN cpu_step cs USING (trace_id, kernel_id);

-- Phase and iteration of every GPU kernel (stored in kernel_facts).
-- Columns:
--   trace_id    trace the kernel belongs to
--   kernel_id   row of kernels
--   phase       prefill, decode, mixed, or none (no phase annotation encloses it)
--   iteration   the model step it belongs to: ordinal of its phase step in the trace, else the
--               number of its ProfilerStep; NULL outside every step
--   annotation  text of the annotation that decided (phase step, else ProfilerStep), or NULL
CREATE OR REPLACE VIEW kernel_phases AS
SELECT trace_id, kernel_id, phase, iteration, annotation FROM kernel_facts WHERE _in_scope(trace_id);
