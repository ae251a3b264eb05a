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

import contextlib
import hashlib
import os
import re
import shutil
import time
import weakref
from pathlib import Path

import duckdb

from . import modules, rebuild, scratch, sqlfiles
from .errors import TracedbError, reraise_interrupt

DEFAULT_DB = "tracedb.duckdb"
STORAGE_VERSION = "v1.4.0"  # the oldest DuckDB release whose readers must open our files
WAIT_POLL_SECONDS = 0.5
_MIGRATION = re.compile(r"^(\d{3})_[\w-]+\.sql$")


def default_path() -> str:
    return os.environ.get("TRACEDB_DB") or DEFAULT_DB


def migrations() -> list[tuple[int, Path]]:
    out = []
    for path in sorted((sqlfiles.sql_dir() / "schema").glob("*.sql")):
        m = _MIGRATION.match(path.name)
        if m:
            out.append((int(m.group(1)), path))
    return out


def latest_version() -> int:
    return max(v for v, _ in migrations())


# The session variable that scopes the analysis views to the trace being derived (tracedb.facts,
# the _in_scope macro of sql/modules/core/events.sql).
SCOPE_VARIABLE = "tracedb_scope"


# Memory DuckDB may use while a load stages events (beyond it they spill to disk, see
# tracedb.ingest.bulk), and while the derivation runs (its joins and windows spill beyond it: a
# 1 GiB trace derives within it).
LOAD_MEMORY_LIMIT = "192MB"
DERIVE_MEMORY_LIMIT = "400MB"
# A load's commit whose log would hold more than this writes it straight into the file (a
# checkpoint) instead of the write-ahead log, which the close would then copy into the file
# again: on the corpus's 17-20 MB traces, the commit and the close 0.03-0.05 s sooner (DuckDB's
# default is 16 MiB; at 1 MB the commit of a 62 MB trace took twice its time now and then).
LOAD_CHECKPOINT_THRESHOLD = "4MB"

# Settings a failed block could not put back (DuckDB refuses every statement, SET included, in an
# aborted transaction): rollback() restores them.
_restore_after_rollback: "weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, dict[str, str]]" = \
    weakref.WeakKeyDictionary()


# Connections DuckDB invalidated (a fatal error: the disk filled during a checkpoint): no statement
# runs on them again, so nothing tries one (a rollback, a setting put back) and every later use is
# one line saying why (invalidated_by). The file itself is as the last commit left it.
_invalidated: "weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, str]" = weakref.WeakKeyDictionary()


def is_fatal(exc: BaseException) -> bool:
    """A DuckDB error after which its database must be opened again."""
    return isinstance(exc, duckdb.FatalException) or "database has been invalidated" in str(exc)


def invalidated_by(con: duckdb.DuckDBPyConnection) -> str | None:
    """Why DuckDB invalidated this connection's database (None: it did not)."""
    return _invalidated.get(con)


def one_line(exc: BaseException, limit: int = 300) -> str:
    return " ".join(str(exc).split())[:limit]


@contextlib.contextmanager
def settings(con: duckdb.DuckDBPyConnection, **values: object):
    """Change DuckDB settings (memory_limit, threads, preserve_insertion_order, ...) for a block,
    and put back what they were after it, even when it fails inside a transaction. The one place
    tracedb changes a setting: DuckDB settings outlive transactions, and these are the database's,
    shared by every connection and cursor of the process on it, so one left changed would hold for
    every later statement (a user's notebook connection included); while the block runs they hold
    for those too. A setting comes back as DuckDB shows it: a memory limit to 0.1 GiB."""
    before = {k: con.execute("SELECT current_setting(?)", [k]).fetchone()[0] for k in values}
    try:
        for key, value in values.items():
            _set(con, key, value)
        yield
    finally:
        try:
            if invalidated_by(con) is None:
                for key, value in before.items():
                    _set(con, key, value)
        except duckdb.TransactionException:  # the transaction failed: its owner's rollback restores them
            _restore_after_rollback.setdefault(con, {}).update(before)


def _set(con: duckdb.DuckDBPyConnection, key: str, value: object) -> None:
    if not re.fullmatch(r"[a-z_]+", key):
        raise ValueError(f"not a setting name: {key!r}")
    literal = str(value).lower() if isinstance(value, bool) else str(value)
    if key == "memory_limit" and literal.endswith("PiB"):
        literal = "-1"  # no limit reads back as 16383.9 PiB, which SET refuses
    con.execute(f"SET {key} = '{literal}'")


