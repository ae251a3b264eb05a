"""Opening a tracedb database: schema migrations, views, and friendly errors.

Migrations are the files sql/schema/NNN_*.sql, applied in order and recorded in tracedb_schema.
Views and macros are the SQL modules sql/modules/<domain>/<name>.sql (tracedb.modules), run in
the order their includes give and re-created whenever their text changes; the stored facts are
derived again only when a module the derivation includes changed, and never for a read-only open.
Whatever an open has to bring up to date (a new file, pending migrations, changed modules) happens
in one transaction. The
comment block above each CREATE becomes COMMENT ON TABLE/VIEW/COLUMN. A new file is a copy of the
packaged empty database (tracedb.template), which those steps built once.

A new database file is written in DuckDB's v1.4.0 storage format (STORAGE_VERSION, or
$TRACEDB_STORAGE_VERSION, or load --storage-version), which every DuckDB from 1.4 on reads: the
DuckDB CLI, notebooks and dashboards on older releases open the same file (duckdb 2.0's own
format is refused by 1.4 readers). An existing file keeps the format it was created with.

DuckDB lets one process write a file, and no other process open it meanwhile, not even to read:
a file held elsewhere is a one-line error naming the holder, and open_db can wait for it.
"""

from __future__ import annotations

import atexit
import dataclasses
import functools
import os
import stat
import re
import shutil
import threading
import time
import weakref
from pathlib import Path

import duckdb

from . import modules, rebuild, scratch, sqlfiles, store
from .filestate import digest, settled, stat_key
from .store import run_script, transaction
from .errors import TracedbError, damaged, is_damage, is_interrupt, reraise_interrupt

DEFAULT_DB = "tracedb.duckdb"
STORAGE_VERSION = "v1.4.0"  # the oldest DuckDB release whose readers must open our files
WAIT_POLL_SECONDS = 0.5
_MIGRATION = re.compile(r"^(\d{3})_[\w-]+\.sql$")


def default_path() -> str:
    return os.environ.get("TRACEDB_DB") or DEFAULT_DB


def state(path: Path) -> tuple:
    """What a load, a removal or a rule changes in a database file: the file and its write-ahead
    log (tracedb.state)."""
    return settled((stat_key(path), stat_key(path.with_name(path.name + ".wal"))))


def migrations() -> list[tuple[int, Path]]:
    out = []
    for path in sorted((sqlfiles.sql_dir() / "schema").glob("*.sql")):
        m = _MIGRATION.match(path.name)
        if m:
            out.append((int(m.group(1)), path))
    return out


def latest_version() -> int:
    return max(v for v, _ in migrations())


def storage_version() -> str:
    return os.environ.get("TRACEDB_STORAGE_VERSION") or STORAGE_VERSION


class DatabaseLocked(TracedbError):
    """Another process holds the database file."""


def open_db(path: str | os.PathLike | None = None, *, read_only: bool = False,
            memory_limit: str | None = None, wait: float = 0.0,
            storage: str | None = None, create: bool = True, template: bool = True) -> duckdb.DuckDBPyConnection:
    """Open a tracedb database, migrated and with current views; a missing file is created when
    create is true (and never by a read-only open).

    A read-only open of a database whose schema or views are out of date upgrades it first
    through a short read-write connection. wait: seconds to keep trying while another process
    holds the file. storage: the storage version of a file created now (default storage_version()).
    template: a file created now in the default storage version starts as a copy of the packaged
    empty database (tracedb.template) rather than being built from the SQL files.
    """
    path = Path(path or default_path())
    check_kind(path)
    if (read_only or not create) and not path.exists():
        raise TracedbError(f"{path}: no such database (load a trace first: tracedb load FILE --db {path})")
    check_header(path)
    deadline = time.monotonic() + max(0.0, wait)
    while True:
        try:
            return _open(path, read_only, memory_limit, storage, template)
        except DatabaseLocked:
            if time.monotonic() >= deadline:
                raise
            time.sleep(WAIT_POLL_SECONDS)


# What a path that is not a regular file is, for the line that refuses it (reading a FIFO would
# wait for a writer, a socket or device is never a database).
_NODE_KINDS = ((stat.S_ISDIR, "is a directory"), (stat.S_ISFIFO, "is a FIFO (named pipe)"),
               (stat.S_ISSOCK, "is a socket"), (stat.S_ISCHR, "is a character device"),
               (stat.S_ISBLK, "is a block device"))


