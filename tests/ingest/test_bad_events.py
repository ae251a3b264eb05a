"""Event-level problems, however extreme, cost the events they touch and nothing else: each is in
rejected_events with its reason, the events around it load, and the event ids stay the events'
places in the list."""

from __future__ import annotations

import gzip
import json

import pytest

from conftest import KINETO, load
from tracedb.db import open_db
from tracedb.ingest import bulk, readers, salvage
from tracedb.ingest.bulk import NotBulk
from tracedb.ingest.chrome import SurrogateGuard


def _event(name: str, ts: str = "1", extra: str = "") -> str:
    return '{"ph": "X", "cat": "kernel", "name": "%s", "pid": 0, "tid": 1, "ts": %s, "dur": 1%s}' % (name, ts, extra)


def _write(path, events: list[str], pretty: bool) -> None:
    sep, lead = (",\n  ", "\n  ") if pretty else (",", "")
    path.write_bytes(('{"traceEvents": [' + lead + sep.join(events) + "]}").encode("utf-8", "surrogateescape"))


# (the bad event, the reason it is set aside with)
CASES = {
    "NaN": (_event("bad", "NaN"), "NaN is not a JSON value"),
    "Infinity": (_event("bad", "1", ', "args": {"x": -Infinity}'), "-Infinity is not a JSON value"),
    "huge exponent": (_event("bad", "1e999999999"), "ts 1E+999999999 µs is beyond the 64-bit nanosecond range"),
    "exponent 1e400000": (_event("bad", "1e400000"), "ts 1E+400000 µs is beyond the 64-bit nanosecond range"),
    "huge negative dur": (_event("bad", "1", ', "dur2": 1').replace('"dur": 1', '"dur": -1e999999'),
                          "dur -1E+999999 µs is beyond the 64-bit nanosecond range"),
    "exponent beyond Decimal": (_event("bad", "1", ', "args": {"x": 1e9999999999999999999}'),
                                "number 1e9999999999999999999 is beyond any range"),
    "null ts": (_event("bad", "null"), "ts is null"),
    "lone surrogate": (_event("bad\\ud800"), "malformed JSON: no low surrogate in string"),
    "two high surrogates": (_event("\\ud800\\ud800"), "malformed JSON: invalid low surrogate in string"),
    "lone low surrogate": (_event("x\\udc00"), "malformed JSON: "),
    "raw NUL": (_event("ba\x00d"), "malformed JSON: unexpected control character in string"),
    "raw newline": (_event("ba\nd"), "malformed JSON: unexpected control character in string"),
    "invalid UTF-8": (_event("ba\udcffd"), "malformed JSON: invalid UTF-8 encoding in string"),
    "missing comma": (_event("bad", "1", ' "x": 1'), "malformed JSON: unexpected character"),
    "unterminated string": (_event('bad, "x": 1'), "malformed JSON: "),
    "digits beyond Python": (_event("bad", "1", ', "args": {"n": ' + "9" * 5000 + "}"), "cannot read: "),
}


@pytest.fixture(scope="module")
def loads(tmp_path_factory):
    """One database for the module's many loads of a few events (each its own trace, named for its
    test): they pay for loading, not for a new database each."""
    with open_db(tmp_path_factory.mktemp("bad-events") / "t.duckdb") as con:
        yield con


def _rows(con, table: str, columns: str, trace_id: int) -> list[tuple]:
    return con.execute(f"SELECT {columns} FROM {table} WHERE trace_id = ? ORDER BY 1", [trace_id]).fetchall()


@pytest.mark.parametrize("pretty", [True, False], ids=["pretty", "compact"])
@pytest.mark.parametrize("case", list(CASES))
def test_a_bad_event_costs_that_event_only(loads, tmp_path, case, pretty):
    bad, reason = CASES[case]
    path = tmp_path / f"{tmp_path.name}.json"
    _write(path, [_event("a"), _event("b"), bad, _event("c", "3"), _event("d", "4")], pretty)
    out = load(loads, path)
    assert (out.events, out.rejected, out.complete) == (5, 1, True)
    assert _rows(loads, "kernels", "kernel_id, name", out.trace_id) == [(0, "a"), (1, "b"), (3, "c"), (4, "d")]
    [(event_id, why, raw)] = _rows(loads, "rejected_events", "event_id, reason, raw", out.trace_id)
    assert event_id == 2 and why.startswith(reason), why
    if why.startswith("malformed"):  # the text as read, not a re-encoding
        assert raw == bad.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        assert out.problem.startswith("1 malformed event(s) set aside, the rest read (first: event 2, ")


