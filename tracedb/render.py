"""Printing result rows as a rich table, CSV, JSON or Markdown.

Formatting follows column names, not display strings: *_ns columns are durations, *_bytes sizes,
*_pct percentages. Machine formats (csv, json) keep raw values; table and markdown humanise.
Output to a pipe or file carries no ANSI codes.
"""

from __future__ import annotations

import csv
import datetime as dt
import decimal
import enum
import json
import sys
from typing import Any, Sequence

from rich import box
from rich.console import Console
from rich.table import Table


class Format(str, enum.Enum):
    table = "table"
    csv = "csv"
    json = "json"
    markdown = "markdown"


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


def display(column: str, value: Any) -> str:
    """Human text of one value, chosen by the column's name suffix."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float, decimal.Decimal)):
        if column.endswith("_ns"):
            return human_ns(value)
        if column.endswith("_bytes") or column == "bytes":
            return human_bytes(value)
        if column.endswith("_pct"):
            return f"{float(value):.1f} %"
        if isinstance(value, float):
            return f"{value:,.3f}"
        if isinstance(value, int) and not column.endswith("_id") and column not in ("trace_id", "id"):
            return f"{value:,}"
        return str(value)
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    return str(value)


def _json_default(value: Any):
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool)


def render(columns: Sequence[str], rows: Sequence[Sequence[Any]], fmt: Format | str = Format.table,
           *, title: str | None = None, out=None) -> None:
    out = out or sys.stdout
    fmt = Format(fmt)
    if fmt is Format.json:
        records = [dict(zip(columns, row)) for row in rows]
        out.write(json.dumps(records, default=_json_default, ensure_ascii=False, indent=2) + "\n")
    elif fmt is Format.csv:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(columns)
        for row in rows:
            writer.writerow(["" if v is None else v for v in row])
    elif fmt is Format.markdown:
        if title:
            out.write(f"**{title}**\n\n")
        out.write("| " + " | ".join(columns) + " |\n")
        out.write("|" + "|".join("---:" if rows and _is_number(rows[0][i]) else "---"
                                 for i in range(len(columns))) + "|\n")
        for row in rows:
            cells = [display(c, v).replace("|", "\\|").replace("\n", " ") for c, v in zip(columns, row)]
            out.write("| " + " | ".join(cells) + " |\n")
    else:
        console = Console(file=out, soft_wrap=False, width=_width(out))
        table = Table(title=title, box=box.SIMPLE_HEAVY, show_lines=False)
        numeric = [any(_is_number(r[i]) for r in rows) for i in range(len(columns))]
        for name, is_num in zip(columns, numeric):
            table.add_column(name, justify="right" if is_num else "left", overflow="fold")
        for row in rows:
            table.add_row(*(display(c, v) for c, v in zip(columns, row)))
        console.print(table)
        if not rows:
            console.print("(no rows)")


def _width(out) -> int | None:
    # A pipe gets wide, unwrapped lines; a terminal gets its own width.
    return None if getattr(out, "isatty", lambda: False)() else 200

