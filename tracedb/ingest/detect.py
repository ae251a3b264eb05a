"""Telling the input formats apart: a Chrome trace (Kineto, mlir-aie, torch_npu's trace_view.json,
TensorCast) is JSON, an Ascend profiler export is a CSV with a known header (both told by their
content); an op mapping is a .yaml/.yml file, or any file given with --op-mapping (YAML is too
loose to be told from content: any "word: text" line is YAML). The finer kinds of Chrome trace
are told apart after the load has typed their events (sql/ingest/*_finish.sql)."""

from __future__ import annotations

from pathlib import Path

from .ascend_csv import looks_like_csv
from .source import TraceStream

CHROME, ASCEND_CSV, OP_MAPPING = "chrome", "ascend-csv", "op-mapping"
_YAML_SUFFIXES = (".yaml", ".yml", ".yaml.gz", ".yml.gz")


def input_kind(path: Path) -> str:
    """CHROME, ASCEND_CSV or OP_MAPPING; a file that is none of them reads as CHROME, whose reader
    names what is wrong with it."""
    if path.name.lower().endswith(_YAML_SUFFIXES):
        return OP_MAPPING
    stream = TraceStream(path)
    try:
        head = stream.peek_start(8192).lstrip(b"\xef\xbb\xbf \t\r\n")
    finally:
        stream.close()
    if head[:1] in (b"{", b"["):
        return CHROME
    if looks_like_csv(head):
        return ASCEND_CSV
    return CHROME
