"""Capturing a Chrome trace's top-level metadata while its events stream by.

The event readers build only the events; the keys around the event list (schemaVersion,
deviceProperties, traceName, ...) are recovered from the raw bytes that pass by:

- the head, every byte before `"traceEvents": [`, is read member by member as it streams by
  (tracedb.ingest.members): each value is kept, or set aside with its size when beyond the cap,
  whatever the head's size;
- after that, the streaming reader's parser finds the list's closing bracket by its own depth
  count (tracedb.ingest.nesting) and says where (list_ended): the keys after it are read member
  by member as the rest of the bytes stream by, like the head's;
- the bulk reader holds the bytes since its latest segment of events; once the stream is read,
  the list's closing bracket is found by walking the top-level members after it *backwards*
  from the final `}`: each member's value is skipped (strings by their quotes, arrays and objects
  by bracket depth, a window without escapes at once), then its key is read; the first array
  value whose key is `traceEvents`, or that reaches back past the bytes kept (only the event list
  is that long), is the list. The walk touches each byte after the list's last event at most
  once; metadata after the list longer than a segment sends the file to the streaming reader.

Memory stays bounded by the metadata kept plus a read chunk, whatever the trace's size and the
metadata's size, depth and position.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from .members import BadObject, Members, bracket_balance

# The most JSON text one metadata value keeps, as one event (chrome.MAX_EVENT_CHARS): a larger one
# (a profiler's samples array of 40 MB, say) is set aside with its size (members.SetAside).
MAX_METADATA_CHARS = 10 << 20
# The most the metadata's values keep together; the values after it are set aside too.
MAX_METADATA_TOTAL = 64 << 20
# With a walk budget, the bytes after the event list the walk reads at most (more: the guess fails
# and the caller's check sends the file to the reader that needs no bound).
TAIL_WINDOW = 4 << 20
_TAIL_CHUNK = 1 << 20  # bytes of the metadata after the list read at a time
_WINDOW = 1 << 20  # bytes of a value the backward walk skips at once where it can
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
        self._members: Members | None = None  # the head's, until the event list begins
        self._head_offset = 0  # offset of the object's "{"
        self._chunks: list[tuple[int, bytes]] = []
        self._current = 0  # offset of the chunk being parsed now
        self._keep_from = 0
        self.walked = 0  # bytes the search for the list's end examined (for tests)
        self._tail: _TailReader | None = None  # the keys after the list, read as they stream by
        self.keep_chunks = True  # False: the caller holds the bytes after the head (finish(held=...))

    # -- fed by TraceStream ---------------------------------------------------------------------
    def __call__(self, chunk: bytes, offset: int) -> None:
        self._current = offset
        if self.kind is None:
            stripped = chunk.lstrip(_WS + b"\xef\xbb\xbf")
            if not stripped:
                return
            self.kind = {ord("{"): "object", ord("["): "array"}.get(stripped[0], "other")
            self._head_offset = offset + len(chunk) - len(stripped)
            chunk = stripped
            self._members = Members(MAX_METADATA_CHARS, MAX_METADATA_TOTAL, stop_at=b"traceEvents")
        if self.kind == "object" and self.events_start is None:
            self._scan_head(chunk)
        elif self._tail is not None:
            self._tail.feed(chunk)
        elif self.events_start is not None and self.keep_chunks:
            self._chunks.append((offset, chunk))
            while len(self._chunks) > 1 and self._chunks[1][0] <= self._keep_from:
                self._chunks.pop(0)

    @property
    def head_start(self) -> int:
        """Offset of the object's opening "{" (once the first byte was seen)."""
        return self._head_offset

    def mark_event(self) -> None:
        """An event was just completed: everything before the current chunk is event data."""
        self._keep_from = self._current

    # -- head -----------------------------------------------------------------------------------
    def _scan_head(self, chunk: bytes) -> None:
        members = self._members
        if members is None:  # the head could not be read: nothing more is looked for
            return
        fed_from = members.offset  # the chunk's first byte, counted from the object's "{"
        try:
            stop = members.feed(chunk)
        except BadObject as exc:
            self.problem = f"cannot read the keys before the traceEvents list: {exc}"
            self._members = None
            return
        if stop is None:
            if members.done:  # the object closed: it has no event list
                self.problem = "JSON object without a traceEvents list: not a trace"
                self._members = None
            return
        self.head_meta = dict(members.items)
        self.events_start = self._head_offset + stop
        # keep the "[" itself: an empty list closes right after it
        self._chunks = [(self.events_start - 1, chunk[stop - 1 - fed_from:])]
        self._keep_from = self.events_start
        self._members = None

    # -- tail -----------------------------------------------------------------------------------
    def list_ended(self, offset: int) -> None:
        """The event list's "]" is at offset (the event parser found it): the keys after it are read
        from the bytes kept after it, then from each chunk as it comes, none kept."""
        self.events_end = offset
        self._tail = _TailReader()
        for start, chunk in self._chunks:
            if start + len(chunk) > offset + 1:
                self._tail.feed(chunk[max(0, offset + 1 - start):])
        self._chunks = []

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
        if self._tail is not None:  # read as the bytes came
            self.tail_meta = self._tail.keys()
            if self.tail_meta is None:
                self.events_end = None
                self.problem = (f"cannot read the keys after the traceEvents list: {self._tail.problem}"
                                if self._tail.problem else
                                "file ends early (truncated), in the keys after the traceEvents list")
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
            tail = _read_tail(memoryview(data)[close.offset + 1:])
            if tail is not None:
                self.tail_meta = tail
                self.events_end = base + close.offset
                return
        self.problem = "cannot read the keys after the traceEvents list"

    def metadata(self) -> list[tuple[str, object]]:
        """Top-level keys other than traceEvents, in file order."""
        items = list((self.head_meta or {}).items()) + list((self.tail_meta or {}).items())
        return [(k, v) for k, v in items if k != "traceEvents"]


