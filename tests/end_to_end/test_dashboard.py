"""The Streamlit dashboard example (examples/dashboard/app.py), run by Streamlit's AppTest against a
database holding a trace pair and an AIE trace. Skipped when the dashboard extra is not installed."""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import pyarrow as pa
import pytest

import tracedb

from conftest import FIXTURES, KINETO, ROOT, run_cli
from builders import A_LAYER, B_LAYER, build
from headless import Page

pytest.importorskip("streamlit", reason="the dashboard extra is not installed: pip install '.[dashboard]'")
from streamlit.testing.v1 import AppTest  # noqa: E402

APP = ROOT / "examples" / "dashboard" / "app.py"
UNITS = {"ns": 1, "µs": 1e3, "ms": 1e6, "s": 1e9}
PAIR = ("h100_bert-small", "mi300_bert-small")


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dashboard")
    path = tmp / "t.duckdb"
    pair = [next(p for p in KINETO if p.name.startswith(n)) for n in PAIR]
    # twelve layers: enough for a chart ordered as text to run 0, 1, 10, 11, 2, ...
    planted = [build(tmp / "nv.json", A_LAYER, layers=12), build(tmp / "amd.json", B_LAYER, layers=12, platform="AMD")]
    run_cli("load", *pair, *planted, FIXTURES / "aie" / "mlir-aie_parse-trace_test1.json", db=path, check=True)
    return path


def run_app(db, monkeypatch, **selections):
    monkeypatch.setenv("TRACEDB_DB", str(db))  # the app's default database
    app = AppTest.from_file(str(APP), default_timeout=120)
    app.run()
    for key, value in selections.items():
        app.selectbox(key=key).set_value(value)
    if selections:
        app.run()
    assert not app.exception, [e.value for e in app.exception]
    return app


def frame_with(app, column):
    return next(d.value for d in app.dataframe if column in d.value.columns)


def charts(app) -> list[dict]:
    return [json.loads(c.proto.spec) for c in app.get("vega_lite_chart")]


def chart_rows(app, spec: dict) -> list[dict]:
    """The rows a chart draws (Streamlit sends them beside the spec, as Arrow)."""
    chart = next(c for c in app.get("vega_lite_chart") if json.loads(c.proto.spec) == spec)
    return pa.ipc.open_stream(chart.proto.datasets[0].data.data).read_all().to_pylist()


def test_dashboard_shows_every_page(db, monkeypatch):
    app = run_app(db, monkeypatch)
    assert [t.label for t in app.tabs] == ["Traces", "Operations", "Compare", "Timeline", "Fusion", "Layer gaps", "AIE iterations"]
    assert not app.error
    traces = frame_with(app, "platform")
    assert traces.name.tolist() == [*PAIR, "nv", "amd", "mlir-aie_parse-trace_test1"]
    ops = frame_with(app, "share_pct")
    assert round(ops.share_pct.sum()) == 100  # the ops report of the first trace
    compare = frame_with(app, "a_cpu_op")
    assert set(compare.op) >= {"Dense GEMM", "Attention"}
    iterations = frame_with(app, "total_span_cycles")
    assert iterations.iteration_index.tolist() == [0, 1]
    # durations in a person's unit, never raw nanoseconds
    for frame in (d.value for d in app.dataframe):
        assert not [c for c in frame.columns if c.endswith("_ns")], list(frame.columns)
    assert any(c in compare.columns for c in ("a_total µs", "a_total ms"))
    assert len(charts(app)) >= 6  # operations, compare (wall-clock, steps, operations), layer gaps, AIE
    # the Compare tab leads with what to fix first: the why findings, each with its next command
    headers = [h.value for h in app.subheader]
    assert headers.index("What to fix first") < headers.index("Wall-clock time")
    assert any(m.value.startswith("**1. ") and "ms at stake** — " in m.value for m in app.markdown)
    assert any(c.value.startswith("tracedb report ") for c in app.code)


