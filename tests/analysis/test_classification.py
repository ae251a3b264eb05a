"""Classification that names one operation the same way on every vendor: context rules (what a
kernel was launched for), Inductor names read as the operations they list, on traces built here
and on real ones."""

from __future__ import annotations

import pytest

from conftest import FIXTURES, load, read_only, written_out_agrees
from tracedb.testing import GPU, KinetoTrace

GENERIC = "ncclDevKernel_Generic_2(ncclDevKernelArgsStorage<4096ul>)"  # RCCL's one kernel for every collective


def ops_of(con):
    return {name: (op, decided) for name, op, decided in con.execute(
        "SELECT k.name, o.op, o.decided_by FROM kernels k JOIN kernel_ops o USING (trace_id, kernel_id)").fetchall()}


def test_a_generic_collective_is_named_by_what_launched_it(con, tmp_path):
    b = KinetoTrace("amd")
    # c10d: record_param_comms says which collective (External id links op, launch and kernel)
    b.x("cpu_op", "record_param_comms", 10, 20, **{"External id": 1, "Collective name": "allreduce"})
    b.kernel(GENERIC + " #c10d", launch_ts=12, kernel_ts=100, ext=1)
    # vLLM: the custom op that launched it
    b.x("cpu_op", "vllm::all_reduce", 40, 20, **{"External id": 2})
    b.kernel(GENERIC + " #vllm", launch_ts=42, kernel_ts=200, ext=2)
    # no launch recorded: the annotation around the kernel on its device
    b.x("gpu_user_annotation", "nccl:broadcast", 295, 20, GPU)
    b.kernel(GENERIC + " #gpu-annotation", launch_ts=0, kernel_ts=300, launch=False)
    # the annotation around the launch on the launching thread
    b.x("user_annotation", "nccl:_all_gather_base", 60, 20)
    b.kernel(GENERIC + " #cpu-annotation", launch_ts=65, kernel_ts=400)
    # nothing says which collective: it stays what its name says
    b.kernel(GENERIC + " #unknown", launch_ts=90, kernel_ts=500)
    # a context refines only the families it covers: a GEMM launched by an all-reduce op stays a GEMM
    b.x("cpu_op", "vllm::all_reduce", 95, 20, **{"External id": 3})
    b.kernel("Cijk_Alik_Bljk_BBS_BH_MT64x64x64", launch_ts=97, kernel_ts=600, ext=3)
    load(con, b.write(tmp_path / "rccl.json"))
    assert ops_of(con) == {
        GENERIC + " #c10d": ("All-Reduce", "collective"),
        GENERIC + " #vllm": ("All-Reduce", "cpu_op"),
        GENERIC + " #gpu-annotation": ("Broadcast", "annotation"),
        GENERIC + " #cpu-annotation": ("All-Gather", "annotation"),
        GENERIC + " #unknown": ("Communication", "name"),
        "Cijk_Alik_Bljk_BBS_BH_MT64x64x64": ("Dense GEMM", "name"),
    }


def test_nccl_names_its_collective_the_same_way(con, tmp_path):
    b = KinetoTrace()
    for i, name in enumerate(["ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                              "ncclDevKernel_Broadcast_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                              "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL", "ncclDevKernel_AllGather_RING_LL",
                              "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"]):
        b.kernel(name, launch_ts=i, kernel_ts=100 + 10 * i)
    load(con, b.write(tmp_path / "nccl.json"))
    assert {op for op, _ in ops_of(con).values()} == {"All-Reduce", "Broadcast", "Reduce-Scatter", "All-Gather",
                                                      "Send/Recv"}


