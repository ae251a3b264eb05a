"""Bulk reading of a well-formed Chrome trace: DuckDB's JSON reader splits and parses the events.

Two steps:

1. read_raw, before the load's transaction: a feeder thread cuts the bytes of the event list
   (decompressed, without the metadata around it) into segment files of about SEGMENT bytes, each
   a JSON array of whole events, and read_json_objects appends them, up to BATCH at a time, to the
   temporary table _raw:
   one row per event with its exact text, in file order, so that the rowid is the event's index.
   The next segment is written while DuckDB parses the current one. (DuckDB keeps everything it
   reads from a pipe in memory, hence files; segments keep the disk use small.)
2. type_bulk, before the transaction too: sql/ingest/chrome_bulk.sql types the events from their
   text and flags the few SQL cannot type exactly; those go through the streaming reader's
   EventStager, so an event is typed the same way whichever path reads it. Both meet in _typed_all
   (sql/ingest/chrome_stage.sql) for the split. _raw is dropped then, so that its memory is free
   for the split and the derivation (a table dropped inside a transaction keeps its memory until
   the commit).

A file that does not read cleanly from start to end (truncated, a syntax error, NaN, metadata the
feeder cannot place, an event list it cannot cut) raises NotBulk in step 1 or 2, before anything is
written: the loader then reads it with the streaming reader, which keeps every complete event and
reports where the file broke. Both steps run outside the transaction: a DuckDB error aborts the
transaction it happens in.
"""

from __future__ import annotations

import contextlib
import json
import queue
import threading
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Callable

import duckdb

from .. import scratch, store
from ..store import run_file
from ..errors import reraise_interrupt
from ..sqlfiles import file_path, literal
from .boundaries import LEAD, boundary_pattern, last_boundary
from .chrome import LONG_TEXT_CHARS, MAX_EVENT_CHARS, ChromeResult, EventStager, RejectedEvent
from .layout import TopLevelCapture
from .salvage import NotSalvageable, Rejection, salvage
from .source import TraceStream
from .writer import append_staged_lists

CHUNK = 1 << 20
SEGMENT = 4 << 20  # bytes of events per segment file
# Segments read by one statement, at most: DuckDB reads one file on one thread, so a statement
# over several segments keeps every core busy, and each statement's append to _raw costs its own
# (on 1 GiB, 256 segments read 4 at a time took 4.6 s, 16 at a time 3.5, all in one statement
# 1.4 without the feeder). A statement reads what the feeder has queued, so a trace read as fast
# as it is cut goes a segment or two at a time whatever this is; at most twice this many segment
# files exist at once (128 MB).
BATCH = 16
HOLD = 4 << 20  # bytes kept back until the end of the event list is known
# An array after the events longer than this is taken for the event list by the search for its
# end (tracedb.ingest.layout); the last segment then fails to parse and the streaming reader,
# which needs no such bound, takes the file.
WALK_BUDGET = 64 << 10  # the walk is Python: 1 MiB of events took 0.2 s of every load, 256 KiB 0.05 s
EXACT_BATCH = 10_000
EXACT_BYTES = 32 << 20  # and of text at most, a page of those
# The typing's rows at a time (DuckDB's vector), and the most text of events so many in a row may
# hold: a third of the load's memory (each text is held about three times). Beyond it the
# streaming reader reads the trace (real traces' events are at most 5 KiB: 10 MB).
VECTOR_ROWS = 2048
CROWDED_BYTES = 48 << 20

ProgressFn = Callable[[int, int], None]  # (disk bytes read, events so far; estimated in bulk)


class NotBulk(Exception):
    """The file cannot be read in bulk; the streaming reader takes over."""


@dataclass
class RawEvents:
    """What read_raw leaves besides _raw."""
    count: int
    first_rowid: int
    kind: str  # "object" or "array"
    metadata: list[tuple[str, object]]
    disk_bytes: int
    malformed: list[Rejection]  # events set aside by the salvage of a segment DuckDB refused


