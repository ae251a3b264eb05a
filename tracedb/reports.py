"""Reports: the files sql/reports/<name>.sql, their headers, and running them with bound parameters.

One way through, for the command line, the Python API and the dashboard alike:
prepare(name, given) routes a name to its report (an alias's, a list of traces), binds and checks
the given values once and returns a Bound; Bound.run(con) runs it into a results.ReportResult, and
a renderer of tracedb.present shows that (Bound.script() is the same report as a script for a
DuckDB shell).

A report is one SELECT preceded by a header that documents it:

    -- Report: ops
    -- Per operation and phase: kernels, total and mean time, share of GPU time, top kernels.
    -- Parameters:
    --   trace  = NULL  trace name or #id (NULL: every trace)
    --   limit  = 20    rows per trace
    -- Columns:
    --   trace     text             trace name
    --   total_ns  duration  total  GPU time of the kernels

Parameters are bound as DuckDB prepared-statement parameters ($trace, $limit), never pasted into
the SQL. Column formats: text, kernel (kernel names: demangled, and shortened in a terminal
table), count, duration (ns), percent, ratio, bytes, id, number (a plain quantity, its unit
in its name: busbw_gbps). Flags after the format: `total` marks the
columns summed in the totals row, `note` a sentence printed under the table rather than in it,
`lead` the answer in one sentence, taken from the first row that has one and printed above the
table rather than in it (csv and json keep it as a column),
`json` a nested value (a list of structs) shown in JSON output only, `wide` a column a terminal
table or markdown shows only with --wide (csv, json and html always have it).

The other lines of a header, `-- Word: value` (Example, Alias, Alone, Rows, Limit, Computed,
Shared, Strips, Chart, Shown), are the table KEYS below: what each does, and its form. A report may print
several tables: each further SELECT starts with its own header,

    -- Section: summary
    -- What this table shows.
    -- Columns:
    --   status    text   ...

A parameter line may carry the flag `option` after its default (`forward_passes = NULL option  ...`):
the command line then takes it as an option of its own (--forward-passes N) rather than as
-p forward_passes=N; trace, vs, phase and limit are options of every report. A value given for a
parameter must be of its kind: `integer` or `number` after the default (`step = NULL integer  ...`),
or the kind of a numeric default; one line names the parameter otherwise. A report with a `vs`
parameter compares two traces ($trace is A, $vs is B) and needs both, unless its header has an
Alone line. With --limit, a report's totals rows are still its whole result's (the limited
sections run again without it), unless its header has a Limit line.
"""

from __future__ import annotations

import contextlib
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, NoReturn

import duckdb

from . import charts, critical_steps, savings, sqlfiles, store, strips as stripsmod, traces
from .charts import Chart
from .errors import TracedbError, is_damage, reraise_interrupt
from .results import ReportResult, Result

FORMATS = ("text", "kernel", "count", "duration", "percent", "ratio", "bytes", "id", "number")
FLAGS = ("total", "note", "json", "wide", "lead")
PHASES = ("prefill", "decode", "mixed", "none")


@dataclass
class Column:
    name: str
    format: str
    total: bool
    doc: str
    note: bool = False  # a sentence: printed under a table, beside the row's first cell
    json_only: bool = False  # a nested value: JSON output only
    wide: bool = False  # shown in a table or markdown only when asked for (--wide)
    lead: bool = False  # the answer in one sentence, on its first row: printed above the table, not in it


@dataclass
class Param:
    name: str
    default: Any
    doc: str
    option: bool = False  # given on the command line as --NAME (header flag `option`), not -p NAME=...
    kind: str | None = None  # "integer" or "number": what a given value must be (header flag, or the default's type)


# What an alias's condition asks of the traces given: a pattern as --trace and one as --vs
# ('patterns'), or more than two traces or a pattern ('many'); tried in this order.
ALIAS_WHEN = ("patterns", "many")
# --limit all: every row (a report whose default limit folds the rest into a last row lists them all)
ALL_ROWS = 2 ** 62

# What a report may have computed before its SQL runs ("-- Computed: NAME"): a walk SQL does not
# express, registered on the connection as relations of its own by the module tracedb.NAME's
# for_report(con, values) (tracedb.critical_steps: the critical path of each step, critical_steps
# and critical_edges; tracedb.savings: what fixing each part of why saves, why_savings and
# why_together)
COMPUTED = {"critical_steps": critical_steps.for_report, "savings": savings.for_report}

# Parameters every report that has them takes as options of their own on the command line.
COMMON_OPTIONS = ("trace", "vs", "phase", "limit")


@dataclass
class Alias:
    name: str  # the report asked for (compare)
    when: str  # one of ALIAS_WHEN


@dataclass
class Section:
    name: str
    summary: str
    sql: str
    columns: dict[str, Column] = field(default_factory=dict)
    charts: list[Chart] = field(default_factory=list)
    first: bool = False  # shown before the main table (the header says "Shown: first")
    shared: list[str] = field(default_factory=list)  # "-- Shared: VIEW, ...": kept for its traces while it runs


