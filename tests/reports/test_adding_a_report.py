"""docs/adding-a-report.md, followed word for word: its example report written into a copy of the
code as the page says, then run as the page says it runs: the command line (its example, the list
of reports, every format, --show-sql) and the Python API."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "adding-a-report.md"


def _page() -> tuple[str, str, list[str]]:
    """The page's report file (its first SQL block), the report's name and its example's arguments."""
    text = PAGE.read_text(encoding="utf-8")
    sql = re.search(r"```sql\n(.*?)```", text, re.S).group(1)
    name = re.search(r"^-- Report: (\S+)$", sql, re.M).group(1)
    example = re.search(r"^-- Example: (.+)$", sql, re.M).group(1)
    return sql, name, shlex.split(example)


@pytest.fixture(scope="module")
def copy(tmp_path_factory) -> tuple[Path, str, list[str], Path]:
    """A copy of the code with the page's report in sql/reports/NAME.sql, and a database of the
    example pair loaded with it."""
    tmp = tmp_path_factory.mktemp("adding")
    code = tmp / "code"
    shutil.copytree(ROOT / "tracedb", code / "tracedb", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "sql", code / "sql")
    sql, name, example = _page()
    (code / "sql" / "reports" / f"{name}.sql").write_text(sql, encoding="utf-8")
    db = tmp / "examples.duckdb"
    _run(code, "load", *sorted(str(p) for p in (ROOT / "examples").glob("*.json.gz")), "--db", str(db))
    return code, name, example, db


def _env(code: Path) -> dict:
    return {**os.environ, "PYTHONPATH": str(code), "COLUMNS": "160"}


def _run(code: Path, *args: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "tracedb.cli", *args], capture_output=True, text=True,
                          env=_env(code), cwd=code, timeout=300)
    assert proc.returncode == 0, f"tracedb {' '.join(args)}: {proc.stderr}"
    return proc.stdout


def test_the_page_s_example_runs_and_gives_rows(copy):
    code, name, example, db = copy
    assert example[:3] == ["tracedb", "report", name]
    rows = json.loads(_run(code, *example[1:], "--format", "json", "--db", str(db)))
    assert rows and all(r["trace"] == "h100_bert-small" and r["dur_ns"] >= 20_000 for r in rows)
    listed = json.loads(_run(code, "reports", "--format", "json"))
    assert name in {r["report"] for r in listed}


@pytest.mark.parametrize("fmt", ["table", "csv", "json", "markdown", "html"])
def test_every_format(copy, fmt):
    code, name, example, db = copy
    out = _run(code, *example[1:], "--format", fmt, "--db", str(db))
    if fmt == "csv":
        table = list(csv.reader(io.StringIO(out)))
        assert table[0] == ["trace", "name", "dur_ns"] and len(table) > 1
    else:
        assert "h100_bert-small" in out


def test_show_sql_and_the_python_api(copy):
    code, name, example, db = copy
    script = _run(code, *example[1:], "--show-sql", "--db", str(db))
    assert "FROM kernels k JOIN traces t" in script and "$" not in script.replace("$.", "")
    api = ("import json, sys, tracedb\n"
           f"db = tracedb.connect({str(db)!r})\n"
           f"rows = db.report({name!r}, trace='h100_bert-small', min_us=20).main.records()\n"
           "print(json.dumps(rows))\n")
    proc = subprocess.run([sys.executable, "-c", api], capture_output=True, text=True, env=_env(code), cwd=code,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    cli = json.loads(_run(code, *example[1:], "--format", "json", "--db", str(db)))
    assert json.loads(proc.stdout) == cli
