"""What a report or a query gives back: a Result is one table (its columns, rows and the display
format of each column), a ReportResult a report's sections. A Result prints as the terminal table,
renders as HTML in Jupyter, and converts to Arrow (always there), pandas or polars (when
installed); a ReportResult in Jupyter is the HTML report with its charts. Both are shown through
the renderers of tracedb.present."""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from typing import Any, Callable

import duckdb

from . import present, render
from .errors import TracedbError
from .render import Format


@dataclass(repr=False)
class Result:
    """Rows of one table, with what the renderers need to show them."""

    columns: list[str]
    rows: list[tuple]
    formats: dict[str, str] = field(default_factory=dict)
    totals: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    title: str | None = None
    wide: list[str] = field(default_factory=list)  # shown in a table or markdown only when asked for
    json_only: list[str] = field(default_factory=list)  # nested values: JSON only
    lead: list[str] = field(default_factory=list)  # the answer in a sentence: printed above a table, not in it
    answer: str | None = None  # the lead's sentence, once the lead column is left out (shown)
    # every row of the result when --limit showed fewer: the totals row sums these
    total_rows: list[tuple] | None = None

    def __len__(self) -> int:
        return len(self.rows)

    def records(self) -> list[dict[str, Any]]:
        """The rows as dicts keyed by column."""
        return [dict(zip(self.columns, row)) for row in self.rows]

    def arrow(self):
        """The rows as a pyarrow Table."""
        import pyarrow as pa

        return pa.table({c: [row[i] for row in self.rows] for i, c in enumerate(self.columns)})

    def df(self):
        """The rows as a pandas DataFrame (pip install pandas)."""
        try:
            import pandas
        except ImportError:
            raise TracedbError("Result.df() needs pandas: pip install pandas (or use .arrow() / .records())") from None
        del pandas  # pyarrow converts; the import only checks it is there
        return self.arrow().to_pandas()

    def pl(self):
        """The rows as a polars DataFrame (pip install polars)."""
        try:
            import polars
        except ImportError:
            raise TracedbError("Result.pl() needs polars: pip install polars (or use .arrow() / .records())") from None
        return polars.from_arrow(self.arrow())

    def in_units(self, shared: bool = False) -> "Result":
        """The rows with durations and sizes as numbers in their column's unit, the one the
        terminal table picks (a_total_ns of a few thousand ns becomes "a_total µs"), for charts and
        DataFrames a person reads; other columns as they are. shared: every duration column in one
        unit (and every size in one), the largest's, so that columns drawn on one axis compare."""
        from .render import column_unit, format_of

        def values(i: int) -> list:
            return [r[i] for r in self.rows]

        kinds = [format_of(name, self.formats.get(name)) for name in self.columns]
        pooled = {k: [v for i, kk in enumerate(kinds) if kk == k for v in values(i)] for k in ("duration", "bytes")}
        columns, scales = [], []
        for i, name in enumerate(self.columns):
            unit = None
            if kinds[i] in ("duration", "bytes"):
                unit = column_unit(name, pooled[kinds[i]] if shared else values(i), kinds[i])
            columns.append(unit[0] if unit else name)
            scales.append(unit[2] if unit else None)
        rows = [tuple(v / sc if sc and isinstance(v, (int, float)) and not isinstance(v, bool) else v
                      for v, sc in zip(row, scales)) for row in self.rows]
        renamed = dict(zip(self.columns, columns))
        return Result(columns, rows, {renamed[k]: v for k, v in self.formats.items() if k in renamed},
                      [renamed.get(c, c) for c in self.totals], [renamed.get(c, c) for c in self.notes], self.title,
                      [renamed.get(c, c) for c in self.wide], [renamed.get(c, c) for c in self.json_only])

    def shown(self, fmt: Format | str = Format.table, wide: bool = False) -> "Result":
        """The columns a format shows: a table or markdown leaves out the wide ones unless asked,
        every format but json the nested ones."""
        renderer = present.renderer(fmt)
        hidden = set() if renderer.nested else set(self.json_only)
        if renderer.for_people and not wide:
            hidden |= set(self.wide)
        if renderer.for_people:
            hidden |= set(self.lead)
        keep = [i for i, c in enumerate(self.columns) if c not in hidden]
        if len(keep) == len(self.columns):
            return self
        shown = Result([self.columns[i] for i in keep], [tuple(r[i] for i in keep) for r in self.rows],
                       self.formats, self.totals, self.notes, self.title,
                       total_rows=None if self.total_rows is None else
                       [tuple(r[i] for i in keep) for r in self.total_rows])
        shown.answer = self.lead_text()
        return shown

    def lead_text(self) -> str | None:
        """The answer a lead column gives: its first value that is not NULL."""
        return render.lead(self.columns, self.rows, self.lead)

    def text(self, fmt: Format | str = Format.table, width: int | None = None, wide: bool = False) -> str:
        """The table as the command line prints it (table, csv, json or markdown)."""
        out = _Text(width)
        r = self.shown(fmt, wide)
        present.write(r.columns, r.rows, fmt, out, title=r.title, formats=r.formats, totals=r.totals,
                      notes=r.notes, wide=wide, total_rows=r.total_rows, total_label=r.total_label(),
                      lead=r.answer)
        return out.getvalue()

    def total_label(self) -> str:
        """The first cell of the totals row: 'total', or what it sums when rows are hidden."""
        if self.total_rows is None or len(self.total_rows) <= len(self.rows):
            return "total"
        return f"total of {len(self.total_rows):,}, {len(self.rows):,} shown"

    def to_markdown(self) -> str:
        return self.text(Format.markdown)

    def to_csv(self) -> str:
        return self.text(Format.csv)

    def to_html(self) -> str:
        return present.table_html(self.columns, self.rows, self.formats, self.totals, self.notes, self.title)

    def _repr_html_(self) -> str:
        return self.to_html()

    def __str__(self) -> str:
        return self.text()

    __repr__ = __str__  # a Python prompt shows the table, as the terminal does


