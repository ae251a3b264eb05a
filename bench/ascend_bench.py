"""Ascend / TensorCast benchmark: load a large kernel_details.csv and a TensorCast trace, run
tc-vs-prof, against the comparison script's approach.

    python bench/ascend_bench.py --rows 1000000 --ops 200000

Writes bench/out/kernel_details_<rows>.csv (the 46 columns of a CANN 8 kernel_details.csv: quoted
epoch-µs starts with a trailing tab, triple-quoted shapes, PMU counters; a mix of MatMul,
attention, norm, elementwise, hcom kernels duplicated on parallel streams and AI CPU kernels),
bench/out/tc_<ops>.json (a TensorCast trace: HIT operators, composites with sub_kernel_durations,
MISS and zero-cost ones) and an op_mapping.yaml. Then, each in a fresh process: `tracedb load` of
the CSV and of the trace with its mapping into a new database, the tc-vs-prof query on it (best
of three, read-only), and the script's approach — json.load of the trace, csv.DictReader of the
profile, its Python loops in floats (as restated in tests/tc_reference.py) — on the same files.
Prints a Markdown table for the README.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

from load_bench import OUT, measure, remove_db
from report_bench import REPORT_BODY

ROOT = Path(__file__).resolve().parent.parent
HEADER = ("Step Id,Model ID,Task ID,Stream ID,Name,Type,OP State,Accelerator Core,Start Time(us),Duration(us),"
          "Wait Time(us),Block Dim,Mix Block Dim,HF32 Eligible,Input Shapes,Input Data Types,Input Formats,"
          "Output Shapes,Output Data Types,Output Formats,Context ID,aicore_time(us),aic_total_cycles,"
          "aic_mac_time(us),aic_mac_ratio,aic_scalar_time(us),aic_scalar_ratio,aic_mte1_time(us),aic_mte1_ratio,"
          "aic_mte2_time(us),aic_mte2_ratio,aic_fixpipe_time(us),aic_fixpipe_ratio,aic_icache_miss_rate,"
          "aiv_time(us),aiv_total_cycles,aiv_vec_time(us),aiv_vec_ratio,aiv_scalar_time(us),aiv_scalar_ratio,"
          "aiv_mte2_time(us),aiv_mte2_ratio,aiv_mte3_time(us),aiv_mte3_ratio,aiv_icache_miss_rate,"
          "cube_utilization(%)")
KERNELS = [  # (name, type, core, mean µs)
    ("aclnnMatmul_MatMulCommon_MatMulV2", "MatMulV2", "AI_CORE", 180.0),
    ("aclnnMatmul_MatMulV3Common_MatMulV3", "MatMulV3", "AI_CORE", 500.0),
    ("aclnnFlashAttentionScore_FlashAttentionScore_FlashAttentionScore", "FlashAttentionScore", "MIX_AIC", 400.0),
    ("aclnnRmsNorm_RmsNorm_RmsNorm", "RmsNorm", "AI_VECTOR_CORE", 12.0),
    ("aclnnAdd_AddAiCore_Add", "Add", "AI_VECTOR_CORE", 14.5),
    ("aclnnSwiGlu_SwiGlu_SwiGlu", "SwiGlu", "AI_VECTOR_CORE", 30.0),
    ("TransData", "TransData", "AI_CORE", 6.0),
]
OPS = [  # (operator, kernel_type, sub-kernel split)
    ("torch.ops.aten.mm.default", "MatMulV2", None),
    ("torch.ops.npu.npu_fused_infer_attention_score.default", "FlashAttentionScore", None),
    ("torch.ops.tensor_cast.mla.default", "MatMulV3,FlashAttentionScore", (0.3, 0.7)),
    ("torch.ops.tensor_cast.static_quant_linear_all_reduce.default", "MatMulV2", (0.8, 0.2)),
    ("torch.ops.npu.npu_rms_norm.default", None, None),
    ("torch.ops.aten.add.Tensor", None, None),
    ("torch.ops.aten.view.default", None, None),
]
MAPPING = """version: 1
device: ATLAS_800_A3_752T_128G_DIE
operator_mappings:
  npu.npu_rms_norm.default: {kernel_type: RmsNorm}
  aten.add.Tensor: {kernel_type: Add}
  aten.view.default: {zero_cost: true}