def test_comparison_bars_stand_side_by_side_and_layers_run_in_order(db, monkeypatch):
    app = run_app(db, monkeypatch, trace_a="nv", trace_b="amd")
    pairs = [c for c in charts(app) if "yOffset" in c["encoding"]]
    assert len(pairs) == 3  # wall-clock, operations and layer gaps: A and B next to each other, not stacked
    wall = next(c for c in pairs if c["encoding"]["y"]["field"] == "part")
    assert wall["encoding"]["y"]["sort"][:2] == ["span", "idle"]
    for spec in pairs:
        assert spec["encoding"]["color"]["field"] == "trace" and "stack" not in spec["encoding"]["x"]
        assert spec["encoding"]["x"]["title"].split("(")[1].rstrip(")") in ("ns", "µs", "ms", "s")
    layers = next(c for c in pairs if c["encoding"]["y"]["field"] == "layer")
    order = layers["encoding"]["y"]["sort"]
    assert order == [str(n) for n in sorted(int(v) for v in order)] and len(order) == 12  # 0, 1, 2, ..., 10, 11


def test_steps_stand_as_stacked_bars(db, monkeypatch):
    app = run_app(db, monkeypatch)  # the BERT pair: one ProfilerStep each
    steps = next(c for c in charts(app) if c["encoding"]["x"].get("stack") == "zero")
    assert steps["encoding"]["color"]["field"] == "part"
    assert steps["encoding"]["y"]["sort"] == [f"none 1 · {PAIR[0]}", f"none 1 · {PAIR[1]}"]  # paired
    values = chart_rows(app, steps)
    parts = {v["part"] for v in values}
    assert parts == {"compute", "communication", "memcpy", "idle"}
    # the stacked parts of a step add up to its span (the compare report's steps section)
    with tracedb.connect(db) as con:
        rows = con.report("compare", trace=PAIR[0], vs=PAIR[1]).sections["steps"]
    unit = steps["encoding"]["x"]["field"]
    for side, name in zip("AB", PAIR):
        span = next(r[rows.columns.index("span_ns")] for r in rows.rows if r[rows.columns.index("side")] == side)
        drawn = sum(v[unit] for v in values if v["step"].endswith(name))
        assert drawn == pytest.approx(span / UNITS[unit], rel=1e-6)
    # two traces without steps: nothing to stack, and the page says so
    app = run_app(db, monkeypatch, trace_a="nv", trace_b="amd")
    assert "No steps to chart." in [i.value for i in app.info]


def test_the_timeline_shows_where_each_sides_idle_time_sits(db, monkeypatch):
    """The Timeline tab: the steps of A and B, their timeline strips (A's slowest step above B's),
    then each side's idle gaps by cause and frame, as the gaps report finds them (gaps of 20 µs and
    more)."""
    app = run_app(db, monkeypatch)
    headers = [h.value for h in app.subheader]
    assert f"Idle gaps — A: {PAIR[0]}" in headers and f"Idle gaps — B: {PAIR[1]}" in headers
    idle = [c for c in charts(app) if c["encoding"]["y"]["field"] == "finding" and "idle" in c["encoding"]["x"]["title"]]
    assert len(idle) == 2
    with tracedb.connect(db) as con:
        gaps = con.report("gaps", trace=PAIR[0], min_gap_us=20).main.records()
    drawn = chart_rows(app, idle[0])
    unit = idle[0]["encoding"]["x"]["field"]
    assert [v["finding"] for v in drawn] == [f"{g['cause']} · {g['frame'] or '(no frame)'}" for g in gaps[:15]]
    assert sum(v[unit] for v in drawn) == pytest.approx(sum(g["idle_ns"] for g in gaps[:15]) / UNITS[unit.split()[-1]],
                                                        rel=1e-6)
    # the strips: A's step above B's, a gap rectangle per idle gap of 20 µs and more in it
    # in a frame of their own: st.html would strip the SVG and leave the caption
    strip = next(f.proto.srcdoc for f in app.get("iframe") if 'class="strips"' in f.proto.srcdoc)
    assert re.findall(r'data-trace="([^"]+)"', strip) == list(PAIR)
    assert not [h for h in app.get("html") if "<svg" in h.proto.body]
    with tracedb.connect(db) as con:
        assert strip == con.timeline_strips(list(PAIR))


