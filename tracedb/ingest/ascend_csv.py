"""Reading Huawei Ascend profiler CSVs: torch_npu kernel_details.csv, msprof op_summary_*.csv and
the single-forward-pass CSVs TensorCast keeps.

The format is told from the header. Each record becomes one kernel: its exact start, duration and
wait in integer nanoseconds (the CSVs write epoch microseconds with three decimals, quoted and
often with a trailing tab, which a double cannot hold to the nanosecond), every cell as written,
keyed by its header, and the PMU counters as numbers; sql/ingest/ascend_csv.sql then types them
into kernels and ascend_kernels. Two readers stage the records, outside the load's transaction:

- DuckDB's CSV reader (sql/ingest/ascend_csv_bulk.sql), on both cores, for a well-formed file
  whose times SQL can take exactly from their text;
- otherwise this module's streaming reader (csv, one batch in memory), which sets a record that
  cannot be a kernel (wrong number of cells, a duration that is not a number) aside in
  rejected_events with the reason, and keeps every record before the break of a file that breaks
  off, flagging it incomplete (sql/ingest/ascend_csv_records.sql).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field

import duckdb
import orjson
import pyarrow as pa

from .. import store
from ..errors import BadTraceFile, reraise_interrupt
from ..sqlfiles import file_path
from .chrome import RejectedEvent, check_span, to_ns
from .source import TraceStream, is_gzip
from .writer import insert_arrow

BATCH_ROWS = 20_000
FIELD_LIMIT = 64 << 20  # bytes in one cell (shape lists of large fused ops are long)
MISSING = ("", "N/A", "NA", "null", "None")

# The columns that name the same thing in each layout, first match wins.
START = ("Start Time(us)", "Task Start Time(us)")
DURATION = ("Duration(us)", "Task Duration(us)")
WAIT = ("Wait Time(us)", "Task Wait Time(us)")
TYPE = ("Type", "OP Type")

# The headers sql/ingest/ascend_csv.sql types into columns of their own; every other column (the
# PMU counters) is also staged as a number, in pmu.
TYPED_HEADERS = frozenset([
    "Step Id", "Model ID", "Model Name", "Infer ID", "Task ID", "Stream ID", "Device_id", "Name", "Op Name", "Type",
    "OP Type", "OP State", "Accelerator Core", "Task Type", "Start Time(us)", "Task Start Time(us)", "Duration(us)",
    "Task Duration(us)", "Wait Time(us)", "Task Wait Time(us)", "Block Dim", "Mix Block Dim", "HF32 Eligible",
    "Input Shapes", "Input Data Types", "Input Formats", "Output Shapes", "Output Data Types", "Output Formats",
    "Context ID"])

STAGING_SCHEMA = pa.schema([("event_id", pa.int64()), ("ts_ns", pa.int64()), ("dur_ns", pa.int64()),
                            ("wait_ns", pa.int64()), ("cells", pa.string()), ("pmu", pa.string())])
REJECTED_SCHEMA = pa.schema([("event_id", pa.int64()), ("reason", pa.string()), ("raw", pa.string())])


@dataclass
class CsvResult:
    format: str
    event_count: int = 0
    complete: bool = True
    problem: str | None = None
    metadata: list[tuple[str, object]] = field(default_factory=list)


def csv_format(header: list[str]) -> str | None:
    """The layout a header names, or None when it is not an Ascend kernel CSV."""
    names = set(header)
    if not names & set(DURATION) or not names & (set(TYPE) | {"Name", "Op Name"}):
        return None
    if "Op Name" in names or "Task Start Time(us)" in names:
        return "ascend-op-summary"
    if "Name" in names:
        return "ascend-kernel-details"
    return "ascend-forward-pass"


def header_of(head: bytes) -> list[str] | None:
    """The header a file starting with these (decompressed) bytes has; None when there is none.
    A column without a name (a trailing comma) is named by its place, the same for both readers."""
    line = head.decode("utf-8-sig", "replace").splitlines()[0] if head else ""
    try:
        return [h.strip() or f"column{i + 1}" for i, h in enumerate(next(csv.reader([line])))]
    except (csv.Error, StopIteration):
        return None


def looks_like_csv(head: bytes) -> bool:
    """True when the first line of the decompressed file is a header an Ascend CSV would have."""
    return csv_format(header_of(head) or []) is not None


def _column(header: list[str], choices: tuple[str, ...]) -> int | None:
    for name in choices:
        if name in header:
            return header.index(name)
    return None


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value == value and abs(value) != float("inf") else None


def _time_or_none(cells: list[str], index: int | None, label: str) -> int | None:
    """A start or wait time; one that is not a number reads as NULL (its text stays in args), as the
    comparison script counts the kernel all the same."""
    try:
        return _time(cells, index, label)
    except RejectedEvent:
        return None


def _time(cells: list[str], index: int | None, label: str) -> int | None:
    if index is None:
        return None
    text = cells[index].strip()
    if text in MISSING:
        return None
    return to_ns(text, label)


def stage(con: duckdb.DuckDBPyConnection, path, progress=None) -> CsvResult:
    """Read the CSV at path into _csv_typed (and _staging_rejected), in bulk when it can be."""
    header, fmt = _header(path)
    store.run_file(con, "ingest/ascend_csv_stage.sql")
    result = _stage_bulk(con, path, header, fmt)
    if result is not None:
        if progress:
            progress(path.stat().st_size, result.event_count)
        return result
    con.execute("CREATE OR REPLACE TEMP TABLE _csv_rows "
                "(event_id BIGINT, ts_ns BIGINT, dur_ns BIGINT, wait_ns BIGINT, cells VARCHAR, pmu VARCHAR)")
    csv.field_size_limit(FIELD_LIMIT)
    stream = TraceStream(path)
    text = io.TextIOWrapper(io.BufferedReader(stream, 1 << 20), encoding="utf-8-sig", newline="")
    try:
        result = _read(con, path, stream, text, header, fmt, progress)
    finally:
        text.close()
    store.run_file(con, "ingest/ascend_csv_records.sql")
    return result


def _header(path) -> tuple[list[str], str]:
    """The file's header and layout (raises BadTraceFile when it is not an Ascend kernel CSV)."""
    stream = TraceStream(path)
    try:
        head = stream.peek_start(1 << 20)
    finally:
        stream.close()
    header = header_of(head)
    if header is None:
        raise BadTraceFile(path, "empty CSV (no header)")
    fmt = csv_format(header)
    if fmt is None:
        raise BadTraceFile(path, "not an Ascend profiler CSV: the header needs a Type or OP Type (or Name) column "
                                 f"and Duration(us) (header starts {','.join(header[:6])!r})")
    dupes = sorted({h for h in header if header.count(h) > 1})
    if dupes:
        raise BadTraceFile(path, f"CSV header repeats the column {dupes[0]!r}")
    return header, fmt


