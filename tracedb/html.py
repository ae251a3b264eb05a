"""A report as one self-contained HTML page: its tables, and its charts drawn as inline SVG.

No JavaScript, no fonts or styles from the network: the file opens anywhere, offline, and prints.
A report declares its charts in its header (`-- Chart: op -> a_total_ns,b_total_ns  title`, see
tracedb.reports); tracedb.charts draws each by its kind.
"""

from __future__ import annotations

import datetime as dt
from html import escape
from typing import Any, Sequence

from . import charts, names
from .render import by_trace, column_totals, display, in_unit, lead, shared_units

# Rows of one table a page shows: the rest are counted under it (a page of thousands of rows is
# too large for a browser's full-page capture; csv and json give every row)
MAX_ROWS = 200
# Characters of a kernel name shown in a table cell (the whole name is its title, on hover).
KERNEL_CHARS = 64

STYLE = """
body { font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em; color: #222; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; } h2 { font-size: 1.2em; margin-top: 2em; }
p.meta { color: #666; margin-top: 0; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 13px; }
th, td { padding: 3px 8px; border-bottom: 1px solid #ddd; text-align: left; vertical-align: top; }
td { max-width: 36em; overflow-wrap: break-word; } td span[title] { cursor: help; }
th { background: #f4f4f4; white-space: nowrap; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.total td { font-weight: bold; border-top: 2px solid #999; }
ul.notes { color: #444; } figure { margin: 1em 0; } figcaption { font-weight: 600; margin-bottom: 0.3em; }
svg text { font: 12px system-ui, sans-serif; fill: #222; }
"""


def _table(columns: Sequence[str], rows: Sequence[Sequence[Any]], formats: dict[str, str],
           totals: Sequence[str], notes: Sequence[str]) -> str:
    """A table as a person reads it: each duration, size or percentage column headed by its unit
    (a_total µs) over plain numbers, as the terminal table does; kernel names shortened (the whole
    name on hover)."""
    shown = [c for c in columns if c not in notes]
    at = [columns.index(c) for c in shown]
    names.prepare_columns(columns, rows, formats)
    numeric = {c for c in shown if formats.get(c, "text") not in ("text",)}
    sums = column_totals(columns, rows, totals) if rows and any(c in totals for c in shown) else None
    every = shared_units(columns, list(rows) + ([sums] if sums else []), formats)  # a_ and b_ in one unit
    units = {c: every[i] for c, i in zip(shown, at)}
    total_rows = len(rows)
    rows = rows[:MAX_ROWS]

    def cell(c: str, value: Any) -> str:
        if value is None:
            return ""
        if units[c]:
            return escape(in_unit(value, units[c][1], units[c][2]))
        if formats.get(c) == "kernel" and isinstance(value, str):
            whole = display(c, value, "kernel")
            short = names.short_list(value, KERNEL_CHARS)
            return f'<span title="{escape(whole)}">{escape(short)}</span>' if short != whole else escape(whole)
        return escape(display(c, value, formats.get(c)))

    # each distinct note numbered, and a row with notes marked with their numbers (a finding's next
    # command, a modelled call's assumption): the notes follow the table
    numbered: dict[str, int] = {}
    marks: list[list[int]] = []
    for row in rows:
        mine = [row[columns.index(n)] for n in notes if n in columns and row[columns.index(n)]]
        marks.append([numbered.setdefault(str(v), len(numbered) + 1) for v in mine])
    head = "".join(f"<th>{escape(units[c][0] if units[c] else c)}</th>" for c in shown)
    out = ["<table>", f"<thead><tr>{head}</tr></thead>", "<tbody>"]
    for row, mark in zip(rows, marks):
        sup = f'<sup class="note">{",".join(map(str, dict.fromkeys(mark)))}</sup>' if mark else ""
        cells = "".join(f'<td{" class=num" if c in numeric else ""}>{cell(c, row[i])}{sup if n == 0 else ""}</td>'
                        for n, (c, i) in enumerate(zip(shown, at)))
        out.append(f'<tr{" class=noted" if mark else ""}>{cells}</tr>')
    if sums:
        cells = "".join(f'<td{" class=num" if c in numeric else ""}>'
                        f'{cell(c, sums[i]) if sums[i] is not None else ("total" if n == 0 else "")}</td>'
                        for n, (c, i) in enumerate(zip(shown, at)))
        out.append(f'<tr class="total">{cells}</tr>')
    out.append("</tbody></table>")
    if total_rows > len(rows):
        out.append(f'<p class="meta">The first {len(rows):,} of {total_rows:,} rows (the totals are '
                   'every row\'s); --format csv or json gives them all.</p>')
    if numbered:
        out.append('<ol class="notes">' + "".join(f'<li value="{n}">{escape(text)}</li>' for text, n in numbered.items())
                   + "</ol>")
    return "\n".join(out)


