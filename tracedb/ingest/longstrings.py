"""A bound on the strings a JSON parser builds, applied to the bytes before it reads them.

yajl (ijson's C backend) builds a string whole before it hands it over, and an allocation that
fails inside it ends the process (SIGSEGV: a 300 MiB kernel name under a 1.6 GiB address-space
limit, one of a few MiB under 800 MiB). StringCutter works in NestingGuard's pass over the bytes,
which knows where strings are: once a string holds more than KEEP_BYTES, or more characters than
its limit for certain, the rest of it reaches the parser as a marker that closes it, then spaces
through its closing quote (the same length: offsets stay true). The marker carries a number under
which the string's length in characters is kept, and, within the limit, the bytes it stood for:
the reader makes the string whole again, decoded by Python (which raises MemoryError where yajl
would end the process); beyond it, the event holding it is set aside with its size
(tracedb.ingest.chrome.EventStager), never loaded cut.
"""

from __future__ import annotations

import re
import secrets

# A closing quote and what precedes it in a string, from a point inside one (escapes read).
_STRING_REST = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_UNICODE_ESCAPE_BEGUN = re.compile(rb'(\\+)u[0-9A-Fa-f]{0,3}\Z')
_HIGH_SURROGATE_AT_END = re.compile(rb'(\\+)u[dD][89abAB][0-9a-fA-F]{2}\Z')
_HIGH_SURROGATE = re.compile(rb"\\u[dD][89abAB]")
_CONTINUATION = bytes(range(0x80, 0xC0))
_TAIL = 16  # bytes of the last chunk kept: an escape or a character it ended inside
# The most of a string the parser builds: yajl ends the process when it cannot grow a string
# (a name of a few MiB under a 800 MiB address-space limit did); a longer one within the limit
# reaches it cut, and Python, which raises MemoryError instead, decodes the rest.
KEEP_BYTES = 1 << 20


def chars_at_least(text: bytes) -> int:
    """A lower bound on the characters of a string's bytes (inside the quotes), exact for a string
    without escapes: each character has one byte that is not a UTF-8 continuation byte, an escape
    (\\n, \\\\) two, a \\u escape six, a surrogate pair of them twelve. Counted at C speed: runs of
    backslashes pair up (\\\\ is one escape), and every "\\u" is taken for an escape (one after
    \\\\ is not: fewer counted). The counts of the pieces of a string add up to the count of the
    whole when each piece after the first begins with the lone backslash that ended the one before
    (NestingGuard holds it); a piece may count below 0 (it ends inside a \\u escape)."""
    backslashes = text.count(b"\\")
    if not backslashes:
        return len(text.translate(None, _CONTINUATION))
    escapes = backslashes - text.count(b"\\\\")
    unicode = text.count(b"\\u")
    high = len(_HIGH_SURROGATE.findall(text))  # a pair of \\u escapes is one character (a lone half too)
    return len(text.translate(None, _CONTINUATION)) - escapes - 4 * unicode - high


