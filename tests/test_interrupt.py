"""Ctrl-C during a load, at any stage: one line, exit 130, the database as it was, at once."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from conftest import KINETO, run_cli
from tracedb.db import open_db


@pytest.fixture(scope="module")
def big_trace(tmp_path_factory):
    """About 40 MB of Kineto-shaped events with shape args: a load of a second or more."""
    path = tmp_path_factory.mktemp("interrupt") / "big.json"
    with open(path, "w") as f:
        f.write('{"schemaVersion": 1, "traceEvents": [\n')
        for i in range(150_000):
            ev = {"ph": "X", "cat": "cpu_op", "name": f"aten::op{i % 97}", "pid": 1, "tid": 1, "ts": i * 3 + 0.125,
                  "dur": 2, "args": {"External id": i, "Input Dims": [[], [8, 128], []], "Input type": ["", "float"]}}
            f.write(("  " if i == 0 else ",\n  ") + json.dumps(ev))
        f.write("\n]}")
    return path


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _interrupt_at(cmd: list[str], text: str) -> tuple[subprocess.Popen, str]:
    """Run a tracedb command with its progress display on (FORCE_COLOR: rich draws it off a
    terminal too), send Ctrl-C once its stderr shows text (a stage of a file: a state, not a time),
    and return the process, ended, and the last line it printed."""
    env = dict(os.environ, FORCE_COLOR="1", COLUMNS="200")
    proc = subprocess.Popen([sys.executable, "-m", "tracedb.cli", *cmd], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    seen = b""
    while text.encode() not in seen:
        chunk = os.read(proc.stderr.fileno(), 1 << 16)
        if not chunk:  # the command ended before showing it
            break
        seen += chunk
    else:
        proc.send_signal(signal.SIGINT)
    _, rest = proc.communicate(timeout=120)
    lines = [ln.strip() for ln in re.split(r"[\r\n]", _ANSI.sub("", (seen + rest).decode())) if ln.strip()]
    return proc, lines[-1] if lines else ""


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
