"""HTML reports: one self-contained page per report, its tables and its charts as inline SVG."""

from __future__ import annotations

import json
import shutil
import subprocess
from html.parser import HTMLParser

import pytest

from conftest import FIXTURES, KINETO, run_cli, tc_op, write_tc_trace
from builders import A_LAYER, B_LAYER, build
from tracedb import reports

AIE = FIXTURES / "aie" / "mlir-aie_parse-trace_test1.json"
KERNEL_DETAILS = FIXTURES / "ascend" / "kernel_details_cann8.csv"
PAIR = ("h100_bert-small", "mi300_bert-small")
RUNS = {
    "ops": ("--trace", PAIR[0]),
    "compare": ("--trace", PAIR[0], "--vs", PAIR[1]),
    "alignment": ("--trace", PAIR[0], "--vs", PAIR[1]),
    "fusion": ("--trace", "nv", "--vs", "amd"),  # a pair with planted fusions (tests/analysis/test_compare.py)
    "aie-iterations": ("--trace", "mlir-aie_parse-trace_test1"),
    "tc-vs-prof": ("--trace", "tc", "--vs", "kernel_details_cann8"),
}


class Page(HTMLParser):
    """What a page holds: its tables' rows, its charts' bars, and anything that would reach outside."""

    def __init__(self):
        super().__init__()
        self.tables: list[list[int]] = []  # per table: cells per row
        self.svgs: list[dict] = []
        self.strips: list[dict] = []
        self.outside: list[str] = []
        self.tags: set[str] = set()
        self._svg = None

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        attrs = dict(attrs)
        for key in ("src", "href"):
            if key in attrs:
                self.outside.append(f"{tag} {key}={attrs[key]}")
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append(0)
        elif tag in ("td", "th"):
            self.tables[-1][-1] += 1
        elif tag == "svg":
            self._svg = {"rects": 0, "xmlns": attrs.get("xmlns")}
            # the timeline strips (tracedb.strips) apart from the section charts
            (self.strips if attrs.get("class") == "strips" else self.svgs).append(self._svg)
        elif tag == "rect" and self._svg is not None:
            self._svg["rects"] += 1

    def handle_endtag(self, tag):
        if tag == "svg":
            self._svg = None


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("html")
    path = tmp / "t.duckdb"
    tc = write_tc_trace(tmp / "tc.json", tc_op("torch.ops.aten.mm.default", 180, kernel_type="MatMulV2",
                                               source="MEASURED"))
    pair = [next(p for p in KINETO if p.name.startswith(n)) for n in PAIR]
    planted = [build(tmp / "nv.json", A_LAYER), build(tmp / "amd.json", B_LAYER, platform="AMD")]
    run_cli("load", *pair, *planted, AIE, KERNEL_DETAILS, tc, db=path, check=True)
    return path


@pytest.mark.parametrize("name", sorted(RUNS))
def test_html_page_has_tables_and_charts(db, tmp_path, name):
    out = tmp_path / f"{name}.html"
    proc = run_cli("report", name, *RUNS[name], "--format", "html", "-o", out, db=db)
    assert proc.returncode == 0 and f"wrote {out}" in proc.stderr, proc.stderr
    rows = json.loads(run_cli("report", name, *RUNS[name], "--format", "json", db=db, check=True).stdout)
    sections = rows if isinstance(rows, dict) else {"main": rows}
    page = Page()
    page.feed(out.read_text(encoding="utf-8"))
    assert "script" not in page.tags and page.outside == []  # self-contained: nothing fetched, nothing run
    report = reports.get(name)
    shown_order = [s for s in report.sections if s.first] + [s for s in report.sections if not s.first]
    expected_tables = [s for s in shown_order if sections.get(s.name)]
    assert len(page.tables) == len(expected_tables)
    for table, section in zip(page.tables, expected_tables):
        shown = [c for c in section.columns.values() if not c.json_only and not c.note
                 and (report.compares or c.name != "trace")]  # one trace per table: its name heads it
        totals = any(c.total for c in shown)
        assert len(table) == 1 + len(sections[section.name]) + totals, section.name
        assert set(table) == {len(shown)}
    charts = [(c, len(sections[s.name])) for s in shown_order for c in s.charts if sections.get(s.name)]
    assert len(page.svgs) == len(charts) >= 1
    assert len(page.strips) == (1 if report.strips else 0)  # the traces' steps, drawn once
    for svg, (chart, n) in zip(page.svgs, charts):
        assert svg["xmlns"] == "http://www.w3.org/2000/svg"
        if chart.kind == "stacked":  # a legend entry per part, then a bar's parts that are not empty
            assert len(chart.values) < svg["rects"] <= min(n, 40) * len(chart.values) + len(chart.values)
            continue
        legend = len(chart.values) if len(chart.values) > 1 else 0
        assert svg["rects"] == min(n, 40) * len(chart.values) + legend


