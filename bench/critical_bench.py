"""Critical-path benchmark: the dependency graphs, critical paths and replays of `why` and
`critical-path`, on synthetic serving traces.

    python bench/critical_bench.py --mb 50 --step-mb 1024

--mb: a pair of traces of that size (bench/synth.py, NVIDIA and AMD flavours, loaded into
bench/out/critical_<mb>mb.duckdb unless it holds them): the simulation of every finding of `why`
(tracedb.savings.register: the slower trace's step graphs, one replay per part and one for all of
them) in a fresh process, with its peak RSS; then the whole `tracedb report why --format csv`
command, and `critical-path` of the slower trace's steps (its first 20). --step-mb: one step's
critical path on a trace of that size (`critical-path --step N`, the first step), the whole command.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from compare_bench import amd_trace
from load_bench import OUT, TRACEDB_BODY, compile_bytecode, measure, remove_db, synthetic_trace
from report_bench import holds

SAVINGS_BODY = """
import tracedb
from tracedb import savings
db = tracedb.connect(sys.argv[1])  # brings a database of an older tracedb up to date first
savings.register(db.con, sys.argv[2], sys.argv[3], None)
rows = db.con.execute("SELECT count(*) FROM why_savings").fetchone()[0]
"""


def database(traces: list[Path], name: str) -> Path:
    db = OUT / name
    if not holds(db, traces):
        remove_db(db)
        for trace in traces:
            measure(sys.executable, TRACEDB_BODY, str(trace), str(db))
    return db


def command(args: list[str]) -> tuple[float, float]:
    """Wall time (s) and peak RSS (MiB) of one tracedb command, its output discarded."""
    argv = [sys.executable, "-m", "tracedb.cli", *args]
    quiet = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_WRONLY, 0) for fd in (1, 2)]
    started = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, os.environ, file_actions=quiet)
    _, status, usage = os.wait4(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(argv)}: failed")
    return time.perf_counter() - started, usage.ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=50, help="size of each trace of the pair, MiB")
    ap.add_argument("--step-mb", type=float, default=1024, help="size of the trace of the one-step path, MiB")
    a = ap.parse_args()
    compile_bytecode()
    nv, amd = synthetic_trace(a.mb), amd_trace(a.mb)
    pair = database([nv, amd], f"critical_{int(a.mb)}mb.duckdb")
    names = [p.name.split(".")[0] for p in (nv, amd)]
    simulated = measure(sys.executable, SAVINGS_BODY, str(pair), *names)
    why = command(["report", "why", "--trace", names[0], "--vs", names[1], "--format", "csv", "--db", str(pair)])
    path = command(["report", "critical-path", "--trace", names[0], "--format", "csv", "--db", str(pair)])
    big = synthetic_trace(a.step_mb)
    one = database([big], f"critical_{int(a.step_mb)}mb.duckdb")
    import duckdb

    with duckdb.connect(str(one), read_only=True) as con:
        first = con.execute("SELECT min(step) FROM step_windows").fetchone()[0]
    step = command(["report", "critical-path", "--trace", big.name.split(".")[0], "--step", str(first), "--format",
                    "csv", "--db", str(one)])
    print(f"\nPair: {nv.name} and {amd.name}, {nv.stat().st_size / 2**20:,.0f} MiB each\n")
    print("| work | time (s) | peak RSS (MiB) |\n|---|---:|---:|")
    print(f"| every finding's simulation (savings.register: graphs, paths, replays; {simulated['rows']} parts) "
          f"| {simulated['seconds']:.2f} | {simulated['peak_rss_mb']:.0f} |")
    print(f"| `tracedb report why` on the pair, the whole command | {why[0]:.2f} | {why[1]:.0f} |")
    print(f"| `tracedb report critical-path` of one trace (first 20 steps), the whole command | {path[0]:.2f} "
          f"| {path[1]:.0f} |")
    print(f"| `critical-path --step {first}` on {big.stat().st_size / 2**20:,.0f} MiB, the whole command | {step[0]:.2f} "
          f"| {step[1]:.0f} |")


if __name__ == "__main__":
    main()
