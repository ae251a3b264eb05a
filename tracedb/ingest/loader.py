"""Loading one input file into the database: one transaction per file, idempotent by content.

The file's kind is told from its content (tracedb.ingest.detect). A Chrome trace is staged first,
in bulk by DuckDB's JSON reader when the file is well-formed (tracedb.ingest.bulk), otherwise by
the streaming reader (tracedb.ingest.chrome), which keeps every complete event of a broken file;
one set of statements then types the staged events into the event tables
(sql/ingest/chrome_split.sql), and the finer kinds are recognised from what they hold: an
mlir-aie trace gets its tiles and spans (sql/ingest/aie_finish.sql), a torch_npu trace its
Ascend device tasks as kernels (sql/ingest/ascend_finish.sql), a TensorCast trace its parsed
sub-kernel durations (sql/ingest/tensorcast_finish.sql, tracedb.ingest.tensorcast). An Ascend
profiler CSV is staged by tracedb.ingest.ascend_csv and typed by sql/ingest/ascend_csv.sql; an
op_mapping.yaml is read by tracedb.ingest.op_mapping. A file that fails part way, or a Ctrl-C,
rolls the transaction back: the database is exactly as it was. Identical content (same SHA-256)
is skipped unless replace is asked for.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import duckdb

from .. import __version__, facts
from ..db import run_file
from ..errors import TracedbError
from ..jsontext import dumps as json_text
from . import ascend_csv, op_mapping, params, tensorcast
from .bulk import NotBulk, ProgressFn, RawEvents, discard_bulk, drop_staging, read_raw, type_bulk
from .chrome import ChromeResult, read_chrome_trace, require_c_backend
from .detect import ASCEND_CSV, CHROME, OP_MAPPING, input_kind
from .source import TraceStream, check_file, sha256_of
from .writer import BatchWriter

_TRACE_SUFFIXES = (".gz", ".json", ".trace", ".pt", ".csv", ".yaml", ".yml")


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
    """Load one file; kind (CHROME, ASCEND_CSV or OP_MAPPING) is told from the file unless given."""
    path = Path(path)
    size = check_file(path)
    kind = kind or input_kind(path)
    if kind == CHROME:
        require_c_backend()
    name = name or default_name(path)
    digest = sha256_of(path)

    skipped, clash = check_existing(con, path, name, digest, replace, "choose another --name or use --replace")
    if skipped:
        skipped.file_bytes = size
        return skipped

    started = time.perf_counter()
    try:
        # Staging runs outside the transaction, where DuckDB spills staged rows to disk freely and
        # where a DuckDB error (the bulk reader meeting a broken file) does not abort the load.
        staged = _stage(con, kind, path, progress)
        # Row order within the event tables carries no meaning (event_id does): letting DuckDB
        # write them in any order makes the split faster.
        con.execute("SET preserve_insertion_order = false")
        outcome = _load_in_transaction(con, kind, path, name, digest, size, clash, staged, progress, started, meta)
    finally:
        con.execute("RESET preserve_insertion_order")
        drop_staging(con)
    return outcome


def check_existing(con: duckdb.DuckDBPyConnection, path: Path, name: str, digest: str | None, replace: bool,
                   what_to_do: str) -> tuple[LoadOutcome | None, tuple | None]:
    """(the outcome of a load skipped because the same content is loaded, the row of a trace of the
    same name to replace); a taken name without replace is an error that says what_to_do."""
    same = con.execute("SELECT name FROM traces WHERE sha256 = ? ORDER BY trace_id LIMIT 1", [digest]).fetchone()
    if same and not replace:
        return LoadOutcome(path, same[0], "skipped",
                           note=f"identical content already loaded as {same[0]!r} (use --replace to load again)"), None
    clash = con.execute("SELECT trace_id FROM traces WHERE name = ?", [name]).fetchone()
    if clash and not replace:
        raise TracedbError(f"{path}: a trace named {name!r} already exists; {what_to_do}")
    return None, clash


def _stage(con: duckdb.DuckDBPyConnection, kind: str, path: Path, progress: ProgressFn | None):
    """What the transaction types: staged rows in temporary tables, or the parsed mapping."""
    if kind == OP_MAPPING:
        return op_mapping.read(path)
    if kind == ASCEND_CSV:
        return ascend_csv.stage(con, path, progress)
    run_file(con, "ingest/chrome_stage.sql")
    try:
        return read_raw(con, path, progress)
    except NotBulk:
        return _stream_events(con, path, progress)


def _load_in_transaction(con: duckdb.DuckDBPyConnection, kind: str, path: Path, name: str, digest: str,
                         size: int, clash, staged, progress: ProgressFn | None, started: float,
                         meta: dict[str, str] | None) -> LoadOutcome:
    con.execute("BEGIN TRANSACTION")
    try:
        if clash:
            delete_trace(con, clash[0])
        trace_id = con.execute("SELECT nextval('trace_ids')").fetchone()[0]
        con.execute(
            "INSERT INTO traces (trace_id, name, source_path, sha256, file_bytes, format, tracedb_version) "
            "VALUES (?, ?, ?, ?, ?, 'kineto', ?)",
            [trace_id, name, str(path.resolve()), digest, size, __version__])
        if kind == OP_MAPPING:
            result = staged
            op_mapping.store(con, trace_id, result)
            _store_metadata(con, trace_id, result)
        elif kind == ASCEND_CSV:
            result = staged
            run_file(con, "ingest/ascend_csv.sql", {"trace_id": trace_id, "format": result.format})
            _store_metadata(con, trace_id, result)
        else:
            result = staged if isinstance(staged, ChromeResult) else _type_bulk(con, path, staged, progress)
            run_file(con, "ingest/chrome_split.sql", {"trace_id": trace_id})
            _store_metadata(con, trace_id, result)
            run_file(con, "ingest/chrome_finish.sql", {"trace_id": trace_id})
            # Each recognises its kind from the typed events and leaves any other trace as it is.
            run_file(con, "ingest/aie_finish.sql", {"trace_id": trace_id})
            run_file(con, "ingest/ascend_finish.sql", {"trace_id": trace_id})
            run_file(con, "ingest/tensorcast_finish.sql", {"trace_id": trace_id})
            fmt = con.execute("SELECT format FROM traces WHERE trace_id = ?", [trace_id]).fetchone()[0]
            if fmt == "tensorcast":
                tensorcast.store_sub_kernels(con, trace_id)
        params.store(con, trace_id, path, meta)
        facts.derive(con, trace_id)  # operations, phases, stacks, layers: stored with the trace
        seconds = time.perf_counter() - started
        con.execute(
            "UPDATE traces SET event_count = ?, complete = ?, problem = ?, loaded_at = now()::TIMESTAMP, "
            "load_seconds = ?, rejected_count = (SELECT count(*) FROM rejected_events WHERE trace_id = ?) "
            "WHERE trace_id = ?",
            [result.event_count, result.complete, result.problem, seconds, trace_id, trace_id])
        platform, rejected = con.execute("SELECT platform, rejected_count FROM traces WHERE trace_id = ?",
                                         [trace_id]).fetchone()
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return LoadOutcome(path, name, "replaced" if clash else "loaded", trace_id, result.event_count,
                       rejected, result.complete, result.problem, platform, seconds, size)


def _type_bulk(con: duckdb.DuckDBPyConnection, path: Path, raw: RawEvents,
               progress: ProgressFn | None) -> ChromeResult:
    try:
        return type_bulk(con, raw)
    except NotBulk:  # NaN in an event: read like any broken file
        discard_bulk(con)
        return _stream_events(con, path, progress)


def _stream_events(con: duckdb.DuckDBPyConnection, path: Path, progress: ProgressFn | None) -> ChromeResult:
    """Stage the trace's events with the streaming reader (sql/ingest/chrome_stage.sql)."""
    writer = BatchWriter(con)
    stream = TraceStream(path)
    try:
        on_events = (lambda n: progress(stream.disk.bytes_read, n)) if progress else None
        result = read_chrome_trace(stream, writer.put, on_events)
    except BaseException:
        writer.abort()
        raise
    finally:
        stream.close()
    writer.close()
    return result


def _store_metadata(con: duckdb.DuckDBPyConnection, trace_id: int, result) -> None:
    """The file's top-level keys other than its events (result.metadata: (key, value) pairs)."""
    rows = [(trace_id, i, key, json_text(value)) for i, (key, value) in enumerate(result.metadata)]
    if rows:
        con.executemany("INSERT INTO trace_metadata VALUES (?, ?, ?, ?)", rows)


def trace_tables(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Every base table holding per-trace rows (it has a trace_id column)."""
    return [r[0] for r in con.execute(
        "SELECT DISTINCT c.table_name FROM duckdb_columns() c JOIN duckdb_tables() t "
        "ON t.table_name = c.table_name AND t.schema_name = c.schema_name "
        "WHERE c.column_name = 'trace_id' AND c.schema_name = 'main' ORDER BY 1").fetchall()]


def delete_trace(con: duckdb.DuckDBPyConnection, trace_id: int) -> None:
    """Remove a trace and all its rows (the caller owns the transaction)."""
    for table in trace_tables(con):
        if table != "traces":
            con.execute(f"DELETE FROM {table} WHERE trace_id = ?", [trace_id])
    con.execute("DELETE FROM traces WHERE trace_id = ?", [trace_id])
