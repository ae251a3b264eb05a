"""Writing result rows as a terminal table (rich), CSV, JSON or Markdown: a writer per format,
gathered with HTML's in tracedb.present's registry.

Formatting follows column names, not display strings: *_ns columns are durations, *_bytes sizes,
*_pct percentages. Machine formats (csv, json) keep raw values; table and markdown humanise, and
say each column's unit once, in its header (`a_total ms` over `68.78`). Kernel names (format
`kernel`) are demangled, and shortened in a table; csv and json keep them as the trace wrote them.
Output to a pipe or file carries no ANSI codes, and no text of a trace reaches a terminal as a
control character (printable): table and markdown show it escaped, csv and json keep it exact.
"""

from __future__ import annotations

import csv
import datetime as dt
import decimal
import enum
import json
import math
import os
import re
import textwrap
from typing import Any, Sequence

from rich import box
from rich.console import Console
from rich.table import Table

from . import names


# C0 controls (newline and tab included), DEL, C1 controls, and the bidirectional overrides and
# isolates that reorder what a terminal shows: a trace's text holding ESC could set the
# terminal's title or clear the screen, a newline could forge a row.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _escape(m: re.Match) -> str:
    ch = m.group()
    return _ESCAPES.get(ch) or (f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}")


def lead(columns: Sequence[str], rows: Sequence[Sequence[Any]], leads: Sequence[str]) -> str | None:
    """The answer the lead columns give: the first of their values that is not NULL."""
    for name in leads:
        i = list(columns).index(name)
        found = next((row[i] for row in rows if row[i] is not None), None)
        if found is not None:
            return str(found)
    return None


def printable(text: str) -> str:
    """text with every control character shown as its escape (ESC as \\x1b, a newline as \\n),
    for a terminal, a Markdown table or an error line."""
    return _CONTROL.sub(_escape, text)


class Format(str, enum.Enum):
    table = "table"
    csv = "csv"
    json = "json"
    markdown = "markdown"
    html = "html"  # reports only (tracedb.html)


def human_ns(ns: float) -> str:
    value = float(ns)
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:,.2f} {unit}"
    return f"{value:,.0f} ns"


def human_bytes(n: float) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024:
            return f"{value:,.0f} {unit}" if unit == "B" else f"{value:,.1f} {unit}"
        value /= 1024
    return f"{value:,.1f} TiB"


KERNEL_WIDTH = 48  # characters of a kernel name in a table

# units of a column in a table: (suffix of the header, scale), largest first
DURATION_UNITS = (("s", 1e9), ("ms", 1e6), ("µs", 1e3), ("ns", 1))
BYTE_UNITS = (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10), ("B", 1))