@pytest.mark.parametrize("name, op", [
    ("triton_poi_fused_mul_silu_1", "Activation"),  # vLLM's act_and_mul_kernel on the other vendor
    ("triton_poi_fused_addmm_gelu_view_15", "Activation"),  # a cuBLAS GEMM's bias and GELU
    ("triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_0", "RMSNorm"),  # fused_add_rms_norm_kernel
    ("triton_red_fused__unsafe_view_add_addmm_mul_native_layer_norm_split_unsqueeze_19", "LayerNorm"),
    ("triton_red_fused_var_mean_0", "LayerNorm"),
    ("triton_poi_fused_all_reduce_embedding_0", "Embedding"),  # a Triton kernel runs no collective
    ("triton_poi_fused__scaled_dot_product_flash_attention_cat_transpose_view_10", "Copy/Memory"),
    ("triton_poi_fused__unsafe_view_clone_slice_transpose_11", "Copy/Memory"),
    ("triton_per_fused__softmax_0", "Softmax"),
    ("triton_red_fused_amax_exp_sub_sum_0", "Softmax"),
    ("triton_poi_fused_max_pool2d_with_indices_0", "Pooling"),
    ("triton_red_fused_sum_0", "Reduce"),
    ("triton_poi_fused_add_mul_0", "Elementwise"),
    ("triton_poi_fused_arange_cat_cos_div_exp_mul_sin_unsqueeze_0", "Elementwise"),
    ("triton_tem_fused_addmm_0", "Dense GEMM"),  # an Inductor GEMM template computes its GEMM
])
def test_an_inductor_name_is_read_as_the_operations_it_lists(con, tmp_path, name, op):
    b = KinetoTrace()
    b.kernel(name, launch_ts=0, kernel_ts=100)
    load(con, b.write(tmp_path / "inductor.json"))
    got, decided = ops_of(con)[name]
    assert got == op
    assert decided == ("name" if name.startswith("triton_tem") else "inductor")


def test_context_rules_in_a_users_file(con, tmp_path):
    from tracedb import rules

    b = KinetoTrace()
    b.x("cpu_op", "mylib::fused_gemm", 0, 20, **{"External id": 7})
    b.kernel("my_unnamed_kernel_3", launch_ts=2, kernel_ts=100, ext=7)
    load(con, b.write(tmp_path / "mine.json"))
    assert ops_of(con)["my_unnamed_kernel_3"] == ("Other", "none")
    mine = tmp_path / "mine.csv"
    mine.write_text("priority,platform,match,pattern,op,label,covers\n1,any,cpu_op,^mylib::fused_gemm$,Dense GEMM,"
                    "my GEMM op,Other\n")
    rules.add_file(con, mine)
    assert ops_of(con)["my_unnamed_kernel_3"] == ("Dense GEMM", "cpu_op")


def test_a_rules_file_without_covers_still_loads(con, tmp_path):
    from tracedb import rules

    path = tmp_path / "old.csv"
    path.write_text("priority,platform,match,pattern,op,label\n1,any,prefix,my_kernel,Attention,mine\n")
    assert rules.add_file(con, path) == ("kernel_rules", "old.csv", 1)
    assert con.execute("SELECT covers FROM kernel_rules WHERE source = 'old.csv'").fetchone()[0] is None


def test_rccl_generic_kernels_of_a_real_ddp_trace(corpus_db):
    # MI300X ResNet DDP training: RCCL launches every collective as ncclDevKernel_Generic. Twelve of
    # the seventeen were launched inside the trace by record_param_comms (Collective name
    # allreduce or broadcast) and ran inside a GPU-side nccl:all_reduce / nccl:broadcast
    # annotation; five ran before any launch or annotation the profiler recorded (no correlation,
    # no External id, no enclosing annotation): nothing in the trace says which collective they
    # are, and they stay Communication.
    with read_only(corpus_db) as con:
        rows = con.execute("""
            SELECT o.op, o.decided_by,
                   (SELECT a.name FROM annotations a WHERE a.trace_id = k.trace_id AND a.on_gpu AND a.pid = k.pid
                       AND a.ts_ns <= k.ts_ns AND k.ts_ns < a.ts_ns + a.dur_ns AND a.name LIKE 'nccl:%') AS gpu_annotation
            FROM kernels k JOIN kernel_ops o USING (trace_id, kernel_id) JOIN traces t USING (trace_id)
            WHERE t.name = 'mi300x_resnet_ddp_train' AND k.name LIKE 'ncclDevKernel_Generic%'""").fetchall()
    assert len(rows) == 17
    named = {"nccl:all_reduce": "All-Reduce", "nccl:broadcast": "Broadcast"}
    decided = [(op, annotation) for op, by, annotation in rows if by != "name"]
    assert len(decided) == 12
    assert all(op == named[annotation] for op, annotation in decided)  # the device's own annotation agrees
    assert sorted(op for op, _ in decided) == ["All-Reduce"] * 6 + ["Broadcast"] * 6
    assert [(op, by, a) for op, by, a in rows if by == "name"] == [("Communication", "name", None)] * 5


