"""Strings too long to keep in line: an event's tables hold the first characters and a note, and
long_texts holds the string whole, so that names up to the cap load whatever their number."""

from __future__ import annotations

import hashlib
import json

import pytest

import tracedb
from conftest import load, run_cli
from tracedb.db import open_db
from tracedb.ingest import bulk, readers
from tracedb.ingest.chrome import LONG_KEPT_CHARS, LONG_PIECE_CHARS, LONG_TEXT_CHARS, EventStager, out_of_line


def _kernel(name: str, ts: int, **args) -> dict:
    return {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": 1,
            "args": {"stream": 7, **args}}


def _write(path, events) -> None:
    path.write_text(json.dumps({"traceEvents": events}))


@pytest.fixture(params=["bulk", "streaming"])
def reader(request, monkeypatch):
    """Which reader loads: the bulk one as it chooses, or the streaming one alone."""
    if request.param == "streaming":
        def no_bulk(*args, **kwargs):
            raise bulk.NotBulk("the streaming reader asked for")
        monkeypatch.setattr(readers, "read_raw", no_bulk)
    return request.param


def test_a_long_string_is_cut_with_a_note_and_kept_whole_with_its_place():
    name = "n" * (LONG_TEXT_CHARS + 1)
    value = {"name": name, "args": {"a/b~c": ["short", "v" * (3 * LONG_TEXT_CHARS)]}, "ok": "k" * LONG_TEXT_CHARS}
    cut, long = out_of_line(value)
    assert dict(long) == {"/name": name, "/args/a~1b~0c/1": "v" * (3 * LONG_TEXT_CHARS)}  # RFC 6901
    assert cut["ok"] == "k" * LONG_TEXT_CHARS  # at the limit: kept in line
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    assert cut["name"].endswith(f"…[{LONG_TEXT_CHARS + 1:,} characters, sha256 {digest}; whole in long_texts]")
    assert cut["name"] == name[:LONG_KEPT_CHARS] + cut["name"][LONG_KEPT_CHARS:]
    assert len(cut["name"].encode()) < 4096  # DuckDB keeps it in line, and spills it
    assert cut["args"]["a/b~c"][0] == "short" and value["name"] == name  # a copy: the event as read is kept


def test_the_stager_stages_the_cut_event_and_the_pieces():
    stager = EventStager()
    name = "".join(chr(0x4E00 + i % 500) for i in range(2 * LONG_TEXT_CHARS + 5))  # characters, not bytes
    stager.add(3, _kernel(name, 10))
    batch = stager.take()
    rest = json.loads(batch["staging"]["rest"][0])
    assert rest["name"].startswith(name[:LONG_KEPT_CHARS]) and rest["name"].endswith("whole in long_texts]")
    long = batch["long"]
    pieces = -(-len(name) // LONG_PIECE_CHARS)
    assert long["event_id"] == [3] * pieces and long["field"] == ["/name"] * pieces
    assert long["piece"] == list(range(pieces)) and "".join(long["text"]) == name
    assert all(len(t.encode()) < 4096 for t in long["text"])  # each kept in line by DuckDB, so it can spill


def test_a_key_too_long_to_keep_sets_its_event_aside():
    stager = EventStager()
    stager.add(0, _kernel("k", 1, **{"x" * (LONG_TEXT_CHARS + 1): 1}))
    assert stager.rejected_total == 1
    assert stager.rejected["reason"][0].startswith(f"a key of {LONG_TEXT_CHARS + 1:,} characters")


def test_a_long_name_loads_cut_in_its_tables_and_whole_in_long_texts(con, tmp_path, reader):
    long_name = "void very_long_template_kernel<" + "T, " * 20_000 + "X>(int)"
    long_arg = "d" * (LONG_TEXT_CHARS * 2)
    path = tmp_path / "t.json"
    _write(path, [_kernel("short", 1), _kernel(long_name, 10, note=long_arg), _kernel("short", 20)])
    out = load(con, path)
    assert (out.events, out.rejected, out.complete) == (3, 0, True)
    names = con.execute("SELECT kernel_id, name FROM kernels ORDER BY kernel_id").fetchall()
    assert [n for _, n in names][0::2] == ["short", "short"]
    assert names[1][1] == long_name[:LONG_KEPT_CHARS] + names[1][1][LONG_KEPT_CHARS:]
    assert names[1][1].endswith("whole in long_texts]")
    tid = out.trace_id
    assert con.execute("SELECT long_text(?, 1, '/name'), long_text(?, 1, '/args/note'), long_text(?, 0, '/name')",
                       [tid, tid, tid]).fetchone() == (long_name, long_arg, None)
    assert json.loads(con.execute("SELECT args FROM kernels WHERE kernel_id = 1").fetchone()[0])["note"].endswith(
        "whole in long_texts]")
    # derived like any kernel: an operation, a call
    assert con.execute("SELECT count(*) FROM kernel_facts WHERE trace_id = ? AND op IS NOT NULL",
                       [tid]).fetchone()[0] == 3


# A load whose memory limits are a third of tracedb's (so that the files that pass them stay
# small), in a process of its own under an address-space limit.
LOW_MEMORY_LOAD = """
import sys
from tracedb import cli, store
store.LOAD_MEMORY_LIMIT = store.DERIVE_MEMORY_LIMIT = "64MB"
sys.argv = ["tracedb", "load", *sys.argv[1:]]
cli.run()
"""


@pytest.mark.parametrize("count, chars", [(24, 5 << 20), (2_600, 48 << 10)], ids=["24 of 5 MiB", "2,600 of 48 KiB"])
def test_names_up_to_the_cap_load_whatever_their_number(tmp_path, count, chars):
    """Names whose total is twice the load's memory: every event loads, each name whole in
    long_texts, under a 2 GiB address-space limit. Before, 36 names of 5 MiB took more than the
    load's 192 MB and the file failed."""
    import resource
    import subprocess
    import sys

    path = tmp_path / "names.json"
    with open(path, "w") as f:
        f.write('{"traceEvents": [')
        for i in range(count):
            f.write(("," if i else "") + json.dumps(_kernel(f"{i:06d}" + chr(97 + i % 26) * (chars - 6), 10 * i)))
        f.write("]}")
    db = tmp_path / "t.duckdb"
    proc = subprocess.run([sys.executable, "-c", LOW_MEMORY_LOAD, str(path), "--name", "names", "--db", str(db)],
                          capture_output=True, text=True, timeout=300,
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30)))
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr[-2000:]
    with open_db(db, read_only=True) as con:
        tid, events, rejected, complete = con.execute(
            "SELECT trace_id, event_count, rejected_count, complete FROM traces").fetchone()
        assert (events, rejected, complete) == (count, 0, True)
        assert con.execute("SELECT count(*), max(strlen(name)) < 4096 FROM kernels").fetchone() == (count, True)
        last = count - 1
        assert con.execute("SELECT long_text(?, ?, '/name')", [tid, last]).fetchone()[0] == \
            f"{last:06d}" + chr(97 + last % 26) * (chars - 6)
        assert con.execute("SELECT count(DISTINCT event_id), sum(length(text)) FROM long_texts").fetchone() == \
            (count, count * chars)