def table(columns: Sequence[str], rows: Sequence[Sequence[Any]], formats: dict[str, str] | None = None,
          totals: Sequence[str] = (), notes: Sequence[str] = (), title: str | None = None) -> str:
    """One table as an HTML fragment (a query result in a notebook)."""
    heading = f"<p><b>{escape(title)}</b></p>" if title else ""
    return heading + (_table(columns, rows, formats or {}, totals, notes) if rows else "<p>(no rows)</p>")


def document(title: str, body: str) -> str:
    """A self-contained HTML document around a body."""
    return "\n".join([f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{escape(title)}</title>",
                      f"<style>{STYLE}</style></head><body>", body, "</body></html>\n"])


def write_table(columns: Sequence[str], rows: Sequence[Sequence[Any]], out, *, title: str | None = None,
                formats: dict[str, str] | None = None, totals: Sequence[str] = (), notes: Sequence[str] = (),
                **_) -> None:
    """One table as a whole page (tracedb ls, sql, schema --format html)."""
    out.write(document(title or "tracedb", table(columns, rows, formats, totals, notes, title)))


def page(report, results: list[tuple[Any, list[str], list[tuple]]], labels: tuple[str, str] | None,
         names: tuple[str, str] | None = None, strips: str = "") -> str:
    """The whole HTML document of a report's sections (results of tracedb.reports.run); labels and
    names: the titles and the names of a comparison's traces A and B; strips: its timeline strips
    (an HTML figure, tracedb.strips), drawn under the title."""
    title = report.name + (f" — A: {labels[0]} vs B: {labels[1]}" if labels else "")
    return document(title, fragment(report, results, labels, names, strips))


def fragment(report, results: list[tuple[Any, list[str], list[tuple]]], labels: tuple[str, str] | None,
             names: tuple[str, str] | None = None, strips: str = "") -> str:
    """A report's title, strips, tables and charts without the document around them (a notebook cell)."""
    title = report.name + (f" — A: {labels[0]} vs B: {labels[1]}" if labels else "")
    parts = [f"<h1>{escape(title)}</h1>",
             f'<p class="meta">{escape(report.summary)}<br>tracedb report, '
             f'{dt.datetime.now().strftime("%Y-%m-%d %H:%M")}</p>']
    if strips:
        parts.append(strips)
    for section, columns, rows in results:
        declared = section.columns
        answer = lead(columns, rows, [c for c in columns if declared.get(c) and declared[c].lead])
        if answer is not None:  # the answer in a sentence, above the section's tables
            parts.append(f'<p class="answer"><b>{escape(answer)}</b></p>')
        keep = [i for i, c in enumerate(columns)
                if not declared.get(c) or not (declared[c].json_only or declared[c].lead)]
        columns, rows = [columns[i] for i in keep], [tuple(r[i] for i in keep) for r in rows]
        if section.name != "main":
            parts.append(f"<h2>{escape(section.name)}</h2><p>{escape(section.summary)}</p>")
        if labels is None and "trace" in columns and rows:
            # one trace at a time, as the text output: a heading, charts and table (and totals) each
            shown, groups = by_trace(columns, rows)
            for trace, group in groups.items():
                parts.append(f"<h3>{escape(str(trace))}</h3>")
                parts += _section_body(section, shown, group, None)
        else:
            parts += _section_body(section, columns, rows, names)
    return "\n".join(parts)


def _section_body(section, columns: list[str], rows: list[tuple], traces: tuple[str, str] | None) -> list[str]:
    """The charts and the table of one section's rows (traces: the names of sides A and B)."""
    formats = {c.name: c.format for c in section.columns.values()}
    parts = []
    for chart in section.charts:
        svg = charts.draw(chart, columns, rows, formats, traces)
        if not svg:
            continue
        groups = len(dict.fromkeys(charts.row_labels(chart, columns, rows))) if chart.by else len(rows)
        shown = f" (the first {charts.MAX_BARS} of {groups} groups)" \
            if chart.kind != "roofline" and groups > charts.MAX_BARS else ""
        parts.append(f"<figure><figcaption>{escape(chart.title + shown)}</figcaption>{svg}</figure>")
    totals = [c.name for c in section.columns.values() if c.total]
    notes = [c.name for c in section.columns.values() if c.note]
    parts.append(_table(columns, rows, formats, totals, notes) if rows else "<p>(no rows)</p>")
    return parts
