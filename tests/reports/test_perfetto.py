"""tracedb export --perfetto: a window of a trace as Chrome-trace JSON for Perfetto UI, with
tracedb's steps, layers, idle gaps and why findings on tracks of their own; loaded back, the
window's kernels with their exact times."""

from __future__ import annotations

import json

import pytest

import tracedb
from builders import gap_trace
from conftest import FIXTURES
from tracedb.testing import run_command


def test_a_step_window_round_trips_with_its_gap_on_a_track(tmp_path):
    db_path = tmp_path / "t.duckdb"
    with tracedb.connect(db_path, read_only=False) as db:
        db.load(gap_trace(tmp_path / "gaps.json"))
        steps = {r["step"] for r in db.report("timeline", trace="gaps").main.records() if r["step"] is not None}
        kernels = db.sql("SELECT k.name, k.ts_ns, k.dur_ns FROM kernels k JOIN kernel_facts f USING (trace_id, kernel_id) "
                         "WHERE f.iteration = 2 ORDER BY k.ts_ns").rows
    assert steps == {1, 2} and len(kernels) == 3
    out = tmp_path / "step2.json"
    code, stdout, stderr = run_command(["export", "--perfetto", str(out), "--trace", "gaps", "--step", "2",
                                        "--db", str(db_path)])
    assert code == 0, stderr
    doc = json.loads(out.read_text())
    events = doc["traceEvents"]
    # the window: step 2's kernels, none of step 1
    assert sorted(e["name"] for e in events if e.get("cat") == "kernel") == ["gemm_0", "gemm_1", "gemm_2"]
    # tracedb's tracks: named, on a process of their own
    names = {(e["tid"], e["args"]["name"]) for e in events if e["ph"] == "M" and e["name"] == "thread_name"
             and e.get("cat") is None and e["args"]["name"] in ("steps", "layers", "idle gaps", "why")}
    assert {n for _, n in names} == {"steps", "layers", "idle gaps", "why"}
    ours = [e for e in events if e.get("cat") == "tracedb"]
    assert len({e["pid"] for e in ours}) == 1 and ours[0]["pid"] not in {e["pid"] for e in events
                                                                         if e.get("cat") == "kernel"}
    step = [e for e in ours if e["name"].startswith("step ")]
    assert [e["name"] for e in step] == ["step 2 (none)"]  # a step without a phase annotation: none
    # the gap: from gemm_1's end to gemm_2's start, 300 µs, named by its cause, with its frame
    gap = [e for e in ours if e["name"].startswith("idle: ")]
    assert len(gap) == 1
    k1, k2 = kernels[1], kernels[2]
    assert gap[0]["ts"] * 1000 == pytest.approx(k1[1] + k1[2], abs=1)
    assert gap[0]["dur"] * 1000 == pytest.approx(k2[1] - k1[1] - k1[2], abs=1)
    assert gap[0]["name"] == "idle: host launched late"
    assert gap[0]["args"]["frame"] == "model.py(42): forward"
    assert gap[0]["args"]["at_stake_us"] == pytest.approx(gap[0]["dur"])
    assert any(e["name"].split(". ", 1)[-1].startswith("host-bound idle") for e in ours if e["tid"] == 4)
    # loaded back: the window's kernels with their exact times, and the gap slice with its frame
    with tracedb.connect(tmp_path / "back.duckdb", read_only=False) as back:
        back.load(out)
        assert back.sql("SELECT name, ts_ns, dur_ns FROM kernels ORDER BY ts_ns").rows == kernels
        assert back.sql("SELECT args->>'frame' FROM other_events WHERE name LIKE 'idle: %'").rows == [
            ("model.py(42): forward",)]


def test_the_file_follows_the_trace_event_format(tmp_path):
    """Checked against the format Perfetto's JSON importer reads (Chrome's Trace Event Format): an
    object with traceEvents; each event a ph, integer pid and tid (or strings), ts in µs; X events a
    dur of 0 or more; flow events an id; M events args.name (or args.sort_index). Where Perfetto's own trace processor
    can run, it opens the file and finds every slice."""
    db_path = tmp_path / "t.duckdb"
    with tracedb.connect(db_path, read_only=False) as db:
        db.load(FIXTURES / "kineto" / "h100_bert-small.json.gz")
        done = db.export_perfetto(tmp_path / "bert.json", "h100_bert-small")
    doc = json.loads((tmp_path / "bert.json").read_text())
    assert done.events == len(doc["traceEvents"]) and done.findings > 0
    for e in doc["traceEvents"]:
        assert e["ph"] in ("X", "M", "s", "t", "f", "i"), e
        assert isinstance(e["pid"], (int, str)) and isinstance(e["tid"], (int, str)), e
        if e["ph"] == "X":
            assert isinstance(e["ts"], (int, float)) and e["dur"] >= 0, e
        if e["ph"] in ("s", "t", "f"):
            assert "id" in e, e
        if e["ph"] == "M":  # a name, or a sort index
            assert ("name" in e["args"]) if e["name"].endswith("_name") else ("sort_index" in e["args"]), e
    try:
        from perfetto.trace_processor import TraceProcessor
    except ImportError:
        pytest.skip("Perfetto's trace processor is not installed (pip install perfetto; it fetches its "
                    "binary at first use, which needs a network)")
    try:
        tp = TraceProcessor(trace=str(tmp_path / "bert.json"))
    except Exception as exc:  # no network for its binary
        pytest.skip(f"Perfetto's trace processor could not start: {str(exc).splitlines()[0][:120]}")
    slices = tp.query("SELECT count(*) AS n FROM slice").as_pandas_dataframe()["n"][0]
    assert slices == sum(1 for e in doc["traceEvents"] if e["ph"] == "X")


