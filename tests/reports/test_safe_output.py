"""Output that harms nothing: -o and --perfetto write a regular file or a new path, a device or a
pipe in place, and refuse every other node; no text of a trace reaches a terminal as a control
character, nor breaks a report."""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
import stat
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from tracedb import reports, testing

from conftest import FIXTURES, run_cli

BERT = [FIXTURES / "kineto" / f"{n}.json.gz" for n in ("h100_bert-small", "mi300_bert-small")]

# what a hostile trace names its kernels and operations: a terminal's title and a cleared screen, a
# newline (valid JSON), rich markup and emoji codes, a C1 control, a bidirectional override
ESCAPES = "k\u001b]0;PWNED\u0007\u001b[31mRED\u001b[0m\u001b[2J"
NEWLINE = "first line\nsecond_kernel"
MARKUP = "fill<list[int]> [bold]b[/bold] :fire:"
C1 = "c1\u009b2J_\u202ekernel"
NAMES = [ESCAPES, NEWLINE, MARKUP, C1, "plain_gemm_kernel"]
EVIL_NAMES = "SELECT DISTINCT k.name FROM kernels k JOIN traces t USING (trace_id) WHERE t.name = 'evil' ORDER BY 1"
RAW_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")  # a newline ends a line


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("safe")
    events, t = [], 1000
    for n in range(3):
        for i, name in enumerate(NAMES):
            corr = n * len(NAMES) + i + 1
            events.append(testing.x_event("cpu_op", f"aten::op\u001b[2J{i}\n", t - 10, 8))
            events.append(testing.runtime_call("cudaLaunchKernel", t - 5, 2, corr))
            events.append(testing.kernel_event(name, t, 10, corr))
            t += 20
    trace = testing.write_trace(tmp / "evil.json", events,
                                deviceProperties=[{"id": 0, "name": "NVIDIA H100 80GB HBM3", "warpSize": 32}])
    path = tmp / "safe.duckdb"
    run_cli("load", trace, *BERT, db=path, check=True)
    return path


# -- output nodes --------------------------------------------------------------------------------

def _node(kind: str, where: Path) -> Path:
    """A node of the given kind made in a folder of the test's (skip where it cannot be made)."""
    path = where / kind
    try:
        if kind == "null device":
            os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        elif kind == "full device":
            os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 7))
        elif kind == "block device":  # major 0: no driver, nothing could be written even by mistake
            os.mknod(path, stat.S_IFBLK | 0o600, os.makedev(0, 0))
        elif kind == "fifo":
            os.mkfifo(path)
        elif kind == "socket":
            path = Path(tempfile.mkdtemp(prefix="s", dir="/tmp")) / "s"  # a socket's path is short
            sock = socket.socket(socket.AF_UNIX)
            sock.bind(str(path))
            sock.close()
        elif kind == "directory":
            path.mkdir()
        elif kind == "dangling link":
            path.symlink_to(where / "nowhere" / "x.csv")
    except (PermissionError, OSError) as exc:
        pytest.skip(f"cannot make a {kind} here: {exc}")
    return path


def _identity(path: Path):
    st = os.lstat(path)
    return stat.S_IFMT(st.st_mode), st.st_ino, st.st_rdev


def _output_args(how: str, path: Path) -> list:
    if how == "report":
        return ["report", "summary", "--format", "csv", "-o", path]
    return ["export", "--perfetto", path, "--trace", "h100_bert-small"]


@pytest.mark.parametrize("how", ["report", "perfetto"])
@pytest.mark.parametrize("kind, why", [("block device", "is a block device"), ("socket", "is a socket"),
                                       ("directory", "is a directory"),
                                       ("dangling link", "is a symbolic link to nothing")])
def test_a_node_that_is_not_a_file_is_refused_and_left_alone(db, tmp_path, how, kind, why):
    node = _node(kind, tmp_path)
    before = _identity(node)
    proc = run_cli(*_output_args(how, node), db=db)
    assert proc.returncode == 1 and proc.stderr == f"tracedb: error: {node}: {why}" + (
        "; give a file name\n" if kind != "dangling link" else "\n")
    assert _identity(node) == before
    assert not (tmp_path / "nowhere").exists()
    assert [p.name for p in node.parent.iterdir() if p.name.startswith(".")] == []  # no partial file beside


@pytest.mark.parametrize("how", ["report", "perfetto"])
def test_a_character_device_is_written_in_place_never_replaced(db, tmp_path, how):
    null = _node("null device", tmp_path)
    before = _identity(null)
    proc = run_cli(*_output_args(how, null), db=db)
    assert proc.returncode == 0, proc.stderr
    assert _identity(null) == before
    full = _node("full device", tmp_path)
    before = _identity(full)
    proc = run_cli(*_output_args(how, full), db=db)
    assert proc.returncode == 1 and proc.stderr == f"tracedb: error: {full}: cannot write: No space left on device\n"
    assert _identity(full) == before


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full on this system")
def test_the_machines_dev_full_stays_a_device(db):
    before = _identity(Path("/dev/full"))
    for how in ("report", "perfetto"):
        proc = run_cli(*_output_args(how, Path("/dev/full")), db=db)
        assert proc.returncode == 1 and "No space left on device" in proc.stderr
    assert _identity(Path("/dev/full")) == before