def check_kind(path: Path) -> None:
    """A TracedbError at once when path exists and is not a regular file (stat, which never
    waits, rather than open, which waits on a FIFO for a writer)."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise TracedbError(f"{path}: cannot look at it: {exc.strerror or exc}") from None
    for test, kind in _NODE_KINDS:
        if test(mode):
            raise TracedbError(f"{path}: {kind}, not a database file")


DUCKDB_MAGIC = (8, b"DUCK")  # a DuckDB file's header: a checksum, then these bytes


def check_header(path: Path) -> None:
    """A TracedbError unless path is missing, empty or a DuckDB database: DuckDB would open another
    file (JSON, CSV, Parquet, SQLite) as something else — an in-memory database, or through an
    extension it downloads — and a load into it would be lost."""
    try:
        with open(path, "rb") as f:
            head = f.read(DUCKDB_MAGIC[0] + len(DUCKDB_MAGIC[1]))
    except FileNotFoundError:
        return
    except OSError as exc:
        raise TracedbError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if head and head[DUCKDB_MAGIC[0]:] != DUCKDB_MAGIC[1]:
        kind = "a SQLite database" if head.startswith(b"SQLite") else "not a DuckDB database"
        raise TracedbError(f"{path}: {kind}, left untouched; give a tracedb database (a DuckDB file) or a new path")


def _open(path: Path, read_only: bool, memory_limit: str | None, storage: str | None,
          template: bool) -> duckdb.DuckDBPyConnection:
    con = _connect(path, read_only, memory_limit, storage, template)
    if read_only:
        try:
            stale = _needs_upgrade(con)
        except duckdb.Error as exc:  # the file opened, but what it holds cannot be read
            con.close()
            reraise_interrupt(exc)
            raise TracedbError(damaged(path, exc)) from None
        if stale:
            con.close()
            # upgrade (the views, never the stored facts: a reader does not re-derive), then reopen read-only
            _connect(path, False, memory_limit, storage, derive=False).close()
            con = _connect(path, True, memory_limit, storage)
    return con


def _connect(path: Path, read_only: bool, memory_limit: str | None, storage: str | None,
             template: bool = False, derive: bool = True) -> duckdb.DuckDBPyConnection:
    # no extension is fetched or loaded behind the user's back (a path DuckDB takes for another
    # format would download its reader)
    config: dict = {"autoinstall_known_extensions": False, "autoload_known_extensions": False,
                    **store.CONNECTION_CONFIG}
    if memory_limit:
        config["memory_limit"] = memory_limit
    if read_only:
        # a reader spills in a folder of its own, never in FILE.tmp beside the database (a writer's,
        # which a reader can then tell apart: see below)
        config["temp_directory"] = str(reader_spill())
    copied = False
    creating = not read_only and not path.exists()
    if creating:
        wanted = storage or storage_version()
        try:
            copied = template and wanted == STORAGE_VERSION and store.copy_to(path, build_new)
        except OSError as exc:  # the copy is written beside and renamed: nothing half-made at path
            raise TracedbError(f"{path}: cannot create the database: {exc.strerror or exc}") from None
        if not copied:
            config["storage_compatibility_version"] = wanted
    try:
        con = duckdb.connect(str(path), read_only=read_only, config=config)
    except duckdb.Error as exc:
        reraise_interrupt(exc)
        locked = "Could not set lock" in str(exc) or "Conflicting lock" in str(exc)
        if creating and not locked:  # no half-made file (a locked one is another process's, made meanwhile)
            _remove_partial(path)
        raise (DatabaseLocked if locked else TracedbError)(_explain_open_error(path, exc)) from None
    scratch.remove_dead()  # what killed commands left in the temporary directory
    if read_only and spill_folder(path).is_dir() and not in_use(spill_folder(path)):
        # a read-only open holds the file, so no tracedb writer runs: FILE.tmp is a killed writer's
        # (or a DuckDB shell's that ended); one that some process still has a file of open is left
        shutil.rmtree(spill_folder(path), ignore_errors=True)
    if not read_only:
        # this connection holds the file's only lock: DuckDB's spill folder beside it is what a
        # killed writer left (DuckDB removes it on a clean close only), unless this process has
        # the file open already (DuckDB then shares one database between the connections)
        key = str(path.resolve())
        if _writers.get(key) is None:
            shutil.rmtree(spill_folder(path), ignore_errors=True)
        _writers[key] = con
        try:
            upgrade(con, derive=derive)  # a stale template is brought up to date like any older file
            if copied:
                con.execute("UPDATE tracedb_schema SET applied_at = now()::TIMESTAMP")
        except BaseException as exc:
            con.close()
            if creating:
                if is_interrupt(exc):  # interrupted while creating: no half-made file either
                    _remove_partial(path)
                    raise
                _not_created(path, exc)
            if is_damage(exc):
                _writers.pop(key, None)
                raise TracedbError(damaged(path, exc)) from None
            raise
    return con


def _remove_partial(path: Path) -> None:
    _writers.pop(str(path.resolve()), None)
    for leftover in (path, path.with_name(path.name + ".wal"), spill_folder(path)):
        if leftover.is_dir():
            shutil.rmtree(leftover, ignore_errors=True)
        else:
            leftover.unlink(missing_ok=True)


def _not_created(path: Path, exc: BaseException) -> None:
    """A database this command was creating could not be made (the disk full, say): no half-made
    file stays behind, and one line names it."""
    _remove_partial(path)
    text = " ".join(str(exc).split())
    raise TracedbError(f"{path}: cannot create the database: {text[:300]}") from None


def build_new(path: Path) -> None:
    """A new database at path built from the SQL files (what the template holds)."""
    open_db(path, storage=STORAGE_VERSION, template=False).close()


# The read-write connections this process has open, by file (see _connect).
_writers: "weakref.WeakValueDictionary[str, duckdb.DuckDBPyConnection]" = weakref.WeakValueDictionary()


def spill_folder(path: Path) -> Path:
    """Where DuckDB spills a database file's work beyond its memory limit: FILE.tmp beside it."""
    return path.with_name(path.name + ".tmp")


