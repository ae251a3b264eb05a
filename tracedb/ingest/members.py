"""The members of a JSON object read from its bytes as they stream by, in bounded memory.

A Chrome trace's keys around its event list (schemaVersion, deviceProperties, a profiler's
samples array, ...) may be of any size. Members takes the object's text in chunks, finds each
member's key and the extent of its value (strings by their quotes and escapes, arrays and objects
by bracket depth, neither parsed), and keeps a value's bytes only while they are within a cap:
a value beyond it, or one that nests too deeply to parse, is set aside with its size and the
reason (SetAside), its bytes never held. Memory is bounded by the cap plus a chunk, whatever the
object holds. A member whose key is `stop_at` and whose value is an array stops the scan at its
"[" (the event list, which the event reader takes from there).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..jsontext import loads_exact

_WS = re.compile(rb"[ \t\r\n]*")
# A string's characters from inside it: up to its closing quote, a lone backslash ending the data,
# or the data's end.
_STRING_BODY = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*', re.S)
_SYNTAX = re.compile(rb'["\[\]{}]')
_LITERAL_END = re.compile(rb"[,}\] \t\r\n]")
_NOT_SYNTAX = bytes(b for b in range(256) if b not in b'[]{}"')
_QUOTED = re.compile(rb'"[^"]*"')
_ROUNDS = 32  # rounds of taking matched brackets away before the bytes are read one by one


@dataclass
class SetAside:
    """A member's value not kept: its size in bytes of JSON text and why."""
    size: int
    reason: str


class BadObject(ValueError):
    """The text is not a JSON object's members (the scan stops; its message says where)."""


# States of the scan.
_OPEN, _KEY, _IN_KEY, _COLON, _VALUE, _IN_VALUE, _AFTER, _DONE = range(8)
# The states that read one byte: (that byte, the state after it, what its absence is called).
_ONE_BYTE = {_OPEN: (ord("{"), _KEY, "not a JSON object"), _COLON: (ord(":"), _VALUE, "':' expected")}