def test_chart_legends_name_the_traces(db, tmp_path):
    out = tmp_path / "compare.html"
    run_cli("report", "compare", *RUNS["compare"], "--format", "html", "-o", out, db=db, check=True)
    svgs = [part.split("</svg>", 1)[0] for part in out.read_text(encoding="utf-8").split("<svg")[1:]
            if not part.startswith(' class="strips"')]
    wall, svg = svgs[0], svgs[1]  # the wall-clock parts, then time per operation
    assert f">{PAIR[0]}</text>" in wall and f">{PAIR[1]}</text>" in wall and "a_ns" not in wall
    assert f">{PAIR[0]}: total</text>" in svg and f">{PAIR[1]}: total</text>" in svg
    assert "a_total_ns" not in svg and "b_total_ns" not in svg


def test_table_headers_carry_the_unit_and_kernel_names_fold(db, tmp_path):
    """Headers name the unit the cells are written in (a_total µs over 197.60, never a_total_ns
    over 197.60 µs); a kernel cell is short, with its whole name on hover; ratios read 0.33x."""
    import re
    from html import unescape

    out = tmp_path / "compare.html"
    run_cli("report", "compare", *RUNS["compare"], "--wide", "--format", "html", "-o", out, db=db, check=True)
    page = out.read_text(encoding="utf-8")
    tables = page[page.index("<table>"):]
    headers = re.findall(r"<th>([^<]*)</th>", tables)
    assert "a_total µs" in headers and "ratio" in headers and not [h for h in headers if h.endswith("_ns")]
    cells = re.findall(r"<td class=num>([^<]*)</td>", tables)
    assert not [c for c in cells if c.endswith((" µs", " ms", " ns"))] and "0.33x" in cells
    spans = re.findall(r'<span title="([^"]*)">([^<]*)</span>', tables)
    assert spans, "a top-kernels cell shows a short name"
    for whole, short in spans:
        assert len(unescape(short)) <= 64 and len(unescape(whole)) > len(unescape(short))


def test_every_chart_names_columns_of_its_section():
    charted = {n for n, r in reports.available().items() if any(s.charts for s in r.sections)}
    assert charted >= set(RUNS)


def test_any_table_is_a_page_in_html(db):
    """ls, sql and schema take --format html as reports do: one self-contained page."""
    listed = json.loads(run_cli("ls", "--format", "json", db=db, check=True).stdout)
    page = Page()
    page.feed(run_cli("ls", "--format", "html", db=db, check=True).stdout)
    assert "script" not in page.tags and page.outside == [] and len(page.tables) == 1
    assert len(page.tables[0]) == 1 + len(listed)  # a header row, then a row per trace
    page = Page()
    page.feed(run_cli("sql", "SELECT 1 AS one, 'a<b' AS text", "--format", "html", db=db, check=True).stdout)
    assert page.tables == [[2, 2]]


BROWSERS = ("chromium", "chromium-browser", "google-chrome")


@pytest.mark.skipif(not any(shutil.which(b) for b in BROWSERS), reason="no headless Chromium installed")
def test_html_renders_in_a_headless_browser(db, tmp_path):
    page = tmp_path / "compare.html"
    run_cli("report", "compare", *RUNS["compare"], "--format", "html", "-o", page, db=db, check=True)
    browser = next(shutil.which(b) for b in BROWSERS if shutil.which(b))
    png = tmp_path / "compare.png"
    proc = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", f"--screenshot={png}",
                           "--window-size=1200,1600", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


