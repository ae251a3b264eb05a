"""Reports and the analysis views on the real fixtures, through the command line."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import re

import pytest

from conftest import KINETO, database_of, read_only, run_cli
from tracedb import reports

# The test lists come from the reports' headers: a new report file is tested by being there.
AVAILABLE = reports.available()
ONE_TRACE = sorted(n for n, r in AVAILABLE.items() if not r.compares and "traces" not in r.params)
REPORTS = [n for n in ONE_TRACE if AVAILABLE[n].rows_for is None]  # rows for every trace with kernels
# two traces, --trace A --vs B (tc-vs-prof: TensorCast against an Ascend profile, tests/ingest/test_ascend.py)
COMPARISONS = sorted(n for n, r in AVAILABLE.items() if r.needs_vs and not r.aliases and "forward_passes" not in r.params)
WHY = sorted(n for n, r in AVAILABLE.items() if r.compares and not r.needs_vs)  # two traces, or one alone
BY_NAME = {p.name.split(".")[0]: p for p in KINETO}


@pytest.fixture(scope="module")
def fixture_db(tmp_path_factory):
    return database_of(tmp_path_factory, "reports", KINETO)


@pytest.fixture
def ro(fixture_db):
    with read_only(fixture_db) as con:
        yield con


def test_every_kernel_classified_and_other_within_goal(ro):
    rows = ro.execute(
        "SELECT t.name, count(*), count(o.op), sum(k.dur_ns) FILTER (o.op = 'Other') / sum(k.dur_ns) "
        "FROM kernels k JOIN traces t USING (trace_id) LEFT JOIN kernel_ops o USING (trace_id, kernel_id) "
        "GROUP BY t.name").fetchall()
    assert len(rows) == len([p for p in KINETO if "cpu_only" not in p.name])
    for name, kernels, classified, other_share in rows:
        assert kernels == classified, name
        assert (other_share or 0) <= 0.05, name


@pytest.mark.parametrize("trace, layers, markers", [
    ("h100_bert-small", 4, "flash_fwd"), ("mi300_bert-small", 4, "attn_fwd"),
    ("mi300x_sglang_qwen3-8b_decode", 36, "paged_attention"), ("mi300_vllm_decode_hipgraph", 24, "attention"),
])
def test_fixture_layers(ro, trace, layers, markers):
    got = ro.execute(
        "SELECT forward_pass, count(DISTINCT layer), min(layer), max(layer) FROM kernel_layers "
        "JOIN traces USING (trace_id) WHERE name = ? AND layer IS NOT NULL GROUP BY 1", [trace]).fetchall()
    assert [(g[1], g[2], g[3]) for g in got] == [(layers, 0, layers - 1)]
    # every layer holds exactly one attention (marker group), whatever its kernel count
    per_layer = ro.execute(
        "SELECT l.layer, count(*) FILTER (o.op = 'Attention') FROM kernel_layers l "
        "JOIN kernel_ops o USING (trace_id, kernel_id) JOIN traces t USING (trace_id) "
        "WHERE t.name = ? AND l.layer IS NOT NULL GROUP BY 1", [trace]).fetchall()
    attention_kernels = {n for (n,) in ro.execute(
        "SELECT count(*) FROM kernels k JOIN kernel_ops o USING (trace_id, kernel_id) JOIN traces t USING (trace_id) "
        "WHERE t.name = ? AND o.op = 'Attention' AND k.name ILIKE ?", [trace, f"%{markers}%"]).fetchall()}
    assert all(n >= 1 for _, n in per_layer) and attention_kernels


def test_fixture_phases_and_graph_replay(ro):
    phases = dict(ro.execute("SELECT t.name, string_agg(DISTINCT p.phase) FROM kernel_phases p "
                             "JOIN traces t USING (trace_id) GROUP BY 1").fetchall())
    assert phases["mi300x_sglang_qwen3-8b_decode"] == "decode"
    assert phases["mi300_vllm_decode_hipgraph"] == "decode"
    assert phases["h100_bert-small"] == "none"
    assert ro.execute("SELECT DISTINCT iteration FROM kernel_phases JOIN traces USING (trace_id) "
                      "WHERE name = 'h100_bert-small'").fetchall() == [(6,)]
    # the HIP graph replay: one launch, 421 kernels, one row each in every view
    replay = ro.execute(
        "SELECT count(*), count(DISTINCT launch_id) FROM kernel_launches JOIN traces USING (trace_id) "
        "WHERE name = 'mi300_vllm_decode_hipgraph' AND graph").fetchone()
    assert replay == (421, 1)
    for view in ("kernel_ops", "kernel_phases", "kernel_stacks", "kernel_layers", "kernel_launches"):
        assert ro.execute(f"SELECT count(*), count(DISTINCT (trace_id, kernel_id)) FROM {view}").fetchone() == \
            ro.execute("SELECT count(*), count(*) FROM kernels").fetchone()
    summary = ro.execute("SELECT DISTINCT summary FROM kernel_stacks s JOIN kernel_launches l "
                         "USING (trace_id, kernel_id) WHERE l.graph").fetchall()
    assert all(s[0].endswith("[CUDA graph]") for s in summary)


def test_reports_are_listed():
    files = sorted(p.stem for p in reports.reports_dir().glob("*.sql"))
    assert sorted(AVAILABLE) == files, "a report is named as its file"
    assert {"kernels", "ops", "summary", "timeline"} <= set(REPORTS) and {"compare", "fusion"} <= set(COMPARISONS)
    assert WHY == ["host-frames", "why"]
    assert all(r.examples for r in AVAILABLE.values()), "every report shows how to run it"
    proc = run_cli("reports", "--format", "json", check=True)
    assert sorted(r["report"] for r in json.loads(proc.stdout)) == files


@pytest.mark.parametrize("name", sorted(set(ONE_TRACE) - set(REPORTS)))
def test_report_with_rows_for_some_traces(fixture_db, name):
    """A report whose header says which traces it has rows for: rows only of fixture traces, every
    column documented in order."""
    proc = run_cli("report", name, "--format", "csv", db=fixture_db, check=True)
    rows = list(csv.DictReader(io.StringIO(proc.stdout)))
    assert {r["trace"] for r in rows} <= set(BY_NAME)
    if rows:
        assert list(rows[0]) == list(reports.get(name).columns)


def test_aliases_in_headers_route_compare():
    assert reports.aliased("compare", "h100_*", ["mi300_*"]) == "compare-pairs"
    assert reports.aliased("compare", "a", ["b", "c"]) == "compare-many"
    assert reports.aliased("compare", "h100_*", []) == "compare-many"
    assert reports.aliased("compare", "a", ["b"]) == "compare"
    assert reports.aliased("ops", "h100_*", []) == "ops"
    assert reports.route("compare", "a", ["b", "c"], {}) == ("compare-many", None, None, {"traces": ["a", "b", "c"]})


def test_a_report_header_declares_its_own_options(tmp_path):
    path = tmp_path / "mine.sql"
    path.write_text("-- Report: mine\n-- Mine.\n-- Alias: ops when many\n-- Parameters:\n"
                    "--   trace = NULL  trace\n--   depth = 3 option  how deep\n--   width = 2  how wide\n"
                    "-- Columns:\n--   trace  text  trace\nSELECT 1 AS trace\n")
    mine = reports.parse(path)
    assert mine.params["depth"].option and not mine.params["width"].option and mine.params["trace"].option
    assert [(a.name, a.when) for a in mine.aliases] == [("ops", "many")]
    assert reports.given_as(mine, "depth") == "--depth" and reports.given_as(mine, "width") == "width"
    path.write_text(path.read_text().replace("when many", "when often"))
    with pytest.raises(reports.TracedbError, match="line 3: expected 'Alias: REPORT when patterns | many'"):
        reports.parse(path)


def test_a_header_key_is_one_entry_of_the_keys_table(tmp_path, monkeypatch):
    """A new kind of header line is one entry of reports.KEYS: the parser applies it, and the
    reference page lists it with its form and what it does."""
    from tracedb import docgen

    seen = []
    key = reports.Key(lambda report, section, value: seen.append((report.name, section.name, value)),
                      "says what it owns", "Owner: a team")
    monkeypatch.setitem(reports.KEYS, "owner", key)
    path = tmp_path / "mine.sql"
    path.write_text("-- Report: mine\n-- Mine.\n-- Owner: the efficiency team\n-- Parameters:\n--   trace = NULL  trace\n"
                    "-- Columns:\n--   trace  text  trace\nSELECT 1 AS trace\n")
    mine = reports.parse(path)
    assert seen == [("mine", "main", "the efficiency team")] and mine.summary == "Mine."
    assert "| `-- Owner: a team` | says what it owns |" in docgen.reports_page()
    # a line whose word is no key stays in the summary
    path.write_text(path.read_text().replace("Owner:", "Team:"))
    assert reports.parse(path).summary == "Mine. Team: the efficiency team"


SHARING = sorted(n for n, r in AVAILABLE.items() if any(s.shared for s in r.sections))


# what a report sees while it runs: the temporary tables standing in for views, and the traces of
# the two views it shares
SEEN = ("SELECT error('seen: ' || (SELECT string_agg(table_name, ',' ORDER BY table_name) FROM duckdb_tables() "
        "WHERE temporary) || ' of ' || " + " || ' and ' || ".join(
            f"coalesce((SELECT string_agg(DISTINCT t.name, '+' ORDER BY t.name) FROM {view} JOIN traces t "
            "USING (trace_id)), 'none')" for view in ("device_activity", "step_windows")) + ")")


@pytest.mark.parametrize("db, name, trace, vs", [
    *[("fixture_db", n, "h100_bert-small", "mi300_bert-small") for n in SHARING],
    ("fixture_db", "why", "mi300_vllm_decode_hipgraph", None),  # a graph replay alone, against its ideal
    ("fixture_db", "host-frames", "mi300x_sglang_qwen3-8b_decode", None),
    ("corpus_db", "why", "mi300x_xdit_flux1_compiled", None),  # a replay whose capture, another trace, is read
    ("corpus_db", "why", "h100_timesformer", "mi300_timesformer")])
def test_a_shared_view_is_a_cache_and_changes_no_row(request, db, name, trace, vs):
    """The views a report shares (Shared:) are computed for its traces alone: on a database of
    other traces (a replay's capture among them) every section's rows are those its SQL gives
    reading the views themselves, by run() and by run_by_limit() alike, and no temporary table
    outlives the run, even one that fails."""
    assert SHARING == ["compare", "host-frames", "why"]  # each report that shares is a case above
    bound = reports.prepare(name, {"trace": trace, "vs": vs})
    unshared = dataclasses.replace(bound, report=dataclasses.replace(
        bound.report, sections=[dataclasses.replace(s, shared=[]) for s in bound.report.sections]))
    failing = dataclasses.replace(bound, report=dataclasses.replace(bound.report, sections=[
        reports.Section("main", "", SEEN, shared=["device_activity", "step_windows"])]))
    with read_only(request.getfixturevalue(db)) as con:
        temporary = "SELECT count(*) FROM duckdb_tables() WHERE temporary"
        kept = bound.run(con)
        assert con.execute(temporary).fetchone()[0] == 0
        sides = "+".join(sorted(n for n in (trace, vs) if n))
        with pytest.raises(reports.TracedbError, match=re.escape(f"seen: device_activity,step_windows of {sides} and {sides}") + "$"):
            failing.run(con)
        assert con.execute(temporary).fetchone()[0] == 0
        read = unshared.run(con)
        if bound.report.limit_folds:  # how a terminal runs why: each limit's sections in one query
            by_limit = bound.run_by_limit(con, [3, 12])
            assert by_limit[12].main.rows == unshared.run_by_limit(con, [3, 12])[12].main.rows
    assert {k: s.rows for k, s in kept.sections.items()} == {k: s.rows for k, s in read.sections.items()}
    assert kept.main.rows


@pytest.mark.parametrize("given", [{"trace": "h100_bert-small", "vs": "mi300_bert-small"},
                                   {"trace": "#{a}", "vs": "mi300_bert-small"}, {"trace": "{a}", "vs": "#{b}"}])
def test_shared_views_hold_the_traces_however_they_are_named(fixture_db, given):
    """A name, a #id or an id (from Python) names the same trace to the shared views as to the
    report's SQL."""
    with read_only(fixture_db) as con:
        ids = dict(con.execute("SELECT name, trace_id FROM traces").fetchall())
        values = {k: v.format(a=ids["h100_bert-small"], b=ids["mi300_bert-small"]) for k, v in given.items()}
        values = {k: int(v) if v.isdigit() else v for k, v in values.items()}
        bound = reports.prepare("why", values)
        seeing = dataclasses.replace(bound, report=dataclasses.replace(bound.report, sections=[
            reports.Section("main", "", SEEN, shared=["device_activity", "step_windows"])]))
        pair = "h100_bert-small+mi300_bert-small"
        with pytest.raises(reports.TracedbError, match=re.escape(f"seen: device_activity,step_windows of {pair} and {pair}") + "$"):
            seeing.run(con)


def test_a_temporary_table_of_a_shared_view_s_name_is_refused_not_replaced(fixture_db):
    """A table of the user's own on the connection, named as a view a report shares, is neither read
    in the view's place nor replaced: one line says so, and the table stays."""
    with read_only(fixture_db) as con:
        con.execute("CREATE TEMP TABLE device_activity AS SELECT 42 AS mine")
        with pytest.raises(reports.TracedbError, match="a temporary table or view device_activity hides"):
            reports.prepare("why", {"trace": "h100_bert-small", "vs": "mi300_bert-small"}).run(con)
        assert con.execute("SELECT * FROM temp.device_activity").fetchall() == [(42,)]
        assert con.execute("SELECT count(*) FROM duckdb_tables() WHERE temporary").fetchone()[0] == 1


def test_a_shared_view_is_named(tmp_path):
    path = tmp_path / "mine.sql"
    path.write_text("-- Report: mine\n-- Mine.\n-- Shared: step windows  why\n-- Columns:\n--   x  count  x\nSELECT 1 AS x\n")
    with pytest.raises(reports.TracedbError, match=r"line 3: expected 'Shared: VIEW, VIEW  why'"):
        reports.parse(path)
    path.write_text(path.read_text().replace("step windows", "step_windows, device_activity"))
    assert reports.parse(path).sections[0].shared == ["step_windows", "device_activity"]


def test_a_parameter_takes_values_of_its_kind(tmp_path):
    """A parameter's kind (integer or number, from its header line or its numeric default) checks
    what it is given: from the command line (text) and from Python (numbers) alike, one line when
    the value is not of it."""
    path = tmp_path / "mine.sql"
    path.write_text("-- Report: mine\n-- Mine.\n-- Parameters:\n--   step = NULL integer  a step\n"
                    "--   share = NULL number option  a share\n--   depth = 3  how deep\n--   name = NULL  a name\n"
                    "-- Columns:\n--   x  count  x\nSELECT 1 AS x\n")
    mine = reports.parse(path)
    assert [(p.name, p.kind) for p in mine.params.values()] == \
        [("step", "integer"), ("share", "number"), ("depth", "integer"), ("name", None)]
    assert mine.params["share"].option
    bound = reports.bind(mine, {"step": "4", "share": "0.5", "depth": 2.0, "name": "7"})
    assert bound == {"step": 4, "share": 0.5, "depth": 2, "name": "7"}
    for name, value, shown in [("step", "x", "'x'"), ("step", 1.5, "'1.5'"), ("step", True, "'True'"),
                               ("depth", "2.5", "'2.5'"), ("step", -1, "'-1'"), ("depth", "-3", "'-3'")]:
        with pytest.raises(reports.TracedbError) as caught:
            reports.bind(mine, {name: value})
        default = "none" if name == "step" else "3"
        assert str(caught.value) == f"report mine: {name} is a whole number, at least 0 (default {default}), not {shown}"
    for value in ("half", "-0.5", "nan", "inf"):
        with pytest.raises(reports.TracedbError,
                           match=rf"report mine: --share is a number, at least 0 \(default none\), not '{value}'"):
            reports.bind(mine, {"share": value})
    path.write_text(path.read_text().replace("NULL integer", "NULL integer number"))
    with pytest.raises(reports.TracedbError, match="line 4: a parameter is one of integer or number, not both"):
        reports.parse(path)


def test_own_options_on_the_command_line(fixture_db):
    helped = run_cli("report", "--help", env={"COLUMNS": "200"}, check=True).stdout
    assert "--forward-passes VALUE  (tc-vs-prof)" in helped and "--mapping VALUE  (tc-vs-prof)" in helped
    for args, message in [(("ops", "--forward-passes", "2"), "report ops: no option '--forward-passes'"),
                          (("ops", "--depth=2"), "report ops: no option '--depth'"),
                          (("tc-vs-prof", "-t", "a", "--vs", "b", "--mapping"), "--mapping needs a value"),
                          (("tc-vs-prof", "-t", "a", "--vs", "b", "-p", "mapping=x"), "use --mapping instead")]:
        proc = run_cli("report", *args, db=fixture_db)
        assert proc.returncode == 1 and message in proc.stderr and "Traceback" not in proc.stderr, args


@pytest.mark.parametrize("name", REPORTS)
def test_report_runs_on_every_fixture(fixture_db, name):
    proc = run_cli("report", name, "--format", "csv", db=fixture_db, check=True)
    rows = list(csv.DictReader(io.StringIO(proc.stdout)))
    traces = {r["trace"] for r in rows}
    assert traces == {p.name.split(".")[0] for p in KINETO if "cpu_only" not in p.name}
    report = reports.get(name)
    assert list(rows[0]) == list(report.columns), "header documents every column, in order"


@pytest.mark.parametrize("name", COMPARISONS)
def test_comparison_headers_document_every_column(ro, name):
    report = reports.get(name)
    values = reports.bind(report, {"trace": "h100_bert-small", "vs": "mi300_bert-small"})
    results = reports.run(ro, report, values)
    assert len(results) == len(report.sections) >= 2
    for section, columns, _ in results:
        assert columns == list(section.columns), f"{name} · {section.name}: header documents every column, in order"


@pytest.mark.parametrize("name", WHY)
@pytest.mark.parametrize("vs", ["mi300_bert-small", None])
def test_why_headers_document_every_column(ro, name, vs):
    report = reports.get(name)
    values = reports.bind(report, {"trace": "h100_bert-small", "vs": vs})
    ((section, columns, rows),) = reports.run(ro, report, values)
    assert columns == list(section.columns) and rows


def test_ops_report_shares_and_phase_filter(fixture_db):
    out = run_cli("report", "ops", "--trace", "mi300x_sglang_qwen3-8b_decode", "--format", "json",
                  db=fixture_db, check=True)
    rows = json.loads(out.stdout)
    assert abs(sum(r["share_pct"] for r in rows) - 100) < 1e-6
    assert {r["phase"] for r in rows} == {"decode"}
    top = rows[0]
    assert top["op"] == "Dense GEMM" and top["kernels"] == 36 * 4 + 1  # 4 GEMMs per layer + LM head
    none = run_cli("report", "ops", "--trace", "mi300x_sglang_qwen3-8b_decode", "--phase", "prefill",
                   "--format", "json", db=fixture_db, check=True)
    assert json.loads(none.stdout) == []
    limited = json.loads(run_cli("report", "kernels", "--limit", "2", "--format", "json", db=fixture_db,
                                 check=True).stdout)
    assert max(sum(1 for r in limited if r["trace"] == t) for t in {r["trace"] for r in limited}) == 2


def test_table_output_has_titles_and_totals(fixture_db):
    out = run_cli("report", "summary", "--trace", "h100_bert-small", db=fixture_db, check=True).stdout
    assert "summary — h100_bert-small" in out and "total" in out and "\x1b[" not in out
    out = run_cli("report", "layers", "-t", "h100_bert-small", "--format", "markdown", db=fixture_db,
                  check=True).stdout
    assert "**layers — h100_bert-small**" in out and "| **total** |" in out


def test_show_sql_and_user_errors(fixture_db):
    out = run_cli("report", "ops", "--show-sql", "--phase", "decode", db=fixture_db, check=True).stdout
    assert out.startswith("-- tracedb report ops") and "SET VARIABLE \"phase\" = 'decode';" in out
    assert "selected_kernels(getvariable('trace'), getvariable('phase'))" in out
    for args, message in [(("report", "nope"), "no report named 'nope'"),
                          (("report", "ops", "--trace", "missing"), "no trace 'missing'"),
                          (("report", "ops", "--phase", "warmup"), "phase 'warmup' is not one of"),
                          (("report", "phases", "--limit", "3"), "report phases has no parameter --limit; its parameters: --trace (default all)")]:
        proc = run_cli(*args, db=fixture_db)
        assert proc.returncode == 1 and message in proc.stderr and "Traceback" not in proc.stderr


def test_user_rules_file_reclassifies_and_is_removable(tmp_path):
    db = tmp_path / "rules.duckdb"
    run_cli("load", BY_NAME["mi300_bert-small"], db=db, check=True)
    mine = tmp_path / "my_rules.csv"
    mine.write_text("priority,platform,match,pattern,op,label\n1,AMD,prefix,attn_fwd,Flash Attention (Triton),mine\n")
    proc = run_cli("report", "ops", "--rules", mine, "--format", "json", db=db, check=True)
    ops = {r["op"] for r in json.loads(proc.stdout)}
    assert "Flash Attention (Triton)" in ops and "Attention" not in ops
    # the stored facts followed; the layers, from BERT's module frames, do not depend on the operations
    stored = run_cli("sql", "SELECT count(*) FILTER (op = 'Flash Attention (Triton)') AS mine, count(layer) AS layered, "
                     "list(DISTINCT layer_source) FILTER (layer IS NOT NULL) AS sources FROM kernel_facts", "--format", "json", db=db, check=True)
    assert json.loads(stored.stdout) == [{"mine": 4, "layered": 48, "sources": ["module"]}]
    run_cli("rules", "rm", "my_rules.csv", db=db, check=True)
    proc = run_cli("report", "ops", "--format", "json", db=db, check=True)
    assert "Attention" in {r["op"] for r in json.loads(proc.stdout)}
    listed = json.loads(run_cli("rules", "--format", "json", db=db, check=True).stdout)
    assert listed[0]["source"] == "builtin" and len(listed) > 100


@pytest.mark.parametrize("text, message", [
    ("priority,platform,match,pattern,op,label\n5,any,regex,([a-z,Attention,bad\n", "line 2: bad regular expression"),
    ("kernel,op\nfoo,Attention\n", "not a rules file: the header must be"),
    ("", "empty rules file"),
    (None, "no such rules file"),
    # a peak is a positive, finite number: 0 or 1e400 (infinity) would make every share of it undefined
    ("priority,regex,device,fp32,tf32,bf16,fp16,fp8,mem_tbps,reference\n5,MyGPU,My GPU,0,,,100,,1.5,mine\n", "line 2: fp32 '0' is not a positive number"),
    ("priority,regex,device,fp32,tf32,bf16,fp16,fp8,mem_tbps,reference\n5,MyGPU,My GPU,1e400,,,100,,1.5,mine\n", "line 2: fp32 '1e400' is not a positive number"),
    ("priority,regex,device,fp32,tf32,bf16,fp16,fp8,mem_tbps,reference\n5,MyGPU,My GPU,nan,,,100,,1.5,mine\n", "line 2: fp32 'nan' is not a positive number"),
    ("priority,regex,device,fp32,tf32,bf16,fp16,fp8,mem_tbps,reference\n5,MyGPU,My GPU,,,,,,,mine\n", "line 2: no peak given"),
])
def test_bad_rules_file_leaves_the_database_unchanged(tmp_path, text, message):
    from conftest import table_counts
    from tracedb.db import open_db

    db = tmp_path / "bad.duckdb"
    run_cli("load", BY_NAME["h100_bert-small"], db=db, check=True)
    with open_db(db) as con:
        before = table_counts(con)
    path = tmp_path / "bad_rules.csv"
    if text is not None:
        path.write_text(text)
    for args in (("rules", "add", path), ("report", "ops", "--rules", path)):
        proc = run_cli(*args, db=db)
        assert proc.returncode == 1 and "Traceback" not in proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"tracedb: error: {path}: ") and message in lines[0]
    with open_db(db) as con:
        assert table_counts(con) == before