def display(column: str, value: Any, fmt: str | None = None) -> str:
    """Human text of one value: by the column's declared format, else by its name suffix."""
    if value is None:
        return ""
    if fmt == "kernel" and isinstance(value, str):
        return "; ".join(names.demangle(name) + share
                         for name, share in map(names.split_share, value.split("; ")))
    if isinstance(value, bool):
        return "yes" if value else "no"
    if fmt == "raw" and isinstance(value, (int, float, decimal.Decimal)):
        return str(value)  # as stored: every digit, no separators, no unit
    if isinstance(value, (int, float, decimal.Decimal)):
        fmt = format_of(column, fmt)
        if fmt == "duration":
            return human_ns(value)
        if fmt == "bytes":
            return human_bytes(value)
        if fmt == "percent":
            return f"{float(value):.1f} %"
        if fmt == "ratio":
            return f"{float(value):,.2f}x"
        if fmt == "id":
            return str(value)
        if fmt == "count" and isinstance(value, (float, decimal.Decimal)) and math.isfinite(value):
            # a count per step may be fractional (1,207 calls over 3 steps): a decimal only then
            return f"{int(value):,}" if value == int(value) else f"{float(value):,.1f}"
        if isinstance(value, float):
            return f"{value:,.3f}"
        if isinstance(value, decimal.Decimal):  # exact: shown to its own scale
            return f"{value:,f}"
        return f"{value:,}"
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, list):
        if all(_is_number(v) for v in value):
            return ", ".join(display(column, v, "id") for v in value)
        return " > ".join(str(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k} {display(k, v)}" for k, v in value.items())
    return str(value)


def column_unit(column: str, values: Sequence[Any], fmt: str | None) -> tuple[str, str, float] | None:
    """For a table: the header that names a numeric column's unit, the unit and its scale (the
    largest value's), or None for a column whose cells keep their own text (format raw: as stored)."""
    fmt = format_of(column, fmt)
    numbers = [abs(float(v)) for v in values if _is_number(v)]
    if fmt == "percent":
        return column.removesuffix("_pct") + " %", "%", 1.0
    if fmt not in ("duration", "bytes"):
        return None
    units = DURATION_UNITS if fmt == "duration" else BYTE_UNITS
    top = max(numbers, default=0)
    unit, scale = next(((u, sc) for u, sc in units if top >= sc), units[-1])
    base = column.removesuffix("_ns") if fmt == "duration" else column.removesuffix("_bytes")
    return f"{base} {unit}", unit, scale


def in_unit(value: Any, unit: str, scale: float) -> str:
    """A value in its column's unit: percentages to one decimal, the smallest units whole, the
    others to two decimals."""
    if not _is_number(value):
        return display("", value)
    scaled = float(value) / scale
    if unit == "%":
        return f"{scaled:,.1f}"
    if scale == 1:
        return f"{scaled:,.0f}"
    if scaled != 0 and abs(scaled) < 0.005:
        return "<0.01" if scaled > 0 else ">-0.01"
    return f"{scaled:,.2f}"


def format_of(column: str, fmt: str | None) -> str:
    """A column's display format: the one declared, else the one its name implies."""
    return fmt or _format_by_name(column)


def _format_by_name(column: str) -> str:
    if column.endswith("_ns"):
        return "duration"
    if column.endswith("_bytes") or column == "bytes":
        return "bytes"
    if column.endswith("_pct"):
        return "percent"
    if column.endswith("_id") or column == "id":
        return "id"
    return "count"


def _json_default(value: Any):
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def records(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[dict[str, Any]]:
    """Rows as objects keyed by column name (the JSON output)."""
    return [dict(zip(columns, row)) for row in rows]


def to_json(value: Any) -> str:
    """JSON text of value; a number JSON cannot write (NaN, an infinity) is null."""
    return json.dumps(_finite(value), default=_json_default, ensure_ascii=False, indent=2, allow_nan=False)


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, decimal.Decimal):
        return value if value.is_finite() else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool)


def with_notes(write):
    """A writer for people (table, markdown) that prints the note columns under the table, each
    beside its row's first cell, rather than in it."""

    def writer(columns: Sequence[str], rows: Sequence[Sequence[Any]], out, *, title: str | None = None,
               formats: dict[str, str] | None = None, totals: Sequence[str] = (), notes: Sequence[str] = (),
               total_rows: Sequence[Sequence[Any]] | None = None, total_label: str = "total",
               wide: bool = False, lead: str | None = None) -> None:
        formats = formats or {}
        if lead:  # the answer first, above the title, folded to the output's width
            text = printable(lead)
            out.write(("**" + text + "**" if write is _markdown else "\n".join(textwrap.wrap(text, output_width(out))))
                      + "\n\n")
        if not any(n in columns for n in notes):
            write(columns, rows, out, title=title, formats=formats, totals=totals, total_rows=total_rows,
                  total_label=total_label, wide=wide)
            return
        keep = [i for i, c in enumerate(columns) if c not in notes]
        # a note shared by several rows (the same next command) is printed once, after their labels
        labels: dict[str, list[str]] = {}
        for row in rows:
            for i, c in enumerate(columns):
                if c in notes and row[i] is not None:
                    labels.setdefault(str(row[i]), []).append(display(columns[0], row[0], formats.get(columns[0])))
        lines = [printable(f"{', '.join(at)}. {note}") for note, at in labels.items()]
        write([columns[i] for i in keep], [[row[i] for i in keep] for row in rows], out, title=title,
              formats=formats, totals=totals,
              total_rows=None if total_rows is None else [[row[i] for i in keep] for row in total_rows],
              total_label=total_label, wide=wide)
        for line in lines:
            out.write(("- " if write is _markdown else "  ") + line + "\n")
        if lines:
            out.write("\n")

    writer.__doc__ = write.__doc__
    return writer


def write_json(columns: Sequence[str], rows: Sequence[Sequence[Any]], out, **_) -> None:
    """A list of objects, one per row, values as stored (nested values as JSON)."""
    out.write(to_json(records(columns, rows)) + "\n")


def write_csv(columns: Sequence[str], rows: Sequence[Sequence[Any]], out, **_) -> None:
    """A header line, then a line per row, values as stored (NULL: empty)."""
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow(["" if v is None else v for v in row])


