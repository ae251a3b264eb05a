"""A segment of events DuckDB refuses: every event it can read, each bad one set aside on its own.

The segment is read a window of about WINDOW bytes at a time. A window DuckDB refuses is cut at
the boundaries between events (tracedb.ingest.boundaries), each piece checked by orjson (yyjson,
the parser DuckDB uses too), and the window inserted once with each bad event replaced by a
placeholder row (JSON null), so that rowids stay event indexes; the bad events' rejections are
returned. Where a bad event ends cannot be read from the JSON (it is broken): at the next
boundary, or a later one when the brackets before it do not balance (an object inside the event
laid out like an event).

Where the two parsers disagree and DuckDB still refuses the window, DuckDB is asked instead: its
JSON reader stops at the first bad value and names it ("in record/value K: <problem>"). The
values before it are valid JSON, so a scan of their strings, brackets and commas finds exactly
where the bad one starts; the values before it go in, the bad one becomes a placeholder, and
reading resumes after it with a small window (MIN_WINDOW, doubling back to WINDOW).

Where it cannot go on (DuckDB fails without naming a value, the list does not start with an
object), or where a bad piece holds the end of the event list itself (its "]" followed by another
top-level key: the feeder took an array after the events for the event list), it raises
NotSalvageable and the streaming reader, which reads only the traceEvents array as events, takes
the file.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import duckdb
import orjson

from ..errors import reraise_interrupt
from ..sqlfiles import file_path, literal
from .boundaries import LEAD, boundary_pattern

WINDOW = 1 << 20
MIN_WINDOW = 4 << 10  # after a bad event: most bad events come in runs (one writer's bug)
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
            done = _insert_checked(con, data, boundary, pos, stop, rows, scratch)
            if done is not None:
                rows, rejected = done
                out += rejected
                pos = _skip(data, stop + 1, close)
                continue
            message = " ".join(str(exc).split())
            found = _RECORD.search(message)
            if found is None:
                raise NotSalvageable(message[:200]) from None
            # DuckDB counts the array itself as value 1: value K is the list's (K-1)-th event.
            start = _value_start(data, pos, stop, int(found.group(1)) - 1)
            if start is None:
                raise NotSalvageable(f"cannot find value {found.group(1)} of a segment: {message[:200]}") from None
            if not data[start:stop].strip(_SPACE):  # "},]": a trailing comma, no event
                rows += _insert(con, data[pos:start].rstrip(_SPACE).rstrip(b","), scratch)
                break
            end = _end_of(data, boundary, start, close)
            if end >= stop and stop < close:
                window *= 2  # the bad value runs to the window's end: it may only be cut there
                continue
            if _parses(data[start:end].rstrip(_SPACE)):  # not the value DuckDB meant: do not guess
                raise NotSalvageable(f"value {found.group(1)} of a segment reads as JSON: {message[:200]}")
            if start > pos:
                rows += _insert(con, data[pos:start].rstrip(_SPACE).rstrip(b","), scratch)
            con.execute(f"INSERT INTO _raw VALUES ('{PLACEHOLDER}', {len(PLACEHOLDER)})")
            out.append(Rejection(rows, "malformed JSON: " + found.group(2).rstrip(". "),
                                 data[start:end].rstrip(_SPACE).decode("utf-8", "backslashreplace")))
            rows += 1
            window = MIN_WINDOW
            stop = end
        else:
            window = min(window * 2, WINDOW)
        pos = _skip(data, stop + 1, close)
    for rejection in out:
        if ends_event_list(rejection.raw):
            raise NotSalvageable(f"the event list ends inside event {rejection.event_id}'s text: "
                                 "an array after it was taken for the event list")
    return out


# A "]" closing the list the text is part of, then another member of the object around it.
_LIST_END = re.compile(rb'\]\s*,\s*"(?:[^"\\]|\\.)*"\s*:', re.S)


def ends_event_list(text: str) -> bool:
    """Whether the text of a piece of the event list closes the list and goes on with another
    key of the top-level object (`{...}], "samples": [`): a "]" outside strings that no "["
    of the piece opened, followed by `, "key":`."""
    data = text.encode("utf-8", "surrogatepass")
    depth = 0
    for token in _TOKEN.finditer(data):
        c = data[token.start()]
        if c in b"[{":
            depth += 1
        elif c in b"]}":
            depth -= 1
            if depth < 0 and c == 0x5D and _LIST_END.match(data, token.start()):
                return True
    return False


def _insert_checked(con: duckdb.DuckDBPyConnection, data: bytes, boundary, pos: int, stop: int, rows: int,
                    scratch: Path) -> tuple[int, list[Rejection]] | None:
    """The quick way through a window DuckDB refused: each event checked on its own by orjson
    (yyjson, DuckDB's parser too), the bad ones replaced by placeholders, the window inserted in
    one go. None when DuckDB still refuses it (the two parsers disagree): the caller then asks
    DuckDB event by event."""
    pieces = _checked_pieces(data, boundary, pos, stop)
    text = b",".join(data[s:e] if why is None else PLACEHOLDER.encode() for s, e, why in pieces)
    try:
        added = _insert(con, text, scratch)
    except duckdb.Error as exc:
        reraise_interrupt(exc)
        return None
    if added != len(pieces):
        raise NotSalvageable(f"a window of {len(pieces)} events read as {added}")
    rejected = [Rejection(rows + i, "malformed JSON: " + why, data[s:e].decode("utf-8", "backslashreplace"))
                for i, (s, e, why) in enumerate(pieces) if why is not None]
    return rows + added, rejected


def _checked_pieces(data: bytes, boundary, pos: int, stop: int) -> list[tuple[int, int, str | None]]:
    """The events from pos to stop, (start, end, why it is not JSON or None), cut at boundaries; a
    bad one ends where _end_of says (an object inside it laid out like an event does not cut it)."""
    last = _before_trailing_comma(data, pos, stop)
    out = []
    start = pos
    while start < last:
        after = boundary.search(data, start + 1, last)
        end = after.start(1) if after else last
        why = _problem(data[start:end])
        if why is None:
            out.append((start, end, None))
        else:
            end = _end_of(data, boundary, start, last)
            out += _split_piece(data, start, end)
        start = _skip(data, end + 1, stop)
    return out


def _split_piece(data: bytes, start: int, end: int) -> list[tuple[int, int, str | None]]:
    """The entries of a piece that is not one JSON value, each (start, end, why or None). A piece
    between two boundaries holds several entries when one is not an object (42, null, [1, 2], "s":
    no boundary before or after it): its top-level commas part them, each judged on its own; two
    bad neighbours are one broken event the commas cut, and a bad value that is no object belongs
    to the entry before it (an event closed early by a stray brace). A bad entry whose broken
    string hides the commas after it (an unterminated string) is cut where the rest reads as whole
    values."""
    out: list[tuple[int, int, str | None]] = []
    for s, e in _values(data, start, end):
        why = _problem(data[s:e])
        # a bad value after a bad one (one broken event the commas cut), or a bad value that is
        # no object after any ("y": 2} after an event closed by a stray brace): part of the one
        # before it
        if why is not None and out and (out[-1][2] is not None or data[s] != 0x7B):
            s = out.pop()[0]
            why = _problem(data[s:e])
        out.append((s, e, why))
    result = []
    for s, e, why in out:
        cut = None if why is None else _good_tail(data, s, e)
        if cut is None:
            result.append((s, e, why))
            continue
        bad_end = _before_trailing_comma(data, s, cut + 1)
        result.append((s, bad_end, _problem(data[s:bad_end])))
        result += [(a, b, None) for a, b in _values(data, _skip(data, cut + 1, e), e)]
    return result


def _top_commas(data: bytes, start: int, end: int) -> Iterator[int]:
    """Offsets of the commas between the top-level values from start to end (strings, brackets
    and commas counted as valid JSON has them)."""
    depth = 0
    for token in _TOKEN.finditer(data, start, end):
        c = data[token.start()]
        if c == 0x2C and depth == 0:
            yield token.start()
        elif c in b"[{":
            depth += 1
        elif c in b"]}":
            depth -= 1


def _values(data: bytes, start: int, end: int) -> list[tuple[int, int]]:
    """The top-level comma-separated values from start to end, whitespace trimmed."""
    out = []
    first = start
    for comma in _top_commas(data, start, end):
        out.append((first, _trim_end(data, first, comma)))
        first = _skip(data, comma + 1, end)
    out.append((first, _trim_end(data, first, end)))
    return [(s, e) for s, e in out if e > s]


def _trim_end(data: bytes, start: int, end: int) -> int:
    while end > start and data[end - 1] in _SPACE:
        end -= 1
    return end


_TAIL_LIMIT = 1 << 16  # bytes of a bad entry searched for good values at its end


def _good_tail(data: bytes, start: int, end: int) -> int | None:
    """The first comma after start from which the rest up to end reads as whole JSON values, or
    None: where a bad entry that hid its commas ends."""
    if end - start > _TAIL_LIMIT:
        return None
    comma = data.find(b",", start + 1, end)
    while comma >= 0:
        if _problem(b"[" + data[comma + 1:end] + b"]") is None:
            return comma
        comma = data.find(b",", comma + 1, end)
    return None


def _before_trailing_comma(data: bytes, pos: int, stop: int) -> int:
    """stop, or the end of the last event before it when a comma follows that event ("},]")."""
    end = _trim_end(data, pos, stop)
    if end > pos and data[end - 1] == 0x2C:
        return _trim_end(data, pos, end - 1)
    return stop


_NON_FINITE = re.compile(rb"[:,\[]\s*-?(?:NaN|Infinity)\b")


def _problem(text: bytes) -> str | None:
    """Why an event's text is not JSON as DuckDB reads it, or None. DuckDB takes NaN, Infinity and
    numbers beyond a double, which orjson refuses: the typing sets those events aside with their
    own reasons."""
    try:
        orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        if "not valid UTF-8" in exc.msg:
            return "invalid UTF-8 encoding in string"
        if ("infinity" in exc.msg or _NON_FINITE.search(text)) and _is_json_but_numbers(text):
            return None
        return exc.msg
    return None


def _is_json_but_numbers(text: bytes) -> bool:
    try:
        json.loads(text, parse_float=str, parse_int=str, parse_constant=str)
    except (ValueError, RecursionError):
        return False
    return True


def _insert(con: duckdb.DuckDBPyConnection, events: bytes, scratch: Path) -> int:
    """Append the events (comma-separated JSON values) to _raw; returns how many."""
    if not events.strip(_SPACE):
        return 0
    scratch.write_bytes(b"[" + events + b"]")
    return con.execute(f"INSERT INTO _raw SELECT json, strlen(json) FROM read_json_objects({literal(file_path(scratch))}, "
                       "format = 'array')").fetchone()[0]


def _parses(text: bytes) -> bool:
    try:
        orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        # DuckDB keeps 1e400 as text, orjson cannot make it a float: is the rest JSON?
        return "infinity" in exc.msg and _is_json_but_numbers(text)
    return True


def _end_of(data: bytes, boundary, start: int, close: int) -> int:
    """Where the bad event from start ends: the next boundary, or a later one when the brackets
    before it do not balance (an object inside the event laid out like an event), trying a few."""
    after = boundary.search(data, start + 1, close)
    first = after.start(1) if after else close
    end = first
    for _ in range(8):
        if _depth(data, start, end) == 0:
            return end
        if after is None:
            break
        after = boundary.search(data, end + 1, close)
        end = after.start(1) if after else close
    return first


def _depth(data: bytes, start: int, end: int) -> int:
    depth = 0
    for token in _TOKEN.finditer(data, start, end):
        c = data[token.start()]
        if c in b"[{":
            depth += 1
        elif c in b"]}":
            depth -= 1
    return depth


def _value_start(data: bytes, pos: int, stop: int, k: int) -> int | None:
    """Offset of the k-th (1-based) top-level value of the comma-separated values from pos."""
    if k < 1:
        return None
    if k == 1:
        return pos
    for seen, comma in enumerate(_top_commas(data, pos, stop), start=2):
        if seen == k:
            return _skip(data, comma + 1, stop)
    return None


def _skip(data: bytes, pos: int, stop: int) -> int:
    while pos < stop and data[pos] in _SPACE:
        pos += 1
    return pos
