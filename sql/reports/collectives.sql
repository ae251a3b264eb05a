-- Report: collectives
-- Collective communication per operation and phase: calls, time, and how much of it was waiting for
-- other ranks rather than transferring, with message sizes and bandwidths where the trace records
-- them (the view collective_calls). From one rank's trace a call's time above the median of the
-- same collective and size in its step (else its phase) is waiting: a late rank holds everyone.
-- Chart: op+phase -> transfer_ns,wait_ns stacked  Collective time: transfer and waiting
-- Parameters:
--   trace = NULL   trace name or #id (NULL: every trace)
--   phase = NULL   only calls of this phase: prefill, decode, mixed or none (NULL: all)
-- Columns:
--   trace         text             trace name
--   op            text             collective
--   phase         text             phase of the calls
--   calls         count     total  collective kernels
--   total_ns      duration  total  their time
--   transfer_ns   duration  total  time at the typical speed of their size (of the calls with a size)
--   wait_ns       duration  total  time above it: waiting for other ranks
--   wait_pct      percent          wait_ns share of the time of the calls with a size
--   bytes         bytes            median message size
--   algbw_gbps    number    wide   algorithm bandwidth over the transfer time, GB/s (10^9 bytes)
--   busbw_gbps    number           bus bandwidth (nccl-tests factors for the group size), GB/s
--   group_size    count     wide   ranks in the group
--   unsized       count     wide   calls whose size the trace does not record (no wait estimate)
SELECT t.name AS trace, c.op, c.phase, count(*) AS calls, sum(dur_ns) AS total_ns,
       sum(transfer_ns) AS transfer_ns, sum(wait_ns) AS wait_ns,
       100.0 * sum(wait_ns) / nullif(sum(dur_ns) FILTER (bytes IS NOT NULL), 0) AS wait_pct,
       median(bytes) AS bytes,
       sum(bytes) FILTER (transfer_ns > 0) / nullif(sum(transfer_ns) FILTER (bytes IS NOT NULL), 0) AS algbw_gbps,
       sum(bytes * bus_factor) FILTER (transfer_ns > 0) / nullif(sum(transfer_ns) FILTER (bytes IS NOT NULL), 0)
           AS busbw_gbps,
       max(group_size) AS group_size, count(*) FILTER (bytes IS NULL) AS unsized
FROM collective_calls c JOIN traces t USING (trace_id)
WHERE ($trace IS NULL OR is_trace(t.name, t.trace_id, $trace)) AND ($phase IS NULL OR c.phase = $phase)
GROUP BY t.trace_id, t.name, c.op, c.phase
ORDER BY t.trace_id, total_ns DESC;
