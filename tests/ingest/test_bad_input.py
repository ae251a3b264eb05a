"""File-level problems: one line naming the file, exit 1, no traceback, database unchanged."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import tracedb

from conftest import FIXTURES, KINETO, run_cli, table_counts
from tracedb.db import open_db


@pytest.fixture
def loaded_db(tmp_path):
    """A database holding one real trace, and its row counts before the bad load."""
    db = tmp_path / "runs.duckdb"
    run_cli("load", KINETO[0], db=db, check=True)
    with open_db(db, read_only=True) as c:
        before = table_counts(c)
    return db, before


def _bad_files(tmp_path):
    csv = tmp_path / "other_tool.json"  # a CSV, but not an Ascend profiler one (no Type, no Duration(us))
    csv.write_text("step,kernel,time\n1,MatMul,1.0\n")
    corrupt = tmp_path / "corrupt.json.gz"
    corrupt.write_bytes(b"\x1f\x8b\x08\x00" + b"\x00garbage-not-deflate" * 20)
    notjson = tmp_path / "notes.json"
    notjson.write_text("hello, this is not json\n")
    empty = tmp_path / "empty.json"
    empty.write_text("")
    blank = tmp_path / "blank.json"
    blank.write_text("  \n\n ")
    notrace = tmp_path / "config.json"
    notrace.write_text(json.dumps({"model": "llama", "layers": 32}))
    numbers = tmp_path / "numbers.json"
    numbers.write_text("[1, 2, 3]")
    cut_head = tmp_path / "cut_head.json"
    cut_head.write_text('{"schemaVersion": 1, "traceEvents": [{"ph": "X", "na')
    directory = tmp_path / "a_directory"
    directory.mkdir()
    import bz2
    import lzma
    import zipfile

    trace = b'{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 1, "ts": 1, "dur": 2}]}'
    xz = tmp_path / "trace.json.xz"
    xz.write_bytes(lzma.compress(trace))
    bz = tmp_path / "trace.json.bz2"
    bz.write_bytes(bz2.compress(trace))
    zipped = tmp_path / "trace.zip"
    with zipfile.ZipFile(zipped, "w") as z:
        z.writestr("trace.json", trace)
    return {
        "csv of another tool": (csv, "not JSON"),
        "corrupt gzip": (corrupt, "gzip"),
        "not json": (notjson, "not JSON"),
        "empty file": (empty, "empty"),
        "whitespace only": (blank, "empty"),
        "json that is not a trace": (notrace, "not a trace"),
        "array that is not a trace": (numbers, "not a trace"),
        "no complete event": (cut_head, "no complete event"),
        "missing file": (tmp_path / "missing.json", "no such file"),
        "directory": (directory, "directory"),
        # compressed files and archives are named for what they are (not "looks like CSV")
        "xz": (xz, "an xz-compressed file"),
        "bzip2": (bz, "a bzip2-compressed file"),
        "zip": (zipped, "a zip archive"),
    }


CASES = ["csv of another tool", "corrupt gzip", "not json", "empty file", "whitespace only",
         "json that is not a trace", "array that is not a trace", "no complete event", "missing file", "directory",
         "xz", "bzip2", "zip"]


@pytest.mark.parametrize("case", CASES)
def test_bad_file_is_refused_cleanly(case, tmp_path, loaded_db):
    db, before = loaded_db
    path, words = _bad_files(tmp_path)[case]
    proc = run_cli("load", path, db=db)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert str(path) in lines[0] and words.lower() in lines[0].lower(), lines[0]
    assert "Traceback" not in proc.stderr
    with open_db(db, read_only=True) as c:
        assert table_counts(c) == before


def test_good_files_load_even_when_one_is_bad(tmp_path, loaded_db):
    db, before = loaded_db
    bad = tmp_path / "bad.json"
    bad.write_text("nope")
    proc = run_cli("load", bad, KINETO[1], "--format", "json", db=db)
    assert proc.returncode == 1
    loaded = json.loads(proc.stdout)
    assert [r["name"] for r in loaded] == [KINETO[1].name.split(".")[0]]


def _without_root_read() -> None:
    """In the child before exec: root's power to read any file dropped (CAP_DAC_OVERRIDE and
    CAP_DAC_READ_SEARCH out of the bounding set), so a file of mode 000 is unreadable to it too."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
        if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            os._exit(99)


