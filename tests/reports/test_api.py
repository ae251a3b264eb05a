"""The Python API: the same results as the command line, as objects a notebook can use."""

from __future__ import annotations

import csv
import importlib
import io
import json
from pathlib import Path

import pytest

import tracedb
from conftest import FIXTURES, read_only, run_cli

BERT = [FIXTURES / "kineto" / f"{n}.json.gz" for n in ("h100_bert-small", "mi300_bert-small")]


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    path = tmp_path_factory.mktemp("api") / "bert.duckdb"
    with tracedb.connect(path, read_only=False) as db:
        outcomes = [db.load(p) for p in BERT]
    assert [o.status for o in outcomes] == ["loaded", "loaded"]
    return path


@pytest.fixture(scope="module")
def api_report(bert):
    """A report's result on bert by the API, worked out once for the tests that hold the command
    line's rows and the printed SQL's against it (it only reads the file)."""
    results = {}

    def report(name: str, **kwargs):
        key = (name, tuple(sorted(kwargs.items())))
        if key not in results:
            with tracedb.connect(bert) as db:
                results[key] = db.report(name, **kwargs)
        return results[key]
    return report


def test_a_read_only_connection_refuses_changes_with_a_hint(bert):
    with tracedb.connect(bert) as db:
        assert [r[1] for r in db.traces().rows] == ["h100_bert-small", "mi300_bert-small"]
        with pytest.raises(tracedb.TracedbError, match="read_only=False"):
            db.load(BERT[0])
        with pytest.raises(tracedb.TracedbError, match="read_only=False"):
            db.remove("h100_bert-small")


def _as_csv(value) -> str:
    return "" if value is None else str(value)


# Every report on Kineto traces, by the reports' headers (not those of mlir-aie traces or TensorCast).
REPORTS = sorted(n for n, r in tracedb.reports_available().items()
                 if r.rows_for != "mlir-aie traces" and "forward_passes" not in r.params)


def _args(name: str) -> tuple[list[str], dict]:
    report = tracedb.reports_available()[name]
    if report.aliases and any(a.when == "patterns" for a in report.aliases):
        return ["--trace", "h100_*", "--vs", "mi300_*"], {"trace": "h100_*", "vs": "mi300_*"}
    if report.compares or "traces" in report.params:
        return ["--trace", "h100_bert-small", "--vs", "mi300_bert-small"], {"trace": "h100_bert-small",
                                                                           "vs": "mi300_bert-small"}
    return [], {}


@pytest.mark.parametrize("name", REPORTS)
def test_every_report_gives_the_cli_s_rows(bert, api_report, name):
    args, kwargs = _args(name)
    result = api_report(name, **kwargs)
    for section, rows in result.sections.items():
        out = run_cli("report", name, *args, "--section", section, "--format", "csv", db=bert, check=True).stdout
        block = list(csv.reader(io.StringIO(out)))
        assert block[0] == rows.columns
        assert block[1:] == [[_as_csv(v) for v in row] for row in rows.rows]


@pytest.mark.parametrize("name", REPORTS)
def test_show_sql_runs_in_a_duckdb_shell_as_it_is_printed(bert, api_report, name):
    """--show-sql prints a script a DuckDB shell runs unchanged, giving the report's rows."""
    args, kwargs = _args(name)
    result = api_report(name, **({"phase": "none"} if name == "ops" else {}), **kwargs)
    assert any(r.rows for r in result.sections.values()) or tracedb.reports_available()[name].rows_for
    for section, rows in result.sections.items():
        extra = ["--phase", "none"] if name == "ops" else []
        script = run_cli("report", name, *args, *extra, "--section", section, "--show-sql", db=bert,
                         check=True).stdout
        assert "$" not in script.replace("$.", "")  # no prepared-statement parameter is left
        with read_only(bert) as con:  # a plain DuckDB client, as the shell is
            computed = tracedb.reports_available()[name].computed
            if computed:  # what tracedb computes in Python first, as its script says
                module = importlib.import_module(f"tracedb.{computed}")
                if computed == "critical_steps":
                    module.register(con, kwargs.get("trace"))
                else:
                    module.register(con, kwargs.get("trace"), kwargs.get("vs"), None)
            got = con.execute(script).fetchall()  # the last statement's rows: the section's query
        assert got == rows.rows


