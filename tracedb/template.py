"""The packaged empty database a new tracedb file starts from, the way PostgreSQL copies template1.

Building a database from sql/ (29 tables, 39 views, 35 macros, 575 column comments, the built-in
rules) takes DuckDB about a quarter of a second; copying the result takes a few milliseconds. The
template, sql/new_database.duckdb.gz, is that result, written in STORAGE_VERSION's format. It is
rebuilt from the SQL files whenever they change:

    python -m tracedb.template

A stale template still gives a correct database (opening it re-applies whatever changed, as for
any older file), only slower, and tests/test_template.py fails until it is rebuilt.
"""

from __future__ import annotations

import gzip
import shutil
import tempfile
from pathlib import Path

from . import atomic, sqlfiles

TEMPLATE_NAME = "new_database.duckdb.gz"


def template_path() -> Path:
    return sqlfiles.sql_dir() / TEMPLATE_NAME


def copy_to(path: Path) -> bool:
    """Write a new database at path from the template, never over a file another process created
    meanwhile (then that file is the database); False when there is no template or it cannot be
    written there (the caller creates the database from the SQL files, and DuckDB says what is
    wrong with the path)."""
    source = template_path()
    if not source.exists():
        return False

    def fill(out) -> None:
        with gzip.open(source, "rb") as f:
            shutil.copyfileobj(f, out, 1 << 20)

    try:
        atomic.create(path, fill)
    except OSError:
        return False
    return True


def build(target: Path | None = None) -> Path:
    """(Re)build the template from the SQL files; returns its path."""
    from . import db

    target = target or template_path()
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp) / "new.duckdb"
        db.open_db(fresh, template=False).close()
        with open(fresh, "rb") as f, open(target, "wb") as raw, \
                gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0) as out:
            shutil.copyfileobj(f, out, 1 << 20)
    return target


if __name__ == "__main__":
    print(build())
