"""Parquet export and loading it back: every report gives the same output on the imported database."""

from __future__ import annotations

import shlex

import json

import duckdb
import pytest

from conftest import FIXTURES, example_inputs, run_cli, tc_op, write_tc_trace
from tracedb import reports
from tracedb.db import open_db
from tracedb.exchange import MANIFEST

KERNEL_DETAILS = FIXTURES / "ascend" / "kernel_details_cann8.csv"
AIE = sorted((FIXTURES / "aie").glob("*.json"))
PAIR = ("h100_bert-small", "mi300_bert-small")


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """A database with traces of every kind, a user rules file, an op mapping; and its export."""
    tmp = tmp_path_factory.mktemp("export")
    db = tmp / "source.duckdb"
    rules = tmp / "my_rules.csv"
    rules.write_text("priority,platform,match,pattern,op,label\n1,AMD,prefix,attn_fwd,Flash Attention (Triton),mine\n")
    run_cli("load", *example_inputs(tmp), "--rules", rules, db=db, check=True)
    out = tmp / "export"
    proc = run_cli("export", out, db=db)
    assert proc.returncode == 0, proc.stderr
    return db, out


def report_runs():
    """Every report as its header's example runs it (the source database holds the traces the
    examples name): the arguments after `tracedb report`."""
    return [tuple(shlex.split(r.examples[0])[2:]) for _, r in sorted(reports.available().items())]


def test_round_trip_gives_identical_reports(source, tmp_path):
    db, out = source
    copy = tmp_path / "copy.duckdb"
    proc = run_cli("load", out, db=copy)
    assert proc.returncode == 0, proc.stderr
    runs = report_runs()
    assert len(runs) == len(reports.available()) >= 13
    for args in runs:
        a = run_cli("report", *args, "--format", "json", db=db)
        b = run_cli("report", *args, "--format", "json", db=copy)
        assert a.returncode == 0 and b.returncode == 0, (args, a.stderr, b.stderr)
        assert a.stdout == b.stdout, args
    with open_db(db, read_only=True) as x, open_db(copy, read_only=True) as y:
        tables = [t for (t,) in x.execute("SELECT DISTINCT table_name FROM duckdb_columns() "
                                          "WHERE column_name = 'trace_id' AND schema_name = 'main' "
                                          "AND table_name IN (SELECT table_name FROM duckdb_tables())").fetchall()]
        for table in tables + ["kernel_rules", "annotation_patterns"]:
            query = f"SELECT * FROM {table} ORDER BY ALL"
            assert x.execute(query).fetchall() == y.execute(query).fetchall(), table
    again = run_cli("load", out, db=copy)  # the same content again: skipped
    assert again.returncode == 0 and again.stderr.count("skipped: identical content") == 7


def test_export_layout_reads_as_hive_partitions(source):
    db, out = source
    manifest = json.loads((out / MANIFEST).read_text())
    with open_db(db, read_only=True) as con:
        assert manifest["schema_version"] == con.execute("SELECT max(version) FROM tracedb_schema").fetchone()[0]
        names = [n for (n,) in con.execute("SELECT name FROM traces ORDER BY trace_id").fetchall()]
        kernels = con.execute("SELECT t.name, count(*) FROM kernels JOIN traces t USING (trace_id) "
                              "GROUP BY ALL ORDER BY 1").fetchall()
    assert [t["name"] for t in manifest["traces"]] == names
    assert (out / "kernels" / "trace=h100_bert-small" / "data.parquet").is_file()
    assert (out / "kernel_rules" / "user.parquet").is_file() and "kernels" in manifest["tables"]
    plain = duckdb.connect()
    got = plain.execute("SELECT trace, count(*) FROM read_parquet(?, hive_partitioning = true) GROUP BY ALL ORDER BY 1",
                        [str(out / "kernels" / "*" / "*.parquet")]).fetchall()
    assert got == kernels


def test_export_of_some_traces_and_user_errors(source, tmp_path):
    db, out = source
    some = tmp_path / "some"
    run_cli("export", some, "--trace", "tc", "--trace", "op_mapping", db=db, check=True)
    assert [t["name"] for t in json.loads((some / MANIFEST).read_text())["traces"]] == ["op_mapping", "tc"]
    assert sorted(p.name for p in (some / "traces").iterdir()) == ["trace=op_mapping", "trace=tc"]
    for args, message in [((out,), "exists and is not an empty directory"),
                          ((tmp_path / "x", "--trace", "nope"), "no trace 'nope'")]:
        proc = run_cli("export", *args, db=db)
        assert proc.returncode == 1 and message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    newer = tmp_path / "newer"
    newer.mkdir()
    (newer / MANIFEST).write_text(json.dumps({"format": "tracedb-export", "schema_version": 999, "traces": []}))
    proc = run_cli("load", newer, db=tmp_path / "n.duckdb")
    assert proc.returncode == 1 and "exported with schema v999, newer than this tracedb's" in proc.stderr


def test_odd_names_and_bad_manifests(tmp_path):
    db, out = tmp_path / "t.duckdb", tmp_path / "out"
    long_name, upper = "k" * 300, "Kernel_Details"
    run_cli("load", KERNEL_DETAILS, "--name", long_name, db=db, check=True)
    run_cli("load", FIXTURES / "aie" / "mlir-aie_parse-trace_test1.json", "--name", "kernel_details", db=db, check=True)
    copy = write_tc_trace(tmp_path / "tc.json", tc_op("torch.ops.aten.mm.default", 5, kernel_type="MatMulV2"))
    run_cli("load", copy, "--name", upper, db=db, check=True)
    run_cli("export", out, db=db, check=True)
    folders = [t["partition"] for t in json.loads((out / MANIFEST).read_text())["traces"]]
    assert folders == ["trace=1", "trace=kernel_details", "trace=3"]  # too long; clashes by case
    back = tmp_path / "back.duckdb"
    run_cli("load", out, db=back, check=True)
    with open_db(back, read_only=True) as con:
        assert con.execute("SELECT list(name ORDER BY trace_id) FROM traces").fetchone()[0] == [
            long_name, "kernel_details", upper]
    proc = run_cli("load", out, "--name", "x", db=back)
    assert proc.returncode == 1 and "--name, --meta and --op-mapping do not apply" in proc.stderr
    manifest = json.loads((out / MANIFEST).read_text())
    manifest["traces"][0]["partition"] = "/etc"
    (out / MANIFEST).write_text(json.dumps(manifest))
    proc = run_cli("load", out, db=tmp_path / "n.duckdb")
    assert proc.returncode == 1 and "bad partition" in proc.stderr and "Traceback" not in proc.stderr


def test_a_broken_export_leaves_the_database_unchanged(source, tmp_path):
    _, out = source
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / MANIFEST).write_text((out / MANIFEST).read_text())
    for table_dir in out.iterdir():
        if table_dir.is_dir():
            (broken / table_dir.name).symlink_to(table_dir, target_is_directory=True)
    (broken / "kernels").unlink()
    (broken / "kernels" / "trace=h100_bert-small").mkdir(parents=True)
    (broken / "kernels" / "trace=h100_bert-small" / "data.parquet").write_bytes(b"not parquet")
    db = tmp_path / "t.duckdb"
    proc = run_cli("load", broken, db=db)
    assert proc.returncode == 1 and "cannot load the exported trace 'h100_bert-small'" in proc.stderr
    assert "Traceback" not in proc.stderr
    with open_db(db, read_only=True) as con:
        assert con.execute("SELECT count(*) FROM traces").fetchone()[0] == 0
        assert con.execute("SELECT count(*) FROM kernels").fetchone()[0] == 0
