-- include: core.types
-- include: timeline.timeline

-- Collective calls: every communication kernel with its message size, its group, and how much of
-- its time was spent waiting for the other ranks rather than transferring.
-- Waiting, from one rank's trace: calls of the same collective and the same message size in one
-- step move the same bytes over the same links, so each should take about as long as the typical
-- (median) one; the time a call takes above that median is waiting for a slower rank to arrive,
-- the rest is transfer. The median is taken over the step's calls when the step has three or more
-- of them, else over the phase's. Where the trace records no message size (vLLM's custom
-- all-reduce, a graph replay), calls of the same kernel (name, grid, block) in the same phase are
-- taken for one size, and compared over the phase. Bandwidths as nccl-tests reports them: algorithm bandwidth =
-- bytes / time, bus bandwidth = algorithm bandwidth x 2(n-1)/n for an all-reduce, x (n-1)/n for an
-- all-gather, a reduce-scatter and an all-to-all, x 1 otherwise (n ranks in the group), over the
-- transfer time.

-- Every collective kernel with its size, group and wait estimate.
-- Columns:
--   trace_id      trace of the call
--   kernel_id     row of kernels
--   op            collective (All-Reduce, All-Gather, Reduce-Scatter, Broadcast, All-to-All, Send/Recv, Communication)
--   phase         phase of the kernel
--   step          step of the kernel (kernel_facts.iteration)
--   name          kernel name
--   ts_ns         start, nanoseconds
--   dur_ns        duration, nanoseconds
--   cpu_op        the launching cpu_op (record_param_comms for c10d, vllm::all_reduce, ...)
--   process_group the process group's name (record_param_comms), NULL when not recorded
--   rank          this trace's rank (record_param_comms Rank, else distributedInfo rank)
--   group_size    ranks in the group (record_param_comms Group size, else distributedInfo world_size)
--   seq           the call's sequence number in its group (record_param_comms Seq), NULL when not recorded
--   bytes         message size: the larger of In and Out msg nelems times the dtype's size
--                 (record_param_comms), else the launching op's first input (its Input Dims and type)
--   sized_by      'message size' when bytes is recorded, else 'kernel shape': the call is compared
--                 with the calls of the same kernel name, grid and block in its phase
--   typical_ns    median duration of the calls it is compared with (same collective and size, its step or
--                 phase; without a size, same kernel shape and phase)
--   wait_ns       dur_ns above typical_ns: waiting for other ranks
--   transfer_ns   dur_ns - wait_ns
--   bus_factor    nccl-tests bus bandwidth factor of the collective for the group size
CREATE OR REPLACE VIEW collective_calls AS
WITH k AS MATERIALIZED (
    SELECT f.trace_id, f.kernel_id, f.op, f.phase, f.iteration AS step, k.name, k.ts_ns, k.dur_ns, f.cpu_op,
           coalesce(k.external_id, r.external_id) AS external_id,
           k.name || coalesce(' grid ' || k.grid::VARCHAR, '') || coalesce(' block ' || k.block::VARCHAR, '') AS shape
    FROM kernel_facts f
    JOIN kernels k USING (trace_id, kernel_id)
    LEFT JOIN runtime_calls r ON r.trace_id = f.trace_id AND r.event_id = f.launch_id
    WHERE is_comm_op(f.op) AND k.dur_ns IS NOT NULL
), launcher AS (
    -- the cpu_op of the launch's External id: record_param_comms when c10d recorded one
    SELECT k.trace_id, k.kernel_id,
           arg_max(c.args, (c.name = 'record_param_comms', c.ts_ns)) AS args,
           arg_max(c.input_dims, (c.name = 'record_param_comms', c.ts_ns)) AS input_dims,
           arg_max(c.input_types, (c.name = 'record_param_comms', c.ts_ns)) AS input_types
    FROM k JOIN cpu_ops c ON c.trace_id = k.trace_id AND c.external_id = k.external_id
    GROUP BY ALL
), dist AS (
    SELECT trace_id, TRY_CAST(json_extract(value, '$.world_size') AS INTEGER) AS world_size,
           TRY_CAST(json_extract(value, '$.rank') AS INTEGER) AS rank
    FROM trace_metadata WHERE key = 'distributedInfo'
), sized AS (
    SELECT k.*, json_extract_string(l.args, '$."Process Group Name"') AS process_group,
           coalesce(TRY_CAST(json_extract(l.args, '$.Rank') AS INTEGER), d.rank) AS rank,
           coalesce(TRY_CAST(json_extract(l.args, '$."Group size"') AS INTEGER), d.world_size) AS group_size,
           TRY_CAST(json_extract(l.args, '$.Seq') AS BIGINT) AS seq,
           coalesce(
               -- 64-bit counts times an element's size, in 128 bits: cannot overflow
               greatest(TRY_CAST(json_extract(l.args, '$."In msg nelems"') AS BIGINT),
                        TRY_CAST(json_extract(l.args, '$."Out msg nelems"') AS BIGINT))::HUGEINT
                   * dtype_bytes(json_extract_string(l.args, '$.dtype')),
               TRY_CAST(list_reduce(list_transform(TRY_CAST(l.input_dims AS BIGINT[][])[1], lambda d: d::DOUBLE),
                                    lambda a, b: a * b) AS BIGINT)::HUGEINT
                   * dtype_bytes(TRY_CAST(l.input_types AS VARCHAR[])[1])) AS bytes
    FROM k
    LEFT JOIN launcher l USING (trace_id, kernel_id)
    LEFT JOIN dist d USING (trace_id)
), typical AS (
    SELECT *,
           CASE WHEN bytes IS NULL THEN median(dur_ns) OVER by_kernel
                WHEN count(*) OVER by_step >= 3 THEN median(dur_ns) OVER by_step
                ELSE median(dur_ns) OVER by_phase END AS typical_ns
    FROM sized
    WINDOW by_step AS (PARTITION BY trace_id, op, bytes, step),
           by_phase AS (PARTITION BY trace_id, op, bytes, phase),
           by_kernel AS (PARTITION BY trace_id, op, bytes, phase, shape)
)
SELECT trace_id, kernel_id, op, phase, step, name, ts_ns, dur_ns, cpu_op, process_group, rank, group_size, seq,
       bytes, CASE WHEN bytes IS NOT NULL THEN 'message size' ELSE 'kernel shape' END AS sized_by,
       typical_ns::BIGINT AS typical_ns,
       greatest(0, dur_ns - typical_ns)::BIGINT AS wait_ns,
       least(dur_ns, typical_ns)::BIGINT AS transfer_ns,
       CASE WHEN group_size IS NULL OR group_size < 1 THEN NULL
            WHEN op = 'All-Reduce' THEN 2.0 * (group_size - 1) / group_size
            WHEN op IN ('All-Gather', 'Reduce-Scatter', 'All-to-All') THEN (group_size - 1.0) / group_size
            ELSE 1.0 END AS bus_factor
