"""Streaming reader of Chrome-trace JSON (Kineto / PyTorch profiler and friends).

ijson (yajl2_c backend) builds one event at a time with exact numbers (Decimal); each event is
checked, its times converted to integer nanoseconds, routed to the table that models it, and
appended to column batches handed to the writer. Events that cannot be typed go to
rejected_events with the reason. Peak memory is one batch, whatever the trace size.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from typing import Callable

import ijson

from ..errors import BadTraceFile, TracedbError
from ..jsontext import dumps as json_text
from ..jsontext import fast_dumps, replace_lone_surrogates
from .layout import TopLevelCapture
from .longstrings import StringCutter
from .nesting import NestingGuard, TooDeep
from .source import TraceStream

BATCH_EVENTS = 20_000
# The most text (names, args) one batch holds: events of megabytes each (names up to
# MAX_EVENT_CHARS) go on in batches of this size rather than 20,000 at once, which the staging
# insert could not hold under the load's memory limit.
BATCH_CHARS = 32 << 20
READ_CHUNK = 1 << 20
INT64_MAX = (1 << 63) - 1

# Columns of one staging batch. Python keeps only what needs exact arithmetic (times) or exact
# text (args); routing, fields and typed args are derived in SQL (sql/ingest/chrome_split.sql).
STAGING_COLUMNS = ("event_id", "ts_ns", "dur_ns", "args", "rest")
_MISSING = object()


class RejectedEvent(Exception):
    """An event that cannot be typed; it goes to rejected_events with this reason."""


_THOUSAND = Decimal(1000)
_MAX_DIGITS = 15  # a value of 1e16 µs and more is beyond INT64_MAX ns (9.2e18)


def to_ns(value, key: str) -> int | None:
    """Exact integer nanoseconds from a microsecond value: int, Decimal or numeric string."""
    if value is None:
        raise RejectedEvent(f"{key} is null")
    kind = type(value)
    if kind is int:
        ns = value * 1000
    elif kind is Decimal or kind is str:
        try:
            d = value if kind is Decimal else Decimal(value.strip())
        except InvalidOperation:
            raise RejectedEvent(f"{key} is not a number: {value!r:.60}") from None
        if not d.is_finite():
            raise RejectedEvent(f"{key} is not a finite number: {value!r:.60}")
        if not d.is_zero() and d.adjusted() > _MAX_DIGITS:  # told before the digits are expanded (1e400000 µs)
            raise RejectedEvent(f"{key} {str(value)[:60]} µs is beyond the 64-bit nanosecond range")
        q = d * _THOUSAND
        ns = int(q)
        if q != ns:  # sub-nanosecond digits: round half to even
            ns = int(q.to_integral_value(rounding=ROUND_HALF_EVEN))
    else:
        raise RejectedEvent(f"{key} is not a number: {json_text(value)[:60]}")
    if not -INT64_MAX <= ns <= INT64_MAX:
        raise RejectedEvent(f"{key} {str(value)[:60]} µs is beyond the 64-bit nanosecond range")
    return ns


# The times an event may have: its start and end within ±2^62 ns (146 years either side of
# 1970), so that the difference of any two times of a trace, and a time plus a duration, fit in
# the 64-bit integers reports compute with. sql/ingest/chrome_bulk.sql and ascend_csv_bulk.sql
# send an event beyond them here.
TIME_LIMIT = 1 << 62


def check_span(ts_ns: int | None, dur_ns: int | None, ts, dur) -> None:
    """Raise RejectedEvent when the start or the end (start + duration) of an event is beyond
    TIME_LIMIT; ts and dur are the values as written, for the reason."""
    if ts_ns is None:
        return
    if not -TIME_LIMIT < ts_ns < TIME_LIMIT:
        raise RejectedEvent(f"ts {str(ts)[:60]} µs is beyond the times tracedb keeps (±2^62 ns, 146 years either "
                            "side of 1970)")
    if dur_ns is not None and ts_ns + dur_ns >= TIME_LIMIT:
        raise RejectedEvent(f"end ts + dur ({str(ts)[:40]} + {str(dur)[:40]} µs) is beyond the times tracedb keeps "
                            "(±2^62 ns, 146 years either side of 1970)")


@dataclass
class ChromeResult:
    event_count: int = 0
    rejected: int = 0
    complete: bool = True
    problem: str | None = None
    metadata: list[tuple[str, object]] = field(default_factory=list)


def add_note(result, note: str) -> None:
    """Add a note to what a load says of its trace (result.problem: a ChromeResult or any staged
    result with one), after what it says already."""
    result.problem = f"{result.problem}; {note}" if result.problem else note


# Compressed files and archives by their magic bytes, for a message that says what the file is.
_ARCHIVES = ((b"\xfd7zXZ\x00", "an xz-compressed file"), (b"BZh", "a bzip2-compressed file"),
             (b"\x28\xb5\x2f\xfd", "a zstd-compressed file"), (b"PK\x03\x04", "a zip archive"),
             (b"PK\x05\x06", "an empty zip archive"), (b"7z\xbc\xaf\x27\x1c", "a 7-zip archive"),
             (b"\x04\x22\x4d\x18", "an lz4-compressed file"))


def _start_kind(stream: TraceStream) -> str:
    head = stream.head(4096).lstrip(b" \t\r\n\xef\xbb\xbf")
    if not head:
        raise BadTraceFile(stream.path, "empty file (only whitespace)")
    first = head[:1]
    if first in (b"{", b"["):
        return "object" if first == b"{" else "array"
    for magic, what in _ARCHIVES:
        if head.startswith(magic):
            raise BadTraceFile(stream.path, f"not JSON: {what}; tracedb reads JSON and gzip-compressed JSON: "
                                            "decompress it first")
    snippet = head[:40].decode("utf-8", "replace").splitlines()[0]
    if b"," in head.split(b"\n", 1)[0] and not head.startswith((b"{", b"[")):
        raise BadTraceFile(stream.path, f"not JSON: looks like CSV (starts with {snippet!r})")
    raise BadTraceFile(stream.path, f"not JSON: starts with {snippet!r}")


# The most text one event may hold: a larger one is set aside with its first KEPT_CHARS characters,
# so that it cannot cost the file (a kernel name of 13 MB took more than the load's memory limit in
# the derivation; 12 MB did not). sql/ingest/chrome_bulk.sql sends a longer event to this code.
MAX_EVENT_CHARS = 10 << 20
KEPT_CHARS = 64 << 10


def _first_chars(rest: str, ts, dur, args_text: str | None) -> str:
    """The first KEPT_CHARS characters of an event's JSON text (its keys but ts, dur and args, then
    those: the order the event is set aside in elsewhere), from its pieces already encoded; the
    whole text of an event this large is never made."""
    pieces = [rest[:-1][:KEPT_CHARS]]  # without its closing brace
    sep = "" if rest == "{}" else ","
    for key, value in (("ts", ts), ("dur", dur)):
        if value is not _MISSING:
            pieces.append(f'{sep}"{key}":{fast_dumps(value).decode()}')
            sep = ","
    if args_text is not None:
        pieces += [f'{sep}"args":', args_text[:KEPT_CHARS]]
    pieces.append("}")
    return "".join(pieces)[:KEPT_CHARS]


def _too_large(size: int) -> str:
    return (f"an event of {size / (1 << 20):,.1f} MiB of text: more than the {MAX_EVENT_CHARS >> 20} MiB "
            f"tracedb keeps of one event (its first {KEPT_CHARS >> 10} KiB kept here)")


# The longest string value an event's tables hold in line (real kernel names run to 5 KiB): a
# longer one is kept there as its first characters and a note, and whole in long_texts, in pieces
# (sql/schema/017_long_texts.sql: DuckDB holds every long string of a row group in memory when it
# writes one, so that 60 names of 5 MiB took more than a load's memory). The typing holds 2,048
# events at once, each text about three times: 96 MB at this length, half the load's memory
# (store.LOAD_MEMORY_LIMIT).
LONG_TEXT_CHARS = 16 << 10
# The pieces long_texts holds such a string in, and what of it stays in line: under 4 KiB of
# UTF-8 each, since DuckDB keeps a longer text in a block of its own, which a load's staging
# tables held in memory (5,000 names cut to 16 KiB took the load's 192 MB, then out of memory),
# where shorter ones spill to disk.
LONG_PIECE_CHARS = 1000
LONG_KEPT_CHARS = 900  # and a note of at most 80
LONG_COLUMNS = ("event_id", "field", "piece", "text")


def _long_note(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"…[{len(text):,} characters, sha256 {digest}; whole in long_texts]"


def _pointer(path: tuple) -> str:
    """A JSON Pointer (RFC 6901) of a place in an event: its keys and indices, ~ and / escaped."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def out_of_line(value, path: tuple = ()) -> tuple[object, list[tuple[str, str]]]:
    """A copy of a parsed JSON value whose strings longer than LONG_TEXT_CHARS are cut to their
    first LONG_KEPT_CHARS characters followed by a note of their length and digest (distinct
    texts stay distinct); and those strings whole, with the JSON Pointer of each below path. A key
    that long raises RejectedEvent."""
    long: list[tuple[str, str]] = []

    def cut(s: str, where: tuple, is_key: bool) -> str:
        if len(s) <= LONG_TEXT_CHARS:
            return s
        if is_key:
            raise RejectedEvent(f"a key of {len(s):,} characters: more than the {LONG_TEXT_CHARS >> 10} KiB "
                                "tracedb keeps of a key")
        long.append((_pointer(where), s))
        return s[:LONG_KEPT_CHARS] + _long_note(s)

    return _map_strings(value, cut, path), long


