"""Efficiency of serving and compiled models: the serving libraries' RMSNorm, rotary embedding,
silu_and_mul, KV-cache store, paged / unified attention (sizes from the step annotation's sequence
sums) and fused MoE, and LayerNorm / GroupNorm, on traces built here where every number is known,
and on real traces (the vLLM and SGLang decode replays beside their captures, the compiled SD3.5
trace, BERT) against the FLOPs, bytes and kernel time TraceLens publishes for them
(tests/serving_reference.csv, each row with its source sheet)."""

from __future__ import annotations

import csv

import pytest

import tracedb
from conftest import CORPUS, FIXTURES, TESTS, database_of, load, run_cli
from tracedb.testing import KinetoTrace

BF16 = "c10::BFloat16"


def serving_trace(path, flavour="amd", norm="aiter::rmsnorm", annotation=None):
    """One decode step of a serving model, each op a cpu_op with its shapes and one kernel (4 µs)."""
    b = KinetoTrace(flavour)
    ops = [
        (norm, [[32, 4096], [32, 4096], [4096], []], [BF16, BF16, BF16, "Scalar"]),
        ("aiter::add_rmsnorm", [[32, 4096], [32, 4096], [32, 4096], [32, 4096], [4096], []], [BF16] * 5 + ["Scalar"]),
        ("sgl_kernel::rotary_embedding", [[32], [32, 4096], [32, 1024], [], [41216, 128], []],
         ["long int", BF16, BF16, "Scalar", BF16, "Scalar"]),
        ("sglang::store_cache", [[32, 1024], [32, 1024], [835874, 1024], [835874, 1024], [32], [], []],
         [BF16] * 4 + ["long int", "Scalar", "Scalar"]),
        ("vllm::unified_attention_with_output", [[32, 64, 64], [32, 8, 64], [32, 8, 64], [32, 64, 64], [], [], [], [0]],
         [BF16] * 4 + ["", "", "", BF16]),
        ("sgl_kernel::silu_and_mul", [[32, 12288], [32, 24576]], [BF16, BF16]),
        # torch.compile's kernel, named for what it fused: not a serving attention
        ("triton_poi_fused__scaled_dot_product_flash_attention_cat_0", [[2, 38, 64], [2, 38, 64]], [BF16, BF16]),
    ]
    for ext, (name, dims, types) in enumerate(ops, start=1):
        b.x("cpu_op", name, ext * 100, 50, **{"External id": ext, "Input Dims": dims, "Input type": types})
        b.kernel(f"kernel_{ext}", ext * 100 + 5, 10_000 + ext * 100, dur=4, ext=ext)
    step = annotation or "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk55086sqsq32sqsk55086)"
    b.x("user_annotation", step, 50, 1000)
    return b.write(path)


def work(con, trace_id) -> dict[str, tuple]:
    return {r[0]: r[1:] for r in con.execute(
        "SELECT cpu_op, family, shape, flops, bytes, reason FROM op_work WHERE trace_id = ? ORDER BY event_id",
        [trace_id]).fetchall()}


def test_serving_ops_by_tracelens_formulas(con, tmp_path):
    got = work(con, load(con, serving_trace(tmp_path / "serving.json")).trace_id)
    n = 32 * 4096
    # RMSNorm: (n / C)(2C + 2) + 2n FLOPs; x read and written, the weight read; + n and 2n reads/writes with a residual
    assert got["aiter::rmsnorm"] == ("rmsnorm", "32×4096", 32 * (2 * 4096 + 2) + 2 * n, (2 * n + 4096) * 2, None)
    assert got["aiter::add_rmsnorm"] == ("rmsnorm", "32×4096 +residual", 32 * (2 * 4096 + 2) + 3 * n,
                                         (4 * n + 4096) * 2, None)
    q_k = 32 * 4096 + 32 * 1024
    assert got["sgl_kernel::rotary_embedding"][2:] == (3 * q_k, 2 * q_k * 2, None)
    assert got["sglang::store_cache"][2:] == (None, 2 * (2 * 32 * 1024) * 2, None)
    assert got["sgl_kernel::silu_and_mul"][2:] == (5 * 32 * 12288, (32 * 12288 + 32 * 24576) * 2, None)
    # decode of 32 requests holding 55,086 KV tokens: 64 query heads, 8 KV heads, d = 64
    assert got["vllm::unified_attention_with_output"] == (
        "inference_attention", "64×64 q, 8×64 kv · 32 q / 55086 kv tokens, Σsq·sk 55086", 64 * (64 + 64) * 2 * 55086,
        (32 * 64 + 55086 * 8) * (64 + 64) * 2, None)
    # torch.compile's kernel, named for what it fused, is an Inductor kernel, not a serving attention;
    # without its numels among the Concrete Inputs its work is not known
    assert got["triton_poi_fused__scaled_dot_product_flash_attention_cat_0"][0] == "inductor"
    assert got["triton_poi_fused__scaled_dot_product_flash_attention_cat_0"][2:4] == (None, None)