@functools.cache
def reader_spill() -> Path:
    """This process's folder for what read-only connections spill (removed when it exits; a killed
    process's by the next command, scratch.remove_dead)."""
    folder = scratch.make("spill")
    atexit.register(shutil.rmtree, folder, True)
    return folder


def in_use(folder: Path) -> bool:
    """Whether some process has a file under folder open (Linux: /proc/*/fd); True where that
    cannot be told, so that nothing another process uses is removed."""
    proc = Path("/proc")
    if not (proc / "self" / "fd").is_dir():
        return True
    prefix = str(folder.resolve()) + os.sep
    for pid in os.listdir(proc):
        if not pid.isdigit():
            continue
        try:
            for fd in os.scandir(proc / pid / "fd"):
                if os.readlink(fd.path).startswith(prefix):
                    return True
        except OSError:  # a process that ended, or another user's: its files are not ours to judge
            continue
    return False


def _explain_open_error(path: Path, exc: Exception) -> str:
    text = str(exc)
    if "Could not set lock" in text or "Conflicting lock" in text:
        holder = re.search(r"held in (.+?) \(PID (\d+)\)", text)
        who = f"process {holder.group(2)} ({holder.group(1)})" if holder else "another process"
        return (f"{path}: {who} holds this database (DuckDB allows one writer and no other process "
                f"meanwhile); close it or try again when it is done (tracedb load --wait SECONDS waits for it)")
    if "is not a known DuckDB version" in text:
        given = re.search(r"version string '([^']*)'", text)
        return (f"{path}: storage version {given.group(1) if given else '?'} is not a DuckDB release "
                f"(e.g. {STORAGE_VERSION}, v1.5.0, latest)")
    if "not a valid DuckDB database" in text or "Unrecognized" in text or "not a DuckDB" in text:
        return f"{path}: not a DuckDB database file"
    if "newer" in text.lower() and "version" in text.lower():
        return f"{path}: written by a newer DuckDB than this one ({duckdb.__version__}); upgrade duckdb"
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return f"{path}: cannot open database: {first}"


@dataclasses.dataclass
class _Shared:
    """A file this process reads: the connection its readers are cursors of, whether it runs in the
    sandbox, and the cursors handed out and not closed yet."""
    root: duckdb.DuckDBPyConnection
    sandboxed: bool
    cursors: list = dataclasses.field(default_factory=list)


_readers: dict[str, _Shared] = {}  # by resolved path (see open_reader)
_readers_lock = threading.Lock()


