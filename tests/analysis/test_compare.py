"""Two-trace comparison (compare, alignment, fusion, same-kernels) on pairs built here, where every
difference is planted and nothing else differs, and on the fixture pair h100/mi300 bert-small."""

from __future__ import annotations

import gzip
import json
from collections import Counter

import pytest

from builders import A_LAYER, A_OPS, B_LAYER, B_OPS, LAYERS, build, build_steps
from conftest import FIXTURES, database_of, load, read_only, run_cli
from tracedb import testing



@pytest.fixture
def planted(con, tmp_path):
    load(con, build(tmp_path / "nv.json", A_LAYER))
    load(con, build(tmp_path / "amd.json", B_LAYER, platform="AMD"))
    return con


def rows(con, sql, *params):
    cur = con.execute(sql, list(params))
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]


def test_planted_kernels_are_classified_as_intended(planted):
    got = planted.execute("SELECT t.name, o.op FROM kernels k JOIN traces t USING (trace_id) "
                          "JOIN kernel_ops o USING (trace_id, kernel_id) ORDER BY k.trace_id, k.ts_ns").fetchall()
    assert [op for name, op in got if name == "nv"] == A_OPS * LAYERS
    assert [op for name, op in got if name == "amd"] == B_OPS * LAYERS


def test_stored_comparison_keys(planted):
    # occurrence of each operation within the layer; a fused kernel counts for its parts
    got = planted.execute("SELECT t.name, f.layer, f.occurrence, f.prev_op FROM kernel_facts f JOIN kernels k "
                          "USING (trace_id, kernel_id) JOIN traces t USING (trace_id) "
                          "ORDER BY k.trace_id, k.ts_ns").fetchall()
    nv = [r for r in got if r[0] == "nv"]
    amd = [r for r in got if r[0] == "amd"]
    assert [r[2] for r in nv[:8]] == [0, 0, 0, 1, 0, 1, 2, 0] and [r[2] for r in nv[8:16]] == [0, 0, 0, 1, 0, 1, 2, 0]
    assert [r[2] for r in amd[:5]] == [0, 0, 1, 0, 0]
    assert [r[3] for r in nv[:9]] == [None] + A_OPS
    assert [r[3] for r in amd[:6]] == [None] + B_OPS


def test_fusion_finds_exactly_the_planted_fusions(planted):
    found = rows(planted, "SELECT * FROM fusion_findings('nv', 'amd', NULL)")
    assert [(f["detector"], f["fused_side"], f["fused_op"], f["unfused_side"], f["unfused_sequence"])
            for f in found] == [
        ("explicit", "amd", "RMSNorm+GEMM", "nv", "RMSNorm + Dense GEMM"),
        ("count", "amd", "Elementwise", "nv", "Elementwise"),
    ]
    explicit, count = found
    assert explicit["sample_kernel"] == "_rmsnorm_gemm_fused_kernel_bf16"
    assert (explicit["fused_count"], explicit["unfused_count"], explicit["pattern_count"]) == (20, 60, 20)
    assert explicit["confidence"] == 1.0
    assert explicit["evidence"] == "amd fuses RMSNorm + Dense GEMM into RMSNorm+GEMM (20 calls)"
    # time in RMSNorm, Dense GEMM and RMSNorm+GEMM: nv (4 + 20 + 10) µs, amd (22 + 12) µs per layer
    assert explicit["unfused_side_ns"] == 20 * 34_000 and explicit["fused_side_ns"] == 20 * 34_000
    assert explicit["at_stake_ns"] == 0
    assert (count["fused_count"], count["unfused_count"], count["pattern_count"]) == (20, 60, 40)
    assert count["confidence"] == pytest.approx(40 / 60)
    assert count["evidence"] == "nv calls Elementwise 3.0x more (60 vs 20), amd likely fuses"
    assert count["at_stake_ns"] == 20 * (3 * 2_000 - 3_000)
    summary = rows(planted, "SELECT side, trace, platform, kernels, fuses, at_stake_ns "
                            "FROM fusion_summary('nv', 'amd', NULL)")
    assert summary == [
        {"side": "A", "trace": "nv", "platform": "NVIDIA", "kernels": 160, "fuses": 0, "at_stake_ns": 0},
        {"side": "B", "trace": "amd", "platform": "AMD", "kernels": 100, "fuses": 2, "at_stake_ns": 60_000},
    ]


def test_fusion_is_symmetric_in_the_order_of_the_traces(planted):
    forward = rows(planted, "SELECT detector, fused_side, fused_op, at_stake_ns FROM fusion_findings('nv', 'amd', NULL)")
    backward = rows(planted, "SELECT detector, fused_side, fused_op, at_stake_ns FROM fusion_findings('amd', 'nv', NULL)")
    assert forward == backward