def test_long_texts_go_with_their_trace_into_a_lake_and_out_of_the_database(tmp_path):
    path = tmp_path / "t.json"
    name = "k" * (LONG_TEXT_CHARS + 100)
    _write(path, [_kernel(name, 1)])
    lake, db = tmp_path / "lake", tmp_path / "t.duckdb"
    run_cli("load", path, "--lake", lake, check=True)
    run_cli("load", path, db=db, check=True)
    for where in (lake, db):
        with tracedb.connect(where) as reader:
            tid = reader.sql("SELECT trace_id FROM traces").rows[0][0]
            assert reader.sql(f"SELECT long_text({tid}, 0, '/name')").rows == [(name,)]
    run_cli("rm", "t", db=db, check=True)
    with open_db(db, read_only=True) as con:
        assert con.execute("SELECT count(*) FROM long_texts").fetchone()[0] == 0


def test_a_string_beyond_the_cap_never_reaches_the_parser_whole(con, tmp_path, monkeypatch):
    """The streaming reader cuts it out of the bytes before yajl builds it (a failed allocation
    there ends the process: a 300 MiB name under a 1.6 GiB address-space limit did); its event is
    set aside with its size and first 64 KiB, the others load, one just within the cap whole.
    The cap is 1 MiB here, so that the file stays small."""
    from tracedb.ingest import chrome

    monkeypatch.setattr(chrome, "MAX_EVENT_CHARS", 1 << 20)
    monkeypatch.setattr(readers, "read_raw", lambda *a, **k: (_ for _ in ()).throw(bulk.NotBulk("streaming")))
    cutters = []
    real = chrome.StringCutter
    monkeypatch.setattr(chrome, "StringCutter", lambda limit: cutters.append(real(limit)) or cutters[-1])
    within = "w" * ((1 << 20) - 200)
    path = tmp_path / "t.json"
    _write(path, [_kernel("a", 1), _kernel("n" * (5 << 20), 10), _kernel(within, 20), _kernel("b", 30)])
    out = load(con, path)
    assert (out.events, out.rejected, out.complete) == (4, 1, True)
    assert cutters[0].started == 1  # cut in the bytes, not after parsing
    event_id, reason, kept = con.execute("SELECT event_id, reason, length(raw) FROM rejected_events").fetchone()
    assert (event_id, kept) == (1, 64 << 10) and reason.startswith("an event of 5.0 MiB of text: more than the 1 MiB")
    assert con.execute("SELECT kernel_id, long_text(trace_id, kernel_id, '/name') = ? FROM kernels ORDER BY 1",
                       [within]).fetchall() == [(0, None), (2, True), (3, None)]