def test_an_unreadable_file_among_good_ones_is_one_line(tmp_path):
    """Each file stands alone: one that cannot be read is one line naming it, exit 1, and the
    files around it load (the command line's parser used to refuse the whole command)."""
    unreadable = tmp_path / "unreadable.json.gz"
    unreadable.write_bytes(KINETO[0].read_bytes())
    unreadable.chmod(0)
    db = tmp_path / "t.duckdb"
    as_root = os.geteuid() == 0
    if as_root and subprocess.run([sys.executable, "-c", "open(%r).close()" % str(unreadable)],
                                  preexec_fn=_without_root_read, capture_output=True).returncode not in (1,):
        pytest.skip("cannot drop root's power to read any file here (no CAP_SETPCAP)")
    proc = subprocess.run([sys.executable, "-m", "tracedb.cli", "load", str(KINETO[1]), str(unreadable),
                           str(KINETO[2]), "--db", str(db)], capture_output=True, text=True, timeout=300,
                          preexec_fn=_without_root_read if as_root else None)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.strip() == f"tracedb: error: {unreadable}: cannot read: Permission denied"
    with open_db(db, read_only=True) as con:
        assert con.execute("SELECT list(name ORDER BY trace_id) FROM traces").fetchone()[0] == [
            KINETO[1].name.split(".")[0], KINETO[2].name.split(".")[0]]


def test_database_file_that_is_not_duckdb(tmp_path):
    fake = tmp_path / "fake.duckdb"
    fake.write_text("this is not a database" * 100)
    proc = run_cli("load", KINETO[0], db=fake)
    assert proc.returncode == 1
    assert proc.stderr.strip().count("\n") == 0
    assert str(fake) in proc.stderr and "not a DuckDB database" in proc.stderr
    assert fake.read_text() == "this is not a database" * 100


def _foreign_files(tmp_path):
    """Files of other kinds that DuckDB would open as something else (JSON, CSV and Parquet as an
    in-memory database, SQLite through an extension it downloads)."""
    import sqlite3

    import duckdb

    files = {"other.json": b'{"traceEvents": []}',
             "rows.csv": b"a,b\n1,2\n", "tiny": b"x"}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    duckdb.sql(f"COPY (SELECT 1 AS a) TO '{tmp_path / 'rows.parquet'}' (FORMAT parquet)")
    with sqlite3.connect(tmp_path / "app.sqlite") as con:
        con.execute("CREATE TABLE t (a)")
    return [tmp_path / n for n in (*files, "rows.parquet", "app.sqlite")]


@pytest.mark.parametrize("command", ["load", "ls", "sql", "report"])
def test_a_foreign_file_is_never_taken_for_a_database(tmp_path, command):
    """An existing file that is not a DuckDB database, given as --db, is one line and exit 1, and
    is left as it was: no load lands in a database that is never saved."""
    for fake in _foreign_files(tmp_path):
        before = fake.read_bytes()
        args = {"load": ("load", KINETO[0]), "ls": ("ls",), "sql": ("sql", "SELECT 1"),
                "report": ("report", "summary")}[command]
        proc = run_cli(*args, db=fake)
        assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, \
            (fake, proc.stderr)
        assert str(fake) in proc.stderr and ("not a DuckDB database" in proc.stderr
                                             or "a SQLite database" in proc.stderr), proc.stderr
        assert fake.read_bytes() == before and "loaded" not in proc.stdout
    with pytest.raises(tracedb.TracedbError, match="not a DuckDB database"):
        tracedb.connect(tmp_path / "rows.csv", read_only=False)


