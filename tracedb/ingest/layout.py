"""Capturing a Chrome trace's top-level metadata while ijson streams its events.

ijson builds only the events (prefix traceEvents.item); the keys around the event list
(schemaVersion, deviceProperties, traceName, ...) are recovered from the raw bytes that pass by:

- the head, every byte before `"traceEvents": [`, is kept and parsed as an object;
- after that only the bytes since the chunk in which the latest event ended are kept. When the
  event list is complete, its closing bracket is the first `]` in those bytes after which the rest
  of the file parses as the remainder of an object: a `]` inside an event leaves open brackets
  behind it, so the rest cannot parse, and any `]` of a later metadata value comes after it.

Memory stays bounded by the size of the metadata plus a read chunk, whatever the trace size.
"""

from __future__ import annotations

import re

import orjson

from ..jsontext import loads_exact

HEAD_LIMIT = 64 << 20  # bytes of metadata allowed before the event list
_EVENTS_KEY = b'"traceEvents"'
_EVENTS_OPEN = re.compile(rb'"traceEvents"\s*:\s*\[')
_WS = b" \t\r\n"
# A "]" that can close the event list: after an event (or "[" when empty), before "," or "}".
_LIST_END = re.compile(rb'[}\[]\s*(\])\s*[,}]')


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
        elif self.events_start is not None:
            self._chunks.append((offset, chunk))
            while len(self._chunks) > 1 and self._chunks[1][0] <= self._keep_from:
                self._chunks.pop(0)

    def mark_event(self) -> None:
        """An event was just completed: everything before the current chunk is event data."""
        self._keep_from = self._current

    def keep_after(self, offset: int) -> None:
        """Everything before offset is event data (for readers that do not see single events)."""
        self._keep_from = max(self._keep_from, offset)

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
            head = _parse_head(bytes(self._head[:pos]))
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
    def finish(self, events_complete: bool) -> None:
        """Recover the keys after the event list once the stream has been read."""
        if self.kind != "object" or self.events_start is None:
            return
        data = b"".join(c for _, c in self._chunks)
        base = self._chunks[0][0] if self._chunks else self.events_start
        self._chunks = []
        if not events_complete:
            return
        for m in _LIST_END.finditer(data):
            tail = _parse_tail(data[m.end() - 1:])
            if tail is not None:
                self.tail_meta = tail
                self.events_end = base + m.start(1)
                return
        self.problem = "cannot read the keys after the traceEvents list"

    def metadata(self) -> list[tuple[str, object]]:
        """Top-level keys other than traceEvents, in file order."""
        items = list((self.head_meta or {}).items()) + list((self.tail_meta or {}).items())
        return [(k, v) for k, v in items if k != "traceEvents"]


def _parse_head(prefix: bytes) -> dict | None:
    body = prefix.rstrip(_WS)
    if body.endswith(b","):
        body = body[:-1]
    try:
        value = loads_exact(body + b"}")
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _parse_tail(rest: bytes) -> dict | None:
    body = rest.lstrip(_WS)
    if body.startswith(b","):
        body = b"{" + body[1:]
    elif body.startswith(b"}"):
        body = b"{" + body
    else:
        return None
    try:
        orjson.loads(body)  # fast rejection of the many candidates that are not the end
        value = loads_exact(body)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None
