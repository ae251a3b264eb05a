"""A report as one self-contained HTML page: its tables, and its charts drawn as inline SVG.

No JavaScript, no fonts or styles from the network: the file opens anywhere, offline, and prints.
A report declares its charts in its header (`-- Chart: op -> a_total_ns,b_total_ns  title`, see
tracedb.reports); each is a horizontal bar chart, one row per table row (the report's order, at
most MAX_BARS), one bar per value column, values formatted like the table's, negative values
(gaps) to the left of the zero line; a stacked chart draws one bar per row, its values end to end.
"""

from __future__ import annotations

import datetime as dt
from html import escape
from typing import Any, Sequence

from . import names
from .render import by_trace, column_totals, display, in_unit, shared_units

MAX_BARS = 40
# Rows of one table a page shows: the rest are counted under it (a page of thousands of rows is
# too large for a browser's full-page capture; csv and json give every row)
MAX_ROWS = 200
# Characters of a kernel name shown in a table cell (the whole name is its title, on hover).
KERNEL_CHARS = 64
COLORS = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948")
ROW_H, BAR_GAP, LABEL_W, PLOT_W, VALUE_W = 22, 4, 260, 520, 110

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


def _label_room(labels: Sequence[str]) -> tuple[int, int]:
    """The width of a chart's label column and the characters a label keeps in it: as wide as the
    longest label needs (7 px a character at 12 px), between LABEL_W / 2 and 420 px, so that no
    label is clipped at the left edge."""
    chars = min(max((len(str(x)) for x in labels), default=1), 58)
    return max(LABEL_W // 2, chars * 7 + 14), chars


def _short(text: str, n: int = 40) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def legend_name(column: str, traces: tuple[str, str] | None) -> str:
    """What a chart calls a value column: a_total_ns of a comparison is "h100: total" (the trace's
    name, not its side), and no unit suffix (the values say their unit)."""
    words = column[:-3] if column.endswith("_ns") else column
    if traces and (words[:2] in ("a_", "b_") or words in ("a", "b")):
        trace = traces[0] if words[0] == "a" else traces[1]
        return f"{trace}: {words[2:].replace('_', ' ')}" if words[2:] else trace
    return words.replace("_", " ")


def bar_chart(title: str, labels: Sequence[str], series: dict[str, Sequence[float | None]],
              formats: dict[str, str], legend: dict[str, str] | None = None) -> str:
    """An SVG horizontal bar chart: one group of bars per label, one bar per series (named in the
    legend by legend[series], else by the series itself)."""
    legend = legend or {}
    labels = list(labels)[:MAX_BARS]
    label_w, chars = _label_room(labels)
    names = list(series)
    values = {n: [float(v) if v is not None else 0.0 for v in list(series[n])[: len(labels)]] for n in names}
    everything = [v for n in names for v in values[n]] or [0.0]
    low, high = min(0.0, *everything), max(0.0, *everything)
    span = (high - low) or 1.0
    zero_x = label_w + (0 - low) / span * PLOT_W
    group_h = len(names) * ROW_H + BAR_GAP * 2
    legend_h = 24 if len(names) > 1 else 0
    height = legend_h + len(labels) * group_h + 10
    width = label_w + PLOT_W + VALUE_W
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">']
    for i, name in enumerate(names if len(names) > 1 else []):
        x = label_w + i * 260
        out.append(f'<rect x="{x}" y="4" width="12" height="12" fill="{COLORS[i % len(COLORS)]}"/>'
                   f'<text x="{x + 16}" y="14">{escape(legend.get(name, name))}</text>')
    for row, label in enumerate(labels):
        top = legend_h + row * group_h + BAR_GAP
        out.append(f'<text x="{label_w - 6}" y="{top + group_h / 2 + 4:.1f}" text-anchor="end">'
                   f'<title>{escape(label)}</title>{escape(_short(label, chars))}</text>')
        for i, name in enumerate(names):
            given = list(series[name])[row] if row < len(series[name]) else None
            v = values[name][row] if row < len(values[name]) else 0.0
            x0, x1 = sorted((zero_x, label_w + (v - low) / span * PLOT_W))
            y = top + i * ROW_H
            if given is None:  # no value: no bar, and said so
                out.append(f'<text x="{label_w + PLOT_W + 6}" y="{y + ROW_H - 8}">–</text>')
                continue
            text = display(name, v, formats.get(name))
            out.append(f'<rect x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 0.5):.1f}" height="{ROW_H - 4}" '
                       f'fill="{COLORS[i % len(COLORS)]}"><title>{escape(label)} · {escape(legend.get(name, name))}: '
                       f'{escape(text)}</title></rect>'
                       f'<text x="{label_w + PLOT_W + 6}" y="{y + ROW_H - 8}">{escape(text)}</text>')
    out.append(f'<line x1="{zero_x:.1f}" y1="{legend_h}" x2="{zero_x:.1f}" y2="{height - 6}" stroke="#888"/>')
    out.append("</svg>")
    return "\n".join(out)


def stacked_chart(title: str, labels: Sequence[str], series: dict[str, Sequence[float | None]],
                  formats: dict[str, str], legend: dict[str, str] | None = None) -> str:
    """An SVG chart of one horizontal bar per label whose parts (one per series, in order) lie end
    to end, the whole bar's total written beside it: the parts of a step's wall-clock time."""
    legend = legend or {}
    labels = list(labels)[:MAX_BARS]
    label_w, chars = _label_room(labels)
    names = list(series)
    values = {n: [max(float(v), 0.0) if v is not None else 0.0 for v in list(series[n])[: len(labels)]]
              for n in names}
    totals = [sum(values[n][row] for n in names) for row in range(len(labels))]
    scale = PLOT_W / (max(totals, default=0.0) or 1.0)
    legend_h = 24
    height = legend_h + len(labels) * ROW_H + 10
    width = label_w + PLOT_W + VALUE_W
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">']
    for i, name in enumerate(names):
        x = label_w + i * 150
        out.append(f'<rect x="{x}" y="4" width="12" height="12" fill="{COLORS[i % len(COLORS)]}"/>'
                   f'<text x="{x + 16}" y="14">{escape(legend.get(name, name))}</text>')
    unit_of = next(iter(names), "")
    for row, label in enumerate(labels):
        y = legend_h + row * ROW_H
        out.append(f'<text x="{label_w - 6}" y="{y + ROW_H - 8}" text-anchor="end">'
                   f'<title>{escape(label)}</title>{escape(_short(label, chars))}</text>')
        x = float(label_w)
        for i, name in enumerate(names):
            w = values[name][row] * scale
            if w > 0:
                text = display(name, values[name][row], formats.get(name))
                out.append(f'<rect x="{x:.1f}" y="{y}" width="{max(w, 0.5):.1f}" height="{ROW_H - 4}" '
                           f'fill="{COLORS[i % len(COLORS)]}"><title>{escape(label)} · '
                           f'{escape(legend.get(name, name))}: {escape(text)}</title></rect>')
            x += w
        total = display(unit_of, totals[row], formats.get(unit_of))
        out.append(f'<text x="{label_w + PLOT_W + 6}" y="{y + ROW_H - 8}">{escape(total)}</text>')
    out.append("</svg>")
    return "\n".join(out)


def roofline_chart(title: str, labels: Sequence[str], points: Sequence[tuple[float | None, float | None]],
                   roofs: Sequence[tuple[float, float]], groups: Sequence[str] | None = None) -> str:
    """An SVG log-log roofline: a point per row at (FLOP per byte, achieved TFLOP/s), titled by its
    label (and group, a colour per group), under each roof min(peak TFLOP/s, FLOP per byte × peak
    TB/s) given as (peak_tflops, peak_tbps)."""
    import math

    width, height, left, bottom, top, right = 760, 440, 70, 50, 20, 160
    shown = [(lab, x, y, g) for lab, (x, y), g in zip(labels, points, groups or [""] * len(labels))
             if x and y and x > 0 and y > 0]
    roofs = sorted({(float(t), float(b)) for t, b in roofs if t and b and t > 0 and b > 0})
    if not shown and not roofs:
        return ""
    xs = [x for _, x, _, _ in shown] + [t / b for t, b in roofs]
    ys = [y for _, _, y, _ in shown] + [t for t, _ in roofs]
    x_lo, x_hi = math.floor(math.log10(min(xs) / 2)), math.ceil(math.log10(max(xs) * 2))
    y_lo, y_hi = math.floor(math.log10(min(ys) / 2)), math.ceil(math.log10(max(ys) * 1.5))
    x_hi, y_hi = max(x_hi, x_lo + 1), max(y_hi, y_lo + 1)
    plot_w, plot_h = width - left - right, height - top - bottom

    def px(x: float) -> float:
        return left + (math.log10(x) - x_lo) / (x_hi - x_lo) * plot_w

    def py(y: float) -> float:
        return top + plot_h - (math.log10(y) - y_lo) / (y_hi - y_lo) * plot_h

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">',
           f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#999"/>']
    for e in range(x_lo, x_hi + 1):
        out.append(f'<line x1="{px(10 ** e):.1f}" y1="{top}" x2="{px(10 ** e):.1f}" y2="{top + plot_h}" stroke="#eee"/>'
                   f'<text x="{px(10 ** e):.1f}" y="{top + plot_h + 16}" text-anchor="middle">{10.0 ** e:g}</text>')
    for e in range(y_lo, y_hi + 1):
        out.append(f'<line x1="{left}" y1="{py(10 ** e):.1f}" x2="{left + plot_w}" y2="{py(10 ** e):.1f}" stroke="#eee"/>'
                   f'<text x="{left - 6}" y="{py(10 ** e) + 4:.1f}" text-anchor="end">{10.0 ** e:g}</text>')
    out.append(f'<text x="{left + plot_w / 2:.0f}" y="{height - 12}" text-anchor="middle">FLOP per byte</text>'
               f'<text x="16" y="{top + plot_h / 2:.0f}" transform="rotate(-90 16 {top + plot_h / 2:.0f})" '
               f'text-anchor="middle">TFLOP/s</text>')
    for peak, bandwidth in roofs:  # the roof: bandwidth-bound slope, then the compute peak
        ridge = peak / bandwidth
        x0 = 10.0 ** x_lo
        pts = [(x0, x0 * bandwidth), (ridge, peak), (10.0 ** x_hi, peak)]
        pts = [(x, min(y, 10.0 ** y_hi)) for x, y in pts if y >= 10.0 ** y_lo]
        line = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in pts)
        out.append(f'<polyline points="{line}" fill="none" stroke="#333" stroke-width="1.5">'
                   f'<title>roof: {peak:g} TFLOP/s, {bandwidth:g} TB/s (ridge {ridge:.0f} FLOP/B)</title></polyline>'
                   f'<text x="{left + plot_w + 4}" y="{py(peak) + 4:.1f}">{peak:g} TFLOP/s</text>')
    colour = {g: COLORS[i % len(COLORS)] for i, g in enumerate(dict.fromkeys(g for *_, g in shown))}
    for label, x, y, g in shown:
        name = f"{g} · {label}" if g else label
        out.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="4" fill="{colour[g]}" fill-opacity="0.8">'
                   f'<title>{escape(name)}: {x:.3g} FLOP/B, {y:.3g} TFLOP/s</title></circle>')
    for i, g in enumerate(g for g in colour if g):
        out.append(f'<circle cx="{width - right + 60}" cy="{top + 10 + 18 * i}" r="4" fill="{colour[g]}"/>'
                   f'<text x="{width - right + 68}" y="{top + 14 + 18 * i}">{escape(_short(g, 11))}</text>')
    out.append("</svg>")
    return "\n".join(out)


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

    head = "".join(f"<th>{escape(units[c][0] if units[c] else c)}</th>" for c in shown)
    out = ["<table>", f"<thead><tr>{head}</tr></thead>", "<tbody>"]
    for row in rows:
        cells = "".join(f'<td{" class=num" if c in numeric else ""}>{cell(c, row[i])}</td>' for c, i in zip(shown, at))
        out.append(f"<tr>{cells}</tr>")
    if sums:
        cells = "".join(f'<td{" class=num" if c in numeric else ""}>'
                        f'{cell(c, sums[i]) if sums[i] is not None else ("total" if n == 0 else "")}</td>'
                        for n, (c, i) in enumerate(zip(shown, at)))
        out.append(f'<tr class="total">{cells}</tr>')
    out.append("</tbody></table>")
    if total_rows > len(rows):
        out.append(f'<p class="meta">The first {len(rows):,} of {total_rows:,} rows (the totals are '
                   'every row\'s); --format csv or json gives them all.</p>')
    note_lines = [f"{display(columns[0], r[0])}: {r[columns.index(n)]}" for r in rows for n in notes
                  if n in columns and r[columns.index(n)]]
    if note_lines:
        out.append('<ul class="notes">' + "".join(f"<li>{escape(x)}</li>" for x in note_lines) + "</ul>")
    return "\n".join(out)