def _temp_objects(con) -> int:
    """Temporary tables and views the load made (the system views are temporary too)."""
    return con.execute("SELECT (SELECT count(*) FROM duckdb_tables() WHERE temporary) + "
                       "(SELECT count(*) FROM duckdb_views() WHERE temporary AND NOT internal)").fetchone()[0]


def test_streaming_failure_midway_rolls_back(con, monkeypatch):
    """A crash after some batches were staged leaves no trace of the load."""
    from tracedb.ingest import bulk, chrome, loader, readers

    before = table_counts(con)
    calls = {"n": 0}
    real = chrome.read_chrome_trace

    def exploding(stream, emit, on_progress=None, batch_events=chrome.BATCH_EVENTS):
        def emit_then_fail(batch):
            emit(batch)
            calls["n"] += 1
            if calls["n"] == 2:
                raise KeyboardInterrupt
        return real(stream, emit_then_fail, on_progress, batch_events=100)

    def no_bulk(*args, **kwargs):
        raise bulk.NotBulk("forced")

    monkeypatch.setattr(readers, "read_raw", no_bulk)
    monkeypatch.setattr(readers, "read_chrome_trace", exploding)
    with pytest.raises(KeyboardInterrupt):
        loader.load_file(con, next(p for p in KINETO if p.name.startswith("h100")))
    assert calls["n"] == 2
    assert table_counts(con) == before
    assert _temp_objects(con) == 0


def test_failure_during_split_rolls_back(con, monkeypatch):
    """A crash after some event tables were filled leaves no trace of the load."""
    from tracedb import store
    from tracedb.ingest import loader

    before = table_counts(con)
    real = store.run_with_params  # every SQL file of a load runs through the store
    done = []

    def split_then_fail(c, statements, params):
        if any("INSERT INTO kernels" in st for st in statements):  # the split: fill a few tables, then fail
            real(c, statements[:5], params)
            done.append(c.execute("SELECT count(*) FROM kernels").fetchone()[0])
            raise KeyboardInterrupt
        real(c, statements, params)

    monkeypatch.setattr(store, "run_with_params", split_then_fail)
    with pytest.raises(KeyboardInterrupt):
        loader.load_file(con, next(p for p in KINETO if p.name.startswith("h100")))
    assert done and done[0] > 0  # kernels were written before the failure
    assert table_counts(con) == before
    assert _temp_objects(con) == 0


def test_truncated_load_warns_and_succeeds(tmp_path):
    db = tmp_path / "t.duckdb"
    src = next(p for p in KINETO if p.name.startswith("mi300_bert"))
    cut = tmp_path / "cut.json"
    with gzip.open(src, "rb") as f:
        cut.write_bytes(f.read()[:200_000])
    proc = run_cli("load", cut, db=db)
    assert proc.returncode == 0
    assert "incomplete" in proc.stderr and "truncated" in proc.stderr
    ls = json.loads(run_cli("ls", "--format", "json", db=db, check=True).stdout)
    assert ls[0]["complete"] is False and ls[0]["events"] > 0


def test_a_load_of_missing_files_creates_no_database(tmp_path):
    """A load with nothing to load (every file missing, as when the database's path is typed
    where a file goes) says so in one line and leaves no new database behind."""
    db = tmp_path / "new.duckdb"
    missing = [tmp_path / "missing.json", tmp_path / "typo.duckdb"]
    proc = run_cli("load", *missing, db=db)
    assert proc.returncode == 1
    assert proc.stderr.strip() == f"tracedb: error: {missing[0]}: no such file; {missing[1]}: no such file"
    assert not db.exists() and not Path(str(db) + ".wal").exists()
    lake = tmp_path / "lake"
    proc = run_cli("load", missing[0], "--lake", lake)
    assert proc.returncode == 1 and proc.stderr.strip() == f"tracedb: error: {missing[0]}: no such file"
    assert not lake.exists()
    # one file there among missing ones: it loads, and each missing one is named
    proc = run_cli("load", missing[0], KINETO[1], db=db)
    assert proc.returncode == 1 and f"{missing[0]}: no such file" in proc.stderr
    with open_db(db, read_only=True) as con:
        assert con.execute("SELECT count(*) FROM traces").fetchone()[0] == 1