def test_names_are_text_and_missing_values_empty(db, monkeypatch):
    """A finding's sentence is shown as it is (__getitem__ or list[int] never bold nor a link), and a
    table's missing value is an empty cell, never "None"."""
    app = run_app(db, monkeypatch)
    with tracedb.connect(db) as con:
        findings = con.report("compare", trace=PAIR[0], vs=PAIR[1])["why"].records()
    shown = [m.value for m in app.markdown if " ms at stake** — " in m.value]
    assert len(shown) == len(findings) > 0
    for text, finding in zip(shown, findings):
        sentence = text.split(" ms at stake** — ", 1)[1]
        assert re.sub(r"\\(.)", r"\1", sentence) == finding["finding"]  # every mark escaped, nothing else changed
        assert not re.search(r"(?<!\\)[_*`\[\]]", sentence)
    frames = [d.value for d in app.dataframe]
    assert frames and not any(f.isna().any().any() for f in frames)


def test_dashboard_compares_the_chosen_pair(db, monkeypatch):
    app = run_app(db, monkeypatch, trace_a="nv", trace_b="amd")
    findings = next(m for m in app.metric if m.label == "Findings")
    assert int(findings.value) >= 1
    fused = frame_with(app, "fused_op")
    assert "RMSNorm+GEMM" in fused.fused_op.tolist()


def test_a_load_between_two_clicks_is_shown(db, tmp_path, monkeypatch):
    """Reports already run are kept between Streamlit's runs of the page, for the file as it stands:
    a trace replaced meanwhile (the same name, another file) is compared anew, never shown from
    the earlier run."""
    copy = tmp_path / "t.duckdb"
    shutil.copy(db, copy)
    pair = {"trace_a": PAIR[0], "trace_b": PAIR[1]}
    before = frame_with(run_app(copy, monkeypatch, **pair), "a_cpu_op")
    other = next(p for p in KINETO if p.name.startswith("a100_triton_example"))
    run_cli("load", other, "--name", PAIR[1], "--replace", db=copy, check=True)
    after = frame_with(run_app(copy, monkeypatch, **pair), "a_cpu_op")
    assert not after.equals(before)
    with tracedb.connect(copy) as con:
        want = con.report("compare", trace=PAIR[0], vs=PAIR[1], section="main").main
    assert after.op.tolist() == [r["op"] for r in want.records()]


def test_dashboard_names_a_missing_database(tmp_path, monkeypatch):
    monkeypatch.setenv("TRACEDB_DB", str(tmp_path / "none.duckdb"))
    app = AppTest.from_file(str(APP), default_timeout=60)
    app.run()
    assert not app.exception and "no such database" in app.error[0].value


BROWSERS = ("chromium", "chromium-browser", "google-chrome")

# Asked of the Timeline tab: the idle gaps its strips' frame draws, once the frame has loaded (0
# until then), and the traces of its strips, A then B
STRIP_GAPS = """(() => {
  const f = [...document.querySelectorAll("iframe")].find(f => (f.srcdoc || "").includes('class="strips"'));
  if (!f || !f.contentDocument || f.contentDocument.readyState !== "complete") return 0;
  return f.contentDocument.querySelectorAll("svg rect.gap").length; })()"""
# Asked of the first screen: true once the app's script has run to its end (a table drawn and the
# status widget no longer running), or has failed
DRAWN = """(() => {
  if (document.querySelector('[data-testid="stException"]')) return true;
  return document.querySelector('[data-testid="stDataFrame"]') !== null
    && document.querySelector('[data-testid="stStatusWidgetRunningIcon"]') === null; })()"""
