"""Analysis views on small traces built here, where the right answer is known exactly:
kernel_ops, kernel_phases (ASOF to the launch), kernel_stacks (Python parent chain), kernel_layers."""

from __future__ import annotations

import pytest

from conftest import load
from tracedb.testing import GPU, KinetoTrace, frame_event


def facts(con, trace_id=None, order="k.ts_ns"):
    return con.execute(
        "SELECT k.name, o.op, p.phase, p.iteration, p.annotation, l.forward_pass, l.layer, l.position "
        "FROM kernels k JOIN kernel_ops o USING (trace_id, kernel_id) "
        "JOIN kernel_phases p USING (trace_id, kernel_id) JOIN kernel_layers l USING (trace_id, kernel_id) "
        f"ORDER BY {order}").fetchall()


def test_phase_from_cpu_annotation_when_kernel_runs_after_it(con, tmp_path):
    b = KinetoTrace()
    b.x("user_annotation", "execute_context_1(888_788544)_generation_0(0)", 1000, 100)
    b.kernel("nvjet_tst_64x8_prefill", launch_ts=1050, kernel_ts=1500)   # kernel after the annotation ended
    b.x("user_annotation", "step[DECODE bs=32]", 2000, 100)
    b.kernel("nvjet_tst_64x8_decode", launch_ts=2010, kernel_ts=2500)
    b.x("user_annotation", "execute_2_context_1(sq9)_generation_1(sq1)", 3000, 100)
    b.kernel("nvjet_tst_64x8_mixed", launch_ts=3010, kernel_ts=3500)
    b.x("user_annotation", "execute_0_context_0(x)_generation_3(y)", 4000, 100)
    b.kernel("nvjet_tst_64x8_decode2", launch_ts=4010, kernel_ts=4500)
    b.kernel("nvjet_tst_64x8_outside", launch_ts=5000, kernel_ts=5500)
    load(con, b.write(tmp_path / "phases.json"))
    rows = [(r[0], r[2], r[3], r[4]) for r in facts(con)]
    assert rows == [
        ("nvjet_tst_64x8_prefill", "prefill", 1, "execute_context_1(888_788544)_generation_0(0)"),
        ("nvjet_tst_64x8_decode", "decode", 2, "step[DECODE bs=32]"),
        ("nvjet_tst_64x8_mixed", "mixed", 3, "execute_2_context_1(sq9)_generation_1(sq1)"),
        ("nvjet_tst_64x8_decode2", "decode", 4, "execute_0_context_0(x)_generation_3(y)"),
        ("nvjet_tst_64x8_outside", "none", None, None),
    ]


def test_gpu_annotation_wins_and_profiler_step_gives_iteration(con, tmp_path):
    b = KinetoTrace()
    b.x("user_annotation", "ProfilerStep#7", 0, 10_000)
    b.x("user_annotation", "execute_context_0(0)_generation_4(4)", 100, 100)
    b.x("gpu_user_annotation", "execute_context_2(99)_generation_0(0)", 1000, 1000, GPU)
    b.kernel("nvjet_a", launch_ts=150, kernel_ts=1100)      # GPU side says prefill, CPU side decode
    b.kernel("nvjet_b", launch_ts=5000, kernel_ts=6000)     # only the ProfilerStep encloses it
    load(con, b.write(tmp_path / "gpu.json"))
    rows = [(r[0], r[2], r[3], r[4]) for r in facts(con)]
    assert rows == [("nvjet_a", "prefill", 1, "execute_context_2(99)_generation_0(0)"),
                    ("nvjet_b", "none", 7, "ProfilerStep#7")]


def test_python_stack_chain_in_order(con, tmp_path):
    b = KinetoTrace()
    frames = [("threading.py(1032): _bootstrap", 0, 1000, 1, None),
              ("vllm/worker/model_runner.py(1700): execute_model", 10, 900, 2, 1),
              ("vllm/model_executor/models/llama.py(340): forward", 20, 800, 3, 2),
              ("torch/nn/modules/module.py(1750): _call_impl", 30, 20, 4, 3)]  # finished before the launch
    for name, ts, dur, python_id, parent in frames:
        b.frame(name, ts, dur, python_id, parent)
    b.x("cpu_op", "aten::mm", 95, 20, **{"External id": 55})
    b.kernel("nvjet_tst_128x64", launch_ts=100, kernel_ts=300, ext=55)
    load(con, b.write(tmp_path / "stack.json"))
    row = con.execute("SELECT cpu_op, python_stack, summary FROM kernel_stacks").fetchone()
    assert row == ("aten::mm", ["threading.py(1032): _bootstrap",
                                "vllm/worker/model_runner.py(1700): execute_model",
                                "vllm/model_executor/models/llama.py(340): forward"],
                   "vllm/model_executor/models/llama.py(340): forward")  # short enough to keep whole