def epilogue_pair(con, tmp_path, fused_gemm_us: int) -> list[dict]:
    """A runs every GEMM (20 µs) followed by a separate activation (5 µs); B's GEMM fuses it
    (cuBLASLt epilogue) and takes fused_gemm_us. Six layers each; the fusion findings of A vs B."""
    gemm_act = [("nvjet_tst_128x64_64x4_1x1_v_bz_TNT", 20), ("void at::native::silu_kernel<float>", 5),
                ("void flash::flash_fwd_kernel<traits>", 30)]
    gemm = [("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT64x64x64", fused_gemm_us),
            ("kernel_unified_attention_2d", 30)]
    load(con, build(tmp_path / "a.json", gemm_act, layers=6))
    load(con, build(tmp_path / "b.json", gemm, layers=6, platform="AMD"))
    return rows(con, "SELECT * FROM fusion_findings('a', 'b', NULL)")


def test_sequence_detector_finds_a_fused_epilogue(con, tmp_path):
    found = epilogue_pair(con, tmp_path, fused_gemm_us=22)
    assert len(found) == 1
    f = found[0]
    assert (f["detector"], f["fused_side"], f["fused_op"], f["unfused_side"], f["unfused_sequence"]) == (
        "sequence", "b", "Dense GEMM", "a", "Dense GEMM → Activation")
    assert (f["fused_count"], f["unfused_count"], f["pattern_count"], f["confidence"]) == (6, 12, 6, 1.0)
    assert f["unfused_kernel"] == "void at::native::silu_kernel<float>"
    assert f["evidence"] == "a runs Dense GEMM+Activation separately, b fuses into Dense GEMM"
    assert f["at_stake_ns"] == 6 * (20_000 + 5_000 - 22_000)


def test_time_at_stake_is_never_negative(con, tmp_path):
    # B's fused GEMM is slower than A's GEMM and activation together: the fusion saves B nothing,
    # and no time is at stake
    f = epilogue_pair(con, tmp_path, fused_gemm_us=40)[0]
    assert (f["unfused_side_ns"], f["fused_side_ns"]) == (6 * 25_000, 6 * 40_000)
    assert f["at_stake_ns"] == 0
    assert rows(con, "SELECT at_stake_ns FROM fusion_summary('a', 'b', NULL)") == [{"at_stake_ns": 0}] * 2


def test_phase_filter_compares_only_that_phase(con, tmp_path):
    # A's decode steps run a separate activation after each GEMM, its prefill step does not; B
    # never does. The sequence shows in decode (and over all phases), not in prefill.
    prefill, decode = "execute_context_1(512)_generation_0(0)", "execute_context_0(0)_generation_1(8)"
    attn = ("void flash::flash_fwd_kernel<traits>", 30)
    act = [("nvjet_tst_128x64", 20), ("void at::native::silu_kernel<float>", 5), attn]
    plain = [("nvjet_tst_128x64", 25), attn]
    b_layer = [("Cijk_gemm_b", 22), ("kernel_unified_attention_2d", 30)]
    load(con, build_steps(tmp_path / "a.json", [(prefill, plain, 6), (decode, act, 6), (decode, act, 6)]))
    load(con, build_steps(tmp_path / "b.json", [(prefill, b_layer, 6), (decode, b_layer, 6), (decode, b_layer, 6)],
                          platform="AMD"))
    def findings(phase):
        return [(f["detector"], f["fused_side"], f["unfused_sequence"], f["pattern_count"]) for f in
                rows(con, "SELECT * FROM fusion_findings('a', 'b', ?)", phase)]
    assert findings(None) == [("sequence", "b", "Dense GEMM → Activation", 12)]
    assert findings("decode") == [("sequence", "b", "Dense GEMM → Activation", 12)]
    assert findings("prefill") == []
    ops = {r["op"]: (r["a_kernels"], r["b_kernels"]) for r in
           rows(con, "SELECT * FROM compare_ops('a', 'b', 'prefill')")}
    assert ops == {"Dense GEMM": (6, 6), "Attention": (6, 6)}
    layers = rows(con, "SELECT layer, a_passes, b_passes FROM alignment_layers('a', 'b', 'decode') ORDER BY layer")
    assert layers == [{"layer": n, "a_passes": 2, "b_passes": 2} for n in range(6)]


