"""How a report is shown, in one place for the command line, the Python API and a notebook: one
table per trace (titled with it), a terminal table bounded to its first TERMINAL_ROWS rows with a
totals row over every row, json of several sections as one object keyed by section, html as one
page. tracedb report NAME and print(db.report(NAME)) print the same text."""

from __future__ import annotations

from typing import Any, TextIO

from .render import Format, by_trace, render, to_json

# Rows of one table a terminal shows when no --limit is given; the rest are counted, not printed
# (printing 100,000 rows would take longer than the query that found them).
TERMINAL_ROWS = 40


def print_report(result: Any, fmt: Format, out: TextIO, wide: bool = False, bounded: bool = False) -> None:
    """Write a report (an api.ReportResult: its sections, labels and html) in a format: each
    section, a comparison's whole, a single trace's table per trace."""
    fmt = Format(fmt)
    if fmt is Format.html:
        out.write(result.to_html())
        return
    if fmt is Format.json and len(result.sections) > 1:
        out.write(to_json({name: r.records() for name, r in result.sections.items()}) + "\n")
        return
    for r in result.sections.values():
        _section(r.shown(fmt, wide), fmt, out, bounded and fmt is Format.table, by_side=result.labels is None,
                 wide=wide)


def _section(r: Any, fmt: Format, out: TextIO, bounded: bool, by_side: bool, wide: bool = False) -> None:
    """One section (an api.Result), a table per trace when its rows span several."""
    if fmt in (Format.csv, Format.json) or not by_side or "trace" not in r.columns or not r.rows:
        _bounded(r.columns, r.rows, fmt, out, r.title, r.formats, r.totals, r.notes, bounded, wide, r.total_rows)
        return
    shown, groups = by_trace(r.columns, r.rows)
    every = by_trace(r.columns, r.total_rows)[1] if r.total_rows is not None else {}
    title = r.title.split(": ", 1)[0]  # the report and section; the trace replaces the summary
    for trace_name, group in groups.items():
        _bounded(shown, group, fmt, out, f"{title} — {trace_name}", r.formats, r.totals, r.notes, bounded, wide,
                 every.get(trace_name))


def _bounded(columns, rows, fmt: Format, out: TextIO, title, formats, totals, notes, bounded: bool,
             wide: bool = False, every: list | None = None) -> None:
    """Render rows, the first TERMINAL_ROWS when bounded; the totals row sums every row (every:
    all the rows of the result, when --limit showed fewer) and says how many when some are hidden."""
    every = rows if every is None or len(every) <= len(rows) else every
    if not bounded or len(rows) <= TERMINAL_ROWS:
        label = "total" if len(every) == len(rows) else f"total of {len(every):,}, {len(rows):,} shown"
        render(columns, rows, fmt, title=title, out=out, formats=formats, totals=totals, notes=notes, wide=wide,
               total_rows=every, total_label=label)
        return
    render(columns, rows[:TERMINAL_ROWS], fmt, title=title, out=out, formats=formats, totals=totals, notes=notes,
           total_rows=every, total_label=f"total of {len(every):,}, {TERMINAL_ROWS} shown", wide=wide)
    out.write(f"  {len(rows) - TERMINAL_ROWS:,} more rows not shown: --limit N shows N, "
              "--format csv or json all of them\n\n")
