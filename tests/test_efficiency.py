"""Efficiency: FLOPs and bytes per call from the recorded shapes, device peaks and the roofline, on
traces built here where every number is known, and against the FLOPs, bytes and TFLOP/s that
TraceLens publishes for its own test traces (tests/tracelens_reference.csv: its GEMM, SDPA_fwd and
CONV_fwd perf-report sheets for the traces we hold)."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pytest

import tracedb
from conftest import FIXTURES, database_of, load, run_cli
from tracedb.testing import KinetoTrace

HERE = Path(__file__).resolve().parent
CORPUS = Path(os.environ.get("TRACEDB_CORPUS", HERE.parents[1] / "shared" / "corpus"))
REFERENCE = HERE / "tracelens_reference.csv"
FAMILY = {"GEMM": "gemm", "SDPA_fwd": "attention", "CONV_fwd": "conv"}
TRACES = {"h100_falconsai-vit": CORPUS, "mi300_falconsai-vit": CORPUS, "h100_timesformer": CORPUS,
          "mi300_timesformer": CORPUS, "h100_bert-small": FIXTURES / "kineto", "mi300_bert-small": FIXTURES / "kineto"}


def gemm_shape(op: str, dims: list) -> str:
    """Our shape text of a GEMM from TraceLens's Input Dims: M×N×K, B× for batches, +bias."""
    if op == "aten::addmm":
        (m, k), (_, n) = dims[1], dims[2]
        return f"{m}×{n}×{k}" + ("+bias" if dims[0] else "")
    if op == "aten::bmm":
        (b, m, k), (_, _, n) = dims[0], dims[1]
        return f"{b}×{m}×{n}×{k}"
    (m, k), (_, n) = dims[0], dims[1]
    return f"{m}×{n}×{k}"


def tracelens_rows() -> dict[str, list[dict]]:
    """TraceLens's rows per trace; a shape it lists twice (an attention under both of its op
    names) once."""
    out: dict[str, list[dict]] = {}
    seen = set()
    with open(REFERENCE, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            key = (row["trace"], row["sheet"], row["gflops"], row["count"], row["kernel_time_sum_us"])
            if key not in seen:
                seen.add(key)
                out.setdefault(row["trace"], []).append(row)
    return out


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    paths = [folder / f"{name}.json.gz" for name, folder in TRACES.items()]
    if not all(p.is_file() for p in paths):
        pytest.skip("the corpus is not here")
    return database_of(tmp_path_factory, "efficiency", paths)


@pytest.mark.parametrize("trace", sorted(TRACES))
def test_flops_bytes_and_rates_agree_with_tracelens(published, trace):
    """Every GEMM, attention and convolution shape TraceLens reports: the same FLOPs and bytes per
    call, the same calls and kernel time, so the same TFLOP/s (all FLOPs over all time; TraceLens's
    TFLOPS/s_mean, a mean of each call's rate, is never below it)."""
    with tracedb.connect(published) as db:
        ours = db.sql("SELECT family, shape, flops, bytes, calls, total_ns, tflops FROM roofline_shapes(?)",
                      [trace]).records()
    groups: dict[tuple, dict] = {}
    for r in tracelens_rows()[trace]:  # TraceLens splits a shape by strides; we group by shape
        shape = gemm_shape(r["op"], json.loads(r["input_dims"])) if r["sheet"] == "GEMM" else None
        key = (FAMILY[r["sheet"]], shape, round(float(r["gflops"]) * 1e9), round(float(r["data_moved_mb"]) * 2 ** 20))
        g = groups.setdefault(key, {"count": 0, "time_us": 0.0, "rates": []})
        g["count"] += int(r["count"])
        g["time_us"] += float(r["kernel_time_sum_us"])
        g["rates"].append((float(r["tflops_mean"]), int(r["count"])))
    assert groups
    for (family, shape, flops, nbytes), g in groups.items():
        match = [o for o in ours if (o["family"], o["flops"], o["bytes"]) == (family, flops, nbytes)
                 and shape in (None, o["shape"])]
        assert len(match) == 1, (trace, family, shape, flops, nbytes, [(o["shape"], o["flops"], o["bytes"]) for o in ours])
        mine = match[0]
        assert mine["calls"] == g["count"], (trace, family, flops)
        assert mine["total_ns"] == pytest.approx(g["time_us"] * 1000, abs=1 * g["count"]), (trace, family, flops)
        assert mine["tflops"] == pytest.approx(flops * g["count"] / (g["time_us"] * 1e6), rel=1e-4)
        # TraceLens's TFLOPS/s_mean averages each call's rate: never below the rate of all FLOPs
        # over all the time (1/t is convex), and close to it when the calls take alike
        mean_rate = sum(rate * n for rate, n in g["rates"]) / g["count"]
        assert mine["tflops"] <= mean_rate * (1 + 1e-4) and mine["tflops"] == pytest.approx(mean_rate, rel=0.1)
