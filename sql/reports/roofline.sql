-- Report: roofline
-- How close each operation runs to its device's roofline: per (cpu_op, shape, dtype), the FLOPs and bytes of one call from its recorded shapes (the formulas of the view op_work), the achieved TFLOP/s and TB/s over its calls, the device's peak for that dtype (device_peaks), which resource bounds it and the share of that peak reached; largest time first.
-- Chart: cpu_op+shape -> intensity,tflops,peak_tflops,peak_tbps roofline  Achieved TFLOP/s against FLOP per byte, under the device's roof
-- Example: tracedb report roofline --trace h100_bert-small
-- Rows: traces with an operation whose shapes are recorded
-- Parameters:
--   trace = NULL   trace name or #id (NULL: every trace)
--   limit = NULL   rows per trace, the most time first (NULL: all)
-- Columns:
--   trace        text             trace name
--   cpu_op       text             the operator called
--   shape        text             the shape that decides its work (GEMM M×N×K, attention B×H×N_q×N_kv×d, ...)
--   dtype        text             data type of its first input
--   calls        count     total  calls of that shape
--   total_ns     duration  total  GPU time of those calls (their kernels, memcpys and memsets)
--   flops        count     wide   FLOPs of one call
--   bytes        bytes     wide   bytes moved by one call
--   intensity    number           FLOP per byte
--   tflops       number           achieved TFLOP/s over its calls (all their FLOPs over all their time)
--   tbps         number    wide   achieved TB/s over its calls
--   peak_tflops  number    wide   the device's dense peak for the dtype, TFLOP/s
--   peak_tbps    number    wide   the device's memory bandwidth, TB/s
--   bound        text             compute or memory: the side of the device's ridge point it falls on
--   peak_pct     percent          achieved share of the bounding resource's peak
--   reason       text      wide   why FLOPs or bytes are missing (no shapes recorded, ...)
--   assumption   text      note   what its FLOPs and bytes assume that the trace does not record (a MoE's expert sizes: tracedb rules add model-shapes FILE states them)
SELECT trace, cpu_op, shape, dtype, calls, total_ns, flops, bytes, intensity, tflops, tbps, peak_tflops, peak_tbps,
       bound, peak_pct, reason, assumption
FROM roofline_shapes($trace)
QUALIFY row_number() OVER (PARTITION BY trace_id ORDER BY total_ns DESC, cpu_op, shape) <= coalesce($limit, 1e18)
ORDER BY trace_id, total_ns DESC, cpu_op, shape;

-- Section: device
-- The device of each trace and the peaks used for it (the first device_peaks row matching its
-- recorded name); a device no row matches gets no percentages, never a guess: add its peaks with
-- tracedb rules add my_peaks.csv (the header of sql/rules/device_peaks.csv).
-- Columns:
--   trace        text   trace name
--   device_name  text   the device the trace recorded
--   device       text   the device_peaks row used (empty: none matches: no percentages)
--   bf16         number dense BF16 peak, TFLOP/s
--   fp16         number wide   dense FP16 peak, TFLOP/s
--   fp32         number dense FP32 peak, TFLOP/s
--   fp8          number wide   dense FP8 peak, TFLOP/s
--   mem_tbps     number memory bandwidth, TB/s
--   reference    text   wide   the row's source
--   note         text   what the percentages rest on
SELECT t.name AS trace, p.device_name, p.device, p.bf16, p.fp16, p.fp32, p.fp8, p.mem_tbps, p.reference,
       CASE WHEN p.device_name IS NULL THEN 'the trace records no device: no percentages'
            WHEN p.device IS NULL THEN p.device_name || ' is not in device_peaks: no percentages (tracedb rules add your own)'
            ELSE 'peaks of ' || p.device END AS note
FROM trace_peaks p JOIN traces t USING (trace_id)
WHERE ($trace IS NULL OR is_trace(t.name, t.trace_id, $trace))
  AND EXISTS (SELECT 1 FROM kernels k WHERE k.trace_id = t.trace_id)
ORDER BY t.trace_id;

-- Section: coverage
-- How much of each trace's GPU time the rows above explain: time in calls whose FLOPs or bytes
-- are known, in calls without (no shapes recorded), and outside every modelled call; and of the
-- kernels replayed from a CUDA/HIP graph (whose cpu_ops ran at capture), how many were matched to
-- the calls of a capture trace loaded beside (replayed_kernel_calls) and so have shapes.
-- Columns:
--   trace         text             trace name
--   gpu_ns        duration  total  kernel, memcpy and memset time
--   modelled_ns   duration  total  in calls with FLOPs or bytes
--   unshaped_ns   duration  total  in calls without them
--   other_ns      duration  total  outside every modelled call
--   replayed_ns   duration  total  kernels replayed from a graph
--   matched_ns    duration  total  of those, matched to a capture trace's calls
--   capture       text             the capture trace matched (empty: none loaded, or no match)
--   modelled_pct  percent          modelled_ns share of gpu_ns
WITH tr AS (
    SELECT trace_id, name FROM traces WHERE ($trace IS NULL OR is_trace(name, trace_id, $trace))
), dev AS (
    SELECT trace_id, sum(dur_ns) AS gpu_ns FROM device_activity GROUP BY trace_id
), calls AS (
    SELECT trace_id, sum(gpu_ns) FILTER (flops IS NOT NULL OR bytes IS NOT NULL) AS modelled_ns,
           sum(gpu_ns) FILTER (flops IS NULL AND bytes IS NULL) AS unshaped_ns
    FROM op_roofline_of((SELECT list(trace_id) FROM tr)) GROUP BY trace_id
), replay AS (
    SELECT k.trace_id, sum(k.dur_ns) AS replayed_ns FROM kernels k JOIN kernel_launches l USING (trace_id, kernel_id)
    WHERE l.graph GROUP BY k.trace_id
), matched AS (
    SELECT m.trace_id, sum(k.dur_ns) AS matched_ns, string_agg(DISTINCT t.name, ', ') AS capture
    FROM replayed_kernel_calls m JOIN kernels k USING (trace_id, kernel_id) JOIN traces t ON t.trace_id = m.capture_id
    GROUP BY m.trace_id
)
SELECT tr.name AS trace, d.gpu_ns, coalesce(c.modelled_ns, 0) AS modelled_ns, coalesce(c.unshaped_ns, 0) AS unshaped_ns,
       d.gpu_ns - coalesce(c.modelled_ns, 0) - coalesce(c.unshaped_ns, 0) AS other_ns,
       coalesce(r.replayed_ns, 0) AS replayed_ns, coalesce(m.matched_ns, 0) AS matched_ns, m.capture,
       100.0 * coalesce(c.modelled_ns, 0) / nullif(d.gpu_ns, 0) AS modelled_pct
FROM tr JOIN dev d USING (trace_id) LEFT JOIN calls c USING (trace_id) LEFT JOIN replay r USING (trace_id)
LEFT JOIN matched m USING (trace_id)
ORDER BY tr.trace_id;

-- Section: unmodelled
-- Where the GPU time off the roofline goes, per trace and reason, each with the time it costs and
-- what would bring it on: calls whose shapes are missing or unread (their reason), kernels replayed
-- from a CUDA/HIP graph with no capture trace loaded (their cpu_ops ran at capture), and kernels
-- of operators no formula covers (the operators taking most of that time named). The rows of a trace add up to its coverage's gpu_ns minus modelled_ns.
-- Columns:
--   trace      text             trace name
--   reason     text             why this time has no FLOPs or bytes
--   time_ns    duration  total  GPU time it costs
--   share_pct  percent   total  share of the trace's GPU time
--   fix        text             what to record or load to model it
WITH tr AS (
    SELECT trace_id, name FROM traces WHERE ($trace IS NULL OR is_trace(name, trace_id, $trace))
), dev AS (
    SELECT trace_id, sum(dur_ns) AS gpu_ns FROM device_activity WHERE trace_id IN (SELECT trace_id FROM tr)
    GROUP BY trace_id
), calls AS (
    SELECT * FROM op_roofline_of((SELECT list(trace_id) FROM tr))
), unshaped AS (
    SELECT trace_id, reason, sum(gpu_ns) AS time_ns FROM calls WHERE flops IS NULL AND bytes IS NULL AND gpu_ns > 0
    GROUP BY ALL
), replay AS (
    SELECT k.trace_id, sum(k.dur_ns) AS replayed_ns,
           sum(k.dur_ns) FILTER (k.kernel_id IN (SELECT kernel_id FROM replayed_kernel_calls m
                                                 WHERE m.trace_id = k.trace_id)) AS matched_ns
    FROM kernels k JOIN kernel_launches l USING (trace_id, kernel_id)
    WHERE l.graph AND k.trace_id IN (SELECT trace_id FROM tr) GROUP BY k.trace_id
), spans AS (
    -- the spans of the ops of a modelled family on their threads: a kernel launched in one is
    -- counted to a call (the op, or the call around it)
    SELECT trace_id, pid, tid, ts_ns, ts_ns + dur_ns AS end_ns
    FROM cpu_ops
    WHERE (trace_id IN (SELECT trace_id FROM tr)
           OR trace_id IN (SELECT capture_id FROM replayed_kernel_calls WHERE trace_id IN (SELECT trace_id FROM tr)))
      AND perf_family(name) IS NOT NULL AND dur_ns IS NOT NULL
), launched AS (
    SELECT l.trace_id, l.kernel_id, l.cpu_op, l.pid, l.tid, l.launch_ts_ns, k.dur_ns
    FROM kernels k JOIN kernel_launches l USING (trace_id, kernel_id)
    WHERE NOT l.graph AND k.trace_id IN (SELECT trace_id FROM tr)
), launched_in_span AS (
    -- the kernels launched inside a span: where the latest end of the spans of the thread started
    -- by the launch lies past it (one ordered pass)
    SELECT trace_id, kernel_id FROM (
        SELECT *, max(end_ns) OVER (PARTITION BY trace_id, pid, tid ORDER BY ts_ns, kernel_id NULLS FIRST
                                    ROWS UNBOUNDED PRECEDING) AS reach
        FROM (SELECT trace_id, NULL::BIGINT AS kernel_id, pid, tid, ts_ns, end_ns FROM spans
              UNION ALL SELECT trace_id, kernel_id, pid, tid, launch_ts_ns, NULL FROM launched))
    WHERE kernel_id IS NOT NULL AND reach > ts_ns
), captured AS (
    SELECT m.trace_id, m.kernel_id, c.event_id, k.dur_ns, c.name, c.trace_id AS capture_id, c.pid, c.tid, c.ts_ns
    FROM replayed_kernel_calls m JOIN kernels k USING (trace_id, kernel_id)
    JOIN cpu_ops c ON c.trace_id = m.capture_id AND c.event_id = m.call_event_id
    WHERE m.trace_id IN (SELECT trace_id FROM tr)
), captured_in_span AS (
    -- the same for the captured operators, a span's end included
    SELECT trace_id, kernel_id, event_id FROM (
        SELECT *, max(end_ns) OVER (PARTITION BY capture_id, pid, tid ORDER BY ts_ns, kernel_id NULLS FIRST
                                    ROWS UNBOUNDED PRECEDING) AS reach
        FROM (SELECT NULL::BIGINT AS trace_id, NULL::BIGINT AS kernel_id, NULL::BIGINT AS event_id,
                     trace_id AS capture_id, pid, tid, ts_ns, end_ns FROM spans
              UNION ALL SELECT trace_id, kernel_id, event_id, capture_id, pid, tid, ts_ns, NULL FROM captured))
    WHERE kernel_id IS NOT NULL AND reach >= ts_ns
), live_ops AS (
    -- the operators issuing the kernels launched outside every modelled call, outside graphs:
    -- those named in the fix
    SELECT trace_id, cpu_op, sum(dur_ns) AS ns
    FROM launched ANTI JOIN launched_in_span USING (trace_id, kernel_id)
    GROUP BY ALL
    UNION ALL
    -- and of graph replays, the captured operators that launched them, outside every modelled op
    -- of the capture
    SELECT trace_id, name, sum(dur_ns)
    FROM captured ANTI JOIN captured_in_span USING (trace_id, kernel_id, event_id)
    GROUP BY ALL
), top_ops AS (
    SELECT trace_id, string_agg(coalesce(cpu_op, '(no operator)'), ', ' ORDER BY ns DESC) AS ops
    FROM (SELECT * FROM live_ops
          QUALIFY row_number() OVER (PARTITION BY trace_id ORDER BY ns DESC) <= 4)
    GROUP BY trace_id
), parts AS (
    SELECT trace_id, reason, time_ns,
           CASE WHEN reason LIKE 'no shapes recorded%' THEN 'profile with record_shapes=True'
                WHEN reason LIKE 'serving attention: no step annotation%'
                    THEN 'turn on the serving framework''s detailed step annotations (their sq/sk sums)'
                WHEN reason LIKE 'fused MoE without%'
                    THEN 'a MoE op taking its expert weights (AITER''s fused_moe, fused_experts) gives its work'
                ELSE 'see the reason' END AS fix
    FROM unshaped
    UNION ALL
    SELECT trace_id, 'graph replay with no capture loaded', replayed_ns - coalesce(matched_ns, 0),
           'load the trace recorded while the graph was captured beside it (its launches give the '
           || 'replayed kernels their operators and shapes)'
    FROM replay WHERE replayed_ns > coalesce(matched_ns, 0)

)
SELECT tr.name AS trace, p.reason, p.time_ns, 100.0 * p.time_ns / nullif(d.gpu_ns, 0) AS share_pct, p.fix
FROM (
    SELECT * FROM parts
    UNION ALL
    -- the rest of the time off the roofline: operators no formula covers
    SELECT d.trace_id, 'operators with no model', d.gpu_ns - coalesce(m.ns, 0) - coalesce(q.ns, 0),
           'their work is not in the shapes tracedb reads' || coalesce(' (most time: ' || o.ops || ')', '')
    FROM dev d
    LEFT JOIN (SELECT trace_id, sum(gpu_ns) AS ns FROM calls WHERE flops IS NOT NULL OR bytes IS NOT NULL GROUP BY ALL) m
           USING (trace_id)
    LEFT JOIN (SELECT trace_id, sum(time_ns) AS ns FROM parts GROUP BY ALL) q USING (trace_id)
    LEFT JOIN top_ops o USING (trace_id)
) p
JOIN tr USING (trace_id) JOIN dev d USING (trace_id)
WHERE p.time_ns <> 0
ORDER BY tr.trace_id, p.time_ns DESC;
