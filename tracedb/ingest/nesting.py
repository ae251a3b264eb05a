"""A bound on the nesting depth of JSON text, checked on the bytes before a parser builds them.

ijson's C backend needs memory quadratic in the depth it is inside (each level's path is
rebuilt for every token: 10,000 levels took 250 MB, 100,000 more than 24 GB), so a 200 KB file of
brackets could exhaust the machine. NestingGuard sits between the byte stream and the parser and
raises TooDeep once the text opens more than MAX_DEPTH arrays or objects, counting brackets
outside strings, or (blank_beyond) hands each value that opens beyond it out as the number 0,
so that only the event holding it is lost. The count costs a few C-speed passes per chunk:
strings are cut out by one regular expression, and brackets are walked one by one only in a
chunk that could reach the bound or end a value being blanked.
"""

from __future__ import annotations

import re

from .longstrings import StringCutter

# Far beyond any real trace (Kineto's args nest a few levels; orjson refuses to write more than
# 254: a deeper event is set aside), and ijson's memory at this depth is about 10 MB.
MAX_DEPTH = 2000

_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
# The rest of a string that began in an earlier chunk, through its closing quote.
_STRING_REST = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*"', re.S)
# Inside a string to the end of the data: ends with a lone backslash when its match stops short.
_IN_STRING = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*', re.S)
# Strings (one that runs on into the next chunk too) and brackets.
_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)|[\[\]{}]', re.S)
_ROUNDS = 32
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_NOT_SYNTAX = bytes(b for b in range(256) if b not in b'[]{}"')


def _deepest(brackets: bytes) -> int:
    """A bound on how many levels brackets (outside strings) go deeper than where they start:
    matched pairs are taken away, innermost first (a few rounds of C-speed replaces for a trace's
    events; each replace takes one level at most, and a round's two may take two: [{[]}]); twice
    the rounds plus the opens left. A text that needs many rounds is deep itself: its length is
    the bound."""
    for rounds in range(_ROUNDS):
        fewer = brackets.replace(b"[]", b"").replace(b"{}", b"")
        if len(fewer) == len(brackets):
            return 2 * rounds + fewer.count(b"[") + fewer.count(b"{")
        brackets = fewer
    return len(brackets) + 2 * _ROUNDS


def _closes_first(brackets: bytes) -> int:
    """How many levels brackets (outside strings) close before they open one they keep: matched
    pairs taken away, as _deepest does; all of them when that takes too long (a bound above)."""
    for _ in range(_ROUNDS):
        fewer = brackets.replace(b"[]", b"").replace(b"{}", b"")
        if len(fewer) == len(brackets):
            break
        brackets = fewer
    else:
        return len(brackets)
    return len(brackets) - len(brackets.lstrip(b"]}"))


class TooDeep(ValueError):
    """The JSON text nests deeper than MAX_DEPTH."""


