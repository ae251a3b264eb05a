"""Two loads of one trace name into a lake at once, as real processes held at the same point: both
have looked at the name and built their partition before either commits (a barrier of pipes the
test opens once both have built, no sleep). The name's writer lock makes them commit one after the
other: without --replace the later one fails in one line and leaves nothing; with --replace the
last to commit wins, whole."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

import tracedb
from tracedb import lake as lakemod

from conftest import KINETO

pytestmark = pytest.mark.skipif(os.name != "posix", reason="the name's lock is an flock")

# A tracedb command whose load stops once its partition is built, before its commit (where the
# name's lock is taken): it writes a byte to the ready pipe and waits for one on the go pipe.
HELD_AT_COMMIT = """
import os, sys
from tracedb import cli, partition
ready, go = int(sys.argv[1]), int(sys.argv[2])
real = partition.build
def build(*args, **kwargs):
    part = real(*args, **kwargs)
    os.write(ready, b"1")
    os.close(ready)
    os.read(go, 1)  # the test lets both writers on once both have built
    return part
partition.build = build
sys.argv = ["tracedb", *sys.argv[3:]]
cli.main()
"""

A, B = KINETO[0], KINETO[1]  # other content, the same --name X below


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _race(lake: Path, files: list[Path], *options: str) -> list[subprocess.CompletedProcess]:
    """`tracedb load FILE --name X --lake LAKE *options` for each file at once, each held before
    its commit until all have built; their results, in the order of files."""
    ready_r, ready_w = os.pipe()
    go_r, go_w = os.pipe()
    procs = []
    try:
        for f in files:
            argv = [str(ready_w), str(go_r), "load", str(f), "--name", "X", "--lake", str(lake), *options]
            procs.append(subprocess.Popen([sys.executable, "-c", HELD_AT_COMMIT, *argv], stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True, pass_fds=(ready_w, go_r)))
    finally:
        os.close(ready_w)
        os.close(go_r)
    with os.fdopen(ready_r, "rb") as ready:
        built = ready.read()  # until every writer has written its byte and closed (or died)
    try:
        with os.fdopen(go_w, "wb") as go:
            go.write(b"1" * len(files))
    except BrokenPipeError:
        pass  # every writer ended before its commit: told below
    outputs = [p.communicate(timeout=300) for p in procs]
    done = [subprocess.CompletedProcess(p.args, p.returncode, *out) for p, out in zip(procs, outputs)]
    assert built == b"1" * len(files), [d.stderr[-2000:] for d in done]  # both were held before committing
    return done


def _partitions(lake: Path) -> dict[str, tuple[set[int], int]]:
    """table -> (the trace ids in its partition of X, its row count), read from the files as any
    engine would, and every table directory's entries checked: X's whole partitions only."""
    out = {}
    for table_dir in sorted(p for p in lake.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))):
        entries = sorted(os.listdir(table_dir))
        assert entries in ([], ["trace=X"]), (table_dir.name, entries)  # no partial or stray partition
        if entries:
            assert os.listdir(table_dir / "trace=X") == ["data.parquet"], table_dir.name
            with duckdb.connect() as con:
                ids, rows = con.execute("SELECT list(DISTINCT trace_id), count(*) FROM read_parquet(?, "
                                        "hive_partitioning = false)",
                                        [str(table_dir / "trace=X" / "data.parquet")]).fetchone()
            out[table_dir.name] = (set(ids), rows)
    return out


@pytest.fixture(scope="module")
def alone(tmp_path_factory):
    """Each file loaded as X alone into a lake of its own: the rows per table a whole X holds."""
    made = {}
    for f in (A, B):
        lake = tmp_path_factory.mktemp("alone") / "lake"
        lakemod.add(f, lake, name="X")
        made[f] = {table: rows for table, (_, rows) in _partitions(lake).items()}
    assert made[A] != made[B]
    return made


def _one_whole_x(lake: Path, source: Path, alone) -> None:
    """The lake holds one trace, X, whole: the rows of source alone, every table's partition of
    the trace id the traces table gives, that id the only one claimed, and no writer's leftover."""
    with tracedb.connect(lake) as db:
        traces = db.sql("SELECT name, sha256, trace_id FROM traces").rows
        tables = {r[0] for r in db.sql("SELECT table_name FROM duckdb_tables() UNION ALL "
                                       "SELECT view_name FROM duckdb_views()").rows}
    assert [t[:2] for t in traces] == [("X", _sha(source))]
    trace_id = traces[0][2]
    parts = _partitions(lake)
    assert {table: rows for table, (_, rows) in parts.items()} == alone[source]
    assert all(ids == {trace_id} for ids, _ in parts.values()), parts
    assert sorted(os.listdir(lake / lakemod.IDS)) == [str(trace_id)]
    assert not (lake / lakemod.INCOMING).exists() and not (lake / lakemod.TRASH).exists()
    assert lakemod.LOCKS not in tables and "_locks" not in parts  # the lock directory is no table


