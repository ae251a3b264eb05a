"""Load benchmark: `tracedb load` against wafer-core's trace loader on the same synthetic trace.

    python bench/load_bench.py --mb 1024

Generates bench/out/synthetic_<mb>mb.json (bench/synth.py) unless present, then runs, one after
the other in fresh processes, tracedb's loader into a new database and wafer-core 0.1.62's
`trace_compare.loader.load_trace`, recording wall time and peak RSS of each. wafer-core runs from
its own virtual environment (bench/out/peer-venv, created on first use with
`pip install --no-deps wafer-core==0.1.62 pandas numpy orjson ijson pyyaml`), or from
--peer-python. Prints a Markdown table for the README.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import venv
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"

_MEASURE = r"""
import json, resource, sys, time
t = time.perf_counter()
{body}
print(json.dumps({{"seconds": time.perf_counter() - t,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "rows": rows}}))
"""

TRACEDB_BODY = """
from tracedb.cli import LOAD_MEMORY_LIMIT
from tracedb.db import open_db
from tracedb.ingest.loader import load_file
con = open_db(sys.argv[2], memory_limit=LOAD_MEMORY_LIMIT)
rows = load_file(con, sys.argv[1]).events
con.close()
"""

# The same load with the bulk reader turned off: the path a broken file takes.
STREAMING_BODY = """
from tracedb.cli import LOAD_MEMORY_LIMIT
from tracedb.db import open_db
from tracedb.ingest import bulk, loader
def no_bulk(*args, **kwargs):
    raise bulk.NotBulk("streaming benchmark")
loader.read_raw = no_bulk
con = open_db(sys.argv[2], memory_limit=LOAD_MEMORY_LIMIT)
rows = loader.load_file(con, sys.argv[1]).events
con.close()
"""

PEER_BODY = """
from wafer_core.lib.trace_compare.loader import load_trace
result = load_trace(sys.argv[1])
rows = len(result[3])
"""


def peer_python(explicit: str | None) -> str:
    if explicit:
        return explicit
    env_dir = OUT / "peer-venv"
    python = env_dir / "bin" / "python"
    if not python.exists():
        venv.create(env_dir, with_pip=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "wafer-core==0.1.62", "pandas",
                        "numpy", "orjson", "ijson", "pyyaml", "python-dateutil", "six", "tzdata"], check=True)
    return str(python)


def measure(python: str, body: str, *args: str) -> dict:
    proc = subprocess.run([python, "-c", _MEASURE.format(body=body), *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"benchmark step failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=1024, help="size of the synthetic trace in MiB")
    ap.add_argument("--trace", help="use this trace instead of a synthetic one")
    ap.add_argument("--peer-python", help="python with wafer-core installed (default: bench/out/peer-venv)")
    ap.add_argument("--skip-peer", action="store_true", help="measure tracedb only")
    ap.add_argument("--streaming", action="store_true",
                    help="also measure tracedb's streaming reader (the path of broken files)")
    a = ap.parse_args()

    OUT.mkdir(exist_ok=True)
    trace = Path(a.trace) if a.trace else OUT / f"synthetic_{int(a.mb)}mb.json"
    if not trace.exists():
        subprocess.run([sys.executable, str(HERE / "synth.py"), str(trace), "--mb", str(a.mb)], check=True)
    size_mb = trace.stat().st_size / 2**20
    db = OUT / "bench.duckdb"
    for p in (db, Path(str(db) + ".wal")):
        if p.exists():
            p.unlink()

    ours = measure(sys.executable, TRACEDB_BODY, str(trace), str(db))
    rows = [("tracedb load", ours)]
    if a.streaming:
        for p in (db, Path(str(db) + ".wal")):
            if p.exists():
                p.unlink()
        rows.append(("tracedb load, streaming reader", measure(sys.executable, STREAMING_BODY, str(trace), str(db))))
    if not a.skip_peer:
        rows.append(("wafer-core 0.1.62 load_trace", measure(peer_python(a.peer_python), PEER_BODY, str(trace))))

    print(f"\nTrace: {trace.name}, {size_mb:,.0f} MiB, {ours['rows']:,} events; {os.cpu_count()} cores\n")
    print("| loader | wall time (s) | peak RSS (MiB) | rows |")
    print("|---|---:|---:|---:|")
    for label, r in rows:
        print(f"| {label} | {r['seconds']:.1f} | {r['peak_rss_mb']:.0f} | {r['rows']:,} |")
    if not a.skip_peer:
        peer = rows[-1][1]
        print(f"\ntracedb is {peer['seconds'] / ours['seconds']:.2f}x faster and uses "
              f"1/{peer['peak_rss_mb'] / ours['peak_rss_mb']:.1f} of the peak memory.")


if __name__ == "__main__":
    main()