def _map_strings(value, fn, path: tuple = ()):
    """A copy of a parsed JSON value with fn(text, where, is_key) applied to every string, keys
    included; where: the keys and indices of the value below path (of a key: its object's).
    Iterative: any depth."""
    root: list = [None]
    stack = [(value, root, 0, path)]
    while stack:
        item, parent, key, where = stack.pop()
        if isinstance(item, dict):
            copy = {}
            parent[key] = copy
            for k, v in item.items():
                mapped = fn(k, where, True)
                copy[mapped] = None
                stack.append((v, copy, mapped, (*where, k)))
        elif isinstance(item, list):
            copy = [None] * len(item)
            parent[key] = copy
            stack.extend((v, copy, i, (*where, i)) for i, v in enumerate(item))
        else:
            parent[key] = fn(item, where, False) if isinstance(item, str) else item
    return root[0]


def _restored(value, strings: StringCutter):
    """A copy of a parsed JSON value whose strings the reader cut within its limit are whole again
    (their beginning as parsed, then the rest of their text decoded here: see
    tracedb.ingest.longstrings); and whether one is left cut (beyond the limit, or its end not yet
    read)."""
    left = False

    def whole(s: str, where: tuple, is_key: bool) -> str:
        nonlocal left
        found = strings.cut_in(s)
        if found is None:
            return s
        at, number = found
        rest = strings.rests.pop(number, None)
        if rest is None:
            left = True
            return s
        strings.seen += 1
        try:
            return s[:at] + json.loads(b'"' + rest + b'"')
        except ValueError as exc:  # what yajl would have refused in the string
            raise RejectedEvent(f"malformed JSON in a string: {exc}") from None

    return _map_strings(value, whole), left