FROM typical;

-- Traces of one distributed job, loaded side by side: traces whose distributedInfo has the same
-- backend, world size and library version (every rank records these alike; each lists only the
-- process groups it is in), each rank loaded once. Two loads of one rank (two runs of the same
-- job) make the job ambiguous, and it is left out.
-- Columns:
--   trace_id    trace of one rank
--   job         the job: the smallest trace_id among its traces
--   rank        the trace's rank (distributedInfo rank)
--   world_size  ranks in the job (distributedInfo world_size)
--   loaded      ranks of the job loaded (2 or more)
CREATE OR REPLACE VIEW distributed_jobs AS
WITH info AS (
    -- what every rank of a job records alike: each rank lists only the process groups it is in
    SELECT trace_id, md5(json_object('backend', json_extract(value, '$.backend'),
                                     'world_size', json_extract(value, '$.world_size'),
                                     'nccl_version', json_extract(value, '$.nccl_version'))::VARCHAR) AS job_key,
           TRY_CAST(json_extract(value, '$.rank') AS INTEGER) AS rank,
           TRY_CAST(json_extract(value, '$.world_size') AS INTEGER) AS world_size
    FROM trace_metadata
    WHERE key = 'distributedInfo' AND json_valid(value) AND json_type(value) = 'OBJECT'
), jobs AS (
    SELECT job_key, min(trace_id) AS job, count(*) AS loaded, count(DISTINCT rank) AS ranks
    FROM info WHERE rank IS NOT NULL GROUP BY job_key
)
SELECT i.trace_id, j.job, i.rank, i.world_size, j.loaded
FROM info i JOIN jobs j USING (job_key)
WHERE j.loaded >= 2 AND j.loaded = j.ranks AND i.world_size > 1;

