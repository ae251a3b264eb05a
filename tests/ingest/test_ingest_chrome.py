"""Chrome-trace ingestion on small traces built here, where the right answer is known exactly."""

from __future__ import annotations

import gzip
import json

import pytest

from conftest import KINETO, load, read_fixture, write_trace

KINETO_BY_NAME = {p.name.split(".")[0]: p for p in KINETO}


def test_epoch_scale_fractional_timestamps_are_exact(con, tmp_path):
    path = tmp_path / "t.json"
    # Written as raw text so the digits are exactly these (a float could not hold them).
    path.write_text('{"traceEvents": ['
                    '{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, '
                    '"ts": 1736413971558972.912, "dur": 1.001},'
                    '{"ph": "X", "cat": "kernel", "name": "k2", "pid": 0, "tid": 7, '
                    '"ts": "1699529622790614.8", "dur": "2"},'
                    '{"ph": "X", "cat": "kernel", "name": "k3", "pid": 0, "tid": 7, "ts": 3676599926928, "dur": 0},'
                    '{"ph": "X", "cat": "kernel", "name": "k4", "pid": 0, "tid": 7, "ts": 1.0005, "dur": 0.0004}'
                    ']}')
    out = load(con, path)
    assert out.rejected == 0
    rows = con.execute("SELECT name, ts_ns, dur_ns FROM kernels ORDER BY kernel_id").fetchall()
    assert rows == [("k", 1736413971558972912, 1001), ("k2", 1699529622790614800, 2000),
                    ("k3", 3676599926928000, 0), ("k4", 1000, 0)]  # sub-ns: half to even


def test_metadata_before_and_after_events(con, tmp_path):
    path = write_trace(tmp_path / "m.json",
                       [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1, "dur": 2}],
                       deviceProperties=[{"id": 0, "name": "AMD Instinct MI300X", "warpSize": 64}],
                       roctracer_version=4,
                       after_traceName="x]y", after_list=[{"a": [1, 2]}], after_big=123456789012345678901234567890)
    out = load(con, path)
    assert out.platform == "AMD"
    rows = con.execute("SELECT key, value FROM trace_metadata ORDER BY position").fetchall()
    assert [r[0] for r in rows] == ["schemaVersion", "deviceProperties", "roctracer_version", "traceName",
                                    "list", "big"]
    assert rows[-1][1] == "123456789012345678901234567890"  # exact, not a float
    assert json.loads(rows[3][1]) == "x]y"
    assert con.execute("SELECT device_name FROM traces").fetchone()[0] == "AMD Instinct MI300X"


def test_shape_args_of_cpu_ops_as_json_extract_reads_them(con, tmp_path):
    """The shape columns of cpu_ops come from the one json_transform of args, yet hold what
    json_extract would: JSON null for a null value, NULL for a missing key, nested values whole."""
    args = [{"Input Dims": [[1, 2], [3]], "Input type": ["float", ""], "Input Strides": [[2, 1], []],
             "Concrete Inputs": ["", "1"]},
            {"Input Dims": None, "Input type": None},
            {},
            {"note": "Input Dims", "nested": {"Input Dims": [9]}},
            {"Input Dims": "s", "Concrete Inputs": {"a": [1, {"b": None}]}}]
    events = [{"ph": "X", "cat": "cpu_op", "name": f"aten::op{i}", "pid": 1, "tid": 1, "ts": 10 * i, "dur": 2,
               "args": a} for i, a in enumerate(args)]
    load(con, write_trace(tmp_path / "shapes.json", events))
    rows = con.execute("""
        SELECT input_dims IS NOT DISTINCT FROM json_extract(args, '$."Input Dims"'),
               input_types IS NOT DISTINCT FROM json_extract(args, '$."Input type"'),
               input_strides IS NOT DISTINCT FROM json_extract(args, '$."Input Strides"'),
               concrete_inputs IS NOT DISTINCT FROM json_extract(args, '$."Concrete Inputs"'),
               input_dims::VARCHAR
        FROM cpu_ops ORDER BY ts_ns""").fetchall()
    assert [r[:4] for r in rows] == [(True,) * 4] * len(args)
    assert [r[4] for r in rows] == ["[[1,2],[3]]", "null", None, None, '"s"']


