"""Efficiency: FLOPs and bytes per call from the recorded shapes, device peaks and the roofline, on
traces built here where every number is known, and against the FLOPs, bytes and TFLOP/s that
TraceLens publishes for its own test traces (tests/tracelens_reference.csv: its GEMM, SDPA_fwd and
CONV_fwd perf-report sheets for the traces we hold)."""

from __future__ import annotations

import csv
import json

import pytest

import tracedb
from conftest import CORPUS, FIXTURES, TESTS, database_of, load, run_cli
from tracedb.testing import KinetoTrace

REFERENCE = TESTS / "tracelens_reference.csv"
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


def op_trace(path, device=None, flavour="nvidia"):
    """One call each, with its shapes, launching kernels of known durations (µs):
    addmm 256×512×1024 with bias (bf16) 10 µs; bmm 8×128×64×32 (fp32) 4 µs; a causal and a
    non-causal flash attention 2×4×128×128×64 (bf16) 5 µs each; a grouped convolution (groups 4)
    2×8×16×16 * 12×2×3×3 stride 1 padding 1 (fp16) 8 µs with a memset of 1 µs; an addmm without
    shapes 3 µs; a gelu of 1×1024 (bf16) 2 µs."""
    b = KinetoTrace(flavour, device=device)
    ops = [
        ("aten::addmm", [[1024], [256, 512], [512, 1024], [], []], ["c10::BFloat16"] * 3 + ["Scalar"] * 2, [], 10),
        ("aten::bmm", [[8, 128, 32], [8, 32, 64]], ["float", "float"], [], 4),
        ("aten::_scaled_dot_product_flash_attention", [[2, 4, 128, 64]] * 3 + [[], [], [], []],
         ["c10::BFloat16"] * 3 + ["Scalar"] * 4, ["", "", "", "0.", "True", "False", ""], 5),
        ("aten::_scaled_dot_product_flash_attention", [[2, 4, 128, 64]] * 3 + [[], [], [], []],
         ["c10::BFloat16"] * 3 + ["Scalar"] * 4, ["", "", "", "0.", "False", "False", ""], 5),
        ("aten::convolution", [[2, 8, 16, 16], [12, 2, 3, 3], [], [], [], [], [], [], []],
         ["c10::Half", "c10::Half", "", "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList", "Scalar"],
         ["", "", "", "[1, 1]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "4"], 8),
        ("aten::addmm", None, None, None, 3),
        ("aten::gelu", [[1, 1024], []], ["c10::BFloat16", "Scalar"], [], 2),
    ]
    t = 0
    for ext, (name, dims, types, concrete, dur) in enumerate(ops, start=1):
        args = {"External id": ext}
        if dims is not None:
            args.update({"Input Dims": dims, "Input type": types, "Concrete Inputs": concrete})
        b.x("cpu_op", name, t, 50, **args)
        if name == "aten::convolution":  # a memset inside the call counts to it, as TraceLens counts
            corr = b._correlation(None)
            from tracedb.testing import kernel_event, runtime_call
            b.events.append(runtime_call("cudaMemsetAsync", t + 2, 1, corr, ext))
            b.events.append(kernel_event("Memset (Device)", 10_000 + t, 1, corr, ext, cat="gpu_memset"))
        b.kernel(f"kernel_{ext}", t + 10, 10_000 + t + 5, dur=dur, ext=ext)
        t += 100
    return b.write(path)


def test_flops_bytes_and_rates_of_known_shapes(con, tmp_path):
    trace = load(con, op_trace(tmp_path / "ops.json"))
    got = {(r[0], r[1]): r[2:] for r in con.execute(
        "SELECT cpu_op, shape, flops, bytes, gpu_ns, reason, bound FROM op_roofline WHERE trace_id = ? "
        "ORDER BY event_id", [trace.trace_id]).fetchall()}
    m, n, k = 256, 1024, 512
    assert got[("aten::addmm", "256×1024×512+bias")][:3] == (2 * m * n * k + m * n, (m * k + k * n + m * n + n) * 2, 10_000)
    assert got[("aten::bmm", "8×128×64×32")][:2] == (2 * 8 * 128 * 64 * 32, 8 * (128 * 32 + 32 * 64 + 128 * 64) * 4)
    full = 2 * 2 * 4 * 128 * 128 * (64 + 64)
    assert got[("aten::_scaled_dot_product_flash_attention", "2×4×128×128×64")][:2] == (full, 4 * 2 * 4 * 128 * 64 * 2)
    assert got[("aten::_scaled_dot_product_flash_attention", "2×4×128×128×64 causal")][0] == full // 2
    # grouped: each of 12 output channels sees 8 / 4 = 2 input channels; output 16×16 (padding 1)
    conv = got[("aten::convolution", "2×8×16×16 * 12×2×3×3 /1,1")]
    assert conv[:3] == (2 * 2 * 12 * 16 * 16 * 2 * 3 * 3, (2 * 8 * 256 + 12 * 2 * 9 + 2 * 12 * 256) * 2, 9_000)
    unshaped = got[("aten::addmm", None)]
    assert unshaped[:2] == (None, None) and unshaped[3] == "no shapes recorded (record_shapes=False)"
    assert got[("aten::gelu", "1×1024")][:2] == (1024, 2 * 1024 * 2)
    # achieved rates and the H100's roof: the addmm's intensity is under the BF16 ridge (989.5 / 3.35)
    rate = con.execute("SELECT tflops, tbps, peak_tflops, peak_tbps, bound, peak_pct FROM op_roofline "
                       "WHERE trace_id = ? AND cpu_op = 'aten::addmm' AND flops IS NOT NULL", [trace.trace_id]).fetchone()
    flops, nbytes = 2 * m * n * k + m * n, (m * k + k * n + m * n + n) * 2
    assert rate[:4] == pytest.approx((flops / 10_000 / 1000, nbytes / 10_000 / 1000, 989.5, 3.35))
    assert flops / nbytes < 989.5 / 3.35 and rate[4] == "memory"
    assert rate[5] == pytest.approx(100 * nbytes / 10_000 / 1000 / 3.35)


def test_a_device_without_peaks_gets_no_percentages(con, tmp_path, db_path):
    load(con, op_trace(tmp_path / "x.json", device={"id": 0, "name": "Acme Tensor Unit 9", "warpSize": 32}), name="acme")
    rows = con.execute("SELECT count(*), count(peak_pct), count(bound) FILTER (bound = 'compute') FROM op_roofline "
                       "JOIN traces USING (trace_id) WHERE name = 'acme'").fetchone()
    assert rows[0] == 7 and rows[1] == 0 and rows[2] == 0
    con.close()
    device = tracedb.connect(db_path).report("roofline", trace="acme", section="device")["device"].records()
    assert device[0]["note"] == "Acme Tensor Unit 9 is not in device_peaks: no percentages (tracedb rules add your own)"


def test_your_own_peaks_come_first(tmp_path):
    db = tmp_path / "t.duckdb"
    run_cli("load", op_trace(tmp_path / "x.json"), db=db, check=True)
    mine = tmp_path / "my_peaks.csv"
    mine.write_text("priority,regex,device,fp32,tf32,bf16,fp16,fp8,mem_tbps,reference\n"
                    "1,H100,H100 at our clocks,50,,800,800,,3.0,measured here\n")
    run_cli("rules", "add", mine, db=db, check=True)
    with tracedb.connect(db) as con:
        assert con.sql("SELECT device, bf16, mem_tbps FROM trace_peaks").rows == [("H100 at our clocks", 800.0, 3.0)]
    bad = tmp_path / "bad_peaks.csv"
    bad.write_text("priority,regex,device,fp32,tf32,bf16,fp16,fp8,mem_tbps,reference\n1,H100,x,fast,,,,,,\n")
    proc = run_cli("rules", "add", bad, db=db)
    assert proc.returncode == 1 and "line 2: fp32 'fast' is not a positive number" in proc.stderr


@pytest.mark.parametrize("recorded, device", [
    ("NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM"), ("NVIDIA H100 PCIe", "NVIDIA H100 PCIe"),
    ("NVIDIA H200", "NVIDIA H200 SXM"), ("NVIDIA B200", "NVIDIA B200 (HGX)"),
    ("NVIDIA A100-SXM4-80GB", "NVIDIA A100 SXM 80GB"), ("NVIDIA A100-SXM4-40GB", "NVIDIA A100 SXM 40GB"),
    ("NVIDIA A100 80GB PCIe", "NVIDIA A100 PCIe 80GB"), ("Tesla V100-SXM2-32GB", "NVIDIA V100 SXM2"),
    ("NVIDIA L4", "NVIDIA L4"), ("NVIDIA L40S", "NVIDIA L40S"), ("AMD Instinct MI210", "AMD Instinct MI210"),
    ("AMD Instinct MI250X", "AMD Instinct MI250X"), ("AMD Instinct MI250X/MI250", "AMD Instinct MI250X"),
    ("AMD Instinct MI300X VF", "AMD Instinct MI300X"), ("AMD Instinct MI325X", "AMD Instinct MI325X"),
    ("AMD Instinct MI355X", "AMD Instinct MI355X"), ("Ascend910B3", "Huawei Ascend 910B"),
    ("Ascend 910", "Huawei Ascend 910"), ("NVIDIA L40", None), ("NVIDIA GeForce RTX 4090", None),
])
def test_device_names_find_their_datasheet(con, recorded, device):
    got = con.execute("SELECT device, reference FROM _device_peaks_ordered WHERE regexp_matches(?, regex, 'i') "
                      "ORDER BY rank LIMIT 1", [recorded]).fetchall()
    assert (got[0][0] if got else None) == device
    if got:
        assert got[0][1]  # every row names its source


def test_efficiency_pairs_the_shapes_of_two_vendors(published):
    with tracedb.connect(published) as db:
        pairs = db.report("efficiency", trace="h100_falconsai-vit", vs="mi300_falconsai-vit")
    rows = {(r["cpu_op"], r["shape"]): r for r in pairs.main.records()}
    gemm = rows[("aten::addmm", "788×3072×768+bias")]
    assert gemm["a_calls"] == gemm["b_calls"] == 12
    assert gemm["a_tflops"] == pytest.approx(3.720671232e9 * 12 / 166_589.6 / 1000, rel=1e-4)
    assert gemm["a_peak_pct"] == pytest.approx(100 * gemm["a_tflops"] / 989.5)
    assert gemm["b_peak_pct"] == pytest.approx(100 * gemm["b_tflops"] / 1307.4)
    assert gemm["further"] == ("A" if gemm["a_peak_pct"] < gemm["b_peak_pct"] else "B")
    attention = rows[("aten::scaled_dot_product_attention", "4×12×197×197×64")]
    assert attention["a_calls"] == attention["b_calls"] == 12
    summary = {r["family"]: r for r in pairs["summary"].records()}
    assert set(summary) >= {"gemm", "attention", "conv"}


def test_roofline_html_draws_each_shape_under_its_roof(tmp_path):
    db = tmp_path / "t.duckdb"
    run_cli("load", op_trace(tmp_path / "x.json"), db=db, check=True)
    out = tmp_path / "roofline.html"
    run_cli("report", "roofline", "-f", "html", "-o", out, db=db, check=True)
    page = out.read_text(encoding="utf-8")
    svg = page[page.index("<svg"):page.index("</svg>")]
    with tracedb.connect(db) as con:
        rows = con.report("roofline", section="main").main.records()
        peaks = {(r["peak_tflops"], r["peak_tbps"]) for r in rows if r["peak_tflops"] and r["peak_tbps"]}
    plotted = [r for r in rows if r["intensity"] and r["tflops"]]
    assert svg.count("<circle") == len(plotted) == 6  # every shape with FLOPs and bytes; the unshaped call not
    assert svg.count("<polyline") == len(peaks) == 2  # the H100's BF16 and FP16 roof (989.5), and FP32's (67)
    assert "989.5 TFLOP/s" in svg and "FLOP per byte" in svg


@pytest.mark.skipif(not (CORPUS / "mi300_vllm_decode_graph_capture.json.gz").is_file(), reason="the corpus is not here")
def test_replayed_kernels_take_the_shapes_of_their_capture(tmp_path):
    """The vLLM decode replay (a HIP graph: no shapes) gets its GEMMs' shapes from the capture trace
    of the same run, loaded beside it; without the capture, it has none and says so."""
    db = tmp_path / "t.duckdb"
    replay = FIXTURES / "kineto" / "mi300_vllm_decode_hipgraph.json.gz"
    run_cli("load", replay, db=db, check=True)
    with tracedb.connect(db) as con:
        alone = con.report("roofline", trace="mi300_vllm_decode_hipgraph")
        assert "32×5120×2880+bias" not in {r["shape"] for r in alone.main.records()}  # eager calls only
        assert alone["coverage"].records()[0]["matched_ns"] == 0
    run_cli("load", CORPUS / "mi300_vllm_decode_graph_capture.json.gz", db=db, check=True)
    with tracedb.connect(db) as con:
        matched = con.sql("SELECT count(*), min(matched_pct), count(DISTINCT launch_id) FROM replayed_kernel_calls").rows[0]
        graph_kernels = con.sql("SELECT count(*) FROM kernel_launches WHERE graph").rows[0][0]
        report = con.report("roofline", trace="mi300_vllm_decode_hipgraph")
    assert matched[1] >= 90 and matched[0] >= 0.9 * graph_kernels and matched[2] == 1
    gemms = {r["shape"]: r for r in report.main.records() if r["cpu_op"] in ("aten::addmm", "aten::mm")}
    assert "32×5120×2880+bias" in gemms and gemms["32×5120×2880+bias"]["flops"] == 2 * 32 * 5120 * 2880 + 32 * 5120
    coverage = report["coverage"].records()[0]
    assert coverage["capture"] == "mi300_vllm_decode_graph_capture" and coverage["matched_ns"] > 0.9 * coverage["replayed_ns"]


def test_serving_gemm_ops_read_as_linear(con, tmp_path):
    """vLLM's rocm_unquantized_gemm and AITER's gemm_a16w16 take (x [M, K], weight [N, K], bias),
    as the real vLLM and SGLang traces record them."""
    b = KinetoTrace("amd")
    for ext, (name, dims) in enumerate([("vllm::rocm_unquantized_gemm", [[32, 2880], [5120, 2880], [5120]]),
                                        ("aiter::gemm_a16w16", [[32, 4096], [4096, 4096], [], [], [], [], []])], start=1):
        b.x("cpu_op", name, ext * 100, 50, **{"External id": ext, "Input Dims": dims,
                                               "Input type": ["c10::BFloat16"] * 2 + [""] * (len(dims) - 2)})
        b.kernel(f"custom_gemm_{ext}", ext * 100 + 5, 10_000 + ext * 100, dur=4, ext=ext)
    trace = load(con, b.write(tmp_path / "serving.json"))
    got = con.execute("SELECT cpu_op, shape, flops, bytes FROM op_work WHERE trace_id = ? ORDER BY event_id",
                      [trace.trace_id]).fetchall()
    assert got == [("vllm::rocm_unquantized_gemm", "32×5120×2880+bias", 2 * 32 * 5120 * 2880 + 32 * 5120,
                    (32 * 2880 + 2880 * 5120 + 32 * 5120 + 5120) * 2),
                   ("aiter::gemm_a16w16", "32×4096×4096", 2 * 32 * 4096 * 4096, (32 * 4096 * 2 + 4096 * 4096) * 2)]


def test_a_dtype_without_a_compute_peak_gets_no_percentage(con, tmp_path):
    b = KinetoTrace()
    b.x("cpu_op", "aten::mm", 0, 50, **{"External id": 1, "Input Dims": [[64, 64], [64, 64]],
                                       "Input type": ["double", "double"]})
    b.kernel("gemm_fp64", 5, 1000, dur=4, ext=1)
    trace = load(con, b.write(tmp_path / "fp64.json"))
    row = con.execute("SELECT flops, peak_tflops, bound, peak_pct FROM op_roofline WHERE trace_id = ?",
                      [trace.trace_id]).fetchone()
    assert row == (2 * 64 ** 3, None, None, None)