def test_valid_surrogate_pairs_and_escaped_backslashes_are_kept(con, tmp_path):
    path = tmp_path / "t.json"
    _write(path, [_event("smile \\ud83d\\ude00"), _event("text \\\\ud800")], pretty=True)
    out = load(con, path)
    assert (out.rejected, out.problem) == (0, None)
    assert con.execute("SELECT name FROM kernels ORDER BY kernel_id").fetchall() == [
        ("smile \U0001F600",), ("text \\ud800",)]


def test_streaming_reader_replaces_invalid_surrogates_visibly(con, tmp_path, monkeypatch):
    """The streaming reader (files the bulk reader cannot take) cannot set one event aside for a
    surrogate: it replaces it with U+FFFD and says so on the trace, never silently."""
    def no_bulk(*args):
        raise NotBulk("forced")
    monkeypatch.setattr(readers, "read_raw", no_bulk)
    path = tmp_path / "t.json"
    _write(path, [_event("a\\ud800"), _event("\\udc00\\ud800\\ud83d\\ude00"), _event("ok \\\\ud800")], pretty=True)
    out = load(con, path)
    assert out.complete and out.problem.startswith("3 invalid \\u surrogate escape(s) in strings replaced by \\ufffd")
    assert con.execute("SELECT name FROM kernels ORDER BY kernel_id").fetchall() == [
        ("a\ufffd",), ("\ufffd\ufffd\U0001F600",), ("ok \\ud800",)]


def test_many_bad_events_across_windows_and_segments(tmp_path, monkeypatch):
    """Small segments and windows: bad events at window and segment edges, each alone set aside."""
    monkeypatch.setattr(bulk, "SEGMENT", 2048)
    monkeypatch.setattr(bulk, "HOLD", 512)
    monkeypatch.setattr(salvage, "WINDOW", 300)
    events, bad_ids = [], []
    for i in range(400):
        if i % 7 == 3 or i in (398, 399):
            events.append(_event(f"bad{i}", "NaN" if i % 2 else "1", ' "x": 1' if i % 2 == 0 else ""))
            bad_ids.append(i)
        else:
            events.append(_event(f"k{i}", str(i)))
    path = tmp_path / "t.json"
    _write(path, events, pretty=True)
    with open_db(tmp_path / "t.duckdb") as con:
        out = load(con, path)
        assert (out.events, out.rejected) == (400, len(bad_ids))
        assert [r[0] for r in con.execute("SELECT event_id FROM rejected_events ORDER BY 1").fetchall()] == bad_ids
        kept = con.execute("SELECT kernel_id, name, ts_ns FROM kernels ORDER BY kernel_id").fetchall()
        assert kept == [(i, f"k{i}", i * 1000) for i in range(400) if i not in bad_ids]


def test_one_bad_byte_in_a_real_trace_costs_one_event(con, tmp_path):
    src = KINETO[0]
    text = gzip.decompress(src.read_bytes())
    whole = load(con, src, name="whole")
    # a raw NUL inside the name of an event in the middle of the list
    at = text.index(b'"name": "', len(text) // 2) + len(b'"name": "')
    broken = tmp_path / "broken.json"
    broken.write_bytes(text[:at] + b"\x00" + text[at:])
    out = load(con, broken, name="broken")
    assert (out.events, out.rejected, out.complete) == (whole.events, whole.rejected + 1, True)
    assert con.execute("SELECT count(*) FROM all_events WHERE trace_id = ?", [out.trace_id]).fetchone()[0] == \
        con.execute("SELECT count(*) FROM all_events WHERE trace_id = ?", [whole.trace_id]).fetchone()[0] - 1


def test_an_8_mb_name_loads_exactly(con, tmp_path):
    """Whole in long_texts; its kernel's row holds its first characters and a note (test_long_texts.py)."""
    name = "void k<" + "x" * (8 << 20) + ">"
    path = tmp_path / "t.json"
    _write(path, [_event(name), _event("b")], pretty=False)
    out = load(con, path)
    assert (out.events, out.rejected) == (2, 0)
    assert con.execute("SELECT long_text(trace_id, kernel_id, '/name') = ?, starts_with(name, 'void k<xxx'), "
                       "ends_with(name, 'whole in long_texts]') FROM kernels ORDER BY kernel_id",
                       [name]).fetchall() == [(True, True, True), (None, False, False)]


def test_aie_events_without_name_time_or_pid(con, tmp_path):
    """Fuzzing findings: an mlir-aie trace whose tile events lack a name or a time, or whose process
    has no pid, loads; the events that cannot be placed are set aside with their reason."""
    events = [{"name": "process_name", "ph": "M", "pid": 0, "args": {"name": "core_trace for tile2,1"}},
              {"name": "process_name", "ph": "M", "pid": None, "args": {"name": "core_trace for tile3,1"}},
              {"name": "thread_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": "INSTR_EVENT_0"}},
              {"name": "INSTR_EVENT_0", "ph": "B", "pid": 0, "tid": 0, "ts": 10},
              {"name": "INSTR_EVENT_0", "ph": "E", "pid": 0, "tid": 0, "ts": 20},
              {"name": None, "ph": "B", "pid": 0, "tid": 0, "ts": 30},
              {"name": "INSTR_EVENT_0", "ph": "E", "pid": 0, "tid": 0}]
    path = tmp_path / "aie.json"
    path.write_text(json.dumps(events))
    out = load(con, path)
    assert (out.events, out.rejected) == (7, 2)
    assert con.execute("SELECT event_id, reason FROM rejected_events ORDER BY event_id").fetchall() == [
        (5, "AIE event without a name"), (6, "AIE event without a time")]
    assert con.execute("SELECT count(*) FROM aie_tiles").fetchone()[0] == 1
    assert con.execute("SELECT count(*) FROM aie_spans").fetchone()[0] == 1