@dataclass
class Report:
    name: str
    path: Path
    params: dict[str, Param] = field(default_factory=dict)
    sections: list[Section] = field(default_factory=list)
    alone: str | None = None  # what the report gives for --trace alone, when it takes --vs too
    examples: list[str] = field(default_factory=list)  # "-- Example: tracedb report ..." lines: run by the tests
    # a header line "Limit: ...": rows past --limit are summed in a last row of the result, whose
    # totals are then the whole result's already (why: the remainder)
    limit_folds: bool = False
    aliases: list[Alias] = field(default_factory=list)  # "-- Alias: NAME when CONDITION" lines
    rows_for: str | None = None  # "-- Rows: ...": the traces it has rows for (None: every trace with kernels)
    strips: str | None = None  # "-- Strips: ...": its HTML draws the timeline strips of its traces
    computed: str | None = None  # "-- Computed: NAME": relations tracedb computes in Python before it runs (COMPUTED)

    def section(self, name: str) -> Section:
        """The section of that name, or a TracedbError listing those there are."""
        for s in self.sections:
            if s.name == name:
                return s
        raise TracedbError(f"report {self.name} has no section {name!r} "
                           f"(sections: {', '.join(s.name for s in self.sections)})")

    @property
    def summary(self) -> str:
        """Summary of the report: that of its first (main) table."""
        return self.sections[0].summary if self.sections else ""

    @property
    def columns(self) -> dict[str, Column]:
        """Columns of the first (main) table."""
        return self.sections[0].columns if self.sections else {}

    @property
    def compares(self) -> bool:
        """True for a report on two traces (it takes --trace A --vs B)."""
        return "vs" in self.params

    @property
    def needs_vs(self) -> bool:
        """True for a comparison that has nothing to say of one trace."""
        return self.compares and self.alone is None


def reports_dir() -> Path:
    return sqlfiles.sql_dir() / "reports"


def _literal(text: str) -> Any:
    text = text.strip()
    if text.upper() == "NULL":
        return None
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    if re.fullmatch(r"-?\d+\.\d+", text):
        return float(text)
    if len(text) >= 2 and text[0] == text[-1] == "'":
        return text[1:-1]
    raise ValueError(f"default {text!r} is not NULL, a number or a 'string'")


def key_value(item: str, option: str, key_pattern: str) -> tuple[str, str]:
    """KEY=VALUE given to a repeatable option (--param, --meta), split and checked: a key matching
    key_pattern and a value that is not empty."""
    key, sep, value = item.partition("=")
    key, value = key.strip(), value.strip()
    if not sep or not re.fullmatch(key_pattern, key) or not value:
        raise TracedbError(f"{option} {item!r}: expected KEY=VALUE, e.g. {option} M=512")
    return key, value


def parse_params(items: list[str] | None) -> dict[str, Any]:
    """--param KEY=VALUE strings to values: integers and decimals as numbers, the rest as text."""
    out: dict[str, Any] = {}
    for item in items or []:
        key, value = key_value(item, "--param", r"\w+")
        if re.fullmatch(r"-?\d+", value):
            out[key] = int(value)
        elif re.fullmatch(r"-?(\d+\.\d*|\.\d+)([eE]-?\d+)?", value):
            out[key] = float(value)
        else:
            out[key] = value
    return out


def _header(lines: list[str], start: int) -> list[tuple[int, str]]:
    """The comment lines from lines[start] on, with their 1-based numbers."""
    header = []
    for index in range(start, len(lines)):
        if not lines[index].startswith("--"):
            break
        header.append((index + 1, lines[index][2:]))
    return header


@dataclass(frozen=True)
class Key:
    """A header line `-- Word: value` of a report: what it does to the report (or to the section
    whose header holds it) and what it means, for this module, docgen's reference page and the
    command line's help alike. A new key is one entry here and its use."""
    apply: Callable[[Report, Section, str], None]  # the value parsed into the report (ValueError: the form)
    doc: str  # what it does
    form: str  # how it is written
    any_section: bool = False  # also in a further section's header (else the report's first only)


def _shown(report: Report, section: Section, value: str) -> None:
    if value.lower() != "first":
        raise ValueError("expected 'Shown: first'")
    section.first = True


def _computed(report: Report, section: Section, value: str) -> None:
    report.computed = (value.split() or [""])[0]
    if report.computed not in COMPUTED:
        raise ValueError(f"expected 'Computed: {' | '.join(COMPUTED)}  what it computes'")


def _shared(report: Report, section: Section, value: str) -> None:
    views = [v.strip() for v in value.split("  ", 1)[0].split(",")]
    if not all(re.fullmatch(r"[a-z_][a-z0-9_]*", v) for v in views):
        raise ValueError("expected 'Shared: VIEW, VIEW  why' (names of views)")
    section.shared = views


def _example(report: Report, section: Section, value: str) -> None:
    if not value.startswith(f"tracedb report {report.name}"):
        raise ValueError(f"an example runs this report: 'Example: tracedb report {report.name} ...'")
    report.examples.append(value)


def _alias(report: Report, section: Section, value: str) -> None:
    m = re.fullmatch(r"([\w-]+)\s+when\s+(\w+)", value)
    if not m or m.group(2) not in ALIAS_WHEN:
        raise ValueError(f"expected 'Alias: REPORT when {' | '.join(ALIAS_WHEN)}'")
    report.aliases.append(Alias(m.group(1), m.group(2)))


def _set(attribute: str, value: Any = None) -> Callable[[Report, Section, str], None]:
    """A key that sets a field of the report: to the line's value, or to value when given."""
    return lambda report, section, text: setattr(report, attribute, text if value is None else value)


