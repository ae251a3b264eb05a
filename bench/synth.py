"""Generate a synthetic Kineto (PyTorch profiler) trace of a given size, shaped like real ones.

The event mix imitates a vLLM step recorded with shapes and stacks, in the proportions measured on
the real traces of ../shared/corpus by bench/corpus_shape.py (all traces pooled, per GPU kernel):
about 30 python_function frames, 3 cpu_ops, 2 runtime calls, 3 flow events and 0.3 memory
instants; every cpu_op carries Kineto's shape args (Input Dims, Input type, Input Strides,
Concrete Inputs) with about 4.5 empty lists and 2.6 empty strings; events are laid out as Kineto
writes them (an object over four to six indented lines, args on their own line). Kernel names mix
vendor libraries (cuBLASLt / hipBLASLt, FlashAttention, NCCL / RCCL), vLLM custom ops, Inductor's
Triton kernels and PyTorch-native ones. Timestamps are epoch-scale fractional microseconds. Written
streaming, so any size fits in memory. The events and the vendors' constants are tracedb.testing's;
the layout on disk is this file's.

    python bench/synth.py OUT.json --mb 1024 [--gzip] [--flavour amd]
"""

from __future__ import annotations

import argparse
import gzip
import json
import random

from tracedb.testing import (DEVICES, FLAVOURS, GPU, HELPER_CALL, LAUNCH, RUNTIME_VERSIONS, flow_finish, flow_start,
                             frame_event, instant_event, kernel_event, metadata_event, runtime_call, x_event)

# One layer of the model: (kernel, the cpu_op that launched it). The same model on an AMD GPU, as a
# comparison partner: vendor kernels where NVIDIA has its own, the same Triton and PyTorch-native
# kernels, and one extra elementwise kernel per layer (a residual add the NVIDIA flavour fuses
# into its norm).
LAYER = {
    "nvidia": [
        ("triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_0", "aten::add"),
        ("nvjet_tst_128x64_64x8_1x2_h_bz_coopA_TNT", "aten::mm"),
        ("void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, int, long, long, int, int, int)", "vllm::rotary_embedding"),
        ("void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, __nv_bfloat16, (vllm::Fp8KVCacheDataType)0>(__nv_bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16*, __nv_bfloat16*, long const*, int, int, int, int, int, int, float const*, float const*)", "vllm::reshape_and_cache_flash"),
        ("void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 4, cutlass::bfloat16_t> >, false, true, false, false, true, true, false, false>(flash::Flash_fwd_params)", "vllm::unified_attention"),
        ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", "aten::mm"),
        ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "vllm::all_reduce"),
        ("triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_1", "aten::add"),
        ("nvjet_tst_256x128_64x4_2x1_v_bz_coopB_TNT", "aten::mm"),
        ("triton_poi_fused_mul_silu_2", "aten::mul"),
        ("nvjet_tst_128x64_64x8_1x2_h_bz_coopA_TNT", "aten::mm"),
        ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "vllm::all_reduce"),
    ],
    "amd": [
        ("_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi256ELi16ELb1ELb0ELb1ELi1EEEvPT0_PT_PfS4_S4_S4_diiiiiiib", "aiter::rmsnorm2d_fwd_with_add"),
        ("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT64x64x64_MI16x16x1_SN_LDSB1_AFC1_AFEM1_ASEM1_CLR1_GRVWA8", "aten::mm"),
        ("void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, int, long, long, int, int, int)", "vllm::rotary_embedding"),
        ("void vllm::reshape_and_cache_flash_kernel<__hip_bfloat16, __hip_bfloat16, (vllm::Fp8KVCacheDataType)0>(__hip_bfloat16 const*, __hip_bfloat16 const*, __hip_bfloat16*, __hip_bfloat16*, long const*, int, int, int, int, int, int, float const*, float const*)", "vllm::reshape_and_cache_flash"),
        ("kernel_unified_attention_2d", "vllm::unified_attention"),
        ("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT128x128x64_MI16x16x1_SN_LDSB1_AFC1_AFEM1_ASEM1_CLR1_GRVWA8", "aten::mm"),
        ("ncclDevKernel_Generic_2(ncclDevKernelArgsStorage<4096ul>)", "vllm::all_reduce"),
        ("void at::native::vectorized_elementwise_kernel<8, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)", "aten::add"),
        ("_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi256ELi16ELb1ELb0ELb1ELi1EEEvPT0_PT_PfS4_S4_S4_diiiiiiib", "aiter::rmsnorm2d_fwd_with_add"),
        ("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x128x64_MI16x16x1_SN_LDSB1_AFC1_AFEM1_ASEM1_CLR1_GRVWA8", "aten::mm"),
        ("void vllm::act_and_mul_kernel<__hip_bfloat16, &(__hip_bfloat16 vllm::silu_kernel<__hip_bfloat16>(__hip_bfloat16 const&)), true>(__hip_bfloat16*, __hip_bfloat16 const*, int)", "vllm::silu_and_mul"),
        ("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT64x64x64_MI16x16x1_SN_LDSB1_AFC1_AFEM1_ASEM1_CLR1_GRVWA8", "aten::mm"),
        ("ncclDevKernel_Generic_2(ncclDevKernelArgsStorage<4096ul>)", "vllm::all_reduce"),
    ],
}
# The host's process and thread (its main Python thread).
HOST = {"pid": 4242, "tid": 4242}
# Kineto's args of a kernel beyond its ids: launch configuration and occupancy.
KERNEL_DETAILS = {"registers per thread": 128, "shared memory": 49152, "blocks per SM": 0.97,
                  "warps per SM": 3.88, "grid": [132, 1, 1], "block": [384, 1, 1], "est. achieved occupancy %": 6}
