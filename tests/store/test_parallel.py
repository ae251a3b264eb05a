"""Loads side by side (tracedb load --jobs N): worker processes build each file's partition and the
database gets the rows a serial load gives."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import tracedb
from tracedb.ingest.loader import default_name, trace_tables

from conftest import CORPUS, FIXTURES, KINETO, ROOT, read_only, run_cli

# every format the loader reads: Kineto from both vendors, mlir-aie, Ascend CSV
MIXED = KINETO[:6] + sorted((FIXTURES / "aie").glob("*.json")) + sorted((FIXTURES / "ascend").glob("*.csv"))
# columns that say when and how fast a load ran, not what it loaded
WHEN = {"loaded_at", "load_seconds"}


def _content(path: Path) -> dict[str, list[tuple]]:
    """Every row of every per-trace table, sorted, without the load's timing."""
    out = {}
    with read_only(path) as con:
        for table in trace_tables(con):
            cols = [c for (c,) in con.execute(
                "SELECT column_name FROM duckdb_columns() WHERE table_name = ? AND schema_name = 'main' "
                "ORDER BY column_index", [table]).fetchall() if c not in WHEN]
            rows = con.execute(f"SELECT {', '.join(cols)} FROM {table}").fetchall()
            out[table] = sorted(rows, key=repr)
    return out


def _load(path: Path, files, jobs: int, **kw) -> tracedb.Loaded:
    with tracedb.connect(path, read_only=False) as db:
        return db.load_all(files, jobs=jobs, **kw)


def test_parallel_rows_are_the_serial_rows(tmp_path):
    rules = tmp_path / "my_rules.csv"  # the workers classify with the database's own rules too
    rules.write_text("priority,platform,match,pattern,op,label\n1,any,contains,gemm,My GEMM,mine\n")
    serial = _load(tmp_path / "serial.duckdb", MIXED, 1, rules=rules)
    seen = []
    side = _load(tmp_path / "side.duckdb", MIXED, 2, rules=rules,
                 progress=lambda path, stage, read, events: seen.append((path, stage)))
    assert not serial.failures and not side.failures
    assert [(o.name, o.trace_id, o.status) for o in side.outcomes] == \
        [(o.name, o.trace_id, o.status) for o in serial.outcomes]
    a, b = _content(tmp_path / "serial.duckdb"), _content(tmp_path / "side.duckdb")
    assert a.keys() == b.keys()
    for table in a:
        assert a[table] == b[table], table
    assert any(op == "My GEMM" for (op,) in tracedb.connect(tmp_path / "side.duckdb").sql(
        "SELECT DISTINCT op FROM kernel_ops").rows)
    # the workers' progress reached this process, for every file, stage by stage
    assert {p for p, _ in seen} == set(MIXED)
    assert {"read", "derive"} <= {s for _, s in seen}


@pytest.mark.skipif(not CORPUS.is_dir(), reason="the corpus is beside the clone")
def test_parallel_corpus_matches_serial(tmp_path):
    files = sorted(CORPUS.glob("*falconsai*.json.gz")) + sorted(CORPUS.glob("mi300x_resnet*.json.gz"))
    _load(tmp_path / "serial.duckdb", files, 1)
    _load(tmp_path / "side.duckdb", files, 2)
    assert _content(tmp_path / "serial.duckdb") == _content(tmp_path / "side.duckdb")


def test_a_bad_file_fails_alone_and_names_are_kept_apart(tmp_path):
    bad = tmp_path / "broken.json"
    bad.write_text('{"traceEvents": 7}')
    twin = tmp_path / "other" / KINETO[0].name
    twin.parent.mkdir()
    twin.write_bytes(KINETO[0].read_bytes())  # same name
    done = _load(tmp_path / "t.duckdb", [KINETO[0], bad, KINETO[1], twin], 2)
    assert [o.name for o in done.outcomes] == [default_name(KINETO[0]), default_name(KINETO[1])]
    why = dict((p, w) for p, w in done.failures)
    assert set(why) == {bad, twin}
    assert str(bad) in why[bad] and "\n" not in why[bad]
    assert f"comes from {KINETO[0]} in this load too" in why[twin]
    # what a failed file would have been given is gone: ids stay in the order given
    with read_only(tmp_path / "t.duckdb") as con:
        assert con.execute("SELECT trace_id FROM traces ORDER BY trace_id").fetchall() == [(1,), (3,)]


def test_same_content_twice_in_one_load_is_loaded_once(tmp_path):
    copy = tmp_path / "copy_of.json.gz"
    copy.write_bytes(KINETO[2].read_bytes())
    done = _load(tmp_path / "t.duckdb", [KINETO[2], copy], 2)
    assert sorted(o.status for o in done.outcomes) == ["loaded", "skipped"]
    assert not done.failures


def test_cli_jobs_and_a_script_without_a_main_guard(tmp_path):
    proc = run_cli("load", *KINETO[:3], "--jobs", "2", "--format", "json", db=tmp_path / "c.duckdb", check=True)
    assert '"status": "loaded"' in proc.stdout
    assert run_cli("load", KINETO[3], "--jobs", "0", db=tmp_path / "c.duckdb").returncode == 2
    # spawned workers do not run the caller's script again (it would load everything twice over)
    script = tmp_path / "no_guard.py"
    script.write_text(textwrap.dedent(f"""
        import tracedb
        print("script ran")
        with tracedb.connect({str(tmp_path / 's.duckdb')!r}, read_only=False) as db:
            done = db.load_all({[str(p) for p in KINETO[:3]]!r}, jobs=2)
        print(len(done.outcomes), len(done.failures))
    """))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["script ran", "3 0"]