def read_raw(con: duckdb.DuckDBPyConnection, stream: TraceStream, progress: ProgressFn | None = None) -> RawEvents:
    """Read the event texts of the trace on stream into _raw (outside any transaction)."""
    with scratch.folder("segments") as tmp:
        feeder = _Feeder(stream, tmp, progress)
        feeder.start()
        # the rowid is the event index
        with store.settings(con, preserve_insertion_order=True), _stopping(feeder):
            # chars: the text's bytes, so that long events are counted without reading their texts
            # again (a scan of _raw holds 2,048 texts at once)
            con.execute("CREATE OR REPLACE TEMP TABLE _raw (raw JSON, chars INTEGER)")
            rejections: list[Rejection] = []
            try:
                batch: list[Path] = []
                while True:
                    segment = feeder.segments.get()
                    if segment is not None:
                        batch.append(segment)
                    if batch and (segment is None or len(batch) == BATCH or feeder.segments.empty()):
                        rejections += _read_segments(con, batch, tmp / "salvage.json")
                        batch = []
                    if segment is None:
                        break
            except duckdb.Error as exc:
                reraise_interrupt(exc)
                drop_raw(con)
                raise NotBulk(" ".join(str(exc).split())[:200]) from None
            except NotSalvageable as exc:
                drop_raw(con)
                raise NotBulk(str(exc)) from None
    if feeder.problem:
        drop_raw(con)
        raise NotBulk(feeder.problem)
    # Insertion order is preserved, so the event index is the rowid less the first one.
    low, high, count = con.execute("SELECT min(rowid), max(rowid), count(*) FROM _raw").fetchone()
    if count and high - low + 1 != count:
        drop_raw(con)
        raise NotBulk("rowids of _raw are not contiguous")
    return RawEvents(count, low or 0, feeder.capture.kind, feeder.capture.metadata(), feeder.disk_bytes,
                     rejections)


def _read_segments(con: duckdb.DuckDBPyConnection, segments: list[Path], salvage_file: Path) -> list[Rejection]:
    """Append the events of the segment files, in order, to _raw (removing the files); returns
    the events set aside by the salvage of a segment DuckDB refused."""
    rejections: list[Rejection] = []
    files = ", ".join(literal(file_path(segment)) for segment in segments)
    try:
        con.execute(f"INSERT INTO _raw SELECT json, strlen(json) FROM read_json_objects([{files}], format = 'array')")
    except duckdb.Error as exc:  # a bad event: the segments one by one, the bad one a window at a time
        reraise_interrupt(exc)
        if len(segments) > 1:
            for segment in segments:
                rejections += _read_segments(con, [segment], salvage_file)
            return rejections
        rows = con.execute("SELECT count(*) FROM _raw").fetchone()[0]
        rejections += salvage(con, segments[0].read_bytes(), rows, salvage_file)
    for segment in segments:
        segment.unlink(missing_ok=True)
    return rejections


@contextlib.contextmanager
def _stopping(feeder: "_Feeder"):
    """Stop the feeder thread when the block ends, however it ends."""
    try:
        yield
    finally:
        feeder.cancel()
        feeder.join()