def _stage_bulk(con: duckdb.DuckDBPyConnection, path, header: list[str], fmt: str) -> CsvResult | None:
    """Stage a well-formed file with DuckDB's CSV reader; None when the Python reader must read it."""
    # The layout is fixed (no sniffing): the header we parsed, every cell as text, '' kept as ''.
    columns = {h: "VARCHAR" for h in header}
    added = [h for h in sorted(TYPED_HEADERS) if h not in columns]
    try:
        with store.settings(con, preserve_insertion_order=True):  # the rowid is the record's index
            con.execute("CREATE OR REPLACE TEMP TABLE _csv_raw AS SELECT * FROM read_csv($path, auto_detect = false, "
                        "header = true, delim = ',', quote = '\"', escape = '\"', strict_mode = true, "
                        "columns = $columns, nullstr = '\x01', compression = $compression, encoding = 'utf-8')",
                        {"path": file_path(path), "columns": columns, "compression": "gzip" if is_gzip(path) else "none"})
        # Packing wide records into JSON holds a few row groups per thread: the derivation's allowance
        # (the load's peak anyway) rather than the staging one.
        with store.settings(con, memory_limit=store.DERIVE_MEMORY_LIMIT):
            for name in [*added, "__tracedb_none"]:  # names of our own: a column per absent typed header
                con.execute(f'ALTER TABLE _csv_raw ADD COLUMN "{name}" VARCHAR')
            first, last, count = con.execute("SELECT min(rowid), max(rowid), count(*) FROM _csv_raw").fetchone()
            if count and last - first + 1 != count:
                return _not_bulk(con)
            store.run_file(con, "ingest/ascend_csv_bulk.sql",
                        {"first_rowid": first or 0, "added": added, "typed": sorted(TYPED_HEADERS)})
            if con.execute("SELECT count(*) FROM _csv_bulk WHERE needs_python").fetchone()[0]:
                return _not_bulk(con)
        con.execute("ALTER TABLE _csv_bulk RENAME TO _csv_typed")
        con.execute("DROP TABLE _csv_raw")
    except duckdb.Error as exc:  # a record DuckDB cannot read as the header says: the Python reader names it
        reraise_interrupt(exc)
        return _not_bulk(con)
    return CsvResult(fmt, event_count=count, metadata=[("header", header)])