def _cut_strings(value, keep: int = KEPT_CHARS + 1, strings: StringCutter | None = None):
    """A copy of a parsed JSON value with every string (key or value) longer than keep cut to
    keep characters; and the characters cut, counting those of the strings the reader cut
    already (strings: its StringCutter; such a string ends in its marker)."""
    cut = 0

    def short(s: str, where: tuple, is_key: bool) -> str:
        nonlocal cut
        found = strings.cut_in(s) if strings is not None else None
        if found is not None:
            at, number = found
            # its length once its end was read; an entry that is the string alone is handed over
            # before: more than the limit, at least
            cut += strings.sizes.get(number, strings.limit + 1) - min(at, keep)
            strings.drop(number)
            return s[:min(at, keep)]
        if len(s) > keep:
            cut += len(s) - keep
            return s[:keep]
        return s

    return _map_strings(value, short), cut


class EventStager:
    """Turns parsed events into staging rows (exact times, exact args text) or rejections.

    Shared by the streaming reader and the bulk loader's exact path, so that an event is typed
    the same way whichever reads it.
    """

    def __init__(self) -> None:
        self.rejected_total = 0
        self.has_event = False  # some object with a "ph" key: a bare array is a trace
        self.strings: StringCutter | None = None  # the reader's, when it cuts long strings
        self._reset()

    def _reset(self) -> None:
        self.cols: dict[str, list] = {c: [] for c in STAGING_COLUMNS}
        self.rejected: dict[str, list] = {"event_id": [], "reason": [], "raw": []}
        self.long: dict[str, list] = {c: [] for c in LONG_COLUMNS}  # pieces of long strings
        self.chars = 0  # of the batch's texts: a batch is handed on once it holds BATCH_CHARS

    def __len__(self) -> int:
        return len(self.cols["event_id"]) + len(self.rejected["event_id"])

    def take(self) -> dict:
        """The batch so far, {"staging": columns, "rejected": columns, "long": columns}; starts a
        new one."""
        batch = {"staging": self.cols, "rejected": self.rejected, "long": self.long}
        self._reset()
        return batch

    def add(self, index: int, ev, span: int = 0) -> None:
        """Stage one parsed event; span: the bytes of text read to parse it (0: unknown)."""
        cut_by_reader = self.strings is not None and self.strings.started > self.strings.seen
        if cut_by_reader:  # strings the reader cut within its limit: whole again
            try:
                ev, cut_by_reader = _restored(ev, self.strings)
            except RejectedEvent as exc:
                self.reject(index, str(exc), _cut_strings(ev, MAX_EVENT_CHARS + 1, self.strings)[0])
                return
        if type(ev) is not dict:
            # a string the reader cut is kept as it came, without its marker
            self.reject(index, "event is not a JSON object",
                        _cut_strings(ev, MAX_EVENT_CHARS + 1, self.strings)[0] if cut_by_reader else ev)
            return
        if (span > MAX_EVENT_CHARS + 2 * READ_CHUNK or cut_by_reader) and self._set_aside_large(index, ev):
            return
        # ts, dur and args leave the dict here; rest is whatever remains (ph, cat, name, ...).
        ts = ev.pop("ts", _MISSING)
        dur = ev.pop("dur", _MISSING)
        args = ev.pop("args", _MISSING)
        try:
            ts_ns = None if ts is _MISSING else to_ns(ts, "ts")
            if dur is _MISSING:
                dur_ns = None
            else:
                dur_ns = to_ns(dur, "dur")
                if dur_ns < 0:
                    raise RejectedEvent(f"dur is negative ({dur})")
            check_span(ts_ns, dur_ns, ts, dur)
            try:
                # decode() also drops orjson's 4 KB over-allocation of each result
                args_text = None if args is _MISSING else fast_dumps(args).decode()
                rest = fast_dumps(ev).decode()
            except TypeError as exc:
                raise RejectedEvent(_encode_problem(exc)) from None
            size = len(rest) + (len(args_text) if args_text is not None else 0)
            if size > MAX_EVENT_CHARS:
                # a text this large would take the load's memory (its copies in the staging and the
                # event tables): the event is set aside, its first characters kept
                self.reject(index, _too_large(size), None, _first_chars(rest, ts, dur, args_text))
                return
            long = []
            if size > LONG_TEXT_CHARS:  # it may hold a string too long to keep in line
                # (both cut before either is used: an event set aside is set aside as it was read)
                cut_ev, long = out_of_line(ev)
                cut_args, long_args = (args, []) if args_text is None else out_of_line(args, ("args",))
                long += long_args
                if long:
                    args_text = None if args_text is None else fast_dumps(cut_args).decode()
                    rest = fast_dumps(cut_ev).decode()
                    size = len(rest) + (len(args_text) if args_text is not None else 0)
        except RejectedEvent as exc:
            for key, value in (("ts", ts), ("dur", dur), ("args", args)):
                if value is not _MISSING:
                    ev[key] = value
            self.reject(index, str(exc), ev)
            return
        self.has_event = self.has_event or "ph" in ev
        cols = self.cols
        cols["event_id"].append(index)
        cols["ts_ns"].append(ts_ns)
        cols["dur_ns"].append(dur_ns)
        cols["args"].append(args_text)
        cols["rest"].append(rest)
        self.chars += size
        for field_, text in long:
            for piece, at in enumerate(range(0, len(text), LONG_PIECE_CHARS)):
                self.long["event_id"].append(index)
                self.long["field"].append(field_)
                self.long["piece"].append(piece)
                self.long["text"].append(text[at:at + LONG_PIECE_CHARS])
            self.chars += len(text)

    def _set_aside_large(self, index: int, ev: dict) -> bool:
        """Set aside an event whose text read far beyond the cap (a span in bytes, a cap in
        characters: it may be within), without encoding it whole, which orjson could not allocate
        under a memory limit (it ends the process then): encoded with each string cut a little
        beyond KEPT_CHARS (the text's first KEPT_CHARS characters are the same), its size counted
        from the lengths cut off. Whether it was set aside."""
        short, cut = _cut_strings(ev, strings=self.strings)
        ts, dur, args = (short.pop(key, _MISSING) for key in ("ts", "dur", "args"))
        args_text = None if args is _MISSING else json_text(args)
        rest = json_text(short)
        size = len(rest) + len(args_text or "") + cut
        if size <= MAX_EVENT_CHARS:
            return False
        self.reject(index, _too_large(size), None, _first_chars(rest, ts, dur, args_text))
        return True

    def reject(self, index: int, reason: str, event, text: str | None = None) -> None:
        """Set an event aside; text, when given, is its JSON text as read (event is then unused)."""
        self.rejected["event_id"].append(index)
        self.rejected["reason"].append(reason)
        raw = text if text is not None else json_text(event)
        self.rejected["raw"].append(raw)
        self.rejected_total += 1
        self.chars += len(raw)


