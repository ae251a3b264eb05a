"""A trace lake: a directory of Hive-partitioned Parquet that many writers add traces to at once,
with no lock but one per trace name held while a writer commits, and that readers query in place.

Layout (the one `tracedb export` writes): LAKE/<table>/trace=<name>/data.parquet for each table
holding rows of the trace, the name percent-encoded (a name too long for a directory is cut and
followed by ~ and a digest of the whole), and LAKE/tracedb-lake.json saying what the directory is.
Spark, Trino, Polars or pandas read the files as they are; trace_id is the same number in every
table of a trace, so they join as in a database.

Writing a trace (add): its partition is built beside the lake (LAKE/.incoming/<random>), its table
directories are renamed into place one by one, and the traces directory last. A trace exists when
LAKE/traces/trace=<name>/ does: a reader lists those when it opens and reads only their files, so
it sees whole traces, never one being written, and never waits for a writer. Replacing a trace
takes its traces directory away first (readers that open meanwhile do not see it), then swaps the
rest. Two writers of one trace name at once commit one after the other: each builds its partition
with no lock, then takes the name's lock (flock on LAKE/_locks/<folder>.lock, which the kernel
releases when its holder dies, so a killed writer never blocks a name) for its commit alone: it
looks again at what is committed under the name, then renames. Without replace the later writer
finds the name taken and fails as if it had come after (its partition removed, its id given back;
identical content is skipped); with replace the last to commit wins, its version whole in every
table. Readers take no lock, and recover takes a name's only when no writer holds it (it tries,
never waits). Where the file system keeps no locks (or off POSIX) writers still look again before
they commit, but are not kept apart.

A writer's directories under .incoming and .trash are named for it (<pid>-<where>-<random>, where
a digest of its host and PID namespace) and hold a journal (journal.json: the writer, the trace,
the id it claims, the phase of the replace). A writer killed part way (SIGKILL, a crash, a lost
node) leaves them; the next writer or reader of the lake (recover) finishes or undoes what a dead
writer of this host and namespace began: a replace whose new traces directory is in place is
complete, and the old version's files and id go; one whose new version never reached its traces
directory is undone, the new version's directories removed and the old version's put back, traces
last; a directory whose writer died before writing its journal holds nothing yet and goes. A
committed trace is never lost. A journal of another host or container is left to a process there
(only it can tell whether the writer still runs). A writer interrupted (Ctrl-C, SIGTERM) settles
its own replace the same way, then (should the interrupt have cut that short) what it left, as
recover(mine=True) does: this process's directories no load of it still uses (_using: adds may run
in threads). Recover works on a trace name under the name's lock, trying it, never waiting: a
replace under way has the trace's traces directory away, and a committed id would seem free.

Trace ids grow with time, as a database's do, without writers asking each other: a load takes the
seconds since 2025-01-01 at its start, or the next number not taken, by creating LAKE/_ids/<id>
exclusively. Its journal names each id before the load tries it, and the id's file names the
load's .incoming directory, so recover gives back the id of a writer killed at any point, and only
an id that writer holds. A replaced trace gets a new id, as in a database. Readers check that ids
are distinct (a file system without exclusive creation could let two writers take one).

Reading (open_lake): an empty tracedb database in a scratch directory whose per-trace tables are
views over the Parquet files of the traces committed at open, one whole version of each, held open
for as long as the reader lives (tracedb.snapshot), read as Arrow datasets registered on the
connection (files written by an older tracedb read NULL for the columns they lack); every view,
macro and report of the database works on it unchanged. It is opened read-only, and since it reads
the lake through pyarrow rather than by path, a locked-down connection can write no file at all.

DuckLake was weighed as the catalog and not taken: its catalog is a database (a DuckDB file takes
one writer at a time, PostgreSQL is a server to run), which is what a lake of plain files avoids,
its files are live only through that catalog (other engines need DuckLake support to read them),
and pip provides its extension for DuckDB 1.5 only.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import shutil
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Iterator
from urllib.parse import quote

import duckdb

from . import __version__, atomic, db, partition, scratch, snapshot, store
from .errors import TracedbError, reraise_interrupt
from .filestate import settled, stat_key
from .ingest.loader import LoadOutcome, default_name, trace_tables
from .ingest.source import check_file, sha256_of
from .rules import KINDS as RULE_KINDS
from .sqlfiles import file_path, literal
from .traces import check_name

try:
    import fcntl
except ImportError:  # not POSIX: no file locks (see the module docstring)
    fcntl = None

MARKER = "tracedb-lake.json"
EXPORT_MANIFEST = "tracedb-export.json"  # an export is a lake too: it is read in place alike
INCOMING, TRASH, IDS, LOCKS = ".incoming", ".trash", "_ids", "_locks"
# a file system that keeps no locks answers flock with one of these: the lock is taken as held
_NO_LOCKS = (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL)
MAX_FOLDER = 200  # bytes of a directory name (file systems allow 255)
_ID_SPACE = 2**31 - 1  # trace_id is a 32-bit INTEGER
ID_EPOCH = 1735689600  # 2025-01-01 00:00 UTC: ids (seconds since) fit in 31 bits until 2093


def is_lake(path: str | Path) -> bool:
    path = Path(path)
    return path.is_dir() and ((path / MARKER).is_file() or (path / EXPORT_MANIFEST).is_file())


def state(lake: Path) -> tuple:
    """What a load or a replace changes in a lake, or in an export read in place (tracedb.state): its
    folder of committed traces (a trace goes in or out by a rename there) and its user rules' files."""
    return settled((stat_key(lake / "traces"),
                    *(stat_key(lake / kind.table / "user.parquet") for kind in RULE_KINDS)))