def test_phase_filter_takes_predecessors_within_the_phase(con, tmp_path):
    # decode runs U after every GEMM but its first U follows the prefill step's last GEMM: over the
    # whole trace 5 of 5 U follow a GEMM (a finding); within decode 4 of 5 (80 %, not more)
    prefill, decode = "execute_context_1(512)_generation_0(0)", "execute_context_0(0)_generation_1(8)"
    gemm, u = ("nvjet_tst_128x64", 20), ("void at::native::silu_kernel<float>", 5)
    load(con, build_steps(tmp_path / "a.json", [(prefill, [gemm], 6), (decode, [u, gemm], 5)]))
    load(con, build_steps(tmp_path / "b.json", [(prefill, [("Cijk_gemm_b", 20)], 6), (decode, [("Cijk_gemm_b", 20)], 5)],
                          platform="AMD"))
    assert [f["confidence"] for f in rows(con, "SELECT confidence FROM fusion_findings('a', 'b', NULL)")] == [1.0]
    assert rows(con, "SELECT * FROM fusion_findings('a', 'b', 'decode')") == []


def test_sequence_detector_thresholds(con, tmp_path):
    # 4 occurrences are too few; an activation preceded by a GEMM only 4 times in 5 (80 %) is not
    # more than 80 %.
    few = [("nvjet_gemm_a", 20), ("void at::native::silu_kernel<float>", 5)]
    load(con, build(tmp_path / "few.json", few, layers=4))
    mixed = [("nvjet_gemm_a", 20), ("void at::native::silu_kernel<float>", 5)] * 4 + \
            [("void at::native::fill_kernel", 1), ("void at::native::silu_kernel<float>", 5)]
    load(con, build(tmp_path / "mixed.json", mixed, layers=1))
    load(con, build(tmp_path / "other.json", [("Cijk_gemm_b", 20), ("void at::native::fill_kernel", 1)], layers=4,
                    platform="AMD"))
    for trace in ("few", "mixed"):
        assert rows(con, "SELECT * FROM fusion_findings(?, 'other', NULL) WHERE detector = 'sequence'", trace) == []


def test_count_detector_thresholds(con, tmp_path):
    # 49 kernels together is too few; 1.4x is too small; 1.5x with 50 is enough
    def pair(name, a, b):
        load(con, build(tmp_path / f"{name}_a.json", [(f"void at::native::fill_kernel_{name}", 1)], layers=a))
        load(con, build(tmp_path / f"{name}_b.json", [(f"void at::native::fill_kernel_{name}_b", 1)], layers=b,
                        platform="AMD"))
        return rows(con, "SELECT fused_side, fused_count, pattern_count FROM fusion_findings(?, ?, NULL)",
                    f"{name}_a", f"{name}_b")
    assert pair("small", 30, 19) == []
    assert pair("even", 35, 25) == []
    assert pair("enough", 30, 20) == [{"fused_side": "enough_b", "fused_count": 20, "pattern_count": 10}]


def test_alignment_pairs_by_operation_occurrence(planted):
    pairs = rows(planted, "SELECT layer, op, occurrence, a_kernels, b_kernels, same_kernel, fusion_note "
                          "FROM alignment_pairs('nv', 'amd', NULL) ORDER BY layer, position, op, occurrence")
    by_layer = Counter(p["layer"] for p in pairs)
    assert sorted(by_layer) == list(range(LAYERS)) and set(by_layer.values()) == {9}
    layer0 = [(p["op"], p["occurrence"], p["a_kernels"], p["b_kernels"], p["same_kernel"], p["fusion_note"])
              for p in pairs if p["layer"] == 0]
    rms = A_LAYER[0][0]
    elementwise = A_LAYER[4][0]
    assert layer0 == [
        ("RMSNorm", 0, 1, 0, False, f"nv runs {rms}, amd may fuse it into another kernel"),
        ("RMSNorm+GEMM", 0, 0, 1, False, "amd fuses RMSNorm+GEMM into _rmsnorm_gemm_fused_kernel_bf16"),
        ("Dense GEMM", 0, 1, 0, False, None),  # a GEMM is never "fused away"
        ("Attention", 0, 1, 1, False, None),
        ("Dense GEMM", 1, 1, 1, False, None),  # A's second GEMM pairs with B's GEMM after the fused one
        ("Elementwise", 0, 1, 1, False, None),
        ("Elementwise", 1, 1, 0, False, f"nv runs {elementwise}, amd may fuse it into another kernel"),
        ("Elementwise", 2, 1, 0, False, f"nv runs {elementwise}, amd may fuse it into another kernel"),
        ("Softmax", 0, 1, 1, True, None),
    ]


