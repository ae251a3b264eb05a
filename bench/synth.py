"""Generate a synthetic Kineto (PyTorch profiler) trace of a given size.

The event mix imitates a vLLM decode trace: per step a ProfilerStep / execute_* annotation,
a Python call chain, cpu_ops with shapes, runtime launches with ac2g flows, kernels with launch
args, memcpys, memory instants, and process/thread metadata. Timestamps are epoch-scale
fractional microseconds, like real traces. Written streaming, so any size fits in memory.

    python bench/synth.py OUT.json --mb 1024 [--gzip]
"""

from __future__ import annotations

import argparse
import gzip
import json
import random

KERNELS = [
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
    "void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 4, cutlass::bfloat16_t> >, false, true, false, false, true, true, false, false>(flash::Flash_fwd_params)",
    "void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, float, int, int)",
    "void vllm::act_and_mul_kernel<c10::BFloat16, &(c10::BFloat16 vllm::silu_kernel<c10::BFloat16>(c10::BFloat16 const&)), true>(c10::BFloat16*, c10::BFloat16 const*, int)",
    "void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, int, long, long, int, int, int)",
    "void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, __nv_bfloat16, (vllm::Fp8KVCacheDataType)0>(__nv_bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16*, __nv_bfloat16*, long const*, int, int, int, int, int, int, float const*, float const*)",
    "triton_poi_fused_add_mul_0",
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)",
]
CPU_OPS = ["aten::mm", "vllm::unified_attention", "vllm::fused_add_rms_norm", "aten::silu", "vllm::rotary_embedding",
           "vllm::reshape_and_cache_flash", "aten::add", "aten::fill_"]
# The same model on an AMD GPU, as a comparison partner: vendor kernels where NVIDIA has its own,
# the same Triton and PyTorch-native kernels, and one extra elementwise kernel per layer (a residual
# add the NVIDIA flavour fuses into its norm).
AMD_KERNELS = [
    "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT64x64x64_MI16x16x1_SN_LDSB1_AFC1_AFEM1_ASEM1_CLR1_GRVWA8",
    "kernel_unified_attention_2d",
    "_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi256ELi16ELb1ELb0ELb1ELi1EEEvPT0_PT_PfS4_S4_S4_diiiiiiib",
    "void vllm::act_and_mul_kernel<__hip_bfloat16, &(__hip_bfloat16 vllm::silu_kernel<__hip_bfloat16>(__hip_bfloat16 const&)), true>(__hip_bfloat16*, __hip_bfloat16 const*, int)",
    "void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, int, long, long, int, int, int)",
    "void vllm::reshape_and_cache_flash_kernel<__hip_bfloat16, __hip_bfloat16, (vllm::Fp8KVCacheDataType)0>(__hip_bfloat16 const*, __hip_bfloat16 const*, __hip_bfloat16*, __hip_bfloat16*, long const*, int, int, int, int, int, int, float const*, float const*)",
    "triton_poi_fused_add_mul_0",
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)",
    "void at::native::vectorized_elementwise_kernel<8, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)",
]
AMD_CPU_OPS = CPU_OPS + ["aten::add"]
DEVICES = {
    "nvidia": '{"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85018279936, '
              '"computeMajor": 9, "computeMinor": 0, "warpSize": 32, "numSms": 132}',
    "amd": '{"id": 0, "name": "AMD Instinct MI300X", "totalGlobalMem": 205822885888, '
           '"computeMajor": 9, "computeMinor": 4, "warpSize": 64, "numSms": 304}',
}
FRAMES = ["threading.py(1032): _bootstrap", "vllm/worker/model_runner.py(1700): execute_model",
          "vllm/model_executor/models/llama.py(340): forward", "torch/nn/modules/module.py(1750): _call_impl",
          "vllm/model_executor/layers/linear.py(512): forward"]


def _dump(obj: dict) -> str:
    # Kineto writes one event per line group; mimic its spacing.
    return "  " + json.dumps(obj, separators=(", ", ": "))


class Writer:
    def __init__(self, out, target_bytes: int):
        self.out = out
        self.target = target_bytes
        self.written = 0
        self.first = True
        self.count = 0

    def event(self, obj: dict) -> None:
        text = _dump(obj)
        if not self.first:
            text = ",\n" + text
        self.first = False
        self.out.write(text)
        self.written += len(text)
        self.count += 1

    @property
    def full(self) -> bool:
        return self.written >= self.target


def ts(us: float) -> float:
    return round(us, 3)