def folder_of(name: str) -> str:
    """The partition directory of a trace name: trace=<percent-encoded name>."""
    encoded = quote(name, safe="")
    if len(encoded) + 6 > MAX_FOLDER:
        cut = encoded[:MAX_FOLDER - 30]
        if "%" in cut[-2:]:  # never half of a %XX
            cut = cut[:cut.rindex("%")]
        encoded = cut + "~" + hashlib.sha256(name.encode()).hexdigest()[:16]
    return "trace=" + encoded


def create(lake: Path) -> None:
    """Make lake a trace lake (an existing one is checked, not changed)."""
    lake = Path(lake)
    if lake.exists() and not lake.is_dir():
        raise TracedbError(f"{lake}: exists and is not a directory; a lake is a directory")
    marker = lake / MARKER
    if not marker.is_file():
        # (the marker itself may appear meanwhile: another writer made the lake first)
        if lake.is_dir() and any(p for p in lake.iterdir() if not p.name.startswith(".") and p.name != MARKER) \
                and not (lake / EXPORT_MANIFEST).is_file():
            raise TracedbError(f"{lake}: a directory that is not a trace lake; give a new or empty one")
        lake.mkdir(parents=True, exist_ok=True)
        text = json.dumps({"format": "tracedb-lake", "schema_version": db.latest_version(),
                           "tracedb_version": __version__, "layout": "<table>/trace=<name>/data.parquet"},
                          indent=2) + "\n"
        try:
            atomic.create(marker, lambda out: out.write(text.encode()))  # another writer may be first
        except OSError as exc:
            raise TracedbError(f"{lake}: cannot write: {exc.strerror or exc}") from None
    _check_marker(lake)


