"""Kineto traces whose right answers are known, for tracedb's tests and benchmarks and for users
testing their own rules.

    from tracedb.testing import KinetoTrace

    b = KinetoTrace()                                    # or KinetoTrace("amd")
    b.x("cpu_op", "mylib::fused_gemm", 0, 20, **{"External id": 7})
    b.kernel("my_gemm_kernel", launch_ts=2, kernel_ts=100, ext=7)
    b.write("mine.json")                                 # then tracedb load mine.json

The event constructors (x_event, kernel_event, runtime_call, frame_event, ...) return one event as
a dict, laid out as Kineto (the PyTorch profiler's tracer) writes it; KinetoTrace collects them.
Times are in microseconds, as in the traces.
"""

from __future__ import annotations

import json
from pathlib import Path

# Where events happen: the process and thread of the CPU events, the GPU and stream of the
# kernels (Kineto writes a GPU as a process and each of its streams as a thread).
PID, TID = 100, 100
CPU = {"pid": PID, "tid": TID}
GPU = {"pid": 0, "tid": 7}

FLAVOURS = ("nvidia", "amd")
LAUNCH = {"nvidia": "cudaLaunchKernel", "amd": "hipLaunchKernel"}
GRAPH_LAUNCH = {"nvidia": "cudaGraphLaunch", "amd": "hipGraphLaunch"}
# A runtime call that launches nothing: real traces hold many beside the launches.
HELPER_CALL = {"nvidia": "cudaStreamIsCapturing", "amd": "hipGetDevice"}
# One GPU of each vendor as Kineto records it in deviceProperties: an H100 SXM, an MI300X.
DEVICES = {
    "nvidia": {"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85018279936,
               "computeMajor": 9, "computeMinor": 0, "warpSize": 32, "numSms": 132},
    "amd": {"id": 0, "name": "AMD Instinct MI300X", "totalGlobalMem": 205822885888,
            "computeMajor": 9, "computeMinor": 4, "warpSize": 64, "numSms": 304},
}
# The least a small trace says of its GPU: a name and a warp size, enough to tell the vendor.
SMALL_DEVICES = {
    "nvidia": {"id": 0, "name": "NVIDIA H100", "warpSize": 32},
    "amd": {"id": 0, "name": "AMD Instinct MI300X", "warpSize": 64},
}
# The trace metadata naming the profiler's runtime (CUPTI and CUDA, or roctracer and HIP).
RUNTIME_VERSIONS = {
    "nvidia": {"cupti_version": 24, "cuda_runtime_version": 12080},
    "amd": {"roctracer_version": 4, "hip_runtime_version": 60342},
}


def x_event(cat, name, ts, dur, where=CPU, **args) -> dict:
    """A complete event (ph X): an operator, a runtime call, a kernel, an annotation, a Python frame."""
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, **where, "args": args}


def kernel_event(name, ts, dur, correlation, ext=None, where=GPU, cat="kernel", device=0, **args) -> dict:
    """A kernel (or, by cat, a gpu_memcpy / gpu_memset) on the stream `where` names; its correlation
    is that of the runtime call that launched it. Args in Kineto's order: External id, queued,
    device, context, stream, correlation, then the rest (grid, block, registers per thread, ...)."""
    known = {"External id": ext, "queued": args.pop("queued", None), "device": device,
             "context": args.pop("context", None), "stream": where["tid"], "correlation": correlation}
    return x_event(cat, name, ts, dur, where, **{k: v for k, v in known.items() if v is not None}, **args)


def runtime_call(name, ts, dur, correlation, ext=None, where=CPU, **args) -> dict:
    """A runtime API call (cudaLaunchKernel, hipGraphLaunch, ...); the kernels it launched share its
    correlation, the cpu_op that made it its External id."""
    linked = {"External id": ext} if ext is not None else {}
    return x_event("cuda_runtime", name, ts, dur, where, **linked, **args, correlation=correlation)


def frame_event(name, ts, dur, python_id=None, parent=None, where=CPU, **args) -> dict:
    """A Python function's frame (python_function); with a Python id, it names its caller's
    (parent None: the outermost frame). Without, the frame stands alone, as in traces recorded
    without stacks' ids."""
    ids = {"Python parent id": parent, "Python id": python_id} if python_id is not None else {}
    return x_event("python_function", name, ts, dur, where, **ids, **args)


def flow_start(cat, flow_id, ts, where=CPU) -> dict:
    """The start of a flow arrow (ph s): ac2g from a launch to its kernel, fwdbwd between ops."""
    return {"ph": "s", "cat": cat, "name": cat, "id": flow_id, "ts": ts, **where}


def flow_finish(cat, flow_id, ts, where=CPU) -> dict:
    """The end of the flow arrow flow_start began (ph f), bound to the enclosing event."""
    return {"ph": "f", "cat": cat, "name": cat, "id": flow_id, "ts": ts, **where, "bp": "e"}


def instant_event(cat, name, ts, where=CPU, scope="t", **args) -> dict:
    """An instant (ph i), e.g. the allocator's [memory] events (cat cpu_instant_event)."""
    return {"ph": "i", "cat": cat, "name": name, "ts": ts, **where, "s": scope, "args": args}


def metadata_event(name, value, pid, tid=0, ts=None) -> dict:
    """A metadata event (ph M): process_name or thread_name naming a pid or tid."""
    when = {"ts": ts} if ts is not None else {}
    return {"ph": "M", "name": name, **when, "pid": pid, "tid": tid, "args": {"name": value}}