def test_quotes_in_every_path_a_load_writes_or_reads(tmp_path, monkeypatch):
    """A quote in the trace's, the database's and the temporary folder's names: every path tracedb
    hands DuckDB as a literal (the segment files, a salvaged window, a worker's template and
    Parquet) is quoted. A path DuckDB could not read would not fail the load (a segment it refuses
    is salvaged, a window it refuses sends the file to the streaming reader), so the serial load
    is watched: the bad event's segment alone is salvaged, and no file goes to the streaming
    reader; a worker's partition it could not write would fail its file."""
    from tracedb.ingest import bulk, readers

    scratch = tmp_path / "it's tmp"
    scratch.mkdir()
    events = ['{"ph": "X", "cat": "kernel", "name": "k%d", "pid": 0, "tid": 1, "ts": %d, "dur": 1}' % (i, i)
              for i in range(3)]
    events.insert(1, '{"ph": "X", "cat": "kernel", "name": "bad" "x": 1}')  # a missing comma
    trace = tmp_path / "o'brien.json"
    trace.write_text('{"traceEvents": [' + ", ".join(events) + "]}")

    def kernels(db) -> list[str]:
        with open_db(db, read_only=True) as con:
            assert con.execute("SELECT count(*) FROM rejected_events").fetchone()[0] == 1
            return con.execute("SELECT list(k.name ORDER BY kernel_id) FROM kernels k JOIN traces t "
                               "USING (trace_id) WHERE t.name = 'o''brien'").fetchone()[0]

    salvaged, streamed = [], []
    salvage = bulk.salvage
    monkeypatch.setattr(bulk, "salvage", lambda *a: salvaged.append(a[1]) or salvage(*a))
    stream_events = readers._stream_events
    monkeypatch.setattr(readers, "_stream_events", lambda con, path, *a: streamed.append(path) or
                        stream_events(con, path, *a))
    monkeypatch.setattr("tempfile.tempdir", str(scratch))
    db = tmp_path / "db'1.duckdb"
    proc = run_cli("load", trace, KINETO[1], "--jobs", "1", db=db)
    assert proc.returncode == 0, proc.stderr
    assert kernels(db) == ["k0", "k1", "k2"]
    assert len(salvaged) == 1 and b'"bad" "x"' in salvaged[0] and streamed == []

    db = tmp_path / "db'2.duckdb"
    proc = run_cli("load", trace, KINETO[1], "--jobs", "2", db=db, env={"TMPDIR": str(scratch)}, process=True)
    assert proc.returncode == 0, proc.stderr
    assert kernels(db) == ["k0", "k1", "k2"]
    assert list(scratch.iterdir()) == []  # nothing left in the temporary folder