KEYS: dict[str, Key] = {
    "example": Key(_example, "how to run it: shown by `tracedb reports` and on the reference page, and run by the "
                   "tests (its golden output); at least one", "Example: tracedb report NAME ..."),
    "alias": Key(_alias, "`tracedb report REPORT` runs this report when given more than two traces or a pattern "
                 "(`when many`), or a pattern as --trace and one as --vs (`when patterns`)",
                 f"Alias: REPORT when {' | '.join(ALIAS_WHEN)}"),
    "alone": Key(_set("alone"), "a comparison (one with a `vs` parameter) also runs on one trace, and says what it "
                 "gives then", "Alone: what it gives for one trace"),
    "rows": Key(_set("rows_for"), "the traces it has rows for, when not every trace with kernels (an example that "
                "gives no rows is allowed then)", "Rows: traces with collective kernels"),
    "limit": Key(_set("limit_folds", True), "its rows past --limit are summed in a last row of their own (its totals "
                 "are then the whole result's)", "Limit: what the last row holds"),
    "computed": Key(_computed, "before its SQL runs, tracedb computes relations SQL cannot: "
                    "`critical_steps` (tracedb.critical_steps: the critical path of each step, registered as "
                    "critical_steps and critical_edges) or `savings` (tracedb.savings: what fixing each part of why "
                    "saves, why_savings and why_together)", f"Computed: {' | '.join(COMPUTED)}  what it computes"),
    "shared": Key(_shared, "views its SQL reads many times (each reading a view plans it again), for its own "
                  "traces alone (trace and vs; every trace when trace is NULL): while it runs, each is computed once "
                  "for those traces into a temporary table of the same name, which its SQL then reads in the "
                  "view's place; a cache, so the SQL pasted into a DuckDB shell gives the same rows",
                  "Shared: VIEW, VIEW  why", any_section=True),
    "strips": Key(_set("strips"), "its HTML page (and a notebook's) draws the timeline strips of its traces "
                  "(tracedb.strips)", "Strips: what they show"),
    "chart": Key(lambda report, section, value: section.charts.append(_chart("Chart: " + value)),
                 "a chart of the section's table in HTML output (its kinds: the reference's chart kinds)",
                 "Chart: LABELS -> VALUES [by COLUMN | KIND]  Title", any_section=True),
    "shown": Key(_shown, "the section's table comes before the main one when the report is shown",
                 "Shown: first", any_section=True),
}


def parse(path: Path) -> Report:
    """Read a report file, its header and its sections; a malformed header names the file and line."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    header = _header(lines, 0)
    if not header or not header[0][1].strip().lower().startswith("report:"):
        raise TracedbError(f"{path}: line 1: a report starts with '-- Report: NAME'")
    name = header[0][1].split(":", 1)[1].strip()
    report = Report(name=name, path=path)
    starts = [0] + [i for i, line in enumerate(lines) if line.lower().startswith("-- section:")]
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(lines)
        head = _header(lines, start)
        title = head[0][1].split(":", 1)[1].strip() if n else "main"
        section = Section(name=title, summary="", sql="\n".join(lines[start:end]))
        section.summary = _parse_header(path, report, section, head[1:], allow_params=(n == 0))
        if not section.columns:
            raise TracedbError(f"{path}: line {start + 1}: section {title!r} has no 'Columns:' block")
        for chart in section.charts:
            unknown = [c for c in chart.labels + chart.values if c not in section.columns]
            if unknown:
                raise TracedbError(f"{path}: section {title!r}: chart {chart.title!r} names no column {unknown[0]!r}")
            wordy = [c for c in chart.values if section.columns[c].format in ("text", "id")]
            if wordy:
                raise TracedbError(f"{path}: section {title!r}: chart {chart.title!r} draws {wordy[0]!r}, "
                                   "which is not a number")
        report.sections.append(section)
    return report


def _parse_header(path: Path, report: Report, section: Section, header: list[tuple[int, str]],
                  allow_params: bool) -> str:
    part = "summary"
    summary: list[str] = []
    for number, body in header:
        stripped = body.strip()
        if stripped.lower() in ("parameters:", "columns:"):
            part = stripped[:-1].lower()
            if part == "parameters" and not allow_params:
                raise TracedbError(f"{path}: line {number}: parameters belong to the report's first header")
            continue
        if not stripped:
            continue
        try:
            if part == "summary":
                word, colon, value = stripped.partition(":")
                key = KEYS.get(word.strip().lower()) if colon else None
                if key is not None and (allow_params or key.any_section):
                    key.apply(report, section, value.strip())
                else:
                    summary.append(stripped)
            elif part == "parameters":
                m = re.match(r"^(\w+)\s*=\s*('[^']*'|\S+)((?:\s+(?:option|integer|number)\b)*)\s*(.*)$", stripped)
                if not m:
                    raise ValueError("expected 'name = default [integer|number] [option]  description'")
                flags, default = m.group(3).split(), _literal(m.group(2))
                kinds = [f for f in flags if f in PARAM_KINDS]
                if len(kinds) > 1:
                    raise ValueError(f"a parameter is one of {' or '.join(PARAM_KINDS)}, not both")
                report.params[m.group(1)] = Param(m.group(1), default, m.group(4),
                                                  option="option" in flags or m.group(1) in COMMON_OPTIONS,
                                                  kind=kinds[0] if kinds else _kind_of(default))
            else:
                m = re.match(r"^(\w+)\s+(\w+)((?:\s+(?:total|note|json|wide|lead)\b)*)\s*(.*)$", stripped)
                if not m or m.group(2) not in FORMATS:
                    raise ValueError(f"expected 'column format [{'|'.join(FLAGS)} ...] description', "
                                     f"format one of {', '.join(FORMATS)}")
                flags = m.group(3).split()
                section.columns[m.group(1)] = Column(m.group(1), m.group(2), "total" in flags, m.group(4),
                                                     note="note" in flags, json_only="json" in flags,
                                                     wide="wide" in flags, lead="lead" in flags)
        except ValueError as exc:
            raise TracedbError(f"{path}: line {number}: {exc}") from None
    return " ".join(summary)


def _chart(line: str) -> Chart:
    """A header's `Chart: LABELS -> VALUES [by COLUMN | KIND]  Title` (ValueError saying the form)."""
    m = re.match(r"^chart:\s*(\w+(?:\+\w+)*)\s*->\s*(\w+(?:,\w+)*)(?:\s+by\s+(\w+))?\s+(.+)$", line, re.I)
    if not m:
        raise ValueError("expected 'Chart: label[+label] -> value[,value] [by COLUMN | KIND]  title', "
                         f"KIND one of {', '.join(charts.KINDS)}")
    kind, title = "bars", m.group(4).strip()
    first, _, rest = title.partition(" ")
    if first.lower() in charts.KINDS and rest.strip():
        kind, title = first.lower(), rest.strip()
    chart = Chart(m.group(1).split("+"), m.group(2).split(","), title, kind, m.group(3))
    wrong = charts.KINDS[kind].check(chart)
    if wrong:
        raise ValueError(wrong)
    return chart