def test_two_loads_of_one_name_at_once_one_fails_in_one_line(tmp_path, alone):
    lake = tmp_path / "lake"
    lakemod.create(lake)
    runs = _race(lake, [A, B])
    assert sorted(r.returncode for r in runs) == [0, 1], [r.stderr for r in runs]
    winner, loser = (A, B) if runs[0].returncode == 0 else (B, A)
    won, lost = (runs[0], runs[1]) if winner is A else (runs[1], runs[0])
    assert " X " in won.stdout and "loaded" in won.stdout and "Traceback" not in won.stderr
    errors = [line for line in lost.stderr.splitlines() if line.startswith("tracedb: error: ")]
    assert errors == [f"tracedb: error: {loser}: a trace named 'X' already exists in the lake {lake}; "
                      "choose another --name or use --replace"], lost.stderr
    assert "Traceback" not in lost.stderr
    assert [line for line in lost.stderr.splitlines() if line not in errors] == []  # one line for the file
    _one_whole_x(lake, winner, alone)  # the loser's partition, id and working directory are gone


def test_two_replaces_of_one_name_at_once_the_last_wins_whole(tmp_path, alone):
    lake = tmp_path / "lake"
    lakemod.add(A, lake, name="X")  # a version to replace: both writers take it away in turn
    runs = _race(lake, [A, B], "--replace")
    assert [r.returncode for r in runs] == [0, 0], [r.stderr for r in runs]
    assert all("Traceback" not in r.stderr and " X " in r.stdout and "replaced" in r.stdout for r in runs)
    # both replaced (the first X, then each other's): the lake holds the file of the one that
    # committed last, whole, and only its id
    with tracedb.connect(lake) as db:
        (sha,) = db.sql("SELECT sha256 FROM traces").rows[0]
    last = A if sha == _sha(A) else B
    _one_whole_x(lake, last, alone)


def test_four_replaces_of_one_name_at_once_leave_one_trace_and_one_id(tmp_path, alone):
    """Four writers replace X at once, all held until all have built: each commits in turn and
    gives back the id of the version it replaced; the last one's version stands, whole, with the
    only id left in _ids, and no writer's directory remains."""
    lake = tmp_path / "lake"
    lakemod.add(A, lake, name="X")
    runs = _race(lake, [A, B, A, B], "--replace")
    assert [r.returncode for r in runs] == [0] * 4, [r.stderr for r in runs]
    assert all("replaced" in r.stdout for r in runs)
    # before any reader (which would recover a dead writer's leftovers): the writers left nothing
    assert len(os.listdir(lake / lakemod.IDS)) == 1
    assert not (lake / lakemod.INCOMING).exists() and not (lake / lakemod.TRASH).exists()
    with tracedb.connect(lake) as db:
        (sha,) = db.sql("SELECT sha256 FROM traces").rows[0]
    _one_whole_x(lake, A if sha == _sha(A) else B, alone)


