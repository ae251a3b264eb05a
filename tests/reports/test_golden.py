"""Golden outputs: every report, as each `-- Example:` line of its header runs it, gives the output
kept in tests/golden/REPORT.txt (JSON in canonical form: numbers to 6 significant digits, rows
sorted). A change of a report's output is seen here and reviewed in the diff of its golden file.

After a change that is meant to change an output, write the golden files again and read the diff:

    TRACEDB_GOLDEN=write python -m pytest tests/reports/test_golden.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tracedb import reports, testing

GOLDEN = Path(__file__).resolve().parent / "golden"
RUNS = testing.example_runs()


@pytest.fixture(scope="module")
def outputs(examples_db):
    return testing.golden_outputs(examples_db, RUNS)


@pytest.mark.parametrize("name", sorted(RUNS))
def test_report_output_is_its_golden_output(outputs, name):
    path = GOLDEN / f"{name}.txt"
    if os.environ.get("TRACEDB_GOLDEN") == "write":
        path.write_text(outputs[name], encoding="utf-8")
    assert path.exists(), f"no golden output for {name}: TRACEDB_GOLDEN=write python -m pytest {__file__}"
    assert outputs[name] == path.read_text(encoding="utf-8"), \
        f"{name}: output differs from {path} (if meant: TRACEDB_GOLDEN=write, then review the diff)"
    assert "\nerror: " not in outputs[name] and outputs[name].count("## tracedb report") == len(RUNS[name])


def test_every_golden_file_has_its_report():
    assert sorted(p.stem for p in GOLDEN.glob("*.txt")) == sorted(RUNS)


@pytest.mark.parametrize("name", sorted(RUNS))
def test_a_golden_output_has_rows_unless_its_report_says_for_which_traces(outputs, name):
    """An example that gives no rows checks nothing: every report's examples give a row somewhere,
    unless its header says which traces it has rows for (-- Rows:) and the example's are not."""
    runs = [json.loads(part.split("\n", 1)[1]) for part in outputs[name].split("## tracedb report ")[1:]]
    sections = [rows for run in runs for rows in (run.values() if isinstance(run, dict) else [run])]
    assert any(sections) or reports.get(name).rows_for, f"{name}: its examples give no rows"