def test_an_event_set_aside_for_a_long_key_is_kept_as_it_was_read():
    """Its long name is not cut in what rejected_events keeps, nor left in long_texts."""
    stager = EventStager()
    name = "N" * (LONG_TEXT_CHARS + 1)
    stager.add(0, _kernel(name, 1, **{"k" * (LONG_TEXT_CHARS + 1): 1}))
    batch = stager.take()
    assert batch["long"]["event_id"] == [] and batch["staging"]["event_id"] == []
    assert json.loads(batch["rejected"]["raw"][0])["name"] == name


@pytest.mark.parametrize("where", ["an entry that is not an object", "a value nested too deeply"])
def test_a_cut_string_outside_any_event_is_no_event_s(con, tmp_path, monkeypatch, where):
    """A string the reader cut in an entry that is not an object (set aside as such, without the
    marker), or inside a value read as 0 for its depth (never parsed): no event waits for its
    marker, so that the events after it are staged as any are."""
    from tracedb.ingest import chrome
    from tracedb.ingest.nesting import MAX_DEPTH

    monkeypatch.setattr(chrome, "MAX_EVENT_CHARS", 1 << 20)
    monkeypatch.setattr(readers, "read_raw", lambda *a, **k: (_ for _ in ()).throw(bulk.NotBulk("streaming")))
    cutters = []
    real = chrome.StringCutter
    monkeypatch.setattr(chrome, "StringCutter", lambda limit: cutters.append(real(limit)) or cutters[-1])
    big = '"' + "s" * (3 << 20) + '"'
    entry = big if where.startswith("an entry") else \
        json.dumps(_kernel("deep", 5))[:-1] + ', "x": ' + "[" * MAX_DEPTH + big + "]" * MAX_DEPTH + "}"
    path = tmp_path / "t.json"
    path.write_text('{"traceEvents": [' + json.dumps(_kernel("a", 1)) + ", " + entry + ", "
                    + json.dumps(_kernel("b", 30)) + "]}")
    out = load(con, path)
    assert (out.events, out.rejected) == (3, 1)
    cutter = cutters[0]
    assert cutter.started == 1 and cutter.seen == 1
    raw = con.execute("SELECT raw FROM rejected_events").fetchone()[0]
    assert "\x00" not in raw and cutter.token not in raw
    assert con.execute("SELECT list(name ORDER BY kernel_id) FROM kernels").fetchone()[0] == ["a", "b"]


def test_large_events_of_short_strings_stay_with_the_bulk_reader(con, tmp_path, monkeypatch):
    """Events of 30 KiB of short values (an operation's long Input Dims) are typed in Python where
    they stand, the rest in bulk: the file is not read again by the streaming reader, and nothing
    is kept out of line."""
    streamed = []
    real = readers._stream_events
    monkeypatch.setattr(readers, "_stream_events", lambda *a: streamed.append(a[1]) or real(*a))
    dims = [[i, 4096] for i in range(3000)]  # 30 KiB of text, no string in it
    events = [_kernel(f"k{i}", 10 * i, **({"Input Dims": dims} if i % 3 == 0 else {})) for i in range(600)]
    path = tmp_path / "t.json"
    _write(path, events)
    out = load(con, path)
    assert (out.events, out.rejected, streamed) == (600, 0, [])
    assert con.execute("SELECT count(*) FROM long_texts").fetchone()[0] == 0
    assert json.loads(con.execute("SELECT args FROM kernels WHERE kernel_id = 3").fetchone()[0])["Input Dims"] == dims


def test_a_compressed_trace_inflates_a_chunk_at_a_time(tmp_path):
    """256 KiB of gzip of one letter inflated to 256 MiB in one piece: each read inflates at most
    what it asks for, across members, and a file cut short still says where."""
    import gzip
    from pathlib import Path

    from tracedb.ingest.source import TraceStream

    first = b'{"traceEvents": [{"ph": "X", "name": "' + b"n" * (40 << 20) + b'"}'
    second = b', {"ph": "X", "name": "b"}]}'
    path = tmp_path / "t.json.gz"
    path.write_bytes(gzip.compress(first) + gzip.compress(second))
    stream, pieces = TraceStream(Path(path)), []
    while piece := stream.read(1 << 20):
        pieces.append(piece)
    assert b"".join(pieces) == first + second and max(map(len, pieces)) <= 1 << 20
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(gzip.compress(first + second)[:-1000])
    stream = TraceStream(Path(cut))
    while stream.read(1 << 20):
        pass
    assert stream.read_error.startswith("compressed data ends early (truncated gzip)")
