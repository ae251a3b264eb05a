-- Report: why
-- Why one trace is slower than another and what to fix first: the causes of the wall-clock gap,
-- largest first, each with the time fixing it would save (at_stake_ns), the code to look at and the
-- command that shows the evidence. The span of each side is split into idle time (by the gaps'
-- causes, host-bound idle by the Python frame holding the host's time in the gaps), each
-- operation's kernel time (per-call speed, then more calls), collectives (waiting above the median
-- call, then transfer), kernels at once and exposed copies; what the slower side gains if a part
-- matched the other side is its time at stake. The findings with the remainder add up to the gap of
-- the spans. Where the trace records no message sizes, calls of one collective kernel shape in a
-- phase are taken for one size.
-- Limit: the findings past --limit are summed in the remainder, the last row
-- Alone: the trace against its own ideal (idle against none, each modelled operation against its device's roofline, waiting in collectives against none)
-- Computed: savings  what fixing each part saves, by replay (why_savings, why_together)
-- Shared: step_windows, device_activity  read by its findings, its savings and its gaps, many times each
-- Strips: A's slowest and typical step above B's (or -p step=N): where the idle time sits
-- Example: tracedb report why --trace h100_bert-small --vs mi300_bert-small
-- Parameters:
--   trace = NULL      trace A (name or #id)
--   vs = NULL         trace B (name or #id; NULL: trace A against its own ideal)
--   phase = NULL      only the steps of this phase: prefill, decode, mixed or none (NULL: the whole traces)
--   min_gap_us = 20   idle gaps at least this long are told apart by cause and frame; shorter ones count together
--   limit = 6         findings listed before the remainder (all: every part, the remainder then 0)
--   step = NULL integer  the step the HTML's timeline strips draw (NULL: the slowest and a typical one)
-- Columns:
--   rank         id               1 first: what fixing saves most (saves_ns, else the time at stake); where the slower side is faster after; the remainder last
--   kind         text             host-bound idle, synchronisation idle, queued idle, short gaps, slower kernels, more kernels or calls, collective waiting, collective transfer, less overlap, exposed memcpy, roofline, remainder; where the slower side is faster: faster kernels, fewer kernels or calls, faster collective transfer, more overlap, less (any other kind)
--   at_stake_ns  duration  total  what the slower side gains if this part matched the other side
--   saves_ns     duration         what the slower side's steps would save: replayed through their dependency graphs with this part at the other side's times (tracedb.savings: kernels at the other side's time per call, a collective without its wait, the host's time in a frame at the other side's, a synchronisation the other side does without removed); below 0 where matching the other side costs time; empty where the replay does not model the part (short gaps, overlap, copies: their time at stake stands)
--   per_step_ns  duration  wide   the time at stake per step of the slower side
--   finding      text             what is slower and by how much, both sides' numbers, where in the code
--   where        text      wide   the code to look at: Python frame, synchronising call, operation and cpu_op, collective kernel
--   slower       text      wide   the slower trace
--   a_ns         duration  wide   A's time in this part
--   b_ns         duration  wide   B's time in this part (alone: the ideal)
--   a_detail     text      wide   A's evidence
--   b_detail     text      wide   B's evidence
--   hint         text      wide   what usually causes a finding of this kind (tracedb rules --table why_hints)
--   part         text      wide   the part's key (kind|what): the same part in another run of the report
--   assumption   text      wide   a roofline finding's: what its FLOPs and bytes assume that the trace does not record (a MoE's expert sizes)
--   next         text      note   the command that shows the evidence
--   answer       text      lead   on the first row: the answer in one sentence, how much slower, the first fix, and every simulated part at once: the slower side's predicted time beside the other side's measured one, the prediction's error and the share of the gap it explains
WITH found AS (
    SELECT w.*, s.saves_ns
    FROM why_findings($trace, $vs, $phase, $min_gap_us, $limit,
                      (SELECT map(list(part), list(saves_ns)) FROM why_savings)) w
    LEFT JOIN why_savings s USING (part)
), ranked AS (
    -- what fixing saves first (where the replay models the part), else the time at stake; where the
    -- slower side is faster after; the remainder last
    SELECT *, row_number() OVER (ORDER BY kind = 'remainder', at_stake_ns < 0,
                                          CASE WHEN at_stake_ns >= 0 THEN -coalesce(saves_ns, at_stake_ns) ELSE at_stake_ns END,
                                          rank) AS new_rank
    FROM found
), together AS (
    -- every simulated part at once: the slower side's prediction beside the other side's measure
    SELECT '; every part at the other side''s times: ' || _why_time(predicted_ns) || ' against '
           || _why_time(other_ns) || ' measured there ('
           || printf('%+.1f', 100.0 * (predicted_ns - other_ns) / nullif(other_ns, 0)) || ' %; '
           || printf('%.0f', 100.0 * (slow_ns - predicted_ns) / nullif(slow_ns - other_ns, 0)) || ' % of the gap explained)'
           AS said
    FROM why_together WHERE (SELECT count(*) FROM why_savings WHERE saves_ns > 0) > 0
)
SELECT r.new_rank AS rank, r.kind, r.at_stake_ns, r.saves_ns, r.per_step_ns,
       r.finding || CASE WHEN r.saves_ns IS NOT NULL AND r.at_stake_ns > 0 AND r.saves_ns < r.at_stake_ns / 10
                         THEN '; fixing it saves ' || _why_time(greatest(r.saves_ns, 0)) || ' of the steps: '
                              || CASE WHEN r.kind = 'host-bound idle'
                                      THEN 'the host takes about as long in this frame on both sides; the idle follows from work elsewhere'
                                      WHEN r.kind = 'synchronisation idle'
                                      THEN 'without the synchronisation, what held the device''s work still holds it'
                                      ELSE 'its time is hidden (it overlaps other work or waits on the host)' END
                         ELSE '' END AS finding,
       r."where", r.slower, r.a_ns, r.b_ns, r.a_detail, r.b_detail, r.hint, r.part, r.assumption, r.next,
       CASE WHEN r.new_rank = 1 THEN
           split_part((SELECT answer FROM found WHERE rank = 1), '; ', 1)
           || CASE WHEN r.kind <> 'remainder' AND r.at_stake_ns > 0 AND coalesce(r.saves_ns, r.at_stake_ns) > 0
                   THEN '; first fix: ' || r.kind || coalesce(' in ' || r."where", '') || ', '
                        || CASE WHEN r.saves_ns IS NOT NULL
                                THEN 'saves ' || _why_time(r.saves_ns) || ' (' || _why_time(r.at_stake_ns) || ' at stake)'
                                ELSE _why_time(r.at_stake_ns)
                                     || CASE WHEN $vs IS NULL THEN ' above its ideal' ELSE ' at stake' END END
                   ELSE '; no single part explains it' END
           || coalesce((SELECT said FROM together), '') END AS answer
FROM ranked r
ORDER BY rank;
