"""Comparisons of many traces: compare with several --vs or a pattern (compare-many), the trend
report, their table macros and the HTML bar groups."""

from __future__ import annotations

import re

import pytest

import tracedb
from tracedb import TracedbError

from conftest import KINETO, run_cli

PAIR = [next(p for p in KINETO if p.name.startswith(n)) for n in ("h100_bert-small", "mi300_bert-small")]
THIRD = next(p for p in KINETO if p.name.startswith("mi300_vllm"))


@pytest.fixture(scope="module")
def three(tmp_path_factory):
    db = tmp_path_factory.mktemp("many") / "t.duckdb"
    with tracedb.connect(db, read_only=False) as d:
        for path, night in zip(PAIR + [THIRD], ("3", "10", "2")):
            d.load(path, meta={"night": night})
    return db


def test_compare_many_agrees_with_each_pair(three):
    with tracedb.connect(three) as db:
        many = db.report("compare", trace="h100_bert-small", vs=["mi300_bert-small", "mi300_vllm_decode_hipgraph"])
        assert many.report.name == "compare-many"
        rows = many.main.records()
        for other in ("mi300_bert-small", "mi300_vllm_decode_hipgraph"):
            pair = {r["op"]: r
                    for r in db.report("compare", trace="h100_bert-small", vs=other, section="main").main.records()}
            mine = {r["op"]: r for r in rows if r["trace_name"] == other}
            first = {r["op"]: r for r in rows if r["trace_name"] == "h100_bert-small"}
            assert set(pair) <= set(mine) == set(first)
            # an operation of the third trace alone: none on either of these two
            assert all(mine[op]["kernels"] == first[op]["kernels"] == 0 for op in set(mine) - set(pair))
            for op, r in pair.items():  # the same kernels and time as the two-trace comparison
                assert (first[op]["kernels"], mine[op]["kernels"]) == (r["a_kernels"], r["b_kernels"])
                assert (first[op]["total_ns"], mine[op]["total_ns"]) == (r["a_total_ns"], r["b_total_ns"])
                if r["a_total_ns"] and r["b_total_ns"]:
                    assert mine[op]["ratio"] == pytest.approx(r["b_total_ns"] / r["a_total_ns"])
                else:  # an operation one of them lacks has no ratio (not 0.00x)
                    assert mine[op]["ratio"] is None
        traces = many["traces"].records()
        assert [t["trace_name"] for t in traces] == ["h100_bert-small", "mi300_bert-small",
                                                    "mi300_vllm_decode_hipgraph"]
        assert traces[0]["ratio"] == 1.0


def test_patterns_select_in_the_order_named(three):
    with tracedb.connect(three) as db:
        chosen = db.sql("SELECT trace, position FROM chosen_traces(['mi300_*', 'h100_bert-small', 'mi300_bert-small'])")
        assert chosen.rows == [("mi300_bert-small", 1), ("mi300_vllm_decode_hipgraph", 2), ("h100_bert-small", 3)]
        assert db.report("compare", trace="mi300_*").report.name == "compare-many"
        with pytest.raises(TracedbError, match="no trace matches 'a100_\\*'"):
            db.report("compare", trace="a100_*")
        with pytest.raises(TracedbError, match="compares two traces; for more"):
            db.report("fusion", trace="h100_bert-small", vs=["mi300_bert-small", "mi300_vllm_decode_hipgraph"])


def test_trend_orders_by_a_key_as_numbers(three):
    with tracedb.connect(three) as db:
        rows = db.report("trend", trace="*", key="night").main.records()
        steps = {(r["step"], r["trace_name"], r["key_value"]) for r in rows}
        assert steps == {(1, "mi300_vllm_decode_hipgraph", "2"), (2, "h100_bert-small", "3"),
                         (3, "mi300_bert-small", "10")}  # 10 after 3: numbers, not text
        by = {(r["op"], r["step"]): r for r in rows}
        for (op, step), r in by.items():
            before = by.get((op, step - 1))
            if before and before["total_ns"]:
                assert r["change"] == pytest.approx(r["total_ns"] / before["total_ns"])
        loaded = db.report("trend", trace="*").main.records()  # no key: load order
        assert [r["trace_name"] for r in loaded if r["op"] == loaded[0]["op"]] == \
            ["h100_bert-small", "mi300_bert-small", "mi300_vllm_decode_hipgraph"]