def _check_marker(lake: Path) -> None:
    file = lake / MARKER if (lake / MARKER).is_file() else lake / EXPORT_MANIFEST
    try:
        manifest = json.loads(file.read_text(encoding="utf-8"))
        version = manifest["schema_version"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise TracedbError(f"{lake}: unreadable {file.name}: {exc}") from None
    if not isinstance(version, int) or version > db.latest_version():
        raise TracedbError(f"{lake}: written with schema v{version}, newer than this tracedb's "
                           f"v{db.latest_version()}; upgrade tracedb")


JOURNAL = "journal.json"


def _write_journal(directory: Path, **fields) -> None:
    """What a writer's directory holds and whose it is, for recover (replaced whole, atomically)."""
    _rewrite_journal(directory, {"pid": os.getpid(), "where": scratch.where(), **fields})


def _rewrite_journal(directory: Path, record: dict) -> None:
    """Replace a journal whole (the writer it names included)."""
    with atomic.replacing(directory / JOURNAL) as out:
        out.write(json.dumps(record))


_OWNER = re.compile(r"^(\d+)-([0-9a-f]{8})-[0-9a-f]{32}(?:\.r(\d+))?$")  # an _owned name, maybe _claimed


def _owned() -> str:
    """A new name of this process's (<pid>-<where>-<random>): whoever finds it can tell, on this
    host, whether the process that made it still runs (_OWNER reads it back)."""
    return f"{os.getpid()}-{scratch.where()}-{uuid.uuid4().hex}"


def _journal(directory: Path) -> dict:
    """The journal of a writer's directory ({} when there is none yet)."""
    try:
        return json.loads((directory / JOURNAL).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _dead_writer(directory: Path, mine: bool = False) -> dict | None:
    """The journal of a directory whose writer no longer runs (or is this process, when mine); {}
    when that writer died before it wrote one (the directory's name says whose it is); None while
    the writer may run, or when it is of another host or container."""
    def gone(pid, where) -> bool:
        return scratch.dead(int(pid), str(where)) or (
            mine and int(pid) == os.getpid() and where == scratch.where() and not _in_use(directory))

    record = _journal(directory)
    if record:
        return record if gone(record.get("pid", 0), record.get("where")) else None
    owner = _OWNER.match(directory.name)
    if owner is None:  # a directory of an older tracedb: only an empty one can be told apart
        _remove_if_empty(directory)
        return None
    pid, where, claimer = owner.groups()
    if not gone(pid, where) or (claimer is not None and int(claimer) != os.getpid() and scratch.alive(int(claimer))):
        return None
    try:  # written meanwhile, between the read above and now? then its writer was alive: told next time
        (directory / JOURNAL).stat()
        return None
    except OSError:
        return {}


def recover(lake: Path, *, mine: bool = False) -> None:
    """Finish or undo what writers of this host killed part way left (see the module docstring);
    mine: and what this process's loads left and no longer use (their settling cut short).
    Best effort: without write access, or with another recoverer at work, it leaves the rest."""
    for entry in _subdirs(lake / TRASH):
        record = _dead_writer(entry, mine)
        if record is None:
            continue
        if not record:  # died before its journal: it had moved nothing yet
            shutil.rmtree(entry, ignore_errors=True)
            continue
        try:
            # a live writer committing the name meanwhile would have its new partitions taken out
            with _name_lock(lake, record["folder"], wait=False) as held:
                if held:
                    _end_replace(lake, entry, record)
        except (OSError, TracedbError):
            continue  # told another time (a lake this process cannot write, say)
    _remove_if_empty(lake / TRASH)
    for entry in _subdirs(lake / INCOMING):
        record = _dead_writer(entry, mine)
        if record is None:
            continue
        try:
            if not record:  # died before its journal: it had claimed no id yet
                shutil.rmtree(entry, ignore_errors=True)
                continue
            # under the name's lock: a replace in progress has the trace's traces directory away,
            # and the id of a committed trace would seem free
            with _name_lock(lake, record["folder"], wait=False) as held:
                if held:
                    with _claimed(entry) as claimed:
                        if claimed is not None and _release_claim(lake, claimed, record):
                            shutil.rmtree(claimed, ignore_errors=True)
        except (OSError, TracedbError):
            continue  # told another time (a lake this process cannot write, say)
    _remove_if_empty(lake / INCOMING)


def _recover_name(lake: Path, folder: str) -> None:
    """Settle the replaces of folder that dead writers left (the name's lock held by the caller),
    so that what is committed under the name is looked at as it stands once they are undone."""
    for entry in _subdirs(lake / TRASH):
        # this process's too: one whose settling failed (a full disk) is in use by no load of it
        record = _dead_writer(entry, mine=True)
        if record and record.get("folder") == folder:
            _end_replace(lake, entry, record)


def _release_claim(lake: Path, entry: Path, record: dict) -> bool:
    """Give back the trace id the writer of entry (its .incoming directory, whose journal is record)
    claimed, unless a trace was committed with it or the id is another writer's (its claim lost, or
    the id given back and taken again); False when the committed trace cannot be read now."""
    trace_id = record.get("trace_id")
    if trace_id is None:
        return True
    if _id_holder(lake, trace_id) != entry.name.partition(".r")[0]:
        return True  # gone, another writer's, or of an older tracedb that named no holder: left
    stored = _committed_id(lake, record["folder"])
    if stored is _UNKNOWN:
        return False
    if stored != trace_id:
        _release_id(lake, trace_id)
    return True


def _end_replace(lake: Path, entry: Path, record: dict, *, claim: bool = True) -> None:
    """Finish or undo the replace whose trash directory is entry, by what is committed under its
    name (the name's lock held by the caller): of a dead writer, or of this one once its move
    ended."""
    folder = record["folder"]
    stored = _committed_id(lake, folder)
    if stored is _UNKNOWN:
        return  # its traces file cannot be read now: told another time
    if not claim:  # a writer settling its own
        _finish_or_undo(lake, entry, record, stored)
        return
    with _claimed(entry) as claimed:  # one recoverer per journal
        if claimed is not None:
            _finish_or_undo(lake, claimed, record, stored)


def _finish_or_undo(lake: Path, entry: Path, record: dict, stored: int | None) -> None:
    """_end_replace once entry is this thread's, stored the id committed under the name."""
    folder = record["folder"]
    if stored is not None and stored != record.get("old_id"):
        # the new version committed (or a later writer's has since): the old one goes, and
        # an id the dead writer claimed and no trace kept
        _release_id(lake, record.get("old_id"))
        new_id = record.get("new_id")
        if stored != new_id and new_id is not None and _id_holder(lake, new_id) == record.get("holder"):
            _release_id(lake, new_id)
    elif stored is None:  # it never did: what it put in goes, and the old version comes back, traces last
        if record.get("phase") == "in":
            for table_dir in _table_dirs(lake):
                shutil.rmtree(table_dir / folder, ignore_errors=True)
            # once only: an undo cut short and taken up again must not remove what it put back
            _rewrite_journal(entry, {**record, "phase": "back"})
        for saved in sorted(_subdirs(entry), key=lambda p: p.name == "traces"):
            (lake / saved.name).mkdir(exist_ok=True)
            if not (lake / saved.name / folder).exists():
                os.rename(saved, lake / saved.name / folder)
    # else the old version's traces directory is in place: all of it is back (its traces directory
    # comes back last), or none of it ever went
    shutil.rmtree(entry)


@contextlib.contextmanager
def _name_lock(lake: Path, folder: str, *, wait: bool = True) -> Iterator[bool]:
    """The writers' lock of one trace name, an flock on LAKE/_locks/<folder>.lock (the files stay:
    removing one would race with a writer that has it open). Yields True once held, or False when
    wait is false and another holds it; True unlocked where the file system keeps no locks or
    there is no flock (see the module docstring). Released when the block ends, or by the kernel
    when this process dies. A lake this process cannot write: TracedbError."""
    inner = _thread_lock(lake, folder)
    if not inner.acquire(blocking=wait):
        yield False
        return
    try:
        if fcntl is None:
            yield True
            return
        with _flock(lake, folder, wait) as held:
            yield held
    finally:
        inner.release()


_thread_locks: dict[tuple[str, str], threading.Lock] = {}


def _thread_lock(lake: Path, folder: str) -> threading.Lock:
    """The lock keeping this process's threads apart on one trace name: an flock does so on a
    local file system (each open of the file is its own lock), but NFS takes flock for a POSIX lock,
    which is the process's, whichever thread holds it, and which any close of the file lets go."""
    with _using_lock:
        return _thread_locks.setdefault((str(lake.resolve()), folder), threading.Lock())


@contextlib.contextmanager
def _flock(lake: Path, folder: str, wait: bool) -> Iterator[bool]:
    locks = lake / LOCKS
    try:
        locks.mkdir(exist_ok=True)
        try:
            fd = os.open(locks / (folder + ".lock"), os.O_RDWR | os.O_CREAT, 0o666)
        except PermissionError:  # another user's lock file: a lock needs only a read
            fd = os.open(locks / (folder + ".lock"), os.O_RDONLY)
    except OSError as exc:
        raise TracedbError(f"{lake}: cannot add the trace: {exc.strerror or exc}") from None
    try:
        yield _lock_fd(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB), f"{lake}: cannot lock the trace's name")
    finally:
        os.close(fd)  # the lock goes with the last descriptor of its open file


def _lock_fd(fd: int, operation: int, failure: str) -> bool:
    """flock(fd, operation): True once held, False when LOCK_NB finds it held by another; True on
    a file system that keeps no locks (and where there is no flock); any other refusal is
    TracedbError(failure: why)."""
    if fcntl is None:
        return True
    try:
        fcntl.flock(fd, operation)
    except BlockingIOError:
        return False
    except OSError as exc:
        if exc.errno not in _NO_LOCKS:
            raise TracedbError(f"{failure}: {exc.strerror or exc}") from None
    return True


RUN_PREFIX = "run-"  # a load's token in _locks: run-<_owned name>.lock


def open_run(lake: Path) -> Path:
    """A token of one load whose tasks run elsewhere (Dask): LAKE/_locks/run-<pid>-<host>-<id>.lock,
    handed to each task (add(run=...)). A task commits only while the token stands (end_run takes
    it away), so that once its load gives its tasks up (the scheduler died) no trace lands
    unannounced. The token names its load's process: the next such load removes the tokens of
    loads of this machine that were killed (their tasks, should they still run, then commit
    nothing)."""
    locks = lake / LOCKS
    token = locks / f"{RUN_PREFIX}{_owned()}.lock"
    try:
        locks.mkdir(exist_ok=True)
        _sweep_runs(locks)
        token.touch()
    except OSError as exc:
        raise TracedbError(f"{lake}: cannot add the traces: {exc.strerror or exc}") from None
    return token


def _sweep_runs(locks: Path) -> None:
    """Remove the tokens of killed loads: those of this machine whose process is gone and that no
    task holds (one committing keeps its token for a later load to remove). A token of another
    machine, whose process cannot be asked about, stays."""
    for token in locks.glob(f"{RUN_PREFIX}*.lock"):
        owner = _OWNER.match(token.name[len(RUN_PREFIX):-len(".lock")])
        if owner is None or owner.group(3) is not None or not scratch.dead(int(owner.group(1)), owner.group(2)):
            continue
        try:
            fd = os.open(token, os.O_RDWR)
        except OSError:
            continue
        try:
            if _lock_fd(fd, fcntl.LOCK_EX | fcntl.LOCK_NB if fcntl else 0, f"{token}: cannot lock a load's token"):
                token.unlink(missing_ok=True)
        except (OSError, TracedbError):
            pass  # left for the next load
        finally:
            os.close(fd)


def end_run(token: Path) -> None:
    """Take a run's token away: a task committing now finishes first (it holds the token's lock),
    and none commits after. What the lake holds then is all the run's tasks will ever put there."""
    try:
        fd = os.open(token, os.O_RDWR)  # written to: NFS takes an exclusive flock for a write lock
    except FileNotFoundError:
        return
    try:
        _lock_fd(fd, fcntl.LOCK_EX if fcntl else 0, f"{token}: cannot lock the load's token")
        token.unlink(missing_ok=True)
    finally:
        os.close(fd)


# The tokens this process holds a shared lock on, each through one open file: token -> [fd, users].
# On NFS an flock is a POSIX lock, the process's, which any close of the file lets go: two tasks
# of one Dask worker (threads) committing at once share the one file rather than each its own.
_run_holds: dict[str, list[int]] = {}
_run_guard = threading.Lock()


@contextlib.contextmanager
def _run_standing(token: str | None) -> Iterator[bool]:
    """Held around a commit for a run: True while its token stands (end_run waits for the block to
    end), False once it was taken away. No token: no run to answer to."""
    if token is None:
        yield True
        return
    with _run_guard:
        held = _run_holds.get(token)
        if held is None:
            try:
                fd = os.open(token, os.O_RDONLY)
            except FileNotFoundError:
                fd = None
            if fd is not None:
                try:
                    _lock_fd(fd, fcntl.LOCK_SH if fcntl else 0, f"{token}: cannot lock the load's token")
                except TracedbError:
                    os.close(fd)
                    raise
                held = _run_holds[token] = [fd, 0]
        if held is not None:
            held[1] += 1
    if held is None:
        yield False
        return
    try:
        try:  # taken away while this waited for the lock: unlinked (NFS: the handle gone stale)
            standing = os.fstat(held[0]).st_nlink > 0 and os.path.exists(token)
        except OSError:
            standing = False
        yield standing
    finally:
        with _run_guard:
            held[1] -= 1
            if held[1] == 0:
                os.close(held[0])
                del _run_holds[token]


_UNKNOWN = object()  # a traces file that is there and cannot be read


def _committed_id(lake: Path, folder: str):
    """The id of the trace committed under folder: None when there is none, _UNKNOWN when its
    traces file is there but cannot be read."""
    committed = lake / "traces" / folder / "data.parquet"
    if not committed.is_file():
        return None
    stored = _stored(committed)[1]
    return _UNKNOWN if stored is None else stored


@contextlib.contextmanager
def _claimed(entry: Path) -> Iterator[Path | None]:
    """A dead writer's directory taken by this thread alone for the block (renamed <name>.r<pid>:
    of two recoverers at once one rename wins; threads of this process keep apart by _using), or
    None when another live process, or another thread here, holds it."""
    base, _, holder = entry.name.partition(".r")
    if holder.isdigit() and int(holder) != os.getpid() and scratch.alive(int(holder)):
        yield None
        return
    with _using_lock:
        if base in _using:
            taken = True
        else:
            taken = False
            _using.add(base)
    if taken:
        yield None
        return
    try:
        target = entry.with_name(f"{base}.r{os.getpid()}")
        try:
            if target != entry:
                os.rename(entry, target)
        except OSError:
            target = None
        yield target
    finally:
        with _using_lock:
            _using.discard(base)


def _subdirs(directory: Path) -> list[Path]:
    try:
        return [p for p in directory.iterdir() if p.is_dir()]
    except OSError:
        return []


def _table_dirs(lake: Path) -> list[Path]:
    return sorted(p for p in lake.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))