_PARSED: dict[tuple, dict[str, Report]] = {}


def available() -> dict[str, Report]:
    """Every report, its file parsed once per process (again only when a file changed)."""
    paths = sorted(reports_dir().glob("*.sql"))
    key = tuple((str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in paths)
    if key not in _PARSED:
        _PARSED.clear()
        _PARSED[key] = {r.name: r for r in map(parse, paths)}
    return dict(_PARSED[key])


def get(name: str) -> Report:
    reports = available()
    if name not in reports:
        raise TracedbError(f"no report named {name!r}; reports: {', '.join(reports)}")
    return reports[name]


def own_options() -> dict[str, list[Report]]:
    """Parameters some report takes as an option of its own (--forward-passes), beside those every
    report has: each with the reports declaring it."""
    out: dict[str, list[Report]] = {}
    for report in available().values():
        for p in report.params.values():
            if p.option and p.name not in COMMON_OPTIONS:
                out.setdefault(p.name, []).append(report)
    return out


def flag(param: str) -> str:
    """A parameter's option on the command line: forward_passes -> --forward-passes."""
    return "--" + param.replace("_", "-")


def default_text(param: Param) -> str:
    """A parameter's default as a person reads it: 'all' for no trace, phase or limit."""
    if param.default is not None:
        return str(param.default)
    return "all" if param.name in ("trace", "phase", "limit") else "none"


def given_as(report: Report, param: str) -> str:
    """How a parameter is given to the report on the command line: --NAME for an option, else NAME
    (of -p NAME=VALUE)."""
    known = report.params.get(param)
    return flag(param) if param in COMMON_OPTIONS or (known is not None and known.option) else param


PARAM_KINDS = ("integer", "number")


def _kind_of(default: Any) -> str | None:
    """The kind a parameter's default gives it when its line names none."""
    if isinstance(default, bool) or not isinstance(default, (int, float)):
        return None
    return "integer" if isinstance(default, int) else "number"


def _typed(report: Report, name: str, value: Any) -> Any:
    """A given value of its parameter's kind (a whole number for an integer, a number for a
    number), or one line naming the parameter and what it wants."""
    param = report.params[name]
    if param.kind is None:
        return value
    try:
        if isinstance(value, bool):
            raise ValueError
        if param.kind == "number":
            typed = value if isinstance(value, (int, float)) else float(str(value))
        elif isinstance(value, float) and value.is_integer():
            typed = int(value)
        else:
            typed = value if isinstance(value, int) else int(str(value))
        # every quantity a report takes (a duration, a count, a size, a step, a clock) is finite
        # and never negative
        if not math.isfinite(typed) or typed < 0:
            raise ValueError
        return typed
    except (TypeError, ValueError, OverflowError):
        want = "a whole number" if param.kind == "integer" else "a number"
        raise TracedbError(f"report {report.name}: {given_as(report, name)} is {want}, at least 0 (default "
                           f"{default_text(param)}), not {str(value)[:40]!r}") from None


def bind(report: Report, given: dict[str, Any]) -> dict[str, Any]:
    """The report's parameters: defaults overridden by the given values that are not None.
    phase 'all' means every phase."""
    given = dict(given)
    if given.get("phase") == "all":
        given["phase"] = None
    if given.get("limit") == "all":
        given["limit"] = ALL_ROWS
    unknown = [k for k, v in given.items() if v is not None and k not in report.params]
    if unknown:
        hint = " (it reads one trace or all of them)" if unknown == ["vs"] else ""
        listed = ", ".join(f"{given_as(report, n)} (default {default_text(p)})" for n, p in report.params.items())
        raise TracedbError(f"report {report.name} has no parameter {', '.join(given_as(report, u) for u in unknown)}{hint}; "
                           f"its parameters: {listed or 'none'}")
    values = {name: p.default for name, p in report.params.items()}
    values.update({k: _typed(report, k, v) for k, v in given.items() if v is not None})
    if "traces" in report.params:
        if isinstance(values.get("traces"), str):
            values["traces"] = [values["traces"]]
        if not values.get("traces"):
            raise TracedbError(f"report {report.name} takes the traces as --trace A --vs B ... or --trace 'PATTERN'")
        values["traces"] = [str(t) for t in values["traces"]]
    if report.compares and (values.get("trace") is None or (values.get("vs") is None and report.needs_vs)):
        raise TracedbError(f"report {report.name} compares two traces: give --trace A --vs B"
                           + (f" (or --trace A alone: {report.alone})" if report.alone else ""))
    if values.get("phase") is not None and values["phase"] not in PHASES:
        raise TracedbError(f"phase {values['phase']!r} is not one of {', '.join(PHASES)} or all")
    if values.get("limit") is not None and int(values["limit"]) < 1:
        raise TracedbError("--limit must be at least 1")
    return values


def is_pattern(text: str | None) -> bool:
    """A glob pattern of trace names ('h100_*'), as chosen_traces takes them."""
    return isinstance(text, str) and any(c in text for c in "*?[")


def _alias_applies(when: str, trace: str | None, more: list[str]) -> bool:
    if when == "patterns":
        return is_pattern(trace) and len(more) == 1 and is_pattern(more[0])
    return len(more) > 1 or is_pattern(trace)  # many


def aliased(name: str, trace: str | None, more: list[str]) -> str:
    """The report that runs for `tracedb report NAME` given these traces: the one whose header
    says `Alias: NAME when ...` of them, else NAME itself."""
    aliases = [(ALIAS_WHEN.index(a.when), r.name) for r in available().values() for a in r.aliases
               if a.name == name and _alias_applies(a.when, trace, more)]
    return min(aliases)[1] if aliases else name


def route(name: str, trace: str | None, vs, params: dict[str, Any]) -> tuple[str, str | None, str | None, dict]:
    """(report, trace, vs, parameters) for traces given as --trace A --vs B [--vs C ...] or a
    pattern: a report an alias names runs in its place (compare of more than two is compare-many),
    and a report taking a list of traces gets them all as traces; any other report takes one vs."""
    more = [vs] if isinstance(vs, str) else list(vs or [])
    name = aliased(name, trace, more)
    if "traces" in get(name).params:
        if params.get("traces") is None and (trace is not None or more):
            params = {**params, "traces": ([trace] if trace is not None else []) + more}
        return name, None, None, params
    if len(more) > 1:
        raise TracedbError(f"report {name} compares two traces; for more: tracedb report compare --trace A --vs B "
                           "--vs C")
    return name, trace, more[0] if more else None, params


def check_traces(con: duckdb.DuckDBPyConnection, wanted: list[str] | None) -> None:
    """Each name or #id names a trace and each pattern matches one."""
    for want in wanted or []:
        if is_pattern(want):
            if not con.execute("SELECT count(*) FROM chosen_traces([?])", [want]).fetchone()[0]:
                raise TracedbError(f"no trace matches {want!r} (see: tracedb ls)")
        else:
            traces.find(con, want)


def check_phase(con: duckdb.DuckDBPyConnection, trace: Any, phase: str | None) -> None:
    """A TracedbError saying why, when a named trace has no kernel of the phase asked for: the
    phases it has, and, when it has none, that no step told one."""
    if trace is None or phase not in PHASES:  # ('all' is fusion's every phase)
        return
    rows = con.execute("SELECT t.name, list(DISTINCT f.phase ORDER BY f.phase) FROM traces t "
                       "LEFT JOIN kernel_facts f USING (trace_id) WHERE is_trace(t.name, t.trace_id, ?) "
                       "GROUP BY t.name", [trace]).fetchall()
    for name, phases in rows:
        phases = [p for p in phases or [] if p is not None]
        if phase in phases:
            continue
        if not phases:
            raise TracedbError(f"{name}: no kernels, so no phase {phase!r}")
        if phases == ["none"]:
            raise TracedbError(f"{name}: no kernel has phase {phase!r}: no phase was found in this trace (no step "
                               "annotation names one, and its steps' frames, GEMM shapes and graph replays tell "
                               "none; tracedb report phases shows the evidence)")
        raise TracedbError(f"{name}: no kernel has phase {phase!r}; its phases: {', '.join(phases)}")


def check_key(con: duckdb.DuckDBPyConnection, values: dict[str, Any]) -> None:
    """A report ordering traces by a key (trend's -p key=NAME): a TracedbError listing the keys the
    traces have, when none of them has that one (a typo would order by nothing)."""
    key, wanted = values.get("key"), values.get("traces")
    if key is None or "traces" not in values:
        return
    chosen = "SELECT trace_id FROM chosen_traces(?)" if wanted else "SELECT trace_id FROM traces"
    args = [list(wanted)] if wanted else []
    if con.execute(f"SELECT count(*) FROM ({chosen}) c WHERE trace_key(c.trace_id, ?) IS NOT NULL",
                   [*args, key]).fetchone()[0]:
        return
    keys = [k for (k,) in con.execute(
        f"SELECT DISTINCT key FROM (SELECT trace_id, key FROM trace_params UNION ALL "
        f"SELECT trace_id, key FROM trace_metadata) WHERE trace_id IN ({chosen}) ORDER BY key", args).fetchall()]
    raise TracedbError(f"no trace has the key {key!r}; the keys they have: {', '.join(keys) or 'none'}")


def one_trace(con: duckdb.DuckDBPyConnection, report: Report, text: str | None) -> str | None:
    """The trace a report of one trace (or one pair) runs on: a pattern that matches exactly one
    trace gives that trace's name; one that matches several or none is one line naming the
    matches. A report an alias reaches for patterns (compare-pairs) takes the pattern itself."""
    if not is_pattern(text) or any(a.when == "patterns" for a in report.aliases):
        return text
    names = [n for (n,) in con.execute("SELECT trace FROM chosen_traces([?]) ORDER BY trace_id", [text]).fetchall()]
    if len(names) == 1:
        return names[0]
    if not names:
        raise TracedbError(f"no trace matches {text!r} (see: tracedb ls)")
    shown = ", ".join(names[:SHOWN_MATCHES]) + (f" and {len(names) - SHOWN_MATCHES} more"
                                                if len(names) > SHOWN_MATCHES else "")
    raise TracedbError(f"report {report.name} takes one trace as --trace{' and one as --vs' if report.compares else ''}; "
                       f"{text!r} matches {len(names)}: {shown}")


SHOWN_MATCHES = 8  # the traces a pattern's error names at most


def check_trace(con: duckdb.DuckDBPyConnection, trace: str | None) -> None:
    """A name or #id names a trace, a pattern matches one."""
    if trace is None:
        return
    if is_pattern(trace):
        check_traces(con, [trace])
        return
    traces.find(con, trace)


def trace_labels(con: duckdb.DuckDBPyConnection, values: dict[str, Any]) -> tuple[str, str]:
    """Labels of a comparison's traces A and B: name, platform and device (a pattern: itself)."""
    return con.execute("SELECT coalesce(trace_label($a), $a), coalesce(trace_label($b), $b)",
                       {"a": values["trace"], "b": values["vs"]}).fetchone()


def trace_names(con: duckdb.DuckDBPyConnection, values: dict[str, Any]) -> tuple[str, str]:
    """The names of a comparison's traces A and B (a pattern: itself)."""
    return con.execute("SELECT coalesce(trace_name($a), $a), coalesce(trace_name($b), $b)",
                       {"a": values["trace"], "b": values["vs"]}).fetchone()


def sql_literal(value: Any) -> str:
    """A Python value as a DuckDB literal of the type it binds as."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"CAST('{value!r}' AS DOUBLE)"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(sql_literal(v) for v in value) + "]"
    return sqlfiles.literal(str(value))


# A string, a quoted name, a comment, or a $parameter: the parts of SQL text that parameters are
# told apart from.
_SQL_PART = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|--[^\n]*|/\*.*?\*/|\$(\w+)", re.S)


def pasteable(report: Report, values: dict[str, Any], section: str | None = None) -> str:
    """The report's SQL as a script for a DuckDB shell on the database: a SET VARIABLE per
    parameter, then each section's query reading them with getvariable() (prepared-statement
    parameters such as $phase only exist for a program that binds them)."""
    chosen = [s for s in report.sections if section in (None, s.name)]
    used = sorted({m.group(1) for s in chosen for m in _SQL_PART.finditer(s.sql)
                   if m.group(1) and m.group(1) in values})
    lines = [f"-- tracedb report {report.name}: paste into a DuckDB shell on the database (duckdb FILE); "
             "change a SET VARIABLE to run it for other values"]
    if report.computed:
        lines.append(f"-- it reads relations tracedb computes in Python ({report.computed}: tracedb.{report.computed}), "
                     "registered on a connection by tracedb.connect(FILE).report(...)")
    lines += [f'SET VARIABLE "{name}" = {sql_literal(values[name])};' for name in used]

    def param(m: re.Match) -> str:
        name = m.group(1)
        return f"getvariable('{name}')" if name and name in values else m.group(0)

    for s in chosen:
        lines += ["", _SQL_PART.sub(param, s.sql).rstrip().rstrip(";") + ";"]
    return "\n".join(lines)


def run(con: duckdb.DuckDBPyConnection, report: Report, values: dict[str, Any],
        section: str | None = None) -> list[tuple[Section, list[str], list[tuple]]]:
    """Run every section of a report, or the one named; returns each section run with its column
    names and rows."""
    chosen = [s for s in report.sections if section in (None, s.name)]
    with shadowing(con, report, chosen, values):
        compute(con, report, values)
        return [(s, *_execute(con, report, s.sql, values)) for s in chosen]


@contextlib.contextmanager
def shadowing(con: duckdb.DuckDBPyConnection, report: Report, sections: list[Section], values: dict[str, Any]):
    """While a report runs, the views its sections to run share (Shared:) as tables of their rows
    of its traces (trace and vs; every trace when trace is NULL): store.shadowed."""
    views = list(dict.fromkeys(v for s in sections for v in s.shared))
    if not views:
        yield
        return
    stack = contextlib.ExitStack()
    try:  # an error making the tables is the report's (an error of the run below is its own)
        # the traces as the report's SQL finds them: trace and vs each bound alone (a name, a #id
        # or an id), as its $trace and $vs are
        ids = None if values.get("trace") is None else con.execute(
            "SELECT coalesce(list(DISTINCT trace_id), []) FROM traces "
            "WHERE is_trace(name, trace_id, $trace) OR ($vs IS NOT NULL AND is_trace(name, trace_id, $vs))",
            {"trace": values["trace"], "vs": values.get("vs")}).fetchone()[0]
        stack.enter_context(store.shadowed(con, views, ids))
    except duckdb.Error as exc:
        _raise_as_report(report, exc)
    with stack:
        yield


def compute(con: duckdb.DuckDBPyConnection, report: Report, values: dict[str, Any]) -> None:
    """Register on the connection what a report's header says tracedb computes before its SQL runs
    (COMPUTED: the module tracedb.NAME, whose for_report(con, values) takes the report's bound
    parameters), for its parameters' values."""
    if report.computed:
        COMPUTED[report.computed](con, values)