def _people(columns, rows, formats, totals, total_rows):
    """What table and markdown share: the totals row, the units of the headers, and a cell's text."""
    total_row = column_totals(columns, total_rows if total_rows is not None else rows, totals) \
        if totals and rows else None
    if total_row and all(v is None for v in total_row):
        total_row = None  # the summed columns are not shown
    names.prepare_columns(columns, rows, formats)
    units = shared_units(columns, [*rows, *([total_row] if total_row else [])], formats)
    headers = [units[i][0] if units[i] else c for i, c in enumerate(columns)]
    numeric = [any(_is_number(r[i]) for r in rows) for i in range(len(columns))]
    return total_row, units, headers, numeric


def _markdown(columns: Sequence[str], rows: Sequence[Sequence[Any]], out, *, title: str | None = None,
              formats: dict[str, str] | None = None, totals: Sequence[str] = (),
              total_rows: Sequence[Sequence[Any]] | None = None, total_label: str = "total", **_) -> None:
    """A Markdown table under its title in bold, values humanised, the unit in each header."""
    formats = formats or {}
    total_row, units, headers, numeric = _people(columns, rows, formats, totals, total_rows)

    def cell(i: int, value: Any) -> str:
        if value is None:
            return ""
        if units[i]:
            return in_unit(value, units[i][1], units[i][2])
        return printable(display(columns[i], value, formats.get(columns[i])))

    headers = [printable(h) for h in headers]
    cells = [[cell(i, v) for i, v in enumerate(row)] for row in rows]
    total_cells = [cell(i, v) for i, v in enumerate(total_row)] if total_row else None
    if total_cells:
        total_cells[0] = total_cells[0] or total_label
    if title:
        out.write(f"**{printable(title)}**\n\n")
    out.write("| " + " | ".join(headers) + " |\n")
    out.write("|" + "|".join("---:" if numeric[i] else "---" for i in range(len(columns))) + "|\n")
    for row in cells + ([[f"**{c}**" if c else "" for c in total_cells]] if total_cells else []):
        out.write("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |\n")
    out.write("\n")  # a table ends at a blank line: the next title must not join it


