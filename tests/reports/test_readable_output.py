"""Output a person can trust at a glance: identifiers whole, totals that are the whole result's,
sql printing what is stored, tables that fit a pipe, parameters checked against the report."""

from __future__ import annotations

import csv
import io
import json
import shlex

import pytest

import tracedb
from conftest import KINETO, run_cli
from tracedb import render, reports

LONG = "mi300_vllm_decode_hipgraph__inference_with_a_name_longer_than_any_column"


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    db = tmp_path_factory.mktemp("readable") / "r.duckdb"
    by_name = {p.name.split(".")[0]: p for p in KINETO}
    run_cli("load", by_name["h100_bert-small"], by_name["mi300_bert-small"], "--jobs", "1", db=db, check=True)
    run_cli("load", by_name["mi300_vllm_decode_hipgraph"], "--name", LONG, db=db, check=True)
    return db


def test_trace_names_are_never_cut(db):
    for args in (("ls",), ("report", "timeline"), ("report", "summary")):
        out = run_cli(*args, db=db, env={"COLUMNS": "80"}).stdout
        assert LONG in out, out
        assert "…" not in "".join(line for line in out.splitlines() if LONG[:20] in line)


def test_frames_are_cut_in_the_middle_never_left_out(db):
    """A frame (a path, a line, a function) keeps its beginning and its end, at least 40 characters
    of it; the whole frame with --wide."""
    for width in ("120", "80"):
        out = run_cli("report", "gaps", "--trace", "h100_bert-small", "-p", "min_gap_us=20", db=db,
                      env={"COLUMNS": width}).stdout
        with tracedb.connect(db) as con:
            frames = {r[0] for r in con.sql("SELECT frame FROM gpu_idle_gaps('h100_bert-small', 20000) "
                                            "WHERE frame IS NOT NULL").rows}
        assert frames
        for frame in frames:
            shown = [line for line in out.splitlines() if frame[:12] in line and frame[-12:] in line]
            assert shown or frame in out, (frame, out)
        assert "left out" not in out or "frame" not in out.split("left out", 1)[1].splitlines()[0]
    wide = run_cli("report", "gaps", "--trace", "h100_bert-small", "-p", "min_gap_us=20", "--wide", db=db).stdout
    assert all(frame in wide for frame in frames)


def test_numbers_are_never_left_out(db):
    """At any width a table keeps every numeric column (the sort column among them): the texts give way."""
    runs = [r for r in reports.available().values() if "h100_bert-small" in r.examples[0]]
    assert len(runs) >= 10
    for report in runs:
        args = shlex.split(report.examples[0])[2:]
        main = report.sections[0].columns
        numeric = {c for c in main if main[c].format not in ("text", "kernel")}  # as its header declares
        out = run_cli("report", *args, db=db, env={"COLUMNS": "120"}).stdout
        lines = out.splitlines()
        for n, line in enumerate(lines):
            if "left out to fit" in line:
                gone = set((line + " ".join(lines[n + 1:n + 2])).split(":", 1)[1].split("(")[0]
                           .replace(" ", "").split(","))
                if numeric & gone:  # a number goes only once every text that may go has gone
                    texts = {c for c in main if c not in numeric and not (main[c].wide or main[c].note or main[c].lead
                                                                          or main[c].json_only)}
                    texts -= render.IDENTIFIERS | render.TRACE_COLUMNS | {next(iter(main))}
                    texts.discard(list(main)[-1])  # a last column of text folds: it always stays
                    assert texts <= gone, (args, line)
    out = run_cli("sql", "SELECT name, dur_ns FROM kernels ORDER BY dur_ns DESC LIMIT 5", db=db,
                  env={"COLUMNS": "60"}).stdout
    assert "dur_ns" in out and "…" in out


def test_a_trace_that_is_not_there_suggests_those_that_are(db):
    run = run_cli("report", "summary", "--trace", "h100", db=db)
    assert run.returncode == 1 and run.stderr.strip() == "tracedb: error: no trace 'h100'; did you mean 'h100_bert-small'?"
    run = run_cli("report", "summary", "--trace", "mi300_bert-smal", db=db)
    assert "did you mean 'mi300_bert-small'" in run.stderr


def test_totals_are_the_whole_results_under_a_limit(db):
    every = json.loads(run_cli("report", "ops", "--trace", "h100_bert-small", "--format", "json", db=db).stdout)
    total = sum(r["total_ns"] for r in every)
    out = run_cli("report", "ops", "--trace", "h100_bert-small", "--limit", "3", "--format", "markdown", db=db)
    last = [line for line in out.stdout.splitlines() if line.startswith("| **total")][0]
    assert f"**total of {len(every)}, 3 shown**" in last
    with tracedb.connect(db) as con:
        limited = con.report("ops", trace="h100_bert-small", limit=3).main
    assert len(limited.rows) == 3 and sum(r[limited.columns.index("total_ns")] for r in limited.total_rows) == total
    assert limited.total_label() == f"total of {len(every)}, 3 shown"


def test_a_section_limit_does_not_apply_to_says_so(db):
    with tracedb.connect(db) as con:
        r = con.report("compare", trace="h100_bert-small", vs="mi300_bert-small", limit=2)
        plain = con.report("compare", trace="h100_bert-small", vs="mi300_bert-small")
    assert r.sections["summary"].title.endswith("(every row: --limit is for the main table)")
    assert "every row" not in r.main.title and "every row" not in plain.sections["summary"].title
    assert len(r.main.rows) == 2 and sum(x[r.main.columns.index("gap_ns")] for x in r.main.total_rows) == sum(
        x[plain.main.columns.index("gap_ns")] for x in plain.main.rows)


