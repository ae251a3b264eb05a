"""The bulk reader (DuckDB's JSON reader) and the streaming reader must fill identical tables."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from conftest import KINETO, write_trace
from tracedb.db import open_db
from tracedb.ingest import bulk, loader, readers

# Columns that describe the load itself rather than the file.
_LOAD_COLUMNS = {"loaded_at", "load_seconds"}


def _snapshot(con) -> dict:
    """Every row of every per-trace table, JSON columns parsed with exact numbers."""
    out = {}
    for table in loader.trace_tables(con):
        cols = [r[0] for r in con.execute(
            "SELECT column_name FROM duckdb_columns() WHERE table_name = ? ORDER BY column_index", [table]
        ).fetchall() if r[0] not in _LOAD_COLUMNS]
        types = dict(con.execute("SELECT column_name, data_type FROM duckdb_columns() WHERE table_name = ?",
                                 [table]).fetchall())
        rows = con.execute(f'SELECT {", ".join(chr(34) + c + chr(34) for c in cols)} FROM {table} '
                           f'ORDER BY ALL').fetchall()
        parsed = []
        for row in rows:
            parsed.append(tuple(json.loads(v, parse_float=Decimal) if types[c] == "JSON" and v is not None else v
                                for c, v in zip(cols, row)))
        out[table] = parsed
    return out


def _load_both(tmp_path, path, monkeypatch, streaming_patch=None):
    """The file loaded by the bulk reader and by the streaming reader (after streaming_patch(), if
    given), each into a database of its own."""
    bulk_con = open_db(tmp_path / "bulk.duckdb")
    streamed = []
    real_stream = readers._stream_events

    def spy(*args, **kwargs):
        streamed.append(True)
        return real_stream(*args, **kwargs)

    monkeypatch.setattr(readers, "_stream_events", spy)
    loader.load_file(bulk_con, path)
    assert not streamed, "the bulk reader fell back to the streaming reader"
    monkeypatch.undo()

    stream_con = open_db(tmp_path / "stream.duckdb")

    def no_bulk(*args, **kwargs):
        raise bulk.NotBulk("forced")

    monkeypatch.setattr(readers, "read_raw", no_bulk)
    if streaming_patch:
        streaming_patch()
    loader.load_file(stream_con, path)
    return bulk_con, stream_con


def _write_events(path, texts):
    """A trace of the given event texts, written as they are."""
    path.write_text('{"traceEvents": [\n' + ",\n".join(texts) + "\n]}")
    return path


def _watch_flagged(monkeypatch) -> list[str]:
    """The names of the events the bulk reader sends to Python, filled as the next load stages them."""
    flagged = []
    real = bulk._stage_exact

    def spy(con, stager, malformed, *page):
        flagged.extend(r[0] for r in con.execute("SELECT json_extract_string(raw, '$.name') FROM _flagged").fetchall())
        return real(con, stager, malformed, *page)

    monkeypatch.setattr(bulk, "_stage_exact", spy)
    return flagged


@pytest.mark.parametrize("path", KINETO, ids=lambda p: p.name)
def test_bulk_and_streaming_fill_identical_tables(tmp_path, path, monkeypatch):
    bulk_con, stream_con = _load_both(tmp_path, path, monkeypatch)
    assert _snapshot(bulk_con) == _snapshot(stream_con)


def test_segments_cut_between_events(tmp_path, monkeypatch):
    """Tiny segments: every cut falls between two events, and no event is lost or doubled."""
    path = next(p for p in KINETO if p.name.startswith("h100"))
    monkeypatch.setattr(bulk, "SEGMENT", 4096)
    monkeypatch.setattr(bulk, "HOLD", 1024)
    bulk_con, stream_con = _load_both(tmp_path, path, monkeypatch)
    assert _snapshot(bulk_con) == _snapshot(stream_con)


def test_events_sql_cannot_take_exactly(tmp_path, monkeypatch):
    """Sub-nanosecond digits, exponents, long numbers, a nested ts first, a null dur, a string ts:
    typed in Python, exactly as the streaming reader types them."""
    events = [
        {"ph": "X", "cat": "kernel", "name": "a", "pid": 0, "tid": 1, "ts": 1699529622790614.8, "dur": 2.5,
         "args": {"correlation": 1}},
        {"ph": "X", "cat": "kernel", "name": "b", "pid": 0, "tid": 1, "ts": 10.12345, "dur": 1e1,
         "args": {"x": 0.1000000000000000055511151231257827}},
        {"ph": "X", "cat": "cpu_op", "name": "c", "pid": 0, "tid": 1, "args": {"ts": 5}, "ts": 7, "dur": 1},
        {"ph": "X", "cat": "cpu_op", "name": "d", "pid": 0, "tid": 1, "ts": 8, "dur": None},
        "not an object",
        {"ph": "X", "cat": "cpu_op", "name": "e", "pid": 0, "tid": 1, "ts": "1699529622790614.8", "dur": 3},
        {"ph": "X", "cat": "cpu_op", "name": "f", "pid": 0, "tid": 1, "ts": 9, "dur": -1},
        {"ph": "i", "name": "g", "pid": 0, "tid": 1, "ts": 11, "s": "t", "extra": [1, 2]},
        {"ph": "X", "cat": "kernel", "name": "h", "pid": 0, "tid": 1, "ts": 12, "dur": 1,
         "args": {"big": 123456789012345678901234567890}},
    ]
    text = json.dumps({"traceEvents": events}, indent=1)
    path = tmp_path / "exact.json"
    path.write_text(text.replace('"dur": 10.0', '"dur": 1e1'))  # json.dumps would write 10.0
    bulk_con, stream_con = _load_both(tmp_path, path, monkeypatch)
    assert _snapshot(bulk_con) == _snapshot(stream_con)
    ts = dict(bulk_con.execute("SELECT name, ts_ns FROM all_events").fetchall())
    assert ts["a"] == 1699529622790614800 and ts["e"] == 1699529622790614800
    assert ts["b"] == 10123  # 10.12345 µs, half to even
    assert ts["c"] == 7000  # the top-level ts, not the nested one
    reasons = sorted(r[0] for r in bulk_con.execute("SELECT reason FROM rejected_events").fetchall())
    assert reasons == ["dur is negative (-1)", "dur is null", "event is not a JSON object",
                       "integer beyond 64 bits"]


def test_times_read_as_decimals_agree_with_python(tmp_path, monkeypatch):
    """ts and dur are read as DECIMAL(38, 9) from the number's text: booleans (which read as 1 and
    0), digits beyond the ninth decimal, integers, quoted numbers, exponents, a long ts nested in
    args or in another key, a ts after args, long numbers in arrays and under keys ending in "ts":
    each typed exactly as the streaming reader types it."""
    rows = [
        '{"ph": "X", "cat": "kernel", "name": "bool_ts", "pid": 0, "tid": 1, "ts": true, "dur": 1}',
        '{"ph": "X", "cat": "kernel", "name": "bool_dur", "pid": 0, "tid": 1, "ts": 1, "dur": false}',
        '{"ph": "X", "cat": "kernel", "name": "tenth", "pid": 0, "tid": 1, "ts": 1.0000000001, "dur": 1.0000000006}',
        '{"ph": "X", "cat": "kernel", "name": "tie", "pid": 0, "tid": 1, "ts": 2.0005, "dur": 2.0015}',
        '{"ph": "X", "cat": "kernel", "name": "int", "pid": 0, "tid": 1, "ts": 1736413971558972, "dur": 0}',
        '{"ph": "X", "cat": "kernel", "name": "quoted", "pid": 0, "tid": 1, "ts": " 12.5 ", "dur": "3"}',
        '{"ph": "X", "cat": "kernel", "name": "exp", "pid": 0, "tid": 1, "ts": 1.5e3, "dur": 2E-3}',
        '{"ph": "X", "cat": "kernel", "name": "nested", "pid": 0, "tid": 1, "ts": 12.5, "dur": 1,'
        ' "args": {"ts": 1736413971558972.9123456}}',
        '{"ph": "X", "cat": "kernel", "name": "nested_pretty", "pid": 0, "tid": 1, "ts": 12.5, "dur": 1,'
        ' "args": {\n    "ts": 1234567890123.4567891\n  }}',
        '{"ph": "X", "cat": "kernel", "name": "nested_key", "pid": 0, "tid": 1, "ts": 12.5, "dur": 1,'
        ' "stack": [{"ts": 0.30000000000000001}]}',
        '{"ph": "X", "cat": "kernel", "name": "after_args", "pid": 0, "tid": 1, "args": {"a": 1},'
        ' "ts": 1736413971558972.912, "dur": 1}',
        '{"ph": "X", "cat": "kernel", "name": "array", "pid": 0, "tid": 1, "ts": 1, "dur": 1,'
        ' "args": {"a": [1, 0.30000000000000001]}}',
        '{"ph": "X", "cat": "kernel", "name": "key_ts", "pid": 0, "tid": 1, "ts": 1, "dur": 1,'
        ' "args": {"counts": 0.30000000000000001, "s": 0.10000000000000001}}',
        '{"ph": "X", "cat": "kernel", "name": "huge", "pid": 0, "tid": 1, "ts": 123456789012345678901234567890.5}',
        '{"ph": "X", "cat": "kernel", "name": "plain", "pid": 0, "tid": 1, "ts": 1736413971558972.912, "dur": 2.5,'
        ' "args": {"External id": 7, "grid": [1, 2, 3]}}',
    ]
    path = _write_events(tmp_path / "decimals.json", rows)
    bulk_con, stream_con = _load_both(tmp_path, path, monkeypatch)
    assert _snapshot(bulk_con) == _snapshot(stream_con)
    times = {name: (ts, dur) for name, ts, dur in bulk_con.execute("SELECT name, ts_ns, dur_ns FROM kernels").fetchall()}
    assert times["tenth"] == (1000, 1000) and times["tie"] == (2000, 2002)  # half to even
    assert times["int"] == (1736413971558972000, 0) and times["quoted"] == (12500, 3000)
    assert times["exp"] == (1500000, 2) and times["after_args"] == (1736413971558972912, 1000)
    assert times["plain"] == (1736413971558972912, 2500)
    args = dict(bulk_con.execute("SELECT name, args::VARCHAR FROM kernels WHERE args IS NOT NULL").fetchall())
    assert "1736413971558972.9123456" in args["nested"] and "0.30000000000000001" in args["array"]
    assert "1234567890123.4567891" in args["nested_pretty"]
    assert "0.30000000000000001" in args["key_ts"] and "0.10000000000000001" in args["key_ts"]
    reasons = dict(bulk_con.execute("SELECT json_extract_string(raw, '$.name'), reason FROM rejected_events").fetchall())
    assert set(reasons) == {"bool_ts", "bool_dur", "huge"}
    assert reasons["bool_ts"].startswith("ts is not a number") and reasons["bool_dur"].startswith("dur is not a number")
    # the plain event is typed by SQL, not by the Python path
    assert bulk_con.execute("SELECT count(*) FROM kernels").fetchone()[0] == len(rows) - 3


def test_nan_costs_its_event_only(tmp_path):
    path = write_trace(tmp_path / "nan.json", [
        {"ph": "X", "cat": "kernel", "name": "a", "pid": 0, "tid": 1, "ts": 1, "dur": 1},
        {"ph": "X", "cat": "kernel", "name": "b", "pid": 0, "tid": 1, "ts": 2, "dur": 1},
    ])
    path.write_text(path.read_text().replace('"dur": 1}]', '"dur": NaN}]'))
    con = open_db(tmp_path / "t.duckdb")
    out = loader.load_file(con, path)
    assert (out.events, out.rejected, out.complete, out.problem) == (2, 1, True, None)
    assert con.execute("SELECT name FROM kernels").fetchall() == [("a",)]
    assert con.execute("SELECT event_id, reason FROM rejected_events").fetchall() == [(1, "NaN is not a JSON value")]


def test_event_too_deep_for_python_keeps_its_text(tmp_path, monkeypatch):
    """Nesting deeper than Python's parser goes: rejected on both paths, its raw text kept."""
    deep = '{"ph": "X", "cat": "cpu_op", "name": "deep", "pid": 0, "tid": 1, "ts": 1, "dur": 1, "args": {"a": ' \
        + "[" * 1500 + "]" * 1500 + "}}"
    ok = '{"ph": "X", "cat": "cpu_op", "name": "ok", "pid": 0, "tid": 1, "ts": 2, "dur": 1}'
    path = tmp_path / "deep.json"
    path.write_text('{"traceEvents": [\n' + deep + ",\n" + ok + "\n]}")
    bulk_con, stream_con = _load_both(tmp_path, path, monkeypatch)
    for con in (bulk_con, stream_con):
        reason, raw = con.execute("SELECT reason, raw FROM rejected_events").fetchone()
        assert "nested too deeply" in reason
        assert raw.replace(" ", "") == deep.replace(" ", "")
        assert con.execute("SELECT name FROM cpu_ops").fetchall() == [("ok",)]


