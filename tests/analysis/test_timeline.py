"""Where the wall-clock time goes: the GPU timeline, idle gaps and their causes, collectives waiting
versus transferring, and comparisons in wall-clock time, on traces built here where every number
is known, and on real traces against TraceLens's published gpu_timeline."""

from __future__ import annotations

from pathlib import Path

import pytest

import tracedb
from builders import ALL_REDUCE, GEMM, NORM, US, Built, comms_args, stream
from conftest import CORPUS, load, run_cli
from tracedb.testing import frame_event, runtime_call


def timeline_trace(path) -> Path:
    """One step: two compute kernels overlapping on two streams (100-200 and 150-250), an
    all-reduce (300-400) half hidden by a kernel (350-450), a memcpy alone (500-520), a last kernel
    (600-610). Span 510 µs, busy 330, idle 180, computation 260, communication 100 of which 50
    exposed, memcpy 20, all exposed."""
    b = Built()
    b.x("user_annotation", "ProfilerStep#1", 0, 1000)
    b.on(GEMM, 10, 100, 100, stream(7))
    b.on(NORM, 20, 150, 100, stream(8))
    b.on(ALL_REDUCE, 30, 300, 100, stream(9))
    b.on(GEMM, 40, 350, 100, stream(7))
    b.on("Memcpy DtoH (Device -> Pinned)", 50, 500, 20, stream(7), cat="gpu_memcpy", launch="cudaMemcpyAsync")
    b.on(NORM, 60, 600, 10, stream(7))
    return b.write(path)


def test_timeline_counts_each_instant_once(con, tmp_path):
    trace = load(con, timeline_trace(tmp_path / "t.json"))
    rows = con.execute("SELECT step, span_ns, busy_ns, idle_ns, compute_ns, comm_ns, exposed_comm_ns, memcpy_ns, "
                       "exposed_memcpy_ns, kernels, memcpys FROM gpu_timeline WHERE trace_id = ? ORDER BY step NULLS FIRST",
                       [trace.trace_id]).fetchall()
    want = (510 * US, 330 * US, 180 * US, 260 * US, 100 * US, 50 * US, 20 * US, 20 * US, 5, 1)
    assert rows == [(None, *want), (1, *want)]


def test_timeline_report_and_its_stacked_chart(con, tmp_path, db_path):
    load(con, timeline_trace(tmp_path / "t.json"))
    con.close()
    out = run_cli("report", "timeline", "--format", "csv", db=db_path)
    lines = out.stdout.splitlines()
    assert lines[0].startswith("trace,window,step,phase,span_ns,busy_ns,idle_ns,idle_pct")
    assert lines[1].split(",")[1:7] == ["whole trace", "", "", "510000", "330000", "180000"]
    assert lines[2].split(",")[1] == "step 1: ProfilerStep#1"
    page = run_cli("report", "timeline", "--format", "html", db=db_path).stdout
    assert "Wall-clock time of each window" in page and page.count("<rect") >= 2 * 4


def gaps_trace(path) -> Path:
    """Three gaps after a first kernel (10000-10010 µs): a synchronising call (the host waits in
    cudaStreamSynchronize, then launches: 10010-10030), a late launch after a long Python frame
    (10040-15010), a kernel queued before the device went idle that starts later (15020-15100)."""
    b = Built()
    b.events.append(frame_event("model.py(5): forward", 8000, 12000))
    b.on(GEMM, 9000, 10000, 10, stream(7))
    b.events.append(runtime_call("cudaStreamSynchronize", 9005, 1010, 1))
    b.on(NORM, 10020, 10030, 10, stream(7))
    b.events.append(frame_event("model.py(10): slow_python", 10035, 4973))
    b.x("cpu_op", "aten::item", 10036, 4970)
    b.on(GEMM, 15005, 15010, 10, stream(7))
    b.on(NORM, 15019, 15100, 10, stream(7))
    return b.write(path)


def test_gaps_and_their_causes(con, tmp_path):
    trace = load(con, gaps_trace(tmp_path / "g.json"))
    rows = con.execute("SELECT gap, idle_ns, cause, frame, frame_cpu_op, sync_call, launched_after_ns "
                       "FROM gpu_idle_gaps(?, 10000) ORDER BY gap", [trace.trace_id]).fetchall()
    assert rows == [
        (1, 20 * US, "synchronisation", "model.py(5): forward", None, "cudaStreamSynchronize", 10 * US),
        (2, 4970 * US, "host launched late", "model.py(10): slow_python", "aten::item", None, 4965 * US),
        (3, 80 * US, "queued and waiting", "model.py(5): forward", None, None, -1 * US)]
    # a threshold above a gap leaves it out
    assert con.execute("SELECT count(*) FROM gpu_idle_gaps(?, 100000)", [trace.trace_id]).fetchone() == (1,)


