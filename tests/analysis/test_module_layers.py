"""Layers and forward passes from the model's own module frames (nn.Module: BertLayer_3), on traces
built here where the right layers are known, and on the real traces that record module frames."""

from __future__ import annotations


import pytest

from conftest import CORPUS, FIXTURES, load
from tracedb.testing import KinetoTrace

GEMM = {"nvidia": "nvjet_tst_128x64_64x4_1x2_h_bz_TNT", "amd": "Cijk_Alik_Bljk_BBS_BH_MT64x64x64"}
ADD = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16> >"
HEAD = "void at::native::reduce_kernel<512, 1>"


class ModelTrace(KinetoTrace):
    """Kernels launched inside module frames, laid out call by call; times in µs."""

    def __init__(self, flavour="nvidia"):
        super().__init__(flavour)
        self.t = 0
        self.kernel_t = 1_000_000  # kernels run later on the GPU, in launch order

    def module(self, name, body):
        """A module frame around whatever body launches (body: a callable)."""
        start = self.t
        self.t += 1
        body()
        self.t += 1
        self.frame(f"nn.Module: {name}", start, self.t - start)

    def launch(self, name):
        self.kernel(name, self.t, self.kernel_t, dur=5)
        self.t += 10
        self.kernel_t += 10


def layer(b: ModelTrace, name: str, flavour: str):
    def body():
        b.module(f"LayerNorm_{name}", lambda: b.launch(ADD))  # a module inside the layer: no layer
        b.launch(GEMM[flavour])
        b.launch(ADD)
    b.module(name, body)


def owl_like(path, flavour="nvidia", calls=3):
    """`calls` calls of a detector: a vision encoder of 4 layers, a text encoder of 2 (one layer class
    for both, numbered 0-5 as PyTorch numbers a class's instances), a patch embedding block called
    once per call (not a layer), a head kernel outside the layers; and one kernel outside the model."""
    b = ModelTrace(flavour)
    b.launch(ADD)  # before the model: outside every pass

    def model():
        b.module("PatchEmbedBlock_0", lambda: b.launch(ADD))
        b.module("Owlv2Encoder_0", lambda: [layer(b, f"Owlv2EncoderLayer_{i}", flavour) for i in range(4)])
        b.module("Owlv2Encoder_1", lambda: [layer(b, f"Owlv2EncoderLayer_{i}", flavour) for i in range(4, 6)])
        b.launch(HEAD)

    for _ in range(calls):
        b.module("Owlv2ForObjectDetection_0", model)
        b.t += 100
    return b.write(path)


def facts(con, trace_id):
    return con.execute("SELECT k.name, f.forward_pass, f.layer, f.position, f.layer_source, f.layer_module "
                       "FROM kernel_facts f JOIN kernels k USING (trace_id, kernel_id) WHERE trace_id = ? "
                       "ORDER BY k.ts_ns", [trace_id]).fetchall()


def test_layers_and_passes_come_from_module_frames(con, tmp_path):
    trace = load(con, owl_like(tmp_path / "owl.json"))
    rows = facts(con, trace.trace_id)
    assert rows[0][1:] == (None, None, None, None, None)  # launched before the model ran
    per_call = 1 + 6 * 3 + 1  # the patch embedding, six layers of three kernels, the head
    assert len(rows) == 1 + 3 * per_call
    for call in range(3):
        kernels = rows[1 + call * per_call:1 + (call + 1) * per_call]
        assert {r[1] for r in kernels} == {call}  # one forward pass per call of the outermost module
        assert kernels[0][2] is None and kernels[-1][2] is None  # patch embedding, head: outside layers
        layered = kernels[1:-1]
        assert [(r[2], r[3], r[4], r[5]) for r in layered] == [
            (n, p, "module", f"Owlv2EncoderLayer_{n}") for n in range(6) for p in range(3)]
    layers = con.execute("SELECT count(DISTINCT (forward_pass, layer)) FROM kernel_layers WHERE trace_id = ? "
                         "AND layer IS NOT NULL", [trace.trace_id]).fetchone()[0]
    assert layers == 18


