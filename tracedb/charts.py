"""Chart kinds of a report's HTML page, drawn as inline SVG: one registry, KINDS, that the report
headers name (`-- Chart: LABELS -> VALUES [KIND]  Title`), the HTML page and the notebook draw
from, and the reference page lists. A kind says which value columns it takes and draws a
section's rows; adding one is a function and an entry here.

- bars (the default): a horizontal bar chart, one group per row (the report's order, at most
  MAX_BARS), one bar per value column, values formatted like the table's, negative values (gaps)
  to the left of the zero line; `by COLUMN` pivots: one group per label, one bar per value of
  COLUMN.
- stacked: one bar per row, its value columns end to end (the parts of a whole).
- roofline: a log-log roofline, a point per row at (FLOP per byte, TFLOP/s) under the roofs of
  the peaks the rows carry (values: intensity, tflops, peak TFLOP/s, peak TB/s).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape
from typing import Callable, Sequence

from .render import display

MAX_BARS = 40
COLORS = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948")
ROW_H, BAR_GAP, LABEL_W, PLOT_W, VALUE_W = 22, 4, 260, 520, 110


@dataclass
class Chart:
    """A chart of a report section, as its header declares it."""
    labels: list[str]  # the columns naming a row (joined with ·)
    values: list[str]  # the columns drawn, as the kind takes them
    title: str
    kind: str = "bars"  # a key of KINDS
    by: str | None = None  # bars: one bar per value of this column (the rows pivoted)


@dataclass(frozen=True)
class Kind:
    name: str
    takes: str  # what the value columns are, for the header's error and the reference page
    arity: tuple[int, int | None]  # least and most value columns (None: any number)
    draw: Callable[[Chart, list[str], list[tuple], dict[str, str], tuple[str, str] | None], str]
    doc: str

    def check(self, chart: Chart) -> str | None:
        """What is wrong with a chart of this kind, or None."""
        low, high = self.arity
        if not low <= len(chart.values) <= (high if high is not None else len(chart.values)):
            return f"a {self.name} chart takes {self.takes}"
        if chart.by and self.name != "bars":
            return "only a bars chart is pivoted 'by COLUMN'"
        if chart.by and len(chart.values) != 1:
            return "a chart 'by COLUMN' draws one value column"
        return None


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


def _positive(value) -> bool:
    try:
        return value is not None and 0 < float(value) < math.inf
    except (TypeError, ValueError):
        return False


def roofline_chart(title: str, labels: Sequence[str], points: Sequence[tuple[float | None, float | None]],
                   roofs: Sequence[tuple[float, float]], groups: Sequence[str] | None = None) -> str:
    """An SVG log-log roofline: a point per row at (FLOP per byte, achieved TFLOP/s), titled by its
    label (and group, a colour per group), under each roof min(peak TFLOP/s, FLOP per byte × peak
    TB/s) given as (peak_tflops, peak_tbps)."""
    width, height, left, bottom, top, right = 760, 440, 70, 50, 20, 160
    # a point or roof that is not a positive finite number has no place on log axes (an infinite
    # peak a database holds from before peaks were checked): left out
    shown = [(lab, float(x), float(y), g) for lab, (x, y), g in zip(labels, points, groups or [""] * len(labels))
             if _positive(x) and _positive(y)]
    roofs = sorted({(float(t), float(b)) for t, b in roofs if _positive(t) and _positive(b)})
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


def _pivot(labels: list[str], by: list, values: list) -> tuple[list[str], dict[str, list]]:
    """Rows (label, by, value) as a group per label and a series per by value, in first-seen order."""
    groups = list(dict.fromkeys(labels))
    series: dict[str, list] = {str(b): [None] * len(groups) for b in dict.fromkeys(by)}
    at = {g: i for i, g in enumerate(groups)}
    for label, b, v in zip(labels, by, values):
        series[str(b)][at[label]] = v
    return groups, series


def row_labels(chart: Chart, columns: list[str], rows: list[tuple]) -> list[str]:
    at = [columns.index(c) for c in chart.labels if c in columns]
    return [" · ".join(display(columns[i], r[i]) for i in at) for r in rows]


def _draw_bars(chart: Chart, columns: list[str], rows: list[tuple], formats: dict[str, str],
               traces: tuple[str, str] | None) -> str:
    labels = row_labels(chart, columns, rows)
    series = {v: [r[columns.index(v)] for r in rows] for v in chart.values}
    if chart.by:  # pivoted: a group per label, a bar per value of the by column
        labels, series = _pivot(labels, [r[columns.index(chart.by)] for r in rows], series[chart.values[0]])
        formats = {**formats, **{s: formats.get(chart.values[0]) for s in series}}
    return bar_chart(chart.title, labels, series, formats,
                     {v: v if chart.by else legend_name(v, traces) for v in series})


def _draw_stacked(chart: Chart, columns: list[str], rows: list[tuple], formats: dict[str, str],
                  traces: tuple[str, str] | None) -> str:
    series = {v: [r[columns.index(v)] for r in rows] for v in chart.values}
    return stacked_chart(chart.title, row_labels(chart, columns, rows), series, formats,
                         {v: legend_name(v, traces) for v in series})


def _draw_roofline(chart: Chart, columns: list[str], rows: list[tuple], formats: dict[str, str],
                   traces: tuple[str, str] | None) -> str:
    x, y, peak, bandwidth = (columns.index(v) for v in chart.values)
    groups = [str(r[columns.index("trace")]) for r in rows] if "trace" in columns else None
    return roofline_chart(chart.title, row_labels(chart, columns, rows), [(r[x], r[y]) for r in rows],
                          [(r[peak], r[bandwidth]) for r in rows], groups)


KINDS = {k.name: k for k in (
    Kind("bars", "one or more value columns", (1, None), _draw_bars,
         "a horizontal bar per value column and row (negative values to the left of zero); "
         "`by COLUMN`: a bar per value of COLUMN"),
    Kind("stacked", "one or more value columns, the parts of a whole", (1, None), _draw_stacked,
         "one bar per row, its value columns end to end, the whole written beside it"),
    Kind("roofline", "intensity,tflops,peak_tflops,peak_tbps: FLOP per byte, TFLOP/s and the roof's peaks",
         (4, 4), _draw_roofline,
         "a log-log roofline: a point per row at (FLOP per byte, TFLOP/s) under the roofs of the peaks "
         "the rows carry"),
)}


def draw(chart: Chart, columns: list[str], rows: list[tuple], formats: dict[str, str],
         traces: tuple[str, str] | None) -> str:
    """A chart of a section's rows as SVG ('' when there is nothing to draw); traces: the names
    of a comparison's sides A and B, for the legend."""
    return KINDS[chart.kind].draw(chart, columns, rows, formats, traces) if rows else ""