def rollback(con: duckdb.DuckDBPyConnection) -> None:
    """ROLLBACK (when the transaction is still open), then restore what a failed block could not:
    the settings it changed, and the derivation's scope (a session variable outlives a rollback,
    so every view read on the connection afterwards would see one trace alone)."""
    if invalidated_by(con) is not None:
        return  # DuckDB ends the transaction of a database it invalidated
    try:
        con.execute("ROLLBACK")
    except duckdb.TransactionException as exc:
        # a Ctrl-C that lands as COMMIT returns: the transaction is committed, and the interrupt
        # (not this) is what the caller must see
        if "no transaction is active" not in str(exc):
            raise
    con.execute(f"RESET VARIABLE {SCOPE_VARIABLE}")
    for key, value in _restore_after_rollback.pop(con, {}).items():
        _set(con, key, value)


@contextlib.contextmanager
def transaction(con: duckdb.DuckDBPyConnection, failure: str):
    """BEGIN ... COMMIT, or ROLLBACK on any error; a DuckDB error becomes one line, '<failure>: <error>'."""
    con.execute("BEGIN TRANSACTION")
    try:
        yield
        con.execute("COMMIT")
    except duckdb.Error as exc:
        _raise_fatal(con, exc, failure)
        rollback(con)
        reraise_interrupt(exc)
        raise TracedbError(f"{failure}: {one_line(exc)}") from None
    except BaseException:
        rollback(con)
        raise


@contextlib.contextmanager
def one_line_errors(con: duckdb.DuckDBPyConnection, failure: str):
    """A DuckDB error in the block, outside any transaction (a load's staging), becomes one line,
    '<failure>: <error>'."""
    try:
        yield
    except duckdb.Error as exc:
        _raise_fatal(con, exc, failure)
        reraise_interrupt(exc)
        raise TracedbError(f"{failure}: {one_line(exc)}") from None


def _raise_fatal(con: duckdb.DuckDBPyConnection, exc: duckdb.Error, failure: str) -> None:
    if is_fatal(exc):  # e.g. the disk filled during the commit's checkpoint
        _invalidated[con] = one_line(exc, 200)
        raise TracedbError(f"{failure}: {one_line(exc)}; the database opens again with every trace "
                           "committed (free some space and load the file again)") from None


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
    if path.is_dir():
        raise TracedbError(f"{path}: is a directory, not a database file")
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
        if _needs_upgrade(con):
            con.close()
            # upgrade (the views, never the stored facts: a reader does not re-derive), then reopen read-only
            _connect(path, False, memory_limit, storage, derive=False).close()
            con = _connect(path, True, memory_limit, storage)
    return con


def _connect(path: Path, read_only: bool, memory_limit: str | None, storage: str | None,
             template: bool = False, derive: bool = True) -> duckdb.DuckDBPyConnection:
    # no extension is fetched or loaded behind the user's back (a path DuckDB takes for another
    # format would download its reader)
    config: dict = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}
    if memory_limit:
        config["memory_limit"] = memory_limit
    copied = False
    if not read_only and not path.exists():
        wanted = storage or storage_version()
        from .template import copy_to as copy_template  # here: python -m tracedb.template imports db

        copied = template and wanted == STORAGE_VERSION and copy_template(path)
        if not copied:
            config["storage_compatibility_version"] = wanted
    try:
        con = duckdb.connect(str(path), read_only=read_only, config=config)
    except duckdb.Error as exc:
        reraise_interrupt(exc)
        locked = "Could not set lock" in str(exc) or "Conflicting lock" in str(exc)
        raise (DatabaseLocked if locked else TracedbError)(_explain_open_error(path, exc)) from None
    scratch.remove_dead()  # what killed commands left in the temporary directory
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
        except Exception:
            con.close()
            raise
    return con


# The read-write connections this process has open, by file (see _connect).
_writers: "weakref.WeakValueDictionary[str, duckdb.DuckDBPyConnection]" = weakref.WeakValueDictionary()


def spill_folder(path: Path) -> Path:
    """Where DuckDB spills a database file's work beyond its memory limit: FILE.tmp beside it."""
    return path.with_name(path.name + ".tmp")


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


