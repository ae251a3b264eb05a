"""Schema v14: the event tables' args in ZSTD (tracedb.rebuild), in a new database and in one an
older tracedb made, with every row, the column order, the constraints and the comments kept."""

from __future__ import annotations

import duckdb
import pytest

from tracedb import db, rebuild, sqlfiles, store
from tracedb.errors import TracedbError
from tracedb.ingest.loader import load_file

from conftest import KINETO, run_cli

TRACE = next(p for p in KINETO if p.name.startswith("h100_bert-small"))
# the catalog of the event tables: what the rebuild must keep
COLUMNS = ("SELECT table_name, column_index, column_name, data_type, is_nullable, comment FROM duckdb_columns() "
           "WHERE schema_name = 'main' AND list_contains(?, table_name) ORDER BY 1, 2")
TABLES = ("SELECT table_name, comment FROM duckdb_tables() WHERE schema_name = 'main' "
          "AND list_contains(?, table_name) ORDER BY 1")
TABLES_OF_A_TRACE = ("traces", "devices", "trace_metadata") + rebuild.EVENT_TABLES


def _compression(con, table, column):
    return {r[0] for r in con.execute("SELECT DISTINCT compression FROM pragma_storage_info(?) "
                                      "WHERE column_name = ? AND segment_type <> 'VALIDITY'",
                                      [table, column]).fetchall()}


def _rows(con, table):
    return con.execute(f"SELECT * FROM {table} ORDER BY ALL").fetchall()


def _v13(path, storage=db.STORAGE_VERSION):
    """A database as tracedb made it at schema v13 (the SQL files up to 013), by a plain DuckDB
    connection, without views yet."""
    con = duckdb.connect(str(path), config={"storage_compatibility_version": storage})
    schema = sqlfiles.sql_dir() / "schema"
    store.run_script(con, (schema / "000_bootstrap.sql").read_text(encoding="utf-8"))
    for number, file in db.migrations():
        if 0 < number <= 13:
            store.run_script(con, file.read_text(encoding="utf-8"))
            con.execute("INSERT INTO tracedb_schema VALUES (?, ?, now()::TIMESTAMP)", [number, file.name])
    return con


# views and macros over the rebuilt tables, read before and after the upgrade
VIEWS = {
    "all_events": "SELECT * FROM all_events ORDER BY ALL",
    "kernel_launches": "SELECT * FROM kernel_launches ORDER BY ALL",
    "kernel_ops": "SELECT * FROM kernel_ops ORDER BY ALL",
}


def test_a_new_database_keeps_each_event_tables_args_in_zstd(tmp_path):
    path = tmp_path / "new.duckdb"
    with db.open_db(path) as con:
        load_file(con, TRACE)
        con.execute("CHECKPOINT")
        filled = [t for t in rebuild.EVENT_TABLES
                  if con.execute(f"SELECT count(args) FROM {t}").fetchone()[0]]
        assert {"kernels", "cpu_ops", "runtime_calls"} <= set(filled)
        for table in filled:
            assert _compression(con, table, "args") == {"ZSTD"}, table
        # names repeat: DuckDB's own choice stays
        assert "ZSTD" not in _compression(con, "kernels", "name")


def test_an_older_database_is_rebuilt_with_every_row_and_comment(tmp_path):
    source, old = tmp_path / "source.duckdb", tmp_path / "v13.duckdb"
    with db.open_db(source) as con:
        load_file(con, TRACE)
    con = _v13(old)
    try:
        con.execute(f"ATTACH '{source}' AS source (READ_ONLY)")
        for table in TABLES_OF_A_TRACE:  # the same columns in the same order at v13 and v14
            con.execute(f"INSERT INTO main.{table} SELECT * FROM source.main.{table}")
        con.execute("DETACH source")
        # the views, macros and rules as the file holds them (the upgrade then rebuilds the tables
        # they read, and leaves them be: their files are unchanged); today's views also read the
        # tables of the migrations after 14, which create them only where they are missing
        for number, file in db.migrations():
            if number > 14:
                store.run_script(con, file.read_text(encoding="utf-8"))
        db._apply_views(con, db._views_fingerprint())
        views = {name: con.execute(sql).fetchall() for name, sql in VIEWS.items()}
        assert all(views.values())
        tables = list(rebuild.EVENT_TABLES)
        columns, comments = con.execute(COLUMNS, [tables]).fetchall(), con.execute(TABLES, [tables]).fetchall()
        rows = {t: _rows(con, t) for t in TABLES_OF_A_TRACE}
        assert all(rows[t] for t in ("kernels", "cpu_ops", "python_functions"))
        assert "USING COMPRESSION" not in con.execute("SELECT sql FROM duckdb_tables() "
                                                      "WHERE table_name = 'kernels'").fetchone()[0]
    finally:
        con.close()

    with db.open_db(old) as con:  # the upgrade: migration 14 under the views
        assert db.schema_version(con) == db.latest_version() >= 14
        assert {name: con.execute(sql).fetchall() for name, sql in VIEWS.items()} == views
        assert con.execute(COLUMNS, [tables]).fetchall() == columns
        assert con.execute(TABLES, [tables]).fetchall() == comments
        assert {t: _rows(con, t) for t in TABLES_OF_A_TRACE} == rows
        assert con.execute("SELECT count(*) FROM kernel_facts").fetchone()[0] == len(rows["kernels"])
        con.execute("CHECKPOINT")
        assert _compression(con, "kernels", "args") == {"ZSTD"}
        # the constraints came along: trace_id may not be NULL
        with pytest.raises(duckdb.ConstraintException):
            con.execute("INSERT INTO kernels (trace_id, kernel_id) VALUES (NULL, 1)")


