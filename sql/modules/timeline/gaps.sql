-- include: core.intervals
-- include: core.selection
-- include: timeline.timeline

-- GPU idle gaps and their causes: the intervals in which no kernel, memcpy or memset ran, each with
-- the activity before and after it, what the host thread that launched the next activity was doing
-- (the innermost Python frame holding most of its time in the gap, that frame's own time and its
-- heaviest callees, its cpu_op, a synchronising runtime call inside it), and
-- a cause in Holistic Trace Analysis's terms:
--   host launched late   the next activity was launched after the device went idle: the host was
--                        busy elsewhere (HTA's host wait)
--   synchronisation      the launching thread sat in a synchronising call (device, stream or
--                        event synchronize, a stream's wait for an event, a blocking memcpy) or
--                        the device recorded a cuda_sync while idle: the host waited for the device,
--                        then launched
--   queued and waiting   the next activity was launched before the device went idle and still
--                        started later: a dependency (an event, another stream) or the launch
--                        latency held it (HTA's kernel wait and other)
--   no launch recorded   the trace holds no launching call for it (a device-only trace)

-- True for runtime calls that block the calling thread until the device (or a stream or event)
-- has finished: cudaDeviceSynchronize, hipStreamSynchronize, cudaEventSynchronize,
-- cudaStreamWaitEvent, and the synchronous copies cudaMemcpy / hipMemcpy / hipMemcpyWithStream.
CREATE OR REPLACE MACRO is_sync_call(name) AS
    regexp_matches(name, '(?i)synchroni[sz]e|streamwaitevent|^(cuda|hip)memcpy(withstream|dtoh|2d)?$|^cuMemcpy(DtoH)?(_v2)?$');

-- Idle gaps of the device longer than min_gap_ns, of the traces of a list of trace ids (table
-- macro): one use reads any number of traces (a comparison plans it once for both sides).
-- Parameters: want_ids: trace ids (NULL: every trace); min_gap_ns: the shortest gap kept.
-- Columns:
--   trace_id          trace of the gap
--   gap               1, 2, ... in time order among the trace's gaps of at least min_gap_ns
--   start_ns          the device went idle (end of the last activity before), nanoseconds
--   end_ns            the next activity started, nanoseconds
--   idle_ns           end_ns - start_ns
--   step              step of the next activity (kernel_facts.iteration); NULL outside every step
--   between_steps     true when the activity before belongs to another step (or none)
--   phase             phase of the next kernel
--   before_kind       kernel, memcpy or memset that ended last before the gap
--   before_name       its name
--   before_op         its operation
--   after_kind        kernel, memcpy or memset that started the gap's end
--   after_name        its name
--   after_op          its operation
--   after_cpu_op      cpu_op that launched it
--   launch_tid        thread that launched it (pid:tid); NULL when no launch is recorded
--   launched_after_ns launch time minus start_ns: above 0 when the host launched it after the device went idle
--   host_ns           the host's part of the gap: from the device going idle to the launch (when the
--                     launch came later), else nothing (host_ns 0: the launch was queued before)
--   frame             the innermost Python frame of the launching thread that holds at least 80 % of
--                     the host's part of the gap (with no host part: the innermost spanning its start)
--   frame_ns          that frame's time inside the host's part
--   frame_self_ns     of which its own time: frame_ns less its Python callees' time there (NULL when
--                     the trace records no Python ids)
--   callees           its heaviest callees in the host's part (Python functions, cpu_ops, runtime
--                     calls), three at most, with their time there
--   frame_cpu_op      innermost cpu_op of that thread spanning the same interval
--   sync_call         the longest synchronising runtime call of that thread overlapping the gap, or the device's cuda_sync event
--   cause             host launched late, synchronisation, queued and waiting, or no launch recorded
CREATE OR REPLACE MACRO gpu_idle_gaps_of(want_ids, min_gap_ns) AS TABLE
WITH a AS MATERIALIZED (
    SELECT * FROM device_activity WHERE want_ids IS NULL OR list_contains(want_ids, trace_id)
), ordered AS (
    SELECT *,
           max(end_ns) OVER w AS prev_end,
           arg_max({'kind': kind, 'event_id': event_id}, end_ns) OVER w AS prev
    FROM a
    WINDOW w AS (PARTITION BY trace_id ORDER BY ts_ns, end_ns, kind, event_id
                 ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
), g AS MATERIALIZED (
    SELECT o.trace_id, o.prev_end AS start_ns, o.ts_ns AS end_ns, o.ts_ns - o.prev_end AS idle_ns,
           o.step, o.phase, o.kind AS after_kind, o.name AS after_name, o.op AS after_op, o.cpu_op AS after_cpu_op,
           o.launch_pid, o.launch_tid, o.launch_ts_ns,
           b.kind AS before_kind, b.name AS before_name, b.op AS before_op, b.step AS before_step,
           -- the host's part of the gap: to the launch when the host launched late, else its start
           o.prev_end AS host_lo, greatest(o.prev_end, least(o.launch_ts_ns, o.ts_ns)) AS host_hi
    FROM ordered o
    JOIN a b ON b.trace_id = o.trace_id AND b.kind = o.prev.kind AND b.event_id = o.prev.event_id
    WHERE o.ts_ns - o.prev_end >= greatest(coalesce(min_gap_ns, 1), 1)
), frames AS MATERIALIZED (
    -- the innermost frame holding 80 % of the host's part (the latest to start of those); each such
    -- frame holds the part's midpoint, so the frames holding it are the candidates (core.intervals);
    -- 80 % is worked out dividing first: a part near 2^62 ns times 4 would leave BIGINT
    SELECT g.trace_id, g.start_ns, g.host_lo, g.host_hi,
           arg_max({'name': f.name, 'python_id': f.python_id, 'pid': f.pid, 'tid': f.tid,
                    'lo': greatest(f.ts_ns, g.host_lo), 'hi': least(f.ts_ns + f.dur_ns, g.host_hi)},
                   (f.ts_ns, -f.dur_ns, f.event_id)) AS f
    FROM (SELECT trace_id, start_ns, host_lo, host_hi, launch_pid, launch_tid, (host_lo + host_hi) // 2 AS mid_ns,
                 unnest(stab_levels((host_hi - host_lo) // 5 * 4 + (host_hi - host_lo) % 5 * 4 // 5, (SELECT max(dur_ns) FROM python_functions
                                                                   WHERE trace_id IN (SELECT trace_id FROM g)))) AS lvl
          FROM g) g
    JOIN (SELECT trace_id, event_id, name, python_id, pid, tid, ts_ns, dur_ns, stab_level(dur_ns) AS lvl,
                 unnest(stab_buckets(ts_ns, dur_ns)) AS bucket
          FROM python_functions WHERE trace_id IN (SELECT trace_id FROM g)) f
      ON f.trace_id = g.trace_id AND f.pid = g.launch_pid AND f.tid = g.launch_tid
     AND f.lvl = g.lvl AND f.bucket = g.mid_ns >> g.lvl
     AND f.ts_ns <= g.mid_ns AND f.ts_ns + f.dur_ns >= g.mid_ns
     AND least(f.ts_ns + f.dur_ns, g.host_hi) - greatest(f.ts_ns, g.host_lo) >= 0.8 * (g.host_hi - g.host_lo)
    GROUP BY ALL
), thread_calls AS (
    -- the cpu_ops and runtime calls of the traces, what a frame's callees are counted among
    SELECT trace_id, name, pid, tid, ts_ns, dur_ns FROM cpu_ops WHERE trace_id IN (SELECT trace_id FROM g)
    UNION ALL
    SELECT trace_id, name, pid, tid, ts_ns, dur_ns FROM runtime_calls WHERE trace_id IN (SELECT trace_id FROM g)
), windows AS (
    -- each frame's time in the host's part: on one thread these never overlap, as the gaps do not
    SELECT trace_id, start_ns, f.pid, f.tid, f.lo, f.hi FROM frames
), overlapping AS (
    -- the calls of the frame's thread in its window: those running as it opens (core.intervals) and
    -- those starting inside it (the window before each call, by an ASOF join)
    SELECT w.trace_id, w.start_ns, w.lo, w.hi, c.name, c.ts_ns, c.dur_ns
    FROM (SELECT *, unnest(stab_levels(0, (SELECT max(dur_ns) FROM thread_calls))) AS lvl FROM windows) w
    JOIN (SELECT *, stab_level(dur_ns) AS lvl, unnest(stab_buckets(ts_ns, dur_ns)) AS bucket FROM thread_calls) c
      ON c.trace_id = w.trace_id AND c.pid = w.pid AND c.tid = w.tid
     AND c.lvl = w.lvl AND c.bucket = w.lo >> w.lvl
     AND c.ts_ns <= w.lo AND c.ts_ns + c.dur_ns > w.lo AND c.ts_ns < w.hi
    UNION ALL
    SELECT w.trace_id, w.start_ns, w.lo, w.hi, c.name, c.ts_ns, c.dur_ns
    FROM thread_calls c ASOF JOIN windows w
      ON w.trace_id = c.trace_id AND w.pid = c.pid AND w.tid = c.tid AND c.ts_ns > w.lo
    WHERE c.ts_ns < w.hi
), callee_time AS (
    -- what ran under the frame in the host's part: its Python callees, and the cpu_ops and runtime
    -- calls of the thread in that time
    SELECT fr.trace_id, fr.start_ns, 'py' AS kind, c.name,
           sum(least(c.ts_ns + c.dur_ns, fr.f.hi) - greatest(c.ts_ns, fr.f.lo)) AS ns
    FROM frames fr JOIN python_functions c
      ON c.trace_id = fr.trace_id AND c.python_parent_id = fr.f.python_id
     AND c.ts_ns < fr.f.hi AND c.ts_ns + c.dur_ns > fr.f.lo
    GROUP BY ALL
    UNION ALL
    SELECT trace_id, start_ns, 'op', name, sum(least(ts_ns + dur_ns, hi) - greatest(ts_ns, lo))
    FROM overlapping
    GROUP BY ALL
), callees AS (
    SELECT trace_id, start_ns, sum(ns) FILTER (kind = 'py') AS py_ns,
           string_agg(name || ' ' || printf('%.3f ms', ns / 1e6), '; ' ORDER BY ns DESC, name) FILTER (rk <= 3) AS callees
    FROM (SELECT *, row_number() OVER (PARTITION BY trace_id, start_ns ORDER BY ns DESC, name) AS rk FROM callee_time)
    GROUP BY ALL
), ops AS (
    -- the innermost cpu_op spanning the host's part: of those holding its start (core.intervals)
    SELECT g.trace_id, g.start_ns, arg_max(c.name, (c.ts_ns, -c.dur_ns)) AS frame_cpu_op
    FROM (SELECT trace_id, start_ns, host_lo, host_hi, launch_pid, launch_tid,
                 unnest(stab_levels(host_hi - host_lo, (SELECT max(dur_ns) FROM cpu_ops
                                                        WHERE trace_id IN (SELECT trace_id FROM g)))) AS lvl
          FROM g) g
    JOIN (SELECT trace_id, name, pid, tid, ts_ns, dur_ns, stab_level(dur_ns) AS lvl,
                 unnest(stab_buckets(ts_ns, dur_ns)) AS bucket
          FROM cpu_ops WHERE trace_id IN (SELECT trace_id FROM g)) c
      ON c.trace_id = g.trace_id AND c.pid = g.launch_pid AND c.tid = g.launch_tid
     AND c.lvl = g.lvl AND c.bucket = g.host_lo >> g.lvl
     AND c.ts_ns <= g.host_lo AND c.ts_ns + c.dur_ns >= g.host_hi
    GROUP BY ALL
), syncs AS (
    SELECT g.trace_id, g.start_ns, arg_max(r.name, r.dur_ns) AS sync_call
    FROM g JOIN runtime_calls r
      ON r.trace_id = g.trace_id AND r.pid = g.launch_pid AND r.tid = g.launch_tid
     AND r.ts_ns < g.end_ns AND r.ts_ns + r.dur_ns > g.start_ns
    WHERE is_sync_call(r.name)
    GROUP BY ALL
), device_syncs AS (
    SELECT g.trace_id, g.start_ns, arg_max(e.name, e.dur_ns) AS sync_event
    FROM g JOIN other_events e
      ON e.trace_id = g.trace_id AND e.cat = 'cuda_sync'
     AND e.ts_ns < g.end_ns AND e.ts_ns + coalesce(e.dur_ns, 0) > g.start_ns
    GROUP BY ALL
)
SELECT g.trace_id, row_number() OVER (PARTITION BY g.trace_id ORDER BY g.start_ns) AS gap,
       g.start_ns, g.end_ns, g.idle_ns, g.step, g.before_step IS DISTINCT FROM g.step AS between_steps, g.phase,
       g.before_kind, g.before_name, g.before_op, g.after_kind, g.after_name, g.after_op, g.after_cpu_op,
       g.launch_pid || ':' || g.launch_tid AS launch_tid, g.launch_ts_ns - g.start_ns AS launched_after_ns,
       g.host_hi - g.host_lo AS host_ns, f.f.name AS frame, f.f.hi - f.f.lo AS frame_ns,
       CASE WHEN f.f.python_id IS NOT NULL THEN f.f.hi - f.f.lo - coalesce(c.py_ns, 0) END AS frame_self_ns,
       c.callees, o.frame_cpu_op, coalesce(s.sync_call, ds.sync_event) AS sync_call,
       CASE WHEN g.launch_ts_ns IS NULL THEN 'no launch recorded'
            WHEN coalesce(s.sync_call, ds.sync_event) IS NOT NULL THEN 'synchronisation'
            WHEN g.launch_ts_ns >= g.start_ns THEN 'host launched late'
            ELSE 'queued and waiting' END AS cause
FROM g
LEFT JOIN frames f USING (trace_id, start_ns)
LEFT JOIN callees c USING (trace_id, start_ns)
LEFT JOIN ops o USING (trace_id, start_ns)
LEFT JOIN syncs s USING (trace_id, start_ns)
LEFT JOIN device_syncs ds USING (trace_id, start_ns);

-- gpu_idle_gaps_of for one trace, or every trace (table macro; the same columns).
-- Parameters: want_trace: a trace name or id (NULL: every trace); min_gap_ns: the shortest gap kept.
CREATE OR REPLACE MACRO gpu_idle_gaps(want_trace, min_gap_ns) AS TABLE
SELECT * FROM gpu_idle_gaps_of(wanted_ids(want_trace), min_gap_ns);