def test_alignment_layers_and_counts_over_passes(con, tmp_path):
    load(con, build(tmp_path / "nv.json", A_LAYER, layers=3))
    load(con, build(tmp_path / "amd.json", B_LAYER, layers=4, platform="AMD"))
    layers = rows(con, "SELECT layer, status, a_passes, b_passes, a_kernels, b_kernels, a_total_ns, b_total_ns "
                       "FROM alignment_layers('nv', 'amd', NULL) ORDER BY layer")
    a_ns = sum(d for _, d in A_LAYER) * 1000
    b_ns = sum(d for _, d in B_LAYER) * 1000
    assert layers == [{"layer": i, "status": "similar", "a_passes": 1, "b_passes": 1, "a_kernels": 8, "b_kernels": 5,
                       "a_total_ns": a_ns, "b_total_ns": b_ns} for i in range(3)] + [
        {"layer": 3, "status": "only B", "a_passes": 0, "b_passes": 1, "a_kernels": 0, "b_kernels": 5,
         "a_total_ns": 0, "b_total_ns": b_ns}]


def test_alignment_count_imbalance_note(con, tmp_path):
    # A ran the same two layers in two forward passes, B in one: every place runs 2x as often in A
    # (the seed's 1.5x rule, which also applies to GEMM and attention); A against itself: no notes
    a = [("nvjet_gemm_a", 10), ("void flash::flash_fwd_kernel<t>", 10), ("void at::native::add_kernel_a", 2)]
    b = [("Cijk_gemm_b", 10), ("kernel_unified_attention_2d", 10), ("void at::native::add_kernel_b", 2)]
    load(con, build(tmp_path / "a.json", a, layers=2, passes=2))
    load(con, build(tmp_path / "b.json", b, layers=2))
    notes = rows(con, "SELECT layer, op, a_kernels, b_kernels, fusion_note FROM alignment_pairs('a', 'b', NULL) "
                      "ORDER BY layer, position")
    assert notes == [{"layer": layer, "op": op, "a_kernels": 2, "b_kernels": 1,
                      "fusion_note": f"a runs {name} 2.0x more → b fuses"}
                     for layer in (0, 1) for (name, _), op in zip(a, ["Dense GEMM", "Attention", "Elementwise"])]
    assert [r["a_passes"] for r in rows(con, "SELECT a_passes FROM alignment_layers('a', 'b', NULL)")] == [2, 2]
    same = rows(con, "SELECT same_kernel, fusion_note FROM alignment_pairs('a', 'a', NULL)")
    assert len(same) == 6 and all(r["same_kernel"] and r["fusion_note"] is None for r in same)


def test_compare_ops_groups(planted):
    got = {r["op"]: r for r in rows(planted, "SELECT * FROM compare_ops('nv', 'amd', NULL)")}
    assert set(got) == {"RMSNorm", "RMSNorm+GEMM", "Dense GEMM", "Attention", "Elementwise", "Softmax"}
    assert got["RMSNorm"]["status"] == "only A" and got["RMSNorm+GEMM"]["status"] == "only B"
    gemm = got["Dense GEMM"]
    assert (gemm["a_kernels"], gemm["b_kernels"], gemm["a_total_ns"], gemm["b_total_ns"]) == (40, 20, 600_000, 240_000)
    assert gemm["status"] == "A slower" and gemm["gap_ns"] == 360_000 and gemm["ratio"] == pytest.approx(15 / 12)
    assert got["Attention"]["status"] == "A faster" and got["Attention"]["ratio"] == pytest.approx(30 / 40)
    elementwise = got["Elementwise"]  # 3 x 2 µs against 3 µs per layer: A slower in total
    assert (elementwise["a_kernels"], elementwise["b_kernels"], elementwise["status"]) == (60, 20, "A slower")
    assert got["Softmax"]["a_top_kernels"] == "triton_per_fused__softmax_0 (100%)"
    assert got["Dense GEMM"]["a_top_kernels"] == ("nvjet_tst_128x64_64x4_1x1_v_bz_TNT (67%); "
                                                 "nvjet_tst_64x8_64x16_4x1_v_bz_TNN (33%)")


def test_compare_within_ten_percent(con, tmp_path):
    load(con, build(tmp_path / "x.json", [("nvjet_gemm_x", 100)], layers=10))
    load(con, build(tmp_path / "y.json", [("Cijk_gemm_y", 110)], layers=10, platform="AMD"))
    load(con, build(tmp_path / "z.json", [("Cijk_gemm_z", 111)], layers=10, platform="AMD"))
    assert rows(con, "SELECT status FROM compare_ops('x', 'y', NULL)") == [{"status": "within 10%"}]
    assert rows(con, "SELECT status FROM compare_ops('x', 'z', NULL)") == [{"status": "A faster"}]