def test_bare_array_every_phase_and_string_pids(con, tmp_path):
    events = [
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": 5,
         "args": {"correlation": 3, "stream": 7, "device": 0}},
        {"ph": "B", "name": "begin", "pid": "Spans", "tid": "PyTorch Profiler", "ts": 1},
        {"ph": "E", "name": "begin", "pid": "Spans", "tid": "PyTorch Profiler", "ts": 2},
        {"ph": "i", "name": "Iteration Start", "s": "g", "pid": "Traces", "tid": "Trace", "ts": 3},
        {"ph": "I", "cat": "marker", "name": "mark", "pid": 1, "tid": 1, "ts": 4},
        {"ph": "s", "id": 3, "cat": "ac2g", "name": "ac2g", "pid": 1, "tid": 1, "ts": 5},
        {"ph": "t", "id": 3, "cat": "ac2g", "name": "ac2g", "pid": 1, "tid": 1, "ts": 6},
        {"ph": "f", "id": 3, "cat": "ac2g", "name": "ac2g", "pid": 0, "tid": 7, "ts": 10, "bp": "e"},
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "python3"}},
        {"ph": "C", "name": "memory", "pid": 1, "ts": 7, "args": {"allocated": 10, "reserved": 20.5}},
        {"ph": "X", "cat": "overhead", "name": "Overhead", "pid": 1, "tid": 1, "ts": 8, "dur": 1},
        {"ph": "X", "name": "no category", "pid": 1, "tid": 1, "ts": 9, "dur": 1, "custom": {"k": 1}},
    ]
    path = tmp_path / "bare.json"
    path.write_text(json.dumps(events))
    out = load(con, path)
    assert out.events == 12 and out.rejected == 0 and out.complete
    tables = [r[0] for r in con.execute("SELECT table_name FROM all_events ORDER BY event_id").fetchall()]
    assert tables == ["kernels", "other_events", "other_events", "instants", "instants", "flows", "flows", "flows",
                      "metadata_events", "counters", "other_events", "other_events"]
    assert con.execute("SELECT pid, tid FROM other_events WHERE event_id = 1").fetchone() == ("Spans", "PyTorch Profiler")
    assert con.execute("SELECT scope FROM instants WHERE event_id = 3").fetchone()[0] == "g"
    assert con.execute("SELECT flow_id, bp FROM flows WHERE event_id = 7").fetchone() == ("3", "e")
    assert json.loads(con.execute("SELECT extra FROM other_events WHERE event_id = 11").fetchone()[0]) == \
        {"custom": {"k": 1}}
    assert con.execute("SELECT extra FROM kernels").fetchone()[0] is None
    values = con.execute("SELECT series, value FROM counter_values ORDER BY series").fetchall()
    assert values == [("allocated", 10.0), ("reserved", 20.5)]
    assert con.execute("SELECT name FROM process_names").fetchone()[0] == "python3"
    assert con.execute("SELECT metadata_count FROM (SELECT count(*) AS metadata_count FROM trace_metadata)"
                       ).fetchone()[0] == 0


def _cut(data: bytes, fraction: float) -> bytes:
    return data[: int(len(data) * fraction)]


def test_truncated_fixture_loads_complete_events(con, tmp_path):
    src = next(p for p in KINETO if p.name.startswith("mi300_vllm"))
    with gzip.open(src, "rb") as f:
        raw = f.read()
    cut = tmp_path / "cut.json"
    cut.write_bytes(_cut(raw, 0.6))
    out = load(con, cut)
    assert not out.complete and "truncated" in out.problem
    full = json.loads(raw)["traceEvents"]
    # every event whose text ends before the cut is loaded, and nothing else
    assert 0 < out.events < len(full)
    assert con.execute("SELECT count(*) FROM all_events").fetchone()[0] == out.events
    assert con.execute("SELECT complete, problem IS NOT NULL FROM traces").fetchone() == (False, True)
    # the metadata before the events survived
    keys = [r[0] for r in con.execute("SELECT key FROM trace_metadata ORDER BY position").fetchall()]
    assert keys[:3] == ["schemaVersion", "deviceProperties", "roctracer_version"]


def test_truncated_gzip_stream(con, tmp_path):
    src = next(p for p in KINETO if p.name.startswith("h100"))
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(_cut(src.read_bytes(), 0.5))
    out = load(con, cut)
    assert not out.complete and out.events > 0
    assert con.execute("SELECT count(*) FROM all_events").fetchone()[0] == out.events