# The cross-vendor pairs: one model, one input, on an NVIDIA H100 and an AMD MI300X (the BERT pair
# is in the examples' database, the others in the corpus's).
PAIRS = [("examples_db", "h100_bert-small", "mi300_bert-small"),
         ("corpus_db", "h100_falconsai-vit", "mi300_falconsai-vit"),
         ("corpus_db", "h100_timesformer", "mi300_timesformer")]


@pytest.mark.parametrize("database, a, b", PAIRS, ids=["bert-small", "falconsai-vit", "timesformer"])
def test_one_operation_one_name_on_both_vendors(request, database, a, b):
    with read_only(request.getfixturevalue(database)) as con:
        ta, tb = (con.execute("SELECT trace_id FROM traces WHERE name = ?", [n]).fetchone()[0] for n in (a, b))
        rows = con.execute("SELECT op, a_kernels, b_kernels, a_total_ns, b_total_ns FROM compare_ops(?, ?, NULL)",
                           [a, b]).fetchall()
        calls = con.execute("SELECT trace_id, count(DISTINCT cpu_op_id) FROM kernel_launches "
                            "WHERE cpu_op LIKE 'aten::%convolution' AND trace_id IN (?, ?) GROUP BY ALL ORDER BY 1",
                            [ta, tb]).fetchall()
    a_total, b_total = sum(r[3] for r in rows), sum(r[4] for r in rows)
    # nothing runs on one side only: every operation of either side has at least 1 % of its time
    # matched by the same operation on the other (these models run the same PyTorch ops on both)
    one_sided = [(op, na, nb) for op, na, nb, ta_ns, tb_ns in rows
                 if (na == 0 and tb_ns > 0.01 * b_total) or (nb == 0 and ta_ns > 0.01 * a_total)]
    assert one_sided == []
    # the same operation runs as many kernels on both sides, but for the convolution: cuDNN runs a
    # timesformer / ViT patch embedding as 3 layout transposes and the convolution kernel, MIOpen
    # adds a SubTensorOpWithScalar1d, all launched by the one aten convolution on each side
    unequal = {op: (na, nb) for op, na, nb, _, _ in rows if na != nb}
    assert set(unequal) <= {"Convolution"}, unequal
    if unequal:
        assert calls == [(ta, 1), (tb, 1)] and unequal["Convolution"] == (4, 5)


def test_rules_differing_only_by_platform_each_keep_their_rank(con, tmp_path):
    """Two user rules alike but for their platform and operation: the ranks the written-out macros
    hold name the same rule in every query (the rules' order is total), so each platform's kernels
    get their own rule's operation."""
    mine = tmp_path / "mine.csv"
    mine.write_text("priority,platform,match,pattern,op,label\n"
                    "1,NVIDIA,regex,.,Mine NVIDIA,mine\n1,AMD,regex,.,Mine AMD,mine\n")
    from tracedb import rules
    rules.add_file(con, mine)
    for trace in ("h100_bert-small", "mi300_bert-small"):
        load(con, FIXTURES / "kineto" / f"{trace}.json.gz")
    ops = con.execute("SELECT t.platform, f.op, count(*) FROM kernel_facts f JOIN traces t USING (trace_id) "
                      "WHERE f.decided_by = 'name' GROUP BY ALL ORDER BY ALL").fetchall()
    assert [(platform, op) for platform, op, _ in ops] == [("AMD", "Mine AMD"), ("NVIDIA", "Mine NVIDIA")]