def run_by_limit(con: duckdb.DuckDBPyConnection, report: Report, values: dict[str, Any],
                 limits: list[int], only: str | None = None) -> dict[int, list[tuple[Section, list[str], list[tuple]]]]:
    """run() for each of several limits of a report whose rows past its limit fold into a last
    row (why), in one query a section: the section's SQL joined laterally to the limits, so that
    its work that does not depend on the limit (all of why's but the choice of findings) is done
    once. Returns each limit's sections as run() does (only: the one section to run, if any)."""
    with shadowing(con, report, [s for s in report.sections if only in (None, s.name)], values):
        return _run_by_limit(con, report, values, limits, only)


def _run_by_limit(con: duckdb.DuckDBPyConnection, report: Report, values: dict[str, Any],
                  limits: list[int], only: str | None) -> dict[int, list[tuple[Section, list[str], list[tuple]]]]:
    out: dict[int, list] = {limit: [] for limit in limits}
    compute(con, report, values)
    for section in report.sections:
        if only not in (None, section.name):
            continue
        if "$limit" not in section.sql:
            ran = _execute(con, report, section.sql, values)
            for limit in limits:
                out[limit].append((section, *ran))
            continue

        def by_column(m: re.Match) -> str:
            return "__fit.l" if m.group(1) == "limit" else m.group(0)

        inner = _SQL_PART.sub(by_column, section.sql).rstrip().rstrip(";")
        # the section's own order is kept by numbering its rows as it gives them
        sql = (f"SELECT __fit.l AS __limit, __rows.* FROM unnest($__limits) AS __fit(l), "
               f"LATERAL (SELECT row_number() OVER () AS __row, * FROM ({inner})) AS __rows ORDER BY __limit, __row")
        columns, rows = _execute(con, report, sql, {**values, "__limits": list(limits)})
        for limit in limits:
            out[limit].append((section, columns[2:], [r[2:] for r in rows if r[0] == limit]))
    return out


