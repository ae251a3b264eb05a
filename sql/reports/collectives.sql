-- Report: collectives
-- Collective communication per operation and phase: calls, time, and how much of it was waiting for
-- other ranks rather than transferring, with message sizes and bandwidths where the trace records
-- them (the view collective_calls). From one rank's trace a call's time above the median of the
-- same collective and size in its step (else its phase) is waiting: a late rank holds everyone.
-- Where the trace records no message size, calls of the same kernel (name, grid, block) in the
-- same phase are taken for one size: transfer is their median time per call, waiting the rest
-- (sized_by says which).
-- Chart: op+phase -> transfer_ns,wait_ns stacked  Collective time: transfer and waiting
-- Example: tracedb report collectives --trace h100_bert-small
-- Rows: traces with collective kernels
-- Parameters:
--   trace = NULL   trace name or #id (NULL: every trace)
--   phase = NULL   only calls of this phase: prefill, decode, mixed or none (NULL: all)
-- Columns:
--   trace         text             trace name
--   op            text             collective
--   phase         text             phase of the calls
--   calls         count     total  collective kernels
--   total_ns      duration  total  their time
--   transfer_ns   duration  total  time at the typical speed of their size (median of their size, or of their kernel shape)
--   wait_ns       duration  total  time above it: waiting for other ranks
--   wait_pct      percent          wait_ns share of their time
--   sized_by      text      wide   message size (recorded), kernel shape (not recorded: calls of one kernel shape taken for one size), or both
--   bytes         bytes            median message size
--   algbw_gbps    number    wide   algorithm bandwidth over the transfer time, GB/s (10^9 bytes)
--   busbw_gbps    number           bus bandwidth (nccl-tests factors for the group size), GB/s
--   group_size    count     wide   ranks in the group
--   unsized       count     wide   calls whose size the trace does not record (compared by kernel shape)
SELECT t.name AS trace, c.op, c.phase, count(*) AS calls, sum(dur_ns) AS total_ns,
       sum(transfer_ns) AS transfer_ns, sum(wait_ns) AS wait_ns,
       100.0 * sum(wait_ns) / nullif(sum(dur_ns), 0) AS wait_pct,
       string_agg(DISTINCT sized_by, ', ' ORDER BY sized_by DESC) AS sized_by,
       median(bytes) AS bytes,
       sum(bytes) FILTER (transfer_ns > 0) / nullif(sum(transfer_ns) FILTER (bytes IS NOT NULL), 0) AS algbw_gbps,
       sum(bytes * bus_factor) FILTER (transfer_ns > 0) / nullif(sum(transfer_ns) FILTER (bytes IS NOT NULL), 0)
           AS busbw_gbps,
       max(group_size) AS group_size, count(*) FILTER (bytes IS NULL) AS unsized
FROM collective_calls c JOIN traces t USING (trace_id)
WHERE ($trace IS NULL OR is_trace(t.name, t.trace_id, $trace)) AND ($phase IS NULL OR c.phase = $phase)
GROUP BY t.trace_id, t.name, c.op, c.phase
ORDER BY t.trace_id, total_ns DESC;

-- Section: ranks
-- Where several ranks of one job are loaded (the same distributedInfo but for the rank): their
-- calls matched by process group and sequence (collective_ranks), per collective and phase. The
-- skew (latest start minus earliest) is how long the first rank waited for the last; the shortest
-- duration across ranks is the transfer; the rank that starts last most often is the one to look at.
-- Columns:
--   job            id               the job (its first trace's id)
--   op             text             collective
--   phase          text             phase of the calls (on the lowest rank)
--   calls          count     total  calls matched across ranks
--   ranks          count            ranks each call was found on (the most)
--   skew_ns        duration  total  latest start minus earliest start, summed over the calls
--   median_skew_ns duration         the median call's skew
--   transfer_ns    duration  total  the shortest duration across ranks, summed
--   wait_ns        duration  total  every rank's time above it, summed: waiting inside the calls
--   last_rank      id               the rank that starts last most often (empty: every call started at once)
--   last_pct       percent          share of the calls it starts last in
--   matched_by     text      wide   seq (recorded sequence numbers) or order (no Seq recorded)
WITH r AS (
    SELECT * FROM collective_ranks
    WHERE ($phase IS NULL OR phase = $phase)
      AND ($trace IS NULL OR job IN (SELECT d.job FROM distributed_jobs d JOIN traces t USING (trace_id)
                                     WHERE is_trace(t.name, t.trace_id, $trace)))
), lasts AS (
    SELECT job, op, phase, last_rank, count(*) AS n FROM r WHERE last_rank IS NOT NULL GROUP BY ALL
), top AS (
    SELECT job, op, phase, arg_max(last_rank, (n, -last_rank)) AS last_rank, max(n) AS n FROM lasts GROUP BY ALL
)
SELECT job, op, phase, count(*) AS calls, max(ranks) AS ranks, sum(skew_ns) AS skew_ns,
       median(skew_ns) AS median_skew_ns, sum(transfer_ns) AS transfer_ns, sum(wait_ns) AS wait_ns,
       any_value(t.last_rank) AS last_rank, 100.0 * any_value(t.n) / count(*) AS last_pct,
       CASE WHEN bool_and(by_seq) THEN 'seq' WHEN NOT bool_or(by_seq) THEN 'order' ELSE 'seq, order' END AS matched_by
FROM r LEFT JOIN top t USING (job, op, phase)
GROUP BY job, op, phase
ORDER BY job, skew_ns DESC;