def _table(columns: Sequence[str], rows: Sequence[Sequence[Any]], out, *, title: str | None = None,
           formats: dict[str, str] | None = None, totals: Sequence[str] = (),
           total_rows: Sequence[Sequence[Any]] | None = None, total_label: str = "total", wide: bool = False) -> None:
    """A terminal table fitting the output's width (see fit_columns), values humanised, the unit
    in each header, a totals row; wide: every column whole, however wide the lines."""
    formats = formats or {}
    total_row, units, headers, numeric = _people(columns, rows, formats, totals, total_rows)
    kernel = [formats.get(c) == "kernel" for c in columns]

    def cell(i: int, value: Any, width: int | None = None) -> str:
        """A value's text; width: the room it has in a table (a longer text is cut to it)."""
        if value is None:
            return ""
        if units[i]:
            return in_unit(value, units[i][1], units[i][2])
        if kernel[i]:  # a list of names: up to KERNEL_WIDTH each
            text = printable(str(value))
            return names.short_list(text, width or KERNEL_WIDTH * len(text.split("; ")))
        text = printable(display(columns[i], value, formats.get(columns[i])))
        return text if width is None else names.middle_cut(text, width)

    # Every row one line, every header whole: long texts (kernel names, paths, stacks) are cut to
    # the room the others leave, in the middle; what still does not fit is left out, and a line
    # names it: texts first, numbers (the sort column among them) only when the numbers alone do
    # not fit, never an identifier, which is cut no lower than IDENTIFIER_MIN. --wide keeps every
    # column at its full width, however wide.
    width = output_width(out)
    full = [[cell(i, v) for i, v in enumerate(row)] for row in rows]
    total_full = [cell(i, v) if v is not None else "" for i, v in enumerate(total_row)] if total_row else None
    if total_full:
        total_full[0] = total_full[0] or total_label
    headers = [printable(h) for h in headers]
    natural = [max([len(headers[i]), *(len(r[i]) for r in full), len(total_full[i]) if total_full else 0])
               for i in range(len(columns))]
    identifier = [columns[i] in IDENTIFIERS and not kernel[i] for i in range(len(columns))]
    whole = [columns[i] in TRACE_COLUMNS or formats.get(columns[i]) == "trace" for i in range(len(columns))]
    cuttable = [not whole[i] and (kernel[i] or (not numeric[i] and natural[i] > (IDENTIFIER_MIN if identifier[i]
                                                                                else CUT_FROM)))
                for i in range(len(columns))]
    kept = [whole[i] or identifier[i] for i in range(len(columns))]
    # a last column of text (a description, a note, a path) folds into lines rather than being cut
    last = len(columns) - 1
    fold = last if columns and cuttable[last] and not kernel[last] else None
    floors = [max(FOLD_MIN if i == fold else IDENTIFIER_MIN if identifier[i] else MIN_CUT, len(headers[i]))
              if cuttable[i] else natural[i] for i in range(len(columns))]
    floors = [min(f, n) for f, n in zip(floors, natural)]
    # left out in this order: texts (the rightmost first), then numbers
    order = [1 if numeric[i] else 0 for i in range(len(columns))]
    widths, dropped = fit_columns(natural, floors, width, keep_all=wide, kept=kept, last=order)
    shown = [i for i in range(len(columns)) if i not in dropped]
    if fold in shown:  # the room left goes to the folding column
        room = width - 3 * len(shown) - 1 - sum(widths[i] for i in shown)
        widths[fold] = min(natural[fold], widths[fold] + max(0, room))
    cells = [[full[n][i] if i == fold or not (widths[i] < natural[i] or kernel[i]) else cell(i, row[i], widths[i])
              for i in shown] for n, row in enumerate(rows)]
    total_cells = [total_full[i] for i in shown] if total_full else None
    # force_jupyter False: in a notebook rich would display the table itself, beside the cell's result
    # markup and emoji off: `list[int]` or `:fire:` in a name is text, not a style or a picture
    console = Console(file=out, soft_wrap=False, force_jupyter=False, markup=False, emoji=False, highlight=False,
                      width=max(width, sum(widths[i] for i in shown) + 3 * len(shown) + 1))
    if title:  # above the table, not in it: a narrow table must not fold its title into lines
        console.print(printable(title), highlight=False, markup=False)
    table = Table(box=box.SIMPLE_HEAVY, show_lines=False, show_footer=bool(total_cells))
    for n, i in enumerate(shown):
        table.add_column(headers[i], justify="right" if numeric[i] else "left",
                         overflow="fold" if i == fold else "ellipsis", no_wrap=i != fold,
                         min_width=widths[i], max_width=widths[i],
                         footer=total_cells[n] if total_cells else "")
    for row in cells:
        table.add_row(*row)
    console.print(table)
    if not rows:
        console.print("(no rows)")
    if dropped:
        console.print(f"  left out to fit {width} columns: {printable(', '.join(columns[i] for i in dropped))} "
                      "(--wide, csv and json show every column)", highlight=False, markup=False)




write_table = with_notes(_table)
write_markdown = with_notes(_markdown)


# The width of a table sent to a pipe or a file when $COLUMNS says none: a terminal's common width.
PIPE_WIDTH = 120

# Columns holding what a person types next or goes to: trace and report names, Python frames
# (file(line): function). A table never leaves them out, and cuts them (in the middle: a path's
# file and a name's end tell them apart) no lower than IDENTIFIER_MIN.
IDENTIFIERS = frozenset({"trace", "name", "report", "frame", "a_name", "b_name", "where", "trace_a", "trace_b",
                         "a_trace", "b_trace", "capture", "window"})

# A text column shorter than this is never cut ("host launched late" cut to "host lau…ed late"
# says less than the column left out would).
CUT_FROM = 24

# The least room a cut text keeps in a table, and a folding last column (a header keeps its own
# length, whatever these say).
MIN_CUT = 16
FOLD_MIN = 32
IDENTIFIER_MIN = 40

# Columns holding a trace's name: never cut, whatever the width (a name is typed as it is shown).
TRACE_COLUMNS = frozenset({"trace", "trace_a", "trace_b", "a_trace", "b_trace"})


