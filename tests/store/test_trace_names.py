"""A trace is named by its name, or by its id written #ID: a name and an id are never taken for each other."""

from __future__ import annotations

import pytest

from conftest import KINETO, load, run_cli
from tracedb import traces
from tracedb.errors import TracedbError


@pytest.fixture
def named(con):
    """Trace id 1 named 'first', trace id 2 named '1'."""
    first = load(con, KINETO[0], name="first")
    numeric = load(con, KINETO[1], name="1")
    assert (first.trace_id, numeric.trace_id) == (1, 2)
    return con


def test_a_number_is_a_name_and_hash_is_an_id(named):
    assert traces.find(named, "1") == (2, "1")
    assert traces.find(named, "#1") == (1, "first")
    assert traces.find(named, "#2") == (2, "1")
    assert traces.find(named, "first") == (1, "first")
    with pytest.raises(TracedbError, match="no trace '7'"):
        traces.find(named, "7")
    with pytest.raises(TracedbError, match="no trace '#7'"):
        traces.find(named, "#7")


def test_sql_macros_follow_the_same_rule(named):
    # text: a name or #ID; an integer (SQL users) is an id
    assert named.execute("SELECT trace_name('1'), trace_name('#1'), trace_name(1), trace_name(2)").fetchone() == \
        ("1", "first", "first", "1")
    counts = named.execute("SELECT (SELECT count(DISTINCT trace_id) FROM selected_kernels('1', NULL)), "
                           "(SELECT min(trace_id) FROM selected_kernels('1', NULL))").fetchone()
    assert counts == (1, 2)


@pytest.mark.parametrize("bad", ["", " ", "#3", "#first"])
def test_names_that_cannot_name_a_trace_are_refused(con, bad):
    with pytest.raises(TracedbError, match="trace name cannot"):
        load(con, KINETO[0], name=bad)
    assert con.execute("SELECT count(*) FROM traces").fetchone()[0] == 0


def test_rm_and_report_through_the_cli(tmp_path):
    db = tmp_path / "n.duckdb"
    run_cli("load", KINETO[0], "--name", "first", db=db, check=True)
    run_cli("load", KINETO[1], "--name", "1", db=db, check=True)
    shown = run_cli("report", "summary", "--trace", "1", "--format", "csv", db=db, check=True)
    assert shown.stdout.count("\n") == 2 and "\n1," in shown.stdout  # the trace named 1 alone
    removed = run_cli("rm", "1", db=db, check=True)
    assert removed.stderr.strip() == "tracedb: removed 1"
    left = run_cli("ls", "--format", "csv", db=db, check=True).stdout
    assert "first" in left and "\n2," not in left
    gone = run_cli("rm", "#2", db=db)
    assert gone.returncode == 1 and gone.stderr.strip() == "tracedb: error: no trace '#2' (see: tracedb ls; an id is written #ID)"
    run_cli("rm", "#1", db=db, check=True)
    assert run_cli("ls", "--format", "csv", db=db, check=True).stdout.count("\n") == 1


def test_empty_name_on_the_command_line_is_refused(tmp_path):
    db = tmp_path / "n.duckdb"
    proc = run_cli("load", KINETO[0], "--name", "", db=db)
    assert proc.returncode == 1 and "a trace name cannot be empty" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_commands_other_than_load_create_no_database(tmp_path):
    for args in (["rm", "x"], ["refresh"], ["rules", "rm", "mine.csv"], ["ls"], ["sql", "SELECT 1"]):
        db = tmp_path / "typo.duckdb"
        proc = run_cli(*args, db=db)
        assert proc.returncode == 1, args
        assert proc.stderr.strip() == f"tracedb: error: {db}: no such database (load a trace first: " \
                                      f"tracedb load FILE --db {db})", args
        assert not db.exists(), args


def test_an_old_name_beginning_with_hash_is_never_guessed(named):
    # a database made before names were checked may hold a trace named "#1" beside trace id 1
    named.execute("UPDATE traces SET name = '#1' WHERE trace_id = 2")
    with pytest.raises(TracedbError, match=r"'#1' names 2 traces \(ids 1, 2\)"):
        traces.find(named, "#1")
