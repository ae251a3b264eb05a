"""Parquet export of a database, and loading such an export back.

`tracedb export DIR` writes every table that holds per-trace rows as Parquet, one directory per
table and one Hive partition per trace (DIR/<table>/trace=<name>/data.parquet, the name
percent-encoded), the user's own rules (DIR/kernel_rules/, DIR/annotation_patterns/,
DIR/step_frame_patterns/) and a manifest (DIR/tracedb-export.json: schema version, tracedb and DuckDB versions, traces,
tables and their columns). Any Parquet reader takes the files as they are: DuckDB with
read_parquet('DIR/kernels/*/*.parquet', hive_partitioning = true), pandas, Spark.

`tracedb load DIR` brings an export back in one transaction (a broken file anywhere leaves the
database as it was): each trace under a new trace id, skipped when a trace of the same content
(sha256) is there, refused when the name is taken unless replace is asked for; the user's rules
are added when missing; the derived facts are then derived again by this database's views, so
every view and report works on the imported traces as on loaded ones. An export of an older schema
loads (columns it lacks read NULL); a newer one is refused.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import duckdb

from . import __version__, atomic, db, facts, store
from .partition import insert as insert_partition
from .sqlfiles import file_path
from .errors import TracedbError, is_damage, reraise_interrupt
from .ingest.loader import LoadOutcome, check_existing, delete_trace, trace_tables
from .lake import DATA as LAKE_DATA
from .traces import find as find_trace

MANIFEST = "tracedb-export.json"
_FOLDER = re.compile(r"^trace=[^/\\]+$")
RULE_TABLES = ("kernel_rules", "annotation_patterns", "step_frame_patterns")


MAX_PARTITION = 200  # bytes of a directory name (file systems allow 255)


def partition(name: str) -> str:
    """The directory of a trace's partition: trace=<name, percent-encoded>."""
    return "trace=" + quote(name, safe="")


def _partitions(traces: list[tuple]) -> dict[int, str]:
    """A directory per trace, distinct even where the file system ignores case; a name too long
    for a directory (or clashing) is replaced by the trace id (the manifest maps it)."""
    out, seen = {}, set()
    for trace_id, name, *_ in traces:
        folder = partition(name)
        if len(folder.encode()) > MAX_PARTITION or folder.casefold() in seen:
            folder = f"trace={int(trace_id)}"
        seen.add(folder.casefold())
        out[trace_id] = folder
    return out


@dataclass
class Exported:
    traces: int
    files: int
    path: Path


def export(con: duckdb.DuckDBPyConnection, out: Path, names: list[str] | None = None) -> Exported:
    """Write the traces named (all when none are) to out, which must not exist or be empty."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise TracedbError(f"{out}: exists and is not an empty directory; export to a new one")
    traces = con.execute("SELECT trace_id, name, sha256, format, platform FROM traces ORDER BY trace_id").fetchall()
    if names:
        wanted = {find_trace(con, name)[0] for name in names}
        traces = [t for t in traces if t[0] in wanted]  # in trace_id order, each once
    if not traces:
        raise TracedbError("the database holds no trace to export")
    # Written next to the target and renamed at the end: an export is there whole or not at all.
    try:
        with atomic.directory(out) as partial:
            files = _write(con, partial, traces)
    except (OSError, duckdb.Error) as exc:
        if is_damage(exc):  # the database's fault, not the export's: said with its name
            raise
        raise TracedbError(f"{out}: cannot export: {' '.join(str(exc).split())[:300]}") from None
    return Exported(len(traces), files, out)


def _write(con: duckdb.DuckDBPyConnection, out: Path, traces: list[tuple]) -> int:
    # a lake's tables are views over its Parquet (lake.DATA + table beneath): exported by the view's name
    tables = sorted({t.removeprefix(LAKE_DATA) for t in trace_tables(con)})
    folders = _partitions(traces)
    files = 0
    for table in tables:
        for trace_id, name, *_ in traces:
            if not con.execute(f"SELECT count(*) FROM {table} WHERE trace_id = ?", [trace_id]).fetchall()[0][0]:
                continue
            target = out / table / folders[trace_id] / "data.parquet"
            target.parent.mkdir(parents=True, exist_ok=True)
            _parquet(con, f"SELECT * FROM {table} WHERE trace_id = {int(trace_id)}", target)
            files += 1
    for table in RULE_TABLES:
        if con.execute(f"SELECT count(*) FROM {table} WHERE source <> 'builtin'").fetchall()[0][0]:
            target = out / table / "user.parquet"
            target.parent.mkdir(parents=True, exist_ok=True)
            _parquet(con, f"SELECT * FROM {table} WHERE source <> 'builtin'", target)
            files += 1
    manifest = {
        "format": "tracedb-export",
        "schema_version": db.schema_version(con),
        "tracedb_version": __version__,
        "duckdb_version": duckdb.__version__,
        "traces": [{"trace_id": t[0], "name": t[1], "sha256": t[2], "format": t[3], "platform": t[4],
                    "partition": folders[t[0]]} for t in traces],
        "tables": {t: [c for (c,) in con.execute(
            "SELECT column_name FROM duckdb_columns() WHERE table_name = ? AND schema_name = 'main' "
            "ORDER BY column_index", [t]).fetchall()] for t in tables},
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return files


def _parquet(con: duckdb.DuckDBPyConnection, query: str, target: Path) -> None:
    """query's rows as a Parquet file, streamed in batches through Arrow: written by this process
    rather than by DuckDB's COPY, so that an export works on a connection sandboxed from files."""
    import pyarrow.parquet as pq

    reader = con.sql(query).to_arrow_reader(_BATCH_ROWS)
    with pq.ParquetWriter(target, reader.schema) as writer:
        for batch in reader:
            writer.write_batch(batch)