@pytest.mark.parametrize("how", ["report", "perfetto"])
def test_a_fifo_is_written_in_place_when_read_and_refused_at_once_when_not(db, tmp_path, how):
    fifo = _node("fifo", tmp_path)
    before = _identity(fifo)
    # nobody reads it: one line at once (a process, so that a wait would end in the runner's timeout)
    proc = run_cli(*_output_args(how, fifo), db=db, process=True)
    assert proc.returncode == 1 and proc.stderr == f"tracedb: error: {fifo}: is a pipe nobody reads\n"
    # a reader there before the writer comes (it never reads), and one that reads what is written
    keep = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    got: list[bytes] = []
    reading = threading.Thread(target=lambda: got.append(Path(fifo).read_bytes()))
    reading.start()  # opening for reading waits for the writer; reading ends when it closes
    try:
        cmd = [sys.executable, "-m", "tracedb.cli", *map(str, _output_args(how, fifo)), "--db", str(db)]
        writer = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        assert writer.returncode == 0, writer.stderr
    finally:
        if reading.is_alive():  # the writer never came: a writer of our own ends the read
            os.close(os.open(fifo, os.O_WRONLY))
        reading.join()
        os.close(keep)
    if how == "report":
        assert got[0].decode().startswith("trace,platform,device,kernels")
    else:
        assert json.loads(got[0])["traceEvents"]
    assert _identity(fifo) == before


def test_a_link_to_a_file_keeps_pointing_at_it(db, tmp_path):
    target = tmp_path / "real.csv"
    target.write_text("old\n")
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    proc = run_cli(*_output_args("report", link), db=db)
    assert proc.returncode == 0, proc.stderr
    assert link.is_symlink() and link.resolve() == target
    assert target.read_text().startswith("trace,platform")


def test_a_regular_file_is_replaced_whole_and_a_new_path_created(db, tmp_path):
    old = tmp_path / "old.csv"
    old.write_text("old\n")
    inode = old.stat().st_ino
    assert run_cli(*_output_args("report", old), db=db).returncode == 0
    assert old.read_text().startswith("trace,platform") and old.stat().st_ino != inode  # renamed into place
    new = tmp_path / "new.json"
    assert run_cli(*_output_args("perfetto", new), db=db).returncode == 0
    assert json.loads(new.read_bytes())["traceEvents"]


# -- names that would break a report or drive a terminal -----------------------------------------

def _runs() -> list[list[str]]:
    """Every report that runs on Kineto traces, as its example runs it, on the hostile trace."""
    runs = []
    for name, report in sorted(reports.available().items()):
        args = shlex.split(report.examples[0])[2:]
        text = " ".join(args)
        if "bert" not in text and "--trace" in text:
            continue  # the AIE, TensorCast and Ascend reports: their own kinds of trace
        args = [a.replace("h100_bert-small", "evil").replace("*bert*", "*") for a in args]
        runs.append(args[:args.index("--vs") + 1] + ["mi300_bert-small"] if "'tc'" in repr(args) else args)
    return runs


@pytest.mark.parametrize("fmt", ["table", "markdown", "html", "csv", "json"])
def test_every_report_renders_names_with_control_characters(db, fmt):
    runs = _runs()
    assert len(runs) >= 15
    for args in runs:
        proc = run_cli("report", *args, "--format", fmt, db=db)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, (args, proc.stderr)
        if fmt in ("table", "markdown"):
            assert not RAW_CONTROL.search(proc.stdout + proc.stderr), (args, proc.stdout)
    for args in (["ops"], ["kernels"]):  # every trace at once, the hostile one among them
        proc = run_cli("report", *args, "--format", fmt, db=db)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, (args, proc.stderr)


def test_a_table_and_markdown_show_control_characters_escaped_and_markup_as_text(db):
    for fmt in ("table", "markdown"):
        out = run_cli("sql", EVIL_NAMES, "--format", fmt, "--wide", db=db, check=True).stdout
        assert "k\\x1b]0;PWNED\\x07\\x1b[31mRED\\x1b[0m\\x1b[2J" in out
        assert "first line\\nsecond_kernel" in out
        assert "c1\\x9b2J_\\u202ekernel" in out
        assert MARKUP in out  # brackets and colons are text: no style, no emoji
        assert not RAW_CONTROL.search(out)
    kernels = run_cli("report", "kernels", "--trace", "evil", "--wide", db=db, check=True).stdout
    assert "\\x1b]0;PWNED" in kernels and not RAW_CONTROL.search(kernels)


def test_csv_and_json_keep_the_exact_text(db):
    query = EVIL_NAMES
    rows = json.loads(run_cli("sql", query, "--format", "json", db=db, check=True).stdout)
    assert sorted(r["name"] for r in rows) == sorted(NAMES)
    import csv
    import io

    got = [r["name"] for r in csv.DictReader(io.StringIO(run_cli("sql", query, "--format", "csv", db=db,
                                                                 check=True).stdout))]
    assert sorted(got) == sorted(NAMES)


def test_error_lines_show_a_path_escaped(db, tmp_path):
    missing = tmp_path / "x\u001b]0;PWNED\u0007.json"
    proc = run_cli("load", missing, db=db)
    assert proc.returncode == 1
    assert "x\\x1b]0;PWNED\\x07.json" in proc.stderr and not RAW_CONTROL.search(proc.stderr)