@pytest.mark.parametrize("where", ["--db", "--lake"])
def test_a_file_given_twice_loads_once_and_says_so(tmp_path, where):
    """The same file twice in one load (by any path): loaded once, the repeat skipped with its
    reason, exit 0 (not "identical content", not a clash of names)."""
    again = tmp_path / "sub" / ".." / KINETO[0].name
    (tmp_path / "sub").mkdir()
    (tmp_path / KINETO[0].name).write_bytes(KINETO[0].read_bytes())
    first = tmp_path / KINETO[0].name
    target = tmp_path / ("t.duckdb" if where == "--db" else "lake")
    proc = subprocess.run([sys.executable, "-m", "tracedb.cli", "load", str(first), str(again), where, str(target)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip() == f"tracedb: {again}: skipped: given twice in this load: loaded once"
    with tracedb.connect(target) as db:
        assert db.sql("SELECT count(*) FROM traces").rows == [(1,)]


def test_a_path_the_system_refuses_is_one_line(tmp_path):
    """A name longer than the file system takes (stat() fails with ENAMETOOLONG; a folder closed
    to the user fails the same way): one line naming it, exit 1, no traceback, in every command
    that takes a path; a load's other files still load."""
    long = tmp_path / ("a" * 300)
    good = KINETO[0]
    db = tmp_path / "t.duckdb"
    run_cli("load", good, db=db, check=True)
    commands = [
        (["load", f"{long}.json", str(good), "--replace", "--format", "csv", "--db", str(db)], True),  # every column
        (["ls", "--db", f"{long}.duckdb"], False),
        (["load", str(good), "--db", f"{long}.duckdb"], False),
        (["load", str(good), "--lake", str(long)], False),
        (["export", str(long), "--db", str(db)], False),
        (["export", "--perfetto", f"{long}.json", "--trace", good.name.split(".")[0], "--db", str(db)], False),
    ]
    for argv, loads_the_other in commands:
        proc = subprocess.run([sys.executable, "-m", "tracedb.cli", *argv], capture_output=True, text=True)
        errors = [line for line in proc.stderr.splitlines() if line.startswith("tracedb: error:")]
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, (argv, proc.stderr)
        assert len(errors) == 1 and str(long) in errors[0] and "too long" in errors[0], (argv, proc.stderr)
        if loads_the_other:
            assert "replaced" in proc.stdout, proc.stdout


@pytest.mark.parametrize("reader", ["default", "streaming"])
@pytest.mark.parametrize("field", ["name", "args"])
def test_an_event_too_large_is_set_aside_not_the_file(tmp_path, monkeypatch, reader, field):
    """One event holding a 20 MB string took the load's memory and failed the whole file (10 MB
    loaded): an event of more than MAX_EVENT_CHARS of text is set aside with its reason and its
    first KEPT_CHARS characters; the events around it load, whichever reader reads the file (the
    bulk reader cuts no segment around such an event: the streaming reader takes the file)."""
    from tracedb.ingest import bulk, readers
    from tracedb.ingest.chrome import KEPT_CHARS, MAX_EVENT_CHARS

    big = "x" * (MAX_EVENT_CHARS + 1_000_000)
    event = ({"ph": "X", "cat": "kernel", "name": big, "pid": 0, "tid": 1, "ts": 50, "dur": 2} if field == "name"
             else {"ph": "X", "cat": "cpu_op", "name": "big", "pid": 0, "tid": 1, "ts": 50, "dur": 2, "args": {"s": big}})
    small = [{"ph": "X", "cat": "kernel", "name": f"k{i}", "pid": 0, "tid": 1, "ts": 100 + i, "dur": 1} for i in range(2000)]
    path = tmp_path / "big.json"
    path.write_text(json.dumps({"traceEvents": small[:1000] + [event] + small[1000:]}))
    if reader == "streaming":
        monkeypatch.setattr(readers, "read_raw", lambda *a, **k: (_ for _ in ()).throw(bulk.NotBulk("forced")))
    with tracedb.connect(tmp_path / "t.duckdb", read_only=False) as db:
        db.load(path)
        assert db.sql("SELECT count(*) FROM kernels").rows == [(2000,)]
        (event_id, reason, kept), = db.sql("SELECT event_id, reason, raw FROM rejected_events").rows
    assert event_id == 1000 and len(kept) == KEPT_CHARS
    assert kept == json.dumps(event, separators=(",", ":"))[:KEPT_CHARS]  # the event's own first characters
    assert reason.startswith("an event of ") and "more than the 10 MiB tracedb keeps of one event" in reason


@pytest.mark.parametrize("event", [{}, {"ph": "X"}, {"ts": 5}, {"args": {"b": [1, 2]}},
                                   {"ph": "X", "name": "k", "ts": "1.5", "dur": 2, "args": {"a": "é" * 40_000}}])
def test_an_event_set_aside_for_its_size_keeps_its_own_first_characters(event):
    """The characters kept of an event too large are those of its whole JSON text, made from the
    pieces the stager already encoded (never the whole text again)."""
    from decimal import Decimal

    from tracedb.ingest.chrome import _MISSING, KEPT_CHARS, _first_chars
    from tracedb.jsontext import dumps, fast_dumps

    event = {k: Decimal(v) if k == "ts" and isinstance(v, str) else v for k, v in event.items()}
    rest = {k: v for k, v in event.items() if k not in ("ts", "dur", "args")}
    whole = dict(rest, **{k: event[k] for k in ("ts", "dur", "args") if k in event})
    args = fast_dumps(event["args"]).decode() if "args" in event else None
    kept = _first_chars(fast_dumps(rest).decode(), event.get("ts", _MISSING), event.get("dur", _MISSING), args)
    assert kept == dumps(whole)[:KEPT_CHARS]


@pytest.mark.parametrize("event", [
    {"ph": "X", "cat": "kernel", "name": "n" * (12 << 20), "ts": 5, "dur": 1, "pid": 0},
    {"ph": "X", "name": "op", "args": {"Concrete Inputs": ["", "é" * (6 << 20), ["x" * (3 << 20)]]}, "ts": "1.5"},
    {"ph": "X", "name": "op", "args": {"Concrete Inputs": ["", "é" * (8 << 20), ["x" * (3 << 20)]]}, "ts": "1.5"},
    {"ph": "X", "k" * (11 << 20): 1, "ts": 5},
])
def test_an_event_far_beyond_the_cap_is_set_aside_as_one_near_it_without_encoding_it_whole(event):
    """An event whose parse read far more than the cap is set aside without being encoded whole
    (orjson ends the process when it cannot allocate the text: a 64 MiB name under a 2 GiB
    address-space limit did): the same reason, size and first characters as one encoded whole;
    one within the cap in characters (é is two bytes) is staged as it is."""
    from decimal import Decimal

    from tracedb.ingest.chrome import MAX_EVENT_CHARS, READ_CHUNK, EventStager

    event = {k: Decimal(v) if k == "ts" and isinstance(v, str) else v for k, v in event.items()}
    whole, cut = EventStager(), EventStager()
    whole.add(7, dict(event))
    cut.add(7, dict(event), span=MAX_EVENT_CHARS + 2 * READ_CHUNK + 1)
    assert cut.rejected == whole.rejected and cut.cols == whole.cols  # within the cap in characters: staged
    assert cut.rejected_total == whole.rejected_total


def test_a_name_of_64_mib_under_an_address_space_limit_is_set_aside(tmp_path):
    """A 64 MiB kernel name killed the load with SIGSEGV under a 2 GiB address-space limit
    (orjson's encoding could not allocate it): the event is set aside and the others load."""
    import resource

    path = tmp_path / "name64.json"
    with open(path, "w") as f:
        f.write('{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "a", "pid": 0, "tid": 7, "ts": 1, "dur": 1}, '
                '{"ph": "X", "cat": "kernel", "name": "' + "n" * (64 << 20) + '", "pid": 0, "tid": 7, "ts": 10, '
                '"dur": 5}, {"ph": "X", "cat": "kernel", "name": "b", "pid": 0, "tid": 7, "ts": 20, "dur": 1}]}')
    db = tmp_path / "t.duckdb"
    proc = subprocess.run([sys.executable, "-m", "tracedb.cli", "load", str(path), "--db", str(db)],
                          capture_output=True, text=True, timeout=300,
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30)))
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    with open_db(db, read_only=True) as con:
        assert con.execute("SELECT list(name ORDER BY ts_ns) FROM kernels").fetchone()[0] == ["a", "b"]
        assert con.execute("SELECT event_id, strlen(raw) FROM rejected_events").fetchall() == [(1, 64 << 10)]


