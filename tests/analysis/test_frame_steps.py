"""Steps and phases of traces recorded without step annotations, found from the model's Python
frames (vLLM's execute_model, SGLang's ModelRunner, a model class's forward), on traces built
here where the right answer is known."""

from __future__ import annotations

import gzip
import json
import re

import pytest

from conftest import FIXTURES, load, written_out_agrees
from tracedb.testing import KinetoTrace

EXECUTE = "vllm/v1/worker/gpu_model_runner.py(3380): execute_model"
LLAMA = "vllm/model_executor/models/llama.py(581): forward"
HF_MODEL = "transformers/models/llama/modeling_llama.py({line}): forward"
GEMM, ATTENTION, NORM = "nvjet_tst_128x64_64x4_1x2_h_bz_TNT", "flash_fwd_kernel", "rms_norm_kernel"


class ServingTrace(KinetoTrace):
    """Model steps of a serving engine: frames around eager launches or graph replays."""

    def __init__(self):
        super().__init__()
        self.ext = 0

    def eager_layer(self, ts, gpu_ts, dims=None):
        """One layer launched op by op: norm, a GEMM (by aten::linear, with its Input Dims when
        given), attention."""
        self.ext += 1
        self.kernel(NORM, launch_ts=ts, kernel_ts=gpu_ts)
        args = {"External id": self.ext, **({"Input Dims": dims} if dims else {})}
        self.x("cpu_op", "aten::linear", ts + 3, 6, **args)
        self.kernel(GEMM, launch_ts=ts + 4, kernel_ts=gpu_ts + 10, ext=self.ext)
        self.kernel(ATTENTION, launch_ts=ts + 10, kernel_ts=gpu_ts + 20)

    def replayed_layers(self, ts, gpu_ts, layers):
        """Layers run by one CUDA graph launch: every kernel shares the launch's correlation."""
        self.graph_launch(ts, [(name, gpu_ts + 30 * i + 10 * j)
                               for i in range(layers) for j, name in enumerate((NORM, GEMM, ATTENTION))])


def steps(con):
    return con.execute("SELECT ordinal, kernels, tokens, seq_len, graph_replay, phase, phase_source "
                       "FROM frame_steps ORDER BY ordinal").fetchall()


def kernel_phases(con):
    return con.execute(
        "SELECT p.iteration, p.phase, p.phase_source, count(*), max(l.layer) + 1 "
        "FROM kernel_phases p JOIN kernel_layers l USING (trace_id, kernel_id) "
        "GROUP BY ALL ORDER BY 1").fetchall()


def vllm_trace(dims: bool) -> ServingTrace:
    """An eager prefill of 512 tokens and two decode steps replayed from a graph, two layers each."""
    b = ServingTrace()
    b.frame(EXECUTE, 1000, 900)
    b.frame(LLAMA, 1010, 800)
    for i in range(2):
        b.eager_layer(1020 + 100 * i, 10_000 + 100 * i, [[512, 4096], [4096, 4096], []] if dims else None)
    for step in range(2):
        b.frame(EXECUTE, 3000 + 1000 * step, 500)
        b.frame(LLAMA, 3010 + 1000 * step, 100)
        b.replayed_layers(3050 + 1000 * step, 20_000 + 1000 * step, layers=2)
    return b


@pytest.mark.parametrize("dims", [True, False], ids=["with-input-dims", "without-input-dims"])
def test_eager_prefill_and_graph_replayed_decode(con, tmp_path, dims):
    load(con, vllm_trace(dims).write(tmp_path / "vllm.json"))
    tokens = 512 if dims else None
    assert steps(con) == [(1, 6, tokens, None, False, "prefill", "graph replay"),
                          (2, 6, None, None, True, "decode", "graph replay"),
                          (3, 6, None, None, True, "decode", "graph replay")]
    # every kernel takes its step's phase, and each step is a forward pass of two layers
    assert kernel_phases(con) == [(1, "prefill", "graph replay", 6, 2), (2, "decode", "graph replay", 6, 2),
                                  (3, "decode", "graph replay", 6, 2)]
    (annotation,) = con.execute("SELECT DISTINCT annotation FROM kernel_phases WHERE iteration = 1").fetchone()
    assert annotation == EXECUTE


