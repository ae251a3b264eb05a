"""Nesting depth is bounded before any parser builds it: a small file of brackets costs one line
or one event, never the machine's memory."""

from __future__ import annotations

import io
import json
import random
import resource
import subprocess
import sys

import pytest

from conftest import KINETO, table_counts
from tracedb.db import open_db
from tracedb.ingest.nesting import MAX_DEPTH, NestingGuard, TooDeep

DEEP = 100_000
EVENT = '{"ph": "X", "cat": "cpu_op", "name": "%s", "pid": 1, "tid": 1, "ts": %d, "dur": 1}'
# The address space a load is given here: ijson took 24 GB for these files. A load reserves about
# 2.3 GB (DuckDB's and Arrow's allocator arenas, thread stacks) while it holds about 225 MB.
LIMIT_BYTES = 4 << 30


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT_BYTES, LIMIT_BYTES))


# A load by the streaming reader alone (the bulk reader's files taken as ones it cannot read).
STREAMING = """
import sys
from tracedb import cli
from tracedb.ingest import bulk, readers
def no_bulk(*args, **kwargs):
    raise bulk.NotBulk("the streaming reader asked for")
readers.read_raw = no_bulk
sys.argv = ["tracedb", *sys.argv[1:]]
cli.run()
"""


def _load(path, db, streaming=False):
    """tracedb load in a process whose address space is limited, so that a regression fails with
    a MemoryError rather than taking the machine; by the streaming reader alone when asked."""
    start = ["-c", STREAMING] if streaming else ["-m", "tracedb.cli"]
    return subprocess.run([sys.executable, *start, "load", str(path), "--db", str(db)],
                          capture_output=True, text=True, preexec_fn=_limited, timeout=300)


@pytest.fixture
def loaded(tmp_path):
    db = tmp_path / "runs.duckdb"
    proc = _load(KINETO[0], db)
    assert proc.returncode == 0, proc.stderr
    with open_db(db, read_only=True) as c:
        before = table_counts(c)
    return db, before


def test_a_file_of_brackets_is_not_a_trace(tmp_path, loaded):
    db, before = loaded
    path = tmp_path / "brackets.json"
    path.write_text("[" * DEEP + "]" * DEEP)
    proc = _load(path, db)
    assert proc.returncode == 1
    assert proc.stderr.strip() == (f"tracedb: error: {path}: JSON array without trace events (no object with a "
                                   "ph key): not a trace")
    with open_db(db, read_only=True) as c:
        assert table_counts(c) == before


@pytest.mark.parametrize("reader", ["bulk", "streaming"])
@pytest.mark.parametrize("where", ["before", "after"])
def test_deep_metadata_costs_only_its_value(tmp_path, reader, where):
    """A metadata value nested 100,000 deep, before the event list or after it: every event
    loads, the trace is complete, and the value is set aside with its size and the reason; the
    other keys are kept (it failed the file before)."""
    db = tmp_path / "t.duckdb"
    path = tmp_path / "deep_meta.json"
    deep = "[" * DEEP + "]" * DEEP
    events = '"traceEvents": [' + ",".join(EVENT % (n, i) for i, n in enumerate("abc")) + "]"
    body = [f'"deep": {deep}', '"kept": {"x": [1, 2]}']
    parts = [*body, events] if where == "before" else [events, *body]
    path.write_text("{" + ", ".join(parts) + "}")
    proc = _load(path, db, streaming=reader == "streaming")
    assert proc.returncode == 0, proc.stderr
    with open_db(db, read_only=True) as c:
        assert c.execute("SELECT list(name ORDER BY ts_ns) FROM cpu_ops").fetchone()[0] == ["a", "b", "c"]
        assert c.execute("SELECT event_count, complete, problem FROM traces").fetchone() == (
            3, True, f"metadata set aside with its size: deep ({len(deep):,} bytes, nested too deeply to read)")
        assert dict(c.execute("SELECT key, value FROM trace_metadata").fetchall()) == {
            "deep": '{"set_aside_bytes":%d}' % len(deep), "kept": '{"x":[1,2]}'}


def test_a_deep_event_is_set_aside(tmp_path):
    """In a well-formed file, the bulk reader sets the deep event aside with its reason."""
    db = tmp_path / "t.duckdb"
    path = tmp_path / "deep_event.json"
    deep = '{"ph": "X", "name": "deep", "args": {"x": ' + "[" * DEEP + "]" * DEEP + "}}"
    path.write_text('{"traceEvents": [' + ",".join([EVENT % ("a", 1), deep, EVENT % ("b", 2)]) + "]}")
    proc = _load(path, db)
    assert proc.returncode == 0, proc.stderr
    with open_db(db, read_only=True) as c:
        assert c.execute("SELECT name FROM cpu_ops ORDER BY ts_ns").fetchall() == [("a",), ("b",)]
        assert c.execute("SELECT event_id, reason FROM rejected_events").fetchall() == [
            (1, "args nested too deeply (more than 254 levels)")]
        assert c.execute("SELECT event_count, complete FROM traces").fetchone() == (3, True)