def claim_id(lake: Path, folder: str, holder: Path) -> int:
    """A new trace id for the writer whose .incoming directory is holder: the seconds since
    ID_EPOCH now, or the next number no other load took. holder's journal names each id before it
    is tried, and the id's file names holder, so that recover gives back the id of a writer killed
    at any point (and only an id it holds)."""
    ids = lake / IDS
    ids.mkdir(exist_ok=True)
    start = max(1, int(time.time()) - ID_EPOCH)
    claim = holder / "id.claim"  # the id's file, written whole beside, then linked into place
    claim.write_text(json.dumps({"folder": folder, "holder": holder.name}), encoding="utf-8")
    try:
        for trace_id in range(start, min(start + 1_000_000, _ID_SPACE)):
            if (ids / str(trace_id)).exists():
                continue
            _write_journal(holder, folder=folder, trace_id=trace_id)
            if atomic.link_new(claim, ids / str(trace_id)):
                return trace_id
    finally:
        claim.unlink(missing_ok=True)
    raise TracedbError(f"{lake}: no free trace id for {folder}")


_GONE = object()  # an id no file claims


def _id_holder(lake: Path, trace_id: int):
    """The name of the .incoming directory whose writer claimed trace_id; None when its file does
    not say (written by an older tracedb, or being written), _GONE when there is none."""
    try:
        text = (lake / IDS / str(int(trace_id))).read_text(encoding="utf-8")
    except FileNotFoundError:
        return _GONE
    except OSError:
        return None
    try:
        return json.loads(text).get("holder")
    except (ValueError, AttributeError):
        return None