def _execute(con: duckdb.DuckDBPyConnection, report: Report, sql: str,
             values: dict[str, Any]) -> tuple[list[str], list[tuple]]:
    try:
        cur = con.execute(sql, store.used_params(sql, values))
    except duckdb.Error as exc:
        _raise_as_report(report, exc)
    return [d[0] for d in cur.description], cur.fetchall()


def _raise_as_report(report: Report, exc: duckdb.Error) -> NoReturn:
    reraise_interrupt(exc)
    if is_damage(exc):  # the database's fault, not the report's: said with its name
        raise exc
    # error() in a report's SQL raises Invalid Input: its message is meant for the user as is
    message = " ".join(str(exc).split()).removeprefix("Invalid Input Error: ")
    raise TracedbError(f"report {report.name}: {message}") from None


# -- One way through: a report's name and what was given become a Bound (routed, bound, checked
# once), a Bound runs on a connection into a ReportResult, and a renderer of tracedb.present shows
# that. The command line, the Python API and the dashboard all go this way.

STRIP_TRACES = 4  # traces a report on every trace draws strips of, at most


def own_words(report: Report, words: list[str]) -> dict[str, Any]:
    """The report's own options among words a command line did not know (--forward-passes 2 or
    --forward-passes=2), by its header; any other word is one line naming it."""
    wanted = {flag(p.name): p.name for p in report.params.values() if p.option and p.name not in COMMON_OPTIONS}
    out, words = {}, list(words)
    while words:
        word = words.pop(0)
        option, eq, value = word.partition("=")
        if option not in wanted:
            known = f"; its own options: {', '.join(wanted)}" if wanted else ""
            raise TracedbError(f"report {report.name}: no option {option!r}{known} (see: tracedb report --help)")
        if eq and not value:
            raise TracedbError(f"report {report.name}: {option} needs a value")
        if not eq:
            if not words or (words[0].startswith("--") and words[0] not in ("--",)):
                raise TracedbError(f"report {report.name}: {option} needs a value")
            value = words.pop(0)
        out[wanted[option]] = value
    return parse_params([f"{k}={v}" for k, v in out.items()])