@dataclass(repr=False)
class ReportResult:
    """A report's sections (the first is "main"), run with bound parameters."""

    report: Any  # the reports.Report it ran
    sections: dict[str, Result]
    params: dict[str, Any]
    labels: tuple[str, str] | None = None  # a comparison's traces: name, platform, device
    names: tuple[str, str] | None = None  # a comparison's trace names
    bounded: bool = True  # a table shows its first rows only (no limit was asked for)
    # the report's timeline strips (its header's Strips:) as an HTML figure, drawn now, or on the
    # first HTML rendering while the database is open (strips_later)
    strips: str | None = None
    strips_later: Callable[[], str] | None = None

    def strips_html(self) -> str:
        if self.strips is None and self.strips_later is not None:
            try:
                self.strips = self.strips_later()
            except duckdb.ConnectionException:  # the database closed since: the page without them
                self.strips = ""
        return self.strips or ""

    @property
    def main(self) -> Result:
        """The main table (or the one section asked for); sections are in the order they are shown."""
        return self.sections[self.main_name]

    @property
    def main_name(self) -> str:
        return "main" if "main" in self.sections else next(iter(self.sections))

    def only(self, section: str) -> "ReportResult":
        """The report with one of its sections."""
        return ReportResult(self.report, {section: self[section]}, self.params, self.labels, self.names, self.bounded)

    def __getitem__(self, section: str) -> Result:
        if section not in self.sections:
            self.report.section(section)  # says which sections the report has
            raise TracedbError(f"section {section!r} of report {self.report.name} was not run "
                               f"(sections run: {', '.join(self.sections)})")
        return self.sections[section]

    def df(self, section: str | None = None):
        """A section (default: the main one) as a pandas DataFrame."""
        return (self[section] if section else self.main).df()

    def arrow(self, section: str | None = None):
        return (self[section] if section else self.main).arrow()

    @property
    def rows(self) -> list[tuple]:
        return self.main.rows

    def to_html(self) -> str:
        """The whole report as one self-contained page (tables and SVG charts)."""
        return present.report_html(self.report, self._triples(), self.labels, self.names, self.strips_html())

    def _repr_html_(self) -> str:
        return present.report_html(self.report, self._triples(), self.labels, self.names, self.strips_html(),
                                   page=False)

    def text(self, fmt: Format | str = Format.table, width: int | None = None, wide: bool = False,
             bounded: bool = True) -> str:
        """The report as `tracedb report` prints it: a table per trace, a long table's first rows
        with its totals over every row (bounded), csv, json, markdown or html."""
        out = _Text(width)
        present.print_report(self, fmt, out, wide, bounded and self.bounded)
        return out.getvalue()

    def to_markdown(self) -> str:
        return self.text(Format.markdown)

    def _triples(self) -> list[tuple]:
        """(reports.Section, columns, rows) of each section run, as the HTML page takes them."""
        by_name = {s.name: s for s in self.report.sections}
        return [(by_name[name], r.columns, r.rows) for name, r in self.sections.items()]

    def __str__(self) -> str:
        return self.text()

    __repr__ = __str__


class _Text(io.StringIO):
    """A text buffer the table renderer treats as a terminal of a given width."""

    def __init__(self, width: int | None):
        super().__init__()
        self.width = width
