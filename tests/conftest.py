"""Shared helpers: fixture paths, fresh databases, building small traces, running the CLI."""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tracedb.db import open_db
from tracedb.ingest.loader import load_file

ROOT = Path(__file__).resolve().parent.parent
# Small real traces, kept in the repository with their sources and licences (fixtures/SOURCES.md).
FIXTURES = Path(os.environ.get("TRACEDB_FIXTURES", ROOT / "tests" / "fixtures"))
KINETO = sorted((FIXTURES / "kineto").glob("*.json.gz"))
# Real traces of everyday size (2-64 MB), too large for the repository: the tests that read them
# skip when they are absent (CI has them beside the clone).
CORPUS = Path(os.environ.get("TRACEDB_CORPUS", ROOT.parent / "shared" / "corpus"))


def read_fixture(path: Path):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return json.load(f)


@pytest.fixture
def db_path(tmp_path) -> Path:
    return tmp_path / "test.duckdb"


@pytest.fixture
def con(db_path):
    c = open_db(db_path)
    yield c
    c.close()


def write_trace(path: Path, events, **metadata) -> Path:
    """A Kineto-style trace file: metadata keys around traceEvents (as json text)."""
    body = {"schemaVersion": 1, **{k: v for k, v in metadata.items() if not k.startswith("after_")},
            "traceEvents": events}
    body.update({k[len("after_"):]: v for k, v in metadata.items() if k.startswith("after_")})
    path.write_text(json.dumps(body))
    return path


def run_cli(*args, db: Path | None = None, env=None, check=False) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "tracedb.cli", *map(str, args)]
    if db is not None:
        cmd += ["--db", str(db)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=120)
    if check and proc.returncode != 0:
        raise AssertionError(f"{cmd} failed: {proc.stderr}")
    return proc


def load(con, path, **kw):
    return load_file(con, path, **kw)


def database_of(tmp_path_factory, label: str, traces) -> Path:
    """A database file holding the given traces (for module-scoped fixtures)."""
    path = tmp_path_factory.mktemp(label) / f"{label}.duckdb"
    with open_db(path) as c:
        for trace in traces:
            load(c, trace)
    return path


@contextlib.contextmanager
def read_only(path: Path):
    """A plain DuckDB connection to a database file, read-only, as any client would open it."""
    import duckdb

    c = duckdb.connect(str(path), read_only=True)
    try:
        yield c
    finally:
        c.close()


def table_counts(con) -> dict[str, int]:
    """Row count of every base table: a fingerprint of the database's content."""
    tables = [r[0] for r in con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main' AND NOT temporary").fetchall()]
    return {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables}


def tc_op(name: str, dur, pid=1, **args) -> dict:
    """One operator of a TensorCast trace (an X event without a category; args as TensorCast writes them)."""
    return {"name": name, "ph": "X", "ts": 0, "dur": dur, "pid": pid, "tid": 0, "args": args}


def write_tc_trace(path: Path, *ops: dict, process: str | None = "profiling") -> Path:
    """A TensorCast trace of these operators, their process named (None: unnamed)."""
    named = [{"name": "process_name", "ph": "M", "pid": 1, "args": {"name": process}}] if process else []
    path.write_text(json.dumps({"traceEvents": named + list(ops)}))
    return path