def drop_raw(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("DROP VIEW IF EXISTS _raw_parts")
    con.execute("DROP TABLE IF EXISTS _raw")


ROW_GROUP_ROWS = 122_880  # DuckDB's row group: a table scan gives each of them to one thread


def _raw_parts(con: duckdb.DuckDBPyConnection, raw: RawEvents) -> None:
    """_raw as chrome_bulk.sql reads it (the view _raw_parts: row_id, raw): a trace of a few row
    groups of events is cut into one equal range of rows per thread, read side by side, since a
    scan gives each row group to one thread: one row group would type every event on one thread
    (on the 50,125 events of a 17.9 MB trace, 0.19 s instead of 0.12 on two cores), and a full
    row group beside a short one nearly so (131,243 events: 122,880 and 8,363; 0.30 s instead of
    0.2). Row groups that share the threads evenly are scanned whole: more scans of them cost
    more than they gain."""
    threads = int(con.execute("SELECT current_setting('threads')").fetchone()[0])
    parts = 1 if _row_groups_balanced(raw.count, threads) else threads
    first, count = raw.first_rowid, raw.count
    ranges = [(first + count * i // parts, first + count * (i + 1) // parts) for i in range(parts)]
    con.execute("CREATE OR REPLACE TEMP VIEW _raw_parts AS " + " UNION ALL ".join(
        f"SELECT rowid AS row_id, raw FROM _raw WHERE rowid >= {low} AND rowid < {high}" for low, high in ranges))


def _row_groups_balanced(count: int, threads: int) -> bool:
    """Whether a scan of count rows, a row group per thread at a time, keeps the threads about
    equally busy: the busiest within a quarter of an even share."""
    sizes = [ROW_GROUP_ROWS] * (count // ROW_GROUP_ROWS) + ([count % ROW_GROUP_ROWS] if count % ROW_GROUP_ROWS else [])
    loads = [0] * max(threads, 1)
    for size in sorted(sizes, reverse=True):  # the scheduler hands the next row group to a free thread
        loads[loads.index(min(loads))] += size
    return max(loads) <= 1.25 * count / len(loads)


def drop_staging(con: duckdb.DuckDBPyConnection) -> None:
    """Drop every staging object of a load, whichever path and step it stopped at."""
    if store.invalidated_by(con) is not None:
        return  # DuckDB invalidated the database: its temporary objects went with it
    con.execute("DROP VIEW IF EXISTS _typed_all")
    drop_raw(con)
    for name in ("_bulk", "_flagged", "_typed", "_staging_events", "_staging_rejected", "_staging_long", "_csv_rows",
                 "_csv_raw", "_csv_bulk", "_csv_typed"):
        con.execute(f"DROP TABLE IF EXISTS {name}")


def type_bulk(con: duckdb.DuckDBPyConnection, raw: RawEvents) -> ChromeResult:
    """Type the events of _raw into _bulk, seen through _typed_all (the flagged ones go to
    _staging_events), and drop _raw."""
    # the typing reads 2,048 events at a time: where large ones crowd together (thousands of long
    # names), their texts would fill its memory; the streaming reader, which cuts each long string
    # as it reads it, takes such a trace (_raw.chars: no text read again to tell)
    largest = con.execute("SELECT coalesce(max(chars), 0) FROM _raw").fetchone()[0]
    if largest * VECTOR_ROWS > CROWDED_BYTES:
        crowded = con.execute(
            "SELECT coalesce(max(total), 0) FROM (SELECT sum(chars) AS total FROM _raw GROUP BY rowid // $n "
            "UNION ALL SELECT sum(chars) FROM _raw GROUP BY (rowid + $n // 2) // $n)", {"n": VECTOR_ROWS}).fetchone()[0]
        if crowded > CROWDED_BYTES:
            drop_raw(con)
            raise NotBulk(f"{crowded / (1 << 20):,.0f} MiB of events in {VECTOR_ROWS} in a row")
    _raw_parts(con, raw)
    run_file(con, "ingest/chrome_bulk.sql", {"first_rowid": raw.first_rowid, "max_event_chars": MAX_EVENT_CHARS,
                                             "long_text_chars": LONG_TEXT_CHARS})
    with_ph = con.execute("SELECT count(*) FILTER (WHERE ph IS NOT NULL) FROM _bulk").fetchone()[0]
    stager = EventStager()
    # the events typed in Python are fetched a page at a time, a page holding at most EXACT_BYTES
    _stage_exact(con, stager, {r.event_id: r for r in raw.malformed},
                 max(1, min(EXACT_BATCH, EXACT_BYTES // max(largest, 1))))
    drop_raw(con)
    if raw.kind == "array" and not (with_ph or stager.has_event):
        raise NotBulk("no object with a ph key")  # the streaming reader names the problem
    result = ChromeResult(event_count=raw.count, rejected=stager.rejected_total, metadata=raw.metadata)
    if raw.malformed:
        first = raw.malformed[0]
        result.problem = (f"{len(raw.malformed)} malformed event(s) set aside, the rest read (first: event "
                          f"{first.event_id}, {first.reason})")
    return result


def discard_bulk(con: duckdb.DuckDBPyConnection) -> None:
    """Undo a type_bulk that raised NotBulk: fresh, empty staging objects for the streaming reader."""
    drop_staging(con)
    run_file(con, "ingest/chrome_stage.sql")


def _nan(text: str):
    raise RejectedEvent(f"{text} is not a JSON value")


def _number(text: str) -> Decimal:
    try:
        return Decimal(text)
    except InvalidOperation:  # an exponent beyond what Decimal holds (1e9999999999999999999)
        raise RejectedEvent(f"number {text[:40]} is beyond any range") from None


def _stage_exact(con: duckdb.DuckDBPyConnection, stager: EventStager, malformed: dict[int, Rejection],
                 page: int = EXACT_BATCH) -> None:
    """Type the flagged events in Python, page at a time; the malformed ones (placeholders in
    _raw) are set aside with their reason and text."""
    # Pages by rowid through the flagged events alone: the load's connection must also write
    # between pages, and a rowid range reads only its own row groups.
    base, total = con.execute("SELECT coalesce(min(rowid), 0), count(*) FROM _flagged").fetchone()
    for first in range(base, base + total, page):
        rows = con.execute("SELECT event_id, raw FROM _flagged WHERE rowid >= ? AND rowid < ? ORDER BY rowid",
                           [first, first + page]).fetchall()
        for event_id, raw in rows:
            bad = malformed.get(event_id)
            if bad is not None:
                stager.reject(event_id, bad.reason, None, bad.raw)
                continue
            try:
                ev = json.loads(raw, parse_float=_number, parse_constant=_nan)
            except RecursionError:
                stager.reject(event_id, "args nested too deeply (more than 254 levels)", None, raw)
                continue
            except RejectedEvent as exc:
                stager.reject(event_id, str(exc), None, raw)
                continue
            except ValueError as exc:  # an integer of more digits than Python converts
                stager.reject(event_id, f"cannot read: {exc}"[:200], None, raw)
                continue
            stager.add(event_id, ev, len(raw))
        append_staged_lists(con, stager.take())
    con.execute("DROP TABLE _flagged")


class _Feeder(threading.Thread):
    """Cuts the event list into segment files, each "[" + whole events + "]", for read_raw.

    Segments go through a queue of BATCH, so at most twice that many exist at a time; None ends
    the queue.
    """

    def __init__(self, stream: TraceStream, tmp: Path, progress: ProgressFn | None):
        super().__init__(name="tracedb-feeder", daemon=True)
        self.stream = stream
        self.tmp = tmp
        self.progress = progress
        self.capture = TopLevelCapture()
        self.segments: queue.Queue = queue.Queue(maxsize=BATCH)
        self.problem: str | None = None
        self.disk_bytes = 0
        self._cancelled = threading.Event()
        self._written = 0

    def cancel(self) -> None:
        self._cancelled.set()
        try:  # unblock a feeder waiting to queue a segment
            while True:
                self.segments.get_nowait()
        except queue.Empty:
            pass

    def run(self) -> None:
        try:
            self._feed()
        except Exception as exc:  # a file-level problem: the streaming reader will name it
            self.problem = str(exc) or type(exc).__name__
        finally:
            self._put(None)

    def _put(self, item) -> None:
        while not self._cancelled.is_set():
            try:
                self.segments.put(item, timeout=0.1)
                return
            except queue.Full:
                continue

    def _emit(self, body: bytes | bytearray, opened: bool, closed: bool) -> None:
        """Write one segment file: body plus the brackets it lacks."""
        path = self.tmp / f"segment-{self._written}.json"
        self._written += 1
        with open(path, "wb") as out:
            if not opened:
                out.write(b"[")
            out.write(body)
            if not closed:
                out.write(b"]")
        self._put(path)

    def _feed(self) -> None:
        stream = self.stream
        stream.observer = self.capture
        capture = self.capture
        capture.keep_chunks = False  # pending holds the bytes the end of the list is sought in
        pending = bytearray()  # list bytes not yet in a segment
        pending_at = None  # stream offset of pending[0], once the list has started
        opened = True  # pending starts with the list's own "["
        boundary = None  # pattern between two events, learnt from the first one
        events = 0
        while not self._cancelled.is_set():
            start = stream.offset
            chunk = stream.read(CHUNK)
            if not chunk:
                break
            if pending_at is None:
                if capture.kind == "array":
                    pending_at = start + chunk.index(b"[")
                elif capture.kind == "object" and capture.events_start is not None:
                    # the list's "[" is in this chunk: the head is scanned chunk by chunk
                    pending_at = capture.events_start - 1
                elif capture.kind not in (None, "object"):
                    raise ValueError("not a JSON object or array")
                else:
                    continue
                chunk = chunk[pending_at - start:]
            pending += chunk
            if self.progress:  # an estimate, for the progress line alone
                events += chunk.count(b'"ph"')
            if len(pending) > SEGMENT + HOLD:
                if boundary is None:
                    lead = LEAD.match(pending)
                    if lead is None:
                        raise ValueError("the event list does not start with an object")
                    boundary = boundary_pattern(lead.group(1))
                cut = last_boundary(boundary, pending, len(pending) - HOLD)
                if cut is None:
                    raise ValueError("no boundary between events in a whole segment")
                self._emit(memoryview(pending)[:cut], opened, closed=False)
                del pending[:cut + 1]  # the comma goes
                pending_at += cut + 1
                opened = False
            self.disk_bytes = stream.disk.bytes_read
            if self.progress:
                self.progress(self.disk_bytes, events)
        if self._cancelled.is_set():
            return
        if stream.read_error:
            raise ValueError(stream.read_error)
        if pending_at is None:
            raise ValueError(capture.problem or "no event list")
        if capture.kind == "object":
            capture.finish(True, WALK_BUDGET, held=(pending, pending_at))
            if capture.events_end is None:
                raise ValueError(capture.problem or "no end of the traceEvents list")
            if capture.events_end < pending_at:
                raise ValueError("more metadata after the traceEvents list than the feeder holds back")
            del pending[capture.events_end + 1 - pending_at:]
        elif not _ends_with_bracket(pending):
            # DuckDB would take "[{...}, " for a whole array: a cut file must go to the streaming reader
            raise ValueError("the event array does not end with ]")
        self._emit(pending, opened, closed=True)


def _ends_with_bracket(data: bytearray) -> bool:
    end = len(data)
    while end and data[end - 1] in b" \t\r\n":
        end -= 1
    return end > 0 and data[end - 1] == ord("]")