def test_stored_stacks_agree_with_the_live_definition(con, tmp_path):
    """Launches sharing a leaf but not its open frames, a frame without a name, a launch after its
    leaf's chain has partly ended: the stacks stored at load are those _launch_stacks_live defines."""
    b = KinetoTrace()
    b.frame("main.py(1): run", 0, 10_000, 1, None)
    b.frame("model.py(10): forward", 10, 5_000, 2, 1)
    b.frame("helper.py(5): prep", 20, 30, 3, 2)  # ends at 50
    nameless = frame_event("unused", 60, 100, 4, 2)
    del nameless["name"]
    b.events.append(nameless)
    for i, launch in enumerate((40, 55, 70, 6000)):
        b.kernel(f"k{i}", launch_ts=launch, kernel_ts=launch + 1000)
    load(con, b.write(tmp_path / "stacks.json"))
    stored = con.execute("SELECT k.name, s.python_stack FROM kernel_facts f JOIN kernels k USING (trace_id, kernel_id) "
                         "LEFT JOIN python_stacks s USING (trace_id, stack_id) ORDER BY k.ts_ns").fetchall()
    run, forward = "main.py(1): run", "model.py(10): forward"
    assert stored == [("k0", [run, forward, "helper.py(5): prep"]), ("k1", [run, forward]),
                      ("k2", [run, forward, None]), ("k3", [run])]
    live = con.execute("SELECT k.name, l.python_stack FROM kernel_facts f JOIN kernels k USING (trace_id, kernel_id) "
                       "LEFT JOIN _launch_stacks_live l ON l.trace_id = f.trace_id AND l.launch_id = f.launch_id "
                       "ORDER BY k.ts_ns").fetchall()
    assert live == stored


def test_graph_replay_keeps_one_row_per_kernel(con, tmp_path):
    b = KinetoTrace()
    b.frame("vllm/v1/worker/gpu_model_runner.py(1500): execute_model", 0, 1000, python_id=1)
    b.frame("torch/cuda/graphs.py(139): replay", 40, 100, python_id=2, parent=1)
    kernels = ["nvjet_a", "flash_fwd_splitkv_kernel", "nvjet_b"]
    b.graph_launch(50, [(name, 200 + 10 * i) for i, name in enumerate(kernels)], dur=10, corr=77)
    load(con, b.write(tmp_path / "graph.json"))
    assert con.execute("SELECT count(*), count(DISTINCT kernel_id) FROM kernel_stacks").fetchone() == (3, 3)
    assert con.execute("SELECT count(*) FROM kernel_launches WHERE graph").fetchone()[0] == 3
    summaries = {r[0] for r in con.execute("SELECT summary FROM kernel_stacks").fetchall()}
    assert summaries == {"vllm/...gpu_model_runner.py(1500): execute_model [CUDA graph]"}
    for view in ("kernel_ops", "kernel_phases", "kernel_layers"):
        assert con.execute(f"SELECT count(*) FROM {view}").fetchone()[0] == 3


LAYER = ["vllm::rms_norm_kernel", "nvjet_qkv", "vllm::rotary_embedding_kernel", "flash_fwd_splitkv_kernel",
         "flash_fwd_splitkv_combine_kernel", "nvjet_o_proj", "vllm::rms_norm_kernel", "nvjet_up",
         "vllm::act_and_mul_kernel", "nvjet_down"]


def _model_pass(b, start, layers=3):
    """One forward pass: embedding, `layers` transformer layers, final norm, LM head, sampling."""
    names = ["void at::native::embedding_kernel"] + LAYER * layers + [
        "vllm::rms_norm_kernel", "nvjet_lm_head", "flashinfer::sampling::TopKTopPSamplingFromProbKernel"]
    for i, name in enumerate(names):
        b.kernel(name, launch_ts=start + 1 + i, kernel_ts=start + 1000 + 10 * i, dur=5)
    return names