def table(columns: Sequence[str], rows: Sequence[Sequence[Any]], formats: dict[str, str] | None = None,
          totals: Sequence[str] = (), notes: Sequence[str] = (), title: str | None = None) -> str:
    """One table as an HTML fragment (a query result in a notebook)."""
    heading = f"<p><b>{escape(title)}</b></p>" if title else ""
    return heading + (_table(columns, rows, formats or {}, totals, notes) if rows else "<p>(no rows)</p>")


def page(report, results: list[tuple[Any, list[str], list[tuple]]], labels: tuple[str, str] | None,
         names: tuple[str, str] | None = None) -> str:
    """The whole HTML document of a report's sections (results of tracedb.reports.run); labels and
    names: the titles and the names of a comparison's traces A and B."""
    title = report.name + (f" — A: {labels[0]} vs B: {labels[1]}" if labels else "")
    return "\n".join([f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{escape(title)}</title>",
                      f"<style>{STYLE}</style></head><body>", fragment(report, results, labels, names),
                      "</body></html>\n"])


def fragment(report, results: list[tuple[Any, list[str], list[tuple]]], labels: tuple[str, str] | None,
             names: tuple[str, str] | None = None) -> str:
    """A report's title, tables and charts without the document around them (a notebook cell)."""
    title = report.name + (f" — A: {labels[0]} vs B: {labels[1]}" if labels else "")
    parts = [f"<h1>{escape(title)}</h1>",
             f'<p class="meta">{escape(report.summary)}<br>tracedb report, '
             f'{dt.datetime.now().strftime("%Y-%m-%d %H:%M")}</p>']
    for section, columns, rows in results:
        keep = [i for i, c in enumerate(columns) if not section.columns.get(c) or not section.columns[c].json_only]
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


