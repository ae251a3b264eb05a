"""Readers of a lake while a writer replaces a trace: a reader gives the traces as it opened them,
each one whole version, for as long as it lives (it holds their files: tracedb.snapshot), whether
it opened before the replace, at any of its renames, or while its own opening was under way."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

import tracedb
from conftest import KINETO
from tracedb import db as dbmod
from tracedb import lake as lakemod
from tracedb import snapshot
from tracedb.ingest.loader import trace_tables

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a reader holds its files by /proc")

OLD, NEW, OTHER = KINETO[0], KINETO[1], KINETO[3]


@pytest.fixture(scope="module")
def tables(tmp_path_factory) -> list[str]:
    con = dbmod.open_db(tmp_path_factory.mktemp("tables") / "t.duckdb")
    try:
        return trace_tables(con)
    finally:
        con.close()


def _version(db: tracedb.Database, name: str, tables: list[str]):
    """(sha256, rows per table) of trace name as db reads it, or None when db does not hold it."""
    found = db.sql("SELECT sha256, trace_id FROM traces WHERE name = ?", [name]).rows
    if not found:
        return None
    (sha, trace_id), = found
    rows = {t: db.sql(f"SELECT count(*) FROM {t} WHERE trace_id = ?", [trace_id]).rows[0][0] for t in tables}
    return sha, rows


@pytest.fixture(scope="module")
def versions(tmp_path_factory, tables):
    """OLD, NEW and OTHER each alone in a lake as t: what a whole version of each reads as."""
    out = {}
    for f in (OLD, NEW, OTHER):
        lake = tmp_path_factory.mktemp("one") / "lake"
        lakemod.add(f, lake, name="t")
        with tracedb.connect(lake) as db:
            out[f] = _version(db, "t", tables)
    assert len({v[0] for v in out.values()}) == 3
    return out


def _lake(tmp_path: Path) -> Path:
    lake = tmp_path / "lake"
    lakemod.add(OLD, lake, name="t")
    lakemod.add(OTHER, lake, name="u")
    return lake


def _held(lake: Path) -> list[str]:
    """The files of lake this process holds open, as /proc names them (deleted ones so marked)."""
    links = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            link = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if link.startswith(str(lake.resolve()) + "/"):
            links.append(link)
    return links


def test_a_reader_keeps_the_traces_it_opened_after_a_replace_deletes_them(tmp_path, tables, versions):
    lake = _lake(tmp_path)
    reader = tracedb.connect(lake)
    assert _version(reader, "t", tables) == versions[OLD]
    assert not any(link.endswith(" (deleted)") for link in _held(lake))
    lakemod.add(NEW, lake, name="t", replace=True)
    deleted = [link for link in _held(lake) if link.endswith(" (deleted)")]
    assert any("/traces/" in link for link in deleted), "the replace deleted no file the reader holds"
    for _ in range(2):  # read again after the replace: still the old version, whole, and u
        assert _version(reader, "t", tables) == versions[OLD]
        assert _version(reader, "u", tables) == versions[OTHER]
    assert reader.report("summary", trace="t").main.rows
    reader.close()
    with tracedb.connect(lake) as fresh:
        assert _version(fresh, "t", tables) == versions[NEW]


def test_a_reader_that_cannot_hold_its_files_says_which_trace_changed(tmp_path, monkeypatch, tables, versions):
    """Where the process may not hold the files open it reads by path: a replace since it opened is
    one line naming the trace, for SQL and reports alike, never rows of two versions."""
    monkeypatch.setattr(snapshot, "_room_for", lambda count: False)
    lake = _lake(tmp_path)
    reader = tracedb.connect(lake)
    assert not reader._snapshot.pinned
    assert _version(reader, "t", tables) == versions[OLD]
    lakemod.add(NEW, lake, name="t", replace=True)
    for read in (lambda: reader.sql("SELECT count(*) FROM kernels"), lambda: reader.report("summary", trace="u")):
        with pytest.raises(tracedb.TracedbError) as caught:
            read()
        assert str(caught.value) == (f"{lake}: trace 't' changed since this connection opened the lake "
                                     "(a load replaced or removed it): connect again")
    reader.close()


# A replace that stops before each of its renames until the test lets it go on: it writes a byte
# to the ready pipe and waits for one on the go pipe (no sleep).
HELD_AT_EACH_RENAME = """
import os, sys
from tracedb import lake
ready, go = int(sys.argv[1]), int(sys.argv[2])
real = os.rename
def rename(src, dst):
    os.write(ready, b"1")
    os.read(go, 1)
    return real(src, dst)
