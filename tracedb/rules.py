"""Reference data of the analysis views: kernel classification rules, annotation patterns, step
frame patterns, device peaks and the hints of `report why`.

All live in tables (kernel_rules, annotation_patterns, step_frame_patterns, device_peaks, why_hints) so that every DuckDB
client classifies kernels and finds steps the same way. The packaged files sql/rules/<table>.csv are loaded as source 'builtin'
whenever they change; a user's own CSV file (same header) is loaded as a source named after the
file and is tried before the built-in rows.
"""

from __future__ import annotations

import csv
import hashlib
from dataclasses import dataclass
from pathlib import Path

import duckdb

from . import db, facts, sqlfiles
from .errors import TracedbError, reraise_interrupt
from .sqlfiles import literal

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
    numeric: tuple[str, ...] = ()  # columns holding a number or nothing


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
)


def builtin_files() -> list[Path]:
    return [sqlfiles.sql_dir() / "rules" / f"{kind.table}.csv" for kind in KINDS]


def load_builtin(con: duckdb.DuckDBPyConnection) -> None:
    """Replace the built-in rows of every rules table with the packaged files (caller's transaction)."""
    for kind, path in zip(KINDS, builtin_files()):
        db.run_file(con, kind.loader, {"source": BUILTIN, "path": str(path)})
    refresh_regex_rules(con)


def refresh_regex_rules(con: duckdb.DuckDBPyConnection) -> None:
    """Rewrite the macros _regex_rule_hits and _inductor_rule_hits (sql/modules/classify/kernel_ops.sql),
    _context_rule_hits (sql/modules/classify/kernel_ops_live.sql) and _step_frame_rule_hits
    (sql/modules/steps/phases.sql) with the rules' patterns written out as constants: DuckDB compiles a
    constant pattern once per query, a pattern read from a table once per row, and matching every
    distinct kernel name against every regex rule was most of a load's classification time (the
    context rules' patterns tried per text, most of the rest; the inductor rules' tried per
    Inductor name, a quarter of the operations' time on a compiled diffusion model; the step frame
    patterns tried per frame name, half the phases' time on a 34 MB vLLM trace of 120,000 Python
    frames). Every
    derivation calls it first (tracedb.facts), whatever path the rules took into the table; loading
    rules calls it too, so that the macro a DuckDB shell reads follows the table. The macros are
    written only when their texts differ from the last ones written, told by the digest kept in
    _rule_hits_digest (writing the four took 10 ms of every load)."""
    statements = []
    for match, signature, text in (("regex", "_regex_rule_hits(kernel_name, kernel_platform)", "kernel_name"),
                                   ("inductor", "_inductor_rule_hits(fused_ops, kernel_platform)", "fused_ops")):
        rules = con.execute("SELECT rank, platform, pattern FROM _kernel_rules_ordered WHERE match = ? "
                            "ORDER BY rank", [match]).fetchall()
        statements.append(_hits_macro(
            signature, [f"CASE WHEN {'' if platform == 'any' else f'kernel_platform = {literal(platform)} AND '}"
                        f"regexp_matches({text}, {literal(pattern)}) THEN {int(rank)} END"
                        for rank, platform, pattern in rules]))
    rules = con.execute("SELECT rank, match, pattern FROM _kernel_rules_ordered "
                        "WHERE match IN ('cpu_op', 'collective', 'annotation') ORDER BY rank").fetchall()
    statements.append(_hits_macro(
        "_context_rule_hits(context_kind, context_text)",
        [f"CASE WHEN context_kind = {literal(match)} AND regexp_matches(context_text, {literal(pattern)}) "
         f"THEN {int(rank)} END" for rank, match, pattern in rules]))
    rules = con.execute("SELECT rank, regex FROM _step_frame_patterns_ordered ORDER BY rank").fetchall()
    statements.append(_hits_macro(
        "_step_frame_rule_hits(frame_name)",
        [f"CASE WHEN regexp_matches(frame_name, {literal(regex)}) THEN {int(rank)} END" for rank, regex in rules]))
    digest = hashlib.sha256("\n".join(statements).encode()).hexdigest()
    if con.execute("SELECT _rule_hits_digest()").fetchone()[0] == digest:
        return
    for statement in statements:
        con.execute(statement)
    con.execute(f"CREATE OR REPLACE MACRO _rule_hits_digest() AS '{digest}'")


def _hits_macro(signature: str, hits: list[str]) -> str:
    """A macro giving the ranks of the rules that hit: hits, one CASE per rule, NULL on a miss."""
    body = f"list_filter([{', '.join(hits)}]::INTEGER[], lambda r: r IS NOT NULL)" if hits else "[]::INTEGER[]"
    return f"CREATE OR REPLACE MACRO {signature} AS {body}"


def kind_named(table: str) -> RuleKind:
    for k in KINDS:
        if k.table == table:
            return k
    raise TracedbError(f"no rules table {table!r}; tables: {', '.join(k.table for k in KINDS)}")


def kind_of(path: Path, header: list[str]) -> RuleKind:
    """Which rules table a CSV file is for, from its header."""
    given = tuple(h.strip() for h in header)
    for k in KINDS:
        if given in (k.header, k.header[:len(k.header) - len(k.optional)]):
            return k
    wanted = " or ".join(",".join(k.header) for k in KINDS)
    raise TracedbError(f"{path}: not a rules file: the header must be {wanted}")


def _read_rows(path: Path) -> list[list[str]]:
    if not path.is_file():
        raise TracedbError(f"{path}: no such rules file")
    try:
        with open(path, newline="", encoding="utf-8") as f:
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
                    if rec[column].strip() and float(rec[column]) < 0:
                        raise ValueError
                except ValueError:
                    raise TracedbError(f"{path}: line {line}: {column} {rec[column]!r} is not a number of "
                                       "TFLOP/s or TB/s (or empty: not published)") from None
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


def add_file(con: duckdb.DuckDBPyConnection, path: Path, source: str | None = None) -> tuple[str, str, int]:
    """Load a user's rules file as source `source` (default: the file name), replacing that source,
    and re-derive every trace in the same transaction. Returns (table, source, rows loaded)."""
    path = Path(path)
    rows = _read_rows(path)
    kind = kind_of(path, rows[0])
    validate(path, kind, rows)
    source = source or path.name
    if source == BUILTIN:
        raise TracedbError(f"{path}: the source name {BUILTIN!r} is reserved for the packaged rules")
    with db.transaction(con, f"{path}: cannot load rules"):
        db.run_file(con, kind.loader, {"source": source, "path": str(path.resolve())})
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
    with db.transaction(con, f"cannot remove the rules of {source!r}"):
        for k in KINDS:
            removed += con.execute(f"SELECT count(*) FROM {k.table} WHERE source = ?", [source]).fetchone()[0]
            con.execute(f"DELETE FROM {k.table} WHERE source = ?", [source])
        if not removed:
            raise TracedbError(f"no rules from source {source!r} (see: tracedb rules)")
        refresh_regex_rules(con)
        facts.derive_all(con)
    return removed