def test_sql_prints_what_is_stored(db):
    run = run_cli("sql", "SELECT kernel_id, ts_ns, dur_ns FROM kernels ORDER BY trace_id, kernel_id", db=db)
    with tracedb.connect(db) as con:
        rows = con.sql("SELECT kernel_id, ts_ns, dur_ns FROM kernels ORDER BY trace_id, kernel_id").rows
    body = [line.split() for line in run.stdout.splitlines() if line.strip() and line.split()[0].isdigit()]
    assert body[:40] == [[str(v) for v in row] for row in rows[:40]]  # every digit, no unit, no separator
    assert f"{len(rows):,} rows, 40 shown" in run.stdout
    every = list(csv.reader(io.StringIO(run_cli("sql", "SELECT ts_ns FROM kernels", "--format", "csv", db=db).stdout)))
    assert len(every) == len(rows) + 1
    units = run_cli("sql", "SELECT dur_ns FROM kernels ORDER BY dur_ns DESC", "--units", "--limit", "2", db=db).stdout
    assert "dur µs" in units or "dur ms" in units


def test_a_table_to_a_pipe_is_120_columns_wide(db, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    out = run_cli("ls", db=db).stdout
    assert 110 <= max(len(line) for line in out.splitlines()) <= 120


def test_reports_list_each_summary_whole_and_each_default_once():
    out = run_cli("reports", env={"COLUMNS": "100"}).stdout
    flat = " ".join(out.split())
    for report in reports.available().values():
        assert " ".join(report.summary.split()) in flat
    assert ("parameters: --trace (default all); -p M/K/N/rows/cols/warmup/iterations/clock_ghz/peak_macs=... "
            "(default none)") in flat  # one default for the nine that share it
    assert max(len(line) for line in out.splitlines()) <= 100


def test_parameters_are_checked_against_the_report(db):
    run = run_cli("report", "gaps", "-p", "min_gap=5", db=db)
    assert run.returncode == 1 and run.stderr.strip() == (
        "tracedb: error: report gaps has no parameter min_gap; its parameters: --trace (default all), "
        "--phase (default all), min_gap_us (default 50), --limit (default all), step (default none)")
    run = run_cli("report", "gaps", "-p", "min_gap_us=abc", db=db)
    assert run.returncode == 1 and run.stderr.strip() == (
        "tracedb: error: report gaps: min_gap_us is a whole number, at least 0 (default 50), not 'abc'")
    assert run_cli("report", "gaps", "-p", "min_gap_us=20", db=db).returncode == 0


def test_span_and_busy_mean_the_same_in_summary_and_timeline(db):
    with tracedb.connect(db) as con:
        for name in ("h100_bert-small", LONG):
            summary = con.report("summary", trace=name).main.records()[0]
            whole = con.report("timeline", trace=name).main.records()[0]
            assert (summary["span_ns"], summary["busy_ns"], summary["idle_ns"]) == (
                whole["span_ns"], whole["busy_ns"], whole["idle_ns"])


def test_a_real_pair_at_120_columns_shows_names_whole_and_frames_cut_in_the_middle(corpus_db):
    """Every report on the corpus's TimeSformer pair, piped at 120 columns: no line wider, each
    trace's name whole in its titles, each gap's frame whole or cut in the middle."""
    db = corpus_db
    a, b = "h100_timesformer", "mi300_timesformer"
    one = [r for r, rep in reports.available().items() if not rep.compares and "traces" not in rep.params
           and not r.startswith(("aie-", "tc-"))]
    runs = [("report", r, "--trace", a) for r in one] + [
        ("report", r, "--trace", a, "--vs", b) for r, rep in reports.available().items()
        if rep.compares and r not in ("tc-vs-prof", "compare-pairs")]
    for args in runs:
        out = run_cli(*args, db=db, env={"COLUMNS": "120"})
        assert out.returncode == 0, (args, out.stderr)
        lines = out.stdout.splitlines()
        assert max(len(line) for line in lines) <= 120, args
        assert a in out.stdout or "(no rows)" in out.stdout, args
    with tracedb.connect(db) as con:
        frames = {r[0] for r in con.sql(f"SELECT frame FROM gpu_idle_gaps('{a}', 50000) WHERE frame IS NOT NULL").rows}
    gaps = run_cli("report", "gaps", "--trace", a, db=db, env={"COLUMNS": "120"}).stdout
    # each frame whole, or cut in the middle: its path's beginning and its function kept
    assert frames and all(f in gaps or any(f[:12] in line and f[-12:] in line for line in gaps.splitlines())
                          for f in frames)


def test_row_heights_read_a_drawn_table():
    """The screen fitting counts each row's lines on the table as drawn: a folded cell's lines
    belong to its row."""
    import io

    from tracedb.cli import row_heights

    class Narrow(io.StringIO):
        width = 60

    out = Narrow()
    sentences = ["short", "a sentence long enough to fold over two or three lines of a narrow table", "x"]
    render.write_table(["rank", "at_stake_ns", "finding"], [(i + 1, 1000 * (i + 1), s) for i, s in enumerate(sentences)],
                       out, totals=["at_stake_ns"])
    heights = row_heights(out.getvalue())
    assert len(heights) == 3 and heights[0] == heights[2] == 1 and heights[1] >= 2
