"""Ascend profiles, torch_npu traces, TensorCast traces, op mappings and the tc-vs-prof report:
the real kernel_details.csv fixture and small inputs built here whose right answer is known."""

from __future__ import annotations

import gzip
import json

import pytest

from conftest import FIXTURES, load, run_cli
from tracedb import reports
from tracedb.db import open_db
from tracedb.ingest.tensorcast import parse_pairs

KERNEL_DETAILS = FIXTURES / "ascend" / "kernel_details_cann8.csv"
MLA = "torch.ops.tensor_cast.multihead_latent_attention.default"
MC2 = "torch.ops.tensor_cast.static_quant_linear_all_reduce.default"
ALL_REDUCE = "torch.ops.tensor_cast.all_reduce.default"
MM = "torch.ops.aten.mm.default"


def counts(con) -> dict[str, int]:
    tables = [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main'").fetchall()]
    return {t: con.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables}


# -- Ascend CSVs --------------------------------------------------------------------------------

def test_kernel_details_fixture(con):
    out = load(con, KERNEL_DETAILS)
    assert (out.status, out.platform, out.events, out.rejected, out.complete) == ("loaded", "Ascend", 29, 0, True)
    assert con.execute("SELECT format FROM traces").fetchone()[0] == "ascend-kernel-details"
    first = con.execute(
        "SELECT k.name, k.ts_ns, k.dur_ns, k.stream, k.tid, k.args->>'Start Time(us)', a.op_type, a.op_state, "
        "a.accelerator_core, a.task_id, a.stream_id, a.model_id, a.step_id, a.context_id, a.block_dim, "
        "a.mix_block_dim, a.wait_ns, a.hf32_eligible, a.input_shapes, a.input_data_types, a.output_shapes, "
        "a.pmu->>'cube_utilization(%)', a.pmu->>'aic_mac_ratio' "
        "FROM kernels k JOIN ascend_kernels a USING (trace_id, kernel_id) WHERE k.kernel_id = 0").fetchone()
    # "1736413971558972.912\t" is kept as written in args and read to the exact nanosecond
    assert first == ("aclnnMatmul_MatMulCommon_MatMulV2", 1736413971558972912, 185504, 2, "2",
                     "1736413971558972.912\t", "MatMulV2", "dynamic", "AI_CORE", 61653, 2, 4294967295, 19, None,
                     16, 0, 1087, "NO", "81920,4096;8192,512", "DT_BF16;DT_BF16", "4096,512", "79.295", "0.824")
    last = con.execute("SELECT k.ts_ns, a.input_shapes, a.output_shapes, a.accelerator_core FROM kernels k "
                       "JOIN ascend_kernels a USING (trace_id, kernel_id) WHERE k.kernel_id = 28").fetchone()
    assert last == (1736413974268747953, ";", None, "AI_VECTOR_CORE")  # """""" is an empty shape
    header = json.loads(con.execute("SELECT value FROM trace_metadata WHERE key = 'header'").fetchone()[0])
    assert len(header) == 46 and header[0] == "Step Id" and header[-1] == "cube_utilization(%)"
    ops = dict(con.execute("SELECT a.op_type, any_value(f.op) FROM kernel_facts f "
                           "JOIN ascend_kernels a USING (trace_id, kernel_id) GROUP BY 1").fetchall())
    assert ops == {"Add": "Elementwise", "FlashAttentionScore": "Attention", "FlashAttentionScoreGrad": "Attention",
                   "MatMulV2": "Dense GEMM", "MatMulV3": "Dense GEMM"}


def _rows(con, trace_id):
    return [con.execute(f"SELECT * EXCLUDE (trace_id) FROM {t} WHERE trace_id = ? ORDER BY kernel_id",
                        [trace_id]).fetchall() for t in ("kernels", "ascend_kernels", "kernel_facts")]


def test_both_readers_give_the_same_rows(con, monkeypatch, tmp_path):
    from tracedb.ingest import ascend_csv

    bulk = load(con, KERNEL_DETAILS)
    copy = tmp_path / "kernel_details_copy.csv"
    copy.write_bytes(KERNEL_DETAILS.read_bytes() + b"\n")  # other bytes, same records
    monkeypatch.setattr(ascend_csv, "_stage_bulk", lambda *args: None)
    streamed = load(con, copy)
    assert bulk.events == streamed.events == 29
    assert _rows(con, bulk.trace_id) == _rows(con, streamed.trace_id)


def test_sub_nanosecond_digits_take_the_exact_path(con, tmp_path):
    path = write_csv(tmp_path / "kernel_details.csv", "Name,Type,Duration(us),Start Time(us)",
                     ["a,Add,1.0005,10.0000005", "b,Add,1.0015,11.5"])
    load(con, path)
    assert con.execute("SELECT ts_ns, dur_ns FROM kernels ORDER BY kernel_id").fetchall() == [
        (10_000, 1_000), (11_500, 1_002)]  # half to even


def test_a_record_beyond_the_times_kept_is_set_aside(con, tmp_path):
    """As for a Chrome event (tests/ingest/test_overflow.py): a start or end beyond ±2^62 ns."""
    path = write_csv(tmp_path / "kernel_details.csv", "Name,Type,Duration(us),Start Time(us)",
                     ["a,Add,1.0,10.0", "b,Add,20000000000000,4600000000000000", "c,Add,1,4700000000000000"])
    out = load(con, path)
    assert out.rejected == 2
    assert con.execute("SELECT name FROM kernels").fetchall() == [("a",)]
    assert [r[0] for r in con.execute("SELECT reason FROM rejected_events ORDER BY event_id").fetchall()] == [
        "end ts + dur (4600000000000000 + 20000000000000 µs) is beyond the times tracedb keeps (±2^62 ns, "
        "146 years either side of 1970)",
        "ts 4700000000000000 µs is beyond the times tracedb keeps (±2^62 ns, 146 years either side of 1970)"]


def write_csv(path, header, rows, bom=True, gz=False):
    text = ("\ufeff" if bom else "") + header + "\n" + "".join(r + "\n" for r in rows)
    if gz:
        path.write_bytes(gzip.compress(text.encode("utf-8")))
    else:
        path.write_text(text, encoding="utf-8")
    return path


PROFILE_ROWS = [
    'MatMulV2,MatMulV2,50.0,"1000.0\t","""8,16;16,32"""',
    'MatMulV2,MatMulV2,30.0,"2000.0\t",N/A',
    'hcom_allReduce__1,hcom_allReduce_,10.0,"3000.2\t",""',
    'hcom_allReduce__2,hcom_allReduce_,12.0,"3000.7\t",""',  # same whole µs and type: folded, max kept
    'hcom_allReduce__3,hcom_allReduce_,7.0,"4000.1\t",""',
    'allgather,allgatherAicpuKernel,200.0,"5000.0\t",""',  # AI CPU side of a collective: left out
    'RmsNorm,RmsNorm,10.0,"6000.0\t",""',
    'FIA,FusedInferAttentionScore,50.0,"7000.0\t",""',
    'untyped,,1.0,"8000.0\t",""',  # no Type: not compared
]


@pytest.fixture
def profile_csv(tmp_path):
    return write_csv(tmp_path / "prof.csv", "Name,Type,Duration(us),Start Time(us),Input Shapes", PROFILE_ROWS)


def test_built_csv_bom_tabs_na_and_quotes(con, profile_csv):
    out = load(con, profile_csv)
    assert (out.events, out.rejected, out.platform) == (9, 0, "Ascend")
    rows = con.execute("SELECT k.kernel_id, k.name, k.ts_ns, k.dur_ns, a.op_type, a.input_shapes FROM kernels k "
                       "JOIN ascend_kernels a USING (trace_id, kernel_id) ORDER BY kernel_id LIMIT 2").fetchall()
    assert rows == [(0, "MatMulV2", 1_000_000, 50_000, "MatMulV2", "8,16;16,32"),
                    (1, "MatMulV2", 2_000_000, 30_000, "MatMulV2", None)]
    assert con.execute("SELECT a.op_type, k.name FROM kernels k JOIN ascend_kernels a USING (trace_id, kernel_id) "
                       "WHERE kernel_id = 8").fetchone() == ("", "untyped")


def test_op_summary_columns_map_onto_the_same_ones(con, tmp_path):
    path = write_csv(tmp_path / "op_summary_0_1.csv",
                     "Device_id,Model Name,Model ID,Task ID,Stream ID,Infer ID,Op Name,OP Type,OP State,Task Type,"
                     "Task Start Time(us),Task Duration(us),Task Wait Time(us),Block Dim,Input Shapes,aicore_time(us)",
                     ['0,m,1,7,3,0,MatMul_1,MatMulV2,static,AI_CORE,"1736413971558972.912\t",185.504,1.087,16,'
                      '"""4,4;4,4""",183.87'], bom=False, gz=True)
    out = load(con, path)
    assert out.events == 1 and out.rejected == 0
    assert con.execute("SELECT format FROM traces").fetchone()[0] == "ascend-op-summary"
    got = con.execute("SELECT k.name, k.ts_ns, k.dur_ns, k.device, k.stream, a.op_type, a.accelerator_core, a.task_id, "
                      "a.wait_ns, a.input_shapes, a.pmu::VARCHAR FROM kernels k "
                      "JOIN ascend_kernels a USING (trace_id, kernel_id)").fetchone()
    assert got == ("MatMul_1", 1736413971558972912, 185504, 0, 3, "MatMulV2", "AI_CORE", 7, 1087, "4,4;4,4",
                   '{"aicore_time(us)":183.87}')


def test_forward_pass_csv_without_names(con, tmp_path):
    path = write_csv(tmp_path / "qwen3-32b_dc_16tok.csv", "Type,Duration(us),Start Time(us)",
                     ["MatMulV2,12.5,100.0", "RmsNorm,1.25,"], bom=False)
    load(con, path)
    assert con.execute("SELECT format FROM traces").fetchone()[0] == "ascend-forward-pass"
    assert con.execute("SELECT name, ts_ns, dur_ns FROM kernels ORDER BY kernel_id").fetchall() == [
        ("MatMulV2", 100_000, 12_500), ("RmsNorm", None, 1_250)]


def test_bad_records_are_set_aside_with_their_reason(con, tmp_path):
    path = write_csv(tmp_path / "kernel_details.csv", "Name,Type,Duration(us),Start Time(us)",
                     ["a,Add,1.0,10.0", "b,Add,1.0", "", "c,Add,abc,11.0", "d,Add,N/A,12.0", "e,Add,-2,13.0",
                      "f,Add,2.0,14.0"])
    out = load(con, path)
    assert (out.events, out.rejected, out.complete) == (6, 4, True)  # a blank line holds no record
    assert con.execute("SELECT list(kernel_id ORDER BY kernel_id) FROM kernels").fetchone()[0] == [0, 5]
    reasons = con.execute("SELECT event_id, reason FROM rejected_events ORDER BY event_id").fetchall()
    assert reasons == [(1, "3 cells where the header has 4"), (2, "Duration(us) is not a number: 'abc'"),
                       (3, "Duration(us) is empty"), (4, "Duration(us) is negative (-2)")]
    raw = json.loads(con.execute("SELECT raw FROM rejected_events WHERE event_id = 2").fetchone()[0])
    assert raw == {"Name": "c", "Type": "Add", "Duration(us)": "abc", "Start Time(us)": "11.0"}


def test_truncated_csv_keeps_every_record_before_the_cut(con, tmp_path):
    text = "Name,Type,Duration(us)\n" + "".join(f"k{i},Add,{i}.5\n" for i in range(2000))
    data = gzip.compress(text.encode())
    path = tmp_path / "kernel_details.csv.gz"
    path.write_bytes(data[: len(data) * 3 // 4])
    out = load(con, path)
    assert not out.complete and "truncated gzip" in out.problem
    kept = con.execute("SELECT count(*), max(kernel_id) FROM kernels").fetchone()
    assert 500 < kept[0] and kept[1] == kept[0] - 1 + out.rejected  # the last, cut record may be set aside


@pytest.mark.parametrize("text, message", [
    ("Name,Step,Start Time(us)\nx,1,2\n", "not JSON"),  # no duration: not an Ascend CSV at all
    ("\ufeffType,Duration(us),Type\nA,1,B\n", "repeats the column 'Type'"),
])
def test_bad_csv_files_leave_the_database_unchanged(tmp_path, text, message):
    db = tmp_path / "t.duckdb"
    run_cli("load", KERNEL_DETAILS, db=db, check=True)
    with open_db(db, read_only=True) as c:
        before = counts(c)
    path = tmp_path / "bad.csv"
    path.write_text(text, encoding="utf-8")
    proc = run_cli("load", path, db=db)
    assert proc.returncode == 1 and message in proc.stderr and str(path) in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    with open_db(db, read_only=True) as c:
        assert counts(c) == before


# -- op_mapping.yaml ----------------------------------------------------------------------------

MAPPING = """\
version: 2
device: ATLAS_800_A3_752T_128G_DIE
cann_version: '8.5'
operator_mappings:
  aten.mm.default: {kernel_type: MatMulV2, alternate_kernel_types: [MatMulV3, BatchMatMulV2]}
  aten.view.default: {zero_cost: true}
  tensor_cast.all_reduce.default: {kernel_type: hcom_allReduce_, category: communication}
  tensor_cast.static_quant_linear_all_reduce.default:
    composite: true
    sub_kernels: [QuantBatchMatmulV3, hcom_allReduce_]
  broken.entry: just text
aten.rms_norm.default: {kernel_type: RmsNorm}
"""


@pytest.fixture
def mapping_yaml(tmp_path):
    path = tmp_path / "op_mapping.yaml"
    path.write_text(MAPPING)
    return path


def test_op_mapping_entries_both_layouts(con, mapping_yaml):
    out = load(con, mapping_yaml)
    assert (out.events, out.rejected) == (6, 1)
    assert con.execute("SELECT format, device_name FROM traces").fetchone() == ("op-mapping",
                                                                                 "ATLAS_800_A3_752T_128G_DIE")
    rows = con.execute("SELECT position, section, op_name, kernel_type, alternate_kernel_types, zero_cost, category, "
                       "composite, sub_kernels FROM op_mappings ORDER BY position").fetchall()
    assert rows == [
        (0, "operator_mappings", "aten.mm.default", "MatMulV2", ["MatMulV3", "BatchMatMulV2"], None, None, None, None),
        (1, "operator_mappings", "aten.view.default", None, None, True, None, None, None),
        (2, "operator_mappings", "tensor_cast.all_reduce.default", "hcom_allReduce_", None, None, "communication",
         None, None),
        (3, "operator_mappings", "tensor_cast.static_quant_linear_all_reduce.default", None, None, None, None, True,
         ["QuantBatchMatmulV3", "hcom_allReduce_"]),
        (5, "top", "aten.rms_norm.default", "RmsNorm", None, None, None, None, None),
    ]
    assert con.execute("SELECT reason, raw FROM rejected_events").fetchone() == (
        "entry is not a mapping", '{"broken.entry":"just text"}')
    assert con.execute("SELECT list(key ORDER BY position) FROM trace_metadata").fetchone()[0] == [
        "version", "device", "cann_version"]


@pytest.mark.parametrize("text, message", [
    ("aten.mm.default: {kernel_type: [unclosed\n", "not valid YAML at line 2"),
    ("- a\n- b\n", "this file holds list"),
    ("operator_mappings: [a, b]\n", "operator_mappings is not a mapping"),
    ("a: &a [*a]\n", "recursive through an anchor"),
    ("Error: disk full\n", "not an op mapping: no operator entry"),
])
def test_bad_op_mapping_is_refused(tmp_path, text, message):
    db = tmp_path / "t.duckdb"
    path = tmp_path / "op_mapping.yaml"
    path.write_text(text)
    proc = run_cli("load", path, db=db)
    assert proc.returncode == 1 and message in proc.stderr and str(path) in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    with open_db(db, read_only=True) as c:
        assert c.execute("SELECT count(*) FROM traces").fetchone()[0] == 0


# -- TensorCast traces ---------------------------------------------------------------------------

def x_event(name, dur, pid=1, **args):
    return {"name": name, "ph": "X", "ts": 0, "dur": dur, "pid": pid, "tid": 0, "args": args}


def tc_events():
    return [
        {"name": "process_name", "ph": "M", "pid": 2, "args": {"name": "analytic"}},
        {"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "Profiling model"}},
        x_event(MLA, 77, source="MEASURED", composite="True",
                kernel_type="BatchMatMulV2,FusedInferAttentionScore,TransposeBatchMatMul",
                sub_kernel_durations=str([("BatchMatMulV2", 9.0), ("FusedInferAttentionScore", 55.0),
                                          ("TransposeBatchMatMul", 13.0)])),
        x_event(MLA, 90, source="MEASURED", composite="True", kernel_type="A,B,C", sub_kernel_durations="[10, 20, 60]"),
        x_event(MLA, 60, source="MEASURED", composite="True", kernel_type="X, Y", sub_kernel_durations="garbage"),
        x_event(MC2, 31, source="MEASURED", composite="True", kernel_type="QuantBatchMatmulV3",
                sub_kernel_durations=str([("QuantBatchMatmulV3", 22.77), ("hcom_allReduce_", 8.29)])),
        x_event(ALL_REDUCE, 8, source="MEASURED", kernel_type="hcom_allReduce_"),
        x_event(MM, 20, source="MEASURED", kernel_type="MatMulV2"),
        x_event(MM, 5),  # MISS, resolved through the op mapping: MatMulV2 becomes PARTIAL
        x_event("torch.ops.aten.view.default", 3),  # zero cost: skipped
        x_event("aten.add.Tensor", 2, source=""),  # MISS with no mapping entry: its own name
        x_event("torch.ops.aten.rms_norm.default", 4.5, kernel_type="?"),  # '?' is no kernel type: MISS
        x_event(MM, 999, pid=2),  # another process: not the profiling one
    ]


@pytest.fixture
def tc_db(tmp_path, mapping_yaml, profile_csv):
    tc = tmp_path / "tc.json"
    tc.write_text(json.dumps({"traceEvents": tc_events()}))
    db = tmp_path / "t.duckdb"
    run_cli("load", tc, profile_csv, "--op-mapping", mapping_yaml, db=db, check=True)
    return db


def test_tensorcast_trace_and_sub_kernels(tc_db):
    with open_db(tc_db, read_only=True) as c:
        assert c.execute("SELECT name, format, platform FROM traces ORDER BY trace_id").fetchall() == [
            ("op_mapping", "op-mapping", "Ascend"), ("tc", "tensorcast", "model"),
            ("prof", "ascend-kernel-details", "Ascend")]
        assert c.execute("SELECT pid, found_by, pids FROM tc_profiling_pids").fetchone() == ("1", "named", ["1", "2"])
        lists = c.execute("SELECT event_id, status, problem, pairs FROM tc_sub_kernel_lists ORDER BY event_id").fetchall()
        assert lists == [(2, "valid", None, 3), (3, "malformed", "item 0 is not a (kernel type, duration) pair", 0),
                         (4, "malformed", "not a Python literal (ValueError)", 0), (5, "valid", None, 2)]
        assert c.execute("SELECT kernel_type, dur_ns FROM tc_sub_kernels WHERE event_id = 5 ORDER BY position"
                         ).fetchall() == [("QuantBatchMatmulV3", 22770), ("hcom_allReduce_", 8290)]
        assert c.execute("SELECT raw FROM tc_sub_kernel_lists WHERE event_id = 3").fetchone()[0] == "[10, 20, 60]"
        assert c.execute("SELECT value FROM trace_params WHERE key = 'op_mapping'").fetchall() == [
            ("op_mapping",), ("op_mapping",)]


@pytest.mark.parametrize("value, expected", [
    ("[('A', 1), ('B', 2.5)]", ("valid", None, [("A", 1000), ("B", 2500)])),
    ("[['A', 0.0001]]", ("valid", None, [("A", 0)])),
    ("[]", ("empty", None, [])),
    ("", ("empty", None, [])),
    ("(('A', 1),)", ("malformed", "a tuple, not a list", [])),
    ("[('A', 1, 2)]", ("malformed", "item 0 is not a (kernel type, duration) pair", [])),
    ("[('A', 'slow')]", ("malformed", "item 0: the duration is not a finite number", [])),
    ("[(1, 2)]", ("malformed", "item 0: the kernel type is not a text", [])),
    ("[('A', True)]", ("malformed", "item 0: the duration is not a finite number", [])),
    ("[('A', 1e300)]", ("malformed", "item 0: duration 1E+300 µs is beyond the 64-bit nanosecond range", [])),
    ("__import__('os').system('true')", ("malformed", "not a Python literal (ValueError)", [])),
    (["A", 1], ("malformed", "not a text but JSON list", [])),
])
def test_sub_kernel_durations_parse_without_eval(value, expected):
    assert parse_pairs(value) == expected


SCRIPT_ROWS = [
    # kernel_type, tc_funcs, tc_total_us, tc_count, prof_per_fwd_us, prof_count, error_pct, count_error_pct,
    # prof_share_pct, status
    ("MatMulV2", "aten.mm.default", 25.0, 2, 80.0, 2, -68.8, 0.0, 50.3, "PARTIAL"),
    ("FusedInferAttentionScore", "tensor_cast.multihead_latent_attention.default", 55.0, 1, 50.0, 1, 10.0, 0.0,
     31.4, "HIT"),
    ("A", "tensor_cast.multihead_latent_attention.default", 30.0, 1, 0.0, 0, 0.0, 0.0, 0.0, "HIT"),
    ("B", "tensor_cast.multihead_latent_attention.default", 30.0, 1, 0.0, 0, 0.0, 0.0, 0.0, "HIT"),
    ("C", "tensor_cast.multihead_latent_attention.default", 30.0, 1, 0.0, 0, 0.0, 0.0, 0.0, "HIT"),
    ("X", "tensor_cast.multihead_latent_attention.default", 30.0, 1, 0.0, 0, 0.0, 0.0, 0.0, "HIT"),
    ("Y", "tensor_cast.multihead_latent_attention.default", 30.0, 1, 0.0, 0, 0.0, 0.0, 0.0, "HIT"),
    ("QuantBatchMatmulV3", "tensor_cast.static_quant_linear_all_reduce.default", 22.8, 1, 0.0, 0, 0.0, 0.0, 0.0,
     "HIT"),
    ("hcom_allReduce_", "tensor_cast.static_quant_linear_all_reduce.default, tensor_cast.all_reduce.default",
     16.3, 3, 19.0, 2, -14.3, 50.0, 11.9, "HIT"),
    ("TransposeBatchMatMul", "tensor_cast.multihead_latent_attention.default", 13.0, 1, 0.0, 0, 0.0, 0.0, 0.0, "HIT"),
    ("RmsNorm", "aten.rms_norm.default", 4.5, 1, 10.0, 1, -55.0, 0.0, 6.3, "MISS"),
    ("BatchMatMulV2", "tensor_cast.multihead_latent_attention.default", 9.0, 1, 0.0, 0, 0.0, 0.0, 0.0, "HIT"),
    ("aten.add.Tensor", "aten.add.Tensor", 2.0, 1, 0.0, 0, 0.0, 0.0, 0.0, "MISS"),
]
FIELDS = ["kernel_type", "tc_funcs", "tc_total_us", "tc_count", "prof_per_fwd_us", "prof_count", "error_pct",
          "count_error_pct", "prof_share_pct", "status"]


def report_json(db, *args):
    proc = run_cli("report", "tc-vs-prof", "--trace", "tc", "--vs", "prof", *args, "--format", "json", db=db)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_tc_vs_prof_rows_follow_the_script(tc_db):
    out = report_json(tc_db)
    assert [list(r) for r in out["main"]] == [FIELDS] * len(SCRIPT_ROWS)
    assert [tuple(r.values()) for r in out["main"]] == SCRIPT_ROWS
    assert out["totals"] == [{"kernel_types": 13, "unmodelled": 0, "tc_total_us": 297.6, "prof_per_fwd_us": 159.0,
                              "error_pct": 87.2, "hcom_merged": 1.0, "aicpu_skipped": 1.0}]


def test_tc_vs_prof_forward_passes_and_unmodelled(tc_db, tmp_path):
    rows = {r["kernel_type"]: r for r in report_json(tc_db, "--forward-passes", "2")["main"]}
    got = {k: (r["prof_per_fwd_us"], r["prof_count"], r["error_pct"], r["count_error_pct"]) for k, r in rows.items()
           if r["prof_per_fwd_us"]}
    assert got == {"MatMulV2": (40.0, 1, -37.5, 100.0), "FusedInferAttentionScore": (25.0, 0, 120.0, 100.0),
                   "hcom_allReduce_": (9.5, 1, 71.5, 200.0), "RmsNorm": (5.0, 0, -10.0, 100.0)}
    # the same from the profile's own --meta, and a kernel type TensorCast lacks
    extra = write_csv(tmp_path / "prof2.csv", "Name,Type,Duration(us),Start Time(us),Input Shapes",
                      PROFILE_ROWS + ['swiglu,SwiGlu,3.0,"9000.0\t",""'])
    run_cli("load", extra, "--meta", "forward_passes=2", db=tc_db, check=True)
    proc = run_cli("report", "tc-vs-prof", "--trace", "tc", "--vs", "prof2", "--format", "json", "--section", "main",
                   db=tc_db)
    rows2 = {r["kernel_type"]: r for r in json.loads(proc.stdout)}
    assert rows2["MatMulV2"]["prof_per_fwd_us"] == 40.0
    assert rows2["SwiGlu"] == {"kernel_type": "SwiGlu", "tc_funcs": "", "tc_total_us": 0.0, "tc_count": 0,
                               "prof_per_fwd_us": 1.5, "prof_count": 0, "error_pct": -100.0,
                               "count_error_pct": -100.0, "prof_share_pct": 1.9, "status": "unmodelled"}


def test_tc_vs_prof_table_has_totals(tc_db):
    proc = run_cli("report", "tc-vs-prof", "--trace", "tc", "--vs", "prof", db=tc_db)
    assert proc.returncode == 0, proc.stderr
    total = [line for line in proc.stdout.splitlines() if line.strip().startswith("total")][0].split()
    assert total[1:5] == ["297.6", "16", "159", "6"]


def test_tc_vs_prof_profiling_process(tmp_path, profile_csv):
    db = tmp_path / "t.duckdb"
    sole = tmp_path / "sole.json"
    sole.write_text(json.dumps({"traceEvents": [x_event(MM, 20, pid=0, kernel_type="MatMulV2", source="MEASURED")]}))
    two = tmp_path / "two.json"
    two.write_text(json.dumps({"traceEvents": [x_event(MM, 20, pid=0, kernel_type="MatMulV2"),
                                               x_event(MM, 30, pid=7, kernel_type="MatMulV2")]}))
    run_cli("load", sole, two, profile_csv, db=db, check=True)
    proc = run_cli("report", "tc-vs-prof", "-t", "sole", "--vs", "prof", "--format", "json", "--section", "main", db=db)
    assert json.loads(proc.stdout)[0]["tc_total_us"] == 20.0  # no mapping loaded: none used
    proc = run_cli("report", "tc-vs-prof", "-t", "two", "--vs", "prof", db=db)
    assert proc.returncode == 1 and "cannot tell the profiling process of TensorCast trace two" in proc.stderr
    assert "from 2 processes (0, 7)" in proc.stderr and "Traceback" not in proc.stderr


def test_tc_vs_prof_user_errors(tc_db, tmp_path):
    second = tmp_path / "other_mapping.yaml"
    second.write_text("aten.mm.default: {kernel_type: MatMulV3}\n")
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps({"traceEvents": [x_event(MM, 20, kernel_type="MatMulV2")]}))
    run_cli("load", second, bare, db=tc_db, check=True)
    cases = [
        (["-t", "prof", "--vs", "tc"], "trace prof is not a TensorCast trace (format ascend-kernel-details)"),
        (["-t", "tc", "--vs", "op_mapping"], "trace op_mapping has no kernels"),
        (["-t", "tc", "--vs", "prof", "--forward-passes", "0"], "forward passes must be a whole number of at least 1"),
        (["-t", "tc", "--vs", "prof", "--mapping", "nope"], "no op mapping named nope"),
        (["-t", "bare", "--vs", "prof"], "several op mappings are loaded (op_mapping, other_mapping)"),
        (["-t", "tc"], "compares two traces"),
    ]
    for args, message in cases:
        proc = run_cli("report", "tc-vs-prof", *args, db=tc_db)
        assert proc.returncode == 1 and message in proc.stderr, (args, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1
    # with two mappings loaded, the one recorded with the trace at load is used; --mapping overrides it
    proc = run_cli("report", "tc-vs-prof", "-t", "tc", "--vs", "prof", "--format", "json", "--section", "main",
                   db=tc_db)
    assert proc.returncode == 0 and [tuple(r.values()) for r in json.loads(proc.stdout)][0] == SCRIPT_ROWS[0]
    proc = run_cli("report", "tc-vs-prof", "-t", "tc", "--vs", "prof", "--mapping", "other_mapping", "--format",
                   "json", "--section", "main", db=tc_db)
    assert {r["kernel_type"]: r["status"] for r in json.loads(proc.stdout)}["MatMulV3"] == "MISS"


def test_tc_vs_prof_headers_document_every_column(tc_db):
    report = reports.get("tc-vs-prof")
    with open_db(tc_db, read_only=True) as c:
        for section, columns, _rows in reports.run(c, report, reports.bind(report, {"trace": "tc", "vs": "prof"})):
            assert columns == list(section.columns), section.name


# -- torch_npu trace_view.json --------------------------------------------------------------------

HOST, HW, CANN, OVERLAP = 2563, 2564, 2565, 2566
BASE = 1704161511422904


def ts(us: int) -> str:
    return f"{BASE + us}.204"  # torch_npu writes ts as decimal strings


def trace_view_events():
    flow = {"bp": "e", "cat": "async_npu", "name": "torch_to_npu"}
    return [
        {"ph": "M", "name": "process_name", "pid": HOST, "tid": 0, "args": {"name": "Python"}},
        {"ph": "M", "name": "process_name", "pid": HW, "tid": 0, "args": {"name": "Ascend Hardware"}},
        {"ph": "M", "name": "process_name", "pid": CANN, "tid": 0, "args": {"name": "CANN"}},
        {"ph": "M", "name": "process_name", "pid": OVERLAP, "tid": 0, "args": {"name": "Overlap Analysis"}},
        {"ph": "X", "name": "ProfilerStep#3", "pid": HOST, "tid": 7, "ts": ts(0), "dur": 500, "cat": "user_annotation",
         "args": {}},
        {"ph": "X", "name": "model.py(12): forward", "pid": HOST, "tid": 7, "ts": ts(5), "dur": 60,
         "cat": "python_function", "args": {"Python id": 1, "Python parent id": 0}},
        {"ph": "X", "name": "torch/nn/modules/linear.py(125): forward", "pid": HOST, "tid": 7, "ts": ts(8),
         "dur": 25, "cat": "python_function", "args": {"Python id": 2, "Python parent id": 1}},
        {"ph": "X", "name": "aten::mm", "pid": HOST, "tid": 7, "ts": ts(10), "dur": 20, "cat": "cpu_op", "args": {}},
        {"ph": "X", "name": "aten::add", "pid": HOST, "tid": 7, "ts": ts(40), "dur": 10, "cat": "cpu_op", "args": {}},
        {"ph": "X", "name": "AscendCL@aclnnMatmul", "pid": CANN, "tid": 7, "ts": ts(12), "dur": 5, "args": {}},
        {"ph": "X", "name": "aclnnMatmul_MatMulCommon_MatMulV2", "pid": HW, "tid": 2, "ts": ts(100), "dur": 30.5,
         "args": {"Model Id": 4294967295, "Task Type": "AI_CORE", "Stream Id": 2, "Task Id": 11}},
        {"ph": "X", "name": "aclnnAdd_AddAiCore_Add", "pid": HW, "tid": 2, "ts": ts(140), "dur": "3.250",
         "args": {"Model Id": 4294967295, "Task Type": "AI_VECTOR_CORE", "Stream Id": 2, "Task Id": 12}},
        {"ph": "X", "name": "Notify_Wait", "pid": HW, "tid": 3, "ts": ts(150), "dur": 1,
         "args": {"Task Type": "EVENT_WAIT", "Stream Id": 3, "Task Id": 1}},
        {**flow, "ph": "s", "id": "100", "pid": HOST, "tid": 7, "ts": ts(10)},
        {**flow, "ph": "f", "id": "100", "pid": HW, "tid": 2, "ts": ts(100)},
        {**flow, "ph": "s", "id": "140", "pid": HOST, "tid": 7, "ts": ts(40)},
        {**flow, "ph": "f", "id": "140", "pid": HW, "tid": 2, "ts": ts(140)},
        {"ph": "s", "bp": "e", "cat": "HostToDevice", "name": "HostToDevice", "id": "55", "pid": CANN, "tid": 7,
         "ts": ts(12)},
        {"ph": "f", "bp": "e", "cat": "HostToDevice", "name": "HostToDevice", "id": "55", "pid": HW, "tid": 3,
         "ts": ts(150)},
        {"ph": "X", "name": "Computing", "pid": OVERLAP, "tid": 0, "ts": ts(100), "dur": 30.5, "args": {}},
    ]


@pytest.mark.parametrize("truncate", [False, True])
def test_trace_view_tasks_become_kernels(con, tmp_path, truncate):
    path = tmp_path / "trace_view.json"
    text = json.dumps(trace_view_events())
    if truncate:  # the streaming reader takes the same events the same way
        text = text[: text.rindex('{"ph": "X", "name": "Computing"')]
    path.write_text(text)
    out = load(con, path)
    assert out.complete is not truncate and out.platform == "Ascend"
    assert con.execute("SELECT format FROM traces").fetchone()[0] == "torch_npu"
    kernels = con.execute("SELECT k.kernel_id, k.name, k.ts_ns, k.dur_ns, k.stream, a.task_type, a.task_id, "
                          "a.model_id, k.extra FROM kernels k JOIN ascend_kernels a USING (trace_id, kernel_id) "
                          "ORDER BY kernel_id").fetchall()
    assert kernels == [
        (10, "aclnnMatmul_MatMulCommon_MatMulV2", 1704161511423004204, 30500, 2, "AI_CORE", 11, 4294967295, None),
        (11, "aclnnAdd_AddAiCore_Add", 1704161511423044204, 3250, 2, "AI_VECTOR_CORE", 12, 4294967295, None),
        (12, "Notify_Wait", 1704161511423054204, 1000, 3, "EVENT_WAIT", 1, None, None)]
    launches = con.execute("SELECT kernel_id, launch_id, launch_name, pid, tid, launch_delay_ns, cpu_op "
                           "FROM kernel_launches ORDER BY kernel_id").fetchall()
    assert launches == [(10, 13, "torch_to_npu", "2563", "7", 90000, "aten::mm"),
                        (11, 15, "torch_to_npu", "2563", "7", 100000, "aten::add"),
                        (12, 17, "HostToDevice", "2565", "7", 138000, None)]
    facts = con.execute("SELECT kernel_id, op, iteration, cpu_op FROM kernel_facts ORDER BY kernel_id").fetchall()
    assert facts[:2] == [(10, "Dense GEMM", 3, "aten::mm"), (11, "Elementwise", 3, "aten::add")]
    stacks = con.execute("SELECT kernel_id, python_stack FROM kernel_stacks ORDER BY kernel_id").fetchall()
    assert stacks[:2] == [(10, ["model.py(12): forward", "torch/nn/modules/linear.py(125): forward"]),
                          (11, ["model.py(12): forward"])]
    others = con.execute("SELECT list(name ORDER BY event_id) FROM other_events").fetchone()[0]
    assert others == ["AscendCL@aclnnMatmul"] + ([] if truncate else ["Computing"])


def test_two_trace_reports_work_on_ascend(tmp_path):
    view = tmp_path / "trace_view.json"
    view.write_text(json.dumps(trace_view_events()))
    db = tmp_path / "t.duckdb"
    run_cli("load", view, KERNEL_DETAILS, db=db, check=True)
    proc = run_cli("report", "compare", "--trace", "trace_view", "--vs", "kernel_details_cann8", "--format", "json",
                   "--section", "main", db=db)
    assert proc.returncode == 0, proc.stderr
    ops = {r["op"]: (r["a_kernels"], r["b_kernels"]) for r in json.loads(proc.stdout)}
    assert ops["Dense GEMM"] == (1, 12) and ops["Elementwise"] == (1, 8) and ops["Attention"] == (0, 9)


def test_only_yaml_files_or_op_mapping_read_as_yaml(tmp_path, profile_csv):
    db = tmp_path / "t.duckdb"
    notes = tmp_path / "notes.json"
    notes.write_text("Error: disk full\n")
    proc = run_cli("load", notes, db=db)
    assert proc.returncode == 1 and "not JSON: starts with 'Error: disk full'" in proc.stderr
    mapping = tmp_path / "mapping.txt"
    mapping.write_text("aten.mm.default: {kernel_type: MatMulV2}\n")
    tc = tmp_path / "tc.json"
    tc.write_text(json.dumps({"traceEvents": [x_event(MM, 5, source="MEASURED")]}))
    proc = run_cli("load", tc, "--op-mapping", profile_csv, db=db)
    assert proc.returncode == 1 and proc.stderr.startswith("tracedb: error: --op-mapping: ") and "YAML" in proc.stderr
    run_cli("load", tc, "--op-mapping", mapping, db=db, check=True)
    with open_db(db, read_only=True) as c:
        assert c.execute("SELECT name, format FROM traces ORDER BY trace_id").fetchall() == [
            ("mapping.txt", "op-mapping"), ("tc", "tensorcast")]


def model_db(tmp_path, events, mapping_text, profile, name="tc"):
    """A database holding a TensorCast trace of these events, loaded with an op mapping, and a profile."""
    tc = tmp_path / f"{name}.json"
    tc.write_text(json.dumps({"traceEvents": events}))
    mapping = tmp_path / "op_mapping.yaml"
    mapping.write_text(mapping_text)
    db = tmp_path / "t.duckdb"
    run_cli("load", tc, profile, "--op-mapping", mapping, db=db, check=True)
    return db


def test_values_the_script_reads_in_python(tmp_path, profile_csv):
    events = [
        {"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "profiling"}},
        x_event("torch.ops.x.zero", 5, kernel_type=0),  # false in Python: a MISS under its own name
        x_event("torch.ops.x.flag", 7, kernel_type=True),  # str(True)
        x_event("torch.ops.x.number", 3, kernel_type="MatMulV2", sub_kernel_durations=1e300),  # not a text
        x_event("torch.ops.aten.view.default", 11, kernel_type="?"),  # zero_cost "false" is true in Python
    ]
    db = model_db(tmp_path, events, 'aten.view.default: {zero_cost: "false"}\nx.zero: {kernel_type: 0}\n',
                  profile_csv)
    with open_db(db, read_only=True) as c:
        assert c.execute("SELECT status, problem FROM tc_sub_kernel_lists").fetchall() == [
            ("malformed", "not a text but JSON double")]
    rows = {r["kernel_type"]: (r["tc_total_us"], r["tc_count"], r["status"]) for r in report_json(db)["main"]}
    assert rows["torch.ops.x.zero"] == (5.0, 1, "MISS")
    assert rows["True"] == (7.0, 1, "HIT")
    assert rows["MatMulV2"] == (3.0, 1, "HIT")
    assert "torch.ops.aten.view.default" not in rows and "?" not in rows


def test_tc_vs_prof_on_the_fixture(tmp_path):
    events = [x_event(MM, 180.5, kernel_type="MatMulV2", source="MEASURED") for _ in range(4)]
    events += [x_event("torch.ops.npu.npu_fusion_attention.default", 400, kernel_type="FlashAttentionScore")
               for _ in range(5)]
    events += [x_event("torch.ops.aten.add.Tensor", 14.0) for _ in range(8)]
    db = model_db(tmp_path, events, "operator_mappings:\n  aten.add.Tensor: {kernel_type: Add}\n", KERNEL_DETAILS,
                  name="model")
    proc = run_cli("report", "tc-vs-prof", "-t", "model", "--vs", "kernel_details_cann8", "--format", "json", db=db)
    out = json.loads(proc.stdout)
    rows = [tuple(r.values()) for r in out["main"]]
    # the fixture per type: MatMulV3 8 kernels 4122.342 µs, FlashAttentionScoreGrad 4 / 3038.440,
    # FlashAttentionScore 5 / 2033.780, MatMulV2 4 / 750.595, Add 8 / 116.002; 10062.159 µs in all
    assert rows == [
        ("MatMulV3", "", 0.0, 0, 4122.3, 8, -100.0, -100.0, 41.0, "unmodelled"),
        ("FlashAttentionScoreGrad", "", 0.0, 0, 3038.4, 4, -100.0, -100.0, 30.2, "unmodelled"),
        ("FlashAttentionScore", "npu.npu_fusion_attention.default", 2000.0, 5, 2033.8, 5, -1.7, 0.0, 20.2, "HIT"),
        ("MatMulV2", "aten.mm.default", 722.0, 4, 750.6, 4, -3.8, 0.0, 7.5, "HIT"),
        ("Add", "aten.add.Tensor", 112.0, 8, 116.0, 8, -3.4, 0.0, 1.2, "MISS"),
    ]
    assert out["totals"][0]["prof_per_fwd_us"] == 10061.1  # the sum of the rounded rows


def test_a_start_that_is_not_a_number_keeps_its_kernel(con, tmp_path):
    path = write_csv(tmp_path / "kernel_details.csv", "Name,Type,Duration(us),Start Time(us),Wait Time(us)",
                     ["a,Add,1.5,soon,x", "b,Add,2.5,12.0,0.5"])
    out = load(con, path)
    assert (out.events, out.rejected) == (2, 0)
    assert con.execute("SELECT k.ts_ns, k.dur_ns, a.wait_ns, k.args->>'Start Time(us)' FROM kernels k "
                       "JOIN ascend_kernels a USING (trace_id, kernel_id) ORDER BY kernel_id").fetchall() == [
        (None, 1500, None, "soon"), (12_000, 2500, 500, "12.0")]


def test_a_column_without_a_name_is_named_alike_by_both_readers(con, monkeypatch, tmp_path):
    from tracedb.ingest import ascend_csv

    rows = ["a,Add,1.5,3,", "b,Add,2.5,4,"]
    bulk = load(con, write_csv(tmp_path / "one.csv", "Name,Type,Duration(us),aic_x,", rows))
    monkeypatch.setattr(ascend_csv, "_stage_bulk", lambda *args: None)
    slow = load(con, write_csv(tmp_path / "two.csv", "Name,Type,Duration(us),aic_x,", rows, bom=False))
    assert _rows(con, bulk.trace_id) == _rows(con, slow.trace_id)
    assert con.execute("SELECT args::VARCHAR, pmu::VARCHAR FROM kernels JOIN ascend_kernels USING (trace_id, kernel_id) "
                       "WHERE trace_id = ? AND kernel_id = 0", [bulk.trace_id]).fetchone() == (
        '{"Name":"a","Type":"Add","Duration(us)":"1.5","aic_x":"3","column5":""}', '{"aic_x":3.0,"column5":null}')


# -- random inputs against the script's rules (tests/tc_reference.py) -----------------------------

TYPES = ["MatMulV2", "MatMulV3", "FusedInferAttentionScore", "RmsNorm", "SwiGlu", "hcom_allReduce_",
         "hcom_allGather_", "Add", "TransData"]
OPS = ["torch.ops.aten.mm.default", "aten.mm.default", "torch.ops.aten.view.default", "torch.ops.aten.add.Tensor",
       "torch.ops.tensor_cast.all_reduce.default", "torch.ops.tensor_cast.mla.default", "torch.ops.npu.rms_norm"]


def random_case(rnd, tmp_path, n):
    events = [{"name": "process_name", "ph": "M", "pid": 3, "args": {"name": "empirical data"}}]
    for _ in range(n):
        op, dur = rnd.choice(OPS), round(rnd.uniform(0.5, 400), rnd.choice([0, 1, 3]))
        args = {}
        kind = rnd.random()
        if kind < 0.45:
            args["kernel_type"] = ",".join(rnd.sample(TYPES, rnd.choice([1, 1, 2, 3])))
            if rnd.random() < 0.4:
                subs = args["kernel_type"].split(",")
                args["sub_kernel_durations"] = rnd.choice([
                    str([(s, round(rnd.uniform(0, dur), 3)) for s in subs]), "[1, 2]", "oops", "[]", ""])
        elif kind < 0.5:
            args["kernel_type"] = "?"
        events.append({"name": op, "ph": "X", "ts": 0, "dur": dur, "pid": rnd.choice([3, 3, 3, 9]), "tid": 0,
                       "args": args})
    trace = tmp_path / "tc.json"
    trace.write_text(json.dumps({"traceEvents": events}))
    rows = []
    for _ in range(n):
        kt = rnd.choice(TYPES + ["allgatherAicpuKernel", ""])
        start = f"{1736413971558000 + rnd.randint(0, 50)}.{rnd.randint(0, 999):03d}"
        rows.append(f'k,{kt},{round(rnd.uniform(0.5, 300), 3)},"{start}\t"')
    profile = write_csv(tmp_path / "prof.csv", "Name,Type,Duration(us),Start Time(us)", rows)
    mapping = tmp_path / "op_mapping.yaml"
    mapping.write_text("operator_mappings:\n  aten.mm.default: {kernel_type: MatMulV2}\n"
                       "  aten.view.default: {zero_cost: true}\n"
                       "npu.rms_norm: {kernel_type: RmsNorm}\n")
    return trace, profile, mapping


@pytest.mark.parametrize("seed", range(4))
def test_random_cases_match_the_script_rules(tmp_path, seed):
    import random

    import tc_reference

    trace, profile, mapping = random_case(random.Random(seed), tmp_path, 300)
    db = tmp_path / "t.duckdb"
    run_cli("load", trace, profile, "--op-mapping", mapping, db=db, check=True)
    fwd = [1, 2, 3, 4][seed]
    got = report_json(db, "--forward-passes", str(fwd))["main"]
    want = tc_reference.comparison(trace, profile, mapping, fwd)
    for row in got:
        del row["prof_share_pct"]
    assert got == want
