"""The database as a shared artefact: files older DuckDB releases read, and one-line errors (or
waiting) while another process holds the file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import venv
from pathlib import Path

import pytest

from conftest import FIXTURES, KINETO, in_threads, run_cli, tc_op, write_tc_trace
from tracedb.db import open_db

OLD_DUCKDB = "duckdb==1.4.*"
KERNEL_DETAILS = FIXTURES / "ascend" / "kernel_details_cann8.csv"
AIE = FIXTURES / "aie" / "mlir-aie_parse-trace_test1.json"

# Run by the old DuckDB: every table count and every view and table macro of the file, as JSON.
READ_ALL = r"""
import json, sys, duckdb
con = duckdb.connect(sys.argv[1], read_only=True)
out = {"version": duckdb.__version__, "counts": {}, "views": {}, "errors": []}
for (t,) in con.execute("SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main' ORDER BY 1").fetchall():
    out["counts"][t] = con.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0]
for (v,) in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal AND schema_name = 'main' "
                        "ORDER BY 1").fetchall():
    try:
        out["views"][v] = con.execute(f'SELECT count(*) FROM "{v}"').fetchone()[0]
    except Exception as exc:
        out["errors"].append(f"{v}: {exc}")
for query in ["SELECT count(*) FROM selected_kernels(NULL, NULL)",
              "SELECT count(*) FROM compare_ops('h100_bert-small', 'mi300_bert-small', NULL)",
              "SELECT count(*) FROM aie_system_summary()",
              "SELECT count(*) FROM tc_vs_prof('tc', 'kernel_details_cann8')"]:
    try:
        out["views"][query] = con.execute(query).fetchone()[0]
    except Exception as exc:
        out["errors"].append(f"{query}: {exc}")
