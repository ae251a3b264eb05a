"""Golden outputs on the corpus: every report on real traces, written to a folder, so that two
versions of tracedb can be compared report by report (a refactoring must leave every one alone).

    python bench/golden.py OUT [--code DIR] [--corpus DIR]     # write OUT/REPORT.txt, OUT/REPORT.json
    python bench/golden.py --diff OLD NEW                      # the reports whose outputs differ

--code runs the tracedb of another checkout (e.g. a `git worktree add /tmp/old COMMIT`): the
corpus is loaded, and every report run, by that version, each in a process of its own. Runs: each
report that reads one trace on each corpus trace; each comparison on the cross-vendor pairs
(h100_X against mi300_X); the reports of many traces on `h100_*` against `mi300_*`; the AIE and
TensorCast reports have no corpus trace. Text output at 120 columns as printed, JSON in the
canonical form of tracedb.testing.canonical_json (numbers to 6 significant digits, rows sorted).
"""

from __future__ import annotations

import argparse
import difflib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tracedb import reports  # noqa: E402  (this checkout's headers choose the runs)
from tracedb.testing import canonical_json  # noqa: E402

CORPUS = Path(os.environ.get("TRACEDB_CORPUS", ROOT.parent / "shared" / "corpus"))


def runs(corpus: Path) -> dict[str, list[list[str]]]:
    names = sorted(p.name.removesuffix(".json.gz") for p in corpus.glob("*.json.gz"))
    pairs = [(n, "mi300_" + n.removeprefix("h100_")) for n in names
             if n.startswith("h100_") and "mi300_" + n.removeprefix("h100_") in names]
    out: dict[str, list[list[str]]] = {}
    for name, r in reports.available().items():
        if r.rows_for == "mlir-aie traces" or "forward_passes" in r.params:
            continue
        if any(a.when == "patterns" for a in r.aliases):
            out[name] = [["--trace", "h100_*", "--vs", "mi300_*"]]
        elif "traces" in r.params:
            out[name] = [["--trace", "h100_*", "--vs", "mi300_*"]]
        elif r.compares:
            out[name] = [["--trace", a, "--vs", b] for a, b in pairs]
        else:
            out[name] = [["--trace", n] for n in names]
    return out


def tracedb(code: Path, *args: str, db: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(code), "COLUMNS": "120", "TRACEDB_CACHE": str(db.parent / "cache")}
    return subprocess.run([sys.executable, "-m", "tracedb.cli", *args, "--db", str(db)], capture_output=True,
                          text=True, env=env)


def write(out: Path, code: Path, corpus: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "corpus.duckdb"
        # one file after another: trend orders traces by their load time
        loaded = tracedb(code, "load", *map(str, sorted(corpus.glob("*.json.gz"))), "--jobs", "1", db=db)
        if loaded.returncode:
            sys.exit(f"load failed: {loaded.stderr}")
        for name, arg_lists in sorted(runs(corpus).items()):
            text, data = [], []
            for args in arg_lists:
                head = f"## tracedb report {name} {' '.join(args)}\n"
                shown = tracedb(code, "report", name, *args, db=db)
                text.append(head + (shown.stdout if shown.returncode == 0 else f"error: {shown.stderr}"))
                raw = tracedb(code, "report", name, *args, "--format", "json", db=db)
                data.append(head + (canonical_json(raw.stdout) if raw.returncode == 0 else f"error: {raw.stderr}"))
            (out / f"{name}.txt").write_text("\n".join(text), encoding="utf-8")
            (out / f"{name}.json").write_text("\n".join(data), encoding="utf-8")
            print(f"{name}: {len(arg_lists)} runs", flush=True)


def diff(old: Path, new: Path) -> int:
    changed = 0
    for path in sorted({p.name for p in old.iterdir()} | {p.name for p in new.iterdir()}):
        a = (old / path).read_text(encoding="utf-8").splitlines() if (old / path).exists() else []
        b = (new / path).read_text(encoding="utf-8").splitlines() if (new / path).exists() else []
        if a != b:
            changed += 1
            print(f"{path}: differs")
            sys.stdout.writelines(line + "\n" for line in list(difflib.unified_diff(a, b, lineterm="", n=1))[:40])
    print(f"{changed} of the outputs differ")
    return 1 if changed else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", nargs="?", type=Path)
    parser.add_argument("--code", type=Path, default=ROOT, help="the checkout whose tracedb runs (default: this one)")
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--diff", nargs=2, type=Path, metavar=("OLD", "NEW"))
    args = parser.parse_args()
    if args.diff:
        sys.exit(diff(*args.diff))
    if args.out is None:
        parser.error("give OUT, or --diff OLD NEW")
    write(args.out, args.code.resolve(), args.corpus)


if __name__ == "__main__":
    main()