-- Collective calls matched across the ranks of a job: one row per call of a process group seen on
-- two or more ranks. Calls match by process group, collective and sequence number (record_param_comms
-- Seq); where the trace records none, by their order in the process group on each rank (the ranks'
-- profiles then must cover the same steps, as a torch.profiler schedule does). Times across ranks
-- are compared as recorded: ranks of one node share its clock; across nodes the clocks' offset
-- adds to the skew.
-- A collective completes when its last rank arrives: every rank's kernel ends at about the same
-- time, and the earlier ranks' kernels spend the difference waiting. So skew (latest start minus
-- earliest start) is the waiting the late rank caused, the shortest duration across ranks (the
-- late rank's) is the transfer, and a rank's duration above it is its wait.
-- Columns:
--   job            the job (distributed_jobs)
--   process_group  process group name (NULL when not recorded)
--   op             collective
--   seq            the call's sequence number in its group, else its order (1, 2, ...) on every rank
--   by_seq         true when matched by recorded sequence numbers, false when by order
--   phase          phase of the call on the lowest rank
--   step           step of the call on the lowest rank
--   ranks          ranks the call was found on
--   bytes          message size (the largest recorded)
--   first_start_ns earliest start across ranks, nanoseconds
--   skew_ns        latest start minus earliest start: how long the first rank waited for the last
--   transfer_ns    the shortest duration across ranks
--   longest_ns     the longest duration across ranks
--   wait_ns        the ranks' durations above transfer_ns, summed: time spent waiting in the call
--   first_rank     the rank that started first (the lowest of those that did; NULL when all started at once)
--   last_rank      the rank that started last: the one the others waited for (the lowest of those
--                  that did; NULL when all started at once)
--   last_trace_id  trace of the last rank (NULL when all started at once)
CREATE OR REPLACE VIEW collective_ranks AS
WITH calls AS (
    -- one kernel per call and rank: the first, should a call run several (one Seq, or one call)
    SELECT j.job, c.trace_id, j.rank, c.process_group, c.op, c.phase, c.step, c.bytes, c.ts_ns, c.dur_ns,
           c.kernel_id, c.seq AS recorded_seq
    FROM collective_calls c JOIN distributed_jobs j USING (trace_id)
    JOIN kernel_facts f ON f.trace_id = c.trace_id AND f.kernel_id = c.kernel_id
    QUALIFY row_number() OVER (PARTITION BY c.trace_id, c.process_group, c.op, c.seq IS NOT NULL,
                                            coalesce(c.seq, f.call_id, c.kernel_id) ORDER BY c.ts_ns, c.kernel_id) = 1
), c AS (
    -- then numbered in order where no Seq is recorded
    SELECT job, trace_id, rank, process_group, op, phase, step, bytes, ts_ns, dur_ns,
           recorded_seq IS NOT NULL AS by_seq,
           coalesce(recorded_seq, row_number() OVER (PARTITION BY trace_id, process_group, op
                                                     ORDER BY ts_ns, kernel_id)) AS seq
    FROM calls
)
SELECT job, process_group, op, seq, by_seq,
       arg_min(phase, rank) AS phase, arg_min(step, rank) AS step,
       count(*) AS ranks, max(bytes) AS bytes, min(ts_ns) AS first_start_ns,
       max(ts_ns) - min(ts_ns) AS skew_ns, min(dur_ns) AS transfer_ns, max(dur_ns) AS longest_ns,
       sum(dur_ns) - count(*) * min(dur_ns) AS wait_ns,
       CASE WHEN max(ts_ns) > min(ts_ns) THEN arg_min(rank, (ts_ns, rank)) END AS first_rank,
       CASE WHEN max(ts_ns) > min(ts_ns) THEN arg_max(rank, (ts_ns, -rank)) END AS last_rank,
       CASE WHEN max(ts_ns) > min(ts_ns) THEN arg_max(trace_id, (ts_ns, -rank)) END AS last_trace_id
FROM c
GROUP BY job, process_group, op, seq, by_seq
HAVING count(*) >= 2;
