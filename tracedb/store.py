"""The bottom of tracedb's house: what every layer above does with a DuckDB connection.

Transactions (one per load, rolled back whole, a fatal error turned into one line), settings changed
for a block and put back, views computed once for a block (shadowed by temporary tables), SQL files
run with their parameters and their doc blocks turned into COMMENTs, and the packaged empty
database a new file is copied from. The analysis (tracedb.rules,
tracedb.facts) and the opening of a database (tracedb.db) build on this; it imports none of them.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import shutil
import tempfile
import time
import weakref
from pathlib import Path
from typing import Callable

import duckdb

from . import atomic, filestate, sqlfiles
from .errors import TracedbError, is_damage, reraise_interrupt

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

# Settings of every connection tracedb opens. DuckDB 2.0's projection_pullup pass re-optimizes each
# subtree it simplifies: on the analysis views' deep plans it took a quarter of a report's planning
# (why: 0.13 of 0.6 s; roofline 0.04-0.08 s a section), and planning is most of a report's time,
# while the reports on the corpus's traces ran no slower without it (why, compare, roofline and
# efficiency on the timesformer pair and sd3.5: 1.1-2.6 s either way, within the runs' spread).
CONNECTION_CONFIG = {"disabled_optimizers": "projection_pullup"}

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
    """An error on one line of at most limit characters; a DuckDB I/O error whose details carry an
    errno says first what it means ("No space left on device"), since its path may take the rest."""
    text = " ".join(str(exc).split())
    code = re.search(r'"errno"\s*:\s*"(\d+)"', text)
    if code:
        text = f"{os.strerror(int(code.group(1)))}: {text}"
    return text[:limit]


@contextlib.contextmanager
def settings(con: duckdb.DuckDBPyConnection, **values: object):
    """Change DuckDB settings (memory_limit, threads, preserve_insertion_order, ...) for a block,
    and put back what they were after it, even when it fails inside a transaction. The one place
    tracedb changes a setting: DuckDB settings outlive transactions, and these are the database's,
    shared by every connection and cursor of the process on it, so one left changed would hold for
    every later statement (a user's notebook connection included); while the block runs they hold
    for those too. A setting comes back as DuckDB shows it: a memory limit to 0.1 GiB."""
    if not values:
        yield
        return
    # one statement reads them all, one sets them, one puts them back (a load changes six)
    row = con.execute("SELECT " + ", ".join(f"current_setting('{_name(k)}')" for k in values)).fetchone()
    before = dict(zip(values, row))
    try:
        _set(con, values)
        yield
    finally:
        try:
            if invalidated_by(con) is None:
                _set(con, before)
        except duckdb.TransactionException:  # the transaction failed: its owner's rollback restores them
            _restore_after_rollback.setdefault(con, {}).update(before)


def _name(key: str) -> str:
    if not re.fullmatch(r"[a-z_]+", key):
        raise ValueError(f"not a setting name: {key!r}")
    return key


def _set(con: duckdb.DuckDBPyConnection, values: dict[str, object]) -> None:
    """SET each setting to its value, in one call."""
    statements = []
    for key, value in values.items():
        literal = str(value).lower() if isinstance(value, bool) else str(value)
        if key == "memory_limit" and literal.endswith("PiB"):
            literal = "-1"  # no limit reads back as 16383.9 PiB, which SET refuses
        statements.append(f"SET {_name(key)} = '{literal}'")
    if statements:
        con.execute(";\n".join(statements))


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
    _set(con, _restore_after_rollback.pop(con, {}))


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
        if is_damage(exc):  # the file's fault, said with its name by whoever opened it
            raise
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
        if is_damage(exc):  # the file's fault, said with its name by whoever opened it
            raise
        raise TracedbError(f"{failure}: {one_line(exc)}") from None


def _raise_fatal(con: duckdb.DuckDBPyConnection, exc: duckdb.Error, failure: str) -> None:
    if is_fatal(exc):  # e.g. the disk filled during the commit's checkpoint
        _invalidated[con] = one_line(exc, 200)
        if is_damage(exc):  # a damaged file met mid-transaction: said with the file's name
            raise exc
        raise TracedbError(f"{failure}: {one_line(exc)}; the database opens again with every trace "
                           "committed (free some space and load the file again)") from None


@contextlib.contextmanager
def shadowed(con: duckdb.DuckDBPyConnection, views: list[str], trace_ids: list[int] | None):
    """While the block runs, each view as a temporary table of the same name holding the view's
    rows of trace_ids (None: every trace), computed once. DuckDB looks temporary objects up first,
    so every query of the block, and every view it reads, reads the table: each reading of a view
    plans it again (why's findings read step_windows eleven times: half their time). The block
    must read those views for trace_ids alone. Dropped when the block ends, however it ends; a
    temporary object of that name already there (a user's, or one a second Ctrl-C left) is refused
    in one line rather than read or replaced."""
    there = [r[0] for r in con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE temporary AND list_contains($views, table_name) "
        "UNION ALL SELECT view_name FROM duckdb_views() WHERE temporary AND list_contains($views, view_name)",
        {"views": views}).fetchall()]
    if there:
        raise TracedbError(f"a temporary table or view {there[0]} hides tracedb's view on this connection; "
                           f"drop it (DROP TABLE temp.{there[0]}) or use a connection of its own")
    made = []
    try:
        for view in views:
            made.append(view)  # dropped if there, whenever the creation stops
            con.execute(f"CREATE TEMP TABLE {view} AS SELECT * FROM {view} "
                        "WHERE $ids IS NULL OR list_contains($ids, trace_id)", {"ids": trace_ids})
        yield
    finally:
        for view in reversed(made):
            with contextlib.suppress(duckdb.Error):  # a connection an interrupt or a fatal error ended
                con.execute(f"DROP TABLE IF EXISTS temp.{view}")


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
    named = _param_names(stmt)
    used = {k: v for k, v in params.items() if k in named}
    return used or None


@functools.lru_cache(maxsize=512)
def _param_names(stmt: str) -> frozenset[str]:
    # the same statements run at every load and report: each read once a process
    code = "\n".join(line.split("--", 1)[0] for line in stmt.splitlines())
    return frozenset(re.findall(r"\$(\w+)", code))


def run_with_params(con: duckdb.DuckDBPyConnection, statements: list[str], params: dict) -> None:
    """Run statements, binding to each only the $name parameters it uses."""
    for stmt in statements:
        con.execute(stmt, used_params(stmt, params))


def run_file(con: duckdb.DuckDBPyConnection, rel: str, params: dict | None = None) -> None:
    """Run the statements of sql/<rel> with run_with_params."""
    run_with_params(con, sqlfiles.split_statements(sqlfiles.read(rel)), params or {})


# The empty database a new file is copied from, the way PostgreSQL copies template1: built once
# from the SQL files (schema, modules, built-in rules) by the opening of a database (tracedb.db),
# kept in the user's cache under the fingerprint of those files and of DuckDB, and rebuilt when
# either changes. Without a writable cache, a new file is built from the SQL files directly.
TEMPLATE_PREFIX = "new_database-"
STALE_TEMPLATE_DAYS = 30  # templates of other SQL versions left unused this long are removed


def cache_dir() -> Path:
    """$TRACEDB_CACHE, else $XDG_CACHE_HOME/tracedb, else ~/.cache/tracedb."""
    given = os.environ.get("TRACEDB_CACHE")
    if given:
        return Path(given)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tracedb"


def template_fingerprint() -> str:
    """What a new database is built from: every SQL and rules file but the reports (which run
    from their files), the code that runs them, and DuckDB's version."""
    root = sqlfiles.sql_dir()
    code = Path(__file__).resolve().parent
    digest = hashlib.sha256(duckdb.__version__.encode() + b"\0")
    files = [p for p in root.rglob("*") if p.suffix in (".sql", ".csv", ".tsv")
             and "reports" not in p.relative_to(root).parts] + list(code.glob("*.py"))
    for path in sorted(files):
        digest.update(path.name.encode() + b"\0" + filestate.digest(path).encode() + b"\0")
    return digest.hexdigest()[:20]


def template_path() -> Path:
    return cache_dir() / f"{TEMPLATE_PREFIX}{template_fingerprint()}.duckdb"


def build_template(build: Callable[[Path], None]) -> Path:
    """The template of the current SQL files, built by build(path) (a new database at path) when
    the cache has none; OSError when the cache cannot be written."""
    return cached(template_path(), build, TEMPLATE_PREFIX)


def cached(target: Path, build: Callable[[Path], None], prefix: str) -> Path:
    """target, a file of the cache, built by build(path) when it is not there: built under a
    name of its own beside it and renamed into place, so that it appears whole or not at all,
    whoever builds it at once. Files of the same prefix unused for STALE_TEMPLATE_DAYS (those of
    other SQL versions) are removed then. OSError when the cache cannot be written."""
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".building-", dir=target.parent))
    try:
        build(work / target.name)
        os.replace(work / target.name, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    cutoff = time.time() - STALE_TEMPLATE_DAYS * 86400
    for old in target.parent.glob(f"{prefix}*.duckdb"):
        with contextlib.suppress(OSError):
            if old != target and old.stat().st_mtime < cutoff:
                old.unlink()
    return target


def copy_to(path: Path, build: Callable[[Path], None]) -> bool:
    """Write a new database at path from the template (built first by build when the cache has
    none), never over a file another process created meanwhile (then that file is the database);
    False when the template or the file cannot be written (the caller creates the database from
    the SQL files, and DuckDB says what is wrong with the path)."""
    try:
        source = build_template(build)
    except OSError:
        return False

    def fill(out) -> None:
        with open(source, "rb") as f:
            shutil.copyfileobj(f, out, 1 << 20)

    try:
        atomic.create(path, fill)
        os.utime(source)  # in use: not stale
    except OSError:
        return False
    return True