def test_inductor_kernels_by_tracelens_formula(con, tmp_path):
    """Inductor's triton kernels, each a cpu_op with its buffers and numels (TraceLens's
    TritonCompiled model): FLOPs the costs of the operations the name lists per element, bytes the
    buffers read and, pointwise, xnumel elements written; an fp32 buffer 4 bytes an element."""
    b = KinetoTrace("amd")
    kernels = [
        # add (1) + gelu (8) per element over xnumel 32; bf16 [4, 8] and [8] read, 32 written
        ("triton_poi_fused_add_gelu_0", [[4, 8], [8], []], [BF16, BF16, "Scalar"], ["", "", "32"]),
        # add, mean (1 each), pow, rsqrt (2 each) over xnumel 4 × rnumel 8; a float buffer of 4
        ("triton_red_fused_add_mean_pow_rsqrt_1", [[4, 8], [8], [4, 8], [4], [], []],
         [BF16, BF16, BF16, "float", "Scalar", "Scalar"], ["", "", "", "", "4", "8"]),
        # log_softmax and index_add hold words of the cost table but are not those operations
        ("triton_per_fused__log_softmax_index_add_2", [[4, 8], [4, 8], [], []], [BF16, BF16, "Scalar", "Scalar"],
         ["", "", "4", "8"]),
        # a copy: no FLOPs, the buffers and the output moved
        ("triton_poi_fused__to_copy_clone_3", [[16], [16], []], [BF16, BF16, "Scalar"], ["", "", "16"]),
        # numels not recorded: no work, and the reason
        ("triton_poi_fused_mul_4", [[16], [16]], [BF16, BF16], ["", ""]),
    ]
    for ext, (name, dims, types, concrete) in enumerate(kernels, start=1):
        b.x("cpu_op", name, ext * 100, 50, **{"External id": ext, "Input Dims": dims, "Input type": types,
                                               "Concrete Inputs": concrete})
        b.kernel(name, ext * 100 + 5, 10_000 + ext * 100, dur=4, ext=ext)
    got = work(con, load(con, b.write(tmp_path / "inductor.json")).trace_id)
    assert got["triton_poi_fused_add_gelu_0"] == ("inductor", "[4×8], [8] n=32", 9 * 32, (32 + 8) * 2 + 32 * 2, None)
    assert got["triton_red_fused_add_mean_pow_rsqrt_1"] == (
        "inductor", "[4×8], [8], [4×8], [4] n=4×8", 6 * 32, (32 + 8 + 32) * 2 + 4 * 4, None)
    assert got["triton_per_fused__log_softmax_index_add_2"][2:4] == (0, (32 + 32) * 2)
    assert got["triton_poi_fused__to_copy_clone_3"][2:4] == (0, (16 + 16) * 2 + 16 * 2)
    assert got["triton_poi_fused_mul_4"][2:] == (None, None, "Inductor kernel without its numels among the Concrete Inputs")


