"""Schema migrations SQL cannot write: DuckDB has no statement that changes how a column is
compressed, so such a migration rebuilds the table (its columns in their order, with their types,
NOT NULLs, defaults and comments) and copies its rows. tracedb.db runs STEPS[n] right after
sql/schema/NNN_*.sql, whose header documents the migration, in the same transaction: a table the
rebuild cannot take (changed by hand) is a one-line error, and the file stays as it was.
"""

from __future__ import annotations

import re

import duckdb

from .errors import TracedbError
from .sqlfiles import literal

# The tables whose args column is stored with ZSTD from schema v14 (sql/schema/014_args_zstd.sql).
EVENT_TABLES = ("kernels", "memory_ops", "runtime_calls", "cpu_ops", "python_functions", "annotations",
                "flows", "instants", "counters", "metadata_events", "other_events")


def zstd_available(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the file's storage format can hold ZSTD (DuckDB's v1.2.0 and later)."""
    tag = con.execute("SELECT tags['storage_version'] FROM duckdb_databases() "
                      "WHERE database_name = current_database()").fetchone()[0] or ""
    version = re.match(r"v(\d+)\.(\d+)", tag)
    return version is not None and (int(version.group(1)), int(version.group(2))) >= (1, 2)


def args_in_zstd(con: duckdb.DuckDBPyConnection) -> None:
    """Schema v14: each event table's args in ZSTD. A file in a format older than DuckDB 1.2's
    keeps DuckDB's own choice (its readers could not open ZSTD)."""
    if not zstd_available(con):
        return
    for table in EVENT_TABLES:
        recompress(con, table, "args", "ZSTD")


def recompress(con: duckdb.DuckDBPyConnection, table: str, column: str, method: str) -> None:
    """Rebuild main.<table> with <column> compressed by <method>: its columns in their order with
    their types, NOT NULLs and defaults, its rows and its comments. A table with any other
    constraint (a key, a check) is refused: the rebuild would not keep it."""
    where = "WHERE database_name = current_database() AND schema_name = 'main' AND table_name = ?"
    comment = con.execute(f"SELECT comment FROM duckdb_tables() {where}", [table]).fetchone()[0]
    columns = con.execute(f"SELECT column_name, data_type, is_nullable, column_default, comment "
                          f"FROM duckdb_columns() {where} ORDER BY column_index", [table]).fetchall()
    others = con.execute(f"SELECT constraint_text FROM duckdb_constraints() {where} "
                         f"AND constraint_type <> 'NOT NULL'", [table]).fetchall()
    if column not in [c[0] for c in columns]:
        raise TracedbError(f"cannot bring the database up to date: table {table} has no column {column}")
    if others:
        raise TracedbError(f"cannot bring the database up to date: table {table} has constraints a rebuild "
                           f"would drop: {', '.join(o[0] for o in others)}")
    staged = f"_{table}_rebuilt"
    con.execute(f"CREATE TABLE {staged} (" + ", ".join(
        f"{_name(name)} {kind}"
        + (f" USING COMPRESSION {method}" if name == column else "")
        + ("" if nullable else " NOT NULL")
        + (f" DEFAULT {default}" if default is not None else "")
        for name, kind, nullable, default, _ in columns) + ")")
    con.execute(f"INSERT INTO {staged} SELECT * FROM {table}")
    con.execute(f"DROP TABLE {table}")
    con.execute(f"ALTER TABLE {staged} RENAME TO {table}")
    if comment:
        con.execute(f"COMMENT ON TABLE {table} IS {literal(comment)}")
    for name, _, _, _, text in columns:
        if text:
            con.execute(f"COMMENT ON COLUMN {table}.{_name(name)} IS {literal(text)}")


def _name(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


# Migration number -> the step run after its SQL file.
STEPS = {14: args_in_zstd}