def test_an_unknown_trend_key_names_the_keys_there_are(three):
    with tracedb.connect(three) as db:
        with pytest.raises(TracedbError, match=r"no trace has the key 'nigth'; the keys they have: .*night"):
            db.report("trend", trace="*", key="nigth")
        assert db.report("trend", trace="*bert*", key="night").main.rows  # a key some trace has
    run = run_cli("report", "trend", "--trace", "*", "-p", "key=nigth", db=three)
    assert run.returncode == 1 and run.stderr.count("\n") == 1 and "no trace has the key 'nigth'" in run.stderr


def test_cli_and_html_bar_groups(three, tmp_path):
    out = tmp_path / "many.html"
    proc = run_cli("report", "compare", "--trace", "h100_bert-small", "--vs", "mi300_bert-small", "--vs",
                   "mi300_vllm_decode_hipgraph", "--limit", "3", "-f", "html", "-o", out, db=three)
    assert proc.returncode == 0, proc.stderr
    page = out.read_text()
    svg = page[page.index("<svg"):page.index("</svg>")]
    # a bar group per operation (3), a bar per trace in each (3), each bar named by its trace
    assert len(re.findall(r"<rect [^>]+><title>", svg)) == 9
    for name in ("h100_bert-small", "mi300_bert-small", "mi300_vllm_decode_hipgraph"):
        assert svg.count(f" · {name}: ") == 3
    script = run_cli("report", "compare", "--trace", "*bert*", "--show-sql", db=three).stdout
    assert "SET VARIABLE \"traces\" = ['*bert*'];" in script
    assert run_cli("report", "trend", db=three).returncode == 1


def test_two_patterns_pair_the_traces_of_each_model(three):
    """--trace 'h100_*' --vs 'mi300_*' pairs h100_X with mi300_X; each pair's operations are those of
    compare on the pair; a trace with no partner is listed alone; --limit counts rows shown."""
    with tracedb.connect(three) as db:
        pairs = db.report("compare", trace="h100_*", vs="mi300_*")
        assert pairs.report.name == "compare-pairs" and pairs.labels == ("h100_*", "mi300_*")
        overview = {r["key"]: r for r in pairs.main.records()}
        assert set(overview) == {"bert-small", "vllm_decode_hipgraph"}
        assert overview["bert-small"]["paired"] == "both" and overview["vllm_decode_hipgraph"]["paired"] == "only B"
        one = {r["op"]: r for r in db.report("compare", trace="h100_bert-small", vs="mi300_bert-small",
                                             section="main").main.records()}
        ops = [r for r in pairs["ops"].records() if r["key"] == "bert-small"]
        assert {r["op"] for r in ops} == set(one)
        for r in ops:
            mine = one[r["op"]]
            assert (r["a_calls"], r["b_calls"], r["a_total_ns"], r["b_total_ns"]) == \
                (mine["a_calls"], mine["b_calls"], mine["a_total_ns"], mine["b_total_ns"])
            assert r["ratio"] == pytest.approx(mine["ratio"])
        assert overview["bert-small"]["gap_ns"] == sum(r["gap_ns"] for r in ops)
        limited = db.report("compare", trace="h100_*", vs="mi300_*", limit=3)
        assert len(limited["ops"].rows) == 3 and len(limited.main.rows) == 2
        with pytest.raises(TracedbError, match="no trace matches 'a100_\\*'"):
            db.report("compare", trace="a100_*", vs="mi300_*")
    text = run_cli("report", "compare", "--trace", "h100_*", "--vs", "mi300_*", "--limit", "3", db=three,
                   env={"COLUMNS": "120"}, check=True).stdout
    assert "A: h100_*  vs  B: mi300_*" in text


def test_glob_part(three):
    with tracedb.connect(three) as db:
        got = db.sql("SELECT glob_part('h100_bert-small', 'h100_*'), glob_part('h100_a.b_x', 'h100_*_?'), "
                     "glob_part('mi300_x', 'h100_*')").rows[0]
    assert got == ("bert-small", "a.bx", None)
