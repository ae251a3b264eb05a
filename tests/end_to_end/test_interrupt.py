"""Ctrl-C during a load, at any stage: one line, exit 130, the database as it was, at once."""

from __future__ import annotations

import signal
import subprocess
import time

import pytest

from conftest import KINETO, big_kineto_trace, last_line, run_cli, start_until
from tracedb.db import open_db


@pytest.fixture(scope="module")
def big_trace(tmp_path_factory):
    return big_kineto_trace(tmp_path_factory.mktemp("interrupt") / "big.json")


def _interrupt_at(cmd: list[str], text: str) -> tuple[subprocess.Popen, str]:
    """Send Ctrl-C to a tracedb command once it shows text; the process, ended, and its last line."""
    proc, seen = start_until(cmd, text)
    if text.encode() in seen:
        proc.send_signal(signal.SIGINT)
    _, rest = proc.communicate(timeout=120)
    return proc, last_line(seen + rest)


@pytest.mark.parametrize("stage", ["reading", "typing events", "deriving facts"])
def test_ctrl_c_prints_one_line_and_leaves_the_database(tmp_path, big_trace, stage):
    db = tmp_path / "runs.duckdb"
    run_cli("load", KINETO[0], "--name", "kept", db=db, check=True)
    sent = time.monotonic()
    proc, message = _interrupt_at(["load", str(big_trace), "--db", str(db)], f"big.json: {stage}")
    waited = time.monotonic() - sent
    with open_db(db, read_only=True) as con:
        names = [r[0] for r in con.execute("SELECT name FROM traces ORDER BY trace_id").fetchall()]
    assert proc.returncode == 130, message  # the signal came while the file was in that stage
    assert message == "tracedb: interrupted, database unchanged"
    assert names == ["kept"]
    assert waited < 60, f"Ctrl-C took {waited:.1f} s to stop the load"


def test_ctrl_c_during_the_second_file_names_the_first_as_loaded(tmp_path, big_trace):
    """The message says what the database holds: the first file committed before the signal (one
    job loads the files in turn, so the second one's progress shows once the first is in)."""
    db = tmp_path / "two.duckdb"
    run_cli("load", KINETO[1], "--name", "kept", db=db, check=True)
    proc, message = _interrupt_at(["load", str(KINETO[0]), str(big_trace), "--jobs", "1", "--db", str(db)],
                                  "big.json: reading")
    with open_db(db, read_only=True) as con:
        names = [r[0] for r in con.execute("SELECT name FROM traces ORDER BY trace_id").fetchall()]
    first = KINETO[0].name.split(".")[0]
    assert proc.returncode == 130 and names == ["kept", first]
    assert message == f"tracedb: interrupted; loaded: {first} (the file in progress was not loaded)"