def _release_id(lake: Path, trace_id: int | None) -> None:
    if trace_id is not None:
        (lake / IDS / str(int(trace_id))).unlink(missing_ok=True)


def add(path: str | Path, lake: str | Path, *, name: str | None = None, replace: bool = False,
        meta: dict[str, str] | None = None, kind: str | None = None, threads: int = 1,
        progress=None, run: str | None = None) -> LoadOutcome:
    """Load one trace file into a lake (the task a process pool, Dask or Ray runs: a path in, a
    partition out). Same name and same content: skipped; same name, other content: an error
    unless replace, looked at again under the name's lock when it commits (another writer of the
    name may have committed meanwhile). Returns the outcome with the trace's lake id. However it
    fails (an error, Ctrl-C, SIGTERM), what it left in the lake is settled before the failure goes
    on, as recover settles a dead writer's (its own settling may have been cut short). run: the
    token of the load that asked for it (open_run): it commits only while that stands."""
    try:
        return _add(Path(path), Path(lake), name, replace, meta, kind, threads, progress, run)
    except BaseException:
        try:
            recover(Path(lake), mine=True)
        except Exception as exc:
            reraise_interrupt(exc)  # a Ctrl-C DuckDB reported while settling is still one
        raise


def _add(path: Path, lake: Path, name: str | None, replace: bool, meta: dict[str, str] | None, kind: str | None,
         threads: int, progress, run: str | None) -> LoadOutcome:
    size = check_file(path)
    name = default_name(path) if name is None else name
    check_name(name, path)
    create(lake)
    recover(lake)
    folder = folder_of(name)
    committed = lake / "traces" / folder / "data.parquet"
    if committed.is_file() and not replace:
        if _stored(committed)[0] == sha256_of(path):
            return _skipped(path, name, size)
        raise TracedbError(_taken(path, name, lake))
    staging = None  # made in the try below, removed in its finally
    keep = False  # staging stays for recover: whether its id was committed cannot be read now
    try:
        try:
            staging = _work_dir(lake / INCOMING)
            _write_journal(staging, folder=folder)
            trace_id = claim_id(lake, folder, staging)
            part = partition.build(path, staging / "p", name=name, meta=meta, kind=kind, trace_id=trace_id,
                                   threads=threads, progress=progress)
            started = time.perf_counter()
            with _name_lock(lake, folder), _run_standing(run) as standing:  # the commit: one writer of the name
                if not standing:
                    raise TracedbError(f"{path}: not loaded: the load that asked for it gave its tasks up")
                _recover_name(lake, folder)  # a replace a dead writer left holding the lock
                old_id, same = None, False
                if committed.is_file():  # looked at again: another writer may have committed since
                    stored, old_id = _stored(committed)
                    if not replace:
                        same = stored == part.sha256
                        if not same:
                            raise TracedbError(_taken(path, name, lake))
                replaced = False if same else _move_in(lake, folder, part, old_id)
        except BaseException as exc:
            # the id it claimed goes back, unless it was committed (interrupted after its commit)
            if staging is not None:  # under the name's lock, as recover: a replace may have the trace away
                try:
                    with _name_lock(lake, folder, wait=False) as held:
                        keep = not held or not _release_claim(lake, staging, _journal(staging))
                except (OSError, TracedbError):
                    keep = True  # the lock cannot be had (a full disk): recover gives the id back later
            if isinstance(exc, OSError):  # a lake it cannot write (read-only, full, not its own)
                raise TracedbError(f"{path}: cannot add it to the lake {lake}: {exc.strerror or exc}") from None
            raise
        if same:  # the same file, committed by another writer meanwhile
            _release_id(lake, trace_id)
            return _skipped(path, name, size)
    finally:
        try:
            if staging is not None and not keep:
                shutil.rmtree(staging, ignore_errors=True)
        finally:  # cut short, it is no longer in use: recover(mine=True) takes what is left
            _done_with(staging)
        _remove_if_empty(lake / INCOMING)
    outcome = part.outcome
    outcome.status = "replaced" if replaced else "loaded"
    outcome.seconds += time.perf_counter() - started
    return outcome