print(json.dumps(out))
"""


@pytest.fixture(scope="session")
def old_python(tmp_path_factory) -> Path:
    """A virtual environment with DuckDB 1.4 (kept between runs under ~/.cache)."""
    home = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "tracedb-tests" / "duckdb-1.4"
    python = home / "bin" / "python"
    if not python.exists():
        venv.create(home, with_pip=True)
        proc = subprocess.run([str(python), "-m", "pip", "install", "-q", OLD_DUCKDB], capture_output=True,
                              text=True, timeout=600)
        if proc.returncode != 0:
            pytest.skip(f"cannot install {OLD_DUCKDB} (no package index?): {proc.stderr.strip()[-200:]}")
    return python


@pytest.fixture(scope="session")
def shared_db(tmp_path_factory) -> Path:
    """A database written by tracedb holding every kind of input."""
    db = tmp_path_factory.mktemp("shared") / "shared.duckdb"
    tc = write_tc_trace(db.parent / "tc.json", tc_op("torch.ops.aten.mm.default", 180, kernel_type="MatMulV2",
                                                     source="MEASURED"))
    h100, mi300 = (next(p for p in KINETO if p.name.startswith(n)) for n in ("h100_bert", "mi300_bert"))
    run_cli("load", h100, mi300, AIE, KERNEL_DETAILS, tc, db=db, check=True)
    return db


def read_with(python: Path, db: Path) -> dict:
    proc = subprocess.run([str(python), "-c", READ_ALL, str(db)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_duckdb_1_4_reads_every_table_view_and_macro(old_python, shared_db):
    old = read_with(old_python, shared_db)
    new = read_with(Path(sys.executable), shared_db)
    assert old["version"].startswith("1.4.") and old["errors"] == []
    assert old["counts"] == new["counts"] and old["views"] == new["views"]
    assert old["counts"]["traces"] == 5 and old["counts"]["kernels"] > 100
    assert len(old["views"]) > 40 and old["views"]["SELECT count(*) FROM tc_vs_prof('tc', 'kernel_details_cann8')"] == 5


def test_storage_version_is_chosen_at_creation(old_python, tmp_path):
    latest, bad = tmp_path / "latest.duckdb", tmp_path / "bad.duckdb"
    run_cli("load", KERNEL_DETAILS, "--storage-version", "latest", db=latest, check=True)
    proc = subprocess.run([str(old_python), "-c", READ_ALL, str(latest)], capture_output=True, text=True)
    assert proc.returncode != 0 and "version" in proc.stderr  # what the default avoids
    proc = run_cli("load", KERNEL_DETAILS, "--storage-version", "v9.9", db=bad)
    assert proc.returncode == 1 and "storage version v9.9 is not a DuckDB release" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and not bad.exists()
    with open_db(tmp_path / "default.duckdb") as con:
        tags = con.execute("SELECT tags FROM duckdb_databases() WHERE database_name = 'default'").fetchone()[0]
    assert tags["storage_version"].startswith("v1.4.0")


# -- another process holds the file --------------------------------------------------------------

HOLD = "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); print('holding', flush=True); time.sleep(float(sys.argv[2]))"


def hold(db: Path, seconds: float) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(db), str(seconds)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "holding"
    return proc


def test_a_held_file_is_one_line_for_every_command(tmp_path):
    db = tmp_path / "t.duckdb"
    run_cli("load", KERNEL_DETAILS, db=db, check=True)
    holder = hold(db, 60)
    try:
        for args in (["ls"], ["report", "ops"], ["sql", "SELECT 1"], ["load", AIE], ["rm", "kernel_details_cann8"]):
            proc = run_cli(*args, db=db)
            assert proc.returncode == 1, args
            line = proc.stderr.strip()
            assert len(line.splitlines()) == 1 and "Traceback" not in line, args
            assert f"{db}: process {holder.pid} (" in line and "holds this database" in line, line
            assert "--wait SECONDS" in line
    finally:
        holder.kill()
        holder.wait()
    with open_db(db, read_only=True) as con:
        assert con.execute("SELECT list(name) FROM traces").fetchone()[0] == ["kernel_details_cann8"]


def test_load_waits_for_the_file(tmp_path):
    db = tmp_path / "t.duckdb"
    run_cli("load", KERNEL_DETAILS, db=db, check=True)
    holder = hold(db, 3)
    try:
        started = time.monotonic()
        proc = run_cli("load", AIE, "--wait", "60", db=db)
        assert proc.returncode == 0, proc.stderr
        assert time.monotonic() - started >= 1  # it did wait for the holder
    finally:
        holder.wait()
    with open_db(db, read_only=True) as con:
        assert con.execute("SELECT count(*) FROM traces").fetchone()[0] == 2


@pytest.mark.parametrize("args", [["ls"], ["report", "ops"], ["sql", "SELECT count(*) FROM traces"],
                                  ["schema"], ["rules"]])
def test_read_commands_wait_for_the_file(tmp_path, monkeypatch, args):
    """A read command given --wait keeps trying while a load holds the file, and reads once it is
    free: the holder lets go when the command first waits (no number of seconds involved)."""
    from tracedb import db as dbmod

    db = tmp_path / "t.duckdb"
    run_cli("load", KERNEL_DETAILS, db=db, check=True)
    holder = hold(db, 600)
    waited = []
    real_sleep = time.sleep

    def let_go(seconds):
        if not waited:
            holder.kill()
            holder.wait()
        waited.append(seconds)
        real_sleep(seconds)

    monkeypatch.setattr(dbmod.time, "sleep", let_go)
    try:
        proc = run_cli(*args, "--wait", "600", db=db)
    finally:
        holder.kill()
        holder.wait()
    assert proc.returncode == 0, proc.stderr
    assert waited, "the command did not wait"


def test_readers_in_one_process_share_the_file(tmp_path):
    """Two sessions of a dashboard, or threads of a notebook, read one file at once in the sandbox:
    the second open does not trip on the settings the first locked, a reader closed leaves the others
    reading, and a file read in the sandbox is not opened outside it meanwhile (that would close
    the others' files), but is once they are closed."""
    import tracedb
    from tracedb import db as dbmod

    db = tmp_path / "t.duckdb"
    run_cli("load", KINETO[0], db=db, check=True)
    first, second = tracedb.connect(db), tracedb.connect(db)
    kernels = first.sql("SELECT count(*) FROM kernels").rows[0][0]
    assert kernels > 0
    first.close()
    assert second.sql("SELECT count(*) FROM kernels").rows[0][0] == kernels
    with pytest.raises(tracedb.TracedbError, match=r"t\.duckdb: open read-only in the sandbox in this process"):
        tracedb.connect(db, files=True)
    with pytest.raises(tracedb.TracedbError):
        second.sql(f"COPY (SELECT 1) TO '{tmp_path / 'out.csv'}'")
    counts = []

    def session() -> None:
        with tracedb.connect(db) as con:
            counts.append(con.report("summary").main.rows[0])

    failures = in_threads(session, 4)
    assert not failures and len(counts) == 4 and len(set(counts)) == 1
    second.close()
    assert str(db.resolve()) not in dbmod._readers  # the file's own connection went with its last reader
    with tracedb.connect(db, files=True) as c:
        c.sql(f"COPY (SELECT count(*) AS n FROM kernels) TO '{tmp_path / 'asked.csv'}'")
    assert (tmp_path / "asked.csv").read_text().splitlines()[1] == str(kernels)