os.rename = rename
lake.add(sys.argv[3], sys.argv[4], name="t", replace=True)
"""


def test_readers_opened_at_each_rename_of_a_replace_each_read_one_whole_version(tmp_path, tables, versions):
    """A reader opened before each rename of a replace (the writer is held there, a real process):
    read after the replace has ended and deleted the old files, each gives the old version of t
    whole, or no t (opened while t was away), or the new version whole, in that order, and u
    whole; a Parquet file missing or a changed trace is a failure."""
    lake = _lake(tmp_path)
    ready_r, ready_w = os.pipe()
    go_r, go_w = os.pipe()
    writer = subprocess.Popen([sys.executable, "-c", HELD_AT_EACH_RENAME, str(ready_w), str(go_r), str(NEW), str(lake)],
                              stderr=subprocess.PIPE, text=True, pass_fds=(ready_w, go_r))
    os.close(ready_w)
    os.close(go_r)
    readers = []
    try:
        with os.fdopen(ready_r, "rb", buffering=0) as ready, os.fdopen(go_w, "wb", buffering=0) as go:
            while ready.read(1):  # the writer is held before a rename; empty once it has ended
                readers.append(tracedb.connect(lake))
                go.write(b"1")
        _, err = writer.communicate(timeout=300)
        assert writer.returncode == 0, err[-2000:]
        readers.append(tracedb.connect(lake))  # after the commit
        seen = []
        for reader in readers:
            assert _version(reader, "u", tables) == versions[OTHER]
            t = _version(reader, "t", tables)
            assert t in (versions[OLD], None, versions[NEW]), (len(seen), t)
            seen.append("away" if t is None else "old" if t == versions[OLD] else "new")
    finally:
        for reader in readers:
            reader.close()
        if writer.poll() is None:
            writer.kill()
    assert len(readers) > 10, "too few renames: the replace is not what this test holds"
    assert seen[0] == "old" and seen[-1] == "new", seen
    assert seen == sorted(seen, key=["old", "away", "new"].index), seen


def _replace_while_opening(monkeypatch, lake: Path, at_file: int) -> None:
    """Make the next reader's opening replace t by NEW (in this process, whole) just before it opens
    its at_file-th file of t."""
    real = snapshot.Snapshot._file
    calls = [0]

    def file(self, folder, path):
        if folder == "trace=t":
            calls[0] += 1
            if calls[0] == at_file:
                lakemod.add(NEW, lake, name="t", replace=True)
        return real(self, folder, path)

    monkeypatch.setattr(snapshot.Snapshot, "_file", file)


@pytest.mark.parametrize("at_file", [1, 4])
def test_a_replace_during_a_readers_opening_is_opened_again(tmp_path, monkeypatch, tables, versions, at_file):
    lake = _lake(tmp_path)
    _replace_while_opening(monkeypatch, lake, at_file)
    opened = []
    real_open = snapshot.Snapshot._open
    monkeypatch.setattr(snapshot.Snapshot, "_open",
                        lambda self, folders, tables_: opened.append(list(folders)) or real_open(self, folders, tables_))
    with tracedb.connect(lake) as reader:
        assert _version(reader, "t", tables) == versions[NEW]
        assert _version(reader, "u", tables) == versions[OTHER]
    assert opened == [["trace=t", "trace=u"], ["trace=t"]]  # t, changed while opened, opened again


def test_files_of_two_versions_are_caught_by_their_trace_ids(tmp_path, monkeypatch, tables, versions):
    """Were a replace to leave a trace's identity as it was (a file system whose times are coarse),
    the trace ids the files carry still tell the versions apart: the trace is opened again."""
    lake = _lake(tmp_path)
    first = {}
    real_identity = snapshot.identity
    monkeypatch.setattr(snapshot, "identity",
                        lambda lake_, folder: first.setdefault(folder, real_identity(lake_, folder)))
    _replace_while_opening(monkeypatch, lake, 4)
    with tracedb.connect(lake) as reader:
        assert _version(reader, "t", tables) == versions[NEW]
        assert _version(reader, "u", tables) == versions[OTHER]


def test_a_trace_that_never_holds_still_is_one_line(tmp_path, monkeypatch):
    lake = _lake(tmp_path)
    count = iter(range(10**6))
    monkeypatch.setattr(snapshot, "identity", lambda lake_, folder: (next(count),) * 4)
    with pytest.raises(tracedb.TracedbError) as caught:
        tracedb.connect(lake)
    assert str(caught.value) == (f"{lake.resolve()}: traces 't', 'u' changed {snapshot.TRIES} times while it was "
                                 "being opened: open the lake again")


def test_a_reader_raises_its_open_files_limit_to_hold_its_files(tmp_path, tables, versions):
    lake = _lake(tmp_path)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    low = len(os.listdir("/proc/self/fd")) + 20  # room for fewer files than a reader holds
    resource.setrlimit(resource.RLIMIT_NOFILE, (low, hard))
    try:
        with tracedb.connect(lake) as reader:
            assert reader._snapshot.pinned
            assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] > low
            assert _version(reader, "t", tables) == versions[OLD]
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_closed_reader_holds_no_file(tmp_path):
    lake = _lake(tmp_path)
    reader = tracedb.connect(lake)
    assert len(_held(lake)) > 2
    reader.close()
    assert _held(lake) == []


def test_a_reader_that_fails_to_open_holds_no_file(tmp_path):
    """A partition that is not Parquet fails the opening in one line, and the files opened before
    it are closed (a service that retries never runs out of file numbers)."""
    lake = _lake(tmp_path)
    bad = lake / "kernels" / "trace=u" / "data.parquet"
    bad.write_bytes(b"not parquet at all")
    for _ in range(3):
        with pytest.raises(tracedb.TracedbError) as caught:
            tracedb.connect(lake)
        assert str(caught.value).startswith(f"{bad.resolve()}: cannot read the lake: ")
        assert _held(lake) == []