def test_a_key_given_twice_keeps_its_last_value(tmp_path, monkeypatch):
    """As JSON parsers in Python and JavaScript read it (DuckDB's keeps the first): on both paths."""
    rows = ['{"ph": "X", "cat": "kernel", "name": "first", "pid": 0, "tid": 1, "ts": 1, "dur": 1, "name": "last"}',
            '{"ph": "X", "cat": "kernel", "name": "plain", "pid": 0, "tid": 1, "ts": 2, "dur": 1, "ts": 3}']
    path = tmp_path / "twice.json"
    path.write_text('{"traceEvents": [\n' + ",\n".join(rows) + "\n]}")
    bulk_con, stream_con = _load_both(tmp_path, path, monkeypatch)
    assert _snapshot(bulk_con) == _snapshot(stream_con)
    assert bulk_con.execute("SELECT name, ts_ns FROM kernels ORDER BY kernel_id").fetchall() == [
        ("last", 1000), ("plain", 3000)]


def test_a_duckdb_error_while_typing_is_one_line_and_changes_nothing(tmp_path, monkeypatch):
    """Typing runs before the load's transaction: a DuckDB error there (a full disk while DuckDB
    spills, say) is one line naming the file, no staging table stays, the settings are put back,
    and the connection loads the next file."""
    import duckdb

    from tracedb.errors import TracedbError

    con = open_db(tmp_path / "t.duckdb")
    trace = write_trace(tmp_path / "t.json", [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 1,
                                               "ts": 1, "dur": 2}])
    real = bulk.run_file

    def failing(con, name, params=None):
        if name == "ingest/chrome_bulk.sql":
            raise duckdb.IOException("IO Error: could not write to the temporary directory")
        return real(con, name, params)

    monkeypatch.setattr(bulk, "run_file", failing)
    before = con.execute("SELECT current_setting('preserve_insertion_order')").fetchone()[0]
    with pytest.raises(TracedbError) as err:
        loader.load_file(con, trace)
    assert str(err.value).startswith(f"{trace}: cannot load: IO Error") and "\n" not in str(err.value)
    assert con.execute("SELECT count(*) FROM traces").fetchone()[0] == 0
    assert con.execute("SELECT count(*) FROM duckdb_tables() WHERE temporary").fetchone()[0] == 0
    assert con.execute("SELECT count(*) FROM duckdb_views() WHERE temporary AND NOT internal").fetchone()[0] == 0
    assert con.execute("SELECT current_setting('preserve_insertion_order')").fetchone()[0] == before
    monkeypatch.setattr(bulk, "run_file", real)
    assert loader.load_file(con, trace).status == "loaded"