def test_syntax_error_midway_costs_that_event_only(con, tmp_path):
    path = tmp_path / "nan.json"
    path.write_text('{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1},'
                    '{"ph": "X", "cat": "cpu_op", "name": "b", "pid": 1, "tid": 1, "ts": 2, "dur": 1 "x": 1},'
                    '{"ph": "X", "cat": "cpu_op", "name": "c", "pid": 1, "tid": 1, "ts": 3, "dur": 1}]}')
    out = load(con, path)
    assert (out.events, out.rejected, out.complete) == (3, 1, True)
    assert out.problem == ("1 malformed event(s) set aside, the rest read (first: event 1, "
                           "malformed JSON: unexpected character, expected ',' or '}')")
    assert con.execute("SELECT name FROM cpu_ops ORDER BY event_id").fetchall() == [("a",), ("c",)]
    assert con.execute("SELECT event_id, raw FROM rejected_events").fetchall() == [
        (1, '{"ph": "X", "cat": "cpu_op", "name": "b", "pid": 1, "tid": 1, "ts": 2, "dur": 1 "x": 1}')]


def test_bad_events_are_set_aside_with_reasons(con, tmp_path):
    deep: dict = {}
    node = deep
    for _ in range(300):
        node["d"] = {}
        node = node["d"]
    events = [
        {"ph": "X", "cat": "kernel", "name": "good", "pid": 0, "tid": 7, "ts": 1, "dur": 1},
        {"ph": "X", "cat": "kernel", "name": "ts text", "pid": 0, "tid": 7, "ts": "soon", "dur": 1},
        {"ph": "X", "cat": "kernel", "name": "null dur", "pid": 0, "tid": 7, "ts": 1, "dur": None},
        {"ph": "X", "cat": "kernel", "name": "negative", "pid": 0, "tid": 7, "ts": 1, "dur": -5},
        {"ph": "X", "cat": "cpu_op", "name": "big", "pid": 0, "tid": 7, "ts": 1, "dur": 1,
         "args": {"External id": 2 ** 70}},
        {"ph": "X", "cat": "cpu_op", "name": "deep", "pid": 0, "tid": 7, "ts": 1, "dur": 1, "args": deep},
        42,
        {"ph": "X", "cat": "kernel", "name": "good too", "pid": 0, "tid": 7, "ts": 2, "dur": 1},
    ]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"traceEvents": events}))
    out = load(con, path)
    assert out.complete and out.events == 8 and out.rejected == 6
    assert con.execute("SELECT name FROM kernels ORDER BY kernel_id").fetchall() == [("good",), ("good too",)]
    rows = con.execute("SELECT event_id, reason, raw FROM rejected_events ORDER BY event_id").fetchall()
    assert [r[0] for r in rows] == [1, 2, 3, 4, 5, 6]
    reasons = [r[1] for r in rows]
    assert "ts is not a number" in reasons[0]
    assert reasons[1] == "dur is null"
    assert "dur is negative" in reasons[2]
    assert reasons[3] == "integer beyond 64 bits"
    assert "nested too deeply" in reasons[4]
    assert reasons[5] == "event is not a JSON object"
    assert json.loads(rows[3][2])["args"]["External id"] == 2 ** 70  # raw kept exactly
    assert json.loads(rows[4][2])["args"] == deep
    assert con.execute("SELECT rejected_count FROM traces").fetchone()[0] == 6


def test_empty_event_list_is_a_trace(con, tmp_path):
    out = load(con, write_trace(tmp_path / "empty.json", []))
    assert out.events == 0 and out.complete


@pytest.mark.parametrize("name,expected", [("h100.pt.trace.json.gz", "h100"), ("run.json", "run"),
                                           ("rank-3.Jul_15.1074.pt.trace.json", "rank-3.Jul_15.1074")])
def test_default_names(name, expected):
    from pathlib import Path

    from tracedb.ingest.loader import default_name
    assert default_name(Path(name)) == expected


def _samples(n: int) -> list[dict]:
    """Chrome's sampling profile entries: objects laid out like events (name, ts, ...)."""
    return [{"name": f"sample {i}", "cpu": 1, "tid": 7, "ts": str(1000 + i), "weight": "1", "sf": i % 5}
            for i in range(n)]