_BATCH_ROWS = 100_000  # rows per batch of an export: bounded memory, whatever the trace's size


def is_export(path: Path) -> bool:
    try:
        return path.is_dir() and (path / MANIFEST).is_file()
    except OSError:  # a path the system cannot look at (a name too long, a folder closed to us): the load says why
        return False


def read_manifest(path: Path) -> dict:
    try:
        manifest = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise TracedbError(f"{path}: unreadable {MANIFEST}: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != "tracedb-export":
        raise TracedbError(f"{path}: {MANIFEST} is not a tracedb export manifest")
    version = manifest.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise TracedbError(f"{path}: {MANIFEST}: schema_version is not a whole number")
    if version > db.latest_version():
        raise TracedbError(f"{path}: exported with schema v{version}, newer than this tracedb's "
                           f"v{db.latest_version()}; upgrade tracedb")
    traces = manifest.get("traces")
    if not isinstance(traces, list) or not isinstance(manifest.get("tables"), dict):
        raise TracedbError(f"{path}: {MANIFEST}: traces and tables are missing")
    for entry in traces:
        # the partition must be a directory of the export, never a path that leads out of it
        if not (isinstance(entry, dict) and isinstance(entry.get("name"), str)
                and isinstance(entry.get("partition"), str) and _FOLDER.match(entry["partition"])):
            raise TracedbError(f"{path}: {MANIFEST}: a trace entry without a name or with a bad partition: "
                               f"{json.dumps(entry)[:120]}")
    return manifest


def load_export(con: duckdb.DuckDBPyConnection, path: Path, replace: bool = False) -> list[LoadOutcome]:
    """Load every trace of an export, and the user's rules it holds, in one transaction."""
    manifest = read_manifest(path)
    with store.transaction(con, f"{path}: cannot load the export"):
        if _load_rules(con, path):
            facts.derive_all(con)  # the database's own traces, under the rules the export brought
        outcomes = [_load_trace(con, path, manifest, entry, replace) for entry in manifest["traces"]]
    return outcomes


def _load_rules(con: duckdb.DuckDBPyConnection, path: Path) -> int:
    added = 0
    for table in RULE_TABLES:
        file = path / table / "user.parquet"
        if file.is_file():
            added += con.execute(
                f"INSERT INTO {table} BY NAME SELECT * FROM read_parquet(?, hive_partitioning = false) "
                f"WHERE source NOT IN (SELECT source FROM {table})", [file_path(file)]).fetchone()[0]
    return added


def _load_trace(con: duckdb.DuckDBPyConnection, path: Path, manifest: dict, entry: dict,
                replace: bool) -> LoadOutcome:
    """One trace of the export (the caller owns the transaction)."""
    name, digest = entry["name"], entry.get("sha256")
    where = path / "traces" / entry["partition"]
    started = time.perf_counter()
    skipped, clash = check_existing(con, where, name, digest, replace, "use --replace to load the exported one")
    if skipped:
        return skipped
    if clash:
        delete_trace(con, clash[0])
    trace_id = con.execute("SELECT nextval('trace_ids')").fetchone()[0]
    files = {t: path / t / entry["partition"] / "data.parquet" for t in manifest["tables"]}
    try:
        insert_partition(con, {t: f for t, f in files.items() if f.is_file()}, trace_id)
    except duckdb.Error as exc:
        reraise_interrupt(exc)
        raise TracedbError(f"{path}: cannot load the exported trace {name!r}: {' '.join(str(exc).split())[:300]}") \
            from None
    row = con.execute("SELECT event_count, rejected_count, complete, problem, platform, file_bytes "
                      "FROM traces WHERE trace_id = ?", [trace_id]).fetchone()
    if row is None:
        raise TracedbError(f"{path}: the export lacks the traces row of {name!r}")
    facts.derive(con, trace_id)
    events, rejected, complete, problem, platform, size = row
    return LoadOutcome(where, name, "replaced" if clash else "loaded", trace_id, events or 0, rejected or 0,
                       complete, problem, platform, time.perf_counter() - started, size or 0)