def test_the_same_file_twice_at_once_is_loaded_once(tmp_path, alone):
    """Identical content under one name at once: one loads, the other is skipped (as it is when it
    comes after), its id given back."""
    lake = tmp_path / "lake"
    lakemod.create(lake)
    runs = _race(lake, [A, A])
    assert [r.returncode for r in runs] == [0, 0], [r.stderr for r in runs]
    statuses = sorted("skipped" if "skipped" in r.stdout else "loaded" for r in runs)
    assert statuses == ["loaded", "skipped"], [r.stdout for r in runs]
    _one_whole_x(lake, A, alone)


def test_a_held_name_lock_keeps_recover_off_and_readers_never_wait(tmp_path):
    """A dead writer's replace journal of X while a writer holds X's lock: a reader opens at once
    (recover tries the lock, never waits) and leaves the journal; once the lock is free, the next
    reader undoes the dead replace, X's old version back."""
    lake = tmp_path / "lake"
    lakemod.add(A, lake, name="X")
    old = _sha(A)
    dead = int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True, check=True).stdout)
    folder = lakemod.folder_of("X")
    with duckdb.connect() as con:
        (old_id,) = con.execute("SELECT trace_id FROM read_parquet(?)",
                                [str(lake / "traces" / folder / "data.parquet")]).fetchone()
    trash = lake / lakemod.TRASH / "deadwriter"
    trash.mkdir(parents=True)
    os.rename(lake / "traces" / folder, trash / "traces")  # the dead writer took X away, then died
    journal = {"pid": dead, "where": lakemod.scratch.where(), "phase": "away", "folder": folder,
               "old_id": old_id, "new_id": None}
    (trash / lakemod.JOURNAL).write_text(json.dumps(journal))
    with lakemod._name_lock(lake, folder) as held:  # a live writer committing X
        assert held
        with tracedb.connect(lake) as db:
            assert db.sql("SELECT count(*) FROM traces").rows == [(0,)]  # X is away: not seen, not waited for
        assert (trash / "traces").is_dir()  # left to a later recover
    with tracedb.connect(lake) as db:
        assert db.sql("SELECT sha256 FROM traces").rows == [(old,)]
    assert not (lake / lakemod.TRASH).exists()


def _dead_pid() -> int:
    return int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True, check=True).stdout)


def test_a_load_after_a_replace_killed_holding_the_name_sees_the_old_version(tmp_path):
    """A replace killed after taking X's traces directory away (X seems absent): a plain load of X
    that takes the name's lock next settles the dead replace first, so it finds X committed and
    fails in one line, rather than loading over it."""
    lake = tmp_path / "lake"
    lakemod.add(A, lake, name="X")
    folder = lakemod.folder_of("X")
    trash = lake / lakemod.TRASH / f"{_dead_pid()}-{lakemod.scratch.where()}-{'0' * 32}"
    trash.mkdir(parents=True)
    os.rename(lake / "traces" / folder, trash / "traces")
    (trash / lakemod.JOURNAL).write_text(json.dumps({
        "pid": _dead_pid(), "where": lakemod.scratch.where(), "phase": "away", "folder": folder,
        "old_id": None, "new_id": None}))
    recover = lakemod.recover
    try:
        lakemod.recover = lambda lake_, **kw: None  # as if it came while the dead writer still held the lock
        with pytest.raises(tracedb.TracedbError, match="a trace named 'X' already exists"):
            lakemod.add(B, lake, name="X")
    finally:
        lakemod.recover = recover
    with tracedb.connect(lake) as db:
        assert db.sql("SELECT sha256 FROM traces").rows == [(_sha(A),)]