class Members:
    """Feed it the object's bytes from its "{" on (feed), in order; read items once done (or
    stopped). cap: the most bytes of JSON text one value keeps; total: the most all kept values
    hold together (the values after it are set aside too)."""

    def __init__(self, cap: int, total: int, stop_at: bytes | None = None) -> None:
        self.cap, self.total, self.stop_at = cap, total, stop_at
        self.items: list[tuple[str, object]] = []  # (key, value or SetAside), in order
        self.kept = 0  # bytes of the values kept
        self.stopped_at: int | None = None  # offset just after the "[" of stop_at's array
        self.ended_at: int | None = None  # offset just after the object's closing "}"
        self.offset = 0  # bytes fed so far
        self._state = _OPEN
        self._key = bytearray()
        self._value: bytearray | None = None
        self._size = 0  # bytes of the value so far (kept or not)
        self._kind = b""  # first byte of the value: " [ { or a literal's
        self._depth = 0
        self._in_string = False
        self._escape = False  # a backslash ended the last chunk inside a string

    @property
    def done(self) -> bool:
        """The object's closing "}" was read."""
        return self._state == _DONE

    def feed(self, data: bytes) -> int | None:
        """Read the next bytes. Returns the offset (counted over every byte fed) just after the
        "[" of stop_at's array once found, after which nothing more is read; else None."""
        base, i, n = self.offset, 0, len(data)
        self.offset += n
        if self.stopped_at is not None or self._state == _DONE:
            return None
        while i < n:
            state = self._state
            if state in (_OPEN, _KEY, _COLON, _VALUE, _AFTER):
                i = _WS.match(data, i).end()
                if i >= n:
                    break
                c = data[i]
                if state in _ONE_BYTE:
                    byte, after, error = _ONE_BYTE[state]
                    if c != byte:
                        raise BadObject(f"{error} at byte {base + i}")
                    self._state = after
                    i += 1
                elif state == _KEY:
                    if c == ord("}") and not self.items and not self._key:
                        self._state = _DONE
                        self.ended_at = base + i + 1
                        return None
                    if c != ord('"'):
                        raise BadObject(f"a key expected at byte {base + i}")
                    self._key = bytearray(b'"')
                    self._state = _IN_KEY
                    i += 1
                elif state == _VALUE:
                    if c == ord("[") and self.stop_at is not None and self._key_text() == self.stop_at.decode():
                        self.stopped_at = base + i + 1
                        return self.stopped_at
                    self._begin_value(c)
                    self._state = _IN_VALUE
                    if c in b'"[{':  # the opening byte is the value's own; the scan starts after it
                        self._add(data[i:i + 1])
                        i += 1
                else:  # _AFTER
                    if c == ord(","):
                        self._state = _KEY
                        i += 1
                    elif c == ord("}"):
                        self._state = _DONE
                        self.ended_at = base + i + 1
                        return None
                    else:
                        raise BadObject(f"',' or '}}' expected at byte {base + i}")
            elif state == _IN_KEY:
                j = self._string_end(data, i)
                if len(self._key) + (j - i) > self.cap:
                    raise BadObject(f"a key of more than {self.cap:,} bytes at byte {base + i}")
                self._key += data[i:j]
                i = j
                if not self._in_string:
                    self._state = _COLON
            else:  # _IN_VALUE
                j, ended = self._value_end(data, i)
                self._add(data[i:j])
                i = j
                if ended:
                    self._end_value()
                    self._state = _AFTER
        return None

    # -- strings and values ---------------------------------------------------------------------
    def _string_end(self, data: bytes, i: int) -> int:
        """Where the string being read ends in data (just after its closing quote), or len(data)
        when it goes on; keeps _in_string and _escape."""
        self._in_string = True
        n = len(data)
        if self._escape:
            if i >= n:
                return i
            i += 1  # the escaped byte
            self._escape = False
        j = _STRING_BODY.match(data, i).end()
        if j >= n:
            return n
        if data[j] == ord('"'):
            self._in_string = False
            return j + 1
        self._escape = True  # a lone backslash at the data's end
        return n

    def _value_end(self, data: bytes, i: int) -> tuple[int, bool]:
        """(where the scan of the value stops in data, whether the value ended there)."""
        n = len(data)
        kind = self._kind
        if kind == b'"':
            j = self._string_end(data, i)
            return j, not self._in_string
        if kind not in (b"[", b"{"):  # a number, true, false or null: up to a delimiter
            m = _LITERAL_END.search(data, i)
            return (n, False) if m is None else (m.start(), True)
        if self._in_string:  # a string begun earlier: its end first
            i = self._string_end(data, i)
        if not self._in_string:
            quick = self._quick(data, i)
            if quick is not None:
                return quick
        while i < n:
            if self._in_string:
                i = self._string_end(data, i)
                continue
            m = _SYNTAX.search(data, i)
            if m is None:
                return n, False
            i = m.end()
            c = data[m.start()]
            if c == ord('"'):
                self._in_string = True
            elif c in b"[{":
                self._depth += 1
            else:
                self._depth -= 1
                if self._depth == 0:
                    return i, True
        return n, False

    def _quick(self, data: bytes, i: int) -> tuple[int, bool] | None:
        """The rest of data read at C speed when it holds no escape and the value does not end in
        it: (len(data), False), the depth and string state carried on; None when it must be read
        token by token (an escape, the value's end, or nesting too deep to tell)."""
        balance = bracket_balance(data[i:], b"[{")
        if balance is None or balance[0] >= self._depth:
            return None  # the value ends in this data (or may): found token by token
        closes, opens, self._in_string = balance
        self._depth += opens - closes
        return len(data), False

    def _begin_value(self, c: int) -> None:
        self._kind = bytes([c]) if c in b'"[{' else b"0"
        self._depth = 1 if c in b"[{" else 0  # the opening bracket, read by the caller
        self._in_string = c == ord('"')
        self._escape = False
        self._size = 0
        self._value = bytearray()

    def _add(self, part: bytes) -> None:
        self._size += len(part)
        if self._value is not None:
            if self._size > self.cap or self.kept + self._size > self.total:
                self._value = None  # beyond what is kept: only its size is counted from here
            else:
                self._value += part

    def _end_value(self) -> None:
        key = self._key_text()
        if self._value is None:
            reason = (f"beyond {_amount(self.cap)} of JSON" if self._size > self.cap
                      else f"beyond the {_amount(self.total)} of metadata kept")
            self.items.append((key, SetAside(self._size, reason)))
            return
        try:
            value = loads_exact(bytes(self._value))
        except RecursionError:
            self.items.append((key, SetAside(self._size, "nested too deeply to read")))
            return
        except ValueError as exc:
            raise BadObject(f"the value of {key!r} is not JSON: {exc}") from None
        finally:
            self._value = None
        self.kept += self._size
        self.items.append((key, value))

    def _key_text(self) -> str:
        try:
            return loads_exact(bytes(self._key))
        except ValueError as exc:
            raise BadObject(f"a key that is not a JSON string: {exc}") from None


def _amount(size: int) -> str:
    return f"{size >> 20} MiB" if size >= 1 << 20 else f"{size:,} bytes"


def bracket_balance(text: bytes, openers: bytes) -> tuple[int, int, bool] | None:
    """For JSON text that starts outside any string and holds no escape (None otherwise), with the
    two bytes of openers opening a level (b"[{" forwards; b"]}" on reversed text): (the levels it
    closes before it opens any it keeps, the levels it leaves open, whether it ends inside a
    string). Matched brackets are taken away at C speed, a few rounds; None when that is not
    enough to tell (deep nesting), so that the caller reads the text token by token."""
    if b"\\" in text:
        return None
    syntax = text.translate(None, _NOT_SYNTAX)
    # with no escape every quote opens or closes a string: what lies between two is inside one,
    # and after an odd last quote the text ends inside one
    inside = syntax.count(b'"') % 2 == 1
    outside = _QUOTED.sub(b"", syntax)
    if inside:
        outside = outside[:outside.rindex(b'"')]
    closers = b"[]{}".translate(None, openers)
    brackets = outside.translate(bytes.maketrans(openers + closers, b"(())"))
    for _ in range(_ROUNDS):
        fewer = brackets.replace(b"()", b"")
        if len(fewer) == len(brackets):
            break
        brackets = fewer
    else:
        return None
    closes = len(brackets) - len(brackets.lstrip(b")"))
    return closes, len(brackets) - closes, inside