def test_a_deep_event_larger_than_a_segment_costs_only_itself(tmp_path):
    """An event of 10 MB of brackets is more than the bulk reader cuts into segments: the
    streaming reader reads its value beyond the bound as 0, sets the event aside, and loads the
    events before and after it; the trace stays complete, its problem says where the text was
    too deep."""
    db = tmp_path / "t.duckdb"
    path = tmp_path / "deep_big.json"
    n = 5_000_000
    deep = '{"ph": "X", "name": "deep", "args": {"x": ' + "[" * n + "]" * n + "}}"
    path.write_text('{"traceEvents": [' + ",".join([EVENT % ("a", 1), deep, EVENT % ("b", 2)]) + "]}")
    proc = _load(path, db)
    assert proc.returncode == 0, proc.stderr
    before = '{"traceEvents": [' + EVENT % ("a", 1) + ',{"ph": "X", "name": "deep", "args": {"x": '
    where = len(before) + MAX_DEPTH - 4  # four levels open before the brackets: the top-level object, the list, the event, its args
    with open_db(db, read_only=True) as c:
        assert c.execute("SELECT name FROM cpu_ops ORDER BY ts_ns").fetchall() == [("a",), ("b",)]
        assert c.execute("SELECT event_id, reason FROM rejected_events").fetchall() == [
            (1, "args nested too deeply (more than 254 levels)")]
        assert c.execute("SELECT event_count, complete, problem FROM traces").fetchone() == (
            3, True, f"1 value(s) nested more than {MAX_DEPTH} levels deep read as 0 in the events holding them, "
                     f"which were set aside (the first at byte {where} of the JSON text)")


def _max_depth(text: str) -> int:
    """The deepest nesting of a JSON text, from the parsed value."""
    def depth(v) -> int:
        if isinstance(v, dict):
            return 1 + max((depth(x) for x in v.values()), default=0)
        if isinstance(v, list):
            return 1 + max((depth(x) for x in v), default=0)
        return 0
    return depth(json.loads(text))


def _value(rng: random.Random, levels: int):
    """A JSON value of about levels deep whose strings hold brackets, quotes and backslashes."""
    strings = ['a[b', ']]', '{"x"', '\\', '\\"[', 'q"}', '', 'ü[', '\\\\']
    if levels == 0:
        return rng.choice(strings + [1, None])
    if rng.random() < 0.5:  # empty ones too: [{[]}] is three levels in six brackets
        return [_value(rng, levels - 1) for _ in range(rng.randint(0, 3))]
    return {rng.choice(strings) + str(i): _value(rng, levels - 1) for i in range(rng.randint(0, 3))}


@pytest.mark.parametrize("seed", range(20))
def test_the_guard_counts_as_a_parser_does(seed):
    """Cut anywhere (inside strings, between a backslash and what it escapes), the guard stops
    exactly when the depth goes past its limit, never on a bracket inside a string."""
    rng = random.Random(seed)
    text = json.dumps(_value(rng, rng.randint(3, 9))).encode()
    depth = _max_depth(text)
    for limit in (depth - 1, depth):
        source = io.BytesIO(text)
        guard = NestingGuard(source, limit)
        read = bytearray()
        with pytest.raises(TooDeep) if limit < depth else _nothing():
            while True:
                chunk = guard.read(rng.choice((rng.randint(1, 7), rng.randint(8, 64))))
                if not chunk:
                    break
                read += chunk
        if limit < depth:  # the bytes handed out end just before the bracket that went too deep
            assert _opens_beyond(bytes(read), limit) is False
            assert _opens_beyond(text[:len(read) + 1], limit) is True
        else:
            assert bytes(read) == text


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _opens_beyond(prefix: bytes, limit: int) -> bool:
    """Whether a JSON prefix ever nests deeper than limit (strings skipped, the way a parser reads)."""
    depth, in_string, escaped = 0, False, False
    for c in prefix.decode("utf-8", "ignore"):
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c in "[{":
            depth += 1
            if depth > limit:
                return True
        elif c in "]}":
            depth -= 1
    return False


def _blanked_beyond(text: bytes, limit: int) -> tuple[bytes, list[int]]:
    """text with every value that opens beyond limit as 0 and spaces (strings skipped, the way a
    parser reads), and where each begins: what NestingGuard(blank_beyond=True) hands out, worked
    out byte by byte."""
    out = bytearray(text)
    depth, in_string, escaped, start, values = 0, False, False, None, []
    for i, c in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif c == 0x5C:
                escaped = True
            elif c == 0x22:
                in_string = False
        elif c == 0x22:
            in_string = True
        elif c in b"[{":
            depth += 1
            if depth == limit + 1:
                start = i
                values.append(i)
        elif c in b"]}":
            depth -= 1
            if depth == limit and start is not None:
                out[start:i + 1] = b"0" + b" " * (i - start)
                start = None
    if start is not None:
        out[start:] = b"0" + b" " * (len(text) - start - 1)
    return bytes(out), values


@pytest.mark.parametrize("seed", range(20))
def test_the_guard_blanks_what_opens_beyond_its_bound_and_nothing_else(seed):
    """Cut anywhere (a few bytes, or several levels, at a time), with blank_beyond: every value
    opening beyond the limit reads as 0 and spaces, the same length, each counted; every other
    byte as it was, brackets in strings too."""
    rng = random.Random(seed)
    text = json.dumps([_value(rng, rng.randint(3, 9)) for _ in range(3)]).encode()
    depth = _max_depth(text)
    for limit in range(2, depth + 1):
        guard = NestingGuard(io.BytesIO(text), limit, blank_beyond=True)
        read = bytearray()
        while chunk := guard.read(rng.choice((rng.randint(1, 7), rng.randint(8, 64)))):
            read += chunk
        expected, values = _blanked_beyond(text, limit)
        assert bytes(read) == expected, (limit, text)
        assert guard.blanked == len(values)
        assert guard.first_blanked_at == (values[0] if values else None)
        if values:
            assert _max_depth(bytes(read)) == limit