def read_chrome_trace(stream: TraceStream, emit: Callable[[dict], None],
                      on_progress: Callable[[int], None] | None = None,
                      batch_events: int = BATCH_EVENTS) -> ChromeResult:
    """Stream every event of a Chrome trace into column batches passed to emit().

    Raises BadTraceFile when the file is not a trace at all; a trace that breaks off (truncation,
    JSON syntax error) keeps its complete events and is reported incomplete.
    """
    kind = _start_kind(stream)
    capture = TopLevelCapture()
    stream.observer = capture
    prefix = "traceEvents.item" if kind == "object" else "item"
    result = ChromeResult()
    stager = EventStager()
    add = stager.add
    mark = capture.mark_event
    index = -1

    guard = SurrogateGuard(HeadMask(stream, capture) if kind == "object" else stream)
    # ijson's memory grows with the square of the depth: the bytes are checked before it sees them,
    # and a value deeper than its bound reaches it as 0, so that the event holding it costs only
    # itself (still hundreds of levels deep, it is set aside) (a trace object's parser reads to the
    # event list's end: the keys after it are the capture's)
    # and a string longer than one event may hold reaches it cut, so that yajl never builds it
    # (where memory is short it ended the process), marked so that its event is set aside
    nesting = NestingGuard(guard, ends_at_depth=1 if kind == "object" else None, blank_beyond=True,
                           strings=StringCutter(MAX_EVENT_CHARS))
    stager.strings = nesting.strings
    items = ijson.items(nesting, prefix, use_float=False, buf_size=READ_CHUNK)
    last = stream.offset
    try:
        for index, ev in enumerate(items):
            mark()
            add(index, ev, stream.offset - last)  # the bytes read while it was parsed
            last = stream.offset
            if len(stager) >= batch_events or stager.chars >= BATCH_CHARS:
                emit(stager.take())
                if on_progress:
                    on_progress(index + 1)
    except (ijson.common.JSONError, UnicodeDecodeError, InvalidOperation, TooDeep) as exc:
        # yajl passes bad UTF-8 on to Python, and a number Decimal cannot hold (1e9999999999999999999)
        result.complete = False
        result.problem = _break_problem(stream, index, exc)
    if stream.read_error:
        result.complete = False
        result.problem = f"after event {index}: {stream.read_error}"
    result.event_count = index + 1
    result.rejected = stager.rejected_total
    if len(stager):
        emit(stager.take())
    if on_progress:
        on_progress(result.event_count)

    if nesting.ended_at is not None and capture.kind == "object" and capture.events_start is not None:
        # the keys after the list, read by the capture as the rest of the text streams by
        capture.list_ended(nesting.ended_at)
        while not stream.read_error and stream.read(READ_CHUNK):
            pass
        if stream.read_error:
            result.complete = False
            result.problem = f"after event {index}: {stream.read_error}"
        capture.finish(result.complete)
    else:
        capture.finish(result.complete)
    if capture.kind == "object" and capture.events_start is None:
        if capture.problem is None and not result.complete:  # it broke off before the list began
            raise BadTraceFile(stream.path, f"no traceEvents list before the text breaks off: {result.problem}")
        raise BadTraceFile(stream.path, capture.problem or "JSON object without a traceEvents list: not a trace")
    if result.event_count == 0 and not result.complete:
        raise BadTraceFile(stream.path, f"no complete event: {result.problem}")
    if kind == "array" and not stager.has_event:
        raise BadTraceFile(stream.path, "JSON array without trace events (no object with a ph key): not a trace")
    if capture.problem and result.complete:
        result.complete = False
        result.problem = capture.problem
    if guard.replaced:
        note = (f"{guard.replaced} invalid \\u surrogate escape(s) in strings replaced by \\ufffd "
                f"(the first at byte {guard.first_at} of the JSON text)")
        add_note(result, note)
    if nesting.blanked:
        note = (f"{nesting.blanked} value(s) nested more than {nesting.limit} levels deep read as 0 in the "
                f"events holding them, which were set aside (the first at byte {nesting.first_blanked_at} of "
                "the JSON text)")
        add_note(result, note)
    result.metadata = capture.metadata()
    return result


