"""A segment of events DuckDB refuses: every event it can read, each bad one set aside on its own.

DuckDB's JSON reader stops at the first bad value and names it ("in record/value K: <problem>").
The K-1 values before it are valid JSON, so a scan of their strings, brackets and commas finds
exactly where value K starts. Where the bad event ends cannot be read from the JSON (it is
broken): it ends at the next boundary between events (tracedb.ingest.boundaries), the pattern the
list separates its events by. The good values go into _raw, the bad event becomes a placeholder
row (JSON null) whose rejection is returned, so that rowids stay event indexes, and reading
resumes after it. Each try reads a window of about WINDOW bytes, so one bad event costs at most
a window read again: time stays linear in the segment for a handful of bad events, and bounded by
WINDOW per bad event however many there are.

Where it cannot go on (DuckDB fails without naming a value, the list does not start with an
object), it raises NotSalvageable and the streaming reader takes the file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import duckdb
import orjson

from ..errors import reraise_interrupt
from .boundaries import LEAD, boundary_pattern

WINDOW = 1 << 20
PLACEHOLDER = "null"  # the row of a bad event in _raw: flagged by chrome_bulk.sql, rejected in Python
_RECORD = re.compile(r"in record/value (\d+):\s*(.*)$", re.S)
# Strings (escapes included), brackets and commas: enough to count top-level values of valid JSON.
_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{},]')
_SPACE = b" \t\r\n"


class NotSalvageable(Exception):
    """The segment cannot be read event by event."""


@dataclass
class Rejection:
    event_id: int
    reason: str
    raw: str


def salvage(con: duckdb.DuckDBPyConnection, data: bytes, first_event: int, scratch: Path) -> list[Rejection]:
    """Append the readable events of one segment ("[" events "]") to _raw; first_event is the index
    of its first event. Returns the events set aside, with their placeholder rows' indexes."""
    lead = LEAD.match(data)
    if lead is None:
        raise NotSalvageable("the segment does not start with an object")
    boundary = boundary_pattern(lead.group(1))
    close = len(data.rstrip(_SPACE)) - 1
    if close < 0 or data[close:close + 1] != b"]":
        raise NotSalvageable("the segment does not end with ]")
    pos = lead.end() - 1
    rows = first_event
    window = WINDOW
    out: list[Rejection] = []
    while pos < close:
        stop = close
        if close - pos > window:
            m = boundary.search(data, pos + window, close)
            if m:
                stop = m.start(1)
        try:
            rows += _insert(con, data[pos:stop], scratch)
        except duckdb.Error as exc:
            reraise_interrupt(exc)
            message = " ".join(str(exc).split())
            found = _RECORD.search(message)
            if found is None:
                raise NotSalvageable(message[:200]) from None
            # DuckDB counts the array itself as value 1: value K is the list's (K-1)-th event.
            start = _value_start(data, pos, stop, int(found.group(1)) - 1)
            if start is None:
                raise NotSalvageable(f"cannot find value {found.group(1)} of a segment: {message[:200]}") from None
            after = boundary.search(data, start + 1, close)
            end = after.start(1) if after else close
            if end >= stop and stop < close:
                window *= 2  # the bad value runs to the window's end: it may only be cut there
                continue
            if _parses(data[start:end].rstrip(_SPACE)):  # not the value DuckDB meant: do not guess
                raise NotSalvageable(f"value {found.group(1)} of a segment reads as JSON: {message[:200]}")
            if start > pos:
                rows += _insert(con, data[pos:start].rstrip(_SPACE).rstrip(b","), scratch)
            con.execute(f"INSERT INTO _raw VALUES ('{PLACEHOLDER}')")
            out.append(Rejection(rows, "malformed JSON: " + found.group(2).rstrip(". "),
                                 data[start:end].rstrip(_SPACE).decode("utf-8", "backslashreplace")))
            rows += 1
            window = WINDOW
            stop = end
        pos = _skip(data, stop + 1, close)
    return out


def _insert(con: duckdb.DuckDBPyConnection, events: bytes, scratch: Path) -> int:
    """Append the events (comma-separated JSON values) to _raw; returns how many."""
    if not events.strip(_SPACE):
        return 0
    scratch.write_bytes(b"[" + events + b"]")
    path = str(scratch).replace("'", "''")
    return con.execute(f"INSERT INTO _raw SELECT json FROM read_json_objects('{path}', format = 'array')"
                       ).fetchone()[0]


def _parses(text: bytes) -> bool:
    try:
        orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        return "infinity" in str(exc)  # DuckDB keeps 1e400 as text; orjson cannot make it a float
    return True


def _value_start(data: bytes, pos: int, stop: int, k: int) -> int | None:
    """Offset of the k-th (1-based) top-level value of the comma-separated values from pos."""
    seen = 1
    depth = 0
    if k < 1:
        return None
    if k == 1:
        return pos
    for token in _TOKEN.finditer(data, pos, stop):
        c = data[token.start()]
        if c == 0x2C:  # ","
            if depth == 0:
                seen += 1
                if seen == k:
                    return _skip(data, token.end(), stop)
        elif c in b"[{":
            depth += 1
        elif c in b"]}":
            depth -= 1
    return None


def _skip(data: bytes, pos: int, stop: int) -> int:
    while pos < stop and data[pos] in _SPACE:
        pos += 1
    return pos