def detector_steps(path, steps=1, calls=5, once_per_step=False, sampler=False):
    """ProfilerSteps each running the detector `calls` times (owl_like's model: six layers of three
    kernels per call, a patch embedding and a head), and one kernel outside the model per step; with
    once_per_step, one call per step."""
    b = ModelTrace()

    def model():
        b.module("PatchEmbedBlock_0", lambda: b.launch(ADD))
        b.module("Owlv2Encoder_0", lambda: [layer(b, f"Owlv2EncoderLayer_{i}", "nvidia") for i in range(6)])
        b.launch(HEAD)

    for step in range(steps):
        start = b.t
        b.launch(ADD)  # preprocessing, outside the model
        for _ in range(1 if once_per_step else calls):
            b.module("Owlv2ForObjectDetection_0", model)
            b.t += 100
        if sampler:  # a module of its own called after the model, as vLLM's sampler is
            b.module("Sampler_0", lambda: b.launch(HEAD))
        b.x("user_annotation", f"ProfilerStep#{step + 4}", start - 1, b.t - start + 2)
        b.t += 1000
    return b.write(path)


@pytest.mark.parametrize("steps", [1, 2])
def test_a_step_running_the_model_several_times_has_a_pass_per_call(con, tmp_path, steps):
    """An object detector called five times in one ProfilerStep: five passes of six layers, not one
    pass of thirty; over two steps, ten passes numbered in time order."""
    trace = load(con, detector_steps(tmp_path / "five.json", steps=steps))
    rows = facts(con, trace.trace_id)
    per_call = 1 + 6 * 3 + 1
    assert len(rows) == steps * (1 + 5 * per_call)
    for step in range(steps):
        block = rows[step * (1 + 5 * per_call):(step + 1) * (1 + 5 * per_call)]
        assert block[0][1:3] == (None, None)  # the preprocessing kernel: in no pass
        for call in range(5):
            kernels = block[1 + call * per_call:1 + (call + 1) * per_call]
            assert {r[1] for r in kernels} == {step * 5 + call}
            assert [r[2] for r in kernels] == [None] + [n for n in range(6) for _ in range(3)] + [None]
    layers = con.execute("SELECT forward_pass, count(DISTINCT layer) FROM kernel_layers WHERE trace_id = ? "
                         "AND layer IS NOT NULL GROUP BY ALL ORDER BY 1", [trace.trace_id]).fetchall()
    assert layers == [(p, 6) for p in range(5 * steps)]


@pytest.mark.parametrize("sampler", [False, True])
def test_a_step_running_the_model_once_keeps_its_iteration_as_its_pass(con, tmp_path, sampler):
    """Once per step, with or without a sampler module beside the model: the step is the pass."""
    trace = load(con, detector_steps(tmp_path / "once.json", steps=2, once_per_step=True, sampler=sampler))
    passes = con.execute("SELECT DISTINCT f.forward_pass, p.iteration FROM kernel_facts f JOIN kernel_phases p "
                         "USING (trace_id, kernel_id) WHERE trace_id = ? ORDER BY 1", [trace.trace_id]).fetchall()
    assert passes == [(4, 4), (5, 5)]  # the steps' own numbers, every kernel of a step in its pass


def test_nested_blocks_take_the_outermost(con, tmp_path):
    """A TransformerBlock holding an AttentionBlock and an MLPBlock (both named like layers, both
    repeating) is one layer."""
    b = ModelTrace()

    def block(i):
        b.module(f"AttentionBlock_{i}", lambda: b.launch(GEMM["nvidia"]))
        b.module(f"MLPBlock_{i}", lambda: b.launch(ADD))

    b.module("Transformer_0", lambda: [b.module(f"TransformerBlock_{i}", lambda i=i: block(i)) for i in range(3)])
    trace = load(con, b.write(tmp_path / "nested.json"))
    assert [(r[2], r[3], r[5]) for r in facts(con, trace.trace_id)] == [
        (i, p, f"TransformerBlock_{i}") for i in range(3) for p in range(2)]


