"""Mutation fuzzing kept in the suite: a fixed seed, a fixed number of mutants, every reader (see
fuzzing.py for the mutations and invariants; bench/fuzz.py runs the same for minutes)."""

from __future__ import annotations

from conftest import FIXTURES
from fuzzing import run
from tracedb.db import open_db

# a fixed number, not a time budget: every machine, however busy, loads the same mutants (twelve of
# each of the five seeds)
MUTANTS = 60


def test_mutants_load_or_fail_in_one_line(tmp_path):
    with open_db(tmp_path / "fuzz.duckdb") as con:
        _, findings = run(FIXTURES, tmp_path, con, seed=20261124, mutants=MUTANTS)
        committed = con.execute("SELECT count(*) FROM traces").fetchone()[0]
    assert not findings, "\n\n".join(f"[{f.seed}] {f.problem}\n{f.mutant[:300]!r}" for f in findings[:3])
    # the database opens afterwards and holds exactly the traces committed
    with open_db(tmp_path / "fuzz.duckdb", read_only=True) as con:
        assert con.execute("SELECT count(*) FROM traces").fetchone()[0] == committed > 0
