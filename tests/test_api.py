"""The Python API: the same results as the command line, as objects a notebook can use."""

from __future__ import annotations

import csv
import io

import pytest

import tracedb
from conftest import FIXTURES, run_cli

BERT = [FIXTURES / "kineto" / f"{n}.json.gz" for n in ("h100_bert-small", "mi300_bert-small")]


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    path = tmp_path_factory.mktemp("api") / "bert.duckdb"
    with tracedb.connect(path, read_only=False) as db:
        outcomes = [db.load(p) for p in BERT]
    assert [o.status for o in outcomes] == ["loaded", "loaded"]
    return path


def test_a_read_only_connection_refuses_changes_with_a_hint(bert):
    with tracedb.connect(bert) as db:
        assert [r[1] for r in db.traces().rows] == ["h100_bert-small", "mi300_bert-small"]
        with pytest.raises(tracedb.TracedbError, match="read_only=False"):
            db.load(BERT[0])
        with pytest.raises(tracedb.TracedbError, match="read_only=False"):
            db.remove("h100_bert-small")


def _csv_sections(text: str) -> list[list[list[str]]]:
    return [list(csv.reader(io.StringIO(block))) for block in text.strip().split("\n\n")]


def _as_csv(value) -> str:
    return "" if value is None else str(value)


@pytest.mark.parametrize("name", ["summary", "ops", "kernels", "phases", "stacks", "layers",
                                  "compare", "alignment", "fusion", "same-kernels"])
def test_every_report_gives_the_cli_s_rows(bert, name):
    args = ["--trace", "h100_bert-small", "--vs", "mi300_bert-small"] \
        if name in ("compare", "alignment", "fusion", "same-kernels") else []
    cli = _csv_sections(run_cli("report", name, *args, "--format", "csv", db=bert, check=True).stdout)
    kwargs = {"trace": "h100_bert-small", "vs": "mi300_bert-small"} if args else {}
    with tracedb.connect(bert) as db:
        result = db.report(name, **kwargs)
    assert len(cli) == len(result.sections)
    for block, section in zip(cli, result.sections.values()):
        assert block[0] == section.columns
        assert block[1:] == [[_as_csv(v) for v in row] for row in section.rows]


def test_a_result_converts_and_shows(bert):
    with tracedb.connect(bert) as db:
        r = db.report("compare", trace="h100_bert-small", vs="mi300_bert-small")
        q = db.sql("SELECT op, count(*) AS kernels FROM kernel_ops GROUP BY op ORDER BY op")
    assert list(r.sections) == ["main", "summary"]
    table = r.arrow()
    assert table.column_names == r.main.columns and table.num_rows == len(r.main.rows)
    assert r["summary"].records()[0]["status"] in ("A slower", "A faster", "within 10%")
    html = r._repr_html_()
    assert "<svg" in html and "<table>" in html and "<html" not in html  # a fragment for a notebook cell
    assert r.to_html().startswith("<!DOCTYPE html>")
    text = r.main.text(width=120)
    assert "a_total µs" in text and "a_top_kernels" not in text  # as the terminal shows it
    assert "a_top_kernels" in r.main.text(width=300, wide=True)
    assert "| op | kernels |" in q.to_markdown()
    with pytest.raises(tracedb.TracedbError, match="no section"):
        r["nope"]