def test_text_inside_strings_keeps_events_in_sql(tmp_path, monkeypatch):
    """Braces, "info" or "ts" inside a name are text, not JSON, and a nested "ts" of an integer
    reads back as written: such events are typed in SQL. A long number under another key (a nested
    ts too) still goes to Python (NaN: test_bad_events)."""
    rows = [
        '{"ph": "X", "cat": "kernel", "name": "void k<{lambda()#2}::operator()() const::{lambda(float)#1}>",'
        ' "pid": 0, "tid": 1, "ts": 1736413971558972.912, "dur": 2.5, "args": {"grid": [1, 1, 1]}}',
        '{"ph": "X", "cat": "python_function", "name": "logging/__init__.py(1529): info", "pid": 0, "tid": 1,'
        ' "ts": 1736413971558973.5, "dur": 1, "args": {"Python id": 3, "Python parent id": 2}}',
        '{"ph": "X", "cat": "cpu_op", "name": "aten::f({\\"ts\\": 1}, mode: infer)", "pid": 0, "tid": 1,'
        ' "ts": 1736413971558974.25, "dur": 1}',
        '{"ph": "X", "cat": "cpu_op", "name": "second_ts", "pid": 0, "tid": 1, "ts": 6, "dur": 1,'
        ' "args": {"ts": 7}}',
        '{"ph": "X", "cat": "gpu_memcpy", "name": "long_double", "pid": 0, "tid": 1, "ts": 8, "dur": 1,'
        ' "args": {"memory bandwidth (GB/s)": 0.15532022188603126}}',
        '{"ph": "X", "cat": "cpu_op", "name": "nested_long_ts", "pid": 0, "tid": 1, "ts": 9, "dur": 1,'
        ' "args": {"inner": {"ts": 1736413971558972.9120000001}}}',
    ]
    path = _write_events(tmp_path / "strings.json", rows)
    flagged = _watch_flagged(monkeypatch)
    bulk_con, stream_con = _load_both(tmp_path, path, monkeypatch)
    assert sorted(flagged) == ["long_double", "nested_long_ts"]
    assert _snapshot(bulk_con) == _snapshot(stream_con)
    ts = dict(bulk_con.execute("SELECT name, ts_ns FROM all_events").fetchall())
    assert ts["logging/__init__.py(1529): info"] == 1736413971558973500
    assert ts['aten::f({"ts": 1}, mode: infer)'] == 1736413971558974250