def test_a_layer_module_called_again_is_a_layer_each_time(con, tmp_path):
    """ALBERT shares one layer's weights: AlbertLayer_0 called four times is four layers."""
    b = ModelTrace()
    b.module("AlbertModel_0", lambda: [layer(b, "AlbertLayer_0", "nvidia") for _ in range(4)])
    trace = load(con, b.write(tmp_path / "albert.json"))
    assert [r[2] for r in facts(con, trace.trace_id)] == [n for n in range(4) for _ in range(3)]


def test_module_layers_align_across_vendors(con, tmp_path):
    load(con, owl_like(tmp_path / "nv.json"), name="nv")
    load(con, owl_like(tmp_path / "amd.json", "amd"), name="amd")
    layers = con.execute("SELECT layer, a_passes, b_passes, a_kernels, b_kernels "
                         "FROM alignment_layers('nv', 'amd', NULL) ORDER BY layer").fetchall()
    assert layers == [(n, 3, 3, 9, 9) for n in range(6)]
    pairs = con.execute("SELECT count(*), count(*) FILTER (a_kernels = b_kernels) "
                        "FROM alignment_pairs('nv', 'amd', NULL)").fetchone()
    assert pairs[0] == pairs[1] == 6 * 3  # per layer: the GEMM, the first add, the second add


def test_without_module_frames_markers_still_decide(con):
    trace = load(con, FIXTURES / "kineto" / "mi300x_sglang_qwen3-8b_decode.json.gz")
    sources = con.execute("SELECT DISTINCT layer_source FROM kernel_facts WHERE trace_id = ? AND layer IS NOT NULL",
                          [trace.trace_id]).fetchall()
    assert sources == [("marker",)]


@pytest.mark.parametrize("name, layers, module", [
    ("h100_bert-small.json.gz", 4, "BertLayer"),
    ("mi300_bert-small.json.gz", 4, "BertLayer"),
])
def test_real_traces_with_module_frames(con, name, layers, module):
    trace = load(con, FIXTURES / "kineto" / name)
    got = con.execute("SELECT count(DISTINCT (forward_pass, layer)), min(layer_source), max(layer_source), "
                      "count(DISTINCT regexp_extract(layer_module, '^(.*)_[0-9]+$', 1)), "
                      "min(regexp_extract(layer_module, '^(.*)_[0-9]+$', 1)) "
                      "FROM kernel_facts WHERE trace_id = ? AND layer IS NOT NULL", [trace.trace_id]).fetchone()
    assert got == (layers, "module", "module", 1, module)


@pytest.mark.skipif(not CORPUS.is_dir(), reason="the corpus is not here")
@pytest.mark.parametrize("name, layers, module", [
    ("h100_timesformer.json.gz", 12, "TimesformerLayer"),
    ("mi300_timesformer.json.gz", 12, "TimesformerLayer"),
    ("h100_falconsai-vit.json.gz", 12, "ViTLayer"),
])
def test_corpus_traces_with_module_frames(con, name, layers, module):
    trace = load(con, CORPUS / name)
    got = con.execute("SELECT count(DISTINCT (forward_pass, layer)), min(layer_source), "
                      "min(regexp_extract(layer_module, '^(.*)_[0-9]+$', 1)) "
                      "FROM kernel_facts WHERE trace_id = ? AND layer IS NOT NULL", [trace.trace_id]).fetchone()
    assert got == (layers, "module", module)


def test_a_stray_module_frame_leaves_the_markers_to_decide(con, tmp_path):
    """No steps, no model module frame: two layers of attention launched outside any module, and a
    sampler module called once after them. The sampler does not make the trace's passes: the
    marker rule still finds the two layers."""
    b = ModelTrace()
    for _ in range(2):
        b.launch(GEMM["nvidia"])
        b.launch("void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4> >(flash::Flash_fwd_params)")
        b.launch(ADD)
    b.module("Sampler_0", lambda: b.launch(HEAD))
    trace = load(con, b.write(tmp_path / "stray.json"))
    got = con.execute("SELECT count(DISTINCT layer) FILTER (layer IS NOT NULL), min(layer_source), "
                      "count(DISTINCT forward_pass) FROM kernel_facts WHERE trace_id = ?", [trace.trace_id]).fetchone()
    assert got == (2, "marker", 1)