def test_same_kernels_finds_only_the_shared_name(planted):
    got = rows(planted, "SELECT * FROM same_kernels('nv', 'amd', NULL)")
    assert got == [{"kernel": "triton_per_fused__softmax_0", "op": "Softmax", "a_kernels": 20, "b_kernels": 20,
                    "a_avg_ns": 3000.0, "b_avg_ns": 5000.0, "a_total_ns": 60_000, "b_total_ns": 100_000,
                    "ratio": 0.6, "gap_ns": -40_000, "faster": "A"}]


def test_fused_unknown_heuristic_names_the_parts(con, tmp_path):
    # the seed's heuristic is the last resort before "Other": only a Triton name that no rule
    # matched and that names two or more operations
    names = ["triton_tile_mm_treereduce", "_triton_rmsnorm_matmul_kernel", "triton_poi_fused_gelu_mm_0",
             "triton_red_fused_add_mean_mul_pow_rsqrt_0", "void vllm::rms_norm_gemm<float>", "tile_mm_treereduce"]
    load(con, build(tmp_path / "h.json", [(n, 5) for n in names], layers=1))
    got = dict(con.execute("SELECT k.name, o.op || ' / ' || o.pattern FROM kernels k "
                           "JOIN kernel_ops o USING (trace_id, kernel_id)").fetchall())
    assert got == {
        "triton_tile_mm_treereduce": "Fused (Unknown) / GEMM+Reduce",
        "_triton_rmsnorm_matmul_kernel": "RMSNorm / *rmsnorm*",  # a rule matched first, as in the seed
        # Inductor names are read as the operations they list: the epilogue of a cuBLAS mm is its GELU
        "triton_poi_fused_gelu_mm_0": "Activation / Inductor: activation (SiLU-and-mul, GELU, ...)",
        "triton_red_fused_add_mean_mul_pow_rsqrt_0": "RMSNorm / Inductor: mean+pow+rsqrt (RMSNorm, with its residual add)",
        "void vllm::rms_norm_gemm<float>": "RMSNorm+GEMM / rmsnorm + gemm",  # an explicit fused rule
        "tile_mm_treereduce": "Other / tile_mm_treereduce",  # not a Triton kernel
    }


def test_fused_unknown_counts_as_explicit_fusion(con, tmp_path):
    load(con, build(tmp_path / "f.json", [("triton_tile_mm_treereduce", 5), ("nvjet_gemm", 5)], layers=3))
    load(con, build(tmp_path / "u.json", [("void at::native::reduce_kernel<512>", 2), ("Cijk_gemm", 5),
                                          ("Cijk_gemm", 5)], layers=3, platform="AMD"))
    found = rows(con, "SELECT detector, fused_side, fused_op, unfused_sequence FROM fusion_findings('f', 'u', NULL)")
    assert found == [{"detector": "explicit", "fused_side": "f", "fused_op": "GEMM+Reduce",
                      "unfused_sequence": "Dense GEMM + Reduce"}]


def test_fused_operation_on_both_sides_counts_by_its_own_count(con, tmp_path):
    fused = ("void vllm::rms_norm_gemm<float>", 5)
    load(con, build(tmp_path / "x.json", [fused, fused, fused, ("nvjet_gemm", 5)], layers=20))
    load(con, build(tmp_path / "y.json", [fused, ("Cijk_gemm", 5)], layers=20, platform="AMD"))
    found = rows(con, "SELECT detector, fused_side, fused_op, fused_count, unfused_count, pattern_count "
                      "FROM fusion_findings('x', 'y', NULL)")
    # RMSNorm+GEMM 60 vs 20; the GEMMs, credited with the fused kernels, 80 vs 40: both reported,
    # with the same 200 µs at stake (then by name)
    assert found == [
        {"detector": "count", "fused_side": "y", "fused_op": "Dense GEMM", "fused_count": 40,
         "unfused_count": 80, "pattern_count": 40},
        {"detector": "count", "fused_side": "y", "fused_op": "RMSNorm+GEMM", "fused_count": 20,
         "unfused_count": 60, "pattern_count": 40},
    ]


def test_macros_take_trace_ids(planted):
    ids = dict(planted.execute("SELECT name, trace_id FROM traces").fetchall())
    a, b = ids["nv"], ids["amd"]
    assert planted.execute("SELECT trace_label(?), trace_name(?)", [a, b]).fetchone() == (
        "nv (NVIDIA, NVIDIA H100 80GB HBM3)", "amd")
    for macro in ("compare_ops", "alignment_pairs", "alignment_layers", "fusion_findings", "fusion_summary",
                  "same_kernels"):
        by_id = planted.execute(f"SELECT * FROM {macro}({a}, {b}, NULL) ORDER BY ALL").fetchall()
        by_name = planted.execute(f"SELECT * FROM {macro}('nv', 'amd', NULL) ORDER BY ALL").fetchall()
        assert by_id == by_name and by_id, macro


