"""Many traces at once: 200 varied traces (the 9 of ../shared/corpus and 191 from bench/synth.py,
0.25-4 MiB, both flavours, half gzipped) loaded into a trace lake one file after the other
(--jobs 1), by a pool of two worker processes (--jobs 2), and as one task per file on a Dask
LocalCluster of two worker processes (--scheduler); and the corpus alone into a database file
with the default worker count, --jobs 1 and --jobs 2, on an idle machine and beside two CPU-bound
processes (a busy machine: the default then loads in the command's own process).

    python bench/fleet_bench.py            # needs tracedb[dask]

Each command is the whole `tracedb load` process, timed from outside (wall seconds), into a lake or
database that does not exist yet. The traces are written once into bench/out/fleet/.
"""

from __future__ import annotations

import math
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "out" / "fleet"
CORPUS = HERE.parent.parent / "shared" / "corpus"
SYNTHETIC = 191


def traces() -> list[Path]:
    made = OUT / "traces"
    made.mkdir(parents=True, exist_ok=True)
    rng = random.Random(7)
    files = sorted(CORPUS.glob("*.json.gz"))
    for i in range(SYNTHETIC):
        mb = math.exp(rng.uniform(math.log(0.25), math.log(4)))
        flavour = ("nvidia", "amd")[i % 2]
        gz = i % 4 < 2
        path = made / f"synth_{i:03d}_{flavour}.json{'.gz' if gz else ''}"
        if not path.exists():
            subprocess.run([sys.executable, str(HERE / "synth.py"), str(path), "--mb", f"{mb:.2f}", "--seed", str(i),
                            "--flavour", flavour] + (["--gzip"] if gz else []), check=True, stdout=subprocess.DEVNULL)
        files.append(path)
    return files


def tracedb() -> list[str]:
    exe = Path(sys.executable).with_name("tracedb")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "tracedb.cli"]


def timed(args: list[str]) -> float:
    started = time.perf_counter()
    proc = subprocess.run(tracedb() + args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - started
    if proc.returncode:
        raise SystemExit(f"failed: {' '.join(args[:3])} ...: {proc.stderr[-500:]}")
    return wall


def main() -> None:
    from distributed import LocalCluster

    files = traces()
    mib = sum(p.stat().st_size for p in files) / 2**20
    print(f"{len(files)} traces, {mib:.0f} MiB on disk")
    rows = []
    for label, extra in (("lake, --jobs 1", ["--jobs", "1"]), ("lake, --jobs 2", ["--jobs", "2"])):
        lake = OUT / "lake"
        shutil.rmtree(lake, ignore_errors=True)
        rows.append((label, timed(["load", *map(str, files), "--lake", str(lake), *extra])))
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                      silence_logs=40) as cluster:
        lake = OUT / "lake"
        shutil.rmtree(lake, ignore_errors=True)
        rows.append(("lake, Dask LocalCluster (2 workers)",
                     timed(["load", *map(str, files), "--lake", str(lake), "--scheduler", cluster.scheduler_address])))
    corpus = sorted(CORPUS.glob("*.json.gz"))
    for busy in (False, True):
        hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2 if busy else 0)]
        try:
            for label, extra in (("default", []), ("--jobs 1", ["--jobs", "1"]), ("--jobs 2", ["--jobs", "2"])):
                db = OUT / "corpus.duckdb"
                db.unlink(missing_ok=True)
                where = "beside 2 busy processes" if busy else "idle"
                rows.append((f"corpus into a database, {label}, {where}",
                             timed(["load", *map(str, corpus), "--db", str(db), *extra])))
        finally:
            for hog in hogs:
                hog.kill()
    base = rows[0][1]
    print(f"{'command':58} {'wall s':>8} {'traces/s':>9} {'vs jobs 1':>9}")
    for label, wall in rows:
        n = len(corpus) if "corpus" in label else len(files)
        if "corpus" in label:  # against --jobs 1 in the same conditions
            ref = next(w for lab, w in rows if "--jobs 1" in lab and "corpus" in lab and lab.split(", ")[-1] == label.split(", ")[-1])
        else:
            ref = base
        print(f"{label:58} {wall:8.1f} {n / wall:9.1f} {ref / wall:8.2f}x")


if __name__ == "__main__":
    main()
