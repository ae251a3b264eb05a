"""Schema migrations SQL cannot write: DuckDB has no statement that changes how a column is
compressed, so such a migration rebuilds the table (its columns in their order, constraints and
comments kept) and copies its rows. tracedb.db runs STEPS[n] right after sql/schema/NNN_*.sql,
whose header documents the migration, in the same transaction.
"""

from __future__ import annotations

import re

import duckdb

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
    """Rebuild main.<table> with <column> compressed by <method>, rows, order and comments kept."""
    (create, comment), = con.execute("SELECT sql, comment FROM duckdb_tables() WHERE database_name = "
                                     "current_database() AND schema_name = 'main' AND table_name = ?",
                                     [table]).fetchall()
    columns = con.execute("SELECT column_name, comment FROM duckdb_columns() WHERE database_name = "
                          "current_database() AND schema_name = 'main' AND table_name = ? ORDER BY column_index",
                          [table]).fetchall()
    staged = f"_{table}_rebuilt"
    # DuckDB writes the definition back as "CREATE TABLE name(col TYPE ..., ...);"
    body = create[create.index("(", len("CREATE TABLE")):].rstrip().rstrip(";")
    body, found = re.subn(rf"([(,]\s*){re.escape(column)} (\w+)(?: USING COMPRESSION \w+)?(?=[,)])",
                          rf"\1{column} \2 USING COMPRESSION {method}", body, count=1)
    if not found:
        raise ValueError(f"{table}.{column} not found in {create!r}")
    con.execute(f"CREATE TABLE {staged}{body}")
    con.execute(f"INSERT INTO {staged} SELECT * FROM {table}")
    con.execute(f"DROP TABLE {table}")
    con.execute(f"ALTER TABLE {staged} RENAME TO {table}")
    if comment:
        con.execute(f"COMMENT ON TABLE {table} IS {literal(comment)}")
    for name, text in columns:
        if text:
            con.execute(f"COMMENT ON COLUMN {table}.{name} IS {literal(text)}")



# Migration number -> the step run after its SQL file.
STEPS = {14: args_in_zstd}
