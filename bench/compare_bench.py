"""Comparison benchmark: `tracedb report compare | alignment | fusion | same-kernels` on two loaded
synthetic traces, against wafer-core's analyze_traces + analyze_fusion_differences on the same pair.

    python bench/compare_bench.py --mb 1024 [--peer-python PATH] [--skip-peer] [--db FILE]

The pair is the load benchmark's synthetic trace (NVIDIA H100 flavour) and the same model in the AMD
MI300X flavour (bench/synth.py --flavour amd: vendor kernel names, one extra elementwise kernel per
layer), both generated unless present. The database (bench/out/compare.duckdb) is loaded unless it
already holds both. Each report's SQL runs in a fresh process on a read-only connection, three
times (first and best are reported), and the whole `tracedb report` command is timed as well.
wafer-core answers from the JSON files: analyze_traces and analyze_fusion_differences run one after
the other in one process, as a user comparing the pair would call them. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from load_bench import HERE, OUT, TRACEDB_BODY, measure, peer_python, remove_db, synthetic_trace
from report_bench import holds, time_report

REPORTS = ["compare", "alignment", "fusion", "same-kernels"]

PEER_BODY = """
from wafer_core.lib.trace_compare.analyzer import analyze_traces
from wafer_core.lib.trace_compare.fusion_analyzer import analyze_fusion_differences
result = analyze_traces(sys.argv[1], sys.argv[2])
fusion = analyze_fusion_differences(sys.argv[2], sys.argv[1])
rows = len(result.get("operations", [])) + len(fusion.get("fusion_opportunities", []))
"""


def amd_trace(mb: float) -> Path:
    trace = OUT / f"synthetic_amd_{int(mb)}mb.json"
    if not trace.exists():
        OUT.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, str(HERE / "synth.py"), str(trace), "--mb", str(mb), "--flavour", "amd"],
                       check=True)
    return trace


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=1024, help="size of each synthetic trace in MiB")
    ap.add_argument("--db", help="database holding the pair (default: bench/out/compare.duckdb)")
    ap.add_argument("--peer-python", help="python with wafer-core installed (default: bench/out/peer-venv)")
    ap.add_argument("--skip-peer", action="store_true", help="measure tracedb only")
    a = ap.parse_args()

    nv, amd = synthetic_trace(a.mb), amd_trace(a.mb)
    names = [p.name.split(".")[0] for p in (nv, amd)]
    db = Path(a.db) if a.db else OUT / "compare.duckdb"
    loads = []
    if not holds(db, [nv, amd]):
        remove_db(db)
        for trace in (nv, amd):
            loads.append((trace, measure(sys.executable, TRACEDB_BODY, str(trace), str(db))))

    rows = [(name, *time_report(db, name, *names)) for name in REPORTS]

    print(f"\nPair: {nv.name} ({nv.stat().st_size / 2**20:,.0f} MiB) vs {amd.name} "
          f"({amd.stat().st_size / 2**20:,.0f} MiB)\n")
    for trace, r in loads:
        print(f"loaded {trace.name}: {r['seconds']:.1f} s, peak RSS {r['peak_rss_mb']:.0f} MiB")
    print("\n| report | query, first run (s) | query, best of 3 (s) | `tracedb report` command (s) | rows |")
    print("|---|---:|---:|---:|---:|")
    for name, r, wall in rows:
        print(f"| {name} | {r['seconds']:.3f} | {r['best']:.3f} | {wall:.2f} | {r['rows']} |")
    total = sum(wall for _, _, wall in rows)
    if not a.skip_peer:
        started = time.perf_counter()
        try:
            peer = measure(peer_python(a.peer_python), PEER_BODY, str(nv), str(amd))
        except SystemExit:  # the peer died (on this machine: killed when memory runs out)
            print(f"\nwafer-core 0.1.62 analyze_traces + analyze_fusion_differences: failed after "
                  f"{time.perf_counter() - started:.0f} s (see dmesg for an out-of-memory kill)")
            return
        print(f"\nwafer-core 0.1.62 analyze_traces + analyze_fusion_differences: {peer['seconds']:.1f} s, "
              f"peak RSS {peer['peak_rss_mb']:.0f} MiB")
        print(f"all four tracedb report commands: {total:.2f} s, "
              f"{peer['seconds'] / total:.0f}x faster than the peer's pair of calls")


if __name__ == "__main__":
    main()