def _skipped(path: Path, name: str, size: int) -> LoadOutcome:
    return LoadOutcome(path, name, "skipped", file_bytes=size,
                       note=f"identical content already in the lake as {name!r} (use --replace to load again)")


def _taken(path: Path, name: str, lake: Path) -> str:
    return (f"{path}: a trace named {name!r} already exists in the lake {lake}; choose another --name or "
            "use --replace")


def _stored(traces_file: Path) -> tuple[str | None, int | None]:
    """(sha256, trace_id) of a trace in the lake; (None, None) when its file cannot be read."""
    # two columns of one small file: read by pyarrow where this process has it already (a
    # notebook, a Dask worker: 0.4 ms); a command that needs pyarrow for nothing else would import
    # it for them (0.1 s), where a DuckDB instance of its own takes 0.02 s
    if "pyarrow.parquet" not in sys.modules:
        try:
            with duckdb.connect(config={"threads": 1}) as con:
                rows = con.execute("SELECT sha256, trace_id FROM read_parquet(?, hive_partitioning = false) "
                                   "LIMIT 1", [file_path(traces_file)]).fetchall()
        except duckdb.Error:  # unreadable, or not a traces file
            return None, None
        return rows[0] if rows else (None, None)
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        with pq.ParquetFile(traces_file) as file:
            table = file.read(columns=["sha256", "trace_id"])
        if not table.num_rows:
            return None, None
        return table.column("sha256")[0].as_py(), table.column("trace_id")[0].as_py()
    except (OSError, ValueError, KeyError, pa.ArrowException):  # unreadable, or not a traces file
        return None, None