def test_the_same_hole_in_every_step_is_one_finding(con, tmp_path, db_path):
    b = Built()
    for step in range(3):
        t = 100_000 * step
        b.x("user_annotation", f"ProfilerStep#{step + 1}", t, 90_000)
        b.on(GEMM, t + 10, t + 100, 10, stream(7))
        b.events.append(frame_event("sampler.py(7): sample", t + 50, 30_000))
        b.on(NORM, t + 30_040, t + 30_100, 10, stream(7))  # launched at the end of the frame
    load(con, b.write(tmp_path / "steps.json"))
    con.close()
    rows = tracedb.connect(db_path).report("gaps", min_gap_us=1000).main.records()
    assert [(r["cause"], r["frame"], r["gaps"], r["idle_ns"], r["steps"]) for r in rows] == [
        ("host launched late", None, 2, 2 * (100_000 - 30_010) * US, "between"),
        ("host launched late", "sampler.py(7): sample", 3, 3 * 29_990 * US, "1, 2, 3")]


def collectives_trace(path, rank=0, slow_step=2, flavour="nvidia") -> Path:
    """Three steps of four all-reduces of 1,024 bf16 elements in a group of 4 (10 µs each), one of
    which waits 2 ms for a late rank in step slow_step."""
    b = Built(flavour)
    ext = 0
    for step in range(3):
        t = 100_000 * step
        b.x("user_annotation", f"ProfilerStep#{step + 1}", t, 90_000)
        for i in range(4):
            ext += 1
            slow = step + 1 == slow_step and i == 1
            b.x("cpu_op", "record_param_comms", t + 1000 * i, 5, **comms_args(ext, rank, 4))
            b.on(ALL_REDUCE, t + 1000 * i + 1, t + 10_000 * i + 100, 2010 if slow else 10, stream(9), ext=ext)
    return b.write(path)


def test_collectives_waiting_versus_transfer(con, tmp_path):
    trace = load(con, collectives_trace(tmp_path / "c.json"))
    calls = con.execute("SELECT step, bytes, group_size, rank, typical_ns, wait_ns, transfer_ns, bus_factor "
                        "FROM collective_calls WHERE trace_id = ? ORDER BY ts_ns", [trace.trace_id]).fetchall()
    assert len(calls) == 12 and {c[1:5] for c in calls} == {(2048, 4, 0, 10 * US)}
    assert [c[5] for c in calls if c[5]] == [2000 * US] and all(c[6] == 10 * US for c in calls)
    assert calls[0][7] == pytest.approx(1.5)
    row = con.execute("SELECT calls, total_ns, transfer_ns, wait_ns FROM (SELECT count(*) AS calls, sum(dur_ns) AS total_ns, "
                      "sum(transfer_ns) AS transfer_ns, sum(wait_ns) AS wait_ns FROM collective_calls)").fetchone()
    assert row == (12, 12 * 10 * US + 2000 * US, 120 * US, 2000 * US)


def test_collectives_report(con, tmp_path, db_path):
    load(con, collectives_trace(tmp_path / "c.json"))
    con.close()
    (row,) = tracedb.connect(db_path).report("collectives").main.records()
    assert (row["op"], row["calls"], row["wait_ns"], row["transfer_ns"], row["bytes"]) == \
        ("All-Reduce", 12, 2000 * US, 120 * US, 2048)
    # nccl-tests: algbw = bytes / time, busbw = algbw * 2(n-1)/n; bytes per ns is GB/s
    assert row["busbw_gbps"] == pytest.approx(2048 * 12 / (120 * US) * 1.5)


def test_compare_splits_the_wall_clock_gap(con, tmp_path, db_path):
    """The parts of each side's span add up to it, so their gaps add up to the span's gap; the
    idle part is the idle difference; steps pair in order."""
    a = load(con, timeline_trace(tmp_path / "a.json"), name="a")
    b = load(con, gaps_trace(tmp_path / "b.json"), name="b")
    con.close()
    with tracedb.connect(db_path) as database:
        r = database.report("compare", trace="a", vs="b")
        assert list(r.sections)[:3] == ["why", "wall-clock", "main"] and r.main_name == "main"
        findings = r.sections["why"].records()
        spans = database.sql("SELECT a_ns - b_ns FROM compare_wall('a', 'b', NULL) WHERE part = 'span'").rows[0][0]
        assert sum(f["at_stake_ns"] for f in findings) == abs(spans)
        parts = {p["part"]: p for p in r.sections["wall-clock"].records()}
        assert parts["span"]["a_ns"] == 510 * US
        assert sum(p["a_ns"] for n, p in parts.items() if n != "span") == 510 * US
        assert sum(p["gap_ns"] for n, p in parts.items() if n != "span") == parts["span"]["gap_ns"]
        idle = database.sql("SELECT idle_ns FROM gpu_timeline WHERE step IS NULL ORDER BY trace_id").rows
        assert parts["idle"]["a_ns"] == idle[0][0] and parts["idle"]["b_ns"] == idle[1][0]
        # kernels: 410 µs of durations in 310 µs of kernel time on the device (busy less lone memcpy)
        assert parts["overlap (kernels at once)"]["a_ns"] == -100 * US
        steps = r.sections["steps"].records()
        assert [(s["pair"], s["side"]) for s in steps] == [(1, "A")]
    assert (a.trace_id, b.trace_id) == (1, 2)