def test_sequence_length_of_eager_steps_tells_prefill_from_decode(con, tmp_path):
    """HF generate: every step is the model class's forward (its layers' forwards nest in it),
    run eagerly; the GEMM inputs [batch, sequence, hidden] hold the prompt, then one token."""
    b = ServingTrace()
    for step, seq in enumerate((7, 1, 1)):
        t = 1000 + 1000 * step
        b.frame(HF_MODEL.format(line=1150), t, 500)
        b.frame(HF_MODEL.format(line=700), t + 5, 400)     # LlamaModel.forward
        for i in range(2):
            b.frame(HF_MODEL.format(line=300), t + 10 + 100 * i, 90)     # LlamaDecoderLayer.forward
            b.eager_layer(t + 20 + 100 * i, 10_000 + 1000 * step + 100 * i, [[4, seq, 4096], [4096, 4096], []])
    load(con, b.write(tmp_path / "hf.json"))
    assert steps(con) == [(1, 6, 28, 7, False, "prefill", "tokens"),
                          (2, 6, 4, 1, False, "decode", "tokens"),
                          (3, 6, 4, 1, False, "decode", "tokens")]
    assert [r[:3] for r in kernel_phases(con)] == [(1, "prefill", "tokens"), (2, "decode", "tokens"),
                                                   (3, "decode", "tokens")]


def test_sglang_model_runner_frames_name_the_phase(con, tmp_path):
    runner = "/sgl-workspace/sglang/python/sglang/srt/model_executor/model_runner.py({line}): {fn}"
    b = ServingTrace()
    for step, fn in enumerate(("forward_extend", "forward_decode", "forward_idle")):
        t = 1000 + 1000 * step
        b.frame(runner.format(line=2100, fn="forward"), t, 500)
        b.frame(runner.format(line=2000, fn=fn), t + 5, 400)
        # an attention backend's forward_decode is a layer's, not a step's
        b.frame("/sgl-workspace/sglang/python/sglang/srt/layers/attention/aiter_backend.py(2435): forward_decode",
                t + 10, 50)
        b.eager_layer(t + 20, 10_000 + 1000 * step)
    load(con, b.write(tmp_path / "sglang.json"))
    assert [(r[0], r[5], r[6]) for r in steps(con)] == [(1, "prefill", "frame"), (2, "decode", "frame"),
                                                          (3, "none", "frame")]