def test_every_report_has_an_example_that_names_it():
    for name, report in reports.available().items():
        assert report.examples and all(e.startswith(f"tracedb report {name}") for e in report.examples), name


def test_report_files_are_parsed_once_per_process(monkeypatch):
    reports.available()
    parsed = []
    real = reports.parse
    monkeypatch.setattr(reports, "parse", lambda path: parsed.append(path) or real(path))
    for _ in range(3):
        reports.get("why")
        reports.available()
    assert parsed == []


def test_a_rules_file_with_a_byte_order_mark_loads(tmp_path):
    """Spreadsheets save CSV with a UTF-8 byte-order mark: it is not part of the header."""
    db = tmp_path / "bom.duckdb"
    run_cli("load", BY_NAME["h100_bert-small"], db=db, check=True)
    path = tmp_path / "peaks.csv"
    path.write_bytes(b"\xef\xbb\xbfpriority,regex,device,fp32,tf32,bf16,fp16,fp8,mem_tbps,reference\n"
                     b"5,MyGPU,My GPU,10,,,100,,1.5,mine\n")
    run_cli("rules", "add", path, db=db, check=True)
    rows = json.loads(run_cli("sql", "SELECT device, fp32, priority FROM device_peaks WHERE source = 'peaks.csv'",
                              "--format", "json", db=db, check=True).stdout)
    assert rows == [{"device": "My GPU", "fp32": 10.0, "priority": 5}]


def test_json_writes_null_for_numbers_json_cannot_hold(tmp_path):
    """NaN and the infinities are not JSON: --format json writes null, at any depth."""
    db = tmp_path / "j.duckdb"
    run_cli("load", BY_NAME["h100_bert-small"], db=db, check=True)
    out = run_cli("sql", "SELECT 'nan'::DOUBLE AS a, '-inf'::DOUBLE AS b, 1.5 AS c, ['inf'::DOUBLE, 2.0] AS l, "
                  "{'x': 'nan'::DOUBLE} AS s", "--format", "json", db=db, check=True).stdout
    assert "NaN" not in out and "Infinity" not in out
    assert json.loads(out) == [{"a": None, "b": None, "c": 1.5, "l": [None, 2.0], "s": {"x": None}}]