def test_fused_moe_by_its_expert_weights(con, tmp_path):
    """A fused MoE given its expert weights (TraceLens's FusedMoE): 32 tokens of 4096, 8 experts of
    a gated 14336 intermediate in FP8, top-2; a MoE op without them (vLLM's moe_forward) says so."""
    b = KinetoTrace("amd")
    fp8 = "c10::Float8_e4m3fnuz"
    ops = [("vllm::rocm_aiter_fused_moe", [[32, 4096], [8, 28672, 4096], [8, 4096, 14336], [32, 2], [32, 2]],
            [BF16, fp8, fp8, "float", "int"]),
           ("vllm::moe_forward", [[32, 3072], [32, 32], [], []], [BF16, BF16, "", ""])]
    for ext, (name, dims, types) in enumerate(ops, start=1):
        b.x("cpu_op", name, ext * 100, 50, **{"External id": ext, "Input Dims": dims, "Input type": types})
        b.kernel(f"moe_kernel_{ext}", ext * 100 + 5, 10_000 + ext * 100, dur=40, ext=ext)
    # vLLM's moe_forward around the fused op taking the weights: the inner one is the call
    b.x("cpu_op", "vllm::moe_forward", 390, 80, **{"Input Dims": [[32, 4096], [32, 8], [], []],
                                                   "Input type": [BF16, BF16, "", ""]})
    b.x("cpu_op", "vllm::rocm_aiter_fused_moe", 400, 50, **{"External id": 9, "Input Dims": ops[0][1],
                                                            "Input type": ops[0][2]})
    b.kernel("moe_kernel_9", 405, 10_900, dur=40, ext=9)
    trace = load(con, b.write(tmp_path / "moe.json"))
    got = work(con, trace.trace_id)
    calls = con.execute("SELECT cpu_op, flops IS NOT NULL FROM op_work WHERE trace_id = ? ORDER BY event_id",
                        [trace.trace_id]).fetchall()
    assert calls.count(("vllm::rocm_aiter_fused_moe", True)) == 2 and calls.count(("vllm::moe_forward", False)) == 1
    t, h, i, k, e = 32, 4096, 14336, 2, 8
    assert got["vllm::rocm_aiter_fused_moe"] == (
        "moe", "32×4096 x, 8×28672×4096 w1, top-2", 2 * t * h * i * k * 3 + t * h * (2 * k - 1),
        round(2 * t * h * 2 + e_active(e, k, t) * i * h * 3 * 1), None)
    # no top-k inside it, no rule: its work is not known, and what would give it is said
    assert got["vllm::moe_forward"][2:4] == (None, None) and "without its expert weights" in got["vllm::moe_forward"][4]


def e_active(e: int, k: int, t: int) -> float:
    """TraceLens's experts a uniform routing of t tokens to k of e touches."""
    return e * (1 - ((e - k) / e) ** t)


def moe_forward_trace(path, topk: bool = True, kernels=("_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1_swiglu",
                                                          "_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1"),
                      flavour: str = "amd"):
    """vLLM's moe_forward of GPT-OSS: 32 tokens of 3072, 32 experts' router logits, its routing
    inside (a TopK of k 4 when topk, and the sort of the tokens by expert, [32, 4]), then its
    matmul_ogs kernels (mxfp4 weights, the first gated)."""
    b = KinetoTrace(flavour)
    b.x("cpu_op", "vllm::moe_forward", 100, 500, **{"External id": 1, "Input Dims": [[32, 3072], [32, 32], [], []],
                                                   "Input type": [BF16, BF16, "", ""],
                                                   "Concrete Inputs": ["", "", "", ""]})
    if topk:
        b.x("cpu_op", "TopK", 110, 20, **{"External id": 2, "Input Dims": [[32, 32], [], [], [], [], [], []],
                                          "Input type": [BF16, "Scalar", "Scalar", "Scalar", "Scalar", "", ""],
                                          "Concrete Inputs": ["", "4", "True", "1", "True", "", ""]})
    b.x("cpu_op", "SortTokens", 140, 20, **{"External id": 3, "Input Dims": [[32, 4], [32, 4], []],
                                             "Input type": [BF16, "short int", "Scalar"],
                                             "Concrete Inputs": ["", "", "32"]})
    for n, name in enumerate(kernels):
        b.kernel(name, 200 + 100 * n, 10_000 + 100 * n, dur=40, ext=1)
    return b.write(path)


