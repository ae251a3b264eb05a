"""Opening a tracedb database: schema migrations, views, and friendly errors.

Migrations are the files sql/schema/NNN_*.sql, applied in order, each in its own transaction and
recorded in tracedb_schema. Views are the files sql/views/*.sql, re-created whenever their text
changes. The comment block above each CREATE becomes COMMENT ON TABLE/VIEW/COLUMN.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import duckdb

from . import sqlfiles
from .errors import TracedbError

DEFAULT_DB = "tracedb.duckdb"
_MIGRATION = re.compile(r"^(\d{3})_[\w-]+\.sql$")


def default_path() -> str:
    return os.environ.get("TRACEDB_DB") or DEFAULT_DB


def migrations() -> list[tuple[int, Path]]:
    out = []
    for path in sorted((sqlfiles.sql_dir() / "schema").glob("*.sql")):
        m = _MIGRATION.match(path.name)
        if m:
            out.append((int(m.group(1)), path))
    return out


def latest_version() -> int:
    return max(v for v, _ in migrations())


def open_db(path: str | os.PathLike | None = None, *, read_only: bool = False,
            memory_limit: str | None = None) -> duckdb.DuckDBPyConnection:
    """Open (creating if needed) a tracedb database, migrated and with current views.

    A read-only open of a database whose schema or views are out of date upgrades it first
    through a short read-write connection.
    """
    path = Path(path or default_path())
    if path.is_dir():
        raise TracedbError(f"{path}: is a directory, not a database file")
    if read_only and not path.exists():
        raise TracedbError(f"{path}: no such database (load a trace first: tracedb load FILE --db {path})")
    con = _connect(path, read_only, memory_limit)
    if read_only:
        if _needs_upgrade(con):
            con.close()
            _connect(path, False, memory_limit).close()  # upgrade, then reopen read-only
            con = _connect(path, True, memory_limit)
    return con


def _connect(path: Path, read_only: bool, memory_limit: str | None) -> duckdb.DuckDBPyConnection:
    config = {"memory_limit": memory_limit} if memory_limit else {}
    try:
        con = duckdb.connect(str(path), read_only=read_only, config=config)
    except duckdb.Error as exc:
        raise TracedbError(_explain_open_error(path, exc)) from None
    if not read_only:
        try:
            migrate(con)
            apply_views(con)
        except Exception:
            con.close()
            raise
    return con


def _explain_open_error(path: Path, exc: Exception) -> str:
    text = str(exc)
    if "Could not set lock" in text or "Conflicting lock" in text:
        return f"{path}: the database is held by another process; close it (or wait) and try again"
    if "not a valid DuckDB database" in text or "Unrecognized" in text or "not a DuckDB" in text:
        return f"{path}: not a DuckDB database file"
    if "newer" in text.lower() and "version" in text.lower():
        return f"{path}: written by a newer DuckDB than this one ({duckdb.__version__}); upgrade duckdb"
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return f"{path}: cannot open database: {first}"


def schema_version(con: duckdb.DuckDBPyConnection) -> int:
    exists = con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'tracedb_schema' AND schema_name = 'main'"
    ).fetchone()[0]
    if not exists:
        return 0
    return con.execute("SELECT coalesce(max(version), 0) FROM tracedb_schema").fetchone()[0]


def _views_fingerprint() -> dict[str, str]:
    """Digest of every view file, of the packaged rules (rules/...) and of the derivation
    (derive/...), keyed by file."""
    out = {}
    for path in sorted((sqlfiles.sql_dir() / "views").glob("*.sql")):
        out[path.name] = hashlib.sha256(path.read_bytes()).hexdigest()
    for folder in ("rules", "derive"):
        for path in sorted((sqlfiles.sql_dir() / folder).glob("*")):
            if path.suffix in (".csv", ".sql"):
                out[f"{folder}/{path.name}"] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def _needs_upgrade(con: duckdb.DuckDBPyConnection) -> bool:
    version = schema_version(con)
    _refuse_newer(version)
    if version < latest_version():
        return True
    stored = dict(con.execute("SELECT file, sha256 FROM tracedb_views").fetchall())
    return stored != _views_fingerprint()


def _refuse_newer(version: int) -> None:
    if version > latest_version():
        raise TracedbError(
            f"database schema v{version} is newer than this tracedb understands (v{latest_version()}); "
            "upgrade tracedb to open it")


def run_script(con: duckdb.DuckDBPyConnection, text: str) -> None:
    """Run every statement of a SQL file, then the COMMENT ONs from its doc blocks."""
    for stmt in sqlfiles.split_statements(text):
        con.execute(stmt)
        doc = sqlfiles.object_docs(stmt)
        if doc:
            for comment in sqlfiles.comment_statements(doc):
                con.execute(comment)


def used_params(stmt: str, params: dict) -> dict | None:
    """The $name parameters a statement uses outside comments (DuckDB refuses unused ones)."""
    code = "\n".join(line.split("--", 1)[0] for line in stmt.splitlines())
    used = {k: v for k, v in params.items() if re.search(rf"\${k}\b", code)}
    return used or None


def run_with_params(con: duckdb.DuckDBPyConnection, statements: list[str], params: dict) -> None:
    """Run statements, binding to each only the $name parameters it uses."""
    for stmt in statements:
        con.execute(stmt, used_params(stmt, params))


def run_file(con: duckdb.DuckDBPyConnection, rel: str, params: dict | None = None) -> None:
    """Run the statements of sql/<rel> with run_with_params."""
    run_with_params(con, sqlfiles.split_statements(sqlfiles.read(rel)), params or {})


def migrate(con: duckdb.DuckDBPyConnection) -> None:
    version = schema_version(con)
    _refuse_newer(version)
    schema_dir = sqlfiles.sql_dir() / "schema"
    if version == 0 or not _bootstrap_done(con):
        run_script(con, (schema_dir / "000_bootstrap.sql").read_text(encoding="utf-8"))
    for number, path in migrations():
        if number == 0 or number <= version:
            continue
        con.execute("BEGIN TRANSACTION")
        try:
            run_script(con, path.read_text(encoding="utf-8"))
            con.execute("INSERT INTO tracedb_schema VALUES (?, ?, now()::TIMESTAMP)", [number, path.name])
            con.execute("COMMIT")
        except Exception:
            con.execute("ROLLBACK")
            raise


def _bootstrap_done(con: duckdb.DuckDBPyConnection) -> bool:
    return con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'tracedb_views' AND schema_name = 'main'"
    ).fetchone()[0] == 1


def apply_views(con: duckdb.DuckDBPyConnection, force: bool = False) -> None:
    """(Re)create the views and macros of sql/views, and reload the packaged rules, when their
    files changed."""
    from . import facts, rules  # both run their SQL files through this module

    wanted = _views_fingerprint()
    stored = dict(con.execute("SELECT file, sha256 FROM tracedb_views").fetchall())
    if stored == wanted and not force:
        return
    con.execute("BEGIN TRANSACTION")
    try:
        for name in wanted:
            if "/" not in name:
                run_script(con, (sqlfiles.sql_dir() / "views" / name).read_text(encoding="utf-8"))
        rules.load_builtin(con)
        facts.derive_all(con)  # the stored facts follow the new definitions
        con.execute("DELETE FROM tracedb_views")
        for name, digest in wanted.items():
            con.execute("INSERT INTO tracedb_views VALUES (?, ?)", [name, digest])
        con.execute("COMMIT")
    except Exception:
        con.execute("ROLLBACK")
        raise
