"""Holistic Trace Analysis's critical path of each reference trace, written as data for the tests.

Run in a virtual environment of its own, as HTA needs pandas < 3:

    python -m venv /tmp/hta-venv && /tmp/hta-venv/bin/pip install HolisticTraceAnalysis 'pandas<3'
    /tmp/hta-venv/bin/python tests/hta_reference/run_hta.py ../shared/fixtures/kineto ../shared/corpus \
        > tests/hta_reference/critical_path.csv
    HTA_DISABLE_NS_ROUNDING=1 /tmp/hta-venv/bin/python tests/hta_reference/run_hta.py \
        ../shared/fixtures/kineto ../shared/corpus | tail -n +2 >> tests/hta_reference/critical_path.csv

For every trace, HTA's critical_path_analysis of rank 0 over one window: the first ProfilerStep
(the whole trace where it has none), or for the traces HTA's own tests read otherwise, the window
those tests choose (WINDOWS). The path's length (the sum of its edges' weights, µs) and its split by
HTA's bound_by (µs and % of the length), one row per trace and bound. HTA's version is written on
each row. A trace HTA cannot analyse gets one row saying why.

By default HTA rounds every event of a trace recorded in fractions of a microsecond to whole
microseconds inside it (its start up, its end down: up to 2 µs less per event), and an event
shorter than that drops out. On a host-bound step made of hundreds of short operations the path
then comes out 1-5 % shorter than the trace's own times give. HTA_DISABLE_NS_ROUNDING=1 turns the
rounding off; the column `rounding` says which run a row comes from (on: HTA's default).
"""

from __future__ import annotations

import csv
import gzip
import os
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

# HIP's counterparts of the calls HTA takes for blocking (the host waits in them for the device)
HIP_BLOCKING = r"hip(DeviceSynchronize|StreamSynchronize|EventSynchronize|EventQuery|Memcpy|MemcpyAsync|MemcpyWithStream)"


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
        # HTA's blocking calls are CUDA's alone (BLOCKING_SYNC_CALLS): on AMD, the host's wait in a
        # HIP synchronize or copy is cpu_bound on its path
        hip = edges[edges.s_name.str.fullmatch(HIP_BLOCKING) & (edges.bound_by == "cpu_bound")].duration.sum()
        if hip:
            rows.append({"trace": name, "window": window, "bound": "(cpu_bound in HIP's blocking calls)",
                         "us": round(float(hip), 3), "pct": round(100 * float(hip) / length, 3)})
        for bound, us in sorted(edges.groupby("bound_by").duration.sum().items()):
            rows.append({"trace": name, "window": window, "bound": bound or "(zero-weight dependency)",
                         "us": round(float(us), 3),
                         "pct": round(100 * float(us) / length, 3) if length else 0.0})
        return rows


def main() -> None:
    writer = csv.DictWriter(sys.stdout, ["trace", "window", "bound", "us", "pct", "hta", "rounding"], lineterminator="\n")
    writer.writeheader()
    rounding = "off" if os.environ.get("HTA_DISABLE_NS_ROUNDING", "0") not in ("", "0") else "on"
    for folder in sys.argv[1:]:
        for path in sorted(Path(folder).glob("*.json*")):
            if "_hta_" in path.name:  # HTA's own output, not a trace
                continue
            for row in analyse(path):
                writer.writerow({**row, "hta": hta_version, "rounding": rounding})


if __name__ == "__main__":
    main()