def test_moe_without_its_weights_by_tracelens_unfused_formula(con, tmp_path):
    """GPT-OSS's MoE as vLLM records it (hidden states and router logits, no expert weights):
    TraceLens's unfused up (gated: _swiglu) and down projections, the expert's intermediate size
    taken equal to the hidden size, top-k the TopK op's argument, mxfp4 weights half a byte; the
    assumption said. Without the TopK, top-k is the routing tensors' second dimension, and said."""
    t, h, e, k = 32, 3072, 32, 4
    i = h
    flops = 2 * t * h * i * k * 2 + 2 * t * i * h * k
    bytes_ = 2 * t * h * 2 + 2 * t * i * k * 2 + e_active(e, k, t) * i * h * 3 * 0.5
    with_topk = work(con, load(con, moe_forward_trace(tmp_path / "moe.json")).trace_id)["vllm::moe_forward"]
    assert with_topk == ("moe", "32×3072 x, 32 experts, top-4, gated", flops, round(bytes_), None)
    (assumption,) = con.execute("SELECT assumption FROM op_work WHERE cpu_op = 'vllm::moe_forward' AND flops = ?",
                                [flops]).fetchone()
    assert assumption == "intermediate = hidden (expert weights not recorded)"
    trace = load(con, moe_forward_trace(tmp_path / "moe_sorted.json", topk=False))
    (shape, got, assumption), = con.execute("SELECT shape, flops, assumption FROM op_work WHERE trace_id = ? "
                                             "AND cpu_op = 'vllm::moe_forward'", [trace.trace_id]).fetchall()
    assert got == flops and assumption == ("intermediate = hidden (expert weights not recorded); "
                                           "top-k 4 from the routing tensors' shape")
    # kernels that name neither gating nor their weights' type: ungated, weights of the activations' type
    trace = load(con, moe_forward_trace(tmp_path / "moe_plain.json", kernels=("moe_gemm_up", "moe_gemm_down")))
    (shape, got, nbytes, assumption), = con.execute(
        "SELECT shape, flops, bytes, assumption FROM op_work WHERE trace_id = ? AND cpu_op = 'vllm::moe_forward'",
        [trace.trace_id]).fetchall()
    assert shape == "32×3072 x, 32 experts, top-4" and got == 2 * t * h * i * k + 2 * t * i * h * k
    assert nbytes == round(2 * t * h * 2 + 2 * t * i * k * 2 + e_active(e, k, t) * i * h * 2 * 2)
    assert assumption.endswith("weights of the activations' type")


def test_a_model_shapes_rule_gives_what_the_trace_does_not(tmp_path):
    """A user who knows the model states its sizes: the rule's intermediate size and top-k replace
    the assumed ones, and the assumption names the rule; the roofline report says it too."""
    db = tmp_path / "rule.duckdb"
    with tracedb.connect(db, read_only=False) as d:
        d.load(moe_forward_trace(tmp_path / "moe.json"))
        rules = tmp_path / "gpt-oss.csv"
        rules.write_text("priority,regex,model,hidden,intermediate,experts,top_k,reference\n"
                         "1,moe_forward,gpt-oss-test,,1024,,2,a model card\n")
        assert d.rules.add(rules, "model-shapes") == ("model_shapes", "gpt-oss.csv", 1)
        (shape, flops, assumption), = d.sql("SELECT shape, flops, assumption FROM op_work "
                                           "WHERE cpu_op = 'vllm::moe_forward'").rows
        rows = d.report("roofline", section="main").main.records()
    t, h, i, k = 32, 3072, 1024, 2
    assert shape == "32×3072 x, 32 experts, top-2, gated" and flops == 2 * t * h * i * k * 2 + 2 * t * i * h * k
    assert assumption == "sizes of gpt-oss-test (model_shapes)"
    # a malformed file is one line naming it and its line, and leaves the rules as they were
    header = "priority,regex,model,hidden,intermediate,experts,top_k,reference\n"
    for row, says in (("1,moe,m,0,,,,", "hidden '0' is not a positive whole number"),
                      ("1,moe,m,99999999999999999999,,,,", "is not a positive whole number below 2^63"),
                      ("1,(moe,m,,,,,", "bad regular expression")):
        bad = tmp_path / "bad.csv"
        bad.write_text(header + row + "\n")
        run = run_cli("rules", "add", "model-shapes", bad, db=db)
        assert run.returncode == 1 and says in run.stderr and "line 2" in run.stderr, run.stderr
        assert len(run.stderr.strip().splitlines()) == 1 and "Traceback" not in run.stderr
    with tracedb.connect(db) as d:
        assert d.sql("SELECT source, intermediate, top_k FROM model_shapes").rows == [("gpt-oss.csv", 1024, 2)]
    assert [r["assumption"] for r in rows if r["cpu_op"] == "vllm::moe_forward"] == [assumption]