# ---- the fixture pair: the same model on H100 and MI300X ----

def fixture_kernels(name):
    with gzip.open(FIXTURES / "kineto" / f"{name}.json.gz", "rt") as f:
        return [e for e in json.load(f)["traceEvents"] if e.get("cat") == "kernel"]


@pytest.fixture(scope="module")
def bert_db(tmp_path_factory):
    return database_of(tmp_path_factory, "bert",
                       [FIXTURES / "kineto" / f"{name}.json.gz" for name in ("h100_bert-small", "mi300_bert-small")])


@pytest.fixture
def bert(bert_db):
    with read_only(bert_db) as con:
        yield con


def test_bert_same_model_shows_no_fusion_difference(bert):
    assert rows(bert, "SELECT * FROM fusion_findings('h100_bert-small', 'mi300_bert-small', NULL)") == []
    assert [r["fuses"] for r in rows(bert, "SELECT fuses FROM fusion_summary('h100_bert-small', 'mi300_bert-small', NULL)")] == [0, 0]
    notes = rows(bert, "SELECT fusion_note FROM alignment_pairs('h100_bert-small', 'mi300_bert-small', NULL) "
                       "WHERE fusion_note IS NOT NULL")
    assert notes == []


def test_bert_compare_totals_match_the_json(bert):
    got = rows(bert, "SELECT op, a_kernels, b_kernels, a_total_ns, b_total_ns FROM compare_ops('h100_bert-small', "
                     "'mi300_bert-small', NULL)")
    h100, mi300 = fixture_kernels("h100_bert-small"), fixture_kernels("mi300_bert-small")
    assert sum(r["a_kernels"] for r in got) == len(h100) and sum(r["b_kernels"] for r in got) == len(mi300)
    assert sum(r["a_total_ns"] for r in got) == round(sum(k["dur"] for k in h100) * 1000)
    assert sum(r["b_total_ns"] for r in got) == round(sum(k["dur"] for k in mi300) * 1000)
    assert {r["op"]: (r["a_kernels"], r["b_kernels"]) for r in got} == {
        "Dense GEMM": (26, 26), "Attention": (4, 4), "LayerNorm": (10, 10), "Elementwise": (11, 11),
        "Activation": (5, 5), "Indexing": (3, 3), "Reduce": (1, 1)}


def test_bert_alignment_pairs_every_layer_kernel(bert):
    pairs = rows(bert, "SELECT layer, op, detail, a_kernels, b_kernels FROM alignment_pairs('h100_bert-small', "
                       "'mi300_bert-small', NULL) ORDER BY layer, position")
    assert len(pairs) == 4 * 12 and all(p["a_kernels"] == p["b_kernels"] == 1 for p in pairs)
    # the GEMM roles come from the BERT modules on the Python stack
    assert [p["detail"] for p in pairs if p["layer"] == 0 and p["op"] == "Dense GEMM"] == [
        "QKV", "QKV", "QKV", "O", "FFN_up", "FFN_down"]
    layers = rows(bert, "SELECT layer, a_kernels, b_kernels FROM alignment_layers('h100_bert-small', "
                        "'mi300_bert-small', NULL) ORDER BY layer")
    assert layers == [{"layer": i, "a_kernels": 12, "b_kernels": 12} for i in range(4)]


def test_bert_same_kernels_are_the_shared_names(bert):
    got = rows(bert, "SELECT kernel, a_kernels, b_kernels FROM same_kernels('h100_bert-small', 'mi300_bert-small', NULL)")
    h100 = Counter(k["name"] for k in fixture_kernels("h100_bert-small"))
    mi300 = Counter(k["name"] for k in fixture_kernels("mi300_bert-small"))
    shared = set(h100) & set(mi300)
    assert shared and {r["kernel"] for r in got} == shared
    assert all((r["a_kernels"], r["b_kernels"]) == (h100[r["kernel"]], mi300[r["kernel"]]) for r in got)