@pytest.mark.parametrize("indent", [None, 1], ids=["compact", "pretty"])
def test_an_array_after_the_events_is_metadata(con, tmp_path, indent):
    """An array after traceEvents longer than the search for the list's end walks (64 KiB) is
    metadata, not events: only the events of the traceEvents array are events."""
    kernels = [{"ph": "X", "cat": "kernel", "name": f"k{i}", "pid": 0, "tid": 7, "ts": 1000 + 10 * i, "dur": 5,
                "args": {"device": 0, "stream": 7}} for i in range(3)]
    samples = [{"a": i} for i in range(6000)]
    path = tmp_path / "samples.json"
    path.write_text(json.dumps({"deviceProperties": [{"id": 0, "name": "NVIDIA H100", "warpSize": 32}],
                                "traceEvents": kernels, "samples": samples}, indent=indent))
    out = load(con, path)
    assert (out.events, out.rejected, out.complete) == (3, 0, True)
    assert con.execute("SELECT name FROM kernels ORDER BY ts_ns").fetchall() == [("k0",), ("k1",), ("k2",)]
    assert con.execute("SELECT count(*) FROM other_events").fetchone()[0] == 0
    rows = dict(con.execute("SELECT key, value FROM trace_metadata").fetchall())
    assert json.loads(rows["samples"]) == samples
    assert con.execute("SELECT device_name FROM traces").fetchone()[0] == "NVIDIA H100"


def test_metadata_of_many_megabytes_after_a_real_trace_keeps_every_key(con, tmp_path):
    """A real trace with Chrome's samples (about 9 MB, its entries laid out like events, so that the
    bulk reader cuts it into segments) and stackFrames after its events: every event of the trace
    and nothing else, every metadata key whole."""
    trace = read_fixture(KINETO_BY_NAME["h100_bert-small"])
    events = len(trace["traceEvents"])
    samples = _samples(90_000)
    frames = {str(i): {"name": f"frame {i}", "category": "py"} for i in range(1000)}
    trace["samples"] = samples
    trace["stackFrames"] = frames
    path = tmp_path / "with_samples.json"
    path.write_text(json.dumps(trace, indent=1))
    assert path.stat().st_size > 9 << 20
    out = load(con, path)
    assert (out.events, out.rejected, out.complete) == (events, 0, True)
    keys = [k for k in trace if k != "traceEvents"]
    rows = con.execute("SELECT key, value FROM trace_metadata ORDER BY position").fetchall()
    assert [r[0] for r in rows] == keys
    stored = dict(rows)
    assert json.loads(stored["samples"]) == samples and json.loads(stored["stackFrames"]) == frames
    assert con.execute("SELECT device_name FROM traces").fetchone()[0] == trace["deviceProperties"][0]["name"]


@pytest.mark.parametrize("reader", ["bulk", "streaming"])
def test_a_metadata_value_beyond_the_cap_is_set_aside_with_its_size(con, tmp_path, monkeypatch, reader):
    """Samples arrays beyond what a metadata value keeps, before the event list and after it (one
    of 40 MB after it took more than the load's memory limit to insert, and the load failed; 95 MB
    before it marked the trace incomplete): the events load, the trace is complete, each value is
    set aside as its size in the file and the trace's problem says so; the other keys are kept
    whole. The cap is lowered to 1 MiB here, for a file of a few MB."""
    from tracedb.ingest import layout

    monkeypatch.setattr(layout, "MAX_METADATA_CHARS", 1 << 20)
    if reader == "streaming":
        monkeypatch.setattr("tracedb.ingest.readers.read_raw", _no_bulk)
    events = [{"ph": "X", "cat": "kernel", "name": f"k{i}", "pid": 0, "tid": 7, "ts": i * 10, "dur": 5,
               "args": {"stream": 7}} for i in range(50)]
    samples, small = _samples(50_000), _samples(100)
    path = tmp_path / "big_samples.json"
    path.write_text(json.dumps({"early": samples, "traceEvents": events, "samples": samples, "kept": small,
                                "displayTimeUnit": "ns"}))
    size = len(json.dumps(samples))  # as the file writes it
    assert size > 3 << 20
    out = load(con, path)
    assert (out.events, out.rejected, out.complete) == (50, 0, True)
    assert out.problem == (f"metadata set aside with its size: early ({size:,} bytes, beyond 1 MiB of JSON), "
                           f"samples ({size:,} bytes, beyond 1 MiB of JSON)")
    rows = {k: json.loads(v) for k, v in con.execute("SELECT key, value FROM trace_metadata").fetchall()}
    assert rows == {"early": {"set_aside_bytes": size}, "samples": {"set_aside_bytes": size}, "kept": small,
                    "displayTimeUnit": "ns"}


