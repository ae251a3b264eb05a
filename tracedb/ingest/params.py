"""Run parameters of a trace (trace_params): given with `tracedb load --meta KEY=VALUE`, or read
from the path layout of mlir-aie GEMM runs.

The AIE reports need the GEMM size and tiling to turn cycles into GMAC/s; a run directory such as
``npu1-gemm_512_512_512-4_row_4_col/traces/trace_mm_512_512_512.json`` names them, and --meta
gives or overrides any of them. Keys keep their case: M is the GEMM size, m a tile size.
"""

from __future__ import annotations

import re
from pathlib import Path

import duckdb

from ..errors import TracedbError
from ..reports import key_value

# The keys the reports read, and the type each must have.
KNOWN = {"M": int, "K": int, "N": int, "m": int, "k": int, "n": int, "rows": int, "cols": int,
         "warmup": int, "iterations": int, "clock_ghz": float, "peak_macs": int, "hwid": str,
         "forward_passes": int, "op_mapping": str}

_KEY = r"[A-Za-z_][A-Za-z0-9_.-]*"
_RUN_DIR = re.compile(r"^(?P<hwid>.+)-gemm_(?P<M>\d+)_(?P<K>\d+)_(?P<N>\d+)-(?P<rows>\d+)_row_(?P<cols>\d+)_col$")
_TRACE_FILE = re.compile(r"^trace_mm_(?P<M>\d+)_(?P<K>\d+)_(?P<N>\d+)\.json(\.gz)?$")


def parse_meta(items: list[str] | None) -> dict[str, str]:
    """KEY=VALUE strings to a dict; a malformed item or a known key of the wrong type is an error."""
    out: dict[str, str] = {}
    for item in items or []:
        key, value = key_value(item, "--meta", _KEY)
        kind = KNOWN.get(key)
        if kind is not None:
            try:
                number = kind(value)
            except ValueError:
                raise TracedbError(f"--meta {item!r}: {key} must be {'an integer' if kind is int else 'a number'}") from None
            if kind is not str and number < 0:
                raise TracedbError(f"--meta {item!r}: {key} must not be negative")
        out[key] = value
    return out


def from_path(path: Path) -> dict[str, str]:
    """The parameters the mlir-aie GEMM layout names: <hwid>-gemm_<M>_<K>_<N>-<rows>_row_<cols>_col/
    traces/trace_mm_<M>_<K>_<N>.json (the directory alone is enough; the file name, if it follows the
    layout, must agree with it)."""
    parts = path.resolve().parts
    for depth in (2, 1):  # .../<run>/traces/<file> or .../<run>/<file>
        if len(parts) > depth:
            run = _RUN_DIR.match(parts[-1 - depth])
            if run and (depth == 1 or parts[-2] == "traces"):
                found = run.groupdict()
                named = _TRACE_FILE.match(parts[-1])
                if named and any(named[k] != found[k] for k in ("M", "K", "N")):
                    return {}
                return found
    return {}


def store(con: duckdb.DuckDBPyConnection, trace_id: int, path: Path, meta: dict[str, str] | None) -> None:
    """Record the trace's parameters: --meta first, then what its path names (the caller owns the
    transaction)."""
    meta = meta or {}
    rows = [(trace_id, k, v, "meta") for k, v in meta.items()]
    rows += [(trace_id, k, v, "path") for k, v in from_path(path).items() if k not in meta]
    if rows:
        con.executemany("INSERT INTO trace_params VALUES (?, ?, ?, ?)", rows)
