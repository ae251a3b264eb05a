"""Capturing a Chrome trace's top-level metadata while its events stream by.

The event readers build only the events; the keys around the event list (schemaVersion,
deviceProperties, traceName, ...) are recovered from the raw bytes that pass by:

- the head, every byte before `"traceEvents": [`, is kept and parsed as an object;
- after that only the bytes since the latest event (or segment of events) are kept. Once the
  stream is read, the list's closing bracket is found by walking the top-level members after it
  *backwards* from the final `}`: each member's value is skipped (strings by their quotes,
  arrays and objects by bracket depth), then its key is read; the first array value whose key is
  `traceEvents`, or that reaches back past the bytes kept (only the event list is that long), is
  the list. The walk touches each byte after the list's last event at most once, so finding the
  end is linear in the size of the metadata after the list, whatever the events hold.

Memory stays bounded by the size of the metadata plus a read chunk, whatever the trace size.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from ..jsontext import loads_exact

HEAD_LIMIT = 64 << 20  # bytes of metadata allowed before the event list
# With a walk budget, the bytes after the event list the walk reads at most (more: the guess fails
# and the caller's check sends the file to the reader that needs no bound).
TAIL_WINDOW = 4 << 20
_EVENTS_KEY = b'"traceEvents"'
_EVENTS_OPEN = re.compile(rb'"traceEvents"\s*:\s*\[')
_WS = b" \t\r\n"
_WS_RUN = re.compile(rb"[ \t\r\n]*")
# Read on the reversed bytes: the next bracket or quote; a run of backslashes; a literal.
_SPECIAL = re.compile(rb'[][{}"]')
_BACKSLASHES = re.compile(rb"\\*")
_LITERAL = re.compile(rb"[-+.0-9A-Za-z]+")


class TopLevelCapture:
    """Observer of the decompressed byte stream; see the module docstring."""

    def __init__(self) -> None:
        self.kind: str | None = None  # "object" or "array" once the first byte is seen
        self.head_meta: dict | None = None  # keys before the event list
        self.tail_meta: dict | None = None  # keys after it
        self.events_start: int | None = None  # offset just after the list's "["
        self.events_end: int | None = None  # offset of the list's "]"
        self.problem: str | None = None
        self._head = bytearray()
        self._head_offset = 0
        self._search_from = 0
        self._chunks: list[tuple[int, bytes]] = []
        self._current = 0  # offset of the chunk being parsed now
        self._keep_from = 0
        self.walked = 0  # bytes the search for the list's end examined (for tests)
        self.keep_chunks = True  # False: the caller holds the bytes after the head (finish(held=...))

    # -- fed by TraceStream ---------------------------------------------------------------------
    def __call__(self, chunk: bytes, offset: int) -> None:
        self._current = offset
        if self.kind is None:
            stripped = chunk.lstrip(_WS + b"\xef\xbb\xbf")
            if not stripped:
                return
            self.kind = {ord("{"): "object", ord("["): "array"}.get(stripped[0], "other")
            self._head_offset = offset
        if self.kind == "object" and self.events_start is None:
            self._scan_head(chunk)
        elif self.events_start is not None and self.keep_chunks:
            self._chunks.append((offset, chunk))
            while len(self._chunks) > 1 and self._chunks[1][0] <= self._keep_from:
                self._chunks.pop(0)

    def mark_event(self) -> None:
        """An event was just completed: everything before the current chunk is event data."""
        self._keep_from = self._current

    # -- head -----------------------------------------------------------------------------------
    def _scan_head(self, chunk: bytes) -> None:
        self._head += chunk
        while True:
            pos = self._head.find(_EVENTS_KEY, self._search_from)
            if pos < 0:
                self._search_from = max(0, len(self._head) - len(_EVENTS_KEY))
                break
            m = _EVENTS_OPEN.match(self._head, pos)
            if m is None:
                rest = bytes(self._head[pos + len(_EVENTS_KEY):]).strip()
                if rest in (b"", b":"):  # the rest of "traceEvents": [ is in the next chunk
                    self._search_from = pos
                    return
                self._search_from = pos + 1
                continue
            try:
                head = _parse_head(bytes(self._head[:pos]))
            except RecursionError:
                self.problem = "the metadata before the traceEvents list nests too deeply to read (JSON recursion limit)"
                self.kind = "other"
                self._head = bytearray()
                return
            if head is None:  # the key text sat inside a string value; look further
                self._search_from = pos + 1
                continue
            self.head_meta = head
            self.events_start = self._head_offset + m.end()
            # keep the "[" itself: an empty list closes right after it
            self._chunks = [(self.events_start - 1, bytes(self._head[m.end() - 1:]))]
            self._keep_from = self.events_start
            self._head = bytearray()
            return
        if len(self._head) > HEAD_LIMIT:
            self.problem = f"no traceEvents list in the first {HEAD_LIMIT >> 20} MB"
            self.kind = "other"
            self._head = bytearray()

    # -- tail -----------------------------------------------------------------------------------
    def finish(self, events_complete: bool, walk_budget: int | None = None, held=None) -> None:
        """Recover the keys after the event list once the stream has been read.

        walk_budget bounds the bytes of one array value the backward walk skips before taking it
        for the event list (the bulk reader, which checks its guess by parsing the list); None
        walks as far as the bytes kept, for a document already known to parse whole. held: (data,
        offset of its first byte), the bytes from inside the event list to the end of the file
        when the caller holds them itself (see keep_chunks); else the chunks kept here.
        """
        if self.kind != "object" or self.events_start is None:
            return
        if held is not None:
            data, base = held
        else:
            data = b"".join(c for _, c in self._chunks)
            base = self._chunks[0][0] if self._chunks else self.events_start
        self._chunks = []
        if not events_complete:
            return
        close = list_close(data, walk_budget)
        self.walked = close.walked
        if close.offset is not None:
            tail = _parse_tail(memoryview(data)[close.offset + 1:])
            if tail is not None:
                self.tail_meta = tail
                self.events_end = base + close.offset
                return
        self.problem = "cannot read the keys after the traceEvents list"

    def metadata(self) -> list[tuple[str, object]]:
        """Top-level keys other than traceEvents, in file order."""
        items = list((self.head_meta or {}).items()) + list((self.tail_meta or {}).items())
        return [(k, v) for k, v in items if k != "traceEvents"]


def _parse_head(prefix: bytes) -> dict | None:
    """The keys before the event list, or None when the text is not an object's start (the key
    found sat inside a string); RecursionError when it nests too deeply for the parser."""
    body = prefix.rstrip(_WS)
    if body.endswith(b","):
        body = body[:-1]
    try:
        value = loads_exact(body + b"}")
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _parse_tail(rest) -> dict | None:
    body = bytes(rest).lstrip(_WS)
    if body.startswith(b","):
        body = b"{" + body[1:]
    elif body.startswith(b"}"):
        body = b"{" + body
    else:
        return None
    try:
        value = loads_exact(body)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


class ListClose(NamedTuple):
    offset: int | None  # offset in the data of the "]" closing the event list, if found
    walked: int  # bytes examined


class _RunOff(Exception):
    """The walk reached the first byte kept (or its budget); args[0]: the bytes examined."""


def list_close(data: bytes, budget: int | None = None) -> ListClose:
    """Where the event list closes in data: the bytes kept from inside the event list (at or after
    its "[") to the end of the file. See the module docstring; budget as in TopLevelCapture.finish."""
    skip = 0
    if budget is not None and len(data) > budget + TAIL_WINDOW:
        skip = len(data) - (budget + TAIL_WINDOW)  # the walk reads no further back: copy no more
    rev = bytes(memoryview(data)[skip:])[::-1]  # walking backwards is reading the reversed bytes forwards
    n = len(rev)
    pos = _WS_RUN.match(rev).end()
    if pos >= n or rev[pos] != ord("}"):
        return ListClose(None, pos)
    pos += 1
    while True:
        pos = _WS_RUN.match(rev, pos).end()
        if pos >= n:
            return ListClose(None, pos)
        first = rev[pos]
        if first == ord("{"):  # the object's start: no event list among these bytes
            return ListClose(None, pos)
        value_end = skip + n - 1 - pos  # offset of the value's last byte in data
        try:
            pos = _skip_value(rev, pos, budget)
            pos = _WS_RUN.match(rev, pos).end()
            if pos >= n:
                raise _RunOff
            if rev[pos] != ord(":"):
                return ListClose(None, pos)
            pos = _WS_RUN.match(rev, pos + 1).end()
            if pos >= n or rev[pos] != ord('"'):
                raise _RunOff
            key_end = pos
            pos = _skip_string(rev, pos)
        except _RunOff as stop:
            # only the event list reaches back past the bytes kept
            return ListClose(value_end if first == ord("]") else None, stop.args[0] if stop.args else n)
        if rev[key_end + 1:pos - 1] == b"stnevEecart":  # "traceEvents", reversed
            return ListClose(value_end if first == ord("]") else None, pos)
        pos = _WS_RUN.match(rev, pos).end()
        if pos >= n:
            return ListClose(None, pos)
        if rev[pos] != ord(","):
            return ListClose(None, pos)
        pos += 1


def _skip_string(rev: bytes, pos: int) -> int:
    """rev[pos] is a string's closing quote; the offset after its opening quote."""
    while True:
        quote = rev.find(b'"', pos + 1)
        if quote < 0:
            raise _RunOff
        # a quote is escaped when an odd number of backslashes precede it (follow it here)
        after = _BACKSLASHES.match(rev, quote + 1).end()
        if (after - quote - 1) % 2 == 0:
            return quote + 1
        pos = quote


def _skip_value(rev: bytes, pos: int, budget: int | None) -> int:
    """The offset just past the value whose last byte is rev[pos]."""
    first = rev[pos]
    if first == ord('"'):
        return _skip_string(rev, pos)
    if first not in b"]}":
        m = _LITERAL.match(rev, pos)
        return m.end() if m else pos + 1
    limit = len(rev) if budget is None else min(len(rev), pos + budget)
    depth = 0
    search = _SPECIAL.search
    while True:
        m = search(rev, pos, limit)
        if m is None:
            raise _RunOff(limit)  # past the bytes kept, or over the budget: taken for the event list
        pos = m.start()
        c = rev[pos]
        if c == ord('"'):
            pos = _skip_string(rev, pos)
            continue
        pos += 1
        if c in b"]}":
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return pos