def test_metadata_beyond_what_is_kept_in_all_is_set_aside_value_by_value(con, tmp_path, monkeypatch):
    """Many values before the event list, together beyond the metadata kept (64 MB of it before
    the list marked the trace incomplete, with no metadata): those within it are kept, the later
    ones set aside with their sizes, and every event loads. The total is lowered to 1 MiB here."""
    from tracedb.ingest import layout

    monkeypatch.setattr(layout, "MAX_METADATA_TOTAL", 1 << 20)
    values = {f"key{i}": "x" * 300_000 for i in range(5)}
    events = [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": 5}]
    path = tmp_path / "wide_head.json"
    path.write_text(json.dumps({**values, "traceEvents": events}))
    out = load(con, path)
    assert (out.events, out.complete) == (1, True)
    rows = dict(con.execute("SELECT key, value FROM trace_metadata").fetchall())
    assert [k for k, v in rows.items() if json.loads(v) == "x" * 300_000] == ["key0", "key1", "key2"]
    assert [json.loads(rows[k]) for k in ("key3", "key4")] == [{"set_aside_bytes": 300_002}] * 2
    assert out.problem.startswith("metadata set aside with its size: key3 (300,002 bytes, beyond the 1 MiB of "
                                  "metadata kept), key4")


def _no_bulk(*args, **kwargs):
    from tracedb.ingest import bulk

    raise bulk.NotBulk("the streaming reader asked for")


def test_metadata_after_the_events_is_read_in_bounded_memory(con, tmp_path, monkeypatch):
    """The streaming reader's parser stops at the event list's end, and the keys after it are read
    as the bytes stream by: a samples array after the events, beyond the cap (lowered to 1 MiB),
    is set aside without its bytes being held (they were held whole, then copied twice, to find
    where the list ends). Python's allocations during the load do not grow with its size: a
    samples array four times as large costs what the smaller one does, within a few MiB."""
    import tracemalloc

    from tracedb.ingest import layout

    monkeypatch.setattr(layout, "MAX_METADATA_CHARS", 1 << 20)
    monkeypatch.setattr("tracedb.ingest.readers.read_raw", _no_bulk)
    events = [{"ph": "X", "cat": "kernel", "name": f"k{i}", "pid": 0, "tid": 7, "ts": i * 10, "dur": 5}
              for i in range(20)]
    warm = tmp_path / "warm.json"  # what a first load imports is not the load's memory
    warm.write_text(json.dumps({"traceEvents": events, "x": 1}))
    load(con, warm)
    peaks = []
    for n in (60_000, 240_000):
        samples = _samples(n)
        path = tmp_path / f"tail{n}.json"
        path.write_text(json.dumps({"traceEvents": events, "samples": samples, "after": [1, {"x": "]"}]}))
        tracemalloc.start()
        try:
            out = load(con, path)
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
        assert (out.events, out.complete) == (20, True)
        rows = {k: json.loads(v) for k, v in con.execute(
            "SELECT key, value FROM trace_metadata JOIN traces USING (trace_id) WHERE name = ?", [path.stem]).fetchall()}
        assert rows == {"samples": {"set_aside_bytes": len(json.dumps(samples))}, "after": [1, {"x": "]"}]}
    assert path.stat().st_size > 16 << 20
    assert peaks[1] < peaks[0] + (2 << 20) and peaks[1] < 24 << 20, peaks  # it held 23 MB, then 62 MB


@pytest.mark.parametrize("text, problem", [
    ('{"traceEvents": [{"ph": "X", "name": "k", "ts": 1, "dur": 1, "pid": 0, "tid": 0}], "samples": [1, 2',
     "file ends early (truncated), in the keys after the traceEvents list"),
    ('{"traceEvents": [{"ph": "X", "name": "k", "ts": 1, "dur": 1, "pid": 0, "tid": 0}], "x": 1} junk',
     "cannot read the keys after the traceEvents list: text after the trace's closing brace"),
])
def test_the_keys_after_the_list_broken_keep_the_events_and_say_why(con, tmp_path, monkeypatch, text, problem):
    monkeypatch.setattr("tracedb.ingest.readers.read_raw", _no_bulk)
    path = tmp_path / "broken_tail.json"
    path.write_text(text)
    out = load(con, path)
    assert (out.events, out.complete, out.problem) == (1, False, problem)