def test_streaming_reader_stops_in_one_line_at_a_number_beyond_any_range(con, tmp_path, monkeypatch):
    """Fuzzing finding: ijson cannot make 1e9999999999999999999 a Decimal; the streaming reader (which
    cannot skip one event) keeps the events before it and says why it stopped."""
    def no_bulk(*args):
        raise NotBulk("forced")
    monkeypatch.setattr(readers, "read_raw", no_bulk)
    path = tmp_path / "t.json"
    _write(path, [_event("a"), _event("bad", "1e9999999999999999999"), _event("c")], pretty=True)
    out = load(con, path)
    assert (out.events, out.complete) == (1, False)
    assert out.problem.startswith("JSON error after event 0") and out.problem.endswith("a number beyond any range")


class _Pieces:
    """A stream handing out the bytes in pieces of a given size."""

    def __init__(self, data: bytes, size: int):
        self.data, self.size, self.at = data, size, 0

    def read(self, n=-1) -> bytes:
        piece = self.data[self.at:self.at + self.size]
        self.at += len(piece)
        return piece


@pytest.mark.parametrize("size", range(1, 30))
def test_surrogate_guard_never_cuts_an_escape_or_a_pair(size):
    text = json.dumps({"name": "x\U0001F600y", "lone": "a\ud800", "slashes": "\\\\ud800 \\"}).encode()
    guard = SurrogateGuard(_Pieces(text, size))
    out = b"".join(iter(lambda: guard.read(size), b""))
    assert len(out) == len(text) and guard.replaced == 1
    assert json.loads(out) == {"name": "x\U0001F600y", "lone": "a\ufffd", "slashes": "\\\\ud800 \\"}


def test_trailing_comma_is_no_event(con, tmp_path):
    path = tmp_path / "t.json"
    path.write_text('{"traceEvents": [' + _event("a") + ",\n" + _event("b") + ",\n]}")
    out = load(con, path)
    assert (out.events, out.rejected, out.problem) == (2, 0, None)


def test_an_event_like_object_inside_a_bad_event_does_not_split_it(con, tmp_path):
    bad = '{"ph": "X", "name": "bad", "n": tru, "args": {"l": [{"x": 1}, {"name": "inner"}]}}'
    path = tmp_path / "t.json"
    _write(path, [_event("a"), bad, _event("c", "3")], pretty=False)
    out = load(con, path)
    assert (out.events, out.rejected) == (3, 1)
    assert con.execute("SELECT kernel_id, name FROM kernels ORDER BY 1").fetchall() == [(0, "a"), (2, "c")]
    assert con.execute("SELECT raw FROM rejected_events").fetchone()[0] == bad


def test_a_huge_number_before_the_syntax_error_still_costs_one_event(con, tmp_path):
    bad = _event("bad", "1", ', "args": {"x": 1e400, "y": tru}')
    path = tmp_path / "t.json"
    _write(path, [_event("a"), bad, _event("c", "3")], pretty=True)
    out = load(con, path)
    assert (out.events, out.rejected, out.complete) == (3, 1, True)