def test_bert_reports_through_the_cli(bert_db):
    for name in ("compare", "alignment", "fusion", "same-kernels"):
        proc = run_cli("report", name, "--trace", "h100_bert-small", "--vs", "mi300_bert-small", db=bert_db, check=True)
        assert "A: h100_bert-small (NVIDIA, NVIDIA H100 80GB HBM3)" in proc.stdout
        assert "B: mi300_bert-small (AMD, AMD Instinct MI300X" in proc.stdout
        assert "AMD slower" not in proc.stdout and "Traceback" not in proc.stderr
    out = json.loads(run_cli("report", "fusion", "-t", "h100_bert-small", "--vs", "mi300_bert-small",
                             "--format", "json", db=bert_db, check=True).stdout)
    assert set(out) == {"main", "sides", "layer notes"} and out["main"] == []
    assert [s["trace"] for s in out["sides"]] == ["h100_bert-small", "mi300_bert-small"]
    one = json.loads(run_cli("report", "compare", "-t", "#1", "--vs", "#2", "--section", "summary",
                             "--format", "json", "--phase", "all", db=bert_db, check=True).stdout)
    assert sum(r["ops"] for r in one) == 7
    sql = run_cli("report", "fusion", "-t", "#1", "--vs", "#2", "--section", "sides", "--show-sql",
                  db=bert_db, check=True).stdout
    assert "-- Section: sides" in sql and "SET VARIABLE \"vs\" = '#2';" in sql
    assert "fusion_summary(getvariable('trace'), getvariable('vs'), getvariable('phase'))" in sql
    assert "fusion_findings(" not in sql


def test_comparison_cli_errors(bert_db):
    for args, message in [
        (("report", "fusion", "--trace", "h100_bert-small"), "compares two traces: give --trace A --vs B"),
        (("report", "fusion", "--trace", "h100_bert-small", "--vs", "nope"), "no trace 'nope'"),
        (("report", "ops", "--vs", "h100_bert-small"), "report ops has no parameter --vs (it reads one trace or all of them)"),
        (("report", "compare", "-t", "#1", "--vs", "#2", "--section", "nope"), "has no section 'nope'"),
    ]:
        proc = run_cli(*args, db=bert_db)
        assert proc.returncode == 1 and message in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_fusion_layer_notes_are_one_row_per_note(planted):
    # the planted pair differs the same way in each of its LAYERS layers: each note is one row
    # naming every layer, not LAYERS rows of the same sentence
    from tracedb import reports

    report = reports.get("fusion")
    sections = reports.run(planted, report, reports.bind(report, {"trace": "nv", "vs": "amd"}))
    section, columns, body = next(s for s in sections if s[0].name == "layer notes")
    notes = [dict(zip(columns, row)) for row in body]
    assert notes and len({(n["fusion_note"], n["op"]) for n in notes}) == len(notes)
    every = [n for n in notes if n["layers"] == LAYERS]
    assert every and all(n["which"] == f"0-{LAYERS - 1}" for n in every)
    assert len(notes) <= 10  # a screenful, whatever the layer count


# A GEMM split over K runs a reduction kernel after it: cuBLASLt's splitKreduce_kernel, launched
# by the same aten::mm call; hipBLASLt's _PostGSU kernel, here launched with no cpu_op recorded
# (the helper then joins the GEMM before it on its stream).
SPLITK = "void splitKreduce_kernel<32, 16, int, float, __nv_bfloat16, float, __nv_bfloat16, true, false, false>"
POSTGSU = "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT128x128x64_MI16x16x1_SN_LDSB1_GSU4_PostGSU4_VW4"
SPLIT_A = [  # (kernel, duration µs, call number: kernels of one aten::mm share it, None: no cpu_op)
    ("nvjet_tst_128x64_64x4_1x1_v_bz_TNT", 20, 1), (SPLITK, 4, 1),
    ("void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4> >(flash::Flash_fwd_params)", 30, 2),
    ("nvjet_tst_64x8_64x16_4x1_v_bz_TNN", 10, 3), (SPLITK, 2, 3),
    ("nvjet_tst_64x8_64x16_4x1_v_bz_TNN", 10, 4),
]
SPLIT_B = [
    ("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT128x128x64_MI16x16x1_SN_LDSB1_GSU4", 15, None),
    (POSTGSU, 5, None),
    ("kernel_unified_attention_2d", 40, None),
    ("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT64x64x64", 12, None),
    ("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT64x64x64", 12, None),
]


def build_calls(path, layer, layers, flavour):
    """`layers` copies of `layer`; kernels of one call number are launched by one aten::mm."""
    b, t, ext = testing.KinetoTrace(flavour), 1000, 0
    for _ in range(layers):
        calls = {}
        for name, dur, call in layer:
            if call is not None and call not in calls:
                ext += 1
                calls[call] = ext
                b.x("cpu_op", "aten::mm", t - 8, 6, **{"External id": ext})
            b.kernel(name, t - 5, t, dur, ext=calls.get(call))
            t += dur + 1
    return b.write(path)