def test_only_events_whose_fields_may_differ_are_searched(tmp_path, monkeypatch):
    """The text of an event is searched only when its typed fields may differ from what Python
    makes of it (a fraction or NaN in args, a field that is an object, extra keys); each such case
    is typed exactly as the streaming reader types it, and the others stay in SQL."""
    def nested(depth):
        return "[" * depth + "]" * depth

    rows = {
        # in SQL: integers, canonical fractions, a string starting with a bracket, dur with a zero
        "ints": '"args": {"Python id": 12345678901234567, "Ev Idx": -922337203685477580}',
        "canonical": '"ts": 5.50, "dur": 2.50, "args": {"blocks per SM": 1520.484863, "warps per SM": 4.0, '
                     '"b": 0.000001}',  # searched, but ts and dur are read exactly whatever their digits
        "[memory]": '"args": {"Bytes": 4096}',
        "dur_zero": '"dur": 2.50, "args": {"a": 1}',
        "depth_253": '"args": {"a": ' + nested(252) + '}',
        # to Python: DuckDB would write these back with other digits, or Python sets them aside
        "trailing_zero": '"args": {"a": 1.10, "b": [2.50]}',
        "tiny": '"args": {"a": [0.0000001]}',
        "exponent": '"args": {"a": 1e5}',
        "bignum": '"args": {"a": 123456789012345678901234567890}',
        "extra_key_exponent": '"args": {"n": 1}, "label": {"x": 1e400}',
        "field_object_exponent": '"tid": {"x": 1e400}',
        "depth_254": '"args": {"a": ' + nested(253) + '}',
    }
    events = []
    for name, body in rows.items():
        dur = "" if '"dur"' in body else '"dur": 1, '
        tid = "" if '"tid"' in body else '"tid": 1, '
        ts = "" if '"ts"' in body else '"ts": 5, '
        events.append(f'{{"ph": "X", "cat": "cpu_op", "name": "{name}", "pid": 0, {tid}{ts}{dur}{body}}}')
    path = _write_events(tmp_path / "differ.json", events)
    flagged = _watch_flagged(monkeypatch)
    bulk_con, stream_con = _load_both(tmp_path, path, monkeypatch)
    assert sorted(flagged) == sorted(["trailing_zero", "tiny", "exponent", "bignum", "extra_key_exponent",
                                      "field_object_exponent", "depth_254"])
    assert _snapshot(bulk_con) == _snapshot(stream_con)
    args = dict(bulk_con.execute("SELECT name, args::VARCHAR FROM cpu_ops").fetchall())
    assert args["trailing_zero"] == '{"a":1.10,"b":[2.50]}'  # the file's digits
    assert args["canonical"] == '{"blocks per SM":1520.484863,"warps per SM":4.0,"b":0.000001}'


