"""Reference data of the analysis views: kernel classification rules, annotation patterns, step
frame patterns, device peaks, the hints of `report why` and models' shapes.

All live in tables (kernel_rules, annotation_patterns, step_frame_patterns, device_peaks, why_hints,
model_shapes) so that every DuckDB client classifies kernels and finds steps the same way. The packaged files sql/rules/<table>.csv are loaded as source 'builtin'
whenever they change; a user's own CSV file (same header) is loaded as a source named after the
file and is tried before the built-in rows.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

import duckdb

from . import facts, sqlfiles, store
from .errors import TracedbError, reraise_interrupt

BUILTIN = "builtin"


@dataclass(frozen=True)
class RuleKind:
    table: str
    header: tuple[str, ...]
    loader: str  # SQL file under sql/rules that loads a CSV of this kind
    ordered: str  # view listing the rows in the order they are tried
    allowed: dict[str, tuple[str, ...]]  # column -> accepted values
    regex_column: str | None  # column holding RE2 expressions (always, or when match is a regex kind)
    optional: tuple[str, ...] = ()  # trailing columns a file may leave out (files older than them)
    numeric: tuple[str, ...] = ()  # columns holding a peak (a positive number) or nothing; one at least
    sizes: tuple[str, ...] = ()  # columns holding a size (a positive whole number) or nothing


# kernel rules: matches of the kernel name, and of the context a kernel was launched in
NAME_MATCHES = ("prefix", "contains", "regex", "inductor", "fusion")
CONTEXT_MATCHES = ("cpu_op", "collective", "annotation")
REGEX_MATCHES = ("regex", "inductor") + CONTEXT_MATCHES

KINDS = (
    RuleKind("kernel_rules", ("priority", "platform", "match", "pattern", "op", "label", "covers"),
             "rules/load_kernel_rules.sql", "_kernel_rules_ordered",
             {"platform": ("any", "NVIDIA", "AMD"), "match": NAME_MATCHES + CONTEXT_MATCHES}, "pattern",
             optional=("covers",)),
    RuleKind("annotation_patterns",
             ("priority", "role", "format", "regex", "phase", "context_group", "generation_group",
              "number_group"),
             "rules/load_annotation_patterns.sql", "_annotation_patterns_ordered",
             {"role": ("phase", "step"), "phase": ("prefill", "decode", "mixed", "none", "")}, "regex"),
    RuleKind("step_frame_patterns", ("priority", "framework", "regex", "phase"),
             "rules/load_step_frame_patterns.sql", "_step_frame_patterns_ordered",
             {"phase": ("prefill", "decode", "mixed", "none", "")}, "regex"),
    RuleKind("device_peaks",
             ("priority", "regex", "device", "fp32", "tf32", "bf16", "fp16", "fp8", "mem_tbps", "reference"),
             "rules/load_device_peaks.sql", "_device_peaks_ordered", {}, "regex",
             numeric=("fp32", "tf32", "bf16", "fp16", "fp8", "mem_tbps")),
    RuleKind("why_hints", ("priority", "kind", "hint"), "rules/load_why_hints.sql", "_why_hints_ordered", {}, None),
    RuleKind("model_shapes", ("priority", "regex", "model", "hidden", "intermediate", "experts", "top_k", "reference"),
             "rules/load_model_shapes.sql", "_model_shapes_ordered", {}, "regex",
             sizes=("hidden", "intermediate", "experts", "top_k")),
)


def builtin_files() -> list[Path]:
    return [sqlfiles.sql_dir() / "rules" / f"{kind.table}.csv" for kind in KINDS]


def load_builtin(con: duckdb.DuckDBPyConnection) -> None:
    """Replace the built-in rows of every rules table with the packaged files (caller's transaction)."""
    for kind, path in zip(KINDS, builtin_files()):
        store.run_file(con, kind.loader, {"source": BUILTIN, "path": sqlfiles.file_path(path)})
    refresh_regex_rules(con)


refresh_regex_rules = facts.refresh_regex_rules  # the derivation's, which it calls first


def kind_named(table: str) -> RuleKind:
    for k in KINDS:
        if k.table == table:
            return k
    raise TracedbError(f"no rules table {table!r}; tables: {', '.join(k.table for k in KINDS)}")


def kind_of(path: Path, header: list[str], table: str | None = None) -> RuleKind:
    """Which rules table a CSV file is for, from its header (and the table it is meant for, when
    named: kernel-rules or kernel_rules, model-shapes, ...)."""
    given = tuple(h.strip() for h in header)
    wanted = KINDS
    if table is not None:
        wanted = tuple(k for k in KINDS if k.table == table.replace("-", "_"))
        if not wanted:
            names = ", ".join(k.table.replace("_", "-") for k in KINDS)
            raise TracedbError(f"{path}: no rules table {table!r} (one of {names})")
    for k in wanted:
        if given in (k.header, k.header[:len(k.header) - len(k.optional)]):
            return k
    headers = " or ".join(",".join(k.header) for k in wanted)
    raise TracedbError(f"{path}: not a {'rules' if table is None else wanted[0].table} file: the header must be {headers}")


def _read_rows(path: Path) -> list[list[str]]:
    if not path.is_file():
        raise TracedbError(f"{path}: no such rules file")
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:  # a byte-order mark is not in the header
            rows = list(csv.reader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise TracedbError(f"{path}: cannot read rules file: {exc}") from None
    if not rows:
        raise TracedbError(f"{path}: empty rules file")
    return rows


def validate(path: Path, kind: RuleKind, rows: list[list[str]]) -> None:
    """Check every row (header first) before it reaches the table: one line naming the file, line
    and problem."""
    header = [h.strip() for h in rows[0]]
    con = duckdb.connect()
    try:
        for line, row in enumerate(rows[1:], start=2):
            if not any(cell.strip() for cell in row):
                continue
            if len(row) != len(header):
                raise TracedbError(f"{path}: line {line}: {len(row)} fields, expected {len(header)}")
            rec = dict(zip(header, row))
            try:
                int(rec["priority"])
            except ValueError:
                raise TracedbError(f"{path}: line {line}: priority {rec['priority']!r} is not an integer") from None
            for column, accepted in kind.allowed.items():
                if rec[column] not in accepted:
                    shown = ", ".join(a for a in accepted if a)
                    raise TracedbError(f"{path}: line {line}: {column} {rec[column]!r} is not one of {shown}")
            for column in ("op", "label", "format", "framework", "pattern", "regex", "device", "kind", "hint"):
                if column in rec and not rec[column].strip():
                    raise TracedbError(f"{path}: line {line}: {column} is empty")
            for column in kind.numeric:
                try:
                    # a peak is a positive finite number: 0 or 1e400 (infinity) would make every share of it
                    # infinite or undefined
                    if rec[column].strip() and not 0 < float(rec[column]) < math.inf:
                        raise ValueError
                except ValueError:
                    raise TracedbError(f"{path}: line {line}: {column} {rec[column]!r} is not a positive number "
                                       "of TFLOP/s or TB/s (or empty: not published)") from None
            for column in kind.sizes:
                # a size is stored as a BIGINT: one too large for it is refused here, in one line
                if rec[column].strip() and not (rec[column].strip().isdigit() and 0 < int(rec[column]) < 2 ** 63):
                    raise TracedbError(f"{path}: line {line}: {column} {rec[column]!r} is not a positive whole number "
                                       "below 2^63 (or empty: as the trace records it)")
            if kind.numeric and not any(rec[c].strip() for c in kind.numeric):
                raise TracedbError(f"{path}: line {line}: no peak given (one of {', '.join(kind.numeric)} at least)")
            if kind.table == "kernel_rules":
                covers = rec.get("covers", "").strip()
                if rec["match"] in CONTEXT_MATCHES and not covers:
                    raise TracedbError(f"{path}: line {line}: a {rec['match']} rule needs covers: the operation "
                                       "family it refines (e.g. Communication), or * for every kernel")
                if rec["match"] not in CONTEXT_MATCHES and covers:
                    raise TracedbError(f"{path}: line {line}: covers is for context rules (match "
                                       f"{', '.join(CONTEXT_MATCHES)}), not {rec['match']}")
            is_regex = kind.regex_column is not None and (kind.table != "kernel_rules" or rec["match"] in REGEX_MATCHES)
            if is_regex:
                try:
                    con.execute("SELECT regexp_matches('', ?)", [rec[kind.regex_column]])
                except duckdb.Error as exc:
                    reraise_interrupt(exc)
                    msg = " ".join(str(exc).split())
                    raise TracedbError(f"{path}: line {line}: bad regular expression: {msg}") from None
    finally:
        con.close()


def add_file(con: duckdb.DuckDBPyConnection, path: Path, source: str | None = None,
             table: str | None = None) -> tuple[str, str, int]:
    """Load a user's rules file as source `source` (default: the file name), replacing that source,
    and re-derive every trace in the same transaction; table: the rules table it must be for (else
    its header says). Returns (table, source, rows loaded)."""
    path = Path(path)
    rows = _read_rows(path)
    kind = kind_of(path, rows[0], table)
    validate(path, kind, rows)
    source = source or path.name
    if source == BUILTIN:
        raise TracedbError(f"{path}: the source name {BUILTIN!r} is reserved for the packaged rules")
    with store.transaction(con, f"{path}: cannot load rules"):
        store.run_file(con, kind.loader, {"source": source, "path": sqlfiles.file_path(path.resolve())})
        count = con.execute(f"SELECT count(*) FROM {kind.table} WHERE source = ?", [source]).fetchone()[0]
        refresh_regex_rules(con)  # also for a database without traces: the macro follows the table
        facts.derive_all(con)
    return kind.table, source, count


def remove_source(con: duckdb.DuckDBPyConnection, source: str) -> int:
    """Delete a user's rules source from every rules table and re-derive every trace, in one
    transaction; returns the rows removed."""
    if source == BUILTIN:
        raise TracedbError("the built-in rules cannot be removed; add your own to take precedence")
    removed = 0
    with store.transaction(con, f"cannot remove the rules of {source!r}"):
        for k in KINDS:
            removed += con.execute(f"SELECT count(*) FROM {k.table} WHERE source = ?", [source]).fetchone()[0]
            con.execute(f"DELETE FROM {k.table} WHERE source = ?", [source])
        if not removed:
            raise TracedbError(f"no rules from source {source!r} (see: tracedb rules)")
        refresh_regex_rules(con)
        facts.derive_all(con)
    return removed