def test_a_phase_no_kernel_has_says_why(con, tmp_path, db_path):
    load(con, timeline_trace(tmp_path / "a.json"), name="a")
    con.close()
    out = run_cli("report", "compare", "--trace", "a", "--vs", "a", "--phase", "decode", db=db_path)
    assert out.returncode == 1 and "no kernel has phase 'decode': no phase was found" in out.stderr
    assert out.stderr.count("\n") == 1


# TraceLens's published gpu_timeline (tests/traces/inference/*/perf_csvs/gpu_timeline.csv), in ms
TRACELENS = {
    "mi300x_xdit_sd3.5_compiled": dict(computation=712.0159106445312, exposed_comm=0.0,
                                       exposed_memcpy=0.47383935546875, busy=712.48975,
                                       idle=459.1389057617188, total=1171.6286557617188),
    "mi300x_xdit_flux1_compiled": dict(computation=201.15163330078124, exposed_comm=0.0,
                                       exposed_memcpy=0.20012255859375, busy=201.351755859375,
                                       idle=25.243927734375, total=226.59568359375),
}


@pytest.mark.parametrize("name", sorted(TRACELENS))
def test_timeline_agrees_with_tracelens(con, name):
    path = CORPUS / f"{name}.json.gz"
    if not path.exists():
        pytest.skip(f"{path}: not here (set TRACEDB_CORPUS)")
    trace = load(con, path)
    got = con.execute("SELECT compute_ns, exposed_comm_ns, exposed_memcpy_ns, busy_ns, idle_ns, span_ns "
                      "FROM gpu_timeline WHERE trace_id = ? AND step IS NULL", [trace.trace_id]).fetchone()
    want = TRACELENS[name]
    for value, key in zip(got, ("computation", "exposed_comm", "exposed_memcpy", "busy", "idle", "total")):
        # TraceLens adds float microseconds; ours are exact nanoseconds: within a microsecond
        assert abs(value / 1e6 - want[key]) < 1e-3, key


def rank_trace(path, rank, late, world=4, seq=True, info=None) -> Path:
    """One rank of a job of `world` ranks: two steps of three all-reduces in process group "0".
    late maps (step, call) to (the late rank, its delay in µs): the other ranks start the call on
    time and wait; every rank ends it at the same instant, after 10 µs of transfer."""
    b = Built()
    ext = 0
    for step in range(2):
        t = 100_000 * step
        b.x("user_annotation", f"ProfilerStep#{step + 1}", t, 90_000)
        for i in range(3):
            ext += 1
            late_rank, delay = late.get((step, i), (None, 0))
            start = t + 10_000 * i + 100 + (delay if rank == late_rank else 0)
            args = comms_args(ext, rank, world)
            if seq:
                args["Seq"] = 7 + 3 * step + i
            b.x("cpu_op", "record_param_comms", start - 50, 5, **args)
            b.on(ALL_REDUCE, start - 49, start, 10 + delay - (delay if rank == late_rank else 0), stream(9), ext=ext)
    dist = info or {"backend": "nccl", "rank": rank, "world_size": world, "pg_count": 1,
                    "pg_config": [{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl",
                                   "pg_size": world, "ranks": list(range(world))}], "nccl_version": "2.21.5"}
    return b.write(path, distributedInfo=dist)


LATE = {(0, 1): (2, 500), (1, 0): (3, 300), (1, 2): (2, 200)}


