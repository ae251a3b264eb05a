"""The input readers (tracedb.ingest.readers): one pass over the file, one place per format, and
no work for formats a file is not."""

from __future__ import annotations

import gzip
import hashlib
import json

from pathlib import Path

import pytest

from conftest import KINETO, load, run_cli, write_tc_trace, tc_op
from tracedb import store as storemod
from tracedb.ingest import readers, source


@pytest.fixture
def scripts_run(monkeypatch):
    """The SQL files run during a load, in order."""
    ran = []
    real = storemod.run_file

    def spy(con, rel, params=None):
        ran.append(rel)
        return real(con, rel, params)

    monkeypatch.setattr(storemod, "run_file", spy)  # the derivation's files, and store.run_file's callers
    monkeypatch.setattr(readers, "run_file", spy)  # the readers' own name for it
    return ran


def _finishes(ran):
    return [r for r in ran if r.endswith("_finish.sql") and r != "ingest/chrome_finish.sql"]


def test_kineto_trace_runs_no_finish_of_another_format(con, scripts_run):
    path = next(p for p in KINETO if p.name.startswith("h100_bert"))
    out = load(con, path)
    assert out.status == "loaded"
    assert _finishes(scripts_run) == []
    assert "derive/aie_kernels.sql" not in scripts_run


def test_tensorcast_trace_runs_its_finish_only(con, tmp_path, scripts_run):
    path = write_tc_trace(tmp_path / "tc.json", tc_op("matmul", 5, kernel_type="MatMulV2", source="MEASURED"))
    load(con, path)
    assert _finishes(scripts_run) == ["ingest/tensorcast_finish.sql"]
    assert con.execute("SELECT format, platform FROM traces").fetchone() == ("tensorcast", "model")


def test_mlir_aie_trace_runs_its_finish_and_kernel_runs(con, tmp_path, scripts_run):
    events = [{"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "core_trace for tile2,1"}},
              {"name": "INSTR_EVENT_0", "ph": "B", "pid": 1, "tid": 0, "ts": 10},
              {"name": "INSTR_EVENT_1", "ph": "E", "pid": 1, "tid": 0, "ts": 20}]
    path = tmp_path / "aie.json"
    path.write_text(json.dumps(events))
    load(con, path)
    assert _finishes(scripts_run) == ["ingest/aie_finish.sql"]
    assert "derive/aie_kernels.sql" in scripts_run


@pytest.mark.parametrize("fixture", ["h100_bert-small", "mi300_vllm_decode_hipgraph"])
def test_sha256_computed_while_reading_equals_the_file_digest(con, fixture):
    path = next(p for p in KINETO if p.name.startswith(fixture))
    load(con, path)
    stored = con.execute("SELECT sha256 FROM traces").fetchone()[0]
    assert stored == hashlib.sha256(path.read_bytes()).hexdigest()


def test_file_hashed_before_reading_only_when_a_trace_of_its_size_is_loaded(con, monkeypatch):
    calls = []
    real = source.sha256_of
    monkeypatch.setattr("tracedb.ingest.loader.sha256_of", lambda p: calls.append(p) or real(p))
    first = next(p for p in KINETO if p.name.startswith("h100_bert"))
    load(con, first)
    assert calls == []  # nothing of that size was loaded: the digest comes from the one read
    again = load(con, first)
    assert again.status == "skipped" and calls == [first]


def test_stream_head_is_handed_to_the_reader_and_the_observer():
    path = next(p for p in KINETO if p.name.startswith("h100_bert"))
    stream = source.TraceStream(path)
    seen = []
    try:
        head = stream.head(100)
        stream.observer = lambda chunk, offset: seen.append((offset, len(chunk)))
        data = b""
        while chunk := stream.read(1 << 16):
            data += chunk
    finally:
        stream.close()
    assert data == gzip.decompress(path.read_bytes())
    assert len(head) == 100 and data.startswith(head)
    # the observer (the metadata capture) sees every byte once, from the first
    assert seen[0][0] == 0 and sum(n for _, n in seen) == len(data)


@pytest.mark.parametrize("args", [["load"], ["report", "summary", "--limit", "abc"], ["nope"], ["sql"]])
def test_usage_errors_print_usage_and_exit_2_without_traceback(tmp_path, args):
    proc = run_cli(*args, db=tmp_path / "x.duckdb")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and "Usage:" in proc.stderr
    assert not (tmp_path / "x.duckdb").exists()


@pytest.mark.parametrize("query", [
    "COPY (SELECT 'x' AS a) TO '{db}' (FORMAT csv)",
    "COPY (SELECT 'x' AS a) TO '{other}' (FORMAT csv)",
    "ATTACH '{other}' AS o",
    "EXPORT DATABASE '{other_dir}'",
    "SELECT * FROM read_csv('{db}')",
    "INSTALL httpfs",
    "SET enable_external_access = true",
    # DuckDB lets a query write in its temporary directory: the database's spill folder FILE.tmp
    # (a killed writer's, present) or the reader's own
    "COPY (SELECT 1 AS a) TO '{db}.tmp/y.parquet'",
    "COPY (SELECT 1 AS a) TO '{spill}/y.parquet'",
    "SET temp_directory = '{other_dir}'",
])
def test_sql_reads_the_database_and_nothing_else(tmp_path, query):
    db = tmp_path / "runs.duckdb"
    path = next(p for p in KINETO if p.name.startswith("cpu_only"))
    run_cli("load", path, db=db, check=True)
    before = db.read_bytes()
    other, other_dir = tmp_path / "other.duckdb", tmp_path / "export"
    from tracedb.db import reader_spill

    spill = reader_spill()
    proc = run_cli("sql", query.format(db=db, other=other, other_dir=other_dir, spill=spill), db=db)
    assert proc.returncode == 1 and proc.stderr.startswith("tracedb: error: SQL error:")
    assert "Traceback" not in proc.stderr
    assert db.read_bytes() == before
    assert not other.exists() and not other_dir.exists()
    assert not Path(f"{db}.tmp").exists() and list(spill.iterdir()) == []
    ok = run_cli("sql", "SELECT count(*) AS n FROM traces", "--format", "csv", db=db, check=True)
    assert ok.stdout.split() == ["n", "1"]


@pytest.mark.parametrize("query", ["", "   ", " -- only a comment"])
def test_sql_without_a_statement_is_one_line(tmp_path, query):
    db = tmp_path / "runs.duckdb"
    run_cli("load", next(p for p in KINETO if p.name.startswith("cpu_only")), db=db, check=True)
    proc = run_cli("sql", query, db=db)
    assert proc.returncode == 1
    assert proc.stderr == "tracedb: error: no SQL statement given\n"
