"""Deriving one trace's facts reads that trace's rows alone (the _in_scope macro of
sql/modules/core/events.sql), so a load costs the same whatever else the database holds.

Not a timed test: DuckDB's own profile of each view the derivation reads says how many rows each
scan of an event table returned, and none may return rows of another trace."""

from __future__ import annotations

import json

import pytest

from tracedb import facts

from conftest import FIXTURES, load

EVENT_TABLES = {"kernels", "runtime_calls", "cpu_ops", "flows", "python_functions", "annotations",
                "kernel_facts"}
LIVE_VIEWS = ["_kernel_ops_live", "_kernel_phases_live", "kernel_launches", "_launch_stacks_live",
              "_kernel_layers_live", "_kernel_order_live"]


def _scans(node):
    """(table, rows returned) of every table scan in a plan of EXPLAIN (ANALYZE, FORMAT json)."""
    info = node.get("extra_info") or {}
    if node.get("type") == "TABLE_SCAN" and "Table" in info:
        yield info["Table"].split(".")[-1], int(node["intermediate_rows"])
    for child in node.get("children", []):
        yield from _scans(child)


@pytest.fixture
def two_traces(con):
    # the larger trace first: its rows fill the tables the second one's derivation must skip
    big = load(con, FIXTURES / "kineto" / "mi300x_sglang_qwen3-8b_decode.json.gz").trace_id
    small = load(con, FIXTURES / "kineto" / "h100_bert-small.json.gz").trace_id
    return big, small


@pytest.mark.parametrize("view", LIVE_VIEWS)
def test_a_scoped_view_scans_no_other_trace(con, two_traces, view):
    big, small = two_traces
    own = {t: con.execute(f"SELECT count(*) FROM {t} WHERE trace_id = ?", [small]).fetchone()[0]
           for t in EVENT_TABLES}
    other = {t: con.execute(f"SELECT count(*) FROM {t} WHERE trace_id = ?", [big]).fetchone()[0]
             for t in EVENT_TABLES}
    con.execute(f"SET VARIABLE tracedb_scope = {small}")
    rows = con.execute(f"SELECT count(*) FROM {view}").fetchone()[0]
    plan = json.loads(con.execute(f"EXPLAIN (ANALYZE, FORMAT json) SELECT * FROM {view}").fetchone()[1])
    con.execute("RESET VARIABLE tracedb_scope")
    assert rows == con.execute(f"SELECT count(*) FROM {view} WHERE trace_id = ?", [small]).fetchone()[0]
    scans = [(t, n) for op in plan["operator"] for t, n in _scans(op) if t in EVENT_TABLES]
    assert scans, f"{view}: no scan of an event table in its profile"
    for table, returned in scans:
        assert returned <= own[table] < own[table] + other[table], (view, table, returned, own[table])


def test_derive_leaves_no_scope_behind(con, two_traces):
    big, small = two_traces
    everything = con.execute("SELECT count(*) FROM _kernel_ops_live").fetchone()[0]
    facts.derive(con, small)
    assert con.execute("SELECT getvariable('tracedb_scope')").fetchone()[0] is None
    assert con.execute("SELECT count(*) FROM _kernel_ops_live").fetchone()[0] == everything
    assert everything == con.execute("SELECT count(*) FROM kernels").fetchone()[0]


def test_a_failed_derivation_leaves_no_scope_behind(con, two_traces):
    # a rule inserted by hand with a regex RE2 refuses fails the derivation inside its transaction,
    # where DuckDB runs no further statement: the rollback must clear the scope
    everything = con.execute("SELECT count(*) FROM kernel_ops").fetchone()[0]
    con.execute("INSERT INTO kernel_rules VALUES ('mine', 1, 'any', 'regex', '(unclosed', 'Attention', 'bad', NULL)")
    with pytest.raises(Exception, match="(?i)regex|regular expression|missing"):
        facts.refresh(con)
    assert con.execute("SELECT getvariable('tracedb_scope')").fetchone()[0] is None
    assert con.execute("SELECT count(*) FROM kernel_ops").fetchone()[0] == everything


def _temporary_tables(con) -> list[str]:
    return [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() WHERE temporary").fetchall()]


def test_the_stages_of_kernel_facts_are_gone_after_a_derivation(con, two_traces):
    big, small = two_traces
    stored = con.execute("SELECT * FROM kernel_facts ORDER BY ALL").fetchall()
    facts.derive(con, small)
    assert "kernel_facts" not in _temporary_tables(con)
    assert con.execute("SELECT * FROM kernel_facts ORDER BY ALL").fetchall() == stored


def test_a_derivation_failing_between_its_stages_hides_nothing(con, two_traces):
    # kernel_facts is staged in a temporary table of that name; a stage that fails must not leave
    # it hiding the stored table (here the layers fail, after the first stages were built)
    stored = con.execute("SELECT count(*), count(layer) FROM kernel_facts").fetchone()
    con.execute("CREATE TEMP VIEW _kernel_layers_live AS "
                "SELECT trace_id, kernel_id, error('layers failed')::BIGINT AS forward_pass, 1 AS layer, 1 AS position, "
                "'' AS layer_source, '' AS layer_module FROM kernels")
    with pytest.raises(Exception, match="layers failed"):
        facts.refresh(con)
    con.execute("DROP VIEW temp._kernel_layers_live")
    assert "kernel_facts" not in _temporary_tables(con)
    assert con.execute("SELECT count(*), count(layer) FROM kernel_facts").fetchone() == stored
    assert stored[0] == con.execute("SELECT count(*) FROM kernels").fetchone()[0]
