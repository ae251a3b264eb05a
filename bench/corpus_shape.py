"""The shape of real traces, measured on ../shared/corpus: what bench/synth.py imitates.

For each trace (and over all of them, weighted by events): events per GPU kernel of each
category, the share of the file's bytes each category takes, how many cpu_ops carry shape args
and how many empty lists and empty strings those args hold, and the layout (indent) of the file.

    python bench/corpus_shape.py [--corpus DIR]
"""

from __future__ import annotations

import argparse
import gzip
import re
from collections import Counter
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
SHAPE_KEYS = ("Input Dims", "Input type", "Input Strides", "Concrete Inputs")


def measure(path: Path) -> dict:
    raw = gzip.open(path, "rb").read() if path.suffix == ".gz" else path.read_bytes()
    doc = orjson.loads(raw)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    count, size = Counter(), Counter()
    shaped = empty_lists = empty_strings = cpu_ops = 0
    names = Counter()
    for ev in events:
        cat = ev.get("cat") or ev.get("ph", "?")
        if ev.get("ph") in ("s", "f"):
            cat = "flow"
        count[cat] += 1
        size[cat] += len(orjson.dumps(ev))
        if cat == "cpu_op":
            cpu_ops += 1
            args = ev.get("args") or {}
            if any(k in args for k in SHAPE_KEYS):
                shaped += 1
                text = orjson.dumps({k: args.get(k) for k in SHAPE_KEYS})
                empty_lists += text.count(b"[]")
                empty_strings += text.count(b'""')
        if cat == "kernel":
            names[ev.get("name", "")] += 1
    indent = re.search(rb"\n( +)\"ph\"", raw[:200000])
    return {"file": path.name, "mb": len(raw) / 1e6, "events": len(events), "count": count, "size": size,
            "cpu_ops": cpu_ops, "shaped": shaped, "empty_lists": empty_lists, "empty_strings": empty_strings,
            "distinct_kernels": len(names), "indent": len(indent.group(1)) if indent else 0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=HERE.parent.parent / "shared" / "corpus")
    a = ap.parse_args()
    cats = ("kernel", "cpu_op", "python_function", "cuda_runtime", "flow", "user_annotation",
            "gpu_memcpy", "gpu_memset", "cpu_instant_event")
    print("| trace | MB | events | " + " | ".join(f"{c} /kernel" for c in cats[1:]) +
          " | bytes/event | cpu_ops with shapes | [] per shaped op | \"\" per shaped op | kernel names | indent |")
    print("|---|" + "---:|" * (len(cats) + 8))
    total = Counter()
    for path in sorted(a.corpus.glob("*.json*")):
        m = measure(path)
        k = max(m["count"]["kernel"], 1)
        runtime = m["count"]["cuda_runtime"] + m["count"]["cuda_driver"]
        per = [m["count"][c] / k if c != "cuda_runtime" else runtime / k for c in cats[1:]]
        shaped = max(m["shaped"], 1)
        print(f"| {m['file']} | {m['mb']:.1f} | {m['events']} | " + " | ".join(f"{p:.2f}" for p in per) +
              f" | {sum(m['size'].values()) / m['events']:.0f} | {m['shaped'] / max(m['cpu_ops'], 1):.0%}"
              f" | {m['empty_lists'] / shaped:.1f} | {m['empty_strings'] / shaped:.1f}"
              f" | {m['distinct_kernels']} | {m['indent']} |", flush=True)
        total.update({f"n_{c}": m["count"][c] for c in m["count"]})
        total.update({"events": m["events"], "shaped": m["shaped"], "cpu_ops": m["cpu_ops"],
                      "empty_lists": m["empty_lists"], "empty_strings": m["empty_strings"],
                      "bytes": sum(m["size"].values())})
    k = max(total["n_kernel"], 1)
    print("\nall traces, per kernel: " + ", ".join(
        f"{c} {(total[f'n_{c}'] + (total['n_cuda_driver'] if c == 'cuda_runtime' else 0)) / k:.2f}" for c in cats[1:]),
        f"; {total['bytes'] / total['events']:.0f} bytes per event (compact); cpu_ops with shapes "
        f"{total['shaped'] / max(total['cpu_ops'], 1):.0%}, {total['empty_lists'] / max(total['shaped'], 1):.1f} [] and "
        f"{total['empty_strings'] / max(total['shaped'], 1):.1f} \"\" each")


if __name__ == "__main__":
    main()
