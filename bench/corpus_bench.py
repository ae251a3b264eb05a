"""Load benchmark on real traces: `tracedb load` against wafer-core's `load_trace`, file by file.

    python bench/corpus_bench.py                 # every trace of ../shared/corpus, 3 runs each
    python bench/corpus_bench.py --runs 5 --fixtures   # also the small traces of ../shared/fixtures

Each trace is decompressed once into bench/out/corpus/ (wafer-core reads plain JSON only; both
tools then read the same bytes). For each trace, in turn and alternating run by run:

- `tracedb load FILE --db NEW` — the whole command as a user runs it (interpreter start-up
  included) into a database that does not exist yet;
- `tracedb load FILE --db EXISTING` — the same into a copy of a database already holding the
  bundled example pair (the copy is made before the clock starts);
- wafer-core 0.1.62: a Python process running `load_trace(FILE)` (bench/out/peer-venv, created on
  first use as in bench/load_bench.py);
- the floor (bench/floor.py): the file cut into the loader's own segment files, then DuckDB's
  read_json over all of them on every core with each event's columns typed in the same pass;
  the table gives that time (cut + typed read, measured inside the process) and what tracedb's
  new-database load takes above it.

Wall time is measured around each process and its peak RSS taken from the kernel's accounting of
that process alone (os.wait4). The table gives medians over the runs and the peer's time over
ours, run by run (median), and the sums of the medians over the corpus. Then the fixed costs: a new
database made ready (in-process, median), any command on an existing database (`tracedb ls`, whole
command: interpreter, imports, opening the file, a query), and a tiny trace loaded into an existing
database (whole command). Last, the whole corpus loaded by one command into one database, in MB of
JSON per second.
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "out" / "corpus"
TINY = ROOT / "tests" / "fixtures" / "kineto"
sys.path.insert(0, str(HERE))
from load_bench import compile_bytecode, floor_seconds, peer_python  # noqa: E402

PEER = "import sys\nfrom wafer_core.lib.trace_compare.loader import load_trace\nload_trace(sys.argv[1])\n"
READY = ("import sys, time\nfrom tracedb.db import open_db\nt = time.perf_counter()\n"
         "open_db(sys.argv[1]).close()\nprint(time.perf_counter() - t)\n")


def tracedb_command() -> list[str]:
    exe = Path(sys.executable).with_name("tracedb")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "tracedb.cli"]


def run(cmd: list[str], stdout=subprocess.DEVNULL) -> tuple[float, float, str]:
    """(wall seconds, peak RSS in MiB, stdout) of one process."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.PIPE, text=True)
    out = proc.stdout.read() if proc.stdout else ""
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{err}")
    return wall, usage.ru_maxrss / 1024, out


def plain(src: Path) -> Path:
    """The trace as plain JSON under bench/out/corpus."""
    OUT.mkdir(parents=True, exist_ok=True)
    dest = OUT / src.name.removesuffix(".gz")
    if not dest.exists():
        opener = gzip.open if src.name.endswith(".gz") else open
        with opener(src, "rb") as f, open(dest, "wb") as out:
            shutil.copyfileobj(f, out, 1 << 20)
    return dest


def remove_db(path: Path) -> None:
    for p in (path, Path(str(path) + ".wal")):
        p.unlink(missing_ok=True)