class NestingGuard:
    """A file-like reader over source that hands out the bytes before the bracket that opens more
    than limit arrays or objects at once, so that the parser reads every event before it, then
    raises TooDeep naming that byte. With blank_beyond, it goes on instead: each value that opens
    beyond the limit is handed out as the number 0 padded with spaces to its length (the same
    length: offsets stay true), counted in blanked, so that what holds it costs the parser no more
    than limit levels and the text after it is read as ever."""

    def __init__(self, source, limit: int = MAX_DEPTH, ends_at_depth: int | None = None,
                 blank_beyond: bool = False, strings: StringCutter | None = None) -> None:
        """ends_at_depth: the depth whose return, by a closing bracket, ends the text the parser
        reads (1 for a trace object whose keys before the event list are blanked: the event
        list's "]"); the parser is then given the object's "}", and nothing after. strings: cuts
        the strings beyond its limit out of what the parser reads (tracedb.ingest.longstrings),
        told where strings are by this pass."""
        self.source = source
        self.strings = strings
        self.limit = limit
        self.ends_at_depth = ends_at_depth
        self.blank_beyond = blank_beyond
        self.blanked = 0  # values blanked (blank_beyond)
        self.first_blanked_at: int | None = None  # offset of the first one's opening bracket
        self._blanks: list[tuple[int, int, bool]] = []  # this chunk's: (start, end, opens there)
        self.ended_at: int | None = None  # offset of the bracket that ended the text, once read
        self.depth = 0
        self._in_string = False
        self._escape = b""  # a backslash that ended the last chunk inside a string
        self._at = 0  # offset of the next byte read
        self._too_deep: str | None = None

    def read(self, size: int = -1) -> bytes:
        if self._too_deep:
            raise TooDeep(self._too_deep)
        if self.ended_at is not None:
            return b""
        data = self.source.read(size)
        self._blanks = []
        inside, escape = self._in_string, self._escape
        cut = self._check(data)
        if self.strings is not None:
            data = self.strings.apply(data, inside, escape, self._in_string)
            # a marker inside a value blanked below never reaches the parser: no event waits for it
            for at, number in self.strings.marked:
                if any(start <= at < end for start, end, _ in self._blanks):
                    self.strings.drop(number)
        if self._blanks:
            data = self._blank(data)
        if self.ended_at is not None:  # the text the parser reads ends here
            end = self.ended_at - self._at
            self._at += end + 1
            return data[:end + 1] + b"}"
        if cut is not None:
            self._too_deep = f"JSON nested more than {self.limit} levels deep at byte {self._at + cut} of the JSON text"
            if cut == 0:  # an empty read would be taken for the end of the text
                raise TooDeep(self._too_deep)
            data = data[:cut]
        self._at += len(data)
        return data

    def _check(self, data: bytes) -> int | None:
        """Follow the depth through data; the offset of the bracket that goes beyond the limit."""
        text = self._escape + data
        self._escape = b""
        inside = self._in_string
        if b'\\"' in text:  # an escaped quote, or a string ending in a backslash: read the escapes
            outside, pos = self._outside_exact(text)
        else:  # every quote opens or closes a string
            outside = self._outside_quick(text)
            quote = text.find(b'"') if inside else -1
            pos = (len(text) if quote < 0 else quote + 1) if inside else 0  # past a string begun earlier
        brackets = outside.translate(None, _NOT_BRACKETS)
        opens = brackets.count(b"[") + brackets.count(b"{")
        if self.depth > self.limit and self.depth - _closes_first(brackets) > self.limit:
            # the whole chunk inside a value being blanked (blank_beyond): no need to walk it
            self.depth += 2 * opens - len(brackets)
            self._blanks.append((0, len(data), False))
            return None
        ending = self.ends_at_depth is not None and self.depth - _closes_first(brackets) <= self.ends_at_depth
        if not ending and self.depth + _deepest(brackets) <= self.limit:
            self.depth += 2 * opens - len(brackets)
            return None
        # This chunk may go beyond the bound, or end the text, or end a value being blanked: walk
        # its strings and brackets to find where.
        depth = self.depth
        shift = len(text) - len(data)  # an escape held from the chunk before
        blank = 0 if depth > self.limit else None  # where this chunk's part of a blanked value starts
        for token in _TOKEN.finditer(text, pos):
            c = text[token.start()]
            if c in b"[{":
                depth += 1
                if depth > self.limit and blank is None:
                    if not self.blank_beyond:
                        return token.start() - shift
                    blank = token.start() - shift
                    self.blanked += 1
                    if self.first_blanked_at is None:
                        self.first_blanked_at = self._at + blank
            elif c in b"]}":
                depth -= 1
                if blank is not None and depth == self.limit:
                    self._blanks.append((blank, token.end() - shift, blank > 0 or self.depth <= self.limit))
                    blank = None
                if ending and depth == self.ends_at_depth:
                    self.ended_at = self._at + token.start() - shift
                    break
        if blank is not None:
            self._blanks.append((blank, len(data), blank > 0 or self.depth <= self.limit))
        self.depth = depth
        return None

    def _blank(self, data: bytes) -> bytes:
        """data with this chunk's parts of blanked values as spaces, a 0 where one opens."""
        out = bytearray(data)
        for start, end, opens in self._blanks:
            out[start:end] = b" " * (end - start)
            if opens:
                out[start] = 0x30  # "0"
        return bytes(out)

    def _outside_quick(self, text: bytes) -> bytes:
        """The brackets of text outside strings, for a text in which every quote opens or closes a
        string. Only brackets and quotes are kept, then every pair of adjacent quotes goes: a
        bracket is inside a string when an odd number of quotes precede it, and dropping two
        adjacent quotes changes that for none. What is left holds a quote only where a string
        holds a bracket, which is rare, so the few parts are cut out one by one."""
        syntax = text.translate(None, _NOT_SYNTAX).replace(b'""', b"")
        inside = self._in_string
        if b'"' not in syntax:
            outside = b"" if inside else syntax
        else:
            parts = syntax.split(b'"')
            self._in_string = inside != (len(parts) % 2 == 0)
            outside = b"".join(parts[1::2] if inside else parts[0::2])
        if self._in_string and (len(text) - len(text.rstrip(b"\\"))) % 2:
            self._escape = b"\\"  # the chunk ends between a backslash and what it escapes
        return outside

    def _outside_exact(self, text: bytes) -> tuple[bytes, int]:
        """The bytes of text outside strings, escapes read; and where the first string that began
        in an earlier chunk ends (0 if none)."""
        pos = 0
        if self._in_string:
            m = _STRING_REST.match(text)
            if m is None:  # the whole chunk is inside the string
                self._hold_escape(text, 0)
                return b"", len(text)
            pos = m.end()
            self._in_string = False
        outside = _STRING.sub(b"", text[pos:] if pos else text)
        quote = outside.find(b'"')
        if quote >= 0:  # a string that goes on in the next chunk
            self._in_string = True
            self._hold_escape(outside, quote + 1)
            outside = outside[:quote]
        return outside, pos

    def _hold_escape(self, text: bytes, start: int) -> None:
        if _IN_STRING.match(text, start).end() < len(text):
            self._escape = b"\\"
