"""Small traces built for the tests, shared by several layers: a transformer layer of each vendor
with planted differences (comparison, fusion), and the timeline's streams, kernels and collectives."""

from __future__ import annotations

from tracedb import testing
from tracedb.testing import KinetoTrace, kernel_event, runtime_call, write_trace

LAYERS = 20

# Side A runs RMSNorm then the QKV GEMM as two kernels and three elementwise kernels per layer;
# side B runs one fused RMSNorm+GEMM kernel and one elementwise kernel. Both run the same Triton
# kernel; every other kernel name differs between the sides.
A_LAYER = [
    ("void vllm::rms_norm_kernel<c10::BFloat16>(c10::BFloat16*, c10::BFloat16 const*)", 4),
    ("nvjet_tst_128x64_64x4_1x1_v_bz_TNT", 20),
    ("void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4> >(flash::Flash_fwd_params)", 30),
    ("nvjet_tst_64x8_64x16_4x1_v_bz_TNN", 10),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16> >", 2),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16> >", 2),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16> >", 2),
    ("triton_per_fused__softmax_0", 3),
]
B_LAYER = [
    ("_rmsnorm_gemm_fused_kernel_bf16", 22),
    ("kernel_unified_attention_2d", 40),
    ("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT64x64x64", 12),
    ("void at::native::vectorized_elementwise_kernel<8, at::native::CUDAFunctor_add<c10::BFloat16> >", 3),
    ("triton_per_fused__softmax_0", 5),
]
A_OPS = ["RMSNorm", "Dense GEMM", "Attention", "Dense GEMM", "Elementwise", "Elementwise", "Elementwise",
         "Softmax"]
B_OPS = ["RMSNorm+GEMM", "Attention", "Dense GEMM", "Elementwise", "Softmax"]


def build(path, layer, layers=LAYERS, platform="NVIDIA", passes=1):
    """`passes` forward passes (ProfilerStep annotations when more than one) of `layers` copies of
    `layer` (name, duration µs), kernels back to back."""
    steps = [(f"ProfilerStep#{n}" if passes > 1 else None, layer, layers) for n in range(passes)]
    return build_steps(path, steps, platform)


def build_steps(path, steps, platform="NVIDIA"):
    """One forward pass per (annotation or None, layer, layers) of steps, in order."""
    events, t, corr = [], 1000, 0
    for annotation, layer, layers in steps:
        start = t
        for name, dur in [k for _ in range(layers) for k in layer]:
            corr += 1
            events.append(testing.runtime_call("cudaLaunchKernel", t - 5, 2, corr))
            events.append(testing.kernel_event(name, t, dur, corr))
            t += dur + 1
        if annotation:
            events.append(testing.x_event("user_annotation", annotation, start - 10, t - start + 5))
        t += 100
    device = ({"id": 0, "name": "NVIDIA H100 80GB HBM3", "warpSize": 32} if platform == "NVIDIA"
              else {"id": 0, "name": "AMD Instinct MI300X", "warpSize": 64})
    return write_trace(path, events, deviceProperties=[device])


GEMM, NORM = "nvjet_tst_128x64_64x4_1x2_h_bz_TNT", "rms_norm_kernel"
ALL_REDUCE = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
US = 1000  # nanoseconds


def stream(n: int) -> dict:
    return {"pid": 0, "tid": n}


class Built(KinetoTrace):
    def on(self, name, launch_ts, ts, dur, where, cat="kernel", launch="cudaLaunchKernel", ext=None):
        """A kernel (or a memcpy / memset, by cat) on a given stream, launched at launch_ts."""
        corr = self._correlation(None)
        self.events.append(runtime_call(launch, launch_ts, 2, corr, ext))
        self.events.append(kernel_event(name, ts, dur, corr, ext, where=where, cat=cat))


def comms_args(ext, rank, group_size, **more) -> dict:
    """record_param_comms args of an all-reduce of 1,024 bf16 elements in process group "0"."""
    return {"External id": ext, "Collective name": "allreduce", "dtype": "BFloat16", "In msg nelems": 1024,
            "Out msg nelems": 1024, "Group size": group_size, "Rank": rank, "Process Group Name": "0", **more}


def gap_trace(path, start=1_000_000.125):
    """Two steps (ProfilerStep#1, #2) of three kernels each, from start (µs); in step 2 the host
    launches the third kernel 300 µs late, inside a Python frame: an idle gap of 301 µs of known
    place (the kernels run 1 µs apart otherwise)."""
    b = testing.KinetoTrace("nvidia")
    t = start  # µs, with sub-µs digits that must come back exactly
    for step in (1, 2):
        start = t
        for i in range(3):
            late = 300 if (step, i) == (2, 2) else 0
            if late:
                b.frame("model.py(42): forward", t - 5, late + 10)
            b.kernel(f"gemm_{i}", t - 4 + late, t + late, dur=20)
            t += 21 + late
        b.x("user_annotation", f"ProfilerStep#{step}", start - 10, t - start + 20)
        t += 100
    return b.write(path)


def built_graph(tmp_path, build):
    """The dependency graph (tracedb.critical) of the whole of a trace build(b) makes on a Built()."""
    import tracedb
    from conftest import run_cli
    from tracedb import critical

    tmp_path.mkdir(parents=True, exist_ok=True)
    b = Built()
    build(b)
    db = tmp_path / "b.duckdb"
    run_cli("load", b.write(tmp_path / "b.json"), db=db, check=True)
    with tracedb.connect(db, files=True) as con:
        lo, hi = con.sql("SELECT ts_ns, end_ns FROM critical_windows('b') WHERE step IS NULL").rows[0]
        return critical.build(con.con, 1, lo, hi)
