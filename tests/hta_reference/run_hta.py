"""Holistic Trace Analysis's critical path of each reference trace, written as data for the tests.

Run in a virtual environment of its own, as HTA needs pandas < 3:

    python -m venv /tmp/hta-venv && /tmp/hta-venv/bin/pip install HolisticTraceAnalysis 'pandas<3'
    /tmp/hta-venv/bin/python tests/hta_reference/run_hta.py ../shared/fixtures/kineto ../shared/corpus \
        > tests/hta_reference/critical_path.csv

For every trace, HTA's critical_path_analysis of rank 0 over one window: the first ProfilerStep
(the whole trace where it has none), or for the traces HTA's own tests read otherwise, the window
those tests choose (WINDOWS). The path's length (the sum of its edges' weights, µs) and its split by
HTA's bound_by (µs and % of the length), one row per trace and bound. HTA's version is written on
each row. A trace HTA cannot analyse gets one row saying why.
"""

from __future__ import annotations

import csv
import gzip
import shutil
import sys
import tempfile
from pathlib import Path

from hta import __version__ as hta_version  # type: ignore[import-not-found]
from hta.trace_analysis import TraceAnalysis  # type: ignore[import-not-found]


# trace -> (annotation, instance): HTA's tests/test_critical_path_analysis.py reads two over the
# second forward pass of its AlexNet benchmark annotation, and one whole ("", None)
WINDOWS = {"a100_simple_add": ("[param|pytorch.model.alex_net|0|0|0|measure|forward]", 1),
           "a100_alexnet": ("[param|pytorch.model.alex_net|0|0|0|measure|forward]", 1),
           "cuda_event_sync_multi_stream": ("", None)}


def holds(path: Path, annotation: str) -> bool:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        return annotation in f.read()


def analyse(path: Path) -> list[dict]:
    name = path.name.split(".json")[0]
    annotation, instance = WINDOWS.get(name, ("ProfilerStep", 0))
    if annotation and not holds(path, annotation):
        annotation, instance = "", None  # the whole trace
    with tempfile.TemporaryDirectory() as folder:
        shutil.copy(path, Path(folder) / path.name)
        try:
            analyzer = TraceAnalysis(trace_dir=folder)
            graph, ok = analyzer.critical_path_analysis(rank=0, annotation=annotation, instance_id=instance)
        except Exception as exc:  # noqa: BLE001 - HTA's own failure is what the row records
            detail = (str(exc).splitlines() or [""])[0][:120]
            return [{"trace": name, "bound": f"(HTA failed: {type(exc).__name__} {detail})"}]
        if not ok:
            return [{"trace": name, "bound": "(HTA found no critical path)"}]
        edges = graph.get_critical_path_breakdown()
        length = float(edges.duration.sum())
        window = f"{annotation} #{instance}" if annotation else "whole trace"
        rows = [{"trace": name, "window": window, "bound": "(length)", "us": round(length, 3), "pct": 100.0}]
        for bound, us in sorted(edges.groupby("bound_by").duration.sum().items()):
            rows.append({"trace": name, "window": window, "bound": bound or "(zero-weight dependency)",
                         "us": round(float(us), 3),
                         "pct": round(100 * float(us) / length, 3) if length else 0.0})
        return rows


def main() -> None:
    writer = csv.DictWriter(sys.stdout, ["trace", "window", "bound", "us", "pct", "hta"], lineterminator="\n")
    writer.writeheader()
    for folder in sys.argv[1:]:
        for path in sorted(Path(folder).glob("*.json*")):
            if "_hta_" in path.name:  # HTA's own output, not a trace
                continue
            for row in analyse(path):
                writer.writerow({**row, "hta": hta_version})


if __name__ == "__main__":
    main()
