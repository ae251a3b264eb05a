"""Batched, columnar staging of parsed events, overlapping the parse.

The parser hands over one batch of columns at a time; the batch becomes an Arrow table in the
parser's thread (cheap, and it frees the Python lists), and a writer thread appends it to the
temporary tables _staging_events and _staging_rejected (sql/ingest/chrome_stage.sql). DuckDB
releases the GIL while it works, so the next batch parses meanwhile. The queue holds at most two batches, and
the staging table lives in DuckDB's buffer pool, which spills to disk under the memory limit:
memory stays bounded whatever the trace size. Typing the staged events into the event tables is
one set of statements for the whole trace (sql/ingest/chrome_split.sql), run by the loader.
"""

from __future__ import annotations

import queue
import threading

from typing import TYPE_CHECKING

import duckdb

if TYPE_CHECKING:
    import pyarrow as pa

# pyarrow is imported when a batch is first built: a well-formed trace read in bulk needs none,
# and importing it costs a tiny load a tenth of its time.
_STOP = object()


def to_arrow(batch: dict) -> tuple[pa.Table, pa.Table, pa.Table]:
    """An EventStager batch as Arrow tables (staging rows, rejections, pieces of long strings)."""
    import pyarrow as pa

    staging = pa.schema([("event_id", pa.int64()), ("ts_ns", pa.int64()), ("dur_ns", pa.int64()),
                         ("args", pa.string()), ("rest", pa.string())])
    rejected = pa.schema([("event_id", pa.int64()), ("reason", pa.string()), ("raw", pa.string())])
    long = pa.schema([("event_id", pa.int64()), ("field", pa.string()), ("piece", pa.int32()),
                      ("text", pa.string())])
    return (pa.table(batch["staging"], schema=staging), pa.table(batch["rejected"], schema=rejected),
            pa.table(batch["long"], schema=long))


def insert_arrow(con: duckdb.DuckDBPyConnection, table: str, rows: pa.Table, select: str = "*") -> None:
    """Append an Arrow table's rows to a table (select: what of _arrow_batch to insert, in the
    table's column order)."""
    if rows.num_rows:
        con.register("_arrow_batch", rows)
        try:
            con.execute(f"INSERT INTO {table} SELECT {select} FROM _arrow_batch")
        finally:
            con.unregister("_arrow_batch")


def append_staged_lists(con: duckdb.DuckDBPyConnection, batch: dict) -> None:
    """Append one EventStager batch to _staging_events, _staging_rejected and _staging_long from its
    Python lists, without Arrow: the few events the bulk reader types in Python come in batches this
    small, and building an Arrow array imports pandas when it is installed (a quarter of a second)."""
    for table, part, columns in (("_staging_events", "staging", ("event_id", "ts_ns", "dur_ns", "args", "rest")),
                                 ("_staging_rejected", "rejected", ("event_id", "reason", "raw")),
                                 ("_staging_long", "long", ("event_id", "field", "piece", "text"))):
        rows = batch[part]
        if rows[columns[0]]:
            values = ", ".join(f"unnest(${i + 1})" for i in range(len(columns)))
            con.execute(f"INSERT INTO {table} SELECT {values}", [rows[c] for c in columns])


def append_staged(con: duckdb.DuckDBPyConnection, staging: pa.Table, rejected: pa.Table, long: pa.Table) -> None:
    """Append one batch to _staging_events, _staging_rejected and _staging_long
    (sql/ingest/chrome_stage.sql)."""
    insert_arrow(con, "_staging_events", staging)
    insert_arrow(con, "_staging_rejected", rejected)
    insert_arrow(con, "_staging_long", long)


class BatchWriter:
    """Writes staging batches of one trace through a background thread."""

    def __init__(self, con: duckdb.DuckDBPyConnection):
        self.con = con
        self._queue: queue.Queue = queue.Queue(maxsize=2)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="tracedb-writer", daemon=True)
        self._thread.start()

    def put(self, batch: dict) -> None:
        """Queue one batch: {"staging": columns, "rejected": columns, "long": columns} (lists are
        copied)."""
        if self._error:
            raise self._error
        self._queue.put(to_arrow(batch))

    def close(self) -> None:
        """Wait for every queued batch; re-raise the writer's error, if any."""
        self._queue.put(_STOP)
        self._thread.join()
        if self._error:
            raise self._error

    def abort(self) -> None:
        """Stop without waiting for pending batches (the transaction is being rolled back)."""
        while True:
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
        self._queue.put(_STOP)
        self._thread.join()

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            if self._error:
                continue
            try:
                append_staged(self.con, *item)
            except BaseException as exc:  # reported to the parser thread by put()/close()
                self._error = exc
