"""Mutation fuzzing kept in the suite: a fixed seed, a few seconds, every reader (see fuzzing.py for
the mutations and invariants; bench/fuzz.py runs the same for minutes)."""

from __future__ import annotations

import time

from conftest import FIXTURES
from fuzzing import run
from tracedb.db import open_db

MUTANTS = 100
SECONDS = 15  # the bound on a slow machine; 100 mutants take about 12 s here


def test_mutants_load_or_fail_in_one_line(tmp_path):
    with open_db(tmp_path / "fuzz.duckdb") as con:
        ran, findings = run(FIXTURES, tmp_path, con, seed=20261124, mutants=MUTANTS,
                            deadline=time.monotonic() + SECONDS)
        committed = con.execute("SELECT count(*) FROM traces").fetchone()[0]
    assert ran >= 30
    assert not findings, "\n\n".join(f"[{f.seed}] {f.problem}\n{f.mutant[:300]!r}" for f in findings[:3])
    # the database opens afterwards and holds exactly the traces committed
    with open_db(tmp_path / "fuzz.duckdb", read_only=True) as con:
        assert con.execute("SELECT count(*) FROM traces").fetchone()[0] == committed > 0
