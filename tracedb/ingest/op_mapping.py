"""Reading a TensorCast op_mapping.yaml: which profile kernel type each framework operator runs as.

The file is a YAML mapping: `version`, `device`, `cann_version`, ... and the entries, either under
`operator_mappings` or directly at the top level (older files; the comparison script reads them
there), each `"aten.mm.default": {kernel_type: MatMulV2, alternate_kernel_types: [...]}`,
`{zero_cost: true}`, `{kernel_type: hcom_allReduce_, category: communication}`, `{composite: true,
sub_kernels: [...]}`. Entries go to op_mappings; every other top-level key to trace_metadata; an
entry under operator_mappings that is not a mapping to rejected_events with the reason. Mapping
files are small (hundreds of entries): the whole file is parsed at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pyarrow as pa
import yaml

from ..errors import BadTraceFile
from ..jsontext import dumps as json_text
from ..jsontext import replace_lone_surrogates
from .source import TraceStream
from .writer import insert_arrow

MAX_BYTES = 64 << 20
SECTION = "operator_mappings"
ENTRY_SCHEMA = pa.schema([
    ("trace_id", pa.int32()), ("position", pa.int32()), ("section", pa.string()), ("op_name", pa.string()),
    ("kernel_type", pa.string()), ("alternate_kernel_types", pa.list_(pa.string())), ("zero_cost", pa.bool_()),
    ("category", pa.string()), ("composite", pa.bool_()), ("sub_kernels", pa.list_(pa.string())),
    ("entry", pa.string()),
])


@dataclass
class MappingResult:
    entries: list[tuple] = field(default_factory=list)
    rejected: list[tuple] = field(default_factory=list)
    metadata: list[tuple[str, object]] = field(default_factory=list)
    event_count: int = 0
    complete: bool = True
    problem: str | None = None
    device: str | None = None


def _safe(value):
    """A YAML value as JSON can hold it (dates and other scalars as text)."""
    if isinstance(value, dict):
        return {str(k): _safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_safe(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def _texts(value) -> list[str] | None:
    if value is None:
        return None
    items = value if isinstance(value, (list, tuple)) else [value]
    return [str(v) for v in items]


def _text(value) -> str | None:
    # the script uses `entry.get("kernel_type") or op_name`: a false value is no kernel type
    return str(value) if value else None


def _flag(value) -> bool | None:
    # the script tests `bool(entry.get("zero_cost"))`: Python truthiness, "false" included
    return None if value is None else bool(value)


def read(path: Path) -> MappingResult:
    """Parse an op_mapping.yaml (raises BadTraceFile when it is not one)."""
    stream = TraceStream(path)
    try:
        data = stream.read(MAX_BYTES + 1)
        more = stream.read(1)
    finally:
        stream.close()
    if len(data) > MAX_BYTES or more:
        raise BadTraceFile(path, f"larger than {MAX_BYTES >> 20} MiB: not an op mapping")
    try:
        doc = yaml.safe_load(data.decode("utf-8-sig"))
        return _entries(path, doc)
    except RecursionError:
        raise BadTraceFile(path, "YAML nested too deeply, or recursive through an anchor") from None
    except UnicodeDecodeError as exc:
        raise BadTraceFile(path, f"not UTF-8 text: {exc.reason} at byte {exc.start}") from None
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" at line {where.line + 1}, column {where.column + 1}" if where else ""
        raise BadTraceFile(path, f"not valid YAML{at}: {getattr(exc, 'problem', None) or exc}") from None


def _entries(path: Path, doc) -> MappingResult:
    if not isinstance(doc, dict):
        raise BadTraceFile(path, "an op mapping is a YAML mapping of operator names; this file holds "
                                 f"{type(doc).__name__ if doc is not None else 'nothing'}")
    result = MappingResult()
    position = 0
    nested = doc.get(SECTION)
    if nested is not None and not isinstance(nested, dict):
        raise BadTraceFile(path, f"{SECTION} is not a mapping of operator names")
    for section, entries in ((SECTION, nested or {}), ("top", doc)):
        for op_name, entry in entries.items():
            if section == "top" and op_name == SECTION:
                continue
            if isinstance(entry, dict) and _surrogates(op_name, entry):
                result.rejected.append((position, "a string holds an invalid surrogate (U+D800 to U+DFFF alone)",
                                        json_text({str(op_name): _safe(entry)})))
                position += 1
                continue
            if not isinstance(entry, dict):
                if section == SECTION:
                    result.rejected.append((position, "entry is not a mapping",
                                            json_text({str(op_name): _safe(entry)})))
                    position += 1
                continue
            result.entries.append((position, section, str(op_name), _text(entry.get("kernel_type")),
                                   _texts(entry.get("alternate_kernel_types")), _flag(entry.get("zero_cost")),
                                   _text(entry.get("category")), _flag(entry.get("composite")),
                                   _texts(entry.get("sub_kernels")), json_text(_safe(entry))))
            position += 1
    result.metadata = [(str(k), _safe(v)) for k, v in doc.items()
                       if k != SECTION and not isinstance(v, dict)]
    result.event_count = position
    if not position and SECTION not in doc:
        raise BadTraceFile(path, "not an op mapping: no operator entry (a mapping of an operator name to its "
                                 "kernel_type, zero_cost, ...) and no operator_mappings key")
    device = doc.get("device")
    result.device = str(device) if isinstance(device, (str, int, float)) else None
    return result


def _surrogates(*values) -> bool:
    """A string among values holds a lone surrogate (YAML's "\\ud800" escape makes one)."""
    _, where = replace_lone_surrogates(json_text(list(map(_safe, values))).encode("utf-8", "surrogatepass"))
    return bool(where)


def store(con: duckdb.DuckDBPyConnection, trace_id: int, result: MappingResult) -> None:
    """Write a parsed mapping (the caller owns the transaction)."""
    if result.entries:
        columns = list(zip(*result.entries))
        table = pa.table([pa.array([trace_id] * len(result.entries), pa.int32()), *columns], schema=ENTRY_SCHEMA)
        insert_arrow(con, "op_mappings", table, "* EXCLUDE (entry), entry::JSON")
    if result.rejected:
        con.executemany("INSERT INTO rejected_events VALUES (?, ?, ?, ?)",
                        [(trace_id, *row) for row in result.rejected])
    con.execute("UPDATE traces SET format = 'op-mapping', platform = 'Ascend', device_name = ? WHERE trace_id = ?",
                [result.device, trace_id])