def test_inductor_rules_written_out_match_the_rules_table(con, tmp_path):
    """_inductor_rule_hits, rewritten with each inductor rule's pattern as a constant, gives what
    matching the rules table row by row gives, and follows a user's rules file."""
    names = ["triton_poi_fused_add_mean_mul_pow_rsqrt_0", "triton_red_fused_native_layer_norm_1",
             "triton_per_fused__softmax_2", "triton_poi_fused_clone_view_3", "triton_poi_fused_embedding_4",
             "triton_poi_fused_convolution_relu_5", "triton_tem_fused_mm_6"]
    by_table = ("SELECT coalesce(list(r.rank ORDER BY r.rank), []) FROM _kernel_rules_ordered r WHERE r.match = 'inductor' "
                "AND (r.platform = 'any' OR r.platform = p.platform) AND regexp_matches(inductor_ops(n.name), r.pattern)")
    query = (f"SELECT n.name, p.platform, _inductor_rule_hits(inductor_ops(n.name), p.platform) AS fast, "
             f"({by_table}) AS slow FROM (SELECT unnest(?::VARCHAR[]) AS name) n, (VALUES ('NVIDIA'), ('AMD')) p(platform)")
    before, after = written_out_agrees(con, query, [names], tmp_path / "mine.csv",
                                       "priority,platform,match,pattern,op,label\n1,AMD,inductor,relu,Mine,mine\n")
    assert sum(1 for r in before if r[2]) >= 8
    assert [r[:2] for r in after if 1 in r[2]] == [("triton_poi_fused_convolution_relu_5", "AMD")]


def test_regex_rules_written_out_match_the_rules_table(con, tmp_path):
    """_regex_rule_hits, rewritten with each regex rule's pattern as a constant when the rules
    change, gives what matching the rules table row by row gives, for every fixture kernel name on
    both platforms, and follows a user's rules file."""
    for trace in ("h100_bert-small", "mi300_bert-small", "mi300_vllm_decode_hipgraph", "mi300x_sglang_qwen3-8b_decode"):
        load(con, FIXTURES / "kineto" / f"{trace}.json.gz")
    by_table = ("SELECT coalesce(list(r.rank ORDER BY r.rank), []) FROM _kernel_rules_ordered r WHERE r.match = 'regex' "
                "AND (r.platform = 'any' OR r.platform = p.platform) AND regexp_matches(n.name, r.pattern)")
    query = (f"SELECT n.name, p.platform, _regex_rule_hits(n.name, p.platform) AS fast, ({by_table}) AS slow "
             "FROM (SELECT DISTINCT name FROM kernels) n, (VALUES ('NVIDIA'), ('AMD')) p(platform)")
    before, after = written_out_agrees(
        con, query, [], tmp_path / "mine.csv",
        "priority,platform,match,pattern,op,label\n1,any,regex,^void at::native::.*elementwise,Mine,mine\n")
    assert len(before) > 100 and any(r[2] for r in before)
    assert any(1 in r[2] for r in after)


def test_rule_macros_are_written_only_when_the_rules_change(con):
    """A derivation rewrites the rule macros only when the rules give other texts: none after a
    load with the rules unchanged; after a rule added from a DuckDB shell, all four, and the macro
    then finds the new rule."""
    import tracedb.rules

    class Counting:
        def __init__(self, inner):
            self.inner, self.written = inner, []

        def execute(self, query, *args):
            if query.startswith("CREATE OR REPLACE MACRO"):
                self.written.append(query.split("(")[0].split()[-1])
            return self.inner.execute(query, *args)

    load(con, FIXTURES / "kineto" / "h100_bert-small.json.gz")
    spy = Counting(con)
    tracedb.rules.refresh_regex_rules(spy)
    assert spy.written == []
    con.execute("INSERT INTO kernel_rules (source, priority, platform, match, pattern, op, label) "
                "VALUES ('shell', 1, 'any', 'regex', '^zz_my_kernel', 'Mine', 'mine')")
    tracedb.rules.refresh_regex_rules(spy)
    assert spy.written == ["_regex_rule_hits", "_inductor_rule_hits", "_context_rule_hits",
                           "_step_frame_rule_hits", "_rule_hits_digest"]
    rank = con.execute("SELECT rank FROM _kernel_rules_ordered WHERE source = 'shell'").fetchone()[0]
    assert con.execute("SELECT _regex_rule_hits('zz_my_kernel_1', 'NVIDIA')").fetchone()[0] == [rank]
    spy.written.clear()
    tracedb.rules.refresh_regex_rules(spy)
    assert spy.written == []