def lock_down(con: duckdb.DuckDBPyConnection) -> None:
    """Let a connection run a user's SQL and nothing else: no file read or written (COPY ... TO,
    EXPORT DATABASE, ATTACH, read_csv of any path), no extension installed or loaded, and no
    setting changed afterwards, by DuckDB's own switches rather than a filter of keywords, whatever
    wraps the statement (EXPLAIN ANALYZE, a CTE, a macro, a prepared statement). The database itself
    must be open read-only; a trace lake's connection reads its Parquet through registered Arrow
    datasets (tracedb.lake), so it too is left with no file to reach."""
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
        out[name] = hashlib.sha256(path.read_bytes()).hexdigest()
    for folder in ("rules", "derive"):
        for path in sorted((sqlfiles.sql_dir() / folder).glob("*")):
            if path.suffix in (".csv", ".sql"):
                out[f"{folder}/{path.name}"] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def _needs_upgrade(con: duckdb.DuckDBPyConnection) -> bool:
    version = schema_version(con)
    _refuse_newer(version)
    if version < latest_version():
        return True
    stored = dict(con.execute("SELECT file, sha256 FROM tracedb_views").fetchall())
    return stored != _views_fingerprint()


def _refuse_newer(version: int) -> None:
    if version > latest_version():
        raise TracedbError(
            f"database schema v{version} is newer than this tracedb understands (v{latest_version()}); "
            "upgrade tracedb to open it")


def run_script(con: duckdb.DuckDBPyConnection, text: str) -> None:
    """Run every statement of a SQL file, each followed by the COMMENT ONs from its doc block, in
    one call (hundreds of small statements: one call each would double the cost of a new database)."""
    parts = []
    for stmt in sqlfiles.split_statements(text):
        parts.append(stmt)
        doc = sqlfiles.object_docs(stmt)
        if doc:
            parts.extend(sqlfiles.comment_statements(doc))
    if parts:
        # a newline before each ";": a statement may end in a -- comment
        con.execute("\n;\n".join(p.rstrip().rstrip(";") for p in parts))


def used_params(stmt: str, params: dict) -> dict | None:
    """The $name parameters a statement uses outside comments (DuckDB refuses unused ones)."""
    code = "\n".join(line.split("--", 1)[0] for line in stmt.splitlines())
    used = {k: v for k, v in params.items() if re.search(rf"\${k}\b", code)}
    return used or None


def run_with_params(con: duckdb.DuckDBPyConnection, statements: list[str], params: dict) -> None:
    """Run statements, binding to each only the $name parameters it uses."""
    for stmt in statements:
        con.execute(stmt, used_params(stmt, params))


def run_file(con: duckdb.DuckDBPyConnection, rel: str, params: dict | None = None) -> None:
    """Run the statements of sql/<rel> with run_with_params."""
    run_with_params(con, sqlfiles.split_statements(sqlfiles.read(rel)), params or {})


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
        stored = dict(con.execute("SELECT file, sha256 FROM main.tracedb_views").fetchall())
        bootstrapped = True
    except duckdb.CatalogException:
        stored, bootstrapped = {}, False
    if bootstrapped and version == latest_version() and stored == wanted and not force_views:
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
            _apply_views(con, wanted, None if force_views else stored, derive)


def _derivation_keys(fingerprint: dict[str, str]) -> set[str]:
    """The keys of a fingerprint the stored facts depend on: the modules the derivation reads, the
    packaged rules and the derivation itself."""
    reads = modules.derivation_modules()
    return {k for k in fingerprint if k in reads or k.startswith(("rules/", "derive/"))}


def _apply_views(con: duckdb.DuckDBPyConnection, wanted: dict[str, str], stored: dict[str, str] | None = None,
                 derive: bool = True) -> None:
    """(Re)create the views and macros of the SQL modules, in the order their includes give, and
    reload the packaged rules (the caller owns the transaction). The stored facts are derived
    again only when what the derivation reads changed (stored: the fingerprint the database
    holds, None: derive whatever changed); with derive false, that is left to the next writer:
    the fingerprint keeps the old digests of what the derivation reads, so it is still seen stale."""
    from . import facts, rules  # both run their SQL files through this module

    known = modules.modules()
    for name in modules.order():
        run_script(con, known[name].read_text(encoding="utf-8"))
    rules.load_builtin(con)
    keys = _derivation_keys({**wanted, **(stored or {})})
    stale = stored is None or any(stored.get(k) != wanted.get(k) for k in keys)
    kept = dict(wanted)
    if stale and derive:
        facts.derive_all(con)
    elif stale:
        kept = {k: v for k, v in wanted.items() if k not in keys}
        kept.update({k: v for k, v in (stored or {}).items() if k in keys})
    con.execute("DELETE FROM tracedb_views")
    con.executemany("INSERT INTO tracedb_views VALUES (?, ?)", list(kept.items()))
