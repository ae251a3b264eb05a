"""Loading one input file into the database: one transaction per file, idempotent by content.

The file is opened once: its first bytes tell which reader takes it (tracedb.ingest.readers), the
reader stages it outside the transaction while the bytes are hashed as they stream by, and one
transaction then stores the trace: the reader stores what it staged, run parameters are stored and
the analysis is derived (tracedb.facts). A file that fails part way, or a Ctrl-C, rolls the
transaction back: the database is exactly as it was. Identical content (same SHA-256) is skipped
unless replace is asked for; the file is hashed before staging only when a loaded trace has its
size, since content of another size cannot be the same.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import duckdb

from .. import __version__, facts, store
from ..errors import TracedbError
from ..traces import check_name
from . import params
from .bulk import ROW_GROUP_ROWS, drop_staging
from .readers import ProgressFn, reader_for
from .source import TraceStream, check_file, sha256_of

_TRACE_SUFFIXES = (".gz", ".json", ".trace", ".pt", ".csv", ".yaml", ".yml")

# A trace of at most this many events is split, derived and committed on one thread (staging keeps
# every core: the typing cuts its events into a range per thread). DuckDB gives a scan one thread
# per row group, so the statements over a trace of one or two row groups gain little from a second
# thread, which costs coordination in every statement and memory of its own (glibc gives each
# thread its allocation arena). Measured on the corpus (tracedb load, medians of 5): 8-14 MiB less
# at peak on every trace up to the 34 MB vLLM one, which also loads faster (0.90 s against 0.93);
# as fast on the 62 MB traces (229,459 and 239,093 events).
ONE_THREAD_EVENTS = 2 * ROW_GROUP_ROWS


def default_name(path: Path) -> str:
    """File name without trace suffixes: h100.pt.trace.json.gz -> h100."""
    name = path.name
    while True:
        lower = name.lower()
        for suffix in _TRACE_SUFFIXES:
            if lower.endswith(suffix) and len(name) > len(suffix):
                name = name[: -len(suffix)]
                break
        else:
            return name


@dataclass
class LoadOutcome:
    path: Path
    name: str
    status: str  # loaded, replaced, skipped
    trace_id: int | None = None
    events: int = 0
    rejected: int = 0
    complete: bool = True
    problem: str | None = None
    platform: str | None = None
    seconds: float = 0.0
    file_bytes: int = 0
    note: str | None = None


def load_file(con: duckdb.DuckDBPyConnection, path: str | Path, *, name: str | None = None,
              replace: bool = False, progress: ProgressFn | None = None,
              meta: dict[str, str] | None = None, kind: str | None = None) -> LoadOutcome:
    """Load one file; kind (a reader's kind, e.g. OP_MAPPING) is told from the file unless given.
    progress, if given, is called with (stage, disk bytes read, events so far) as the load goes:
    stage "read" while the file is read, then "type" and "derive"."""
    path = Path(path)
    name = default_name(path) if name is None else name
    size, digest, skipped, clash = precheck(con, path, name, replace)
    if skipped:
        return skipped

    started = time.perf_counter()
    try:
        return _load(con, path, name, replace, progress, meta, kind, size, digest, clash, started)
    except MemoryError as exc:
        # Python's or Arrow's allocation failing (an address-space limit, say): the file's load
        # is undone like any other failure, in one line
        raise TracedbError(f"{path}: cannot load: out of memory{f' ({exc})' if str(exc) else ''}") from None
    except (ImportError, SystemError) as exc:
        # a library that cannot be loaded, or fails inside, mid-load: under an address-space limit,
        # pyarrow's shared library could not be mapped, and its import of pandas failed without
        # saying why; one line too
        raise TracedbError(f"{path}: cannot load: {type(exc).__name__}: {store.one_line(exc)}") from None
    except RuntimeError as exc:
        if "can't start new thread" not in str(exc):
            raise
        # the reader's or the writer's thread, where memory (an address-space limit) is short
        raise TracedbError(f"{path}: cannot load: out of memory (cannot start a thread)") from None


def _load(con: duckdb.DuckDBPyConnection, path: Path, name: str, replace: bool, progress, meta, kind,
          size: int, digest: str | None, clash, started: float) -> LoadOutcome:
    # Staging holds at most the load's memory (beyond it DuckDB spills to disk); the settings are
    # the connection's own again afterwards.
    with store.settings(con, memory_limit=store.LOAD_MEMORY_LIMIT):
        try:
            stream = TraceStream(path)
            try:
                reader = reader_for(path, stream.head(8192), kind)
                staged = reader.stage(con, path, stream, progress)
                digest = digest or stream.digest()
            finally:
                stream.close()
            # Row order within the event tables carries no meaning (event_id does): letting DuckDB
            # write them in any order makes the split faster. The commit checkpoints all but a
            # small trace (while staging, the threshold stays DuckDB's: each batch of texts
            # appended to a temporary table checked it, and a lower one checkpointed after many
            # of them, 3 s more on 1 GiB).
            events = getattr(staged, "event_count", None)
            one_thread = {"threads": 1} if isinstance(events, int) and events <= ONE_THREAD_EVENTS else {}
            with store.settings(con, preserve_insertion_order=False, checkpoint_threshold=store.LOAD_CHECKPOINT_THRESHOLD,
                             **one_thread):
                return _load_in_transaction(con, reader, path, name, digest, size, clash, staged, progress,
                                            started, meta)
        finally:
            drop_staging(con)


def precheck(con: duckdb.DuckDBPyConnection, path: Path, name: str,
             replace: bool) -> tuple[int, str | None, LoadOutcome | None, tuple | None]:
    """What a load can tell before reading the file: (its size, its digest when a loaded trace has
    that size, else None, the outcome of a load skipped because the same content is loaded, the
    row of a trace of the same name to replace); a TracedbError when it cannot load at all."""
    _check_usable(con, path)
    size = check_file(path)
    digest = None
    if con.execute("SELECT count(*) FROM traces WHERE file_bytes = ? OR file_bytes IS NULL", [size]).fetchone()[0]:
        digest = sha256_of(path)  # the same size is loaded already: maybe the same content
    skipped, clash = check_existing(con, path, name, digest, replace, "choose another --name or use --replace")
    if skipped:
        skipped.file_bytes = size
    return size, digest, skipped, clash


def check_existing(con: duckdb.DuckDBPyConnection, path: Path, name: str, digest: str | None, replace: bool,
                   what_to_do: str) -> tuple[LoadOutcome | None, tuple | None]:
    """(the outcome of a load skipped because the same content is loaded, the row of a trace of the
    same name to replace); a taken name without replace is an error that says what_to_do. digest
    None: no loaded trace can have the same content."""
    _check_usable(con, path)
    check_name(name, path)
    same = digest and con.execute("SELECT name FROM traces WHERE sha256 = ? ORDER BY trace_id LIMIT 1",
                                  [digest]).fetchone()
    if same and not replace:
        return LoadOutcome(path, same[0], "skipped",
                           note=f"identical content already loaded as {same[0]!r} (use --replace to load again)"), None
    clash = con.execute("SELECT trace_id FROM traces WHERE name = ?", [name]).fetchone()
    if clash and not replace:
        raise TracedbError(f"{path}: a trace named {name!r} already exists; {what_to_do}")
    return None, clash


def _check_usable(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """One line, not DuckDB's traceback, for a file loaded after an earlier one failed fatally."""
    broken = store.invalidated_by(con)
    if broken is not None:
        raise TracedbError(f"{path}: not loaded: an earlier load failed fatally on this database ({broken})")


def _load_in_transaction(con: duckdb.DuckDBPyConnection, reader, path: Path, name: str, digest: str,
                         size: int, clash, staged, progress: ProgressFn | None, started: float,
                         meta: dict[str, str] | None) -> LoadOutcome:
    with store.transaction(con, f"{path}: cannot load"):
        if clash:
            delete_trace(con, clash[0])
        trace_id = con.execute("SELECT nextval('trace_ids')").fetchone()[0]
        con.execute(
            "INSERT INTO traces (trace_id, name, source_path, sha256, file_bytes, format, tracedb_version) "
            "VALUES (?, ?, ?, ?, ?, 'kineto', ?)",
            [trace_id, name, str(path.resolve()), digest, size, __version__])
        if progress:
            progress("type", size, getattr(staged, "event_count", 0) or 0)
        result = reader.store(con, trace_id, path, staged, progress)
        params.store(con, trace_id, path, meta)
        if progress:
            progress("derive", size, result.event_count)
        facts.derive(con, trace_id)  # operations, phases, stacks, layers: stored with the trace
        con.execute(
            "UPDATE traces SET event_count = ?, complete = ?, problem = ?, loaded_at = now()::TIMESTAMP, "
            "load_seconds = ?, rejected_count = (SELECT count(*) FROM rejected_events WHERE trace_id = ?) "
            "WHERE trace_id = ?",
            [result.event_count, result.complete, result.problem, time.perf_counter() - started, trace_id,
             trace_id])
        platform, rejected = con.execute("SELECT platform, rejected_count FROM traces WHERE trace_id = ?",
                                         [trace_id]).fetchone()
    return LoadOutcome(path, name, "replaced" if clash else "loaded", trace_id, result.event_count,
                       rejected, result.complete, result.problem, platform, time.perf_counter() - started, size)


_trace_tables: dict[str, list[str]] = {}  # by the tables' definitions


def trace_tables(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Every base table holding per-trace rows (it has a trace_id column of its own: not a view or
    a registered relation of the same name). Worked out once per set of table definitions (their
    CREATE statements, read in 1 ms, which the answer depends on alone): listing the columns of
    every table and view took 6 ms, twice a load."""
    key = con.execute("SELECT string_agg(database_name || '.' || sql, ';' ORDER BY database_name, table_name) "
                      "FROM duckdb_tables() WHERE schema_name = 'main'").fetchone()[0] or ""
    tables = _trace_tables.get(key)
    if tables is None:
        if len(_trace_tables) >= 64:  # a process seeing ever new tables keeps only the latest
            _trace_tables.clear()
        tables = _trace_tables[key] = [r[0] for r in con.execute(
            "SELECT DISTINCT c.table_name FROM duckdb_columns() c JOIN duckdb_tables() t "
            "ON t.database_name = c.database_name AND t.schema_name = c.schema_name AND t.table_name = c.table_name "
            "WHERE c.column_name = 'trace_id' AND c.schema_name = 'main' ORDER BY 1").fetchall()]
    return list(tables)


def delete_trace(con: duckdb.DuckDBPyConnection, trace_id: int) -> None:
    """Remove a trace and all its rows (the caller owns the transaction)."""
    for table in trace_tables(con):
        if table != "traces":
            con.execute(f"DELETE FROM {table} WHERE trace_id = ?", [trace_id])
    con.execute("DELETE FROM traces WHERE trace_id = ?", [trace_id])
