"""AIE benchmark: load an mlir-aie trace and run the AIE reports, against the seed's approach.

    python bench/aie_bench.py --cores 16 --kernels 20000

Writes bench/out/aie_<cores>x<kernels>.json: a synthetic mlir-aie GEMM trace with that many core
tiles, each running that many kernels in iterations of 64 separated by long LOCK_STALLs, with the
slots a real core trace has (vector instructions, ports, lock requests, short stalls) and a
duplicate end or an outlier now and then. Then, each in a fresh process: `tracedb load` into a new
database, each AIE report's query on it (best of three, read-only), and the seed post-processor's
approach — json.load of the whole file and its per-core Python loops (as restated in
tests/aie_reference.py) — on the same file. Prints a Markdown table for the README.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

from load_bench import OUT, TRACEDB_BODY, measure, remove_db
from report_bench import REPORT_BODY

SLOTS = ["INSTR_EVENT_0", "INSTR_EVENT_1", "INSTR_VECTOR", "PORT_RUNNING_0", "PORT_RUNNING_1",
         "INSTR_LOCK_ACQUIRE_REQ", "INSTR_LOCK_RELEASE_REQ", "LOCK_STALL"]

SEED_BODY = """
sys.path.insert(0, sys.argv[2])
import aie_reference as ref
from collections import defaultdict
with open(sys.argv[1]) as f:
    data = json.load(f)
cores = defaultdict(lambda: {"name": "", "s": [], "e": [], "sb": [], "se": []})
for ev in data:
    c = cores[ev.get("pid")]
    nm, ph = ev.get("name"), ev.get("ph")
    if nm == "process_name" and ph == "M":
        c["name"] = ev["args"]["name"]
    elif nm == "INSTR_EVENT_0" and ph == "B":
        c["s"].append(int(ev["ts"]))
    elif nm == "INSTR_EVENT_1" and ph == "E":
        c["e"].append(int(ev["ts"]))
    elif nm == "LOCK_STALL":
        c["sb" if ph == "B" else "se"].append(int(ev["ts"]))
rows = 0
for c in cores.values():
    if "core_trace" in c["name"]:
        pairs = ref.robust_pairs(c["s"], c["e"])
        rows += len(ref.iterations(pairs, c["sb"], c["se"]))
"""


def write_trace(path: Path, cores: int, kernels: int, seed: int = 0) -> int:
    rnd = random.Random(seed)
    count = 0
    with open(path, "w") as out:
        out.write("[")
        first = True

        def put(ev: dict) -> None:
            nonlocal first, count
            out.write(("" if first else ",\n") + json.dumps(ev, separators=(",", ":")))
            first = False
            count += 1

        for pid in range(cores):
            put({"name": "process_name", "ph": "M", "pid": pid,
                 "args": {"name": f"core_trace for tile{2 + pid % 4},{pid // 4}"}})
            for tid, slot in enumerate(SLOTS):
                put({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": slot}})
        for pid in range(cores):
            t = 100
            dur = 500 + 10 * pid

            def span(name: str, begin: int, end: int) -> None:
                tid = SLOTS.index(name)
                put({"name": name, "ts": begin, "ph": "B", "pid": pid, "tid": tid, "args": {}})
                put({"name": name, "ts": end, "ph": "E", "pid": pid, "tid": tid, "args": {}})

            for k in range(kernels):
                if k % 64 == 0:  # an iteration boundary: a stall of 40 kernel lengths
                    span("LOCK_STALL", t, t + 40 * dur)
                    t += 40 * dur + 7
                d = dur * 6 if rnd.random() < 0.002 else dur + rnd.randint(-5, 5)
                span("INSTR_LOCK_ACQUIRE_REQ", t, t + 1)
                span("INSTR_EVENT_0", t + 2, t + 3)
                if rnd.random() < 0.005:
                    span("INSTR_EVENT_1", t + d + 5, t + d + 6)  # a duplicate end
                for v in range(4):
                    span("INSTR_VECTOR", t + 10 + v * d // 5, t + 11 + v * d // 5)
                span("PORT_RUNNING_0", t + 3, t + d // 2)
                span("INSTR_EVENT_1", t + d + 1, t + d + 2)
                span("INSTR_LOCK_RELEASE_REQ", t + d + 3, t + d + 4)
                span("LOCK_STALL", t + d + 5, t + d + 9)
                t += d + 12
        out.write("]\n")
    return count


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cores", type=int, default=16)
    ap.add_argument("--kernels", type=int, default=20000)
    args = ap.parse_args()
    OUT.mkdir(exist_ok=True)
    trace = OUT / f"aie_{args.cores}x{args.kernels}.json"
    events = write_trace(trace, args.cores, args.kernels)
    db = OUT / "aie.duckdb"
    remove_db(db)
    size_mb = trace.stat().st_size / 2**20
    print(f"{trace.name}: {size_mb:.0f} MiB, {events:,} events, {args.cores} cores x {args.kernels:,} kernels\n")
    print("| step | time | peak RSS |\n|---|---:|---:|")
    loaded = measure(sys.executable, TRACEDB_BODY, str(trace), str(db))
    print(f"| tracedb load | {loaded['seconds']:.2f} s | {loaded['peak_rss_mb']:.0f} MiB |")
    total = 0.0
    for name in ("aie-iterations", "aie-summary"):
        r = measure(sys.executable, REPORT_BODY, str(db), name)
        total += r["best"]
        print(f"| tracedb report {name} (query, best of 3) | {r['best']:.2f} s | |")
    seed = measure(sys.executable, SEED_BODY, str(trace), str(Path(__file__).resolve().parent.parent / "tests"))
    print(f"| seed approach: json.load + per-core loops | {seed['seconds']:.2f} s | {seed['peak_rss_mb']:.0f} MiB |")
    print(f"\ntracedb answers both reports in {total:.2f} s once loaded; the seed's script re-reads the file "
          f"on every run ({seed['seconds']:.2f} s).")


if __name__ == "__main__":
    main()
