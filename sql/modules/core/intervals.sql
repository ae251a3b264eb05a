-- Stabbing joins: the events of a thread that hold a point in time, found by equality (a hash join)
-- rather than by comparing each point with every event of its thread, which costs their product
-- (a gap against the 900,000 Python frames of a serving trace's main thread).
--
-- An event of length d sits on level stab_level(d): the L with 2^(L-1) <= d + 1 < 2^L, so that it touches
-- one or two buckets of width 2^L (stab_buckets: the numbers ts >> L to end >> L). A point p is looked
-- up in bucket p >> L of every level its events can be on (stab_levels: from that of the shortest
-- event it could be held by to that of the longest event there is). An event holding p is in its own level's bucket
-- of p; a bucket holds, beside the events nested around p, the few of its level (each longer than
-- half the bucket) that touch it, so the join's cost grows with the events and the points, not with
-- their product. The join keeps the exact condition (ts_ns <= p AND p <= end) on top:
--
--   FROM (SELECT *, unnest(stab_levels(0, (SELECT max(dur_ns) FROM events))) AS lvl FROM points) q
--   JOIN (SELECT *, stab_level(dur_ns) AS lvl, unnest(stab_buckets(ts_ns, dur_ns)) AS bucket FROM events) e
--     ON e.<thread> = q.<thread> AND e.lvl = q.lvl AND e.bucket = q.point_ns >> q.lvl
--    AND e.ts_ns <= q.point_ns AND e.ts_ns + e.dur_ns >= q.point_ns

-- The level of an event of dur_ns nanoseconds (a missing or negative length: 0): the L with
-- 2^(L-1) <= dur_ns + 1 < 2^L (scalar macro).
CREATE OR REPLACE MACRO stab_level(dur_ns) AS
    floor(log2(greatest(coalesce(dur_ns, 0), 0) + 1))::INTEGER + 1;

-- The buckets of its level that an event from ts_ns lasting dur_ns touches: one or two (list of BIGINT).
CREATE OR REPLACE MACRO stab_buckets(ts_ns, dur_ns) AS
    range(ts_ns >> stab_level(dur_ns), ((ts_ns + greatest(coalesce(dur_ns, 0), 0)) >> stab_level(dur_ns)) + 1);

-- The levels a point is looked up on for events lasting from shortest to longest nanoseconds (list
-- of INTEGER; a missing length counts as 0, as in stab_level).
CREATE OR REPLACE MACRO stab_levels(shortest, longest) AS
    range(stab_level(shortest), stab_level(longest) + 1)::INTEGER[];
