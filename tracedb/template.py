"""The empty database a new tracedb file starts from, the way PostgreSQL copies template1.

Building a database from sql/ (its tables, views, macros, column comments and built-in rules)
takes DuckDB most of a second; copying the result takes a few milliseconds. The first new
database after an install or an upgrade builds the template into the user's cache
(tracedb.store.cache_dir(): $TRACEDB_CACHE, else $XDG_CACHE_HOME/tracedb, else ~/.cache/tracedb),
named by the fingerprint of the SQL files, the code that runs them and DuckDB's version; every
later one copies it. Nothing is committed and nothing can go stale: a change to any of those files
is a new fingerprint, hence a new template. To build it ahead (a shared image, a CI cache):

    python -m tracedb.template
"""

from __future__ import annotations

from pathlib import Path

from . import db, store

template_path = store.template_path


def build() -> Path:
    """The template of the current SQL files, built when the cache has none; returns its path."""
    return store.build_template(db.build_new)


if __name__ == "__main__":
    print(build())