class _TailReader:
    """The keys after the event list (", key: value, ... }" and only whitespace after it), fed in
    chunks: members read as the head's are, in bounded memory; problem says what is wrong."""

    def __init__(self) -> None:
        self.members = Members(MAX_METADATA_CHARS, MAX_METADATA_TOTAL)
        self.members.feed(b"{")
        self.started = False  # the "," or "}" after the list was read
        self.problem: str | None = None

    def feed(self, data: bytes) -> None:
        if self.problem is not None:
            return
        members = self.members
        if members.done:
            if data.strip(_WS):
                self.problem = "text after the trace's closing brace"
            return
        if not self.started:
            i = _WS_RUN.match(data).end()
            if i >= len(data):
                return
            if data[i] not in b",}":
                self.problem = "no ',' or '}' after the list"
                return
            self.started = True
            data = data[i + 1:] if data[i] == ord(",") else data[i:]
        fed_from = members.offset
        try:
            members.feed(data)
        except BadObject as exc:
            self.problem = str(exc)
            return
        if members.done and data[members.ended_at - fed_from:].strip(_WS):
            self.problem = "text after the trace's closing brace"

    def keys(self) -> dict | None:
        """The keys read, once the object closed with nothing wrong; else None."""
        return dict(self.members.items) if self.problem is None and self.members.done else None


def _read_tail(rest) -> dict | None:
    """The keys after the event list, from the bytes after its "]" (", key: value, ... }"), each
    value kept or set aside as the head's are; None when they are not an object's last members."""
    tail = _TailReader()
    for at in range(0, len(rest), _TAIL_CHUNK):
        tail.feed(bytes(rest[at:at + _TAIL_CHUNK]))
    return tail.keys()


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
    rev = bytes(memoryview(data)[skip:][::-1])  # walking backwards is reading the reversed bytes forwards (one copy)
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
    tokens_to = pos  # read token by token up to here (where a window could not be skipped whole)
    while True:
        if depth > 0 and pos >= tokens_to:
            # a window of the value with no escape, skipped whole at C speed when it cannot end it
            end = min(limit, pos + _WINDOW)
            balance = bracket_balance(rev[pos:end], b"]}")
            if balance is not None and balance[0] < depth and not balance[2] and end > pos:
                depth += balance[1] - balance[0]
                pos = end
                continue
            tokens_to = end
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