def _move_in(lake: Path, folder: str, part: partition.Partition, old_id: int | None = None) -> bool:
    """Rename a built partition into the lake, the traces directory last; True when it replaced
    a trace. What stood under the name (an older version, or the leftovers of a writer that died)
    goes to a trash directory first; the trash's journal says how far the move got. However the
    move ends (done, an error, Ctrl-C or SIGTERM), the trash is settled as recover settles a dead
    writer's (_end_replace): committed, the old version and its id go; not, what was put in goes
    and the old version comes back. Should this process be killed, or the settling cut short, the
    trash and its journal stay for recover. The caller holds the name's lock."""
    journal = {"folder": folder, "old_id": old_id, "new_id": part.outcome.trace_id,
               "holder": part.directory.parent.name}  # the .incoming directory that claimed new_id
    old = lake / "traces" / folder
    trash = None
    try:
        try:
            trash = _work_dir(lake / TRASH)
            _write_journal(trash, phase="away", **journal)
            replaced = old.is_dir()
            if replaced:
                os.rename(old, trash / "traces")  # the trace is gone for readers from here until the commit
            for table_dir in _table_dirs(lake):
                if table_dir.name != "traces" and (table_dir / folder).exists():
                    os.rename(table_dir / folder, trash / table_dir.name)
            _write_journal(trash, phase="in", **journal)  # all of the old version is away
            for table in sorted(part.tables, key=lambda t: t == "traces"):  # traces last: the commit
                if not (lake / table).is_dir():  # a write fewer where the table has its folder
                    (lake / table).mkdir(exist_ok=True)
                os.rename(part.directory / table, lake / table / folder)
        except BaseException as exc:
            if trash is not None:
                _settle(lake, trash)
            if isinstance(exc, OSError):
                raise TracedbError(f"{lake}: cannot add the trace: {exc.strerror or exc}") from None
            raise
        _settle(lake, trash)
    finally:
        _done_with(trash)
    return replaced


def _settle(lake: Path, trash: Path) -> None:
    """End this writer's replace whose trash directory is trash, as recover would a dead writer's;
    what cannot be settled now stays for recover."""
    record = _journal(trash)
    try:
        if record:
            _end_replace(lake, trash, record, claim=False)
        else:  # stopped before its journal was written: nothing was moved
            shutil.rmtree(trash, ignore_errors=True)
    except (OSError, TracedbError):
        pass  # left for recover, which tells the journal's writer is gone
    _remove_if_empty(lake / TRASH)


def _work_dir(parent: Path) -> Path:
    """A new directory of this writer under parent (.incoming or .trash), named for its owner
    (<pid>-<where>-<random>: recover can tell a dead writer's before its journal is written), made
    even while another writer or reader removes parent for being empty (between parent's mkdir
    and the child's)."""
    child = parent / _owned()
    with _using_lock:
        _using.add(child.name)  # until _done_with: recover(mine=True) leaves it alone
    try:
        for _ in range(100):
            parent.mkdir(exist_ok=True)
            try:
                child.mkdir()
                return child
            except FileNotFoundError:
                continue  # parent went between the two calls: made again
        raise TracedbError(f"{parent}: cannot make a working directory (removed as fast as it is made)")
    except BaseException:  # not made, or made and not handed over: no one's
        _remove_if_empty(child)
        _done_with(child)
        raise


_using: set[str] = set()  # this process's working directories in use (adds may run in threads)
_using_lock = threading.Lock()


def _in_use(directory: Path) -> bool:
    with _using_lock:
        return directory.name.partition(".r")[0] in _using


def _done_with(directory: Path | None) -> None:
    if directory is not None:
        with _using_lock:
            _using.discard(directory.name.partition(".r")[0])


def _remove_if_empty(directory: Path) -> None:
    try:
        directory.rmdir()
    except OSError:
        pass  # not empty (another writer is at work) or gone


def open_lake(lake: str | Path) -> tuple[duckdb.DuckDBPyConnection, Path, snapshot.Snapshot]:
    """A read-only connection on which the lake's traces are the database's; (connection, the
    scratch directory it lives in, to remove after closing it, the snapshot of the traces it reads:
    each trace committed at open, one whole version, held for as long as the connection lives
    where the system allows; see tracedb.snapshot).

    The connection reaches the lake's Parquet only through Arrow datasets registered on it
    (pyarrow opens the files read-only), never through a path: it needs no file access of its own,
    so lock_down can take every file away from it and nothing run on it can write into the lake."""
    lake = Path(lake).resolve()
    if not is_lake(lake):
        raise TracedbError(f"{lake}: not a trace lake (tracedb load FILES --lake {lake} makes one)")
    _check_marker(lake)
    recover(lake)  # what killed writers left in the lake
    folder = scratch.make("lake")
    file = folder / "lake.duckdb"
    snap = con = None
    try:
        try:
            # the per-trace tables of a new database, known to a process that opened a lake before
            fingerprint = store.template_fingerprint()
            tables = _new_tables.get(fingerprint)
            if tables is None:
                con = db.open_db(file)
                tables = _new_tables.setdefault(fingerprint, trace_tables(con))
            snap = snapshot.take(lake, tables)
            cached = _views_cache(lake, list(snap.files))
            if cached is not None and cached.is_file():
                if con is not None:  # the file is replaced by the cached one: closed first
                    con.close()
                    con = None
                built = _from_cache(file, cached)  # the views file as built before
            else:
                built = False
            if not built:
                con = con or db.open_db(file)
                con.execute("BEGIN TRANSACTION")  # one commit for its hundreds of statements, not one each
                _build_views(con, lake, list(snap.files))
                con.execute("COMMIT")
                con.close()
                if cached is not None:
                    _into_cache(file, cached)
        except duckdb.Error as exc:
            reraise_interrupt(exc)
            raise TracedbError(f"{lake}: cannot read the lake: {str(exc).strip().splitlines()[0][:300]}") from None
        finally:
            if con is not None:
                con.close()
        con = duckdb.connect(str(file), read_only=True, config=dict(store.CONNECTION_CONFIG))
        try:
            for table in list(snap.files):
                con.register(DATA + table, snap.dataset(table))
            _check_ids(con, lake)
        except BaseException:
            con.close()
            raise
    except BaseException:
        if snap is not None:
            snap.close()
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return con, folder, snap


