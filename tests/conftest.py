"""Shared helpers: fixture paths, fresh databases, building small traces, running the CLI."""

from __future__ import annotations

import atexit
import contextlib
import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from tracedb import testing
from tracedb.db import open_db
from tracedb.ingest.loader import load_file

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"  # the layers' folders (unit, ingest, store, analysis, reports, end_to_end) and shared helpers
# Small real traces, kept in the repository with their sources and licences (fixtures/SOURCES.md).
FIXTURES = Path(os.environ.get("TRACEDB_FIXTURES", ROOT / "tests" / "fixtures"))
KINETO = sorted((FIXTURES / "kineto").glob("*.json.gz"))
# Real traces of everyday size (2-64 MB), too large for the repository: the tests that read them
# skip when they are absent (CI has them beside the clone).
CORPUS = Path(os.environ.get("TRACEDB_CORPUS", ROOT.parent / "shared" / "corpus"))

write_trace = testing.write_trace  # tests import it from here

# The template a new database is copied from is built once for the session into a cache of its
# own (every process the tests start inherits it), never into the user's cache.
os.environ["TRACEDB_CACHE"] = tempfile.mkdtemp(prefix="tracedb-test-cache-")
atexit.register(shutil.rmtree, os.environ["TRACEDB_CACHE"], True)


# A table's width is what a pipe gets when nothing says otherwise (render.PIPE_WIDTH), whoever
# runs the tests: a terminal's $COLUMNS, or the 80 columns pytest-xdist gives its workers, would
# change what the tests read.
for _var in ("COLUMNS", "LINES"):
    os.environ.pop(_var, None)

# Workers of `-n auto` (pyproject.toml): one per core, at most this many (each builds the
# session's databases of its own).
MAX_WORKERS = 4


def pytest_xdist_auto_num_workers(config):
    return max(1, min(MAX_WORKERS, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                      else os.cpu_count() or 1))


# Tests live in a folder per layer; each test is marked with its layer, and the end-to-end ones
# (real processes, signals, browsers, notebooks, the whole corpus) also as slow:
#     python -m pytest -m ingest            one layer
#     python -m pytest -m "not slow"        everything but the end-to-end tests
LAYERS = ("unit", "ingest", "store", "analysis", "reports", "end_to_end")


def pytest_collection_modifyitems(items):
    for item in items:
        parts = Path(item.path).resolve().relative_to(TESTS).parts
        if len(parts) < 2 or parts[0] not in LAYERS:
            raise pytest.UsageError(f"{item.path}: a test lives in the folder of its layer ({', '.join(LAYERS)})")
        item.add_marker(parts[0])
        if parts[0] == "end_to_end":
            item.add_marker("slow")


def read_fixture(path: Path):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return json.load(f)


@pytest.fixture
def db_path(tmp_path) -> Path:
    return tmp_path / "test.duckdb"


@pytest.fixture(scope="session")
def migrated_db(tmp_path_factory) -> Path:
    """An empty database brought up to date once per session; each test's con starts from a copy."""
    path = tmp_path_factory.mktemp("migrated") / "empty.duckdb"
    open_db(path).close()
    return path


@pytest.fixture
def con(db_path, migrated_db):
    shutil.copyfile(migrated_db, db_path)
    c = open_db(db_path)
    yield c
    c.close()


@dataclass
class CliRun:
    """What a tracedb command did: as subprocess.CompletedProcess says it."""
    args: list[str]
    returncode: int
    stdout: str
    stderr: str


def run_cli(*args, db: Path | None = None, env=None, check=False, process=False) -> CliRun:
    """Run a tracedb command: in this process (the command line's own main(), with its exit code,
    standard output and error), or in a new one when process is true (what only a process shows:
    signals, locks between processes, the installed entry point)."""
    argv = [*map(str, args), *(["--db", str(db)] if db is not None else [])]
    if process:
        cmd = [sys.executable, "-m", "tracedb.cli", *argv]
        proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=120)
        run = CliRun(cmd, proc.returncode, proc.stdout, proc.stderr)
    else:
        run = _run_in_process(argv, env or {})
    if check and run.returncode != 0:
        raise AssertionError(f"tracedb {' '.join(argv)} failed: {run.stderr}")
    return run


