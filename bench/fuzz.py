"""The long fuzz run: the suite's mutation fuzzing (tests/fuzzing.py) for minutes, seed after seed.

    python bench/fuzz.py --minutes 10 [--seed 1] [--fixtures tests/fixtures]

Every mutant is loaded into one database; a mutant that breaks an invariant (a traceback, an
error of more than one line, a failed load that changed the database, events neither loaded nor
set aside) is written to bench/out/fuzz/ with its problem, and the run exits 1. Each finding
becomes a test (tests/ingest/test_bad_events.py, tests/ingest/test_fuzz.py) once fixed.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from fuzzing import run  # noqa: E402

from tracedb.db import open_db  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--seed", type=int, default=1, help="first seed; each round of 500 mutants takes the next")
    ap.add_argument("--fixtures", type=Path, default=ROOT / "tests" / "fixtures")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "fuzz")
    args = ap.parse_args()
    deadline = time.monotonic() + args.minutes * 60
    total, found, seed = 0, [], args.seed
    with tempfile.TemporaryDirectory(prefix="tracedb-fuzz-") as tmp:
        while time.monotonic() < deadline:
            db = Path(tmp) / f"fuzz-{seed}.duckdb"
            with open_db(db) as con:
                ran, findings = run(args.fixtures, Path(tmp), con, seed=seed, mutants=500, deadline=deadline)
            with open_db(db, read_only=True):
                pass  # the database opens after every round
            db.unlink()
            total += ran
            for i, f in enumerate(findings):
                args.out.mkdir(parents=True, exist_ok=True)
                stem = args.out / f"seed{seed}-{i}"
                stem.with_suffix(".input").write_bytes(f.mutant)
                stem.with_suffix(".problem.txt").write_text(f"[{f.seed}]\n{f.problem}\n")
                found.append(stem)
            print(f"seed {seed}: {ran} mutants, {len(findings)} finding(s); {total} in all", flush=True)
            seed += 1
    for stem in found:
        print(f"finding: {stem}.input ({stem}.problem.txt)")
    print(f"{total} mutants in {args.minutes:g} min, {len(found)} finding(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