STRIP_TRACES = """[...[...document.querySelectorAll("iframe")].find(f => (f.srcdoc || "").includes('class="strips"'))
  .contentDocument.querySelectorAll("[data-trace]")].map(e => e.getAttribute("data-trace"))"""


@pytest.mark.skipif(not any(shutil.which(b) for b in BROWSERS), reason="no headless Chromium installed")
def test_dashboard_renders_in_a_headless_browser(db, tmp_path):
    """The app as a person opens it: a Streamlit server, and Chromium running the page's scripts."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(APP), "--server.headless", "true", "--server.port", str(port),
         "--browser.gatherUsageStats", "false", "--", "--db", str(db)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2)
                break
            except OSError:
                time.sleep(0.5)
        page = f"http://127.0.0.1:{port}"
        # the first screen once the app has drawn it, awaited as a state of the page: the app
        # draws over its websocket after the page has loaded
        with Page(page) as first:
            first.wait_for(DRAWN)
            dom = first.evaluate("document.documentElement.outerHTML")
            png = first.screenshot()
        # the Timeline tab, opened by its link, as the browser draws it: the SVG rectangles of the
        # idle gaps in its strips' frame (st.html would have stripped the SVG and left the caption)
        with Page(f"{page}/?tab=Timeline") as tab:
            drawn_gaps = tab.wait_for(STRIP_GAPS)
            drawn_traces = tab.evaluate(STRIP_TRACES)
    finally:
        server.terminate()
        server.wait(timeout=30)
    for tab in ("Traces", "Operations", "Compare", "Timeline", "Fusion", "Layer gaps", "AIE iterations"):
        assert f"<p>{tab}</p>" in dom, tab
    assert "h100_bert-small" in dom and "mi300_bert-small" in dom  # the pair chosen in the sidebar
    assert dom.count("stDataFrame") > 0 and "stException" not in dom and "Traceback" not in dom
    with tracedb.connect(db) as con:
        strip = con.timeline_strips(list(PAIR))
    assert drawn_gaps == strip.count('<rect class="gap"') > 0
    assert drawn_traces == list(PAIR)
    page = tmp_path / "strips.html"
    page.write_text(f"<!DOCTYPE html><html><body>{strip}</body></html>")
    with Page(page.as_uri()) as alone:
        # the page once its strips are in (before, the browser may still show about:blank)
        drawn = alone.wait_for('document.querySelector("[data-trace]") && document.documentElement.outerHTML')
    assert drawn.count('<rect class="gap"') == strip.count('<rect class="gap"') > 0
    assert re.findall(r'data-trace="([^"]+)"', drawn) == list(PAIR)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000


def test_numbers_read_as_a_person_writes_them(db, monkeypatch):
    """Ratios as 0.32x, durations with two decimals, percentages with one."""
    app = run_app(db, monkeypatch, trace_a="nv", trace_b="amd")
    compare = next(d for d in app.dataframe if "ratio" in d.value.columns and "a_cpu_op" in d.value.columns)
    config = compare.proto.columns  # Streamlit's column configuration, as JSON
    spec = json.loads(config)
    frame = compare.value

    def reads(column: str, fmt: str, pattern: str) -> bool:
        """A column formatted by Streamlit, or, where a value is missing, as text of the same form
        with the missing value empty."""
        if column in spec:
            return spec[column]["type_config"]["format"] == fmt
        return all(re.fullmatch(pattern, str(v)) for v in frame[column])

    assert reads("ratio", "%.2fx", r"(-?\d+\.\d\dx)?")
    unit_columns = [c for c in frame.columns if c.endswith((" µs", " ms", " ns", " s"))]
    assert unit_columns and all(reads(c, "%.2f", r"(-?\d+\.\d\d)?") for c in unit_columns)
