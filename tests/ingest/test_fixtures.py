"""Loading the real Kineto fixtures: every event lands in the table that models it, counted
against a direct reading of the JSON; metadata and devices round-trip."""

from __future__ import annotations

import gzip
import json
import shutil
from collections import Counter
from decimal import Decimal

import pytest

from conftest import KINETO, load, read_fixture

X_TABLES = {"kernel": "kernels", "gpu_memcpy": "memory_ops", "gpu_memset": "memory_ops",
            "cuda_runtime": "runtime_calls", "cuda_driver": "runtime_calls", "cpu_op": "cpu_ops",
            "python_function": "python_functions", "user_annotation": "annotations",
            "gpu_user_annotation": "annotations"}


def expected_table(ev: dict) -> str:
    ph = ev.get("ph")
    if ph == "X":
        return X_TABLES.get(ev.get("cat"), "other_events")
    return {"s": "flows", "t": "flows", "f": "flows", "i": "instants", "I": "instants", "C": "counters",
            "M": "metadata_events"}.get(ph, "other_events")


def test_fixtures_are_present():
    assert len(KINETO) == 9, "the shared Kineto fixtures are missing"


@pytest.mark.parametrize("path", KINETO, ids=lambda p: p.name)
def test_every_event_lands_in_its_table(con, path):
    data = read_fixture(path)
    events = data["traceEvents"] if isinstance(data, dict) else data
    outcome = load(con, path)
    assert outcome.status == "loaded" and outcome.complete and outcome.rejected == 0
    assert outcome.events == len(events)
    want = Counter(expected_table(e) for e in events)
    got = dict(con.execute("SELECT table_name, count(*) FROM all_events WHERE trace_id = ? GROUP BY 1",
                           [outcome.trace_id]).fetchall())
    assert got == dict(want)
    # every event index appears exactly once across the tables
    ids = con.execute("SELECT count(DISTINCT event_id), min(event_id), max(event_id) FROM all_events "
                      "WHERE trace_id = ?", [outcome.trace_id]).fetchone()
    assert ids == (len(events), 0, len(events) - 1)


@pytest.mark.parametrize("path", KINETO, ids=lambda p: p.name)
def test_metadata_round_trips(con, path):
    data = read_fixture(path)
    outcome = load(con, path)
    rows = con.execute("SELECT key, value FROM trace_metadata WHERE trace_id = ? ORDER BY position",
                       [outcome.trace_id]).fetchall()
    assert [k for k, _ in rows] == [k for k in data if k != "traceEvents"]
    for key, value in rows:
        assert json.loads(value) == data[key], key


@pytest.mark.parametrize("path", KINETO, ids=lambda p: p.name)
def test_event_fields_round_trip(con, path):
    """ts/dur exact to the nanosecond, args identical, names and pids as in the file."""
    data = read_fixture(path)
    with gzip.open(path, "rt") as f:
        exact = json.load(f, parse_float=Decimal)["traceEvents"]
    outcome = load(con, path)
    rows = con.execute("SELECT event_id, name, ts_ns, dur_ns, pid, tid, args FROM all_events WHERE trace_id = ? "
                       "ORDER BY event_id", [outcome.trace_id]).fetchall()
    for (event_id, name, ts_ns, dur_ns, pid, tid, args), ev, ev_exact in zip(rows, data["traceEvents"], exact):
        assert name == ev.get("name")
        assert ts_ns == (None if "ts" not in ev_exact else int(Decimal(ev_exact["ts"]) * 1000))
        assert dur_ns == (None if "dur" not in ev_exact else int(Decimal(ev_exact["dur"]) * 1000))
        assert pid == (None if ev.get("pid") is None else str(ev["pid"]))
        assert tid == (None if ev.get("tid") is None else str(ev["tid"]))
        assert (None if args is None else json.loads(args)) == ev.get("args")


def test_gzip_and_plain_give_identical_tables(con, tmp_path):
    src = next(p for p in KINETO if p.name.startswith("h100"))
    plain = tmp_path / "plain_copy.json"
    with gzip.open(src, "rb") as f, open(plain, "wb") as out:
        shutil.copyfileobj(f, out)
    disguised = tmp_path / "gz_without_suffix.json"  # gzip detected by magic bytes, not name
    shutil.copy(src, disguised)
    a = load(con, src)
    b = load(con, plain)
    c = load(con, disguised, name="disguised", replace=True)  # same bytes: load again on purpose
    assert a.status == b.status == c.status == "loaded"
    query = "SELECT * EXCLUDE (trace_id) FROM {} WHERE trace_id = ? ORDER BY ALL"
    for table in ("kernels", "cpu_ops", "python_functions", "runtime_calls", "flows", "instants",
                  "annotations", "memory_ops", "metadata_events", "other_events", "devices", "trace_metadata"):
        rows_a = con.execute(query.format(table), [a.trace_id]).fetchall()
        assert rows_a == con.execute(query.format(table), [b.trace_id]).fetchall(), table
        assert rows_a == con.execute(query.format(table), [c.trace_id]).fetchall(), table


def test_typed_columns_of_real_traces(con):
    h100 = load(con, next(p for p in KINETO if p.name.startswith("h100")))
    mi300 = load(con, next(p for p in KINETO if p.name.startswith("mi300_bert")))
    assert h100.platform == "NVIDIA" and mi300.platform == "AMD"
    k = con.execute("SELECT correlation, external_id, stream, device, grid, block, registers_per_thread "
                    "FROM kernels WHERE trace_id = ? ORDER BY kernel_id LIMIT 1", [h100.trace_id]).fetchone()
    assert k == (8218, 9, 7, 0, [564, 1, 1], [128, 1, 1], 32)
    k = con.execute("SELECT correlation, external_id, stream, device, kind FROM kernels WHERE trace_id = ? "
                    "ORDER BY kernel_id LIMIT 1", [mi300.trace_id]).fetchone()
    assert k == (802, 9, 0, 2, "Dispatch Kernel")
    py = con.execute("SELECT python_id, python_parent_id FROM python_functions WHERE trace_id = ? "
                     "AND name = 'threading.py(1032): _bootstrap'", [h100.trace_id]).fetchone()
    assert py == (1, None)
    dims = con.execute("SELECT input_dims FROM cpu_ops WHERE trace_id = ? AND name = 'aten::slice' "
                       "ORDER BY event_id LIMIT 1", [h100.trace_id]).fetchone()[0]
    assert json.loads(dims) == [[1, 512], [], [], [], []]
    dev = con.execute("SELECT name, num_sms, warp_size FROM devices WHERE trace_id = ?", [h100.trace_id]).fetchone()
    assert dev == ("NVIDIA H100 80GB HBM3", 132, 32)
    names = dict(con.execute("SELECT pid, name FROM process_names WHERE trace_id = ?", [h100.trace_id]).fetchall())
    assert names["19392"] == "python3"