def test_a_dead_writers_id_is_kept_while_its_name_is_being_replaced(tmp_path):
    """A dead writer left its .incoming directory after committing X with id N; while a live
    writer holds X's lock (its replace has X's traces directory away, so N would seem unused), a
    reader's recover leaves the directory and N; once the lock is free, the directory goes and N
    stays, X's id."""
    lake = tmp_path / "lake"
    lakemod.add(A, lake, name="X")
    folder = lakemod.folder_of("X")
    with tracedb.connect(lake) as db:
        (trace_id,) = db.sql("SELECT trace_id FROM traces").rows[0]
    entry = lake / lakemod.INCOMING / f"{_dead_pid()}-{lakemod.scratch.where()}-{'1' * 32}"
    entry.mkdir(parents=True)
    (entry / lakemod.JOURNAL).write_text(json.dumps({"pid": _dead_pid(), "where": lakemod.scratch.where(),
                                                     "folder": folder, "trace_id": trace_id}))
    (lake / lakemod.IDS / str(trace_id)).write_text(json.dumps({"folder": folder, "holder": entry.name}))
    with lakemod._name_lock(lake, folder) as held:
        assert held
        away = lake / "traces" / folder
        os.rename(away, tmp_path / "away")  # the live writer's replace, traces away
        lakemod.recover(lake)
        assert entry.is_dir() and (lake / lakemod.IDS / str(trace_id)).exists()
        os.rename(tmp_path / "away", away)  # its replace undone
    lakemod.recover(lake)
    assert not (lake / lakemod.INCOMING).exists()
    assert os.listdir(lake / lakemod.IDS) == [str(trace_id)]


def test_recovering_this_processs_leftovers_spares_a_load_running_in_a_thread(tmp_path, monkeypatch):
    """recover(mine=True) (what the command runs after an interrupt) takes this process's working
    directories for a dead writer's, except those of a load still running in another thread."""
    import threading

    from tracedb import partition

    lake = tmp_path / "lake"
    lakemod.create(lake)
    built, go = threading.Event(), threading.Event()
    real = partition.build

    def build(*args, **kwargs):
        part = real(*args, **kwargs)
        built.set()
        go.wait()
        return part

    monkeypatch.setattr(partition, "build", build)
    outcome = []
    worker = threading.Thread(target=lambda: outcome.append(lakemod.add(A, lake, name="X")))
    worker.start()
    try:
        assert built.wait(300)
        (staging,) = (lake / lakemod.INCOMING).iterdir()
        ids = os.listdir(lake / lakemod.IDS)
        lakemod.recover(lake, mine=True)
        assert staging.is_dir() and os.listdir(lake / lakemod.IDS) == ids
    finally:
        go.set()
        worker.join()
    assert outcome and outcome[0].status == "loaded"
    with tracedb.connect(lake) as db:
        assert db.sql("SELECT trace_id FROM traces").rows == [(int(ids[0]),)]
    assert not (lake / lakemod.INCOMING).exists()


def test_a_load_after_this_processs_own_replace_failed_to_settle_sees_the_old_version(tmp_path, monkeypatch):
    """A replace whose commit and whose settling both fail (a full disk) leaves X's old version in
    its trash, in a process that goes on (a notebook, a Dask worker): a plain load of X there
    settles that trash under the name's lock first, finds X and fails in one line; X is the old
    version, whole."""
    import errno

    lake = tmp_path / "lake"
    lakemod.add(A, lake, name="X")
    real_rename = os.rename

    def rename(src, dst, *args, **kwargs):
        if str(dst).endswith(os.path.join("traces", "trace=X")):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_rename(src, dst, *args, **kwargs)

    real_rewrite = lakemod._rewrite_journal

    def rewrite(directory, record):  # the undo's journal, once the new version's directories went
        if record.get("phase") == "back":
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_rewrite(directory, record)

    monkeypatch.setattr(lakemod.os, "rename", rename)
    monkeypatch.setattr(lakemod, "_rewrite_journal", rewrite)
    with pytest.raises(tracedb.TracedbError, match="No space left on device"):
        lakemod.add(B, lake, name="X", replace=True)
    monkeypatch.undo()
    assert list((lake / lakemod.TRASH).iterdir()) and not (lake / "traces" / "trace=X").exists()
    with pytest.raises(tracedb.TracedbError, match="a trace named 'X' already exists"):
        lakemod.add(KINETO[2], lake, name="X")
    assert not (lake / lakemod.TRASH).exists()
    with tracedb.connect(lake) as db:
        assert db.sql("SELECT sha256 FROM traces").rows == [(_sha(A),)]


