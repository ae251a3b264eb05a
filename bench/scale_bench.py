"""Scale benchmark: every Kineto report as a whole `tracedb report` command, at several trace sizes.

    python bench/scale_bench.py --mb 100 300 1024 [--runs 2]

For each size, the load benchmark's synthetic trace (bench/synth.py, NVIDIA H100 flavour) and its
AMD MI300X twin (--flavour amd) are generated unless present and loaded into a database of their
own (bench/out/scale_<mb>mb.duckdb) unless it holds them already. Each report then runs as a user
runs it: a fresh `tracedb report NAME --trace NV [--vs AMD] --format csv` process, timed from
start to exit (Python start-up included) with its peak RSS, the best of --runs. Reports on one
trace run on the NVIDIA trace; comparisons on the pair. Prints a Markdown table, a column per
size, and each report's added time per 100 MiB from one size to the next: a report whose cost
grows linearly with the trace keeps that figure flat (a fixed cost, Python's start-up and the
query's planning, is not in it). The AIE, Ascend and TensorCast reports read other inputs: bench/aie_bench.py
and bench/ascend_bench.py.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from compare_bench import amd_trace
from load_bench import OUT, TRACEDB_BODY, compile_bytecode, measure, remove_db, synthetic_trace
from report_bench import holds

# (report, takes the pair): every report of Kineto traces, the pattern ones given the pair's names
REPORTS = [
    ("summary", False), ("phases", False), ("ops", False), ("kernels", False), ("layers", False),
    ("stacks", False), ("collectives", False), ("timeline", False), ("gaps", False), ("roofline", False),
    ("host-frames", False), ("why", False),
    ("compare", True), ("why", True), ("efficiency", True), ("alignment", True), ("fusion", True),
    ("same-kernels", True), ("host-frames", True), ("compare-pairs", True), ("compare-many", None),
    ("trend", None),
]


def database(mb: float) -> tuple[Path, str, str]:
    """The database holding the pair of this size, loaded unless it already holds it."""
    nv, amd = synthetic_trace(mb), amd_trace(mb)
    db = OUT / f"scale_{int(mb)}mb.duckdb"
    if not holds(db, [nv, amd]):
        remove_db(db)
        for trace in (nv, amd):
            measure(sys.executable, TRACEDB_BODY, str(trace), str(db))
    # a database an older tracedb wrote is brought up to date (its facts derived again) once, in a
    # process of its own: the first read-only command would otherwise apply the new views inside
    # its timing, and every report would read facts derived by the older rules (and this process
    # stays small: a spawned child's peak RSS counts the memory it shares with its parent until it
    # starts)
    subprocess.run([sys.executable, "-c", "import sys, tracedb; tracedb.connect(sys.argv[1], read_only=False).close()",
                    str(db)], check=True)
    return db, nv.name.split(".")[0], amd.name.split(".")[0]


def run_report(db: Path, name: str, pair: bool | None, a: str, b: str) -> tuple[float, float]:
    """Wall time (s) and peak RSS (MiB) of one `tracedb report` process."""
    command = [sys.executable, "-m", "tracedb.cli", "report", name, "--db", str(db), "--format", "csv"]
    if pair is None:  # a report of a set of traces: both, by a pattern
        command += ["--trace", "*"]
    else:
        command += ["--trace", a] + (["--vs", b] if pair else [])
    started = time.perf_counter()
    quiet = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_WRONLY, 0) for fd in (1, 2)]  # its output is not timed
    pid = os.posix_spawn(command[0], command, os.environ, file_actions=quiet)
    _, status, usage = os.wait4(pid, 0)
    seconds = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(command)}: failed")
    return seconds, usage.ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, nargs="+", default=[100, 300, 1024], help="trace sizes in MiB")
    ap.add_argument("--runs", type=int, default=2, help="runs of each report; the best is shown")
    a = ap.parse_args()
    compile_bytecode()
    sizes = sorted(a.mb)
    results: dict[tuple[str, bool | None], dict[float, tuple[float, float]]] = {}
    for mb in sizes:
        db, nv, amd = database(mb)
        for name, pair in REPORTS:
            runs = [run_report(db, name, pair, nv, amd) for _ in range(a.runs)]
            results.setdefault((name, pair), {})[mb] = min(runs)
            print(f"{mb:g} MiB {name}{' (pair)' if pair else ''}: {min(runs)[0]:.2f} s, {min(runs)[1]:.0f} MiB",
                  file=sys.stderr, flush=True)
    header = " | ".join(f"{mb:g} MiB: s, peak MiB" for mb in sizes)
    steps = list(zip(sizes, sizes[1:]))
    added = f" | added s per 100 MiB ({', '.join(f'{x:g}→{y:g}' for x, y in steps)})" if steps else ""
    print(f"\n| report | {header}{added} |")
    print("|---|" + "---:|" * (len(sizes) + bool(steps)))
    for (name, pair), by_size in results.items():
        label = name + {True: " (pair)", None: " (both, by pattern)", False: ""}[pair]
        cells = " | ".join(f"{by_size[mb][0]:.2f}, {by_size[mb][1]:.0f}" for mb in sizes)
        rates = ", ".join(f"{100 * (by_size[y][0] - by_size[x][0]) / (y - x):.2f}" for x, y in steps)
        print(f"| {label} | {cells}{' | ' + rates if steps else ''} |")


if __name__ == "__main__":
    main()
