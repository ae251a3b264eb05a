"""The input formats, one reader each, registered in one place (READERS).

A reader tells its files apart from their name and first bytes (detects), stages them outside the
load's transaction, where DuckDB spills staged rows to disk freely and where a DuckDB error does
not abort the load (stage; a Chrome trace's events are typed there too), and stores what it
staged in the tables inside the transaction (store). tracedb.ingest.loader drives them; nothing
else switches on the kind of a file.

- Chrome traces (Kineto, mlir-aie, torch_npu's trace_view.json, TensorCast): staged in bulk by
  DuckDB's JSON reader when the file is well-formed (tracedb.ingest.bulk), else by the streaming
  reader (tracedb.ingest.chrome), which keeps every complete event of a broken file; split into
  the event tables by sql/ingest/chrome_split.sql; then the one finish script of the kind the
  events show (sql/ingest/chrome_kind.sql picks it).
- Ascend profiler CSVs: tracedb.ingest.ascend_csv, typed by sql/ingest/ascend_csv.sql.
- TensorCast op_mapping.yaml: tracedb.ingest.op_mapping (a .yaml/.yml name, or --op-mapping: YAML
  is too loose to be told from content, any "word: text" line is YAML).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import duckdb

from .. import store
from ..store import run_file
from ..jsontext import dumps as json_text
from ..jsontext import replace_lone_surrogates
from .bulk import NotBulk, discard_bulk, read_raw, type_bulk
from .chrome import ChromeResult, add_note, read_chrome_trace, require_c_backend
from .layout import MAX_METADATA_CHARS
from .members import SetAside
from .source import TraceStream
from .writer import BatchWriter

CHROME, ASCEND_CSV, OP_MAPPING = "chrome", "ascend-csv", "op-mapping"
_YAML_SUFFIXES = (".yaml", ".yml", ".yaml.gz", ".yml.gz")

# (stage, disk bytes read, events so far); stage is "read", "type" or "derive"
ProgressFn = Callable[[str, int, int], None]


@dataclass(frozen=True)
class Reader:
    kind: str
    detects: Callable[[Path, bytes], bool]
    stage: Callable  # (con, path, stream, progress) -> staged
    store: Callable  # (con, trace_id, path, staged, progress) -> result with event_count, complete, problem


# -- Chrome traces ------------------------------------------------------------------------------

def _is_json(path: Path, head: bytes) -> bool:
    return head[:1] in (b"{", b"[")


def _stage_chrome(con, path: Path, stream: TraceStream, progress):
    require_c_backend()
    run_file(con, "ingest/chrome_stage.sql")
    reading = (lambda done, events: progress("read", done, events)) if progress else None
    try:
        raw = read_raw(con, stream, reading)
    except NotBulk:
        return _stream_events(con, path, reading)
    if progress:
        progress("type", stream.disk.bytes_read, raw.count)
    try:
        # typed before the transaction, where dropping the texts frees their memory at once
        # (errors caught inside the settings: a fatal one marks the connection before they go back)
        with store.settings(con, preserve_insertion_order=False), store.one_line_errors(con, f"{path}: cannot load"):
            return type_bulk(con, raw)
    except NotBulk:  # a bare array without events (the streaming reader names the problem), or
        discard_bulk(con)  # large events crowded together: read again, shown as it goes
        return _stream_events(con, path, reading)


def _stream_events(con: duckdb.DuckDBPyConnection, path: Path, reading) -> ChromeResult:
    """Stage the trace's events with the streaming reader (sql/ingest/chrome_stage.sql): a second
    pass over the file, for the files the bulk reader cannot take."""
    writer = BatchWriter(con)
    stream = TraceStream(path)
    try:
        on_events = (lambda n: reading(stream.disk.bytes_read, n)) if reading else None
        result = read_chrome_trace(stream, writer.put, on_events)
    except BaseException:
        writer.abort()
        raise
    finally:
        stream.close()
    writer.close()
    return result


def _store_chrome(con, trace_id: int, path: Path, result: ChromeResult, progress) -> ChromeResult:
    run_file(con, "ingest/chrome_split.sql", {"trace_id": trace_id})
    store_metadata(con, trace_id, result.metadata, result)
    run_file(con, "ingest/chrome_finish.sql", {"trace_id": trace_id})
    kind = con.execute(_chrome_kind_sql(), {"trace_id": trace_id}).fetchone()[0]
    if kind in _FINISH:
        run_file(con, _FINISH[kind], {"trace_id": trace_id})
    if kind == "tensorcast":
        from . import tensorcast  # imports pyarrow, which no other kind of trace needs

        tensorcast.store_sub_kernels(con, trace_id)
    return result


# The finer kinds of Chrome trace, each finished by its own script; any other is a Kineto trace.
_FINISH = {"mlir-aie": "ingest/aie_finish.sql", "torch_npu": "ingest/ascend_finish.sql",
           "tensorcast": "ingest/tensorcast_finish.sql"}


def _chrome_kind_sql() -> str:
    from .. import sqlfiles

    return sqlfiles.split_statements(sqlfiles.read("ingest/chrome_kind.sql"))[0]


# -- Ascend profiler CSVs -----------------------------------------------------------------------

def _is_ascend_csv(path: Path, head: bytes) -> bool:
    from .ascend_csv import looks_like_csv

    return looks_like_csv(head)


def _stage_ascend_csv(con, path: Path, stream: TraceStream, progress):
    from . import ascend_csv

    reading = (lambda done, events: progress("read", done, events)) if progress else None
    return ascend_csv.stage(con, path, reading)


def _store_ascend_csv(con, trace_id: int, path: Path, staged, progress):
    run_file(con, "ingest/ascend_csv.sql", {"trace_id": trace_id, "format": staged.format})
    store_metadata(con, trace_id, staged.metadata, staged)
    return staged


# -- op_mapping.yaml ----------------------------------------------------------------------------

def _is_yaml(path: Path, head: bytes) -> bool:
    return path.name.lower().endswith(_YAML_SUFFIXES)


def _stage_op_mapping(con, path: Path, stream: TraceStream, progress):
    from . import op_mapping

    return op_mapping.read(path)


def _store_op_mapping(con, trace_id: int, path: Path, staged, progress):
    from . import op_mapping

    op_mapping.store(con, trace_id, staged)
    store_metadata(con, trace_id, staged.metadata, staged)
    return staged


# In the order they are asked; a file none of them detects reads as Chrome JSON, whose reader
# names what is wrong with it.
READERS = (
    Reader(OP_MAPPING, _is_yaml, _stage_op_mapping, _store_op_mapping),
    Reader(CHROME, _is_json, _stage_chrome, _store_chrome),
    Reader(ASCEND_CSV, _is_ascend_csv, _stage_ascend_csv, _store_ascend_csv),
)
_BY_KIND = {r.kind: r for r in READERS}


def reader_for(path: Path, head: bytes, kind: str | None = None) -> Reader:
    """The reader of kind, else the first that detects the file from its name and first bytes."""
    if kind:
        return _BY_KIND[kind]
    head = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    return next((r for r in READERS if r.detects(path, head)), _BY_KIND[CHROME])


def store_metadata(con: duckdb.DuckDBPyConnection, trace_id: int, metadata, result) -> None:
    """The file's top-level keys other than its events ((key, value) pairs, in file order). An
    invalid surrogate escape in them is replaced by \\ufffd, and said in the result's problem; a
    value the reader set aside (members.SetAside), or one beyond MAX_METADATA_CHARS of JSON, is
    stored as {"set_aside_bytes": N}, and said there too."""
    rows, replaced, aside = [], 0, []
    for i, (key, value) in enumerate(metadata):
        text = None if isinstance(value, SetAside) else json_text(value)
        if text is not None and len(text) > MAX_METADATA_CHARS:
            value = SetAside(len(text), f"beyond {MAX_METADATA_CHARS >> 20} MiB of JSON")
        if isinstance(value, SetAside):
            aside.append(f"{key} ({value.size:,} bytes, {value.reason})")
            text = json_text({"set_aside_bytes": value.size})
        text, where = replace_lone_surrogates(text.encode("utf-8", "surrogatepass"))
        key_text, key_where = replace_lone_surrogates(json_text(key).encode("utf-8", "surrogatepass"))
        replaced += len(where) + len(key_where)
        rows.append((trace_id, i, json.loads(key_text), text.decode()))
    if rows:
        con.executemany("INSERT INTO trace_metadata VALUES (?, ?, ?, ?)", rows)
    notes = []
    if replaced:
        notes.append(f"{replaced} invalid \\u surrogate escape(s) in the metadata replaced by \\ufffd")
    if aside:
        notes.append("metadata set aside with its size: " + ", ".join(aside))
    for note in notes:
        add_note(result, note)