def _waiting_for_lock(path: Path) -> bool:
    """Whether some process waits for an flock on the file (a state the kernel shows in
    /proc/locks: a blocked request is listed with "->", the file as MAJOR:MINOR:INODE in hex)."""
    st = path.stat()
    file = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    return any(fields[1] == "->" and fields[6] == file
               for fields in (line.split() for line in Path("/proc/locks").read_text().splitlines()) if len(fields) > 6)


@pytest.mark.skipif(not Path("/proc/locks").exists(), reason="reads the kernel's locks from /proc/locks")
def test_a_task_commits_only_while_its_load_stands_by_it(tmp_path):
    """A load whose tasks run elsewhere (Dask) hands them a token: once it takes the token away
    (its scheduler died), a task that reaches its commit leaves nothing in the lake, and taking it
    away waits for a commit under way, so what the lake holds then is all the tasks will put."""
    import threading

    lake = tmp_path / "lake"
    lakemod.create(lake)
    token = lakemod.open_run(lake)
    lakemod.end_run(token)
    with pytest.raises(tracedb.TracedbError, match="not loaded: the load that asked for it gave its tasks up"):
        lakemod.add(KINETO[0], lake, run=str(token))
    with tracedb.connect(lake) as db:
        assert db.sql("SELECT count(*) FROM traces").rows == [(0,)]
    assert list((lake / "_ids").iterdir()) == []  # the id it claimed went back
    # a commit under way holds the token: taking it away waits for the commit to end
    token = lakemod.open_run(lake)
    with lakemod._run_standing(str(token)) as standing:
        assert standing
        ending = threading.Thread(target=lakemod.end_run, args=(token,))
        ending.start()
        for _ in range(6_000):  # polled for a state: end_run blocked on the token's lock (a bound, not a wait)
            if not ending.is_alive() or _waiting_for_lock(token):
                break
            ending.join(0.01)
        assert ending.is_alive() and _waiting_for_lock(token) and token.exists()
    ending.join()
    assert not token.exists()
    # a token standing: the task commits
    token = lakemod.open_run(lake)
    assert lakemod.add(KINETO[0], lake, run=str(token)).status == "loaded"
    lakemod.end_run(token)


def test_the_token_of_a_killed_load_goes_with_the_next_and_a_live_one_stays(tmp_path):
    """A load's token names its process: the next load removes the token of one that was killed,
    whose tasks then commit nothing, and leaves a live one's."""
    import signal
    import subprocess
    import sys

    lake = tmp_path / "lake"
    lakemod.create(lake)
    holder = ("import sys; from pathlib import Path; from tracedb import lake; "
              "print(lake.open_run(Path(sys.argv[1])), flush=True); sys.stdin.read()")
    loads = [subprocess.Popen([sys.executable, "-c", holder, str(lake)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True) for _ in range(2)]
    try:
        killed, live = [Path(p.stdout.readline().strip()) for p in loads]  # each has its token now
        assert killed.exists() and live.exists()
        loads[0].send_signal(signal.SIGKILL)
        loads[0].wait()
        mine = lakemod.open_run(lake)
        assert not killed.exists() and live.exists() and mine.exists()
        with pytest.raises(tracedb.TracedbError, match="gave its tasks up"):
            lakemod.add(KINETO[0], lake, run=str(killed))  # a task of the killed load
        assert lakemod.add(KINETO[0], lake, run=str(live)).status == "loaded"
        lakemod.end_run(mine)
        assert not mine.exists() and sorted(p.name for p in (lake / lakemod.LOCKS).glob("*run*")) == [live.name]
    finally:
        for p in loads:
            p.kill()
            p.wait()
    lakemod.end_run(lakemod.open_run(lake))  # the second load's token, its load gone, goes too
    assert list((lake / lakemod.LOCKS).glob("*run*")) == []