_HIGH_AT_END = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}\Z")


def _safe_cut(data: bytes) -> int:
    """Where the bytes can be cut with no escape, nor surrogate pair, in two: before the first
    backslash of the last 12 bytes, and before a high surrogate escape just ahead of it, then at
    the start of the run of backslashes it belongs to (or an even number into a long run, so
    that the part held starts where an escape would)."""
    cut = data.find(b"\\", max(0, len(data) - 12))
    if cut < 0:
        return len(data)
    if _HIGH_AT_END.search(data, max(0, cut - 6), cut):
        cut -= 6
    run = cut
    while run > 0 and data[run - 1] == 0x5C:
        run -= 1
    return run if cut - run <= 4096 else cut - (cut - run) % 2


class HeadMask:
    """The stream as the event parser reads it: the keys before the event list (which the
    capture reads, member by member, from the same bytes) become `{"traceEvents":` and spaces, the
    same length, so that the parser builds the events alone and no metadata value (of any size or
    depth) costs it anything. The bytes from the list's "[" on pass unchanged."""

    _PREFIX = b'{"traceEvents":'

    def __init__(self, stream, capture: TopLevelCapture) -> None:
        self.stream = stream
        self.capture = capture

    def read(self, size: int = -1) -> bytes:
        at = self.stream.offset
        chunk = self.stream.read(size)  # the capture has seen it
        capture = self.capture
        if not chunk or capture.kind != "object":
            return chunk
        head_start = capture.head_start
        if capture.events_start is not None and at >= capture.events_start - 1:
            return chunk  # the event list and after
        end = len(chunk) if capture.events_start is None else capture.events_start - 1 - at
        start = max(0, head_start - at)
        masked = bytearray(chunk)
        masked[start:end] = b" " * (end - start)
        # the prefix where it falls in this chunk (a head is at least as long: it ends in the key)
        lo, hi = max(head_start, at), min(head_start + len(self._PREFIX), at + end)
        if lo < hi:
            masked[lo - at:hi - at] = self._PREFIX[lo - head_start:hi - head_start]
        return bytes(masked)