def test_typing_ranges_follow_the_row_groups():
    """The typing reads _raw in one range per thread unless its row groups share the threads
    evenly: one row group, or a full one beside a short one, would leave a thread idle."""
    rg = bulk.ROW_GROUP_ROWS
    assert not bulk._row_groups_balanced(50_125, 2)  # one row group
    assert not bulk._row_groups_balanced(rg + 8_363, 2)  # a full one and a short one
    assert bulk._row_groups_balanced(rg + 116_213, 2)  # two nearly full
    assert not bulk._row_groups_balanced(3 * rg, 2)  # two on one thread, one on the other
    assert bulk._row_groups_balanced(32 * rg + 5, 2)
    assert bulk._row_groups_balanced(50_125, 1)  # one thread: nothing to share


@pytest.mark.parametrize("path", [p for p in KINETO if p.name.startswith(("h100", "mi300x_sglang"))],
                         ids=lambda p: p.name)
def test_strings_the_streaming_reader_cuts_and_makes_whole_again_load_as_read(tmp_path, path, monkeypatch):
    """Read 300 bytes at a time, every string that runs on past a read with more than 40 bytes
    reaching the parser cut and made whole again by Python (tracedb.ingest.longstrings, whose
    bound is 1 MiB): the same rows as the bulk reader's."""
    from tracedb.ingest import chrome

    cutters = []
    real = chrome.StringCutter

    def cut_often():
        monkeypatch.setattr(chrome, "READ_CHUNK", 300)
        monkeypatch.setattr(chrome, "StringCutter", lambda limit: cutters.append(real(limit, keep_bytes=40)) or cutters[-1])
    bulk_con, stream_con = _load_both(tmp_path, path, monkeypatch, cut_often)
    cutter = cutters[-1]
    assert cutter.started >= 10 and cutter.seen == cutter.started and not cutter.rests
    assert _snapshot(bulk_con) == _snapshot(stream_con)