@pytest.mark.parametrize("failure, said", [
    (ImportError("libarrow.so.2600: failed to map segment from shared object"),
     "ImportError: libarrow.so.2600: failed to map segment from shared object"),
    (SystemError("error return without exception set"), "SystemError: error return without exception set"),
    (RuntimeError("can't start new thread"), "out of memory (cannot start a thread)")],
    ids=["ImportError", "SystemError", "no thread"])
def test_a_library_failing_mid_load_is_one_line_and_the_database_unchanged(loaded_db, monkeypatch, failure, said):
    """Under an address-space limit pyarrow's shared library could not be mapped, its import of
    pandas failed without saying why, and the writer's thread could not start: each printed a
    traceback from the middle of a load."""
    from tracedb.ingest import bulk, readers, writer

    db, before = loaded_db
    monkeypatch.setattr(readers, "read_raw", lambda *a, **k: (_ for _ in ()).throw(bulk.NotBulk("streaming")))

    def fail(batch):
        raise failure
    monkeypatch.setattr(writer, "to_arrow", fail)
    proc = run_cli("load", KINETO[1], db=db)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.splitlines() == [f"tracedb: error: {KINETO[1]}: cannot load: {said}"]
    with open_db(db, read_only=True) as c:
        assert table_counts(c) == before


