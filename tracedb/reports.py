"""Reports: the files sql/reports/<name>.sql, their headers, and running them with bound parameters.

A report is one SELECT preceded by a header that documents it:

    -- Report: ops
    -- Per operation and phase: kernels, total and mean time, share of GPU time, top kernels.
    -- Parameters:
    --   trace  = NULL  trace name or id (NULL: every trace)
    --   limit  = 20    rows per trace
    -- Columns:
    --   trace     text             trace name
    --   total_ns  duration  total  GPU time of the kernels

Parameters are bound as DuckDB prepared-statement parameters ($trace, $limit), never pasted into
the SQL. Column formats: text, count, duration (ns), percent, ratio, bytes, id; `total` marks the
columns summed in the totals row.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from . import db, sqlfiles
from .errors import TracedbError

FORMATS = ("text", "count", "duration", "percent", "ratio", "bytes", "id")
PHASES = ("prefill", "decode", "mixed", "none")


@dataclass
class Column:
    name: str
    format: str
    total: bool
    doc: str


@dataclass
class Param:
    name: str
    default: Any
    doc: str


@dataclass
class Report:
    name: str
    summary: str
    path: Path
    sql: str
    params: dict[str, Param] = field(default_factory=dict)
    columns: dict[str, Column] = field(default_factory=dict)


def reports_dir() -> Path:
    return sqlfiles.sql_dir() / "reports"


def _literal(text: str) -> Any:
    text = text.strip()
    if text.upper() == "NULL":
        return None
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    if len(text) >= 2 and text[0] == text[-1] == "'":
        return text[1:-1]
    raise ValueError(f"default {text!r} is not NULL, an integer or a 'string'")


def parse(path: Path) -> Report:
    """Read a report file and its header; a malformed header names the file and line."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    header: list[tuple[int, str]] = []
    for number, line in enumerate(lines, start=1):
        if not line.startswith("--"):
            break
        header.append((number, line[2:]))
    if not header or not header[0][1].strip().lower().startswith("report:"):
        raise TracedbError(f"{path}: line 1: a report starts with '-- Report: NAME'")
    name = header[0][1].split(":", 1)[1].strip()
    report = Report(name=name, summary="", path=path, sql=text)
    section = "summary"
    summary: list[str] = []
    for number, body in header[1:]:
        stripped = body.strip()
        if stripped.lower() in ("parameters:", "columns:"):
            section = stripped[:-1].lower()
            continue
        if not stripped:
            continue
        try:
            if section == "summary":
                summary.append(stripped)
            elif section == "parameters":
                m = re.match(r"^(\w+)\s*=\s*('[^']*'|\S+)\s*(.*)$", stripped)
                if not m:
                    raise ValueError("expected 'name = default  description'")
                report.params[m.group(1)] = Param(m.group(1), _literal(m.group(2)), m.group(3))
            else:
                m = re.match(r"^(\w+)\s+(\w+)(\s+total)?\s*(.*)$", stripped)
                if not m or m.group(2) not in FORMATS:
                    raise ValueError(f"expected 'column format [total] description', format one of {', '.join(FORMATS)}")
                report.columns[m.group(1)] = Column(m.group(1), m.group(2), bool(m.group(3)), m.group(4))
        except ValueError as exc:
            raise TracedbError(f"{path}: line {number}: {exc}") from None
    report.summary = " ".join(summary)
    return report


def available() -> dict[str, Report]:
    out = {}
    for path in sorted(reports_dir().glob("*.sql")):
        report = parse(path)
        out[report.name] = report
    return out


def get(name: str) -> Report:
    reports = available()
    if name not in reports:
        raise TracedbError(f"no report named {name!r}; reports: {', '.join(reports)}")
    return reports[name]


def bind(report: Report, given: dict[str, Any]) -> dict[str, Any]:
    """The report's parameters: defaults overridden by the given values that are not None."""
    unknown = [k for k, v in given.items() if v is not None and k not in report.params]
    if unknown:
        raise TracedbError(f"report {report.name} takes no {', '.join('--' + u for u in unknown)} "
                           f"(parameters: {', '.join(report.params) or 'none'})")
    values = {name: p.default for name, p in report.params.items()}
    values.update({k: v for k, v in given.items() if v is not None})
    if values.get("phase") is not None and values["phase"] not in PHASES:
        raise TracedbError(f"phase {values['phase']!r} is not one of {', '.join(PHASES)}")
    if values.get("limit") is not None and int(values["limit"]) < 1:
        raise TracedbError("--limit must be at least 1")
    return values


def check_trace(con: duckdb.DuckDBPyConnection, trace: str | None) -> None:
    if trace is None:
        return
    hit = con.execute("SELECT count(*) FROM traces WHERE name = ? OR CAST(trace_id AS VARCHAR) = ?",
                      [trace, trace]).fetchone()[0]
    if not hit:
        raise TracedbError(f"no trace named {trace!r} (see: tracedb ls)")


def run(con: duckdb.DuckDBPyConnection, report: Report, values: dict[str, Any]) -> tuple[list[str], list[tuple]]:
    """Run a report; returns its column names and rows."""
    try:
        cur = con.execute(report.sql, db.used_params(report.sql, values))
    except duckdb.Error as exc:
        raise TracedbError(f"report {report.name}: {' '.join(str(exc).split())}") from None
    return [d[0] for d in cur.description], cur.fetchall()
