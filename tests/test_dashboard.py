"""The Streamlit dashboard example (examples/dashboard/app.py), run by Streamlit's AppTest against a
database holding a trace pair and an AIE trace. Skipped when the dashboard extra is not installed."""

from __future__ import annotations

import pytest

from conftest import FIXTURES, KINETO, ROOT, run_cli
from test_compare import A_LAYER, B_LAYER, build

pytest.importorskip("streamlit", reason="the dashboard extra is not installed: pip install '.[dashboard]'")
from streamlit.testing.v1 import AppTest  # noqa: E402

APP = ROOT / "examples" / "dashboard" / "app.py"
PAIR = ("h100_bert-small", "mi300_bert-small")


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dashboard")
    path = tmp / "t.duckdb"
    pair = [next(p for p in KINETO if p.name.startswith(n)) for n in PAIR]
    planted = [build(tmp / "nv.json", A_LAYER), build(tmp / "amd.json", B_LAYER, platform="AMD")]
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


def test_dashboard_shows_every_page(db, monkeypatch):
    app = run_app(db, monkeypatch)
    assert [t.label for t in app.tabs] == ["Traces", "Operations", "Compare", "Fusion", "Layer gaps", "AIE iterations"]
    assert not app.error
    traces = frame_with(app, "platform")
    assert traces.name.tolist() == [*PAIR, "nv", "amd", "mlir-aie_parse-trace_test1"]
    ops = frame_with(app, "share_pct")
    assert round(ops.share_pct.sum()) == 100  # the ops report of the first trace
    compare = frame_with(app, "a_total_ns")
    assert set(compare.op) >= {"Dense GEMM", "Attention"}
    iterations = frame_with(app, "total_span_cycles")
    assert iterations.iteration_index.tolist() == [0, 1]
    assert len(app.get("vega_lite_chart")) >= 4  # operations, compare, layer gaps, AIE


def test_dashboard_compares_the_chosen_pair(db, monkeypatch):
    app = run_app(db, monkeypatch, trace_a="nv", trace_b="amd")
    findings = next(m for m in app.metric if m.label == "Findings")
    assert int(findings.value) >= 1
    fused = frame_with(app, "fused_op")
    assert "RMSNorm+GEMM" in fused.fused_op.tolist()


def test_dashboard_names_a_missing_database(tmp_path, monkeypatch):
    monkeypatch.setenv("TRACEDB_DB", str(tmp_path / "none.duckdb"))
    app = AppTest.from_file(str(APP), default_timeout=60)
    app.run()
    assert not app.exception and "no such database" in app.error[0].value