class SurrogateGuard:
    """The streaming reader's bytes with every invalid surrogate escape (a lone or unpaired \\uD800-
    \\uDFFF) replaced by \\ufffd, counted. yajl would otherwise store them silently rewritten ("?",
    or two high surrogates as U+10000); DuckDB refuses them, so the bulk reader sets such an event
    aside. Same length in, same length out: byte offsets in messages stay true."""

    def __init__(self, stream) -> None:
        self.stream = stream
        self.replaced = 0
        self.first_at: int | None = None
        self._held = b""  # a trailing run of backslashes, with what follows: maybe an escape cut in two
        self._at = 0  # offset of the next byte handed out

    def read(self, size: int = -1) -> bytes:
        while True:
            chunk = self.stream.read(size)
            data = self._held + chunk
            if not chunk:
                self._held = b""
                return self._fix(data)
            self._held = data[_safe_cut(data):]
            cut = len(data) - len(self._held)
            out = self._fix(data[:cut])
            if out:
                return out

    def _fix(self, data: bytes) -> bytes:
        at = self._at
        self._at += len(data)
        fixed, where = replace_lone_surrogates(data)
        if where:
            self.replaced += len(where)
            if self.first_at is None:
                self.first_at = at + where[0]
        return fixed


def _encode_problem(exc: TypeError) -> str:
    text = str(exc)
    if "64-bit" in text:
        return "integer beyond 64 bits"
    if "Recursion" in text:
        return "args nested too deeply (more than 254 levels)"
    return f"cannot encode event: {text}"


def _break_problem(stream: TraceStream, index: int, exc: Exception) -> str:
    message = " ".join(str(exc).split())
    if isinstance(exc, InvalidOperation):
        message = "a number beyond any range"
    if isinstance(exc, TooDeep):
        return message if index < 0 else f"{message}, after event {index}"
    if "premature EOF" in message or "Incomplete or empty" in message:
        what = "file ends early (truncated)"
    else:
        what = "JSON error"
    return f"{what} after event {index} (near byte {stream.offset} of the JSON text): {message[:200]}"


def require_c_backend() -> None:
    if ijson.backend not in ("yajl2_c",):
        raise TracedbError(
            f"ijson's C backend (yajl2_c) is not available (found {ijson.backend}); "
            "reinstall ijson from a wheel for this platform: pip install --force-reinstall ijson")