def test_glob_characters_in_a_path_name_that_file_alone(tmp_path):
    """DuckDB's file readers take *, ? and [...] as a glob: a trace, a rules file, an export and a
    lake in run[1]/ were read from run1/ beside it (another run's file, or the digest of another
    lake's trace, so that a load was skipped as already there). Each reads its own file."""
    from tracedb import lake as lakemod

    ours, theirs = tmp_path / "run[1]", tmp_path / "run1"
    ours.mkdir()
    theirs.mkdir()
    ascend = FIXTURES / "ascend" / "kernel_details_cann8.csv"
    lines = ascend.read_text().splitlines()
    (ours / ascend.name).write_text("\n".join(lines) + "\n")
    (theirs / ascend.name).write_text("\n".join(lines[:3]) + "\n")  # two kernels, where ours has more
    db = tmp_path / "t.duckdb"
    run_cli("load", ours / ascend.name, db=db, check=True)
    with open_db(db, read_only=True) as con:
        assert con.execute("SELECT event_count FROM traces").fetchone()[0] == len(lines) - 1
    for folder, label in ((ours, "ours"), (theirs, "theirs")):
        (folder / "peaks.csv").write_text("priority,regex,device,fp32,tf32,bf16,fp16,fp8,mem_tbps,reference\n"
                                          f"5,MyGPU,{label},10,,,100,,1.5,mine\n")
    run_cli("rules", "add", ours / "peaks.csv", db=db, check=True)
    with open_db(db, read_only=True) as con:
        assert con.execute("SELECT device FROM device_peaks WHERE source = 'peaks.csv'").fetchall() == [("ours",)]
    # a backslash beside them: DuckDB takes it for a separator in a pattern, so it is read unescaped
    odd = tmp_path / "team\\a" / "run*"
    odd.mkdir(parents=True)
    (odd / "more.csv").write_text("priority,regex,device,fp32,tf32,bf16,fp16,fp8,mem_tbps,reference\n"
                                  "5,Other,backslash,10,,,100,,1.5,mine\n")
    run_cli("rules", "add", odd / "more.csv", db=db, check=True)
    with open_db(db, read_only=True) as con:
        assert con.execute("SELECT device FROM device_peaks WHERE source = 'more.csv'").fetchall() == [("backslash",)]
    for folder, trace in ((ours, KINETO[0]), (theirs, KINETO[1])):
        lakemod.add(trace, folder / "lake", name="t")
        run_cli("export", folder / "export", db=_db_of(tmp_path, folder, trace), check=True)
    with pytest.raises(tracedb.TracedbError, match="already exists in the lake"):  # not taken for theirs
        lakemod.add(KINETO[1], ours / "lake", name="t")
    copy = tmp_path / "copy.duckdb"
    run_cli("load", ours / "export", db=copy, check=True)
    with open_db(copy, read_only=True) as con:
        assert con.execute("SELECT name FROM traces").fetchall() == [(KINETO[0].name.split(".")[0],)]


def _db_of(tmp_path: Path, folder: Path, trace: Path) -> Path:
    db = tmp_path / f"{folder.name}.duckdb"
    run_cli("load", trace, db=db, check=True)
    return db