def test_no_decode_step_means_no_phase(con, tmp_path):
    """An encoder's forwards (or a prefill-only run) all hold long sequences and never decode:
    they are steps, with no phase; flattened tokens alone decide nothing either."""
    b = ServingTrace()
    for step in range(2):
        b.frame("transformers/models/bert/modeling_bert.py(1000): forward", 1000 + 1000 * step, 500)
        b.eager_layer(1020 + 1000 * step, 10_000 + 1000 * step, [[8, 128, 768], [768, 768], []])
    for step in range(2):
        b.frame(EXECUTE, 5000 + 1000 * step, 500)
        b.eager_layer(5020 + 1000 * step, 20_000 + 1000 * step, [[2048 // (step + 1), 4096], [4096, 4096], []])
    load(con, b.write(tmp_path / "encoder.json"))
    assert [(r[0], r[2], r[3], r[5], r[6]) for r in steps(con)] == [
        (1, 1024, 128, "none", None), (2, 1024, 128, "none", None),
        (3, 2048, None, "none", None), (4, 1024, None, "none", None)]


def test_step_annotations_win_over_frames(con, tmp_path):
    b = vllm_trace(dims=True)
    b.x("user_annotation", "ProfilerStep#3", 900, 10_000)
    load(con, b.write(tmp_path / "annotated.json"))
    assert steps(con) == []
    assert con.execute("SELECT DISTINCT iteration, phase, phase_source, annotation FROM kernel_phases").fetchall() \
        == [(3, "none", None, "ProfilerStep#3")]


def test_a_users_step_frame_pattern(con, tmp_path):
    rules = tmp_path / "my_steps.csv"
    rules.write_text("priority,framework,regex,phase\n1,mine,serve\\.py\\(\\d+\\): run_prefill$,prefill\n")
    from tracedb import rules as rules_module
    rules_module.add_file(con, rules)
    b = ServingTrace()
    b.frame("app/serve.py(10): run_prefill", 1000, 500)
    b.eager_layer(1020, 10_000)
    load(con, b.write(tmp_path / "mine.json"))
    assert [(r[0], r[5], r[6]) for r in steps(con)] == [(1, "prefill", "frame")]


def test_vllm_v1_piecewise_graph_decodes_with_eager_attention(con, tmp_path):
    """vLLM v1 replays each decode step as graph pieces with the attention launched eagerly between
    them, and runs the prefill eagerly: mostly-graph steps are decodes, the eager step a prefill."""
    b = ServingTrace()
    b.frame(EXECUTE, 1000, 900)   # the prefill: every kernel launched on its own
    for i in range(3):
        b.eager_layer(1020 + 100 * i, 10_000 + 100 * i)
    for step in range(2):
        t, g = 2000 + 1000 * step, 20_000 + 1000 * step
        b.frame(EXECUTE, t, 900)
        for layer in range(3):  # a piece (norm, GEMM) from a graph, then attention on its own
            b.graph_launch(t + 10 + 100 * layer, [(NORM, g + 100 * layer), (GEMM, g + 100 * layer + 10)])
            b.kernel(ATTENTION, launch_ts=t + 60 + 100 * layer, kernel_ts=g + 100 * layer + 40)
    load(con, b.write(tmp_path / "piecewise.json"))
    assert [(r[0], r[1], r[4], r[5], r[6]) for r in steps(con)] == [
        (1, 9, False, "prefill", "graph replay"), (2, 9, True, "decode", "graph replay"),
        (3, 9, True, "decode", "graph replay")]


def test_a_graph_replay_outside_a_serving_engine_is_no_decode(con, tmp_path):
    """A diffusion transformer's forward replayed from a graph (torch.compile's reduce-overhead)
    decodes nothing: its steps stay without phase; an idle serving step (no kernels) is no prefill."""
    b = ServingTrace()
    for step in range(2):
        b.frame("diffusers/models/transformers/transformer_flux.py(400): forward", 1000 + 1000 * step, 500)
        b.replayed_layers(1010 + 1000 * step, 10_000 + 1000 * step, layers=2)
    load(con, b.write(tmp_path / "flux.json"))
    assert [(r[0], r[4], r[5], r[6]) for r in steps(con)] == [(1, False, "none", None), (2, False, "none", None)]


def test_an_idle_step_beside_replayed_decodes_is_not_a_prefill(con, tmp_path):
    b = vllm_trace(dims=False)
    b.frame(EXECUTE, 9000, 100)   # a step that launched nothing
    load(con, b.write(tmp_path / "idle.json"))
    assert [(r[0], r[1], r[5], r[6]) for r in steps(con)][-1] == (4, 0, "none", None)


def test_hostile_input_dims_decide_nothing_and_break_nothing(con, tmp_path):
    """Dims whose product leaves BIGINT, or that are negative, are no shape: the load goes on and
    the step's tokens come from the GEMMs whose dims make sense."""
    b = ServingTrace()
    b.frame(EXECUTE, 1000, 900)
    b.eager_layer(1020, 10_000, [[2 ** 40, 2 ** 40, 4096], [4096, 4096], []])
    b.eager_layer(1120, 10_100, [[-5, 4096], [4096, 4096], []])
    b.eager_layer(1220, 10_200, [[9223372036854775807, 4096], [4096, 4096], []])
    b.eager_layer(1320, 10_300, [[64, 4096], [4096, 4096], []])
    assert load(con, b.write(tmp_path / "hostile.json")).status == "loaded"
    assert [(r[1], r[2]) for r in steps(con)] == [(12, 64)]


def test_a_bad_step_frame_patterns_file_is_refused_and_changes_nothing(con, tmp_path):
    from tracedb import rules as rules_module
    from tracedb.errors import TracedbError

    before = con.execute("SELECT * FROM step_frame_patterns ORDER BY ALL").fetchall()
    for body, problem in [("1,mine,execute_model(,\n", "bad regular expression"),
                          ("1,mine,execute_model,warmup\n", "phase 'warmup' is not one of"),
                          ("x,mine,execute_model,\n", "priority 'x' is not an integer"),
                          ("1,,execute_model,\n", "framework is empty")]:
        path = tmp_path / "steps.csv"
        path.write_text("priority,framework,regex,phase\n" + body)
        with pytest.raises(TracedbError, match=problem):
            rules_module.add_file(con, path)
    assert con.execute("SELECT * FROM step_frame_patterns ORDER BY ALL").fetchall() == before


@pytest.mark.parametrize("fixture", ["mi300_vllm_decode_hipgraph", "mi300x_sglang_qwen3-8b_decode"])
def test_frames_agree_with_the_phase_annotations(con, tmp_path, fixture):
    """Real serving traces with step annotations, loaded again without them: the steps found from
    their frames take the phase the annotations name (both are graph-replayed decodes)."""
    path = FIXTURES / "kineto" / f"{fixture}.json.gz"
    trace = json.loads(gzip.decompress(path.read_bytes()))
    annotated = load(con, path)
    want = con.execute("SELECT DISTINCT phase FROM kernel_facts WHERE trace_id = ?", [annotated.trace_id]).fetchall()
    trace["traceEvents"] = [e for e in trace["traceEvents"]
                            if not re.search(r"^(execute_|step\[|ProfilerStep)", str(e.get("name", "")))]
    bare = load(con, _write(tmp_path / "bare.json", trace))
    got = con.execute("SELECT DISTINCT phase, phase_source FROM kernel_facts WHERE trace_id = ? AND iteration IS NOT NULL",
                      [bare.trace_id]).fetchall()
    assert want == [("decode",)] and got == [("decode", "graph replay")]


def _write(path, trace):
    path.write_text(json.dumps(trace))
    return path


def test_step_frame_patterns_written_out_match_the_patterns_table(con, tmp_path):
    """_step_frame_rule_hits, rewritten with each step frame pattern as a constant, gives what
    matching the patterns table row by row gives, for every fixture frame name, and follows a
    user's patterns file."""
    for trace in ("mi300_vllm_decode_hipgraph", "mi300x_sglang_qwen3-8b_decode", "h100_bert-small"):
        load(con, FIXTURES / "kineto" / f"{trace}.json.gz")
    by_table = ("SELECT coalesce(list(p.rank ORDER BY p.rank), []) FROM _step_frame_patterns_ordered p "
                "WHERE regexp_matches(n.name, p.regex)")
    query = (f"SELECT n.name, _step_frame_rule_hits(n.name) AS fast, ({by_table}) AS slow "
             "FROM (SELECT DISTINCT name FROM python_functions) n")
    before, after = written_out_agrees(con, query, [], tmp_path / "frames.csv",
                                       "priority,framework,regex,phase\n1,mine,: forward$,\n")
    assert len(before) > 100 and any(r[1] for r in before)
    assert any(1 in r[1] for r in after)
