"""Naming the traces a report reads: a pattern that matches exactly one trace is that trace, one
that matches several or none is one line naming the matches; an empty answer for a named trace
says why; values a report cannot take are one line; ls and sql write files as reports do."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli


def test_a_pattern_matching_one_trace_is_that_trace(examples_db):
    by_name = run_cli("report", "timeline", "--trace", "h100_bert-small", "--format", "json", db=examples_db)
    by_pattern = run_cli("report", "timeline", "--trace", "h100_bert*", "--format", "json", db=examples_db)
    assert by_pattern.returncode == 0, by_pattern.stderr
    assert json.loads(by_pattern.stdout) == json.loads(by_name.stdout) != []
    pair = run_cli("report", "why", "--trace", "h100_bert*", "--vs", "mi300_bert*", "--format", "json", db=examples_db)
    named = run_cli("report", "why", "--trace", "h100_bert-small", "--vs", "mi300_bert-small", "--format", "json",
                    db=examples_db)
    assert pair.returncode == 0 and json.loads(pair.stdout) == json.loads(named.stdout)


@pytest.mark.parametrize("args", [["timeline", "--trace", "*bert*"],
                                  ["why", "--trace", "*bert*", "--vs", "mi300_bert-small"],
                                  ["why", "--trace", "h100_bert-small", "--vs", "*_bert-small"]])
def test_a_pattern_matching_several_traces_is_one_line_naming_them(examples_db, args):
    run = run_cli("report", *args, db=examples_db)
    assert run.returncode == 1 and run.stdout == ""
    assert run.stderr.count("\n") == 1 and "matches 2: " in run.stderr
    assert "h100_bert-small" in run.stderr and "mi300_bert-small" in run.stderr


def test_a_pattern_matching_nothing_is_one_line(examples_db):
    run = run_cli("report", "timeline", "--trace", "nothing_like_it*", db=examples_db)
    assert run.returncode == 1 and run.stderr == "tracedb: error: no trace matches 'nothing_like_it*' (see: tracedb ls)\n"


def test_patterns_still_pair_many_traces(examples_db):
    run = run_cli("report", "compare", "--trace", "h100_*", "--vs", "mi300_*", "--format", "json", db=examples_db)
    assert run.returncode == 0 and json.loads(run.stdout)


def test_an_empty_answer_for_a_named_trace_says_why(examples_db):
    run = run_cli("report", "collectives", "--trace", "h100_bert-small", db=examples_db, env={"COLUMNS": "200"})
    assert run.returncode == 0
    assert run.stdout.startswith("collectives: no rows for h100_bert-small: the report has rows for traces with "
                                 "collective kernels, and h100_bert-small is not one")


@pytest.mark.parametrize("args, message", [
    (["gaps", "--trace", "h100_bert-small", "-p", "min_gap_us=-5"],
     "tracedb: error: report gaps: min_gap_us is a whole number, at least 0 (default 50), not '-5'\n"),
    (["why", "--trace", "h100_bert-small", "-p", "min_gap_us=nan"],
     "tracedb: error: report why: min_gap_us is a whole number, at least 0 (default 20), not 'nan'\n"),
])
def test_a_value_a_report_cannot_take_is_one_line(examples_db, args, message):
    run = run_cli("report", *args, db=examples_db)
    assert run.returncode == 1 and run.stderr == message


def test_a_limit_is_a_number_of_rows_or_all(examples_db):
    run = run_cli("report", "ops", "--limit", "some", db=examples_db)
    assert run.returncode == 2 and "Usage:" in run.stderr and "takes a number of rows or all, not 'some'" in run.stderr
    assert "Traceback" not in run.stderr


def test_limit_all_lists_every_row(examples_db):
    every = run_cli("report", "ops", "--limit", "all", "--format", "json", db=examples_db)
    default = run_cli("report", "ops", "--format", "json", db=examples_db)
    assert every.returncode == 0 and len(json.loads(every.stdout)) >= len(json.loads(default.stdout)) > 0


@pytest.mark.parametrize("command", [["ls"], ["sql", "SELECT name FROM traces ORDER BY name"]])
def test_ls_and_sql_write_to_a_file(examples_db, tmp_path, command):
    out = tmp_path / "out.csv"
    run = run_cli(*command, "--format", "csv", "-o", out, db=examples_db)
    assert run.returncode == 0 and run.stdout == "" and run.stderr == f"tracedb: wrote {out}\n"
    printed = run_cli(*command, "--format", "csv", db=examples_db).stdout
    assert out.read_text() == printed and "h100_bert-small" in printed


def test_counts_per_step_read_as_counts(examples_db):
    page = run_cli("report", "host-frames", "--trace", "h100_bert-small", "--vs", "mi300_bert-small",
                   "--format", "html", db=examples_db).stdout
    assert ".000<" not in page  # 1,207 calls a step, not 1,207.000


def test_notes_shared_by_rows_are_printed_once(examples_db):
    run = run_cli("report", "why", "--trace", "h100_bert-small", "--vs", "mi300_bert-small", "--limit", "12",
                  db=examples_db, env={"COLUMNS": "120"})
    commands = [line.split(". ", 1)[1] for line in run.stdout.splitlines() if ". tracedb report " in line]
    labels = [line.split(". ", 1)[0].strip() for line in run.stdout.splitlines() if ". tracedb report " in line]
    assert len(commands) == len(set(commands)) >= 2
    assert sorted(int(n) for label in labels for n in label.split(", ")) == list(range(1, 14))
