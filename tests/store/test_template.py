"""A new database copied from the template (tracedb.template) is the database the SQL files build,
and the template, built once per fingerprint into the cache, is current."""

from __future__ import annotations

import os
import threading

import duckdb

from tracedb import db, store, template

CATALOG = {
    "tables": "SELECT table_name, comment, sql FROM duckdb_tables() WHERE NOT temporary ORDER BY 1",
    "views": "SELECT view_name, comment, sql FROM duckdb_views() WHERE NOT internal AND NOT temporary ORDER BY 1",
    "columns": "SELECT table_name, column_name, data_type, comment FROM duckdb_columns() "
               "WHERE NOT internal AND schema_name = 'main' ORDER BY 1, 2",
    "macros": "SELECT function_name, macro_definition, parameters FROM duckdb_functions() "
              "WHERE function_type LIKE '%macro%' AND NOT internal ORDER BY 1, 2, 3",
    "sequences": "SELECT sequence_name, start_value, last_value FROM duckdb_sequences() ORDER BY 1",
    "indexes": "SELECT index_name, table_name, sql FROM duckdb_indexes() ORDER BY 1",
    "schema": "SELECT version, name FROM tracedb_schema ORDER BY 1",
    "views_fingerprint": "SELECT file, sha256 FROM tracedb_views ORDER BY 1",
    "kernel_rules": "SELECT * FROM kernel_rules ORDER BY ALL",
    "annotation_patterns": "SELECT * FROM annotation_patterns ORDER BY ALL",
}


def _catalog(path):
    with db.open_db(path, read_only=True) as con:
        return {name: con.execute(sql).fetchall() for name, sql in CATALOG.items()}


def test_the_template_is_built_once_per_fingerprint(tmp_path, monkeypatch):
    """The first new database builds the template into the cache; a later one copies it; a change
    of the SQL files (a new fingerprint) builds a new one; the built template is current."""
    monkeypatch.setenv("TRACEDB_CACHE", str(tmp_path / "cache"))
    built = []
    monkeypatch.setattr(db, "build_new", lambda path, real=db.build_new: (built.append(path), real(path))[1])
    db.open_db(tmp_path / "a.duckdb").close()
    db.open_db(tmp_path / "b.duckdb").close()
    assert len(built) == 1 and template.template_path().exists()
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [template.template_path().name]
    con = duckdb.connect(str(template.template_path()), read_only=True)  # as it is, not upgraded by open_db
    try:
        assert dict(con.execute("SELECT file, sha256 FROM tracedb_views").fetchall()) == db._views_fingerprint()
        assert db.schema_version(con) == db.latest_version()
        storage = con.execute("SELECT tags['storage_version'] FROM duckdb_databases() "
                              "WHERE database_name = current_database()").fetchone()[0]
        assert storage is None or storage.startswith(db.STORAGE_VERSION)
    finally:
        con.close()
    first = template.template_path().name
    monkeypatch.setattr(store, "template_fingerprint", lambda: "changed")
    db.open_db(tmp_path / "c.duckdb").close()
    assert len(built) == 2
    assert {p.name for p in (tmp_path / "cache").iterdir()} == {first, "new_database-changed.duckdb"}


def test_without_a_writable_cache_a_new_database_is_built(tmp_path, monkeypatch):
    blocked = tmp_path / "file"
    blocked.write_text("a file where the cache's folder would be")
    monkeypatch.setenv("TRACEDB_CACHE", str(blocked / "cache"))
    db.open_db(tmp_path / "x.duckdb").close()
    with db.open_db(tmp_path / "x.duckdb", read_only=True) as con:
        assert con.execute("SELECT count(*) FROM tracedb_schema").fetchone()[0] == db.latest_version()


def test_the_fingerprint_covers_the_sql_files_and_not_the_reports():
    fingerprint = store.template_fingerprint()
    assert fingerprint == store.template_fingerprint() and len(fingerprint) == 20
    assert template.template_path().name == f"new_database-{fingerprint}.duckdb"


def test_a_copied_database_is_the_built_one(tmp_path):
    copied, built = tmp_path / "copied.duckdb", tmp_path / "built.duckdb"
    db.open_db(copied).close()
    db.open_db(built, template=False).close()
    assert _catalog(copied) == _catalog(built)
    with db.open_db(copied, read_only=True) as con:  # the migrations are dated when it was made
        assert con.execute("SELECT min(applied_at) > now()::TIMESTAMP - INTERVAL 1 MINUTE "
                           "FROM tracedb_schema").fetchone()[0]
        assert con.execute("SELECT count(*) FROM traces").fetchone()[0] == 0


def test_the_copy_never_replaces_a_file(tmp_path):
    path = tmp_path / "there.duckdb"
    path.write_bytes(b"someone else's")
    assert store.copy_to(path, db.build_new)  # the template was there; the file stays as it is
    assert path.read_bytes() == b"someone else's"
    assert [p.name for p in tmp_path.iterdir()] == ["there.duckdb"]  # no temporary file left


def test_a_stale_temporary_file_does_not_stop_the_copy(tmp_path):
    path = tmp_path / "new.duckdb"
    # the name this process and thread would write beside the target (tracedb.atomic)
    (tmp_path / f".new.duckdb.{os.getpid()}.{threading.get_ident()}.new").write_bytes(b"left by a killed process")
    assert store.copy_to(path, db.build_new)
    with db.open_db(path, read_only=True) as con:
        assert con.execute("SELECT count(*) FROM tracedb_schema").fetchone()[0] == db.latest_version()
    assert [p.name for p in tmp_path.iterdir()] == ["new.duckdb"]


def test_an_unwritable_place_is_left_to_duckdb(tmp_path):
    assert not store.copy_to(tmp_path / "missing" / "x.duckdb", db.build_new)
    assert os.listdir(tmp_path) == []


def test_another_storage_version_is_built_from_the_sql_files(tmp_path):
    path = tmp_path / "v15.duckdb"
    db.open_db(path, storage="v1.5.0").close()
    with db.open_db(path, read_only=True) as con:
        assert con.execute("SELECT count(*) FROM tracedb_schema").fetchone()[0] == db.latest_version()
