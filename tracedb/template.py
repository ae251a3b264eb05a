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

from . import db, store

TEMPLATE_NAME = store.TEMPLATE_NAME
template_path = store.template_path
copy_to = store.copy_to


def build(target: Path | None = None) -> Path:
    """(Re)build the template from the SQL files; returns its path."""

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