def open_reader(path: str | os.PathLike | None = None, *, wait: float = 0.0,
                sandbox: bool = True) -> duckdb.DuckDBPyConnection:
    """A read-only connection, in the sandbox of lock_down unless sandbox is false; give it back
    with close_reader.

    DuckDB gives every connection a process opens to one file the same database, settings
    included: once a sandboxed connection has locked them, a second open that sets them fails. So
    every reader of a file is a cursor of one connection this process holds while any of them is
    open (two sessions of a dashboard, two threads of a notebook); a file read both in the sandbox
    and outside it is refused in one line, since the sandbox would close the other's files."""
    path = Path(path or default_path())
    key = str(path.resolve())
    with _readers_lock:
        shared = _readers.get(key)
        if shared is None:
            root = open_db(path, read_only=True, wait=wait)
            if sandbox:
                try:
                    lock_down(root)
                except BaseException:
                    root.close()
                    raise
            shared = _readers[key] = _Shared(root, sandbox)
        elif shared.sandboxed != sandbox:
            mode = "in the sandbox" if shared.sandboxed else "with files=True"
            raise TracedbError(f"{path}: open read-only {mode} in this process already; close those "
                               f"connections first, or open this one the same way")
        cursor = shared.root.cursor()
        shared.cursors.append(cursor)
        return cursor


def lock_down_reader(path: str | os.PathLike, cursor: duckdb.DuckDBPyConnection) -> None:
    """Put a connection of open_reader, and so every reader of its file in this process, in the sandbox."""
    with _readers_lock:
        lock_down(cursor)
        shared = _readers.get(str(Path(path).resolve()))
        if shared is not None and any(c is cursor for c in shared.cursors):
            shared.sandboxed = True


def close_reader(path: str | os.PathLike, cursor: duckdb.DuckDBPyConnection) -> None:
    """Close a connection of open_reader; the file's own connection goes with its last reader."""
    key = str(Path(path).resolve())
    with _readers_lock:
        cursor.close()
        shared = _readers.get(key)
        if shared is None or not any(c is cursor for c in shared.cursors):
            return
        shared.cursors = [c for c in shared.cursors if c is not cursor]
        if not shared.cursors:
            del _readers[key]
            shared.root.close()


def lock_down(con: duckdb.DuckDBPyConnection) -> None:
    """Let a connection run a user's SQL and nothing else: no file read or written (COPY ... TO,
    EXPORT DATABASE, ATTACH, read_csv of any path; no temporary directory either, so its queries run
    in memory), no extension installed or loaded, and no setting changed afterwards, by DuckDB's own switches rather than a filter of keywords, whatever
    wraps the statement (EXPLAIN ANALYZE, a CTE, a macro, a prepared statement). The database itself
    must be open read-only; a trace lake's connection reads its Parquet through registered Arrow
    datasets (tracedb.lake), so it too is left with no file to reach."""
    con.execute("SET temp_directory = ''")  # DuckDB lets a query write in its temporary directory: none
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")


def schema_version(con: duckdb.DuckDBPyConnection) -> int:
    try:  # asking the table is quicker than looking it up in the catalog on every open
        return con.execute("SELECT coalesce(max(version), 0) FROM main.tracedb_schema").fetchone()[0]
    except duckdb.CatalogException:
        return 0


def _views_fingerprint() -> dict[str, str]:
    """Digest of every SQL module (keyed by its name, core.events), of the packaged rules
    (rules/...) and of the derivation (derive/...)."""
    out = {}
    for name, path in modules.modules().items():
        out[name] = digest(path)
    for folder in ("rules", "derive"):
        for path in sorted((sqlfiles.sql_dir() / folder).glob("*")):
            if path.suffix in (".csv", ".sql"):
                out[f"{folder}/{path.name}"] = digest(path)
    return out


# A row of tracedb_views whose file is PENDING + derive/<name>: that derivation file's facts are
# older than the views (a reader brought the views up to date; the next writer derives them).
PENDING = "pending:"


def _stored_views(con: duckdb.DuckDBPyConnection) -> tuple[dict[str, str], set[str]]:
    """The fingerprint of the views a database holds, and the derivation files left to derive."""
    rows = con.execute("SELECT file, sha256 FROM main.tracedb_views").fetchall()
    views = {f: d for f, d in rows if not f.startswith(PENDING)}
    return views, {f[len(PENDING) + len("derive/"):] for f, _ in rows if f.startswith(PENDING)}