def _run_in_process(argv: list[str], env: dict[str, str]) -> CliRun:
    code, out, err = testing.run_command(argv, env)
    return CliRun(["tracedb", *argv], code, out, err)


def load(con, path, **kw):
    return load_file(con, path, **kw)


def written_out_agrees(con, query: str, params: list, rules_file: Path, rules_text: str):
    """Rows of query, whose last two columns are a rule-hits macro written out with constants
    (tracedb.rules.refresh_regex_rules) and the same matching read from the rules table row by row,
    before and after rules_text is stored as the rules file rules_file: the two columns agree on
    every row, both times. Returns (rows before, rows after)."""
    from tracedb import rules

    before = con.execute(query, params).fetchall()
    assert [r for r in before if r[-2] != r[-1]] == []
    rules_file.write_text(rules_text)
    rules.add_file(con, rules_file)
    after = con.execute(query, params).fetchall()
    assert [r for r in after if r[-2] != r[-1]] == []
    return before, after


def database_of(tmp_path_factory, label: str, traces) -> Path:
    """A database file holding the given traces (for module-scoped fixtures)."""
    path = tmp_path_factory.mktemp(label) / f"{label}.duckdb"
    with open_db(path) as c:
        for trace in traces:
            load(c, trace)
    return path


@contextlib.contextmanager
def read_only(path: Path):
    """A plain DuckDB connection to a database file, read-only, as any client would open it."""
    import duckdb

    c = duckdb.connect(str(path), read_only=True)
    try:
        yield c
    finally:
        c.close()