def _views_cache(lake: Path, tables: list[str]) -> Path | None:
    """Where the cache keeps the views file of a lake whose traces have rows in these tables:
    it depends on nothing else than them, the lake's user rules and what a new database is built
    from (store.template_fingerprint), so readers of a lake opened again and again build it once.
    None when a rules file cannot be read (then it is built each time)."""
    digest = hashlib.sha256(store.template_fingerprint().encode() + b"\0" + "\0".join(sorted(tables)).encode())
    for kind in RULE_KINDS:
        file = lake / kind.table / "user.parquet"
        try:
            digest.update(b"\0" + kind.table.encode() + b"\0" + (file.read_bytes() if file.is_file() else b""))
        except OSError:
            return None
    return store.cache_dir() / f"{LAKE_VIEWS_PREFIX}{digest.hexdigest()[:20]}.duckdb"


LAKE_VIEWS_PREFIX = "lake_views-"


# The per-trace tables of a new database (loader.trace_tables), by what it is built from
# (store.template_fingerprint): a process opening lakes again and again opens no database to ask.
_new_tables: dict[str, list[str]] = {}


def _from_cache(file: Path, cached: Path) -> bool:
    """The views file at file, copied from the cache; whether it was there."""
    try:
        shutil.copyfile(cached, file)
        os.utime(cached)  # in use: not stale
        return True
    except OSError:
        return False


def _into_cache(file: Path, cached: Path) -> None:
    """The views file built at file into the cache (store.cached: whole or not at all; a cache that
    cannot be written is no error)."""
    with contextlib.suppress(OSError):
        store.cached(cached, lambda path: shutil.copyfile(file, path), LAKE_VIEWS_PREFIX)


DATA = "_lake_"  # a table's rows: a placeholder table in the scratch file, an Arrow dataset at open


def _check_ids(con: duckdb.DuckDBPyConnection, lake: Path) -> None:
    dup = con.execute("SELECT trace_id, list(name ORDER BY name) FROM traces GROUP BY 1 HAVING count(*) > 1 "
                      "LIMIT 1").fetchone()
    if dup:
        raise TracedbError(f"{lake}: traces {', '.join(map(repr, dup[1]))} have the same trace id {dup[0]} "
                           "(written at once by two writers); load one of them again with --replace")


def _build_views(con: duckdb.DuckDBPyConnection, lake: Path, tables: list[str]) -> None:
    """Make each of tables (the per-trace tables a trace of the lake has rows in) a view over a
    placeholder of the same columns (_lake_<table>), which the Arrow dataset of its files shadows
    once registered on the reading connection (a connection's registered objects come before the
    database's tables); the view casts each column to the table's type. A table no trace has rows
    in stays the empty table."""
    for table in tables:
        comments = con.execute("SELECT column_name, data_type, comment FROM duckdb_columns() WHERE table_name = ? "
                               "AND schema_name = 'main' ORDER BY column_index", [table]).fetchall()
        about = con.execute("SELECT comment FROM duckdb_tables() WHERE table_name = ? AND schema_name = 'main'",
                            [table]).fetchone()[0]
        con.execute(f"CREATE TABLE {DATA}{table} AS SELECT * FROM {table} LIMIT 0")
        con.execute(f"DROP TABLE {table}")
        columns = ", ".join(f"CAST({c} AS {t}) AS {c}" for c, t, _ in comments)
        con.execute(f"CREATE VIEW {table} AS SELECT {columns} FROM {DATA}{table}")
        if about:
            con.execute(f"COMMENT ON VIEW {table} IS {literal(about + ' (Parquet files of a trace lake)')}")
        for column, _, comment in comments:
            if comment:
                con.execute(f"COMMENT ON COLUMN {table}.{column} IS {literal(comment)}")
    for kind in RULE_KINDS:  # the user's rules an export holds
        file = lake / kind.table / "user.parquet"
        if file.is_file():
            con.execute(f"INSERT INTO {kind.table} BY NAME SELECT * FROM read_parquet(?, "
                        "hive_partitioning = false)", [file_path(file)])