def test_fused_moe_with_packed_fp4_weights(con, tmp_path):
    """AITER's fused MoE with FP4 weights packed two to a byte (w1 [E, 2I, H/2], w2 [E, H, I/2]):
    the intermediate size is w2's last dimension times two, and a weight half a byte."""
    b = KinetoTrace("amd")
    dims = [[16, 2048], [4, 2048, 1024], [4, 2048, 512], [16, 2], [16, 2]]
    b.x("cpu_op", "vllm::rocm_aiter_fused_moe", 100, 50, **{"External id": 1, "Input Dims": dims,
                                                            "Input type": [BF16, "c10::Float4_e2m1fn_x2",
                                                                           "c10::Float4_e2m1fn_x2", "float", "int"]})
    b.kernel("fmoe_kernel", 105, 10_000, dur=40, ext=1)
    got = work(con, load(con, b.write(tmp_path / "fp4.json")).trace_id)["vllm::rocm_aiter_fused_moe"]
    t, h, i, k, e = 16, 2048, 1024, 2, 4
    assert got[2] == 2 * t * h * i * k * 3 + t * h * (2 * k - 1)
    assert got[3] == round(2 * t * h * 2 + e_active(e, k, t) * i * h * 3 * 0.5)


@pytest.mark.parametrize("annotation, sums", [
    ("execute_6147_context_2(sq6144sk7144sqsq20971520sqsk23019520)_generation_3(sq3sk6144sqsq3sqsk6144)",
     (6144, 7144, 20971520, 23019520, 3, 6144, 3, 6144)),
    ("step[MIXED bs=2 c=1 g=1 c_sq=5 c_sk=8 c_sqsq=25 c_sqsk=40 g_sq=1 g_sk=12 g_sqsq=1 g_sqsk=12]",
     (5, 8, 25, 40, 1, 12, 1, 12)),
    ("step[DECODE bs=2 g_sqsq=2 g_sqsk=30 g_sk=30]", (0, 0, 0, 0, 2, 30, 2, 30)),
    ("step[EXTEND bs=2 toks=12 c_sqsq=80 c_sqsk=120 c_sk=20]", (12, 20, 80, 120, 0, 0, 0, 0)),
    ("decode[bs=32 tok=128 d=32 spec=3 sqsq=512 sqsk=262144 sk=65536]", (0, 0, 0, 0, 128, 65536, 512, 262144)),
    ("prefill[bs=2 tok=14721 ctx=[7803, 6918] sqsq=108745533 sqsk=108745533 sk=14721]",
     (14721, 14721, 108745533, 108745533, 0, 0, 0, 0)),
])
def test_step_annotations_give_their_sequence_sums(con, tmp_path, annotation, sums):
    """vLLM's, SGLang's and ATOM's detailed step annotations, as their documentation writes them;
    the context part of a mixed step is causal within its new tokens."""
    trace = load(con, serving_trace(tmp_path / "step.json", annotation=annotation))
    got = con.execute("SELECT c_sq, c_sk, c_sqsq, c_sqsk, g_sq, g_sk, g_sqsq, g_sqsk FROM step_sequence_sums "
                      "WHERE trace_id = ?", [trace.trace_id]).fetchall()
    assert got == [sums]
    c_sq, c_sk, c_sqsq, c_sqsk, g_sq, g_sk, g_sqsq, g_sqsk = sums
    flops, nbytes = work(con, trace.trace_id)["vllm::unified_attention_with_output"][2:4]
    assert flops == 64 * (64 + 64) * (2 * (c_sqsk + g_sqsk) - c_sqsq)
    assert nbytes == ((c_sq + g_sq) * 64 + (c_sk + g_sk) * 8) * (64 + 64) * 2