STEP_FRAMES = ["threading.py(1032): _bootstrap", "vllm/v1/worker/gpu_model_runner.py(1700): execute_model",
               "vllm/model_executor/models/llama.py(340): forward"]
# The Python calls between the model's forward and one launch (about 30 frames per kernel in real
# traces, measured by bench/corpus_shape.py): nested module calls, each with a sibling call done
# before it.
KERNEL_FRAMES = ["torch/nn/modules/module.py(1762): _call_impl", "torch/nn/modules/module.py(1751): _wrapped_call_impl",
                 "vllm/model_executor/layers/linear.py(512): forward", "torch/_ops.py(1158): __call__",
                 "<built-in method mm of type object at 0x7f3a2b1c0d20>"]
SIBLING_FRAMES = ["torch/nn/modules/module.py(1928): __getattr__", "vllm/distributed/parallel_state.py(260): get_tp_group",
                  "typing.py(1256): __instancecheck__"]


def _args(args: dict) -> str:
    return ", ".join(f"{json.dumps(k)}: {json.dumps(v, separators=(', ', ': '))}" for k, v in args.items())


def _dump(obj: dict) -> str:
    """An event laid out as Kineto writes it: ph, cat, name, pid, tid on the first line, ts and dur
    on the next, args on a line of their own."""
    head = {k: obj[k] for k in ("ph", "cat", "name", "pid", "tid") if k in obj}
    times = {k: obj[k] for k in ("ts", "dur") if k in obj}
    rest = {k: v for k, v in obj.items() if k not in head and k not in times and k != "args"}
    lines = ["  {", "    " + _args(head) + ",", "    " + _args({**times, **rest})]
    if "args" in obj:
        lines[-1] += ","
        lines += ['    "args": {', "      " + _args(obj["args"]), "    }"]
    return "\n".join(lines + ["  }"])


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


