"""Trace lakes: loads that write Parquet partitions (locking only the trace name they commit), and reads in place with every
view, macro and report of a database."""

from __future__ import annotations

import hashlib
import json
import os
import threading

import pytest

import tracedb
from tracedb import lake as lakemod
from tracedb import reports
from tracedb import snapshot
from tracedb.ingest.loader import default_name

from conftest import FIXTURES, KINETO, in_threads, run_cli, tc_op, write_tc_trace
from test_export import AIE, KERNEL_DETAILS, PAIR, report_runs


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """The same traces of every kind in a database file and in a lake (loaded by two workers)."""
    tmp = tmp_path_factory.mktemp("lake")
    tc = write_tc_trace(tmp / "tc.json", tc_op("torch.ops.aten.mm.default", 180, kernel_type="MatMulV2",
                                               source="MEASURED"), tc_op("torch.ops.aten.add.Tensor", 14))
    mapping = tmp / "op_mapping.yaml"
    mapping.write_text("operator_mappings:\n  aten.add.Tensor: {kernel_type: Add}\n")
    files = [next(p for p in KINETO if p.name.startswith(n)) for n in PAIR] + AIE + [KERNEL_DETAILS, tc]
    db, lake = tmp / "traces.duckdb", tmp / "lake"
    run_cli("load", *files, "--op-mapping", mapping, "--jobs", "1", db=db, check=True)
    # one after the other: ids in the order given, as the database's (test_parallel_lake: two workers)
    proc = run_cli("load", *files, "--op-mapping", mapping, "--lake", lake, "--jobs", "1", check=True)
    assert "loaded" in proc.stdout
    return db, lake


def test_every_report_is_the_same_on_a_lake(pair):
    db, lake = pair
    runs = report_runs()
    assert len(runs) == len(reports.available())
    for args in runs:
        a = run_cli("report", *args, "--format", "json", db=db)
        b = run_cli("report", *args, "--format", "json", db=lake)
        assert a.returncode == 0 and b.returncode == 0, (args, a.stderr, b.stderr)
        x, y = json.loads(a.stdout), json.loads(b.stdout)
        if args[0] == "trend":  # ordered by load time: the same order, each file's own time of load
            x, y = ([{k: v for k, v in r.items() if k != "key_value"} for r in z] for z in (x, y))
        assert x == y, args


def test_every_table_holds_the_same_rows(pair):
    db, lake = pair
    with tracedb.connect(db) as x, tracedb.connect(lake) as y:
        names = [n for (n,) in x.sql("SELECT name FROM traces").rows]
        assert sorted(names) == sorted(n for (n,) in y.sql("SELECT name FROM traces").rows)
        for table in [r[0] for r in x.sql("SELECT DISTINCT table_name FROM duckdb_columns() WHERE column_name = "
                                          "'trace_id' AND table_name IN (SELECT table_name FROM duckdb_tables())").rows]:
            # rows keyed by trace name: the lake's trace ids are its own
            query = (f"SELECT * EXCLUDE (trace_id, loaded_at, load_seconds) REPLACE () FROM {table} "
                     if table == "traces" else
                     f"SELECT t.name, r.* EXCLUDE (trace_id) FROM {table} r JOIN traces t USING (trace_id) ")
            query = query.replace(" REPLACE ()", "") + "ORDER BY ALL"
            assert x.sql(query).rows == y.sql(query).rows, table
        # the lake is a trace lake in the shell's eyes too: its tables are views over Parquet
        assert ("kernels", "view") in [(o, k) for o, k, _ in y.objects().rows]


def _writes(target) -> list[str]:
    """Statements that would write target, wrapped every way SQL allows."""
    target = str(target).replace("'", "''")
    copy = f"COPY (SELECT * FROM kernels WHERE false) TO '{target}' (FORMAT parquet)"
    return [copy, f"EXPLAIN ANALYZE {copy}", f"EXPLAIN {copy}",
            f"COPY (WITH k AS (SELECT * FROM kernels) SELECT * FROM k WHERE false) TO '{target}' (FORMAT parquet)",
            f"PREPARE w AS {copy}; EXECUTE w",
            f"CREATE TEMP MACRO m() AS TABLE SELECT 1; COPY (FROM m()) TO '{target}' (FORMAT csv)",
            f"COPY kernels TO '{target}' (FORMAT csv)", f"EXPORT DATABASE '{target}'",
            f"ATTACH '{target}' AS w; CREATE TABLE w.t AS SELECT 1",
            f"SELECT * FROM read_csv('{target}')", "INSTALL httpfs", "SET threads = 1",
            "RESET enable_external_access; COPY (SELECT 1) TO '/tmp/tracedb-never.csv'"]