def table_counts(con) -> dict[str, int]:
    """Row count of every base table: a fingerprint of the database's content."""
    tables = [r[0] for r in con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main' AND NOT temporary").fetchall()]
    return {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables}


def tc_op(name: str, dur, pid=1, **args) -> dict:
    """One operator of a TensorCast trace (an X event without a category; args as TensorCast writes them)."""
    return {"name": name, "ph": "X", "ts": 0, "dur": dur, "pid": pid, "tid": 0, "args": args}


def write_tc_trace(path: Path, *ops: dict, process: str | None = "profiling") -> Path:
    """A TensorCast trace of these operators, their process named (None: unnamed)."""
    named = [{"name": "process_name", "ph": "M", "pid": 1, "args": {"name": process}}] if process else []
    path.write_text(json.dumps({"traceEvents": named + list(ops)}))
    return path


ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def in_threads(work, n: int) -> list[BaseException]:
    """Run work() in n threads at once; what they raised, for the test to report."""
    raised: list[BaseException] = []

    def run() -> None:
        try:
            work()
        except Exception as exc:  # noqa: BLE001 - the test reports it
            raised.append(exc)

    threads = [threading.Thread(target=run) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return raised


def start_until(args: list, text: str, **popen) -> tuple[subprocess.Popen, bytes]:
    """Start a tracedb command with its progress display on (FORCE_COLOR: rich draws it off a
    terminal too) and return it, still running, once its stderr shows text (a file at a stage: a
    state, not a time), with the bytes it printed so far; if it ends first, it has ended."""
    env = dict(os.environ, FORCE_COLOR="1", COLUMNS="200")
    proc = subprocess.Popen([sys.executable, "-m", "tracedb.cli", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL), **popen)
    seen = b""
    while text.encode() not in seen:
        chunk = os.read(proc.stderr.fileno(), 1 << 16)
        if not chunk:
            break
        seen += chunk
    return proc, seen


def last_line(printed: bytes) -> str:
    """The last line a command printed, progress display and its escape codes left out."""
    lines = [ln.strip() for ln in re.split(r"[\r\n]", ANSI.sub("", printed.decode())) if ln.strip()]
    return lines[-1] if lines else ""


def big_kineto_trace(path: Path, events: int = 150_000) -> Path:
    """About 30 MB of Kineto-shaped events per 150,000: cpu_ops with shape args, each launching a
    kernel through a runtime call, a third of the events each (a load of a second or more, every
    stage of it, the derivation of the kernels' facts included)."""
    names = ["ampere_sgemm_128x64_nn", "void at::native::vectorized_elementwise_kernel<4>", "void softmax_warp_forward"]
    with open(path, "w") as f:
        f.write('{"schemaVersion": 1, "traceEvents": [\n')
        for i in range(events):
            j, kind = divmod(i, 3)
            if kind == 0:
                ev = {"ph": "X", "cat": "cpu_op", "name": f"aten::op{j % 97}", "pid": 1, "tid": 1, "ts": j * 9 + 0.125,
                      "dur": 6, "args": {"External id": j, "Input Dims": [[], [8, 128], []], "Input type": ["", "float"]}}
            elif kind == 1:
                ev = {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                      "ts": j * 9 + 1.125, "dur": 2, "args": {"External id": j, "correlation": j}}
            else:
                ev = {"ph": "X", "cat": "kernel", "name": names[j % 3], "pid": 0, "tid": 7, "ts": j * 9 + 4,
                      "dur": 4, "args": {"External id": j, "correlation": j, "device": 0, "stream": 7}}
            f.write(("  " if i == 0 else ",\n  ") + json.dumps(ev))
        f.write("\n]}")
    return path


# -- databases shared by the whole session (opened read-only by the tests that use them) -----------

EXAMPLE_PAIR = ("h100_bert-small", "mi300_bert-small")


def example_inputs(tmp: Path) -> list:
    """The arguments of `tracedb load` for the traces every report's `-- Example:` line names: the
    BERT pair (NVIDIA, AMD), the AIE fixtures, an Ascend kernel_details.csv, and a TensorCast trace
    `tc` with its op mapping (written into tmp)."""
    tc = write_tc_trace(tmp / "tc.json", tc_op("torch.ops.aten.mm.default", 180, kernel_type="MatMulV2",
                                               source="MEASURED"), tc_op("torch.ops.aten.add.Tensor", 14))
    mapping = tmp / "op_mapping.yaml"
    mapping.write_text("operator_mappings:\n  aten.add.Tensor: {kernel_type: Add}\n")
    pair = [FIXTURES / "kineto" / f"{n}.json.gz" for n in EXAMPLE_PAIR]
    aie = sorted((FIXTURES / "aie").glob("*.json"))
    return [*pair, *aie, FIXTURES / "ascend" / "kernel_details_cann8.csv", tc, "--op-mapping", mapping]


def shared_folder(tmp_path_factory, name: str) -> Path:
    """The folder of built_once(name): beside the workers' own base folders (one per run)."""
    root = tmp_path_factory.getbasetemp()
    return (root.parent if os.environ.get("PYTEST_XDIST_WORKER") else root) / f"shared-{name}"


@contextlib.contextmanager
def built_once(tmp_path_factory, name: str):
    """A folder the whole run shares, every worker of `-n` alike, for what the body builds in it
    once: the first worker to come builds it (the others wait on its lock), and a finished build
    is marked, so that the later ones find it built (the body is given None then). What is built
    there is read by every worker, and written by none."""
    import fcntl

    folder = shared_folder(tmp_path_factory, name)
    folder.mkdir(exist_ok=True)
    with open(folder.with_name(folder.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = folder / ".built"
        if done.exists():
            yield None
            return
        try:
            yield folder
        except BaseException:  # half built: the next worker starts from an empty folder
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            raise
        done.touch()


@pytest.fixture(scope="session")
def examples_db(tmp_path_factory) -> Path:
    """A database of the traces the reports' examples name (example_inputs), built once a run."""
    with built_once(tmp_path_factory, "examples") as tmp:
        if tmp is not None:
            run_cli("load", *example_inputs(tmp), "--jobs", "1", db=tmp / "examples.duckdb", check=True)
    return shared_folder(tmp_path_factory, "examples") / "examples.duckdb"


@pytest.fixture(scope="session")
def corpus_db(tmp_path_factory) -> Path:
    """Every real trace of the corpus in one database, loaded once a run (skipped where the
    corpus is absent)."""
    files = sorted(CORPUS.glob("*.json.gz"))
    if not files:
        pytest.skip(f"no corpus at {CORPUS} (set TRACEDB_CORPUS)")
    with built_once(tmp_path_factory, "corpus") as tmp:
        if tmp is not None:
            run_cli("load", *files, db=tmp / "corpus.duckdb", check=True)
    return shared_folder(tmp_path_factory, "corpus") / "corpus.duckdb"