@pytest.mark.parametrize("seq", [True, False], ids=["by-seq", "by-order"])
def test_collectives_matched_across_ranks(con, tmp_path, db_path, seq):
    for rank in range(4):
        load(con, rank_trace(tmp_path / f"r{rank}.json", rank, LATE, seq=seq), name=f"rank{rank}")
    # another job (two ranks of 2): matched on its own, never with the first
    for rank in range(2):
        load(con, rank_trace(tmp_path / f"o{rank}.json", rank, {}, world=2, seq=seq), name=f"other{rank}")
    jobs = con.execute("SELECT t.name, d.job, d.rank, d.loaded FROM distributed_jobs d JOIN traces t USING (trace_id) "
                       "ORDER BY t.trace_id").fetchall()
    assert [(n, r, k) for n, _, r, k in jobs] == [(f"rank{i}", i, 4) for i in range(4)] + [("other0", 0, 2), ("other1", 1, 2)]
    assert len({j for n, j, _, _ in jobs if n.startswith("rank")}) == 1
    first_job = jobs[0][1]
    calls = con.execute("SELECT step, ranks, skew_ns, transfer_ns, longest_ns, wait_ns, last_rank, by_seq "
                        "FROM collective_ranks WHERE job = ? ORDER BY first_start_ns", [first_job]).fetchall()
    expected = []
    for step in range(2):
        for i in range(3):
            late_rank, delay = LATE.get((step, i), (None, 0))
            expected.append((step + 1, 4, delay * US, 10 * US, (10 + delay) * US, 3 * delay * US, late_rank, seq))
    assert calls == expected
    con.close()
    ranks = tracedb.connect(db_path).report("collectives").sections["ranks"].records()
    mine = next(r for r in ranks if r["job"] == first_job)
    assert (mine["calls"], mine["ranks"], mine["skew_ns"], mine["transfer_ns"], mine["wait_ns"], mine["last_rank"]) == \
        (6, 4, 1000 * US, 60 * US, 3000 * US, 2)
    assert mine["last_pct"] == pytest.approx(100 * 2 / 6)
    assert mine["matched_by"] == ("seq" if seq else "order")
    other = next(r for r in ranks if r["job"] != first_job)
    assert (other["calls"], other["ranks"], other["skew_ns"], other["last_rank"]) == (6, 2, 0, None)


def test_two_runs_of_one_rank_are_not_matched(con, tmp_path):
    """Two loads of rank 0 (two runs of one job) leave the job ambiguous: nothing is matched."""
    for rank, name, late in ((0, "a0", LATE), (1, "a1", LATE), (0, "b0", {})):
        load(con, rank_trace(tmp_path / f"{name}.json", rank, late), name=name)
    assert con.execute("SELECT count(*) FROM traces").fetchone()[0] == 3
    assert con.execute("SELECT count(*) FROM distributed_jobs").fetchone()[0] == 0
    assert con.execute("SELECT count(*) FROM collective_ranks").fetchone()[0] == 0


def test_ranks_of_one_job_listing_their_own_groups_are_one_job(con, tmp_path):
    """Each rank's distributedInfo lists only the process groups it is in (tensor parallel [0, 1]
    on rank 0, [2, 3] on rank 2): still one job."""
    def info(rank):
        tp = [0, 1] if rank < 2 else [2, 3]
        return {"backend": "nccl", "rank": rank, "world_size": 4, "pg_count": 2, "nccl_version": "2.21.5",
                "pg_config": [{"pg_name": "0", "pg_desc": "default_pg", "pg_size": 4, "ranks": [0, 1, 2, 3]},
                              {"pg_name": "1", "pg_desc": "tp", "pg_size": 2, "ranks": tp}]}
    for rank in (0, 2):
        load(con, rank_trace(tmp_path / f"r{rank}.json", rank, LATE, info=info(rank)), name=f"rank{rank}")
    assert con.execute("SELECT count(DISTINCT job), count(*) FROM distributed_jobs").fetchone() == (1, 2)
    assert con.execute("SELECT count(*) FROM collective_ranks").fetchone()[0] == 6


def test_a_call_run_as_two_kernels_matches_as_one(con, tmp_path):
    """Matched by order (no Seq): rank 1 runs its second all-reduce as two kernels of one call; the
    calls after it still pair with the other rank's."""
    for rank in (0, 1):
        b = Built()
        t = 0
        for i in range(3):
            b.x("cpu_op", "record_param_comms", t, 5, **comms_args(i + 1, rank, 2))
            b.on(ALL_REDUCE, t + 1, t + 100, 10, stream(9), ext=i + 1)
            if rank == 1 and i == 1:
                b.on(ALL_REDUCE, t + 2, t + 120, 10, stream(9), ext=i + 1)  # the same call's second kernel
            t += 1000
        dist = {"backend": "nccl", "rank": rank, "world_size": 2, "nccl_version": "2.21.5"}
        load(con, b.write(tmp_path / f"r{rank}.json", distributedInfo=dist), name=f"r{rank}")
    calls = con.execute("SELECT seq, ranks, skew_ns FROM collective_ranks ORDER BY seq").fetchall()
    assert calls == [(1, 2, 0), (2, 2, 0), (3, 2, 0)]