def test_layer_boundaries_fall_on_the_right_kernels(con, tmp_path):
    b = KinetoTrace()
    b.x("user_annotation", "execute_context_1(64)_generation_0(0)", 0, 500)
    names = _model_pass(b, 0)
    b.x("user_annotation", "execute_context_0(0)_generation_8(8)", 10_000, 500)
    _model_pass(b, 10_000)
    load(con, b.write(tmp_path / "layers.json"))
    rows = facts(con)
    assert len(rows) == 2 * len(names)
    for forward_pass, part in ((1, rows[:len(names)]), (2, rows[len(names):])):
        assert {r[5] for r in part} == {forward_pass}
        layers = [r[6] for r in part]
        # embedding before the first layer and final norm, LM head, sampling after the last: no layer
        assert layers[0] is None and layers[-3:] == [None, None, None]
        # each layer runs norm .. down projection, the two attention kernels counting as one marker
        assert layers[1:-3] == [layer for layer in range(3) for _ in LAYER]
        assert [r[7] for r in part[1:1 + len(LAYER)]] == list(range(len(LAYER)))
        assert part[1][0] == "vllm::rms_norm_kernel" and part[len(LAYER)][0] == "nvjet_down"
    assert [r[2] for r in rows[:3]] == ["prefill"] * 3 and rows[-1][2] == "decode"


def test_classification_uses_first_matching_rule(con, tmp_path):
    b = KinetoTrace()
    for i, name in enumerate(["vllm::rotary_embedding_kernel", "void at::native::embedding_kernel",
                              "_matmul_ogs_NNT_bf16_swiglu", "_matmul_ogs_NNT_bf16", "ncclDevKernel_AllReduce_Sum",
                              "cudnn_ampere_scudnn_128x64_relu_xregs", "some_unknown_kernel_name"]):
        b.kernel(name, launch_ts=i, kernel_ts=100 + 10 * i)
    load(con, b.write(tmp_path / "ops.json"))
    ops = dict(con.execute("SELECT k.name, o.op FROM kernels k JOIN kernel_ops o USING (trace_id, kernel_id)").fetchall())
    assert ops == {"vllm::rotary_embedding_kernel": "Rotary", "void at::native::embedding_kernel": "Embedding",
                   "_matmul_ogs_NNT_bf16_swiglu": "MoE GEMM+SwiGLU", "_matmul_ogs_NNT_bf16": "MoE GEMM",
                   "ncclDevKernel_AllReduce_Sum": "All-Reduce", "cudnn_ampere_scudnn_128x64_relu_xregs": "Convolution",
                   "some_unknown_kernel_name": "Other"}
    pattern = con.execute("SELECT pattern FROM kernel_ops o JOIN kernels k USING (trace_id, kernel_id) "
                          "WHERE k.name = 'some_unknown_kernel_name'").fetchone()[0]
    assert pattern == "some_unknown_kernel_name"


@pytest.mark.parametrize("bad, message", [
    ("1,any,regex,(unclosed,Attention,x,\n", "line 2: bad regular expression"),
    ("1,any,glob,foo,Attention,x,\n", "line 2: match 'glob' is not one of prefix, contains, regex"),
    ("x,any,prefix,foo,Attention,x,\n", "line 2: priority 'x' is not an integer"),
    ("1,any,cpu_op,^x$,Dense GEMM,x,\n", "line 2: a cpu_op rule needs covers"),
    ("1,any,prefix,x,Dense GEMM,x,Other\n", "line 2: covers is for context rules"),
    ("1,any,annotation,(open,Broadcast,x,*\n", "line 2: bad regular expression"),
])
def test_bad_rules_file_is_refused(con, tmp_path, bad, message):
    from tracedb import rules
    from tracedb.errors import TracedbError

    path = tmp_path / "mine.csv"
    path.write_text("priority,platform,match,pattern,op,label,covers\n" + bad)
    before = con.execute("SELECT count(*) FROM kernel_rules").fetchone()[0]
    with pytest.raises(TracedbError, match=message):
        rules.add_file(con, path)
    assert con.execute("SELECT count(*) FROM kernel_rules").fetchone()[0] == before