@pytest.mark.parametrize("where", ["lake", "database"])
def test_user_sql_writes_no_file(pair, where):
    """Nothing tracedb sql runs writes a file: not a lake's data, its marker, nor a file beside a
    database, whatever wraps the statement (the engine's switches refuse it, not a keyword filter)."""
    db, lake = pair
    target = lake if where == "lake" else db
    folder = next((lake / "kernels").iterdir()) / "data.parquet" if where == "lake" else db.parent / "new.parquet"
    before = {str(p): p.stat().st_mtime_ns for p in target.parent.rglob("*")}
    count = run_cli("sql", "SELECT count(*) AS n FROM kernels", "--format", "csv", db=target, check=True).stdout
    assert count.splitlines()[1] != "0"
    for victim in (folder, lake / lakemod.MARKER, target.parent / "new.csv"):
        for statement in _writes(victim):
            proc = run_cli("sql", statement, db=target)
            assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, \
                (statement, proc.stderr)
    assert {str(p): p.stat().st_mtime_ns for p in target.parent.rglob("*")} == before
    assert not os.path.exists("/tmp/tracedb-never.csv")
    assert run_cli("sql", "SELECT count(*) AS n FROM kernels", "--format", "csv", db=target).stdout == count


def test_a_lake_is_loaded_into_only_by_lake_loads(pair):
    _, lake = pair
    proc = run_cli("load", KINETO[0], db=lake)
    assert proc.returncode == 1 and "--lake" in proc.stderr
    with pytest.raises(tracedb.TracedbError, match="read in place"):
        tracedb.connect(lake, read_only=False)


def test_writers_and_readers_of_one_lake(tmp_path):
    """Writers at once (two threads, each in its own partition) and a reader in between: the reader
    sees whole traces only, and the lake ends with every trace."""
    lake = tmp_path / "lake"
    files = KINETO[:4]
    errors = []

    def write(part):
        try:
            for f in part:
                lakemod.add(f, lake)
        except Exception as exc:  # noqa: BLE001 - the test reports it
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(files[i::2],)) for i in range(2)]
    for t in threads:
        t.start()
    seen = []
    while any(t.is_alive() for t in threads):
        if lakemod.is_lake(lake):
            with tracedb.connect(lake) as db:
                # every trace a reader sees has its kernels' facts: nothing half written
                seen.append(db.sql("SELECT count(*) FROM traces t WHERE NOT EXISTS "
                                   "(SELECT 1 FROM cpu_ops c WHERE c.trace_id = t.trace_id)").rows[0][0])
    for t in threads:
        t.join()
    assert not errors, errors
    assert set(seen) <= {0}
    with tracedb.connect(lake) as db:
        assert db.sql("SELECT count(*) FROM traces").rows[0][0] == 4
    assert not (lake / lakemod.INCOMING).exists() and not (lake / lakemod.TRASH).exists()


def test_a_working_directory_survives_its_parent_removed_meanwhile(tmp_path, monkeypatch):
    """A writer's .incoming/<id> (or .trash/<id>) is made even when another writer or a reader
    removes the empty parent between the parent's mkdir and the child's (the race of two writers
    and a reader of one lake)."""
    parent = tmp_path / lakemod.INCOMING
    made = []
    real_mkdir = type(parent).mkdir

    def mkdir(self, *args, **kwargs):
        if self.parent == parent and parent.exists() and not made:  # the parent goes just before
            parent.rmdir()
            made.append(self)
        return real_mkdir(self, *args, **kwargs)

    monkeypatch.setattr(type(parent), "mkdir", mkdir)
    child = lakemod._work_dir(parent)
    assert made and child.parent == parent and child.is_dir()


def test_writers_that_make_the_lake_at_once(tmp_path):
    """The threads of one process (a Dask worker's) making one lake: every one finds it a lake."""
    for i in range(40):
        lake = tmp_path / f"lake{i}"
        errors = in_threads(lambda: lakemod.create(lake), 4)
        assert not errors, errors
        assert json.loads((lake / lakemod.MARKER).read_text())["format"] == "tracedb-lake"


def test_same_name_skip_replace_and_refuse(tmp_path):
    lake = tmp_path / "lake"
    first = lakemod.add(KINETO[0], lake)
    again = lakemod.add(KINETO[0], lake)
    assert (first.status, again.status) == ("loaded", "skipped")
    other = tmp_path / KINETO[0].name
    other.write_bytes(KINETO[1].read_bytes())  # the same name, other content
    with pytest.raises(tracedb.TracedbError, match="choose another --name or use --replace"):
        lakemod.add(other, lake)
    replaced = lakemod.add(other, lake, replace=True)
    assert replaced.status == "replaced" and replaced.trace_id > first.trace_id  # a new id, as in a database
    assert sorted(int(p.name) for p in (lake / lakemod.IDS).iterdir()) == [replaced.trace_id]
    with tracedb.connect(lake) as db:
        rows = db.sql("SELECT name, sha256 FROM traces").rows
    assert rows == [(default_name(KINETO[0]), hashlib.sha256(other.read_bytes()).hexdigest())]


