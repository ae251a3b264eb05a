"""TensorCast performance-model traces: the sub_kernel_durations arg of composite operators.

TensorCast writes `sub_kernel_durations` as the Python text of a list of (kernel type, duration
in µs) pairs, e.g. "[('BatchMatMulV2', 9.0), ('FusedInferAttentionScore', 55.0)]". It is parsed
here with ast.literal_eval, which reads literals only and never evaluates code, into
tc_sub_kernel_lists (one row per operator with the arg: its text and whether it is valid) and
tc_sub_kernels (one row per pair). The rules are those of TensorCast's comparison script: a value
counts only when it is a non-empty list of 2-item lists or tuples; anything else is kept raw,
flagged malformed with the reason, and the comparison splits the operator's duration evenly over
its kernel types. A pair must also hold a text and a finite number of microseconds that 64-bit
nanoseconds can hold, converted like any trace time (chrome.to_ns); a value the script would fail
on, or we could not store, is flagged instead.
"""

from __future__ import annotations

import ast
import math
from decimal import Decimal

import duckdb
import pyarrow as pa

from .chrome import RejectedEvent, to_ns
from .writer import insert_arrow

MAX_TEXT = 1 << 20  # characters: a longer value is not a list of kernels

LIST_SCHEMA = pa.schema([("trace_id", pa.int32()), ("event_id", pa.int64()), ("raw", pa.string()),
                         ("status", pa.string()), ("problem", pa.string()), ("pairs", pa.int32())])
PAIR_SCHEMA = pa.schema([("trace_id", pa.int32()), ("event_id", pa.int64()), ("position", pa.int32()),
                         ("kernel_type", pa.string()), ("dur_ns", pa.int64())])


def parse_pairs(value) -> tuple[str, str | None, list[tuple[str, int]]]:
    """(status, problem, [(kernel type, dur_ns)]) of one sub_kernel_durations value."""
    if not isinstance(value, str):
        return "malformed", f"not a text but JSON {type(value).__name__}", []
    if value == "":
        return "empty", None, []
    if len(value) > MAX_TEXT:
        return "malformed", f"longer than {MAX_TEXT} characters", []
    try:
        parsed = ast.literal_eval(value)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as exc:
        return "malformed", f"not a Python literal ({type(exc).__name__})", []
    if not isinstance(parsed, list):
        return "malformed", f"a {type(parsed).__name__}, not a list", []
    if not parsed:
        return "empty", None, []
    pairs = []
    for i, item in enumerate(parsed):
        if not (isinstance(item, (list, tuple)) and len(item) == 2):
            return "malformed", f"item {i} is not a (kernel type, duration) pair", []
        name, dur = item
        if not isinstance(name, str):
            return "malformed", f"item {i}: the kernel type is not a text", []
        if isinstance(dur, bool) or not isinstance(dur, (int, float)) or not math.isfinite(dur):
            return "malformed", f"item {i}: the duration is not a finite number", []
        try:  # the shortest decimal text of the number, to the nanosecond, as any trace time
            pairs.append((name, to_ns(dur if isinstance(dur, int) else Decimal(repr(dur)), "duration")))
        except RejectedEvent as exc:
            return "malformed", f"item {i}: {exc}", []
    return "valid", None, pairs


def store_sub_kernels(con: duckdb.DuckDBPyConnection, trace_id: int) -> None:
    """Parse the sub_kernel_durations of every operator of a trace (the caller owns the transaction)."""
    rows = con.execute(
        "SELECT event_id, json_type(args, '$.sub_kernel_durations'), "
        "json_extract_string(args, '$.sub_kernel_durations'), json_extract(args, '$.sub_kernel_durations')::VARCHAR "
        "FROM other_events WHERE trace_id = ? AND ph = 'X' AND json_extract(args, '$.sub_kernel_durations') IS NOT NULL "
        "ORDER BY event_id", [trace_id]).fetchall()
    lists: dict[str, list] = {n: [] for n in LIST_SCHEMA.names}
    pairs: dict[str, list] = {n: [] for n in PAIR_SCHEMA.names}
    for event_id, json_type, value, text in rows:
        # only a JSON string is the script's Python text; any other JSON value is malformed as it is
        status, problem, found = parse_pairs(value) if json_type == "VARCHAR" else (
            "malformed", f"not a text but JSON {json_type.lower()}", [])
        for key, item in zip(LIST_SCHEMA.names, (trace_id, event_id, value if json_type == "VARCHAR" else text,
                                                  status, problem, len(found))):
            lists[key].append(item)
        for position, (name, dur_ns) in enumerate(found):
            for key, item in zip(PAIR_SCHEMA.names, (trace_id, event_id, position, name, dur_ns)):
                pairs[key].append(item)
    for table, cols, schema in (("tc_sub_kernel_lists", lists, LIST_SCHEMA), ("tc_sub_kernels", pairs, PAIR_SCHEMA)):
        insert_arrow(con, table, pa.table(cols, schema=schema))