class StringCutter:
    """Cuts the strings of more than limit characters out of the bytes a parser reads; see above.
    sizes: each cut string's characters (at least), by its number, once its end was read."""

    def __init__(self, limit: int, keep_bytes: int = KEEP_BYTES) -> None:
        self.limit = limit
        self.keep_bytes = keep_bytes
        self.token = secrets.token_hex(4)  # a file cannot forge a marker of this reader
        self.sizes: dict[int, int] = {}
        # each cut string within the limit: the bytes the marker stood for, which Python decodes
        # (the string whole is its beginning as parsed, then these): yajl never builds it whole
        self.rests: dict[int, bytes] = {}
        self.started = 0  # strings cut so far
        self.seen = 0  # of them, those whose event was set aside (tracedb.ingest.chrome) or that never
        # reached the parser (inside a value NestingGuard blanked)
        self._open = 0  # characters (at least) of the string open at the end of the last chunk
        self._open_bytes = 0  # and its bytes
        self._rest: bytearray | None = None  # the bytes of the string being blanked, while within the limit
        self._pending = False  # that string is beyond the limit: cut where the next chunk has room
        self._blanking: int | None = None  # the number of the cut string whose rest is being blanked
        self._tail = b""
        self._carry = b""  # a \\u escape the last chunk ended inside, counted with the next
        self.marked: list[tuple[int, int]] = []  # this chunk's markers: where each begins, its number
        self._dropped: set[int] = set()  # cut strings whose rest no event will ask for

    def marker_text(self) -> str:
        """What a cut string ends with once parsed, before its number and a NUL."""
        return f"\x00tracedb-cut-{self.token}-"

    def cut_in(self, text: str) -> tuple[int, int] | None:
        """(where its marker begins, its number) for a string this cutter cut, as parsed; else None."""
        if not self.started or not text.endswith("\x00"):
            return None
        marker = self.marker_text()
        at = text.rfind(marker)
        number = text[at + len(marker):-1] if at >= 0 else ""
        if not number.isdigit() or int(number) >= self.started:
            return None
        return at, int(number)

    def apply(self, data: bytes, inside: bool, escape: bytes, inside_after: bool) -> bytes:
        """data as the parser is to read it. inside, escape: whether data begins inside a string,
        and the lone backslash (b"\\\\") or nothing that ended the chunk before it; inside_after:
        whether it ends inside one."""
        pos = 0  # where the part of data after the string open at its start begins
        out: bytearray | None = None
        self.marked = []  # where this chunk's markers begin
        if inside:
            end = self._end(data, escape)  # the closing quote's index
            stop = len(data) if end is None else end + 1
            # the held backslash too (see chars_at_least), and a \\u escape the last chunk ended in
            counted = self._count(self._carry + escape + data[:end], end is None)
            if self._blanking is not None:
                self._open += counted
                self._keep(data[:end])
                out = bytearray(data)
                out[:stop] = b" " * stop
                if end is None:
                    return bytes(out)
                self._ended(self._blanking)
                self._blanking = None
            elif self._pending:
                skip = self._skip(data, escape)
                mark = b"\\u0000tracedb-cut-%s-%d\\u0000\"" % (self.token.encode(), self.started)
                if skip is not None and (len(data) if end is None else end) - skip >= len(mark):
                    self._open += counted
                    self._rest = bytearray()
                    self._keep(data[skip:end])
                    out = bytearray(data)
                    out[skip:skip + len(mark)] = mark
                    self.marked.append((skip, self.started))
                    out[skip + len(mark):stop] = b" " * (stop - skip - len(mark))
                    number = self.started
                    self.started += 1
                    self._pending = False
                    if end is None:
                        self._blanking = number
                        return bytes(out)
                    self._ended(number)
            if end is None:  # still inside the string: it grows by this chunk
                self._open += counted
                self._open_bytes += len(data)
                pos = len(data)
            else:
                pos = end + 1
                self._open, self._open_bytes, self._pending = 0, 0, False
        if inside_after and pos < len(data):  # a string opens in this chunk and runs on
            quote = self._last_quote(data, pos)
            self._open = self._count(data[quote + 1:], True)
            self._open_bytes = len(data) - quote - 1
        if inside_after:
            self._pending = self._pending or self._open > self.limit or self._open_bytes > self.keep_bytes
            self._tail = data[-_TAIL:] if len(data) >= _TAIL else (self._tail + data)[-_TAIL:]
        else:
            self._open, self._open_bytes, self._pending, self._carry = 0, 0, False, b""
        return data if out is None else bytes(out)

    def _keep(self, part: bytes) -> None:
        """Keep part of the string being cut while it is within the limit (beyond it, its event is
        set aside with its size: its text is not wanted)."""
        if self._rest is not None:
            if self._open > self.limit:
                self._rest = None
            else:
                self._rest += part

    def drop(self, number: int) -> None:
        """No event will ask for cut string number's rest (set aside cut, or never parsed)."""
        self.seen += 1
        self.rests.pop(number, None)
        self._dropped.add(number)

    def _ended(self, number: int) -> None:
        self.sizes[number] = self._open
        if self._rest is not None and self._open <= self.limit and number not in self._dropped:
            self.rests[number] = bytes(self._rest)
        self._rest = None
        self._open, self._open_bytes = 0, 0

    def _count(self, text: bytes, runs_on: bool) -> int:
        """chars_at_least of a string's text from a known point (its start, a held backslash, a
        carried escape); for a string that runs on into the next chunk, less a \\u escape it ends
        inside, carried to the next count whole (its high surrogate would be missed in two)."""
        self._carry = b""
        if runs_on:
            begun = _UNICODE_ESCAPE_BEGUN.search(text)
            if begun and len(begun.group(1)) % 2:
                self._carry = text[begun.end(1) - 1:]
                text = text[:begun.end(1) - 1]
        return chars_at_least(text)

    @staticmethod
    def _end(data: bytes, escape: bytes) -> int | None:
        """Where the string data begins inside closes (its quote's index), or None. The escapes
        are read only when a backslash may escape a quote (a regular expression: 30 ms a MiB)."""
        quote = data.find(b'"')
        if quote < 0:
            return None
        if not escape and data.find(b"\\", 0, quote) < 0:  # no backslash before it: no escape
            return quote
        m = _STRING_REST.match(escape + data)
        return None if m is None else m.end() - 1 - len(escape)

    @staticmethod
    def _last_quote(data: bytes, lo: int) -> int:
        """The last quote in data[lo:] that no backslash escapes: the opening quote of the string
        data ends inside."""
        j = data.rfind(b'"', lo)
        while j >= lo:
            k = j
            while k > lo and data[k - 1] == 0x5C:
                k -= 1
            if (j - k) % 2 == 0:
                return j
            j = data.rfind(b'"', lo, j)
        raise ValueError("no opening quote")  # the caller knows a string opens in data[lo:]

    def _skip(self, data: bytes, escape: bytes) -> int | None:
        """How many bytes at the start of data finish what the last chunk ended inside (an escape,
        a surrogate pair, a UTF-8 character); None where that cannot be told (a run of
        backslashes longer than the tail kept)."""
        if escape:  # data[0] is what a lone backslash escapes; a \u escape has four digits more
            skip = 5 if data[:1] == b"u" else 1
        else:
            skip = 0
            begun = _UNICODE_ESCAPE_BEGUN.search(self._tail)
            if begun and begun.start() == 0:
                return None
            if begun and len(begun.group(1)) % 2:
                skip = 4 - (len(begun.group()) - len(begun.group(1)) - 1)
            else:
                for j in range(1, min(4, len(self._tail)) + 1):
                    b = self._tail[-j]
                    if b >= 0xC0:  # a character's first byte: its length, from it
                        need = 2 if b < 0xE0 else 3 if b < 0xF0 else 4
                        skip = max(0, need - j)
                        break
                    if b < 0x80:
                        break
        # the low half of a surrogate pair whose high half ended what was read before
        high = _HIGH_SURROGATE_AT_END.search(self._tail + data[:skip])
        if high and high.start() == 0:
            return None
        if high and len(high.group(1)) % 2 and data[skip:skip + 2] == b"\\u":
            skip += 6
        return skip