@pytest.mark.parametrize("pyarrow_imported", [True, False], ids=["pyarrow", "duckdb"])
def test_a_committed_trace_is_read_alike_with_pyarrow_or_without(tmp_path, monkeypatch, pyarrow_imported):
    """What a writer reads of a committed trace (its digest and id) is the same whichever reader a
    process uses; an unreadable traces file is (None, None) with both."""
    import sys

    import pyarrow.parquet  # noqa: F401  (imported here, then hidden for the DuckDB case)

    lake = tmp_path / "lake"
    loaded = lakemod.add(KINETO[1], lake, name="t")
    if not pyarrow_imported:
        monkeypatch.delitem(sys.modules, "pyarrow.parquet")
    committed = lake / "traces" / lakemod.folder_of("t") / "data.parquet"
    assert lakemod._stored(committed) == (hashlib.sha256(KINETO[1].read_bytes()).hexdigest(), loaded.trace_id)
    assert ("pyarrow.parquet" in sys.modules) == pyarrow_imported  # the case it claims to test
    committed.write_bytes(committed.read_bytes()[:-9])  # a footer cut short
    assert lakemod._stored(committed) == (None, None)
    other = tmp_path / "other.parquet"
    other.write_bytes((lake / "kernels" / lakemod.folder_of("t") / "data.parquet").read_bytes())
    assert lakemod._stored(other) == (None, None)  # not a traces file


def test_a_bad_file_is_one_line_and_the_rest_land(tmp_path):
    bad = tmp_path / "broken.json"
    bad.write_text('{"traceEvents": [{"ph": "X", "ts": ')
    missing = tmp_path / "missing.json"
    proc = run_cli("load", KINETO[0], bad, missing, KINETO[1], "--lake", tmp_path / "lake", "--jobs", "2",
                   "--format", "csv")
    assert proc.returncode == 1
    errors = [line for line in proc.stderr.splitlines() if line.startswith("tracedb: error:")]
    assert sorted(e.split(": ")[2] for e in errors) == [str(bad), str(missing)]  # one line each
    assert proc.stderr.splitlines() == errors  # a line per file, as a database load gives
    with tracedb.connect(tmp_path / "lake") as db:
        assert db.sql("SELECT count(*) FROM traces").rows[0][0] == 2
    assert not (tmp_path / "lake" / lakemod.INCOMING).exists()
    assert len(list((tmp_path / "lake" / lakemod.IDS).iterdir())) == 2  # a failed file's id is given back


def test_ids_names_and_odd_names(tmp_path):
    lake = tmp_path / "lake"
    odd = ["a/b c", "x" * 300, "ünï%cödé", "UPPER"]
    for name in odd:
        lakemod.add(KINETO[2], lake, name=name)
    folders = snapshot.committed(lake)
    assert len(folders) == len(odd) and all(len(f.encode()) <= lakemod.MAX_FOLDER for f in folders)
    with tracedb.connect(lake) as db:
        assert sorted(n for (n,) in db.sql("SELECT name FROM traces").rows) == sorted(odd)
        ids = [i for (i,) in db.sql("SELECT trace_id FROM traces").rows]
        assert len(set(ids)) == len(ids) and all(0 < i < 2**31 for i in ids)
    # ids grow with time; loads of one second take the next free numbers
    assert sorted(ids) == [ids[0] + i for i in range(len(ids))] or len(set(ids)) == len(ids)
    holder = lakemod._work_dir(lake / lakemod.INCOMING)
    a, b = lakemod.claim_id(lake, "trace=a", holder), lakemod.claim_id(lake, "trace=b", holder)
    assert b > a > max(ids) - 1
    assert json.loads((lake / lakemod.IDS / str(b)).read_text()) == {"folder": "trace=b", "holder": holder.name}
    assert json.loads((holder / lakemod.JOURNAL).read_text())["trace_id"] == b  # named before it was taken


def test_not_a_lake_and_newer_lakes(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "notes.txt").write_text("x")
    proc = run_cli("load", KINETO[0], "--lake", plain)
    assert proc.returncode == 1 and "not a trace lake" in proc.stderr
    for command in (("ls",), ("load", KINETO[0])):
        proc = run_cli(*command, db=plain)
        assert proc.returncode == 1 and "is a directory" in proc.stderr and proc.stderr.count("\n") == 1
    assert [p.name for p in plain.iterdir()] == ["notes.txt"]
    lake = tmp_path / "lake"
    lakemod.add(KINETO[2], lake)
    marker = json.loads((lake / lakemod.MARKER).read_text())
    marker["schema_version"] += 1
    (lake / lakemod.MARKER).write_text(json.dumps(marker))
    proc = run_cli("ls", db=lake)
    assert proc.returncode == 1 and "newer than this tracedb" in proc.stderr and "Traceback" not in proc.stderr
    proc = run_cli("load", KINETO[0], "--lake", lake, "--rules", FIXTURES / "SOURCES.md")
    assert proc.returncode == 1 and "--rules applies to a database" in proc.stderr
    assert os.path.exists(lake / "traces")


