"""Presentation in one place: the registry RENDERERS says, for each output format, how one table
is written and how a whole report is, for the command line, the Python API and a notebook alike
(tracedb report NAME and print(db.report(NAME)) print the same text). A report is shown one table
per trace (titled with it), a terminal table bounded to its first TERMINAL_ROWS rows with a totals
row over every row; json of several sections is one object keyed by section, html one page.
Charts are tracedb.charts' kinds, drawn by the html renderer. Each renderer says what its format
can do (one table a file, figures, a terminal's screen, nested sections): the command line and the
API ask it, and never which format it is, so that a new format is one entry of RENDERERS."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence, TextIO

from . import html, render
from .render import Format, by_trace, to_json

# Rows of one table a terminal shows when no --limit is given; the rest are counted, not printed
# (printing 100,000 rows would take longer than the query that found them).
TERMINAL_ROWS = 40


def _json_report(result: Any, out: TextIO, wide: bool, bounded: bool) -> bool:
    """Several sections as one object keyed by section (one section: its rows, as a table's)."""
    if len(result.sections) == 1:
        return False
    out.write(to_json({name: r.records() for name, r in result.sections.items()}) + "\n")
    return True


def _html_report(result: Any, out: TextIO, wide: bool, bounded: bool) -> bool:
    out.write(result.to_html())
    return True


@dataclass(frozen=True)
class Renderer:
    """What a format can do; the code outside this module asks these, never which format it is."""
    table: Callable[..., None]  # writes one table: (columns, rows, out, title=, formats=, totals=, notes=, ...)
    # writes a whole report and returns True, or returns False: the report is written table by table
    report: Callable[[Any, TextIO, bool, bool], bool] | None
    for_people: bool  # values humanised; --wide columns left out unless asked
    nested: bool  # keeps nested (json-only) columns, and a report's sections as one nested object
    one_table: bool = False  # a file holds one table: a report of several is a file (or a stream) each
    figures: bool = False  # draws figures: a report's charts and timeline strips
    screen: bool = False  # drawn for a terminal: bounded to a screen, a list where a table would cut


RENDERERS: dict[Format, Renderer] = {
    Format.table: Renderer(render.write_table, None, for_people=True, nested=False, screen=True),
    Format.markdown: Renderer(render.write_markdown, None, for_people=True, nested=False),
    Format.csv: Renderer(render.write_csv, None, for_people=False, nested=False, one_table=True),
    Format.json: Renderer(render.write_json, _json_report, for_people=False, nested=True),
    Format.html: Renderer(html.write_table, _html_report, for_people=False, nested=False, figures=True),
}


def renderer(fmt: Format | str) -> Renderer:
    return RENDERERS[Format(fmt)]


def write(columns: Sequence[str], rows: Sequence[Sequence[Any]], fmt: Format | str, out: TextIO, **how) -> None:
    """One table in a format (how: title, formats, totals, notes, total_rows, total_label, wide)."""
    renderer(fmt).table(columns, rows, out, **how)


def table_html(columns, rows, formats, totals, notes, title) -> str:
    """One table as an HTML fragment (a query result in a notebook)."""
    return html.table(columns, rows, formats, totals, notes, title)


def report_html(report, sections, labels, names, strips: str, page: bool = True) -> str:
    """A report as one self-contained HTML page (page) or a fragment of one (a notebook's cell)."""
    return (html.page if page else html.fragment)(report, sections, labels, names, strips)


def print_report(result: Any, fmt: Format, out: TextIO, wide: bool = False, bounded: bool = False) -> None:
    """Write a report (a results.ReportResult: its sections, labels and html) in a format: as a
    whole where the format says so, else each section, a single trace's table per trace."""
    fmt = Format(fmt)
    whole = RENDERERS[fmt].report
    if whole is not None and whole(result, out, wide, bounded):
        return
    for r in result.sections.values():
        _section(r.shown(fmt, wide), fmt, out, bounded and RENDERERS[fmt].screen, by_side=result.labels is None,
                 wide=wide)


def _section(r: Any, fmt: Format, out: TextIO, bounded: bool, by_side: bool, wide: bool = False) -> None:
    """One section (a results.Result), a table per trace when its rows span several."""
    if not RENDERERS[fmt].for_people or not by_side or "trace" not in r.columns or not r.rows:
        _bounded(r.columns, r.rows, fmt, out, r.title, r.formats, r.totals, r.notes, bounded, wide, r.total_rows,
                 r.answer)
        return
    shown, groups = by_trace(r.columns, r.rows)
    every = by_trace(r.columns, r.total_rows)[1] if r.total_rows is not None else {}
    title = r.title.split(": ", 1)[0]  # the report and section; the trace replaces the summary
    for trace_name, group in groups.items():
        _bounded(shown, group, fmt, out, f"{title} — {trace_name}", r.formats, r.totals, r.notes, bounded, wide,
                 every.get(trace_name), r.answer)


def _bounded(columns, rows, fmt: Format, out: TextIO, title, formats, totals, notes, bounded: bool,
             wide: bool = False, every: list | None = None, lead: str | None = None) -> None:
    """Render rows, the first TERMINAL_ROWS when bounded; the totals row sums every row (every:
    all the rows of the result, when --limit showed fewer) and says how many when some are hidden."""
    every = rows if every is None or len(every) <= len(rows) else every
    if not bounded or len(rows) <= TERMINAL_ROWS:
        label = "total" if len(every) == len(rows) else f"total of {len(every):,}, {len(rows):,} shown"
        write(columns, rows, fmt, out, title=title, formats=formats, totals=totals, notes=notes, wide=wide,
              total_rows=every, total_label=label, lead=lead)
        return
    write(columns, rows[:TERMINAL_ROWS], fmt, out, title=title, formats=formats, totals=totals, notes=notes,
          total_rows=every, total_label=f"total of {len(every):,}, {TERMINAL_ROWS} shown", wide=wide, lead=lead)
    out.write(f"  {len(rows) - TERMINAL_ROWS:,} more rows not shown: --limit N shows N, "
              "--format csv or json all of them\n\n")