def write_trace(path, events, **metadata) -> Path:
    """A Kineto-style trace file: metadata keys around traceEvents (keys prefixed after_ go after
    it, as some profilers write them)."""
    path = Path(path)
    body = {"schemaVersion": 1, **{k: v for k, v in metadata.items() if not k.startswith("after_")},
            "traceEvents": events}
    body.update({k[len("after_"):]: v for k, v in metadata.items() if k.startswith("after_")})
    path.write_text(json.dumps(body))
    return path


class KinetoTrace:
    """A small Kineto trace built event by event: CPU launches and the GPU kernels they start,
    Python frames, graph replays. flavour ("nvidia" or "amd") chooses the launch calls' names and
    the device; device replaces the latter."""

    def __init__(self, flavour: str = "nvidia", device: dict | None = None):
        if flavour not in FLAVOURS:
            raise ValueError(f"flavour {flavour!r} is not one of {', '.join(FLAVOURS)}")
        self.flavour = flavour
        self.device = SMALL_DEVICES[flavour] if device is None else device
        self.events: list[dict] = [metadata_event("process_name", "python3", PID)]
        self.corr = 1000

    def _correlation(self, corr):
        if corr is None:
            self.corr += 1
            corr = self.corr
        return corr

    def x(self, cat, name, ts, dur, where=CPU, **args):
        """A complete event (see x_event)."""
        self.events.append(x_event(cat, name, ts, dur, where, **args))

    def kernel(self, name, launch_ts, kernel_ts, dur=5, corr=None, launch=True, ext=None) -> int:
        """A kernel at kernel_ts launched by a launch call at launch_ts (same correlation, a new one
        unless corr is given; launch false: no call recorded). Returns the correlation."""
        corr = self._correlation(corr)
        if launch:
            self.events.append(runtime_call(LAUNCH[self.flavour], launch_ts, 2, corr, ext))
        self.events.append(kernel_event(name, kernel_ts, dur, corr, ext))
        return corr

    def frame(self, name, ts, dur, python_id=None, parent=None, **args):
        """A Python frame (see frame_event)."""
        self.events.append(frame_event(name, ts, dur, python_id, parent, **args))

    def graph_launch(self, ts, kernels, dur=5, corr=None, kernel_dur=5) -> int:
        """A graph replay: one launch call at ts and the kernels it ran, (name, kernel_ts) pairs,
        all sharing its correlation. Returns the correlation."""
        corr = self._correlation(corr)
        self.events.append(runtime_call(GRAPH_LAUNCH[self.flavour], ts, dur, corr))
        for name, kernel_ts in kernels:
            self.events.append(kernel_event(name, kernel_ts, kernel_dur, corr))
        return corr

    def write(self, path, **metadata) -> Path:
        """The trace file at path, with the device (and any more metadata keys, see write_trace)."""
        return write_trace(path, self.events, **{"deviceProperties": [self.device], **metadata})


# -- golden outputs: every report as its header's examples run it ----------------------------------

def run_command(argv: list[str], env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """Run a tracedb command in this process (the command line's own main()): its exit code,
    standard output and standard error."""
    import contextlib
    import io
    import os
    import sys

    from . import cli

    out, err = io.StringIO(), io.StringIO()
    env = env or {}
    saved_env = {k: os.environ.get(k) for k in env}
    saved_argv = sys.argv
    os.environ.update(env)
    sys.argv = ["tracedb", *argv]
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                cli.main()
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.argv = saved_argv
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return code, out.getvalue(), err.getvalue()


def canonical_json(text: str, digits: int = 6) -> str:
    """A report's JSON output in a form two runs agree on: numbers to `digits` significant digits
    (a parallel sum's last bits vary), times of day (a trace's load time) as <time>, each table's
    rows sorted (ties may come in any order)."""
    import re

    when = re.compile(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(\.\d+)?")

    def rounded(value):
        if isinstance(value, str) and when.fullmatch(value):
            return "<time>"
        if isinstance(value, float):
            return float(f"{value:.{digits}g}")
        if isinstance(value, list):
            return [rounded(v) for v in value]
        if isinstance(value, dict):
            return {k: rounded(v) for k, v in value.items()}
        return value

    data = rounded(json.loads(text))
    tables = data if isinstance(data, dict) else {"main": data}
    ordered = {name: sorted(rows, key=lambda r: json.dumps(r, sort_keys=True)) for name, rows in tables.items()}
    return json.dumps(ordered, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def golden_outputs(database: str | Path, runs: dict[str, list[list[str]]], fmt: str = "json",
                   env: dict[str, str] | None = None) -> dict[str, str]:
    """Per report, the output of each of its runs (the arguments after `tracedb report`) on the
    database: json in canonical form (canonical_json), any other format as printed. A run that
    fails gives its error line."""
    out = {}
    for name, arg_lists in sorted(runs.items()):
        parts = []
        for args in arg_lists:
            code, text, err = run_command(["report", *args, "--format", fmt, "--db", str(database)], env)
            if code == 0 and fmt == "json":
                text = canonical_json(text)
            parts.append(f"## tracedb report {' '.join(args)}\n" + (text if code == 0 else f"error: {err.strip()}\n"))
        out[name] = "\n".join(parts)
    return out


def example_runs() -> dict[str, list[list[str]]]:
    """Every report's `-- Example:` lines, as the arguments after `tracedb report`."""
    import shlex

    from . import reports

    return {name: [shlex.split(e)[2:] for e in r.examples] for name, r in reports.available().items()}