def test_parallel_lake(pair, tmp_path):
    """Two workers write the lake; every table holds the rows the one-at-a-time lake holds."""
    db, lake = pair
    files = [p for p in KINETO[:3]] + AIE
    side = tmp_path / "side"
    run_cli("load", *files, "--lake", side, "--jobs", "2", check=True)
    serial = tmp_path / "serial"
    run_cli("load", *files, "--lake", serial, "--jobs", "1", check=True)
    with tracedb.connect(side) as x, tracedb.connect(serial) as y:
        for table in ("traces", "kernels", "kernel_facts", "cpu_ops", "aie_events"):
            query = (f"SELECT t.name, r.* EXCLUDE (trace_id) FROM {table} r JOIN traces t USING (trace_id) "
                     if table != "traces" else "SELECT * EXCLUDE (trace_id, loaded_at, load_seconds) FROM traces ")
            assert sorted(x.sql(query).rows, key=repr) == sorted(y.sql(query).rows, key=repr), table


def test_a_broken_lake_is_one_line(tmp_path):
    lake = tmp_path / "lake"
    lakemod.add(KINETO[2], lake)
    before = sorted((str(p), p.stat().st_size) for p in lake.rglob("*") if p.is_file())
    part = next((lake / "cpu_ops").iterdir()) / "data.parquet"
    part.write_text("not parquet")
    proc = run_cli("report", "summary", db=lake)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert str(part) in proc.stderr and "cannot read the lake" in proc.stderr
    (lake / lakemod.MARKER).write_text("{")
    proc = run_cli("ls", db=lake)
    assert proc.returncode == 1 and "unreadable tracedb-lake.json" in proc.stderr and "Traceback" not in proc.stderr
    # reading left the lake as it was (the broken file aside)
    after = sorted((str(p), p.stat().st_size) for p in lake.rglob("*") if p.is_file())
    assert [p for p, _ in after] == [p for p, _ in before]


def test_an_export_reads_in_place(pair, tmp_path):
    db, _ = pair
    out = tmp_path / "export"
    run_cli("export", out, db=db, check=True)
    for args in report_runs()[:4]:
        a = run_cli("report", *args, "--format", "json", db=db)
        b = run_cli("report", *args, "--format", "json", db=out)
        assert json.loads(a.stdout) == json.loads(b.stdout), args


@pytest.mark.parametrize("where", ["lake", "database"])
def test_a_python_connection_writes_no_file_unless_asked_by_name(pair, where, tmp_path):
    """tracedb.connect(...) runs the user's SQL in the sandbox of tracedb sql, on a database and on
    a lake; files=True asks for a read-only connection without it, and tracedb's own export still
    writes through a sandboxed one."""
    db, lake = pair
    target = lake if where == "lake" else db
    folder = next((lake / "kernels").iterdir()) / "data.parquet" if where == "lake" else db.parent / "new.parquet"
    before = {str(p): p.stat().st_mtime_ns for p in target.parent.rglob("*")}
    with tracedb.connect(target) as c:
        assert c.sql("SELECT count(*) FROM kernels").rows[0][0] > 0
        for victim in (folder, lake / lakemod.MARKER, target.parent / "new.csv", tmp_path / "out.csv"):
            for statement in _writes(victim) + ["SELECT * FROM read_csv('/etc/passwd')"]:
                with pytest.raises(tracedb.TracedbError):
                    c.sql(statement)
        c.export(tmp_path / "export", ["h100_bert-small"])  # tracedb writes it, not the user's SQL
        assert (tmp_path / "export" / "kernels").is_dir()
    back = run_cli("load", tmp_path / "export", db=tmp_path / "back.duckdb")  # and it loads back
    assert back.returncode == 0 and "loaded" in back.stdout, back.stderr
    assert {str(p): p.stat().st_mtime_ns for p in target.parent.rglob("*")} == before
    assert not (tmp_path / "out.csv").exists() and not (tmp_path / "out.csv.wal").exists()
    with tracedb.connect(target, files=True) as c:
        c.sql(f"COPY (SELECT count(*) AS n FROM kernels) TO '{tmp_path / 'asked.csv'}'")
    assert (tmp_path / "asked.csv").read_text().splitlines()[0] == "n"