def _pivot(labels: list[str], by: list, values: list) -> tuple[list[str], dict[str, list]]:
    """Rows (label, by, value) as a group per label and a series per by value, in first-seen order."""
    groups = list(dict.fromkeys(labels))
    series: dict[str, list] = {str(b): [None] * len(groups) for b in dict.fromkeys(by)}
    at = {g: i for i, g in enumerate(groups)}
    for label, b, v in zip(labels, by, values):
        series[str(b)][at[label]] = v
    return groups, series


def _section_body(section, columns: list[str], rows: list[tuple], traces: tuple[str, str] | None) -> list[str]:
    """The charts and the table of one section's rows (traces: the names of sides A and B)."""
    formats = {c.name: c.format for c in section.columns.values()}
    parts = []
    for chart in section.charts:
        if not rows:
            continue
        label_at = [columns.index(c) for c in chart.labels if c in columns]
        names = [" · ".join(display(columns[i], r[i]) for i in label_at) for r in rows]
        series = {v: [r[columns.index(v)] for r in rows] for v in chart.values}
        if chart.by:  # pivoted: a group per label, a bar per value of the by column
            names, series = _pivot(names, [r[columns.index(chart.by)] for r in rows], series[chart.values[0]])
            formats = {**formats, **{s: formats.get(chart.values[0]) for s in series}}
        if chart.roofline:  # points (intensity, TFLOP/s) under the roofs of the peaks the rows carry
            x_at, y_at = (columns.index(v) for v in chart.values)
            peaks = [(r[columns.index("peak_tflops")], r[columns.index("peak_tbps")]) for r in rows
                     if "peak_tflops" in columns and "peak_tbps" in columns]
            groups = [str(r[columns.index("trace")]) for r in rows] if "trace" in columns else None
            svg = roofline_chart(chart.title, names, [(r[x_at], r[y_at]) for r in rows], peaks, groups)
            if svg:
                parts.append(f"<figure><figcaption>{escape(chart.title)}</figcaption>{svg}</figure>")
            continue
        shown = f" (the first {MAX_BARS} of {len(names)} groups)" if len(names) > MAX_BARS else ""
        draw = stacked_chart if chart.stacked else bar_chart
        parts.append(f"<figure><figcaption>{escape(chart.title + shown)}</figcaption>"
                     f"{draw(chart.title, names, series, formats, {v: v if chart.by else legend_name(v, traces) for v in series})}</figure>")
    totals = [c.name for c in section.columns.values() if c.total]
    notes = [c.name for c in section.columns.values() if c.note]
    parts.append(_table(columns, rows, formats, totals, notes) if rows else "<p>(no rows)</p>")
    return parts