def test_a_file_older_than_duckdb_1_2_keeps_duckdbs_choice(tmp_path):
    path = tmp_path / "v11.duckdb"
    _v13(path, storage="v1.1.0").close()
    with db.open_db(path) as con:
        assert not rebuild.zstd_available(con)
        assert db.schema_version(con) == db.latest_version()
        load_file(con, TRACE)
        assert "USING COMPRESSION" not in con.execute("SELECT sql FROM duckdb_tables() "
                                                      "WHERE table_name = 'kernels'").fetchone()[0]
    with db.open_db(tmp_path / "new.duckdb") as con:
        assert rebuild.zstd_available(con)


def test_a_rebuild_keeps_what_the_table_declares_and_refuses_what_it_cannot_keep():
    con = duckdb.connect()
    con.execute("""CREATE TABLE t (a INTEGER NOT NULL, "select" VARCHAR DEFAULT 'x',
                   s STRUCT(args VARCHAR, b INTEGER), d DECIMAL(38,9), l VARCHAR[],
                   args JSON NOT NULL DEFAULT '{}', extra JSON)""")
    con.execute("""COMMENT ON TABLE t IS 'the table''s'""")
    con.execute("""COMMENT ON COLUMN t."select" IS 'a reserved word''s column'""")
    con.execute("""INSERT INTO t VALUES (1, 'q', {'args': 'z', 'b': 2}, 1.5, ['a'], '{"k": 1}', NULL),
                                        (2, DEFAULT, NULL, NULL, NULL, DEFAULT, '[]')""")
    catalog = ("SELECT column_name, data_type, is_nullable, column_default, comment FROM duckdb_columns() "
               "WHERE table_name = 't' ORDER BY column_index")
    columns, rows = con.execute(catalog).fetchall(), con.execute("SELECT * FROM t ORDER BY a").fetchall()
    rebuild.recompress(con, "t", "args", "ZSTD")
    assert con.execute(catalog).fetchall() == columns
    assert con.execute("SELECT * FROM t ORDER BY a").fetchall() == rows
    assert con.execute("SELECT comment FROM duckdb_tables() WHERE table_name = 't'").fetchone()[0] == "the table's"
    definition = con.execute("SELECT sql FROM duckdb_tables() WHERE table_name = 't'").fetchone()[0]
    assert "args JSON DEFAULT('{}') USING COMPRESSION ZSTD NOT NULL" in definition
    assert "STRUCT(args VARCHAR, b INTEGER)," in definition  # the field of another column untouched
    with pytest.raises(TracedbError, match="table t has no column no_such"):
        rebuild.recompress(con, "t", "no_such", "ZSTD")
    con.execute("CREATE TABLE k (a INTEGER PRIMARY KEY, args JSON)")
    with pytest.raises(TracedbError, match=r"table k has constraints a rebuild would drop: PRIMARY KEY\(a\)$"):
        rebuild.recompress(con, "k", "args", "ZSTD")


def test_an_older_file_the_rebuild_cannot_take_is_one_line_and_stays_as_it_was(tmp_path):
    path = tmp_path / "v13.duckdb"
    con = _v13(path)
    con.execute("ALTER TABLE flows DROP COLUMN args")  # changed by hand
    con.close()
    before = _catalog(path)
    run = run_cli("ls", db=path)
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert run.stderr.strip().splitlines() == [
        "tracedb: error: cannot bring the database up to date: table flows has no column args"]
    assert _catalog(path) == before  # the kernels table rebuilt before it was rolled back too
    assert before[0] == 13


def _catalog(path):
    """The schema version and every table's definition, as a plain reader sees them."""
    with duckdb.connect(str(path), read_only=True) as con:
        return db.schema_version(con), con.execute("SELECT table_name, sql FROM duckdb_tables() ORDER BY 1").fetchall()
