"""Report benchmark: every `tracedb report` on a loaded trace, against wafer-core's analyze_traces.

    python bench/report_bench.py --mb 1024 [--peer-python PATH] [--skip-peer] [--db FILE]

Uses the synthetic trace of the load benchmark (bench/synth.py, generated unless present) and a
database holding it (bench/out/bench.duckdb, loaded unless it already holds the trace). Each
report's query runs in a fresh process on a read-only connection, three times; the table gives the
first (cold) and the best of the three, plus the wall time of the whole `tracedb report` command.
wafer-core's analyze_traces(trace, trace) answers its one comparison from the JSON file each time
(its loader caches the parsed trace, so the pair costs one load). Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from load_bench import OUT, TRACEDB_BODY, measure, peer_python, remove_db, synthetic_trace

REPORT_BODY = """
import duckdb
from tracedb import reports
con = duckdb.connect(sys.argv[1], read_only=True)
report = reports.get(sys.argv[2])
values = reports.bind(report, dict(zip(("trace", "vs"), sys.argv[3:])))
times = []
for _ in range(3):
    t0 = time.perf_counter()
    rows = sum(len(section_rows) for _, _, section_rows in reports.run(con, report, values))
    times.append(time.perf_counter() - t0)
print(json.dumps({"seconds": times[0], "best": min(times), "peak_rss_mb": 0, "rows": rows}))
raise SystemExit(0)
"""

PEER_BODY = """
from wafer_core.lib.trace_compare.analyzer import analyze_traces
result = analyze_traces(sys.argv[1], sys.argv[1])
rows = len(result.get("operations", []))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=1024, help="size of the synthetic trace in MiB")
    ap.add_argument("--db", help="database holding the trace (default: bench/out/bench.duckdb)")
    ap.add_argument("--peer-python", help="python with wafer-core installed (default: bench/out/peer-venv)")
    ap.add_argument("--skip-peer", action="store_true", help="measure tracedb only")
    a = ap.parse_args()

    trace = synthetic_trace(a.mb)
    db = Path(a.db) if a.db else OUT / "bench.duckdb"
    if not holds(db, [trace]):
        remove_db(db)
        measure(sys.executable, TRACEDB_BODY, str(trace), str(db))

    names = ["summary", "ops", "kernels", "phases", "stacks", "layers"]
    rows = [(name, *time_report(db, name)) for name in names]

    print(f"\nTrace: {trace.name}, {trace.stat().st_size / 2**20:,.0f} MiB\n")
    print("| report | query, first run (s) | query, best of 3 (s) | `tracedb report` command (s) |")
    print("|---|---:|---:|---:|")
    for name, r, wall in rows:
        print(f"| {name} | {r['seconds']:.3f} | {r['best']:.3f} | {wall:.2f} |")
    slowest = max(wall for _, _, wall in rows)
    if not a.skip_peer:
        peer = measure(peer_python(a.peer_python), PEER_BODY, str(trace))
        print(f"\nwafer-core 0.1.62 analyze_traces: {peer['seconds']:.1f} s, peak RSS {peer['peak_rss_mb']:.0f} MiB")
        print(f"slowest tracedb report command: {slowest:.2f} s, "
              f"{peer['seconds'] / slowest:.0f}x faster than analyze_traces per question")


def time_report(db: Path, name: str, *pair: str) -> tuple[dict, float]:
    """A report's query timings (fresh read-only process) and the wall time of its command; pair
    holds traces A and B of a comparison."""
    r = measure(sys.executable, REPORT_BODY, str(db), name, *pair)
    command = [sys.executable, "-m", "tracedb.cli", "report", name, "--db", str(db), "--format", "csv"]
    if pair:
        command += ["--trace", pair[0], "--vs", pair[1]]
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    return r, time.perf_counter() - started


def holds(db: Path, traces: list[Path]) -> bool:
    """True when db holds every trace, loaded from these files, with its derived facts."""
    if not db.exists():
        return False
    import duckdb

    try:
        with duckdb.connect(str(db), read_only=True) as con:
            paths = {r[0] for r in con.execute(
                "SELECT source_path FROM traces t WHERE EXISTS (SELECT 1 FROM kernel_facts f "
                "WHERE f.trace_id = t.trace_id)").fetchall()}
    except duckdb.Error:
        return False
    return {str(t.resolve()) for t in traces} <= paths


if __name__ == "__main__":
    main()