def test_csv_of_a_report_of_several_tables_is_one_table_per_stream_or_file(bert, tmp_path):
    args, _ = _args("compare")
    proc = run_cli("report", "compare", *args, "--format", "csv", db=bert, check=True)
    table = list(csv.reader(io.StringIO(proc.stdout)))
    assert table[0][:2] == ["status", "op"] and all(len(r) == len(table[0]) for r in table)
    assert "--section NAME" in proc.stderr and "summary" in proc.stderr
    out = tmp_path / "compare.csv"
    run_cli("report", "compare", *args, "--format", "csv", "-o", out, db=bert, check=True)
    main = list(csv.reader(out.open()))
    summary = list(csv.reader((tmp_path / "compare.summary.csv").open()))
    assert main == table and summary[0] == ["status", "ops", "a_total_ns", "b_total_ns", "gap_ns"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["compare.csv", "compare.steps.csv", "compare.summary.csv",
                                                          "compare.wall-clock.csv", "compare.why.csv"]  # no leftovers


def test_load_all_loads_what_it_can_and_names_what_it_cannot(tmp_path):
    seen, failed = [], []
    with tracedb.connect(tmp_path / "all.duckdb", read_only=False) as db:
        done = db.load_all([BERT[0], tmp_path / "missing.json", BERT[1]], on_outcome=seen.append,
                           on_error=lambda path, why: failed.append((path.name, why)))
        again = db.load_all([BERT[0]])
        names = [r[1] for r in db.traces().rows]
    # on_outcome as each lands (workers finish in any order); the summary in the order given
    assert [o.name for o in done.outcomes] == sorted(o.name for o in seen) == ["h100_bert-small", "mi300_bert-small"]
    assert [p.name for p, _ in done.failures] == ["missing.json"] and "no such file" in failed[0][1]
    assert done.result().columns[:3] == ["name", "status", "trace_id"]
    assert [o.status for o in again.outcomes] == ["skipped"] and names == ["h100_bert-small", "mi300_bert-small"]
    with tracedb.connect(tmp_path / "all.duckdb", read_only=False) as db:
        with pytest.raises(tracedb.TracedbError, match="--name applies to one file"):
            db.load_all(BERT, name="x")


def test_schema_and_refresh_through_the_api(bert, tmp_path):
    with tracedb.connect(bert) as db:
        cols = db.schema("kernels").records()
        assert {"object": "kernels", "kind": "table", "column": "dur_ns", "type": "BIGINT"}.items() <= \
            next(c for c in cols if c["column"] == "dur_ns").items()
        with pytest.raises(tracedb.TracedbError, match="no table or view named"):
            db.schema("nope")
        with pytest.raises(tracedb.TracedbError, match="read_only=False"):
            db.refresh()


def test_a_result_converts_and_shows(bert):
    with tracedb.connect(bert) as db:
        r = db.report("compare", trace="h100_bert-small", vs="mi300_bert-small")
        q = db.sql("SELECT op, count(*) AS kernels FROM kernel_ops GROUP BY op ORDER BY op")
    assert list(r.sections) == ["why", "wall-clock", "main", "summary", "steps"] and r.main_name == "main"
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


def test_in_units_per_column_or_shared_for_one_axis():
    r = tracedb.Result(["op", "a_total_ns", "b_total_ns", "share_pct"],
                       [("x", 5_000_000, 3_000, 50.0), ("y", 2_000_000, 1_000, 50.0)],
                       {"a_total_ns": "duration", "b_total_ns": "duration", "share_pct": "percent"})
    own = r.in_units()
    assert own.columns == ["op", "a_total ms", "b_total µs", "share_pct"] and own.rows[0] == ("x", 5.0, 3.0, 50.0)
    shared = r.in_units(shared=True)  # A and B drawn on one axis: one unit, the largest's
    assert shared.columns == ["op", "a_total ms", "b_total ms", "share_pct"] and shared.rows[0] == ("x", 5.0, 0.003, 50.0)


def test_ctrl_c_in_a_load_names_what_was_committed(tmp_path, monkeypatch):
    """Rules stored and traces loaded before a Ctrl-C are named; the file in progress is not."""
    rules = tmp_path / "my_rules.csv"
    rules.write_text("priority,platform,match,pattern,op,label\n1,AMD,prefix,attn_fwd,Attention,mine\n")
    real = tracedb.Database.load

    def interrupted_on_the_second(self, path, **kw):
        if Path(path) == BERT[1]:
            raise KeyboardInterrupt
        return real(self, path, **kw)

    monkeypatch.setattr(tracedb.Database, "load", interrupted_on_the_second)
    with tracedb.connect(tmp_path / "i.duckdb", read_only=False) as db:
        with pytest.raises(tracedb.api.Interrupted) as caught:
            db.load_all(BERT, rules=rules, jobs=1)  # one after the other: the second is in progress
    assert str(caught.value) == ("interrupted; rules 'my_rules.csv' stored; loaded: h100_bert-small "
                                 "(the file in progress was not loaded)")


def test_csv_files_of_a_report_are_written_all_or_none(bert, tmp_path):
    args, _ = _args("alignment")
    (tmp_path / "out.pairs.csv").mkdir()  # the third file cannot be written
    proc = run_cli("report", "alignment", *args, "--format", "csv", "-o", tmp_path / "out.csv", db=bert)
    assert proc.returncode == 1 and "out.pairs.csv: is a directory" in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.pairs.csv"]


def test_show_sql_quotes_a_hostile_value_as_one_literal(bert):
    hostile = "x'; DROP TABLE traces; --"
    script = run_cli("report", "ops", "--trace", hostile, "--show-sql", db=bert, check=True).stdout
    assert "SET VARIABLE \"trace\" = 'x''; DROP TABLE traces; --';" in script
    with read_only(bert) as con:
        assert con.execute(script).fetchall() == []  # a trace of that name, which there is not
        assert con.execute("SELECT count(*) FROM traces").fetchone()[0] == 2


@pytest.mark.parametrize("args", [("ops",), ("ops", "--limit", "2"), ("compare",), ("kernels",)])
def test_printing_a_report_shows_what_the_command_prints(bert, args):
    """print(db.report(...)) and tracedb report share one presentation: a table per trace, the first
    40 rows of a long one with the totals over every row, the same titles."""
    name, *rest = args
    limit = int(rest[1]) if rest else None
    pair = _args("compare")[0] if name == "compare" else ()
    cli = run_cli("report", name, *pair, *rest, db=bert, env={"COLUMNS": "120"}, check=True).stdout
    with tracedb.connect(bert) as db:
        kw = {"trace": pair[1], "vs": pair[3]} if pair else {}
        result = db.report(name, limit=limit, **kw)
    assert result.text(width=120) == cli


def test_a_prepared_report_is_what_every_caller_runs(bert):
    """reports.prepare routes, binds and checks once, without a database: an alias's report for a
    list of traces, a pattern kept for the database to resolve, an unknown option or a clash with
    one refused at once; the Bound runs on a connection into what db.report gives, and its script
    is what --show-sql prints."""
    from tracedb import reports

    many = reports.prepare("compare", {"trace": "h100_bert-small", "vs": ["mi300_bert-small", "h100_bert-small"]})
    assert many.report.name == "compare-many" and many.values["traces"] == [
        "h100_bert-small", "mi300_bert-small", "h100_bert-small"]
    bound = reports.prepare("kernels", {"trace": "h100_*", "limit": 3})
    assert bound.values["trace"] == "h100_*" and bound.values["limit"] == 3
    with pytest.raises(tracedb.TracedbError, match="no option '--depth'"):
        reports.prepare("compare", {}, words=["--depth", "2"])
    with pytest.raises(tracedb.TracedbError, match="use --phase instead"):
        reports.prepare("compare", {"trace": "a", "vs": "b"}, params={"phase": "decode"})
    with pytest.raises(tracedb.TracedbError, match="has no section 'nope'"):
        reports.prepare("compare", {"trace": "a", "vs": "b"}, section="nope")
    with tracedb.connect(bert) as db:
        ran = db.run(bound)
        assert ran.params["trace"] == "h100_bert-small"  # the pattern's one trace
        asked = db.report("kernels", trace="h100_bert-small", limit=3)
        assert {n: r.rows for n, r in ran.sections.items()} == {n: r.rows for n, r in asked.sections.items()}
    shown = run_cli("report", "kernels", "--trace", "h100_*", "--limit", "3", "--show-sql", db=bert,
                    check=True).stdout
    assert shown.rstrip("\n") == bound.script()


def test_a_section_asked_for_is_the_only_one_run(bert, monkeypatch):
    """--section (section= in the API) runs that section's query alone: the others are neither
    shown nor paid for (compare's why section was most of a `--section main`'s time); so does
    CSV on standard output, which shows the main table alone."""
    from tracedb import reports

    ran = []
    real = reports._execute

    def counting(con, report, sql, values):
        ran.append(sql.split("\n", 1)[0])
        return real(con, report, sql, values)

    monkeypatch.setattr(reports, "_execute", counting)
    with tracedb.connect(bert) as db:
        whole = db.report("compare", trace="h100_bert-small", vs="mi300_bert-small")
        assert len(ran) == len(whole.sections) > 2
        ran.clear()
        one = db.report("compare", trace="h100_bert-small", vs="mi300_bert-small", section="summary")
    assert ran == ["-- Section: summary"] and list(one.sections) == ["summary"]
    assert one.sections["summary"].rows == whole.sections["summary"].rows
    ran.clear()
    out = run_cli("report", "compare", "--trace", "h100_bert-small", "--vs", "mi300_bert-small", "--section", "why",
                  "--format", "json", db=bert, check=True).stdout
    assert ran == ["-- Section: why"] and json.loads(out)
    ran.clear()  # CSV on standard output holds the main table alone: the others are named, not run
    csv_run = run_cli("report", "compare", "--trace", "h100_bert-small", "--vs", "mi300_bert-small",
                      "--format", "csv", db=bert, check=True)
    assert ran == ["-- Report: compare"] and "its other tables (why, wall-clock, summary, steps)" in csv_run.stderr
    assert list(csv.reader(io.StringIO(csv_run.stdout)))[0] == whole.sections["main"].columns


def test_state_changes_with_what_a_reader_sees_and_only_then(tmp_path, monkeypatch):
    """tracedb.state, a cache's key (the dashboard's): a database's changes with a load, a rule and
    a removal, a lake's with a load, a replace and its user rules; reading changes
    neither, and a file copied back over itself is a change. A file changed within a tick of its
    timestamps (RACY_NS) is taken for changed at every call; here the tick is 0, so that what is
    compared is the files' own sizes, inodes and times."""
    from tracedb import filestate

    monkeypatch.setattr(filestate, "RACY_NS", 0)
    db_path, lake = tmp_path / "t.duckdb", tmp_path / "lake"
    rules = tmp_path / "mine.csv"
    rules.write_text("priority,platform,match,pattern,op,label\n1,any,prefix,my_kernel,Attention,mine\n")
    seen = [tracedb.state(db_path)]

    def changed(path) -> bool:
        now = tracedb.state(path)
        new = now not in seen
        seen.append(now)
        return new

    with tracedb.connect(db_path, read_only=False) as db:
        db.load(BERT[0])
    assert changed(db_path)
    with tracedb.connect(db_path) as db:
        db.report("summary")
    assert not changed(db_path)
    with tracedb.connect(db_path, read_only=False) as db:
        db.rules.add(rules)
    assert changed(db_path)
    with tracedb.connect(db_path, read_only=False) as db:
        db.remove("h100_bert-small")
    assert changed(db_path)
    copy = tmp_path / "copy.duckdb"
    copy.write_bytes(db_path.read_bytes())
    copy.replace(db_path)  # the same bytes, another file
    assert changed(db_path)

    seen = [tracedb.state(lake)]
    run_cli("load", BERT[0], "--lake", lake, check=True)
    assert changed(lake)
    with tracedb.connect(lake) as reader:
        reader.report("summary")
    assert not changed(lake)
    run_cli("load", BERT[1], "--name", "h100_bert-small", "--lake", lake, "--replace", check=True)
    assert changed(lake)
    # an export read in place holds the user's rules beside its traces
    export = tmp_path / "export"
    with tracedb.connect(tmp_path / "ruled.duckdb", read_only=False) as db:
        db.load(BERT[0])
        db.rules.add(rules)
        db.export(export)
    seen = [tracedb.state(export)]
    user_rules = next(export.glob("*/user.parquet"))
    user_rules.write_bytes(user_rules.read_bytes())  # rewritten: what a reader builds its views from
    assert changed(export)


def test_a_file_changed_within_a_tick_of_its_times_is_never_taken_as_current(tmp_path, monkeypatch):
    """Two changes within one tick of the file's timestamps could leave its times as they were:
    while a file is that recent, each state is new; once older, equal states mean the same file."""
    from tracedb import filestate

    path = tmp_path / "t.duckdb"
    with tracedb.connect(path, read_only=False) as db:
        db.load(BERT[0])
    monkeypatch.setattr(filestate, "RACY_NS", 10**30)  # every file as recent as can be
    assert tracedb.state(path) != tracedb.state(path)
    monkeypatch.setattr(filestate, "RACY_NS", 0)
    assert tracedb.state(path) == tracedb.state(path)
