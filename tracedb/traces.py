"""How a user names a loaded trace: by its name, or by its id written "#ID".

A bare number is a name like any other ("1" is the trace named 1, never trace id 1), so a name and
an id cannot be taken for each other; a trace name therefore cannot begin with "#". SQL users
have the same rule in the is_trace macro (sql/modules/core/selection.sql), which also takes an
integer for an id.
"""

from __future__ import annotations

import difflib

import duckdb

from .errors import TracedbError

ID_MARK = "#"


def check_name(name: str, where: object = None) -> str:
    """The name, or a TracedbError saying why it cannot name a trace (where: the file, for the message)."""
    at = f"{where}: " if where is not None else ""
    if not name or not name.strip():
        raise TracedbError(f"{at}a trace name cannot be empty")
    if name.startswith(ID_MARK):
        raise TracedbError(f"{at}a trace name cannot begin with {ID_MARK!r} ({ID_MARK}2 means the trace of id 2): "
                           f"{name[:80]!r}; choose another with --name")
    return name


def find(con: duckdb.DuckDBPyConnection, want: str) -> tuple[int, str]:
    """(trace_id, name) of the trace a user named, or a TracedbError."""
    rows = con.execute("SELECT trace_id, name FROM traces WHERE is_trace(name, trace_id, ?) ORDER BY trace_id",
                       [want]).fetchall()
    if not rows:
        near = suggestions(con, want)
        hint = f"; did you mean {', '.join(repr(n) for n in near)}?" if near else " (see: tracedb ls"
        raise TracedbError(f"no trace {want!r}{hint}" + ("" if near else f"; an id is written {ID_MARK}ID)"))
    if len(rows) > 1:  # a name beginning with "#", from a database made before names were checked
        raise TracedbError(f"{want!r} names {len(rows)} traces (ids {', '.join(str(r[0]) for r in rows)}); "
                           "a name beginning with # predates the rule: load that trace again under another name")
    return rows[0]


SUGGESTED = 5  # names a "did you mean" lists at most


def suggestions(con: duckdb.DuckDBPyConnection, want: str) -> list[str]:
    """Names of loaded traces the user may have meant: those the text begins, then those it
    resembles (difflib's ratio of 0.6 and more), SUGGESTED at most."""
    names = [r[0] for r in con.execute("SELECT name FROM traces ORDER BY trace_id").fetchall()]
    text = str(want)
    starting = [n for n in names if n.startswith(text) or text in n]
    alike = [n for n in difflib.get_close_matches(text, names, n=SUGGESTED, cutoff=0.6) if n not in starting]
    return (starting + alike)[:SUGGESTED]