def shape_args(ext: int, inputs: int) -> dict:
    """Kineto's shape args of a cpu_op with `inputs` inputs: two tensors, the rest scalars or
    absent (empty lists and empty strings, as real traces hold them)."""
    dims = [[32, 4096], [4096, 4096]][:inputs] + [[] for _ in range(max(0, inputs - 2))]
    return {"External id": ext, "Record function id": 0, "Sequence number": ext,
            "Concrete Inputs": ["", ""][:inputs] + (["1", "", "0"] * inputs)[:max(0, inputs - 2)],
            "Input type": ["c10::BFloat16", "c10::BFloat16"][:inputs] + ["Scalar", ""] * ((inputs - 1) // 2)
            + (["Scalar"] if inputs > 2 and inputs % 2 else []),
            "Input Strides": [[4096, 1], [1, 4096]][:inputs] + [[] for _ in range(max(0, inputs - 2))],
            "Input Dims": dims, "Ev Idx": ext}


def empty_args(ext: int) -> dict:
    """Shape args of an allocation (aten::empty): sizes, dtype and layout, none of them a tensor."""
    return {"External id": ext, "Record function id": 0, "Concrete Inputs": ["[32, 4096]", "15", ""],
            "Input type": ["ScalarList", "Scalar", ""], "Input Strides": [[], [], []],
            "Input Dims": [[], [], []], "Ev Idx": ext}


def generate(path: str, mb: float, use_gzip: bool, seed: int = 0, flavour: str = "nvidia") -> int:
    rng = random.Random(seed)
    layer_kernels = LAYER[flavour]
    opener = gzip.open if use_gzip else open
    with opener(path, "wt", encoding="utf-8") as out:
        out.write('{\n  "schemaVersion": 1,\n  "deviceProperties": [\n')
        out.write(f'    {json.dumps(DEVICES[flavour])}\n  ],\n')
        for key, value in {**RUNTIME_VERSIONS[flavour], "with_stack": 1}.items():
            out.write(f'  {json.dumps(key)}: {json.dumps(value)},\n')
        out.write('  "traceEvents": [\n')
        w = Writer(out, int(mb * 1024 * 1024))
        w.event(metadata_event("process_name", "python3", HOST["pid"], ts=1736413971558000.0))
        w.event(metadata_event("thread_name", f"thread {HOST['tid']} (python3)", **HOST, ts=1736413971558000.0))
        t = 1736413971558972.912
        gpu_t = t
        ext = corr = pyid = 0
        step = 0
        while not w.full:
            step += 1
            step_start, gpu_start, step_ext = t, max(gpu_t, t), ext
            step_frame = pyid + 1
            pyid += len(STEP_FRAMES)
            model_frame = pyid
            for layer in range(32):
                if w.full:
                    break
                for kname, op in layer_kernels:
                    # ~30 Python frames: six sibling chains of five nested calls, the last enclosing the launch
                    t += rng.uniform(1.0, 3.0)
                    launch_start = t
                    for chain in range(6):
                        parent = model_frame
                        last = chain == 5
                        chain_start = t
                        depth_frames = KERNEL_FRAMES if last else [*KERNEL_FRAMES[:2], *SIBLING_FRAMES]
                        span = 40.0 if last else 6.0
                        for depth, frame in enumerate(depth_frames):
                            pyid += 1
                            w.event(frame_event(frame, ts(chain_start + depth * 0.3), ts(span - depth * 0.6),
                                                pyid, parent, HOST, **{"Ev Idx": pyid}))
                            parent = pyid
                        t = chain_start + span + 0.5
                    # three cpu_ops: the op, its aten implementation, an allocation; with shapes
                    t_op = launch_start + 6 * 6.5 + 2.0
                    for depth, (name, inputs) in enumerate(((op, 3), ("aten::addmm" if "mm" in op else op, 5),
                                                            ("aten::empty", 0))):
                        ext += 1
                        w.event(x_event("cpu_op", name, ts(t_op + depth * 0.4), ts(12 - depth * 3), HOST,
                                        **(shape_args(ext, inputs) if inputs else empty_args(ext))))
                    corr += 1
                    launch_ts = ts(t_op + 1.5)
                    w.event(runtime_call(HELPER_CALL[flavour], ts(t_op + 1.0), 0.3, corr, where=HOST, cbid=317))
                    corr += 1
                    w.event(runtime_call(LAUNCH[flavour], launch_ts, ts(rng.uniform(2, 5)), corr, ext - 1, HOST,
                                         cbid=211))
                    w.event(flow_start("ac2g", corr, launch_ts, HOST))
                    gpu_t = max(gpu_t, launch_ts) + rng.uniform(1, 4)
                    kdur = ts(rng.uniform(2, 60))
                    w.event(kernel_event(kname, ts(gpu_t), kdur, corr, ext - 1, queued=0, context=1,
                                         **KERNEL_DETAILS))
                    w.event(flow_finish("ac2g", corr, ts(gpu_t), GPU))
                    if corr % 2:  # the autograd-style flow between the op and its implementation
                        w.event(flow_start("fwdbwd", ext, ts(t_op), HOST))
                        w.event(flow_finish("fwdbwd", ext, ts(t_op + 0.4), HOST))
                    gpu_t += kdur
                    if rng.random() < 0.3:
                        w.event(instant_event("cpu_instant_event", "[memory]", ts(t_op + 0.5), HOST, **{
                            "Total Reserved": 121634816, "Total Allocated": 60817408, "Bytes": 4096,
                            "Device Id": 0, "Device Type": 1, "Addr": 139725623001088 + ext, "Ev Idx": ext}))
                    t = t_op + 14
                if layer % 16 == 0:
                    corr += 1
                    w.event(kernel_event("Memcpy HtoD (Pinned -> Device)", ts(gpu_t), 1.5, corr, ext,
                                         cat="gpu_memcpy", context=1,
                                         **{"bytes": 4096, "memory bandwidth (GB/s)": 2.730666}))
            # The step's annotations and Python frames enclose all of its launches (and kernels):
            # written once the step's length is known (Chrome traces need not be sorted).
            step_dur = ts(t - step_start + 20)
            name = f"execute_context_0(0)_generation_32({step})"
            w.event(x_event("user_annotation", name, ts(step_start), step_dur, HOST,
                            **{"External id": step_ext, "Record function id": 0}))
            w.event(x_event("gpu_user_annotation", name, ts(gpu_start), ts(gpu_t - gpu_start + 1), GPU,
                            **{"External id": step_ext}))
            parent = None
            for depth, frame in enumerate(STEP_FRAMES):
                w.event(frame_event(frame, ts(step_start + 0.1 + depth * 0.05), ts(step_dur - 1 - depth * 0.1),
                                    step_frame + depth, parent, HOST, **{"Ev Idx": step_frame + depth}))
                parent = step_frame + depth
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
    ap.add_argument("--flavour", choices=FLAVOURS, default="nvidia",
                    help="kernel names and device of an NVIDIA H100 or an AMD MI300X run")
    a = ap.parse_args()
    n = generate(a.out, a.mb, a.gzip, a.seed, a.flavour)
    print(f"{a.out}: {n} events")


if __name__ == "__main__":
    main()