def prepare(name: str, given: dict[str, Any], *, params: dict[str, Any] | None = None,
            words: list[str] | None = None, section: str | None = None) -> "Bound":
    """The report to run for `name` and what was given, routed (an alias's report, a list of
    traces), bound to its parameters and checked, once. given: options by name (trace, vs, phase,
    limit and any parameter); params: the command line's -p KEY=VALUE, which may not name an
    option; words: the command line's words it did not know, the report's own options."""
    given = dict(given)
    trace, vs = given.pop("trace", None), given.pop("vs", None)
    name, trace, vs, routed = route(name, trace, vs, {**given, **(params or {})})
    report = get(name)
    own = own_words(report, words or [])
    clash = [k for k in params or {} if k in COMMON_OPTIONS or k in own
             or (k in report.params and report.params[k].option)]
    if clash:
        raise TracedbError(f"--param {clash[0]}=...: use {flag(clash[0])} instead")
    if section is not None:
        report.section(section)  # one that exists
    values = bind(report, {"trace": trace, "vs": vs, **routed, **own})
    return Bound(report, values, section, given.get("limit"))


@dataclass
class Bound:
    """A report with its parameters bound and checked: what runs on a connection."""

    report: Report
    values: dict[str, Any]
    section: str | None = None  # the one section asked for (None: every one)
    given_limit: Any = None  # --limit as given (None: the report's own, and a table shows its first rows)

    def script(self) -> str:
        """The report's SQL as a script for a DuckDB shell (pasteable): what --show-sql prints."""
        return pasteable(self.report, self.values, self.section)

    def on(self, con: duckdb.DuckDBPyConnection) -> "Bound":
        """The Bound with a pattern naming one trace replaced by that trace's name, once every
        trace it names is found in the database (one line naming what is not)."""
        report, values = self.report, dict(self.values)
        if "trace" in values:
            values["trace"] = one_trace(con, report, values["trace"])
        if "vs" in values:
            values["vs"] = one_trace(con, report, values["vs"])
        check_trace(con, values.get("trace"))
        check_trace(con, values.get("vs"))
        check_traces(con, values.get("traces"))
        check_key(con, values)
        if report.compares:  # a comparison of no rows would not say which side lacks the phase
            for named in (values.get("trace"), values.get("vs")):
                check_phase(con, named, values.get("phase"))
        return Bound(report, values, self.section, self.given_limit)

    @property
    def two(self) -> bool:
        return self.report.compares and self.values.get("vs") is not None

    def run(self, con: duckdb.DuckDBPyConnection) -> ReportResult:
        """Run the report on a connection: its ReportResult."""
        bound = self.on(con)
        return bound._result(con, run(con, bound.report, bound.values, self.section), self.given_limit)

    def run_by_limit(self, con: duckdb.DuckDBPyConnection, limits: list[int]) -> dict[int, ReportResult]:
        """A report whose rows past its limit fold into a last row (why), for each of several
        limits at the cost of about one run: {limit: its ReportResult}, each as a run without
        --limit gives it (the report's own limit being that one)."""
        if not self.report.limit_folds:
            raise TracedbError(f"report {self.report.name}: its rows past --limit are not summed in a last row; "
                               "run it once per limit")
        bound = self.on(con)
        bound.values["limit"] = max(limits)
        return {n: Bound(bound.report, {**bound.values, "limit": n}, bound.section)._result(con, results, None)
                for n, results in run_by_limit(con, bound.report, bound.values, list(limits), self.section).items()}

    def _result(self, con: duckdb.DuckDBPyConnection, results: list[tuple[Section, list[str], list[tuple]]],
                given_limit: Any) -> ReportResult:
        """The ReportResult of the sections' rows, titled as the command line titles them."""
        report, values = self.report, self.values
        trace, phase, two = values.get("trace"), values.get("phase"), self.two
        labels = trace_labels(con, values) if two else None
        names = trace_names(con, values) if two else None
        # With --limit, the totals are still the whole result's: the limited sections run again
        # without it, and their totals rows sum every row (a limit no result reaches, rather than
        # NULL: some reports default to a limit of their own).
        limit = values.get("limit")
        limited = limit is not None and not report.limit_folds and any(
            "$limit" in sec.sql and len(rows) >= limit for sec, _, rows in results)
        every = {sec.name: rows for sec, _, rows in run(con, report, {**values, "limit": ALL_ROWS}, self.section)
                 if "$limit" in sec.sql} if limited else {}
        out = {}
        for sec, columns, rows in results:
            if self.section not in (None, sec.name):
                continue
            out[sec.name] = section_result(report, sec, columns, rows, labels)
            if given_limit is not None and "$limit" not in sec.sql:
                out[sec.name].title += " (every row: --limit is for the main table)"
            if len(every.get(sec.name, rows)) > len(rows):
                out[sec.name].total_rows = every[sec.name]
            if not rows and sec.name == "main" and trace is not None and not two:
                # an empty answer for a trace the user named says why
                out[sec.name].title = (f"{report.name}: no rows for {trace}: the report has rows for "
                                       f"{report.rows_for or 'traces with kernels'}"
                                       f"{f' in phase {phase}' if phase else ''}, and {trace} is not one")
        leading = [s.name for s in report.sections if s.first and s.name in out]
        out = {name: out[name] for name in leading + [n for n in out if n not in leading]}
        return ReportResult(report, out, values, labels, names, bounded=given_limit is None)

    def strips(self, con: duckdb.DuckDBPyConnection, result: ReportResult) -> str:
        """The timeline strips of a report's traces as an HTML figure: A and B, the trace asked
        for, or the first STRIP_TRACES traces of its rows."""
        values = result.params
        compare = values.get("trace") is not None and values.get("vs") is not None
        if compare:
            wanted = [values["trace"], values["vs"]]
        elif values.get("trace") is not None:
            wanted = [values["trace"]]
        else:
            main = result.main
            at = main.columns.index("trace") if "trace" in main.columns else None
            wanted = list(dict.fromkeys(r[at] for r in main.rows))[:STRIP_TRACES] if at is not None else []
        if not wanted:
            return ""
        return stripsmod.figure(con, [str(w) for w in wanted], step=values.get("step"), phase=values.get("phase"),
                             min_gap_us=values.get("min_gap_us") or 20, compare=compare)


def section_result(report: Report, section: Section, columns: list[str], rows: list[tuple],
                   labels: tuple[str, str] | None) -> Result:
    """A report section's rows as a Result, titled as the command line titles it."""
    title = report.name if section.name == "main" else f"{report.name} · {section.name}"
    # a section that leads with its answer (a lead column) needs no summary above its table
    answered = any(c.lead for c in section.columns.values())
    title += f" — A: {labels[0]}  vs  B: {labels[1]}" if labels else "" if answered else f": {section.summary}"
    cols = section.columns
    return Result(columns, rows, formats={c.name: c.format for c in cols.values()},
                  totals=[c.name for c in cols.values() if c.total],
                  notes=[c.name for c in cols.values() if c.note], title=title,
                  wide=[c.name for c in cols.values() if c.wide],
                  json_only=[c.name for c in cols.values() if c.json_only],
                  lead=[c.name for c in cols.values() if c.lead and c.name in columns])