def test_html_has_a_table_per_trace_and_never_overwrites_the_database(db, tmp_path):
    out = tmp_path / "ops.html"
    run_cli("report", "ops", "--format", "html", "-o", out, db=db, check=True)
    page = Page()
    page.feed(out.read_text(encoding="utf-8"))
    traces = json.loads(run_cli("sql", "SELECT count(DISTINCT trace_id) AS n FROM kernels", "--format", "json",
                                db=db, check=True).stdout)[0]["n"]
    assert len(page.tables) == len(page.svgs) == traces  # each with its own totals row, like the text output
    proc = run_cli("report", "ops", "--format", "csv", "-o", db, db=db)
    assert proc.returncode == 1 and "is the database itself" in proc.stderr
    assert run_cli("ls", db=db).returncode == 0


class Cells(HTMLParser):
    """Every table cell's class and text, every table header's text, and every chart label (its x
    and text): what a reader sees of numbers and names."""

    def __init__(self):
        super().__init__()
        self.cells: list[tuple[str | None, str]] = []
        self.headers: list[list[str]] = []
        self.labels: list[tuple[float, str]] = []
        self._in: str | None = None
        self._attrs: dict = {}
        self._text = ""
        self._title = False  # inside a <title>: shown on hover, not drawn

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.headers.append([])
        self._title = self._title or tag == "title"
        if tag in ("td", "th") or (tag == "text" and dict(attrs).get("text-anchor") == "end"):
            self._in, self._attrs, self._text = tag, dict(attrs), ""

    def handle_data(self, data):
        if self._in and not self._title:
            self._text += data

    def handle_endtag(self, tag):
        if tag == "title":
            self._title = False
        if tag != self._in:
            return
        if tag == "td":
            self.cells.append((self._attrs.get("class"), self._text))
        elif tag == "th":
            self.headers[-1].append(self._text)
        else:
            self.labels.append((float(self._attrs["x"]), self._text))
        self._in = None


NUMBER = r"[-<>]?[\d,]+(\.\d+)?(x| %)?"


def test_numbers_never_wrap_and_a_pair_shares_its_unit(db, tmp_path):
    import re

    from tracedb import html

    page = tmp_path / "compare.html"
    run_cli("report", "compare", *RUNS["compare"], "--format", "html", "-o", page, db=db, check=True)
    cells = Cells()
    cells.feed(page.read_text(encoding="utf-8"))
    numbers = [(cls, text) for cls, text in cells.cells if re.fullmatch(NUMBER, text.strip())]
    assert numbers and all(cls == "num" for cls, _ in numbers)  # a number's cell never wraps (td.num)
    assert re.search(r"td\.num \{[^}]*white-space: nowrap", html.STYLE) and re.search(r"th \{[^}]*nowrap", html.STYLE)
    assert "anywhere" not in html.STYLE  # words break only where they must, never inside a number
    for header in cells.headers:
        units = {h.split(" ", 1)[0]: h.split(" ", 1)[1] for h in header if " " in h}
        for name, unit in units.items():
            if name.startswith("a_") and "b_" + name[2:] in units:
                assert units["b_" + name[2:]] == unit, header
    # chart labels are right-aligned at x and about 7 px a character: none starts left of the chart
    assert cells.labels and all(len(text) * 7 <= x + 2 for x, text in cells.labels)


def test_a_long_table_is_limited_with_a_note(db, tmp_path, monkeypatch):
    from tracedb import html

    monkeypatch.setattr(html, "MAX_ROWS", 5)
    page = tmp_path / "alignment.html"
    run_cli("report", "alignment", *RUNS["alignment"], "--format", "html", "-o", page, db=db, check=True)
    text = page.read_text(encoding="utf-8")
    parsed = Page()
    parsed.feed(text)
    assert max(len(rows) for rows in parsed.tables) <= 5 + 2  # header, five rows, totals
    assert "The first 5 of " in text and "--format csv or json gives them all" in text
