"""The stabbing join of core.intervals against the plain definition: for random events of a few
threads (nested stacks, siblings, overlapping, zero-length and very long ones) and random points,
the events holding each point, found by the bucket join, are exactly those a comparison of every
event with every point finds."""

from __future__ import annotations

import random

import duckdb
import pytest

from tracedb import modules


@pytest.fixture(scope="module")
def con():
    c = duckdb.connect()
    c.execute(modules.modules()["core.intervals"].read_text(encoding="utf-8"))
    return c


def _events(rng: random.Random) -> list[tuple]:
    events = []
    for tid in (1, 2, 3):
        t = 1_700_000_000_000_000_000 + rng.randrange(10**6)
        for _ in range(60):  # a stack a few frames deep, then a sibling later on
            depth_start, depth_end = t, t + rng.choice([0, 1, 2, 1000, 10**6, 3 * 10**9])
            for _ in range(rng.randrange(1, 6)):
                events.append((tid, depth_start, depth_end - depth_start))
                span = depth_end - depth_start
                if span < 4:
                    break
                depth_start += rng.randrange(span // 4 + 1)
                depth_end -= rng.randrange(span // 4 + 1)
            t = depth_end + rng.randrange(0, 5000) - 500  # point_ns times overlapping the one before
        events.append((tid, t, 2**40))  # one very long event
    return events


@pytest.mark.parametrize("seed", range(5))
def test_stabbing_join_finds_exactly_the_events_holding_each_point(con, seed):
    rng = random.Random(seed)
    events = _events(rng)
    lo = min(e[1] for e in events)
    hi = max(e[1] + e[2] for e in events)
    points = [(rng.choice((1, 2, 3)), rng.choice([rng.randrange(lo, hi), rng.choice(events)[1],
                                                   sum(rng.choice(events)[1:])])) for _ in range(400)]
    con.execute("CREATE OR REPLACE TABLE ev AS SELECT * FROM (VALUES " +
                ", ".join(f"({i}, {tid}, {ts}::BIGINT, {dur}::BIGINT)" for i, (tid, ts, dur) in enumerate(events)) +
                ") t(id, tid, ts_ns, dur_ns)")
    con.execute("CREATE OR REPLACE TABLE pt AS SELECT * FROM (VALUES " +
                ", ".join(f"({i}, {tid}, {point_ns}::BIGINT)" for i, (tid, point_ns) in enumerate(points)) + ") t(pid, tid, point_ns)")
    stabbed = con.execute("""
        SELECT q.pid, e.id
        FROM (SELECT *, unnest(stab_levels(0, (SELECT max(dur_ns) FROM ev))) AS lvl FROM pt) q
        JOIN (SELECT *, stab_level(dur_ns) AS lvl, unnest(stab_buckets(ts_ns, dur_ns)) AS bucket FROM ev) e
          ON e.tid = q.tid AND e.lvl = q.lvl AND e.bucket = q.point_ns >> q.lvl
         AND e.ts_ns <= q.point_ns AND e.ts_ns + e.dur_ns >= q.point_ns
        ORDER BY ALL""").fetchall()
    plain = con.execute("""
        SELECT q.pid, e.id FROM pt q JOIN ev e ON e.tid = q.tid AND e.ts_ns <= q.point_ns AND e.ts_ns + e.dur_ns >= q.point_ns
        ORDER BY ALL""").fetchall()
    assert stabbed == plain and len(plain) > len(points)  # every point held by one event or more, on average


def test_levels_and_buckets(con):
    """An event touches one or two buckets of its level, each point_ns least as wide as the event."""
    rows = con.execute("""
        SELECT d, stab_level(d) AS l, stab_buckets(1000::BIGINT, d) AS b
        FROM (VALUES (NULL::BIGINT), (-5), (0), (1), (2), (3), (1023), (1024), (1::BIGINT << 62)) t(d)""").fetchall()
    for d, level, buckets in rows:
        length = max(d or 0, 0)
        assert length < 2 ** level and (level == 1 or 2 ** (level - 1) <= length + 1)
        assert 1 <= len(buckets) <= 2 and buckets[0] == 1000 >> level
    assert con.execute("SELECT stab_levels(1000, 1::BIGINT << 62)").fetchone()[0] == list(range(10, 64))
    assert con.execute("SELECT stab_levels(0, NULL)").fetchone()[0] == [1]  # no length: the zero-length level
