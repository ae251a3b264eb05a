"""Finding the end of the event list (tracedb.ingest.layout): linear whatever the events hold.

Kineto traces recorded with shapes are full of `[]` followed by `,` or `]` inside the event list
("Input Dims": [[], [1, 2]]). Trying each as the list's end and parsing the rest of the file
made a 4.6 MB real trace take 202 s. These tests count what the search does instead of timing it.
"""

from __future__ import annotations

import json

import pytest

from conftest import load
from tracedb.ingest import bulk, layout


def _shaped_event(i: int) -> dict:
    # 100 empty lists per event, in the places Kineto writes them
    return {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": i, "dur": 1,
            "args": {"Input Dims": [[]] * 40 + [[1, 2]], "Input Strides": [[]] * 40,
                     "Concrete Inputs": [""] * 5 + [[]] * 20, "External id": i}}


def _empty_lists_trace(path, events=1000):
    tail = {"deviceProperties": [{"id": 0, "name": "NVIDIA H100", "warpSize": 32, "x": [[], {"y": []}]}],
            "traceName": "a]b", "baseTimeNanoseconds": 1751410836000000000}
    body = {"schemaVersion": 1, "traceEvents": [_shaped_event(i) for i in range(events)], **tail}
    path.write_text(json.dumps(body, indent=1))
    return path, tail


@pytest.fixture
def tail_parses(monkeypatch):
    """How many times the loader parses a candidate tail of the file."""
    calls = []
    real = layout._read_tail

    def counting(rest):
        calls.append(len(rest))
        return real(rest)

    monkeypatch.setattr(layout, "_read_tail", counting)
    return calls


@pytest.mark.parametrize("reader", ["bulk", "streaming"])
def test_end_of_list_found_with_one_parse_among_100000_empty_lists(con, tmp_path, tail_parses, monkeypatch,
                                                                   reader):
    path, tail = _empty_lists_trace(tmp_path / "shapes.json")
    assert path.read_text().count("[]") >= 100_000
    if reader == "streaming":
        monkeypatch.setattr("tracedb.ingest.readers.read_raw", _no_bulk)
    out = load(con, path)
    assert out.complete and out.rejected == 0 and out.events == 1000
    if reader == "bulk":
        assert tail_parses == [len(tail_parses) and tail_parses[0]]  # exactly one parse: the real tail
        assert tail_parses[0] < 400  # the bytes after the list, nothing of the events
    else:  # the list's end found by the parser's depth count, the keys after it read as they come
        assert tail_parses == []
    meta = dict(con.execute("SELECT key, value FROM trace_metadata").fetchall())
    assert json.loads(meta["deviceProperties"]) == tail["deviceProperties"]
    assert json.loads(meta["traceName"]) == "a]b"
    assert con.execute("SELECT count(*) FROM cpu_ops").fetchone()[0] == 1000


def _no_bulk(*args, **kwargs):
    raise bulk.NotBulk("streaming reader asked for")


def test_walk_examines_the_tail_not_the_events(tmp_path):
    path, _ = _empty_lists_trace(tmp_path / "shapes.json")
    data = path.read_bytes()
    start = data.index(b"[", data.index(b'"traceEvents"'))
    end = data.index(b'"deviceProperties"')
    close = layout.list_close(data[start:])
    assert data[start + close.offset:end].rstrip(b" \n,") == b"]"
    # with no budget the walk reads back through the kept event bytes, each once
    assert close.walked <= len(data) - start
    budgeted = layout.list_close(data[start:], budget=4096)
    assert budgeted.offset == close.offset
    assert budgeted.walked <= (len(data) - end) + 4096 + 64


@pytest.mark.parametrize("text, key_after", [
    (b'{"traceEvents": []}', None),
    (b'{"a": 1, "traceEvents": [ ] , "b": [1, [2]], "c": "]"}', "c"),
    (b'{"traceEvents": [{"x": "\\"]"}], "d": {"e": [{}]}, "s": "x\\\\"}', "s"),
    (b'{"traceEvents": [{"args": {"l": [[], []]}}],"deviceProperties":[{"id":0},{"id":1}]}', "deviceProperties"),
])
def test_list_close_small_documents(text, key_after):
    start = text.index(b"[")
    close = layout.list_close(text[start:])
    assert close.offset is not None
    rest = text[start + close.offset + 1:]
    tail = layout._read_tail(rest)
    assert tail is not None
    assert (list(tail)[-1] if tail else None) == key_after


def test_array_after_the_events_longer_than_the_budget_is_taken_for_the_list():
    # the bulk reader's bound: its last segment then fails to parse and the streaming reader,
    # walking without a bound, finds the real end
    text = b'{"traceEvents": [{"ph": "i"}], "big": [' + b"1," * 10_000 + b'2]}'
    start = text.index(b"[")
    exact = layout.list_close(text[start:])
    assert text[start + exact.offset:].startswith(b"], \"big\"")
    bounded = layout.list_close(text[start:], budget=1000)
    assert text[start + bounded.offset:] == b"]}"