def fit_columns(natural: Sequence[int], floors: Sequence[int], width: int,
                keep_all: bool = False, kept: Sequence[bool] = (),
                last: Sequence[int] = ()) -> tuple[list[int], list[int]]:
    """The width of each column of a table that must fit `width` characters (a rich table with
    SIMPLE_HEAVY box: 3 characters per column and 1 more), and the columns left out: columns whose
    floor is below their natural width are cut, the widest first, no lower than their floor; when
    that is not enough, columns are left out from the right (never the first, nor a kept one: an
    identifier, shown even where the line then runs past the width), in the order last gives (0
    first: texts, then numbers), the rightmost first within it; then a column left out comes back
    where the room the others leave holds it. keep_all: every column at its natural width, however
    wide."""
    n = len(natural)
    if keep_all:
        return list(natural), []
    kept = list(kept) or [False] * n
    last = list(last) or [0] * n

    def fits(columns: list[int], widths: Sequence[int]) -> bool:
        return sum(widths[i] for i in columns) <= width - 3 * len(columns) - 1

    dropped: list[int] = []
    while True:
        shown = [i for i in range(n) if i not in dropped]
        if fits(shown, natural):
            break
        candidates = [i for i in shown[1:] if not kept[i]]
        if fits(shown, floors) or not candidates:
            break
        lowest = min(last[i] for i in candidates)
        dropped.append([i for i in candidates if last[i] == lowest][-1])  # the rightmost of the first to go
    # a column left out early comes back where the room others left holds it, the most wanted
    # first; none of a kind that goes earlier while one that goes later stays out
    stays_out = None
    for i in sorted(dropped, key=lambda i: (-last[i], i)):
        if stays_out is not None and last[i] < stays_out:
            break
        if fits(sorted(j for j in range(n) if j not in dropped or j == i), floors):
            dropped.remove(i)
        else:
            stays_out = last[i]
    dropped.sort()
    shown = [i for i in range(n) if i not in dropped]
    if fits(shown, natural):
        return list(natural), dropped
    return _cut_to(natural, floors, shown, width - 3 * len(shown) - 1), dropped


def _cut_to(natural, floors, shown, budget) -> list[int]:
    """Natural widths with the cuttable columns capped at the largest cap that fits the budget."""
    widths = list(natural)
    fixed = sum(natural[i] for i in shown if floors[i] >= natural[i])
    cut = [i for i in shown if floors[i] < natural[i]]
    lo, hi = 0, max([natural[i] for i in cut], default=0)
    while lo < hi:  # the largest cap c with sum(max(floor, min(natural, c))) within the budget
        c = (lo + hi + 1) // 2
        if fixed + sum(max(floors[i], min(natural[i], c)) for i in cut) <= budget:
            lo = c
        else:
            hi = c - 1
    for i in cut:
        widths[i] = max(floors[i], min(natural[i], lo))
    return widths


def shared_units(columns: Sequence[str], rows: Sequence[Sequence[Any]], formats: dict[str, str]) -> dict:
    """Each column's unit (column_unit), a pair of A/B columns (a_total_ns, b_total_ns) in one: the
    larger's, so that the two read side by side."""
    values = {c: [r[i] for r in rows] for i, c in enumerate(columns)}
    out = {}
    for i, c in enumerate(columns):
        pooled = values[c]
        if c[:2] in ("a_", "b_"):
            other = ("b_" if c[:2] == "a_" else "a_") + c[2:]
            if other in values and format_of(other, formats.get(other)) == format_of(c, formats.get(c)):
                pooled = pooled + values[other]
        out[i] = column_unit(c, pooled, formats.get(c))
    return out


def by_trace(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> tuple[list[str], dict[Any, list[tuple]]]:
    """Rows of several traces, one group per trace (in the order they come) without the trace
    column: the columns shown, and the groups by trace name."""
    at = list(columns).index("trace")
    groups: dict[Any, list[tuple]] = {}
    for row in rows:
        groups.setdefault(row[at], []).append(tuple(row[:at]) + tuple(row[at + 1:]))
    return [c for i, c in enumerate(columns) if i != at], groups


def column_totals(columns: Sequence[str], rows: Sequence[Sequence[Any]], totals: Sequence[str]) -> list[Any]:
    out: list[Any] = []
    for i, name in enumerate(columns):
        values = [r[i] for r in rows if _is_number(r[i])]
        out.append(sum(values) if name in totals and values else None)
    return out


def output_width(out) -> int:
    """The width a table written to out has: a terminal's own, else $COLUMNS, else PIPE_WIDTH."""
    return _width(out) or Console(file=out, force_jupyter=False).width


def _width(out) -> int | None:
    # A terminal gets its own width; a pipe the width $COLUMNS says, else PIPE_WIDTH (an output
    # that states its own width, as the Python API's text buffers may, gets that).
    if getattr(out, "width", None):
        return out.width
    if getattr(out, "isatty", lambda: False)():
        return None
    columns = os.environ.get("COLUMNS", "")
    return max(40, int(columns)) if columns.isdigit() else PIPE_WIDTH  # narrower than 40 fits nothing