def _needs_upgrade(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether a reader must bring the views up to date first (facts left to derive it never runs)."""
    version = schema_version(con)
    _refuse_newer(version)
    if version < latest_version():
        return True
    return _stored_views(con)[0] != _views_fingerprint()


def _refuse_newer(version: int) -> None:
    if version > latest_version():
        raise TracedbError(
            f"database schema v{version} is newer than this tracedb understands (v{latest_version()}); "
            "upgrade tracedb to open it")


def upgrade(con: duckdb.DuckDBPyConnection, force_views: bool = False, derive: bool = True) -> None:
    """Bring a database opened read-write up to date, in one transaction: the bookkeeping tables, the
    pending migrations, then the views, macros and packaged rules when their files changed (every
    trace is then re-derived when what the derivation reads changed, unless derive is false: an
    upgrade for a read-only open leaves that to the next writer). An up-to-date database costs two
    small queries; a new one is created in one transaction, whole or not at all."""
    version = schema_version(con)
    _refuse_newer(version)
    wanted = _views_fingerprint()
    try:
        stored, pending = _stored_views(con)
        bootstrapped = True
    except duckdb.CatalogException:
        stored, pending, bootstrapped = {}, set(), False
    if (bootstrapped and version == latest_version() and stored == wanted and not force_views
            and not (pending and derive)):
        return
    schema_dir = sqlfiles.sql_dir() / "schema"
    with transaction(con, "cannot bring the database up to date"):
        if not bootstrapped:
            run_script(con, (schema_dir / "000_bootstrap.sql").read_text(encoding="utf-8"))
        for number, path in migrations():
            if number == 0 or number <= version:
                continue
            run_script(con, path.read_text(encoding="utf-8"))
            if number in rebuild.STEPS:  # what the file's SQL cannot write (its header says what)
                rebuild.STEPS[number](con)
            con.execute("INSERT INTO tracedb_schema VALUES (?, ?, now()::TIMESTAMP)", [number, path.name])
        if stored != wanted or force_views:
            _apply_views(con, wanted, None if force_views else stored, derive, pending)
        elif pending and derive:  # the views are current; facts a reader left to derive
            from . import facts

            facts.derive_all(con, sorted(pending & {name for name, _ in facts.derivations()}))
            con.execute(f"DELETE FROM tracedb_views WHERE starts_with(file, '{PENDING}')")


def _derivation_keys(fingerprint: dict[str, str], name: str) -> set[str]:
    """The keys of a fingerprint a derivation file's facts depend on: the modules it reads (its
    include closure), the packaged rules and the file itself."""
    path = sqlfiles.sql_dir() / "derive" / name
    reads = modules.closure(modules.includes(path))
    return {k for k in fingerprint if k in reads or k.startswith("rules/") or k == f"derive/{name}"}


def _apply_views(con: duckdb.DuckDBPyConnection, wanted: dict[str, str], stored: dict[str, str] | None = None,
                 derive: bool = True, pending: set[str] = frozenset()) -> None:
    """(Re)create the views and macros of the SQL modules, in the order their includes give, and
    reload the packaged rules (the caller owns the transaction). The stored facts are derived
    again only when what the derivation reads changed (stored: the fingerprint the database
    holds, None: derive whatever changed), and where a reader left them (pending); with derive
    false, that is left to the next writer: the files to derive are kept as PENDING rows, so that
    the views count as current (a reader opens without applying them again, a second a command)
    while the next writer still derives."""
    from . import facts, rules  # both run their SQL files through this module

    known = modules.modules()
    for name in modules.order():
        run_script(con, known[name].read_text(encoding="utf-8"))
    rules.load_builtin(con)
    every = {**wanted, **(stored or {})}
    # each derivation file is run again when what it reads changed: its include closure, the rules
    # (read by the classification) or the file itself
    changed = [name for name, _ in facts.derivations()
               if name in pending or stored is None
               or any(stored.get(k) != wanted.get(k) for k in _derivation_keys(every, name))]
    kept = dict(wanted)
    if changed and derive:
        facts.derive_all(con, changed)
    elif changed:
        kept.update({f"{PENDING}derive/{name}": "pending" for name in changed})
    con.execute("DELETE FROM tracedb_views")
    con.executemany("INSERT INTO tracedb_views VALUES (?, ?)", list(kept.items()))