def _not_bulk(con: duckdb.DuckDBPyConnection) -> None:
    for name in ("_csv_bulk", "_csv_raw"):
        con.execute(f"DROP TABLE IF EXISTS {name}")
    return None


def _read(con, path, stream: TraceStream, text, header: list[str], fmt: str, progress) -> CsvResult:
    reader = csv.reader(text)
    try:
        next(reader)  # the header, as _header read it
    except (StopIteration, csv.Error, UnicodeDecodeError) as exc:
        raise BadTraceFile(path, f"unreadable CSV header: {exc}") from None
    start, duration, wait = _column(header, START), _column(header, DURATION), _column(header, WAIT)
    counters = [(i, h) for i, h in enumerate(header) if h not in TYPED_HEADERS]
    result = CsvResult(fmt, metadata=[("header", header)])
    batch = _Batch()
    index = -1
    try:
        for cells in reader:
            if not cells:  # a blank line holds no record
                continue
            index += 1
            if len(cells) != len(header):
                batch.reject(index, f"{len(cells)} cells where the header has {len(header)}",
                             orjson.dumps(cells).decode())
            else:
                try:
                    dur_ns = _time(cells, duration, header[duration])
                    if dur_ns is None:
                        raise RejectedEvent(f"{header[duration]} is empty")
                    if dur_ns < 0:
                        raise RejectedEvent(f"{header[duration]} is negative ({cells[duration].strip()})")
                    ts_ns = _time_or_none(cells, start, header[start] if start is not None else "")
                    check_span(ts_ns, dur_ns, cells[start].strip() if ts_ns is not None else None, cells[duration].strip())
                    pmu = orjson.dumps({h: _number(cells[i]) for i, h in counters}).decode() if counters else None
                    batch.add(index, ts_ns, dur_ns,
                              _time_or_none(cells, wait, header[wait] if wait is not None else ""),
                              orjson.dumps(dict(zip(header, cells))).decode(), pmu)
                except RejectedEvent as exc:
                    batch.reject(index, str(exc), orjson.dumps(dict(zip(header, cells))).decode())
            if len(batch) >= BATCH_ROWS:
                batch.write(con)
                if progress:
                    progress(stream.disk.bytes_read, index + 1)
    except (csv.Error, UnicodeDecodeError) as exc:
        result.complete = False
        result.problem = f"after record {index}: {exc}"
    if stream.read_error:
        result.complete = False
        result.problem = f"after record {index}: {stream.read_error}"
    batch.write(con)
    result.event_count = index + 1
    if progress:
        progress(stream.disk.bytes_read, result.event_count)
    return result


class _Batch:
    def __init__(self) -> None:
        self.rows: dict[str, list] = {n: [] for n in STAGING_SCHEMA.names}
        self.rejected: dict[str, list] = {n: [] for n in REJECTED_SCHEMA.names}

    def __len__(self) -> int:
        return len(self.rows["event_id"]) + len(self.rejected["event_id"])

    def add(self, index: int, ts_ns, dur_ns, wait_ns, cells: str, pmu: str | None) -> None:
        for key, value in zip(STAGING_SCHEMA.names, (index, ts_ns, dur_ns, wait_ns, cells, pmu)):
            self.rows[key].append(value)

    def reject(self, index: int, reason: str, raw: str) -> None:
        for key, value in zip(REJECTED_SCHEMA.names, (index, reason, raw)):
            self.rejected[key].append(value)

    def write(self, con: duckdb.DuckDBPyConnection) -> None:
        for table, cols, schema in (("_csv_rows", self.rows, STAGING_SCHEMA),
                                    ("_staging_rejected", self.rejected, REJECTED_SCHEMA)):
            insert_arrow(con, table, pa.table(cols, schema=schema))
        self.__init__()