def test_multi_head_attention_and_backward_ops(con, tmp_path):
    """Keys and values shaped as the queries (as many KV heads as query heads): the output, not
    the keys, is left out; an autograd node or a backward op of a serving library is no forward op."""
    b = KinetoTrace("amd")
    ops = [("vllm::unified_attention_with_output", [[32, 32, 128]] * 4 + [[], [], [], [0]], [BF16] * 4 + [""] * 4),
           ("autograd::engine::evaluate_function: FusedRMSNormAffineFunctionBackward", [[32, 4096]], [BF16]),
           ("vllm::rms_norm_backward", [[32, 4096], [4096]], [BF16, BF16])]
    for ext, (name, dims, types) in enumerate(ops, start=1):
        b.x("cpu_op", name, ext * 100, 50, **{"External id": ext, "Input Dims": dims, "Input type": types})
        b.kernel(f"kernel_{ext}", ext * 100 + 5, 10_000 + ext * 100, dur=4, ext=ext)
    b.x("user_annotation", "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk4096sqsq32sqsk4096)", 50, 1000)
    got = work(con, load(con, b.write(tmp_path / "mha.json")).trace_id)
    assert got["vllm::unified_attention_with_output"][1:4] == (
        "32×128 q, 32×128 kv · 32 q / 4096 kv tokens, Σsq·sk 4096", 32 * 256 * 2 * 4096, (32 * 32 + 4096 * 32) * 256 * 2)
    assert set(got) == {"vllm::unified_attention_with_output"}


def test_attention_without_sequence_sums_says_what_to_record(con, tmp_path):
    trace = load(con, serving_trace(tmp_path / "native.json", annotation="execute_context_0(0)_generation_32(32)"))
    row = work(con, trace.trace_id)["vllm::unified_attention_with_output"]
    assert row[2:4] == (None, None) and "no step annotation with its sequence lengths" in row[4]


def test_efficiency_pairs_one_norm_of_two_libraries(tmp_path):
    """vLLM's _C::rms_norm on an H100 and AITER's rmsnorm on an MI300X, same shape: one row, each
    side's share of its own peak."""
    db = tmp_path / "pair.duckdb"
    with tracedb.connect(db, read_only=False) as c:
        c.load(serving_trace(tmp_path / "nv.json", "nvidia", norm="_C::rms_norm"), name="nv")
        c.load(serving_trace(tmp_path / "amd.json", "amd"), name="amd")
    with tracedb.connect(db) as c:
        rows = {(r["cpu_op"], r["shape"]): r for r in c.report("efficiency", trace="nv", vs="amd", section="main").main.records()}
    norm = rows[("RMSNorm", "32×4096")]
    assert norm["a_calls"] == norm["b_calls"] == 1 and norm["a_peak_pct"] > 0 and norm["b_peak_pct"] > 0
    shape = "64×64 q, 8×64 kv · 32 q / 55086 kv tokens, Σsq·sk 55086"
    assert ("serving attention", shape) not in rows  # the same op name on both: its own name
    assert ("vllm::unified_attention_with_output", shape) in rows


PAIRS = {"mi300x_sglang_qwen3-8b_decode": "mi300x_sglang_decode_graph_capture",
         "mi300_vllm_decode_hipgraph": "mi300_vllm_decode_graph_capture"}


@pytest.fixture(scope="module")
def decode(tmp_path_factory):
    captures = [CORPUS / f"{c}.json.gz" for c in PAIRS.values()]
    if not all(p.is_file() for p in captures):
        pytest.skip("the corpus is not here")
    return database_of(tmp_path_factory, "decode", captures + [FIXTURES / "kineto" / f"{r}.json.gz" for r in PAIRS])


