"""One trace file as a partition: the unit of work of a parallel load, of a trace lake and of a
Dask (or Ray, or any other engine's) task.

build(path, into) loads the file into a private database of its own (a copy of the packaged empty
database, tracedb.template, in a temporary directory) exactly as `tracedb load` loads into yours:
staged, typed and derived under the load's memory limits, with the rules it is given. It then
writes every table that holds rows of the trace as into/<table>/data.parquet, and returns what it
did as a Partition. It reads nothing but the file and writes nothing but into: a plain function of
a path, which a process pool, a Dask worker or Ray can call.

insert(con, partition, trace_id) puts a partition's rows into a database under the id it is given
(the caller owns the transaction): the facts were derived where the partition was built, under the
same rules, so nothing is derived again.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from . import db, scratch, store
from .errors import TracedbError, reraise_interrupt
from .ingest.loader import LoadOutcome, load_file, trace_tables
from .rules import KINDS as RULE_KINDS
from .sqlfiles import file_path, literal

# The id a partition's rows carry until they are put where they belong (a lake's files carry the
# lake's id of the trace, see tracedb.lake).
PRIVATE_ID = 1


@dataclass
class Partition:
    """A trace written as Parquet: directory/<table>/data.parquet for each table in tables."""

    directory: Path
    outcome: LoadOutcome  # trace_id: the id its files carry
    sha256: str
    tables: list[str] = field(default_factory=list)

    def file(self, table: str) -> Path:
        return self.directory / table / "data.parquet"


def user_rules(con: duckdb.DuckDBPyConnection) -> dict:
    """The user's own rule rows of a database, as Arrow tables by rule table: what a partition built
    elsewhere must classify with to derive what this database would."""
    import pyarrow as pa

    out = {}
    for kind in RULE_KINDS:
        cur = con.execute(f"SELECT * FROM {kind.table} WHERE source <> 'builtin'")
        columns, rows = [d[0] for d in cur.description], cur.fetchall()
        if rows:
            out[kind.table] = pa.table({c: [r[i] for r in rows] for i, c in enumerate(columns)})
    return out


def build(path: str | Path, into: str | Path, *, name: str | None = None, meta: dict[str, str] | None = None,
          kind: str | None = None, rules: dict | None = None, trace_id: int = PRIVATE_ID, threads: int = 1,
          progress=None) -> Partition:
    """Load one file and write it as a partition into the directory into (created; it must not
    exist). rules: user rule rows by table (user_rules of the database the trace is for).
    trace_id: the id its files carry. threads: DuckDB threads of the private database (a pool of
    one worker per core wants 1). progress(stage, bytes read, events), as for a load."""
    path, into = Path(path), Path(into)
    try:
        private = scratch.make("part")
    except OSError:  # not even a folder fits there
        private = None
    if private is not None:
        try:
            return _build_in(private, path, into, name, meta, kind, rules, trace_id, threads, progress)
        except _NoRoom:
            pass
        finally:
            shutil.rmtree(private, ignore_errors=True)
    # the temporary directory cannot hold the private database (full, say): a folder beside the
    # partition holds it instead (a lake's .incoming, on the lake's own disk)
    private = Path(tempfile.mkdtemp(prefix=f".private-{os.getpid()}-", dir=into.parent))
    try:
        return _build_in(private, path, into, name, meta, kind, rules, trace_id, threads, progress)
    except _NoRoom as exc:
        raise NoRoom(f"{path}: no room for the private database of its load: {exc}") from None
    finally:
        shutil.rmtree(private, ignore_errors=True)


class _NoRoom(Exception):
    """The private database of a partition's load could not be made in its folder."""


class NoRoom(TracedbError):
    """Neither the temporary directory nor the partition's own folder can hold the private
    database of its load: no fault of the file."""


def _build_in(private: Path, path: Path, into: Path, name, meta, kind, rules, trace_id: int, threads: int,
              progress) -> Partition:
    """build, with the private database in the folder private."""
    try:
        con = _private_database(private)
    except duckdb.Error as exc:
        reraise_interrupt(exc)
        raise _NoRoom(" ".join(str(exc).split())[:200]) from None
    except (TracedbError, OSError) as exc:
        raise _NoRoom(" ".join(str(exc).split())[:200]) from None
    try:
        con.execute(f"SET threads = {max(1, int(threads))}")
        for table, rows in (rules or {}).items():
            con.register("_user_rules", rows)
            con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM _user_rules")
            con.unregister("_user_rules")
        outcome = load_file(con, path, name=name, meta=meta, kind=kind, progress=progress)
        sha256 = con.execute("SELECT sha256 FROM traces WHERE trace_id = ?", [outcome.trace_id]).fetchone()[0]
        into.mkdir(parents=True)
        tables = _write(con, outcome.trace_id, trace_id, into)
    except duckdb.Error as exc:
        reraise_interrupt(exc)
        raise TracedbError(f"{path}: cannot write its partition: {store.one_line(exc)}") from None
    finally:
        con.close()
    outcome.trace_id = trace_id
    return Partition(into, outcome, sha256, tables)


def _private_database(folder: Path) -> duckdb.DuckDBPyConnection:
    """An in-memory database with the schema, views and built-in rules of a new tracedb file (the
    trace is written once, as Parquet, rather than into a file and then out of it); beyond the
    load's memory limit it spills to folder."""
    empty = folder / "empty.duckdb"
    con = duckdb.connect(config={"temp_directory": str(folder / "spill"), **store.CONNECTION_CONFIG})
    if not store.copy_to(empty, db.build_new):  # no template (no writable cache): built from the SQL files
        db.build_new(empty)
    con.execute(f"ATTACH {literal(str(empty))} AS empty (READ_ONLY)")
    con.execute("COPY FROM DATABASE empty TO memory")
    con.execute("DETACH empty")
    return con


def _write(con: duckdb.DuckDBPyConnection, private_id: int, trace_id: int, into: Path) -> list[str]:
    written = []
    for table in trace_tables(con):
        if not con.execute(f"SELECT count(*) FROM {table} WHERE trace_id = ?", [private_id]).fetchone()[0]:
            continue
        (into / table).mkdir()
        con.execute(f"COPY (SELECT * REPLACE ({int(trace_id)} AS trace_id) FROM {table} "
                    f"WHERE trace_id = {int(private_id)}) TO {literal(str(into / table / 'data.parquet'))} "
                    "(FORMAT parquet)")
        written.append(table)
    return written


def insert(con: duckdb.DuckDBPyConnection, files: dict[str, Path], trace_id: int) -> None:
    """Insert a trace's Parquet files (by table) under trace_id; traces first, since every other
    table refers to its row (the caller owns the transaction). A column the files lack reads NULL."""
    known = set(trace_tables(con))
    for table in sorted((t for t in files if t in known), key=lambda t: t != "traces"):
        con.execute(f"INSERT INTO {table} BY NAME SELECT * REPLACE ({int(trace_id)} AS trace_id) "
                    "FROM read_parquet(?, hive_partitioning = false)", [file_path(files[table])])


def remove(partition: Partition) -> None:
    shutil.rmtree(partition.directory, ignore_errors=True)