def generate(path: str, mb: float, use_gzip: bool, seed: int = 0, flavour: str = "nvidia") -> int:
    rng = random.Random(seed)
    kernels, cpu_ops = (AMD_KERNELS, AMD_CPU_OPS) if flavour == "amd" else (KERNELS, CPU_OPS)
    opener = gzip.open if use_gzip else open
    with opener(path, "wt", encoding="utf-8") as out:
        out.write('{\n  "schemaVersion": 1,\n  "deviceProperties": [\n')
        out.write(f'    {DEVICES[flavour]}\n  ],\n')
        if flavour == "amd":
            out.write('  "roctracer_version": 4,\n  "hip_runtime_version": 60342,\n  "with_stack": 1,\n')
        else:
            out.write('  "cupti_version": 24,\n  "cuda_runtime_version": 12080,\n  "with_stack": 1,\n')
        out.write('  "traceEvents": [\n')
        w = Writer(out, int(mb * 1024 * 1024))
        pid, tid = 4242, 4242
        w.event({"name": "process_name", "ph": "M", "ts": 1736413971558000.0, "pid": pid, "tid": 0,
                 "args": {"name": "python3"}})
        w.event({"name": "thread_name", "ph": "M", "ts": 1736413971558000.0, "pid": pid, "tid": tid,
                 "args": {"name": "thread 4242 (python3)"}})
        t = 1736413971558972.912
        gpu_t = t
        ext = corr = pyid = 0
        step = 0
        while not w.full:
            step += 1
            step_start, gpu_start, step_ext = t, max(gpu_t, t), ext
            first_frame = pyid + 1
            pyid += len(FRAMES)
            for layer in range(32):
                if w.full:
                    break
                for k, kname in enumerate(kernels):
                    ext += 1
                    corr += 1
                    t += rng.uniform(3.0, 9.0)
                    w.event({"ph": "X", "cat": "cpu_op", "name": cpu_ops[k], "pid": pid, "tid": tid,
                             "ts": ts(t), "dur": ts(rng.uniform(5, 15)),
                             "args": {"External id": ext, "Record function id": 0, "Sequence number": ext,
                                      "Input Dims": [[32, 4096], [4096, 4096]], "Input type": ["c10::BFloat16", "c10::BFloat16"],
                                      "Input Strides": [[4096, 1], [1, 4096]], "Concrete Inputs": ["", ""], "Ev Idx": ext}})
                    w.event({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": pid, "tid": tid,
                             "ts": ts(t + 1.25), "dur": ts(rng.uniform(2, 5)),
                             "args": {"External id": ext, "cbid": 211, "correlation": corr}})
                    w.event({"ph": "s", "id": corr, "pid": pid, "tid": tid, "ts": ts(t + 1.25), "cat": "ac2g", "name": "ac2g"})
                    gpu_t = max(gpu_t, t) + rng.uniform(1, 4)
                    kdur = ts(rng.uniform(2, 60))
                    w.event({"ph": "X", "cat": "kernel", "name": kname, "pid": 0, "tid": 7, "ts": ts(gpu_t),
                             "dur": kdur,
                             "args": {"External id": ext, "queued": 0, "device": 0, "context": 1, "stream": 7,
                                      "correlation": corr, "registers per thread": 128, "shared memory": 49152,
                                      "blocks per SM": 0.97, "warps per SM": 3.88, "grid": [132, 1, 1],
                                      "block": [384, 1, 1], "est. achieved occupancy %": 6}})
                    w.event({"ph": "f", "id": corr, "pid": 0, "tid": 7, "ts": ts(gpu_t), "cat": "ac2g",
                             "name": "ac2g", "bp": "e"})
                    gpu_t += kdur
                if layer % 8 == 0:
                    w.event({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": pid,
                             "tid": tid, "ts": ts(t + 2), "args": {"Total Reserved": 121634816, "Bytes": 4096,
                                                                    "Device Id": 0, "Device Type": 1}})
                    corr += 1
                    w.event({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pinned -> Device)", "pid": 0,
                             "tid": 7, "ts": ts(gpu_t), "dur": 1.5,
                             "args": {"External id": ext, "device": 0, "context": 1, "stream": 7,
                                      "correlation": corr, "bytes": 4096, "memory bandwidth (GB/s)": 2.730666}})
            # The step's annotations and Python frames enclose all of its launches (and kernels):
            # written once the step's length is known (Chrome traces need not be sorted).
            step_dur = ts(t - step_start + 20)
            name = f"execute_context_0(0)_generation_32({step})"
            w.event({"ph": "X", "cat": "user_annotation", "name": name, "pid": pid, "tid": tid,
                     "ts": ts(step_start), "dur": step_dur, "args": {"External id": step_ext, "Record function id": 0}})
            w.event({"ph": "X", "cat": "gpu_user_annotation", "name": name, "pid": 0, "tid": 7, "ts": ts(gpu_start),
                     "dur": ts(gpu_t - gpu_start + 1), "args": {"External id": step_ext}})
            parent = None
            for depth, frame in enumerate(FRAMES):
                w.event({"ph": "X", "cat": "python_function", "name": frame, "pid": pid, "tid": tid,
                         "ts": ts(step_start + 0.5 + depth * 0.25), "dur": ts(step_dur - 1 - depth * 0.5),
                         "args": {"Python parent id": parent, "Python id": first_frame + depth, "Python thread": 0}})
                parent = first_frame + depth
            t = t + 30
        out.write('\n  ],\n  "traceName": "synthetic",\n  "displayTimeUnit": "ms",\n'
                  '  "baseTimeNanoseconds": 1736413000000000000\n}\n')
        return w.count


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--mb", type=float, default=100.0, help="approximate uncompressed size in MiB")
    ap.add_argument("--gzip", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--flavour", choices=("nvidia", "amd"), default="nvidia",
                    help="kernel names and device of an NVIDIA H100 or an AMD MI300X run")
    a = ap.parse_args()
    n = generate(a.out, a.mb, a.gzip, a.seed, a.flavour)
    print(f"{a.out}: {n} events")


if __name__ == "__main__":
    main()