def reference() -> list[dict]:
    with open(TESTS / "serving_reference.csv", newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("trace", sorted(PAIRS))
def test_real_decode_replays_agree_with_tracelens(decode, trace):
    """Each serving op TraceLens models on these replays (their shapes from the capture, their
    sequence lengths from the replay's step): the same FLOPs and bytes per call and the same kernel
    time; and the roofline covers nearly all the SGLang step (GEMMs, attention, norms, rotary,
    activation, cache store, copies)."""
    with tracedb.connect(decode) as c:
        rows = c.report("roofline", trace=trace, section="main").main.records()
        coverage = c.report("roofline", trace=trace, section="coverage")["coverage"].records()[0]
    for ref in (r for r in reference() if r["trace"] == trace and not r["sheet"].startswith(("Normalization", "MoE"))):
        flops = round(float(ref["gflops"]) * 1e9)
        nbytes = round(float(ref["data_moved_mb"]) * (1 << 20))
        ours = [r for r in rows if (r["flops"] or 0) == flops and r["bytes"] == nbytes]
        assert len(ours) == 1, (ref["name"], ref["input_dims"], flops, nbytes)
        assert ours[0]["total_ns"] == pytest.approx(float(ref["kernel_time_sum_us"]) * 1000, rel=1e-4), ref["name"]
    assert coverage["modelled_pct"] > 99


def test_gpt_oss_moe_agrees_with_tracelens(decode):
    """GPT-OSS's MoE on the vLLM decode replay (its moe_forward, recorded without expert weights, from
    the capture): TraceLens splits each call into an up and a down projection; one call of ours is
    their sum, to the FLOP and the byte, and its kernels hold theirs (and the routing kernels)."""
    refs = [r for r in reference() if r["sheet"] == "MoE_unfused_fwd"]
    assert len(refs) == 2
    with tracedb.connect(decode) as c:
        (row,) = [r for r in c.report("roofline", trace="mi300_vllm_decode_hipgraph", section="main").main.records()
                  if r["cpu_op"] == "vllm::moe_forward"]
    assert row["flops"] == round(sum(float(r["gflops"]) for r in refs) * 1e9)
    assert row["bytes"] == pytest.approx(sum(float(r["data_moved_mb"]) for r in refs) * (1 << 20), abs=2)
    assert row["total_ns"] >= sum(float(r["kernel_time_sum_us"]) for r in refs) * 1000
    assert row["assumption"] == "intermediate = hidden (expert weights not recorded)"


@pytest.mark.parametrize("database, trace, shapes", [
    ("corpus_db", "mi300x_xdit_sd3.5_compiled", 5), ("examples_db", "h100_bert-small", 1)])
def test_normalization_agrees_with_tracelens(request, database, trace, shapes):
    """The compiled SD3.5 trace's GroupNorms (its VAE: AITER's _groupnorm_run) and LayerNorms (its
    text encoders), and BERT's LayerNorms: TraceLens's FLOPs, bytes and kernel time, shape by shape."""
    with tracedb.connect(request.getfixturevalue(database)) as c:
        rows = c.report("roofline", trace=trace, section="main").main.records()
    refs = [r for r in reference() if r["trace"] == trace and r["sheet"].startswith("Normalization")]
    assert len(refs) == shapes
    for ref in refs:
        flops = round(float(ref["gflops"]) * 1e9)
        nbytes = round(float(ref["data_moved_mb"]) * (1 << 20))
        ours = [r for r in rows if r["flops"] == flops and r["bytes"] == nbytes and r["cpu_op"] == ref["name"]]
        assert len(ours) == 1, (ref["name"], ref["input_dims"])
        assert ours[0]["total_ns"] == pytest.approx(float(ref["kernel_time_sum_us"]) * 1000, rel=1e-4), ref["input_dims"]


def test_inductor_kernels_agree_with_tracelens(corpus_db):
    """The compiled SD3.5 trace's Inductor kernels (torch.compile's triton_* kernels, 9.7 % of its
    GPU time): TraceLens's FLOPs, bytes and kernel time, kernel by kernel, for every kernel whose
    buffers hold no fp32 tensor (TraceLens's element sizes have no 'float', so it counts such a buffer
    as 0 bytes; tracedb counts 4)."""
    with tracedb.connect(corpus_db) as c:
        rows = c.report("roofline", trace="mi300x_xdit_sd3.5_compiled", section="main").main.records()
    refs = [r for r in reference() if r["trace"] == "mi300x_xdit_sd3.5_compiled" and r["sheet"] == "triton"]
    assert len(refs) == 19
    for ref in refs:
        ours = [r for r in rows if r["cpu_op"] == ref["name"]]
        assert len(ours) == 1, ref["name"]
        assert ours[0]["flops"] == round(float(ref["gflops"]) * 1e9), ref["name"]
        assert ours[0]["bytes"] == round(float(ref["data_moved_mb"]) * (1 << 20)), ref["name"]
        # TraceLens's sums are given to 0.01 µs here
        assert ours[0]["total_ns"] == pytest.approx(float(ref["kernel_time_sum_us"]) * 1000, abs=10), ref["name"]


@pytest.mark.parametrize("trace, modelled_pct, reasons", [
    # torch.compile'd SD3.5: its GEMMs, attention, convolutions, norms and Inductor kernels; TraceLens
    # models 710.7 ms of its 712.5 (99.8 %)
    ("mi300x_xdit_sd3.5_compiled", 99.9, {"operators with no model": 0.1}),
    # FLUX.1 replays a HIP graph; its capture (mi300x_xdit_flux1_graph_capture, loaded beside)
    # gives the replayed kernels their calls: all but SageAttention's kernels and a few gathers
    ("mi300x_xdit_flux1_compiled", 93.2, {"operators with no model": 6.8}),
])
def test_compiled_corpus_traces_say_what_is_off_the_roofline(corpus_db, trace, modelled_pct, reasons):
    """The coverage of the compiled diffusion traces, and for the rest of their time each reason
    with its share: the reasons add up to what is not modelled."""
    with tracedb.connect(corpus_db) as c:
        report = c.report("roofline", trace=trace)
        coverage = report["coverage"].records()[0]
        off = {r["reason"]: r for r in report["unmodelled"].records()}
    assert coverage["modelled_pct"] == pytest.approx(modelled_pct, abs=0.1)
    for reason, share in reasons.items():
        assert off[reason]["share_pct"] == pytest.approx(share, abs=0.2), reason
    assert sum(r["time_ns"] for r in off.values()) == coverage["gpu_ns"] - coverage["modelled_ns"]


def test_flux_with_its_capture_covers_what_tracelens_models(corpus_db):
    """FLUX.1's replayed kernels matched to the launches of its capture trace (which replays the
    graph once itself, after running eagerly): every replayed kernel has its captured call, and the
    roofline models at least the kernel time TraceLens's report gives a perf model (its
    unified_perf_summary.csv, has_perf_model rows: 186.3 ms)."""
    with tracedb.connect(corpus_db) as c:
        coverage = c.report("roofline", trace="mi300x_xdit_flux1_compiled", section="coverage")["coverage"].records()[0]
    assert coverage["capture"] == "mi300x_xdit_flux1_graph_capture"
    assert coverage["matched_ns"] == coverage["replayed_ns"] > 0.8 * coverage["gpu_ns"]
    assert coverage["modelled_ns"] >= 186.3e6


def test_moe_pairs_across_vendors_by_shape(tmp_path):
    """The same fused MoE on AMD (AITER's fused MoE) and on NVIDIA (vLLM's Triton fused experts), and
    the same unfused GPT-OSS MoE on both: efficiency pairs each by its operation and shape, one row
    each, with both sides' times; the assumption of the unfused one is said for both sides."""
    dims = [[32, 4096], [8, 28672, 4096], [8, 4096, 14336], [32, 2], [32, 2]]
    traces = []
    for flavour, op, dur in (("amd", "vllm::rocm_aiter_fused_moe", 40), ("nvidia", "vllm::outplace_fused_experts", 60)):
        b = KinetoTrace(flavour)
        b.x("cpu_op", op, 100, 50, **{"External id": 1, "Input Dims": dims, "Input type": [BF16, BF16, BF16, "float", "int"]})
        b.kernel(f"{flavour}_moe", 105, 10_000, dur=dur, ext=1)
        path = b.write(tmp_path / f"{flavour}.json")
        unfused = moe_forward_trace(tmp_path / f"{flavour}_unfused.json", flavour=flavour)
        traces.append((path, unfused))
    db = tmp_path / "pairs.duckdb"
    with tracedb.connect(db, read_only=False) as d:
        for name, (fused, unfused) in zip(("amd", "nvidia"), traces):
            d.load(fused, name=name)
            d.load(unfused, name=f"{name}_unfused")
        fused_rows = d.report("efficiency", trace="amd", vs="nvidia", section="main").main.records()
        unfused_rows = d.report("efficiency", trace="amd_unfused", vs="nvidia_unfused", section="main").main.records()
    (row,) = fused_rows
    assert row["cpu_op"] == "fused MoE" and row["shape"] == "32×4096 x, 8×28672×4096 w1, top-2"
    assert (row["a_total_ns"], row["b_total_ns"], row["assumption"]) == (40_000, 60_000, None)
    (row,) = unfused_rows
    assert row["shape"] == "32×3072 x, 32 experts, top-4, gated" and row["a_calls"] == row["b_calls"] == 1
    assert row["assumption"] == ("A: intermediate = hidden (expert weights not recorded); "
                                 "B: intermediate = hidden (expert weights not recorded)")