def test_split_k_helpers_belong_to_their_gemm_call(con, tmp_path):
    load(con, build_calls(tmp_path / "nv.json", SPLIT_A, 3, "nvidia"))
    load(con, build_calls(tmp_path / "amd.json", SPLIT_B, 3, "amd"))
    assert [r[0] for r in con.execute("SELECT gemm_helper(n) FROM (VALUES (?), (?), ('Cijk_x_GSU4')) v(n)",
                                      [SPLITK, POSTGSU]).fetchall()] == ["split-K reduction", "GSU reduction", None]
    pairs = rows(con, "SELECT layer, op, occurrence, a_kernel, b_kernel, a_calls, b_calls, a_kernels, b_kernels, "
                      "a_avg_ns, b_avg_ns, fusion_note FROM alignment_pairs('nv', 'amd', NULL) "
                      "WHERE op = 'Dense GEMM' ORDER BY layer, occurrence")
    assert [p["layer"] for p in pairs] == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    layer0 = [(p["occurrence"], p["a_kernel"], p["b_kernel"], p["a_calls"], p["b_calls"], p["a_kernels"],
               p["b_kernels"], p["a_avg_ns"], p["b_avg_ns"], p["fusion_note"]) for p in pairs if p["layer"] == 0]
    # each GEMM pairs with the GEMM of the same call order; a helper is never a pair of its own
    assert layer0 == [
        (0, SPLIT_A[0][0], SPLIT_B[0][0], 1, 1, 2, 2, 24_000, 20_000, None),
        (1, SPLIT_A[3][0], SPLIT_B[3][0], 1, 1, 2, 1, 12_000, 12_000, None),
        (2, SPLIT_A[5][0], SPLIT_B[4][0], 1, 1, 1, 1, 10_000, 12_000, None),
    ]
    gemm = rows(con, "SELECT * FROM compare_ops('nv', 'amd', NULL) WHERE op = 'Dense GEMM'")[0]
    assert (gemm["a_calls"], gemm["b_calls"], gemm["a_kernels"], gemm["b_kernels"]) == (9, 9, 15, 12)
    assert gemm["a_avg_ns"] == pytest.approx((24 + 12 + 10) * 1000 / 3)
    assert gemm["b_avg_ns"] == pytest.approx((20 + 12 + 12) * 1000 / 3)
    assert gemm["ratio"] == pytest.approx(46 / 44)


def test_a_lone_helper_stays_its_own_call(con, tmp_path):
    # a reduction kernel after a kernel of another operation (an attention) has no GEMM to join
    layer = [("void flash::flash_fwd_kernel<t>", 30, None), (SPLITK, 4, None),
             ("nvjet_tst_64x8_64x16_4x1_v_bz_TNN", 10, None)]
    load(con, build_calls(tmp_path / "lone.json", layer, 2, "nvidia"))
    got = con.execute("SELECT f.call_id = f.kernel_id, f.occurrence FROM kernel_facts f JOIN kernels k "
                      "USING (trace_id, kernel_id) WHERE k.name = ? ORDER BY k.ts_ns", [SPLITK]).fetchall()
    assert got == [(True, 0), (True, 0)]


def test_memset_is_the_same_time_in_every_section_of_compare(tmp_path):
    """A fill kernel (a kernel the rules call Memset) and a memset the runtime ran (cudaMemsetAsync:
    a memory operation, no kernel): compare's operations and its wall-clock parts give Memset the
    same time, the kernel's, and the runtime's memset stands apart in the wall-clock parts, which
    still add up to the span."""
    from builders import GEMM, Built, stream

    def trace(path, fill_us, memset_us, flavour="nvidia"):
        b = Built(flavour)
        b.x("user_annotation", "ProfilerStep#1", 0, 1_000)
        b.on(GEMM, 1, 5, 100, stream(7))
        b.on("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int, at::native::FillFunctor<float>)",
             2, 105, fill_us, stream(7))
        b.on("Memset (Device)", 3, 105 + fill_us, memset_us, stream(7), cat="gpu_memset", launch="cudaMemsetAsync")
        return b.write(path)

    db = tmp_path / "m.duckdb"
    run_cli("load", trace(tmp_path / "a.json", 20, 7), trace(tmp_path / "b.json", 30, 9, "amd"), "--jobs", "1",
            db=db, check=True)
    out = json.loads(run_cli("report", "compare", "--trace", "a", "--vs", "b", "--format", "json", db=db,
                             check=True).stdout)
    ops = {r["op"]: r for r in out["main"]}
    wall = {r["part"]: r for r in out["wall-clock"]}
    assert (ops["Memset"]["a_total_ns"], ops["Memset"]["b_total_ns"]) == (20_000, 30_000)
    assert (wall["Memset"]["a_ns"], wall["Memset"]["b_ns"]) == (20_000, 30_000)
    assert (wall["Memset (runtime call)"]["a_ns"], wall["Memset (runtime call)"]["b_ns"]) == (7_000, 9_000)
    parts = [r for r in out["wall-clock"] if r["part"] != "span"]
    assert sum(r["a_ns"] for r in parts) == wall["span"]["a_ns"]
