"""Loads fanned out on Dask: one task per file on a cluster of 2 worker processes, each writing
its partition to the lake."""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
import time

import pytest

import tracedb
from tracedb import fanout

from conftest import KINETO, run_cli
from test_export import AIE

distributed = pytest.importorskip("distributed", reason="pip install 'tracedb[dask]'")


@pytest.fixture(scope="module")
def scheduler():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=40) as cluster:
        yield cluster.scheduler_address


def test_load_on_dask(scheduler, tmp_path):
    bad = tmp_path / "broken.json"
    bad.write_text('{"traceEvents": 7}')
    files = KINETO[:4] + AIE + [bad]
    proc = run_cli("load", *files, "--lake", tmp_path / "lake", "--format", "csv",
                   env={"TRACEDB_DASK_SCHEDULER": scheduler})
    assert proc.returncode == 1
    errors = [line for line in proc.stderr.splitlines() if line.startswith("tracedb: error:")]
    assert len(errors) == 1 and str(bad) in errors[0] and "Traceback" not in proc.stderr
    assert proc.stderr.splitlines() == errors  # a line per file, as a database load gives
    assert proc.stdout.count(",loaded,") == len(files) - 1  # the summary, a row per trace
    serial = tmp_path / "serial"
    run_cli("load", *files[:-1], "--lake", serial, "--jobs", "1", check=True)
    with tracedb.connect(tmp_path / "lake") as x, tracedb.connect(serial) as y:
        for table in ("traces", "kernel_facts", "cpu_ops", "aie_events"):
            query = (f"SELECT t.name, r.* EXCLUDE (trace_id) FROM {table} r JOIN traces t USING (trace_id)"
                     if table != "traces" else "SELECT * EXCLUDE (trace_id, loaded_at, load_seconds) FROM traces")
            assert sorted(x.sql(query).rows, key=repr) == sorted(y.sql(query).rows, key=repr), table


def test_the_task_is_plain(scheduler, tmp_path):
    """Any engine can run it: a path and a lake in, the outcome out (here through a Client)."""
    client = distributed.Client(scheduler)
    try:
        outcome = client.submit(fanout.task, str(KINETO[2]), str(tmp_path / "lake"), pure=False).result()
    finally:
        client.close()
    assert outcome.status == "loaded" and outcome.trace_id > 0
    with tracedb.connect(tmp_path / "lake") as db:
        assert db.sql("SELECT trace_id FROM traces").rows == [(outcome.trace_id,)]


def test_scheduler_errors_are_one_line(tmp_path):
    proc = run_cli("load", KINETO[0], "--lake", tmp_path / "lake", "--scheduler", "tcp://127.0.0.1:9")
    assert proc.returncode == 1 and "cannot reach the Dask scheduler" in proc.stderr
    assert proc.stderr.count("\n") == 1
    proc = run_cli("load", KINETO[0], "--scheduler", "tcp://127.0.0.1:9", db=tmp_path / "x.duckdb")
    assert proc.returncode == 1 and "add --lake DIR" in proc.stderr and not (tmp_path / "x.duckdb").exists()


def _started(argv: list[str], says: str) -> tuple[subprocess.Popen, str]:
    """A process started, once a line of its standard error says says; (process, that line)."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for line in proc.stderr:
        if says in line:
            threading.Thread(target=proc.stderr.read, daemon=True).start()  # the rest, unread
            return proc, line
    raise AssertionError(f"{argv[2]} ended without saying {says!r}")


def test_a_scheduler_dying_mid_load_is_one_line_per_file_not_loaded(tmp_path):
    """The scheduler killed once the first file is in the lake: no traceback; a line for each file
    the lake does not hold; the summary lists what it holds, and nothing else."""
    scheduler, line = _started([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                                "--port", "0", "--no-dashboard"], "Scheduler at")
    address = line.split("Scheduler at:")[1].split()[0]
    worker, _ = _started([sys.executable, "-m", "distributed.cli.dask_worker", address, "--nworkers", "1",
                          "--nthreads", "1", "--no-dashboard"], "Registered to")
    files = []  # small files, many: the scheduler dies while most of them wait
    for copy in range(3):
        for path in KINETO:
            files.append(tmp_path / f"{path.name.split('.')[0]}_{copy}.json.gz")
            shutil.copyfile(path, files[-1])
    lake = tmp_path / "lake"
    try:
        load = subprocess.Popen([sys.executable, "-m", "tracedb.cli", "load", *map(str, files), "--lake", str(lake),
                                 "--scheduler", address, "--format", "csv"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        traces = lake / "traces"
        while load.poll() is None and not (traces.is_dir() and any(traces.iterdir())):
            time.sleep(0.02)  # polled for a state: the first trace in the lake
        scheduler.kill()
        out, err = load.communicate(timeout=300)
    finally:
        for proc in (scheduler, worker):
            proc.kill()
            proc.wait()
    with tracedb.connect(lake) as db:
        held = {name for (name,) in db.sql("SELECT name FROM traces").rows}
    listed = {row.split(",")[0] for row in out.splitlines()[1:]}
    lines = err.splitlines()
    assert "Traceback" not in err and load.returncode == 1, err[-3000:]
    assert listed == held and held, (listed, held)
    assert len(lines) == len(files) - len(held), lines
    for line in lines:
        assert line.startswith("tracedb: error: ") and sum(str(f) in line for f in files) == 1, line
    went = [line for line in lines if line.endswith("not loaded: the Dask scheduler went away before its task finished")]
    assert went, lines