def test_bad_requests_are_one_line(tmp_path):
    db_path = tmp_path / "t.duckdb"
    with tracedb.connect(db_path, read_only=False) as db:
        db.load(FIXTURES / "kineto" / "h100_bert-small.json.gz")
    for argv, says in [
        (["--perfetto", str(tmp_path / "x.json")], "--perfetto exports one trace"),
        (["--perfetto", str(tmp_path / "x.json"), "--trace", "h100_bert-small", "--step", "999"], "no device activity"),
        (["--perfetto", str(tmp_path / "x.json"), "--trace", "h100_bert-small", "--step", "1", "--phase", "decode"],
         "give one"),
        ([str(tmp_path / "dir"), "--step", "1"], "--step and --phase choose the window"),
    ]:
        code, _, stderr = run_command(["export", *argv, "--db", str(db_path)])
        assert code != 0 and says in stderr and len(stderr.strip().splitlines()) == 1, (argv, stderr)
    assert not (tmp_path / "x.json").exists()


def test_a_step_holds_its_own_gaps_and_steps_only(tmp_path):
    """Step 1's window: its own step slice, and not the gap into step 2 (which starts in step 1's
    time and ends in step 2's)."""
    db_path = tmp_path / "t.duckdb"
    with tracedb.connect(db_path, read_only=False) as db:
        db.load(gap_trace(tmp_path / "gaps.json"))
        db.export_perfetto(tmp_path / "step1.json", "gaps", step=1)
    ours = [e for e in json.loads((tmp_path / "step1.json").read_text())["traceEvents"] if e.get("cat") == "tracedb"]
    assert [e["name"] for e in ours if e["tid"] == 1] == ["step 1 (none)"]
    assert [e for e in ours if e["name"].startswith("idle: ")] == []
    assert {e["args"]["of"] for e in ours if e["tid"] == 4} == {"the whole trace"}


def test_the_database_itself_is_never_the_output(tmp_path):
    db_path = tmp_path / "t.duckdb"
    with tracedb.connect(db_path, read_only=False) as db:
        db.load(gap_trace(tmp_path / "gaps.json"))
    before = db_path.read_bytes()
    for target, says in [(db_path, "is the database itself"), (tmp_path, "is a directory"),
                         (tmp_path / "no" / "such" / "dir.json", "cannot write")]:
        code, _, stderr = run_command(["export", "--perfetto", str(target), "--trace", "gaps", "--db", str(db_path)])
        assert code == 1 and says in stderr and len(stderr.strip().splitlines()) == 1, stderr
    assert db_path.read_bytes() == before


def test_the_critical_path_has_a_track_of_its_own(tmp_path):
    """Each step's critical path on a track of tracedb's process: a slice per stretch of the path
    that takes time, named for what it is counted to, adding up to the path's length; and flow
    arrows where it hops from one of the trace's tracks to another."""
    from conftest import FIXTURES
    from tracedb import critical

    db_path = tmp_path / "c.duckdb"
    with tracedb.connect(db_path, read_only=False) as db:
        db.load(FIXTURES / "critical" / "cuda_event_sync.json.gz")
    out = tmp_path / "step.json"
    with tracedb.connect(db_path, files=True) as db:
        (trace_id, step, lo, hi), = critical.windows(db.con, "cuda_event_sync")
        length = critical.longest_path(critical.build(db.con, trace_id, lo, hi)).length
        db.export_perfetto(out, "cuda_event_sync", step=step)
    events = json.loads(out.read_text())["traceEvents"]
    named = {e["tid"] for e in events if e["ph"] == "M" and e.get("args", {}).get("name") == "critical path"}
    assert named == {5}
    path = [e for e in events if e.get("cat") == "tracedb" and e["tid"] == 5]
    assert path and round(sum(e["dur"] for e in path) * 1000) == length == 2_401_000  # HTA: 2,401 µs
    assert {e["args"]["bound"] for e in path} >= {"host", "compute"}
    starts = [e["ts"] for e in path]
    assert starts == sorted(starts)  # the path runs forward in time
    # a flow arrow for each hop of the path from one of the trace's tracks to another: the launch
    # to its kernel or copy (on its stream, at its start), the device's work to the synchronize waiting for it
    flows = [e for e in events if e.get("cat") == "tracedb critical path"]
    begins = {e["id"]: e for e in flows if e["ph"] == "s"}
    ends = {e["id"]: e for e in flows if e["ph"] == "f"}
    assert begins and begins.keys() == ends.keys() and all(e["bp"] == "e" for e in ends.values())
    assert all((begins[i]["pid"], begins[i]["tid"]) != (ends[i]["pid"], ends[i]["tid"]) for i in begins)
    assert all(begins[i]["ts"] <= ends[i]["ts"] for i in begins)
    device = {(e["pid"], e["tid"], e["ts"]) for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")}
    launches = [i for i in ends if ends[i]["name"] == "launch"]
    assert launches and all((ends[i]["pid"], ends[i]["tid"], ends[i]["ts"]) in device for i in launches)
    calls = {(e["pid"], e["tid"]): e for e in events if e.get("cat") == "cuda_runtime"}
    assert all(begins[i]["tid"] in {c[1] for c in calls} for i in launches)  # from the launching thread
    syncs = [i for i in ends if ends[i]["name"] == "sync"]
    assert syncs and all((ends[i]["pid"], ends[i]["tid"]) in calls for i in syncs)