def median(values) -> float:
    return statistics.median(values)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "corpus")
    ap.add_argument("--fixtures", action="store_true", help="also the Kineto traces of ../shared/fixtures")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--skip-peer", action="store_true")
    ap.add_argument("--peer-python", help="python with wafer-core installed (default: bench/out/peer-venv)")
    a = ap.parse_args()

    sources = sorted(a.corpus.glob("*.json.gz"), key=lambda p: p.stat().st_size)
    if a.fixtures:
        sources = sorted((a.corpus.parent / "fixtures" / "kineto").glob("*.json.gz"),
                         key=lambda p: p.stat().st_size) + sources
    if not sources:
        raise SystemExit(f"no traces in {a.corpus}")
    traces = [plain(s) for s in sources]
    compile_bytecode()
    tracedb = tracedb_command()
    peer = None if a.skip_peer else peer_python(a.peer_python)
    work = HERE / "out"
    new_db, existing_db, base_db = work / "corpus_new.duckdb", work / "corpus_existing.duckdb", work / "corpus_base.duckdb"
    remove_db(base_db)
    run([*tracedb, "load", *map(str, sorted((ROOT / "examples").glob("*.json.gz"))), "--db", str(base_db)])

    print(f"{os.cpu_count()} cores, {a.runs} runs per figure, medians\n")
    print("| trace | MB | tracedb load, new db: s (MiB) | into existing db: s (MiB) | wafer-core load_trace: s (MiB) "
          "| floor: cut + typed read, s | tracedb above the floor, s | peer / tracedb (new, existing) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    sums = {"new": 0.0, "peer": 0.0, "floor": 0.0}
    for trace in traces:
        figures: dict[str, list] = {"new": [], "existing": [], "peer": [], "floor": []}
        for _ in range(a.runs):
            remove_db(new_db)
            figures["new"].append(run([*tracedb, "load", str(trace), "--db", str(new_db)]))
            remove_db(existing_db)
            shutil.copy(base_db, existing_db)
            figures["existing"].append(run([*tracedb, "load", str(trace), "--db", str(existing_db)]))
            if peer:
                figures["peer"].append(run([peer, "-c", PEER, str(trace)]))
            figures["floor"].append(floor_seconds(trace))
        mb = trace.stat().st_size / 1e6

        def cell(key):
            runs = figures[key]
            if not runs:
                return "—"
            return f"{median(r[0] for r in runs):.2f} ({median(r[1] for r in runs):.0f})"

        floor = median(figures["floor"])
        sums["new"] += median(n[0] for n in figures["new"])
        sums["floor"] += floor
        if figures["peer"]:
            sums["peer"] += median(p[0] for p in figures["peer"])
        above = median(n[0] for n in figures["new"]) - floor
        ratio = "—"
        if figures["peer"]:
            new = median(p[0] / n[0] for p, n in zip(figures["peer"], figures["new"]))
            old = median(p[0] / n[0] for p, n in zip(figures["peer"], figures["existing"]))
            ratio = f"{new:.2f}x, {old:.2f}x"
        print(f"| {trace.name} | {mb:.1f} | {cell('new')} | {cell('existing')} | {cell('peer')} | {floor:.2f} "
              f"| {above:.2f} | {ratio} |", flush=True)

    print(f"\nSums of the medians over the corpus: tracedb load into a new database {sums['new']:.2f} s, "
          f"wafer-core {sums['peer']:.2f} s, the floors {sums['floor']:.2f} s")

    # fixed costs
    ready = []
    for _ in range(max(3, a.runs)):
        remove_db(new_db)
        ready.append(float(run([sys.executable, "-c", READY, str(new_db)], stdout=subprocess.PIPE)[2]))
    print(f"New database ready (open_db in-process): {median(ready):.3f} s")
    listed = []
    for _ in range(max(3, a.runs)):
        listed.append(run([*tracedb, "ls", "--db", str(base_db)])[0])
    print(f"Any command on an existing database (tracedb ls, whole command): {median(listed):.2f} s")
    # a tiny trace (the smallest Kineto fixture) and the smallest real one, each into an existing database
    tiny = min(TINY.glob("*.json.gz"), key=lambda p: p.stat().st_size)
    for trace in (tiny, min(traces, key=lambda p: p.stat().st_size)):
        runs = []
        for _ in range(max(3, a.runs)):
            remove_db(existing_db)
            shutil.copy(base_db, existing_db)
            runs.append(run([*tracedb, "load", str(trace), "--db", str(existing_db)]))
        print(f"{trace.name} ({trace.stat().st_size / 1e3:.0f} kB) into an existing database, whole command: "
              f"{median(r[0] for r in runs):.2f} s, {median(r[1] for r in runs):.0f} MiB")

    # the whole corpus in one command
    remove_db(new_db)
    total = sum(t.stat().st_size for t in traces) / 1e6
    wall, rss, _ = run([*tracedb, "load", *map(str, traces), "--db", str(new_db)])
    print(f"Whole corpus ({len(traces)} traces, {total:.0f} MB of JSON) in one command: {wall:.1f} s, "
          f"{total / wall:.1f} MB/s, peak {rss:.0f} MiB")
    for p in (new_db, existing_db, base_db):
        remove_db(p)


if __name__ == "__main__":
    main()
