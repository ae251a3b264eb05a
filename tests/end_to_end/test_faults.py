"""Kills, SIGTERM and what a dead command leaves: workers die with the process that started them,
SIGTERM is handled as Ctrl-C, and the scratch folders and DuckDB spill folder a killed load left
are removed by the next command that opens the database (never while their owner lives)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

import tracedb
from conftest import CORPUS, KINETO, big_kineto_trace, last_line, run_cli, start_until
from tracedb import scratch
from tracedb.db import open_db

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc; signals as on Linux")


@pytest.fixture(scope="module")
def big_traces(tmp_path_factory):
    """Two traces of a load of a second or more each, the second four times the first: it is still
    being read when the first is in."""
    folder = tmp_path_factory.mktemp("faults")
    return [big_kineto_trace(folder / "big0.json", 50_000), big_kineto_trace(folder / "big1.json", 200_000)]


def _children(pid: int) -> list[int]:
    """Processes whose parent is pid (zombies, already dead, left out)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            out.append(int(entry))
    return out


def _gone(pids: list[int], within: float = 60.0) -> list[int]:
    """Wait for the processes to end (a state); those still running after within seconds."""
    deadline = time.monotonic() + within
    alive = list(pids)
    while alive and time.monotonic() < deadline:
        alive = [p for p in alive if Path(f"/proc/{p}").exists()
                 and Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"]
        if alive:
            time.sleep(0.05)
    return alive


def _folders_of(pid: int) -> list[str]:
    return [d for d in os.listdir(tempfile.gettempdir()) if d.startswith("tracedb-") and f"-{pid}-" in d]


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_a_killed_parallel_load_leaves_no_process_and_no_folder(tmp_path, big_traces, sig):
    db = tmp_path / "t.duckdb"
    run_cli("load", KINETO[0], "--name", "kept", db=db, check=True)
    proc, _ = start_until(["load", *big_traces, "--jobs", "2", "--db", db], "typing events")
    workers = _children(proc.pid)
    assert len(workers) >= 2, "the workers had not started"
    proc.send_signal(sig)
    _, rest = proc.communicate(timeout=120)  # to the end of its standard error, whoever holds it
    assert _gone(workers) == [], "workers outlived the load that started them"
    # nothing is printed once the command is gone: multiprocessing's resource tracker (one of its
    # children) unlinks what the killed command left without a word
    assert b"leaked" not in rest and b"resource_tracker" not in rest, rest[-2000:]
    if sig == signal.SIGTERM:  # handled as Ctrl-C: its own cleanup, one line
        assert proc.returncode == 143 and _folders_of(proc.pid) == []
    run_cli("ls", db=db, process=True, check=True)  # the next command: what the killed one left goes
    assert _folders_of(proc.pid) == []
    assert not (tmp_path / "t.duckdb.tmp").exists()
    with open_db(db, read_only=True) as con:
        assert con.execute("SELECT list(name) FROM traces").fetchone()[0] == ["kept"]


def test_sigterm_is_ctrl_c_at_every_stage(tmp_path, big_traces):
    db = tmp_path / "t.duckdb"
    run_cli("load", KINETO[0], "--name", "kept", db=db, check=True)
    for stage in ("reading", "typing events", "deriving facts"):
        proc, seen = start_until(["load", big_traces[0], "--db", db], f"big0.json: {stage}")
        proc.send_signal(signal.SIGTERM)
        _, rest = proc.communicate(timeout=120)
        assert proc.returncode == 143, stage
        assert last_line(seen + rest) == "tracedb: interrupted, database unchanged"
        assert b"Traceback" not in seen + rest
        assert _folders_of(proc.pid) == []
        with open_db(db, read_only=True) as con:
            assert con.execute("SELECT list(name) FROM traces").fetchone()[0] == ["kept"]


@pytest.mark.parametrize("stage", ["typing events", "deriving facts", "1/2 files"])
def test_ctrl_c_to_a_parallel_load_prints_one_line_and_no_worker_traceback(tmp_path, big_traces, stage):
    """A terminal's Ctrl-C reaches the whole process group, workers included."""
    db = tmp_path / "t.duckdb"
    proc, seen = start_until(["load", *big_traces, "--jobs", "2", "--db", db], stage, start_new_session=True)
    os.killpg(proc.pid, signal.SIGINT)
    _, rest = proc.communicate(timeout=120)
    printed = seen + rest
    assert proc.returncode == 130
    assert b"Traceback" not in printed and b"KeyboardInterrupt" not in printed
    assert last_line(printed).startswith("tracedb: interrupted")


def test_leftovers_of_dead_processes_go_and_of_live_ones_stay(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    dead_pid = int(dead.stdout)
    left = Path(tempfile.mkdtemp(prefix=f"tracedb-load-{dead_pid}-{scratch.where()}-"))
    (left / "segment-0.json").write_text("[]")
    elsewhere = Path(tempfile.mkdtemp(prefix=f"tracedb-load-{dead_pid}-0000abcd-"))  # another host's
    live = scratch.make("load")  # this process's own
    db = tmp_path / "t.duckdb"
    spill = tmp_path / "t.duckdb.tmp"
    try:
        open_db(db).close()
        spill.mkdir()
        (spill / "duckdb_temp_storage-0.tmp").write_bytes(b"\0" * 1024)
        # a process that still has a file of the spill folder open (a DuckDB shell spilling, say):
        # a reader leaves the folder; it removes dead owners' scratch folders
        holder = subprocess.Popen([sys.executable, "-c", "import sys; f = open(sys.argv[1], 'rb'); print('open', "
                                   "flush=True); sys.stdin.read()", str(spill / "duckdb_temp_storage-0.tmp")],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            assert holder.stdout.readline().strip() == "open"
            with open_db(db, read_only=True):
                assert not left.exists() and live.exists() and spill.exists() and elsewhere.exists()
        finally:
            holder.communicate("")
        # once nothing holds it, a read-only open holds the file (no writer runs): it is a killed writer's
        with open_db(db, read_only=True):
            assert not spill.exists()
        spill.mkdir()
        with open_db(db):  # a writer holds the only lock: the spill folder is a killed writer's
            assert not spill.exists()
            spill.mkdir()  # ... but not one of this process's own connections to the file
            with open_db(db):
                assert spill.exists()
    finally:
        scratch.remove_dead()
        live.rmdir()
        elsewhere.rmdir()


def test_a_lake_reader_never_closed_leaves_no_folder(tmp_path):
    lake = tmp_path / "lake"
    run_cli("load", KINETO[0], "--lake", lake, check=True)
    code = ("import gc, os, tempfile, tracedb, sys\n"
            "db = tracedb.connect(sys.argv[1])\n"
            "db.sql('SELECT count(*) FROM traces')\n"
            "mine = [d for d in os.listdir(tempfile.gettempdir()) if f'-{os.getpid()}-' in d]\n"
            "assert mine, 'no scratch folder'\n"
            "del db; gc.collect()\n"
            "print(len([d for d in os.listdir(tempfile.gettempdir()) if f'-{os.getpid()}-' in d]))\n")
    out = subprocess.run([sys.executable, "-c", code, str(lake)], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "0"
    kept = subprocess.run([sys.executable, "-c", code.replace("del db; gc.collect()\n", ""), str(lake)],
                          capture_output=True, text=True, check=True)
    assert kept.stdout.strip() == "1"  # while the reader lives its folder stays ...
    pid_line = "import os; print(os.getpid())\n"
    ended = subprocess.run([sys.executable, "-c", code.replace("del db; gc.collect()\n", "") + pid_line, str(lake)],
                           capture_output=True, text=True, check=True)
    assert _folders_of(int(ended.stdout.split()[-1])) == []  # ... and goes when the interpreter exits
    assert tracedb.connect(lake).sql("SELECT count(*) FROM traces").rows == [(1,)]


@pytest.fixture
def small_disk(tmp_path):
    """A folder on a tmpfs of a chosen size (mounting needs root; skipped where it is refused)."""
    mounts = []

    def make(size: str) -> Path:
        folder = tmp_path / f"disk-{len(mounts)}"
        folder.mkdir()
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.strip() or done.returncode}")
        mounts.append(folder)
        return folder

    yield make
    for folder in mounts:
        subprocess.run(["umount", str(folder)], capture_output=True)


def test_a_lake_on_a_read_only_or_full_file_system_is_one_line_per_file(small_disk, tmp_path):
    """A lake its load cannot write: each file is one line naming it and what is wrong, exit 1, no
    traceback; the read-only lake still reads, and the full one holds nothing of the loads."""
    disk = small_disk("4m")
    lake = disk / "lake"
    run_cli("load", KINETO[0], "--name", "t", "--lake", lake, check=True)
    assert subprocess.run(["mount", "-o", "remount,ro", str(disk)], capture_output=True).returncode == 0
    proc = run_cli("load", KINETO[1], "--name", "t", "--lake", lake, "--replace")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.splitlines() == [f"tracedb: error: {KINETO[1]}: cannot add it to the lake {lake}: "
                                        "Read-only file system"]
    with tracedb.connect(lake) as db:
        assert db.sql("SELECT name FROM traces").rows == [("t",)]
    full = small_disk("64k") / "lake"
    proc = run_cli("load", KINETO[3], KINETO[6], "--lake", full)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    errors = proc.stderr.splitlines()
    assert sorted(e.split(": ")[2] for e in errors[:2]) == sorted([str(KINETO[3]), str(KINETO[6])])
    assert all("No space left on device" in e for e in errors[:2]), proc.stderr
    assert sorted(p.name for p in full.iterdir()) in (["_ids", "tracedb-lake.json"],
                                                      ["_ids", "_locks", "tracedb-lake.json"])
    assert list((full / "_ids").iterdir()) == []


def test_a_full_disk_at_any_moment_of_a_load_is_one_line(small_disk):
    """The disk fills while the load writes its rows or during the commit's checkpoint (after which
    DuckDB invalidates the database): each is one line, exit 1, and the database opens afterwards
    with every trace committed and nothing of the failed one; on a disk large enough it loads."""
    trace = CORPUS / "mi300x_xdit_sd3.5_compiled.json.gz"
    if not trace.exists():
        pytest.skip(f"{trace} is not here")
    moments = []
    # sizes past the kept trace's database (3.5 MB): its rows fill the first two, the commit's
    # checkpoint the next two, and the last holds it all (DuckDB 2.0; the check below says when
    # another version moves these)
    for size in ("5m", "8m", "12m", "16m", "24m"):
        disk = small_disk(size)
        db = disk / "t.duckdb"
        run_cli("load", KINETO[0], "--name", "kept", db=db, check=True)
        proc = run_cli("load", trace, KINETO[1], "--jobs", "1", db=db, process=True)
        lines = proc.stderr.strip().splitlines()
        assert "Traceback" not in proc.stderr, (size, proc.stderr[-2000:])
        with open_db(db, read_only=True) as con:
            names = [r[0] for r in con.execute("SELECT name FROM traces ORDER BY trace_id").fetchall()]
        if proc.returncode == 0:
            assert names == ["kept", "mi300x_xdit_sd3.5_compiled", KINETO[1].name.split(".")[0]]
            moments.append("loaded")
            continue
        assert proc.returncode == 1 and names[:1] == ["kept"], (size, names)
        assert all(line.startswith("tracedb: error: ") for line in lines) and len(lines) <= 2, lines
        assert "No space left on device" in lines[0] or "disk space" in lines[0], lines  # spilling hit it
        moments.append("checkpoint" if "checkpoint" in lines[0] else "rows")
    assert set(moments) == {"rows", "checkpoint", "loaded"}, f"choose the sizes again: {moments}"


# A replace of t, as the command line runs it, stopped at its step-th write to the lake (a
# directory made, a file opened to write, a rename, a removal; of the partition's own directories,
# all alike, none), just before it: "kill" is SIGKILL there (nothing of Python's cleanup runs),
# "int" and "term" send the process SIGINT or SIGTERM there (its own handling runs). It says on
# stderr when it reached the step.
AT_STEP = """
import os, pickle, shutil, signal, sys, time, types
from pathlib import Path
from tracedb import cli, fanout, lake, partition  # what a load of a lake imports, once
from tracedb import lake as lakemod
KEPT = Path(sys.argv[1])  # the partition the build gave once, and how many writes it made
NOW = time.time()  # the clock of every command's lake, held still: each replace from one lake claims one id
def reused_build(seen, counting):
  # partition.build, whole until a command has finished it, then a copy of what it built (the
  # same files, for the same id): what the later steps stop is the commit, not the load (0.3 s)
  real = partition.build
  def build(path, into, **kw):
      if (KEPT / "built").exists():
          counting[0] = False
          try:
              shutil.copytree(KEPT / "p", into)
          finally:
              counting[0] = True
          part = pickle.loads((KEPT / "built").read_bytes())
          part.directory = Path(into)
          return part
      before = seen[0]
      part = real(path, into, **kw)
      shutil.copytree(into, KEPT / "p")
      (KEPT / "steps").write_text(str(seen[0] - before))
      (KEPT / "built.partial").write_bytes(pickle.dumps(part))
      os.rename(KEPT / "built.partial", KEPT / "built")
      return part
  held = types.SimpleNamespace(**{n: getattr(time, n) for n in dir(time) if not n.startswith("_")})
  held.time = lambda: NOW
  lakemod.time = held
  partition.build = build
def at_step(new, lake, step, how):
  lake = os.path.realpath(lake)
  step = int(step)
  seen, counting = [0], [True]
  if (KEPT / "built").exists():  # the build's own writes are not made again
      step -= int((KEPT / "steps").read_text())
  reused_build(seen, counting)
  def writes(event, args):
      if event == "open":
          mode, flags = args[1], args[2]
          return (isinstance(mode, str) and any(c in mode for c in "wxa+")) or \
              (isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT))
      return event in ("os.mkdir", "os.rename", "os.remove", "os.rmdir", "shutil.rmtree", "os.link")
  def hook(event, args):
      if not counting[0] or not args or not isinstance(args[0], (str, bytes, os.PathLike)) or not writes(event, args):
          return
      path = os.path.realpath(os.fsdecode(args[0]))
      if not path.startswith(lake + os.sep) or (event == "os.mkdir" and "/p/" in path[len(lake):]):
          return
      seen[0] += 1
      if seen[0] == step:
          sys.stderr.write(f"reached {event} {path[len(lake):]}\\n")
          sys.stderr.flush()
          if how == "kill":
              os._exit(9)
          os.kill(os.getpid(), signal.SIGINT if how == "int" else signal.SIGTERM)
  sys.addaudithook(hook)
  sys.argv = ["tracedb", "load", new, "--name", "t", "--lake", lake, "--replace"]
  cli.run()
# One process per step would spend a quarter of each step starting Python and importing tracedb:
# this one imports it once and forks a fresh command for each request on stdin (NEW LAKE STEP HOW
# STDERR_FILE), answering with its exit code. It opens no database itself, so nothing but its
# one thread is forked.
for line in sys.stdin:
    new, lake, step, how, err = line.split()
    pid = os.fork()
    if pid == 0:
        fd = os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(fd, 2)
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null, 1)
        at_step(new, lake, step, how)  # the command's exit ends this copy as it ends a process
        sys.exit(0)
    print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), flush=True)
"""


def _lake_state(path: Path) -> tuple[str, int]:
    """(sha256, kernels) of the trace named t, read the way every reader reads a lake."""
    with tracedb.connect(path) as lake:
        rows = lake.sql("SELECT t.sha256, (SELECT count(*) FROM kernels k WHERE k.trace_id = t.trace_id) "
                        "FROM traces t WHERE t.name = 't'").rows
    assert len(rows) == 1, rows
    return rows[0]


def _leftovers(path: Path) -> list[str]:
    """What a writer left in the lake beyond whole traces: its working directories, and the ids
    in _ids that no committed trace holds (read from the files, without opening the lake, which
    would recover them)."""
    import pyarrow.parquet as pq

    from tracedb import snapshot

    left = [d for d in (".trash", ".incoming") if (path / d).exists()]
    committed = set()
    for folder in snapshot.committed(path):
        with pq.ParquetFile(path / "traces" / folder / "data.parquet") as file:  # no database started
            committed |= set(file.read(columns=["trace_id"]).column("trace_id").to_pylist())
    ids = {int(p.name) for p in (path / "_ids").iterdir()}
    return left + [f"id {i}" for i in sorted(ids - committed)]


def _replace_stopped_at(commands, tmp_path, pristine, path, new, step, how, versions, old_sha, outcomes) -> list[str]:
    """One step of the test below: the replace run by commands (AT_STEP) from the lake holding the
    old version, stopped at its step-th write, and what it left checked; the "reached" line."""
    shutil.rmtree(path, ignore_errors=True)
    shutil.copytree(pristine, path)  # each step starts from the lake holding the old version
    signal_ = "kill" if how == "kill" else ("int", "term")[step % 2]
    err = tmp_path / "stderr.txt"
    commands.stdin.write(f"{new} {path} {step} {signal_} {err}\n")
    commands.stdin.flush()
    returncode, stderr = int(commands.stdout.readline()), err.read_text()
    at = [line for line in stderr.splitlines() if line.startswith("reached ")]
    assert "Traceback" not in stderr, (step, stderr[-2000:])
    if how == "kill":
        assert returncode == (9 if at else 0), (step, stderr[-1000:])
    else:
        assert returncode in (0, 130, 143) and (at or returncode == 0), (step, stderr[-1000:])
        assert _leftovers(path) == [], (step, at, stderr[-1000:])  # before any reader recovers
    sha, kernels = _lake_state(path)  # the reader recovers what a killed writer left
    assert versions.get(sha) == kernels, (step, at, sha, kernels)
    if how == "signal" and returncode:  # what the command said it did is what it did
        said = stderr.splitlines()[-1]
        assert said == ("tracedb: interrupted; replaced: t (the other files were not loaded)" if sha != old_sha
                        else "tracedb: interrupted, lake unchanged"), (step, at, said)
    assert _leftovers(path) == [], (step, at)
    outcomes.add(sha)
    return at


@pytest.mark.parametrize("how", ["kill", "signal"])
def test_a_replace_stopped_at_any_write_keeps_a_whole_version_and_leaves_nothing(tmp_path, how):
    """A lake replace stopped at each of its writes to the lake in turn: killed (SIGKILL), the next
    reader finds the old version or the new one, whole, and recovers everything of the dead writer
    (no .trash, .incoming or unclaimed id); interrupted (SIGINT or SIGTERM, by turns), the command
    itself leaves nothing behind, and the lake holds one whole version. The steps up to the end of
    the partition's build run it whole; the later ones commit a copy of the partition it built
    (AT_STEP's reused_build), since what they stop is the commit."""
    from tracedb import lake as lakemod

    old, new = KINETO[0], KINETO[1]
    versions = {}
    for i, f in enumerate((old, new)):
        one = tmp_path / f"one{i}"
        lakemod.add(f, one, name="t")
        sha, kernels = _lake_state(one)
        versions[sha] = kernels
    assert len(versions) == 2
    path, pristine = tmp_path / "lake", tmp_path / "pristine"
    lakemod.add(old, pristine, name="t")
    old_sha = _lake_state(pristine)[0]
    outcomes, reached = set(), []
    (tmp_path / "built").mkdir()
    commands = subprocess.Popen([sys.executable, "-c", AT_STEP, str(tmp_path / "built")], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)
    try:
        for step in range(1, 300):
            at = _replace_stopped_at(commands, tmp_path, pristine, path, new, step, how, versions, old_sha, outcomes)
            if not at:
                break
            reached.append(at[0])
    finally:
        commands.stdin.close()
        commands.wait(timeout=60)
    assert not at, "the replace never finished"
    assert (tmp_path / "built" / "built").is_file()  # built whole once, and copied for the steps after it
    assert sum(r.startswith("reached os.rename") for r in reached) > 20, reached  # every move, and more
    assert any(".trash" in r for r in reached) and any("/_ids/" in r for r in reached), reached
    assert len(outcomes) == 2  # stopped before its commit the old version stayed; after, the new one


# Where the fault injection may kill a load: a stage of a file, shown by the progress display.
KILL_POINTS = ["big0.json: reading", "big0.json: typing events", "big0.json: deriving facts",
               "big1.json: reading", "big1.json: typing events", "big1.json: deriving facts", "1/3 files",
               "2/3 files"]


def test_loads_killed_at_random_points_keep_the_invariants(tmp_path, big_traces):
    """Fault injection (fixed seed, so every run kills at the same points): a load of three files
    with one job or two, killed (SIGKILL, SIGTERM or Ctrl-C) at a stage drawn at random and after a
    random number of further progress frames. Whatever it had done: the database opens, holds the
    trace it held plus whole traces of the files (each trace's rows and rejected events add up to
    its event count), and no process, scratch folder or spill folder of the load remains."""
    import random

    rng = random.Random(20261125)
    db = tmp_path / "t.duckdb"
    run_cli("load", KINETO[0], "--name", "kept", db=db, check=True)
    files = [KINETO[1], *big_traces]
    names = {"kept"} | {Path(f).name.split(".")[0] for f in files}
    for run in range(6):
        point = rng.choice(KILL_POINTS)
        sig = rng.choice([signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
        jobs = rng.choice(["1", "2"])
        proc, seen = start_until(["load", *files, "--jobs", jobs, "--replace", "--db", db], point)
        for _ in range(rng.randrange(4)):  # a few more progress frames: a later moment of the stage
            if not os.read(proc.stderr.fileno(), 1 << 16):
                break
        workers = _children(proc.pid)
        proc.send_signal(sig)
        proc.communicate(timeout=120)
        assert _gone(workers) == [], (run, point)
        with open_db(db) as con:  # the next command: it also removes what the killed one left
            rows = con.execute("SELECT trace_id, name, event_count FROM traces").fetchall()
            assert {r[1] for r in rows} <= names and "kept" in {r[1] for r in rows}, (run, point, rows)
            for trace_id, name, events in rows:
                counted = con.execute("SELECT (SELECT count(*) FROM all_events WHERE trace_id = $1) + "
                                      "(SELECT count(*) FROM rejected_events WHERE trace_id = $1)",
                                      [trace_id]).fetchone()[0]
                assert counted == events, (run, point, name, counted, events)
        assert _folders_of(proc.pid) == [], (run, point)
        assert not (tmp_path / "t.duckdb.tmp").exists(), (run, point)


def _reused_build(monkeypatch, tmp_path, seen):
    """partition.build as a replace's steps need it: whole until it has finished once, then a copy
    of the partition it built (the same files: the lake's ids are drawn from a clock held still, so
    every replace from the same lake claims the same id). Returns how many renames and removals the
    build itself made (seen counts them), None until it has finished."""
    import copy
    import dataclasses
    import types

    from tracedb import lake as lakemod, partition

    now = time.time()
    held = types.SimpleNamespace(**{n: getattr(time, n) for n in dir(time) if not n.startswith("_")})
    held.time = lambda: now
    monkeypatch.setattr(lakemod, "time", held)
    real, kept, calls = partition.build, tmp_path / "built", []

    def build(path, into, **kw):
        if calls:  # built before: its partition again, without the load (0.4 s a step)
            shutil.copytree(kept / "p", into)
            return dataclasses.replace(calls[0][1], directory=Path(into), outcome=copy.deepcopy(calls[0][1].outcome))
        before = seen[0]
        part = real(path, into, **kw)
        shutil.copytree(into, kept / "p")
        calls.append((seen[0] - before, dataclasses.replace(part, outcome=copy.deepcopy(part.outcome))))
        return part

    monkeypatch.setattr(partition, "build", build)
    return lambda: calls[0][0] if calls else None


@pytest.mark.parametrize("second", [None, 1, 2])
def test_a_replace_interrupted_once_or_twice_at_any_step_keeps_a_whole_version(tmp_path, monkeypatch, second):
    """Ctrl-C (or SIGTERM, taken as Ctrl-C) at each rename or removal of a replace, in the process:
    once, the replace settles itself, the old version back or the new one standing, nothing left;
    twice (the second cutting short the settling, second steps later), what the command recovers
    after it (recover(mine=True)) gives the same: never neither, nor a mix, nor a leftover. The
    steps up to the end of the partition's build run it whole; the later ones replace with a copy
    of the partition it built (_reused_build), since what they cut short is the commit."""
    from tracedb import lake as lakemod

    path, pristine = tmp_path / "lake", tmp_path / "pristine"
    lakemod.add(KINETO[0], pristine, name="t")
    old = _lake_state(pristine)
    real_rename, real_rmtree = os.rename, shutil.rmtree
    seen = [0]
    build_steps = _reused_build(monkeypatch, tmp_path, seen)
    for step in range(1, 200):
        real_rmtree(path, ignore_errors=True)
        shutil.copytree(pristine, path)  # each step starts from the lake holding the old version
        seen[0] = 0
        stops = {step} if second is None else {step, step + second}
        if build_steps() is not None:  # built whole before (at a step after its own): not counted again
            stops = {s - build_steps() for s in stops}

        def counted(real):
            def call(*args, **kwargs):
                seen[0] += 1
                if seen[0] in stops:
                    raise KeyboardInterrupt
                return real(*args, **kwargs)
            return call

        monkeypatch.setattr(os, "rename", counted(real_rename))
        monkeypatch.setattr(shutil, "rmtree", counted(real_rmtree))
        try:
            lakemod.add(KINETO[1], path, name="t", replace=True)
            finished = True
        except KeyboardInterrupt:
            finished = False
        monkeypatch.setattr(os, "rename", real_rename)
        monkeypatch.setattr(shutil, "rmtree", real_rmtree)
        if second is None:
            assert _leftovers(path) == [], step  # settled by the writer itself
        else:
            lakemod.recover(path, mine=True)
            assert _leftovers(path) == [], step
        state = _lake_state(path)
        assert state == old or state[0] != old[0] and state[1] > 0, (step, state)
        if finished:
            break
    assert finished and step > 10 and build_steps(), (step, build_steps())


def test_two_recoverers_claim_a_journal_once(tmp_path):
    """Of two recoverers at once (processes, or threads of one) one takes a dead writer's
    directory; a directory another live process claimed is left to it."""
    from tracedb import lake as lakemod

    entry = tmp_path / ".trash" / "abc123"
    entry.mkdir(parents=True)
    with lakemod._claimed(entry) as first:
        assert first is not None and first.name == f"abc123.r{os.getpid()}"
        with lakemod._claimed(entry) as second:
            assert second is None  # renamed: the other recoverer took it
        with lakemod._claimed(first) as third:
            assert third is None  # held by another thread of this process
    with lakemod._claimed(first) as again:  # the first let go, and no live process holds it
        assert again == first
    alive = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        held = first.rename(first.with_name(f"abc123.r{alive.pid}"))
        with lakemod._claimed(held) as other:
            assert other is None  # a live process's claim
    finally:
        alive.communicate(b"")
    with lakemod._claimed(held) as taken:  # its holder ended without finishing: taken over
        assert taken is not None and taken.name == f"abc123.r{os.getpid()}"


def test_sigterm_in_a_lake_load_says_what_was_committed(tmp_path, big_traces):
    """SIGTERM once a worker has committed a trace to the lake (its partition in place: a state of
    the lake, polled): the last line names the traces committed, those the lake then holds, never
    "unchanged"."""
    lake = tmp_path / "lake"
    proc = subprocess.Popen([sys.executable, "-m", "tracedb.cli", "load", *map(str, big_traces), "--jobs", "2",
                             "--lake", str(lake)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = lake / "traces" / "trace=big0" / "data.parquet"
    while not first.exists() and proc.poll() is None:
        time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    committed = sorted(p.name[len("trace="):] for p in (lake / "traces").iterdir() if (p / "data.parquet").exists())
    assert "big0" in committed
    line = last_line(err)
    if proc.returncode == 0:  # both were in before the signal landed: nothing was interrupted
        assert committed == ["big0", "big1"]
        return
    assert proc.returncode == 143 and b"Traceback" not in err, err
    assert line.startswith("tracedb: interrupted; loaded: ") and "unchanged" not in line, line
    assert sorted(line.split("loaded: ", 1)[1].split(" (")[0].split(", ")) == committed


@pytest.fixture
def full_tmpdir(tmp_path):
    """A temporary directory with no room (a 256 KiB tmpfs, mounted for the test), or a skip."""
    small = tmp_path / "small_tmp"
    small.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(small)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip("cannot mount a small tmpfs here (needs root): " + mounted.stderr.decode().strip()[:80])
    try:
        yield small
    finally:
        subprocess.run(["umount", "-l", str(small)], capture_output=True)


@pytest.mark.parametrize("where", ["--db", "--lake"])
def test_a_full_temporary_directory_costs_no_file(tmp_path, full_tmpdir, where):
    """With no room in the temporary directory, a load of several files with two workers loads
    them all, as one worker does: a database's workers hand the files they cannot build to the
    command's own process, a lake's build beside the lake; an error names its file."""
    files = [p for p in KINETO if p.name.startswith(("h100_bert", "mi300_bert", "cpu_only"))]
    target = tmp_path / ("t.duckdb" if where == "--db" else "lake")
    proc = subprocess.run([sys.executable, "-m", "tracedb.cli", "load", *map(str, files), "--jobs", "2", where,
                           str(target)], capture_output=True, text=True, env=dict(os.environ, TMPDIR=str(full_tmpdir)))
    assert proc.returncode == 0, proc.stderr
    with tracedb.connect(target) as db:
        assert db.sql("SELECT count(*) FROM traces").rows == [(len(files),)]


def test_a_database_the_disk_fills_while_it_is_created_is_one_line(full_tmpdir):
    """A new database on a disk with no room: one line naming the file, exit 1, no traceback, and
    no half-made file left behind (a retry elsewhere, or once there is room, starts clean)."""
    db = full_tmpdir / "t.duckdb"
    proc = subprocess.run([sys.executable, "-m", "tracedb.cli", "load", str(KINETO[0]), "--db", str(db)],
                          capture_output=True, text=True)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"tracedb: error: {db}: cannot create the database: "), lines
    assert list(full_tmpdir.iterdir()) == []