def test_zero_with_a_large_exponent_is_zero(con, tmp_path):
    path = tmp_path / "t.json"
    _write(path, [_event("a", "0e400"), _event("b", "0.0e20")], pretty=True)
    out = load(con, path)
    assert out.rejected == 0
    assert con.execute("SELECT ts_ns FROM kernels ORDER BY kernel_id").fetchall() == [(0,), (0,)]


NON_OBJECTS = ["42", "null", "[1, 2]", '"s"', "true"]
MALFORMED = {case: CASES[case] for case in ("raw NUL", "lone surrogate", "missing comma", "unterminated string",
                                             "invalid UTF-8")}


@pytest.mark.parametrize("pretty", [True, False], ids=["pretty", "compact"])
@pytest.mark.parametrize("entry", NON_OBJECTS)
@pytest.mark.parametrize("case", list(MALFORMED))
@pytest.mark.parametrize("order", ["entry first", "bad first", "side by side"])
def test_mixed_bad_entries_in_one_window_cost_themselves_only(loads, tmp_path, case, entry, pretty, order):
    """A non-object entry and a malformed event in the same salvage window: each set aside alone
    with its own reason and index, every good event loaded with its own."""
    bad, reason = MALFORMED[case]
    if order == "entry first":
        events = [_event("a"), entry, _event("b"), bad, _event("c", "3"), _event("d", "4")]
    elif order == "bad first":
        events = [_event("a"), bad, _event("b"), entry, _event("c", "3"), _event("d", "4")]
    else:
        events = [_event("a"), _event("b"), bad, entry, _event("c", "3"), _event("d", "4")]
    path = tmp_path / f"{tmp_path.name}.json"
    _write(path, events, pretty)
    out = load(loads, path)
    assert (out.events, out.rejected, out.complete) == (6, 2, True)
    expected = [(events.index(e), n) for e, n in zip(
        [e for e in events if e.startswith('{"ph"') and e != bad], "abcd")]
    assert _rows(loads, "kernels", "kernel_id, name", out.trace_id) == expected
    rejected = _rows(loads, "rejected_events", "event_id, reason", out.trace_id)
    assert [r[0] for r in rejected] == sorted([events.index(bad), events.index(entry)])
    reasons = dict(rejected)
    assert reasons[events.index(bad)].startswith(reason), reasons
    assert reasons[events.index(entry)] == "event is not a JSON object"


@pytest.mark.parametrize("pretty", [True, False], ids=["pretty", "compact"])
def test_a_stray_brace_leaves_one_bad_entry(tmp_path, pretty):
    """An event closed too early ({...}, "y": 2}): its commas part no entries, so it stays one."""
    stray = _event("bad", "1", ', "args": {"x": 1}}, "y": 2')
    events = [_event("a"), stray, "42", _event("b"), _event("c", "3")]
    path = tmp_path / "t.json"
    _write(path, events, pretty)
    with open_db(tmp_path / "t.duckdb") as con:
        out = load(con, path)
        assert (out.events, out.rejected) == (5, 2)
        assert con.execute("SELECT kernel_id, name FROM kernels ORDER BY kernel_id").fetchall() == [
            (0, "a"), (3, "b"), (4, "c")]
        rejected = dict(con.execute("SELECT event_id, reason FROM rejected_events").fetchall())
        assert sorted(rejected) == [1, 2] and rejected[2] == "event is not a JSON object"


@pytest.mark.parametrize("pretty", [True, False], ids=["pretty", "compact"])
def test_many_kinds_of_bad_entries_in_one_window(tmp_path, pretty):
    nul, unterminated, comma = (MALFORMED[c][0] for c in ("raw NUL", "unterminated string", "missing comma"))
    events = [_event("a"), "42", nul, "null", _event("b"), unterminated, "[1, 2]", '"s"', _event("c", "3"),
              comma, "true", _event("d", "4")]
    path = tmp_path / "t.json"
    _write(path, events, pretty)
    with open_db(tmp_path / "t.duckdb") as con:
        out = load(con, path)
        assert (out.events, out.rejected, out.complete) == (12, 8, True)
        assert con.execute("SELECT kernel_id, name FROM kernels ORDER BY kernel_id").fetchall() == [
            (0, "a"), (4, "b"), (8, "c"), (11, "d")]
        rejected = dict(con.execute("SELECT event_id, reason FROM rejected_events").fetchall())
        assert sorted(rejected) == [1, 2, 3, 5, 6, 7, 9, 10]
        assert all(rejected[i] == "event is not a JSON object" for i in (1, 3, 6, 7, 10))
        assert all(rejected[i].startswith("malformed JSON: ") for i in (2, 5, 9))
