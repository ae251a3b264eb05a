"""Ctrl-C during a load, at any stage: one line, exit 130, the database as it was, at once."""

from __future__ import annotations

import json
import os
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


@pytest.mark.parametrize("delay", [0.4, 0.9, 1.4, 1.9])
def test_ctrl_c_prints_one_line_and_leaves_the_database(tmp_path, big_trace, delay):
    db = tmp_path / "runs.duckdb"
    run_cli("load", KINETO[0], "--name", "kept", db=db, check=True)
    proc = subprocess.Popen([sys.executable, "-m", "tracedb.cli", "load", str(big_trace), "--db", str(db)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=os.environ,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(delay)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    waited = time.monotonic() - sent
    with open_db(db, read_only=True) as con:
        names = [r[0] for r in con.execute("SELECT name FROM traces ORDER BY trace_id").fetchall()]
    if proc.returncode == 0:  # the load ended before the signal: nothing to check
        assert names == ["kept", "big"]
        return
    if names == ["kept", "big"]:  # the signal came after the commit, while the summary printed
        assert proc.returncode == 130 and err.decode().strip().startswith("tracedb: interrupted; loaded: big")
        return
    assert proc.returncode == 130 and err.decode().strip() == "tracedb: interrupted, database unchanged"
    assert names == ["kept"]
    assert waited < 5, f"Ctrl-C took {waited:.1f} s to stop the load"


def test_ctrl_c_during_the_second_file_names_the_first_as_loaded(tmp_path, big_trace):
    """The message says what the database holds: the first file committed before the signal."""
    db = tmp_path / "two.duckdb"
    run_cli("load", KINETO[1], "--name", "kept", db=db, check=True)
    proc = subprocess.Popen([sys.executable, "-m", "tracedb.cli", "load", str(KINETO[0]), str(big_trace), "--jobs", "1",
                             "--db", str(db)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=os.environ,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(1.5)  # the small first file takes a few tenths of a second, the big one seconds
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    message = err.decode().strip()
    with open_db(db, read_only=True) as con:
        names = [r[0] for r in con.execute("SELECT name FROM traces ORDER BY trace_id").fetchall()]
    first = KINETO[0].name.split(".")[0]
    if proc.returncode == 0:  # both loaded before the signal
        assert names == ["kept", first, "big"]
    elif names == ["kept"]:  # the signal came before the first commit
        assert proc.returncode == 130 and message == "tracedb: interrupted, database unchanged"
    else:
        assert proc.returncode == 130 and names == ["kept", first]
        assert message == f"tracedb: interrupted; loaded: {first} (the file in progress was not loaded)"
