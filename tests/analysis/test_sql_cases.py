"""SQL diff tests as data: each tests/analysis/cases/NAME.sql is a query on the database of the
reports' examples (the BERT pair, the AIE fixtures, an Ascend profile, a TensorCast trace), and
NAME.csv the rows it gives, reviewed when written. A case is a file, not code: its comment says
what it shows, its query is what a user would type in a DuckDB shell.

After a change meant to change a case's rows, write them again and review the diff:

    TRACEDB_GOLDEN=write python -m pytest tests/analysis/test_sql_cases.py
"""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path

import pytest

from conftest import read_only

CASES = Path(__file__).resolve().parent / "cases"


def _csv(columns, rows) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows([["" if v is None else (f"{v:.6g}" if isinstance(v, float) else v) for v in row]
                      for row in rows])
    return out.getvalue()


@pytest.mark.parametrize("case", sorted(p.stem for p in CASES.glob("*.sql")))
def test_case_gives_its_rows(examples_db, case):
    query = (CASES / f"{case}.sql").read_text(encoding="utf-8")
    assert query.startswith("-- "), f"{case}.sql: a case opens with a comment saying what it shows"
    with read_only(examples_db) as con:
        cur = con.execute(query)
        got = _csv([d[0] for d in cur.description], cur.fetchall())
    expected = CASES / f"{case}.csv"
    if os.environ.get("TRACEDB_GOLDEN") == "write":
        expected.write_text(got, encoding="utf-8")
    assert expected.exists(), f"no {expected.name}: TRACEDB_GOLDEN=write python -m pytest {__file__}"
    assert got == expected.read_text(encoding="utf-8"), f"{case}: rows differ from {expected.name}"
    assert got.count("\n") > 1, f"{case}: a case shows some rows"


def test_every_expected_file_has_its_case():
    assert sorted(p.stem for p in CASES.glob("*.csv")) == sorted(p.stem for p in CASES.glob("*.sql"))