"""

LOAD_BODY = """
from tracedb.db import open_db
from tracedb.ingest.loader import load_file
con = open_db(sys.argv[2])  # the loader bounds its own memory
meta = {"op_mapping": sys.argv[3]} if len(sys.argv) > 3 else None
rows = load_file(con, sys.argv[1], meta=meta).events
con.close()
"""

PEER_BODY = """
sys.path.insert(0, sys.argv[4])
import tc_reference
rows = len(tc_reference.comparison(sys.argv[1], sys.argv[2], sys.argv[3], exact=False))
"""


def write_profile(path: Path, rows: int, seed: int = 0) -> None:
    rnd = random.Random(seed)
    t = 1736413971000000.0
    pmu = ",".join(["183.87,5295467,151.425,0.824,88.03,0.479,119.148,0.648,177.314,0.964,5.736,0.031,0.001"]
                   + ["0"] * 11 + ["79.295"])
    with open(path, "w", encoding="utf-8") as out:
        out.write("\ufeff" + HEADER + "\n")
        n = 0
        while n < rows:
            if n % 50 == 49:  # a collective: the HCCL and AI CPU streams both record it
                dur = round(rnd.uniform(20, 60), 3)
                for stream, name, kt in ((5, "hcom_allReduce__1", "hcom_allReduce_"),
                                         (6, "hcom_allReduce__1", "hcom_allReduce_"),
                                         (7, "allreduceAicpuKernel", "allreduceAicpuKernel")):
                    out.write(f'19,4294967295,{n},{stream},{name},{kt},dynamic,AI_CPU,"{t + rnd.random():.3f}\t",'
                              f'{dur},0.5,1,0,NO,"""4096,512""",DT_BF16,ND,"""4096,512""",DT_BF16,ND,N/A,{pmu}\n')
                    n += 1
            else:
                name, kt, core, mean = KERNELS[rnd.randrange(len(KERNELS))]
                dur = round(rnd.uniform(0.8, 1.2) * mean, 3)
                out.write(f'19,4294967295,{n},2,{name},{kt},dynamic,{core},"{t:.3f}\t",{dur},1.087,16,0,NO,'
                          f'"""81920,4096;8192,512""",DT_BF16;DT_BF16,ND;ND,"""4096,512""",DT_BF16,ND,N/A,{pmu}\n')
                n += 1
            t += dur + 2.0


def write_tc(path: Path, ops: int, seed: int = 0) -> None:
    rnd = random.Random(seed)
    events = [{"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "profiling"}}]
    for i in range(ops):
        name, kt, split = OPS[rnd.randrange(len(OPS))]
        dur = round(rnd.uniform(5, 500), 2)
        args: dict = {}
        if kt:
            args = {"kernel_type": kt, "source": "MEASURED"}
            if split:
                names = kt.split(",") if "," in kt else [kt, "hcom_allReduce_"]
                args["composite"] = "True"
                args["sub_kernel_durations"] = str([(n, round(dur * f, 2)) for n, f in zip(names, split)])
        events.append({"name": name, "ph": "X", "ts": i, "dur": dur, "pid": 1, "tid": 0, "args": args})
    path.write_text(json.dumps({"traceEvents": events}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000, help="kernels in the profile")
    ap.add_argument("--ops", type=int, default=200_000, help="operators in the TensorCast trace")
    args = ap.parse_args()
    OUT.mkdir(exist_ok=True)
    profile, trace, mapping = OUT / f"kernel_details_{args.rows}.csv", OUT / f"tc_{args.ops}.json", OUT / "op_mapping.yaml"
    write_profile(profile, args.rows)
    write_tc(trace, args.ops)
    mapping.write_text(MAPPING)
    db = OUT / "ascend.duckdb"
    remove_db(db)
    print(f"{profile.name}: {profile.stat().st_size / 2**20:.0f} MiB, {args.rows:,} kernels; "
          f"{trace.name}: {trace.stat().st_size / 2**20:.0f} MiB, {args.ops:,} operators\n")
    print("| step | time | peak RSS |\n|---|---:|---:|")
    for path, extra in ((mapping, ()), (profile, ()), (trace, ("op_mapping",))):
        r = measure(sys.executable, LOAD_BODY, str(path), str(db), *extra)
        print(f"| tracedb load {path.name} | {r['seconds']:.2f} s | {r['peak_rss_mb']:.0f} MiB |")
    q = measure(sys.executable, REPORT_BODY, str(db), "tc-vs-prof", trace.stem, profile.stem)
    print(f"| tracedb report tc-vs-prof (query, every section, best of 3) | {q['best']:.2f} s | |")
    peer = measure(sys.executable, PEER_BODY, str(trace), str(profile), str(mapping), str(ROOT / "tests"))
    print(f"| script's approach: json.load + csv.DictReader + its loops | {peer['seconds']:.2f} s | "
          f"{peer['peak_rss_mb']:.0f} MiB |")
    print(f"\nOnce loaded, tracedb answers in {q['best']:.2f} s; the script re-reads both files on every "
          f"run ({peer['seconds']:.2f} s).")


if __name__ == "__main__":
    main()
