"""Re-timing a step through its dependency graph (tracedb.replay): each of Daydream's primitives on
traces built here, where what the step saves is known exactly, and what `why` saves for a host
frame."""

from __future__ import annotations

import json

import tracedb
from builders import GEMM, NORM, US, Built, built_graph, stream
from conftest import run_cli
from tracedb import replay
from tracedb.testing import runtime_call


def _host_bound(b):
    """Two operations 890 µs of Python apart, launching a 20 µs and a 10 µs kernel: the device's
    span is the host's time between them."""
    b.x("cpu_op", "aten::mm", 0, 10, **{"External id": 1})
    b.on(GEMM, 2, 5, 20, stream(7), ext=1)
    b.x("cpu_op", "aten::add", 900, 10, **{"External id": 2})
    b.on(NORM, 902, 905, 10, stream(7), ext=2)


def test_the_host_s_time_set_in_an_interval_shortens_a_host_bound_step(tmp_path):
    """The host's 890 µs between the operations set to 89: the second kernel starts 801 µs sooner."""
    graph = built_graph(tmp_path, _host_bound)
    thread = next((e.pid, e.tid) for e in graph.events if e.kind == "host")
    before = replay.replay(graph, device=True)
    assert before == 910 * US  # the first kernel's start (5 µs) to the second's end (915 µs)
    change = replay.host_time(graph, thread, [(10 * US, 900 * US)], 89 * US)
    assert before - replay.replay(graph, change, device=True) == 801 * US
    # half of it, by a factor: 445 µs sooner
    half = replay.host_scale(graph, thread, [(10 * US, 900 * US)], 0.5)
    assert before - replay.replay(graph, half, device=True) == 445 * US
    # an interval the thread spends in no time of its own changes nothing
    assert not replay.host_time(graph, thread, [(2_000 * US, 3_000 * US)], 0)


def test_a_faster_kernel_and_a_faster_host_combine(tmp_path):
    """A kernel at half its time saves nothing while the host holds the next launch; with the host
    sped up too, both changes count (|: one change of both)."""
    graph = built_graph(tmp_path, _host_bound)
    thread = next((e.pid, e.tid) for e in graph.events if e.kind == "host")
    first = next(i for i, e in enumerate(graph.events) if e.kind == "kernel")
    before = replay.replay(graph, device=True)
    kernel = replay.scale_durations(graph, [first], 0.5)
    assert replay.replay(graph, kernel, device=True) == before
    host = replay.host_time(graph, thread, [(10 * US, 900 * US)], 0)
    both = kernel | host
    # the host gone, the second kernel is ready 10 µs after the first starts: it waits for the first
    # on the stream (20 µs, or 10 at half its time), then runs its 10 µs
    assert replay.replay(graph, host, device=True) == (20 + 10) * US
    assert replay.replay(graph, both, device=True) == (10 + 10) * US


def _synchronised(b):
    """A 500 µs kernel, a device synchronize the host waits in until it ends (the device's Context
    Sync record), then an operation launching a 10 µs kernel."""
    b.x("cpu_op", "aten::mm", 0, 10, **{"External id": 1})
    b.on(GEMM, 1, 5, 500, stream(7), ext=1)
    b.events.append(runtime_call("cudaDeviceSynchronize", 20, 485, 77))
    b.x("cuda_sync", "Context Sync", 505, 1, pid=0, tid=7, correlation=77, cuda_sync_kind="Context Sync", stream=-1)
    b.x("cpu_op", "aten::add", 510, 10, **{"External id": 2})
    b.on(NORM, 512, 517, 10, stream(7), ext=2)


def test_a_synchronisation_removed_lets_the_host_queue_the_next_kernel(tmp_path):
    """Without the synchronize, the host launches the second kernel long before the first ends: it
    follows the first on the stream at once, and the 12 µs the device idled (505 to 517) go."""
    graph = built_graph(tmp_path, _synchronised)
    sync = next(i for i, e in enumerate(graph.events) if e.name == "cudaDeviceSynchronize")
    before = replay.replay(graph, device=True)
    assert before == 522 * US
    after = replay.replay(graph, replay.without_sync(graph, [sync]), device=True)
    assert before - after == 12 * US
    # the stream keeps its order: the second kernel does not start before the first ends
    assert after == 510 * US


def _frame_pair(tmp_path, python_us: int, name: str, flavour: str):
    """One step: a Python frame of model.py holding three operations, each launching a 10 µs kernel,
    python_us of Python apart."""
    b = Built(flavour)
    step = 3 * python_us + 100
    b.x("user_annotation", "ProfilerStep#1", 0, step)
    b.frame("model.py(10): forward", 1, step - 2)
    for n in range(3):
        ts = 2 + n * (python_us + 10)
        b.x("cpu_op", "aten::mm", ts, 10, **{"External id": n + 1})
        b.on(GEMM, ts + 2, ts + 5, 10, stream(7), ext=n + 1)
    return b.write(tmp_path / f"{name}.json")


def test_why_saves_what_the_slower_host_takes_longer_in_a_frame(tmp_path):
    """B's host runs 400 µs of Python between launches in model.py's forward, A's 100: B's device
    idles 600 µs more, and B's host time in the frame at A's saves most of it: the replay scales all
    of B's time in the frame by A's over B's (a third), so the Python between launches comes out a
    little longer than A's."""
    a = _frame_pair(tmp_path, 100, "a", "nvidia")
    b = _frame_pair(tmp_path, 400, "b", "amd")
    db = tmp_path / "f.duckdb"
    run_cli("load", a, b, "--jobs", "1", db=db, check=True)
    out = run_cli("report", "why", "--trace", "a", "--vs", "b", "--limit", "all", "--format", "json", db=db)
    assert out.returncode == 0, out.stderr
    rows = {r["part"]: r for r in json.loads(out.stdout)}
    frame = rows["host-bound idle|model.py: forward"]
    assert frame["at_stake_ns"] == 600 * US
    assert 540 * US <= frame["saves_ns"] <= 600 * US
    assert frame["rank"] == 1 and "first fix: host-bound idle in model.py(10): forward, saves" in frame["answer"]


def test_a_synchronous_copy_removed_no_longer_holds_its_own_copy(tmp_path):
    """A cudaMemcpy the host waits in for 500 µs whose copy runs at its end (nothing else on the
    device: the call held it), then a 10 µs kernel: removed, the copy runs at once and the kernel
    follows right after the host launches it, 495 µs sooner."""
    def build(b):
        b.on("Memcpy HtoD (Pageable -> Device)", 20, 515, 5, stream(7), cat="gpu_memcpy", launch="cudaMemcpy")
        b.events[-2]["dur"] = 500  # the call lasts until its copy is done
        b.x("cpu_op", "aten::add", 530, 10, **{"External id": 2})
        b.on(NORM, 532, 535, 10, stream(7), ext=2)

    graph = built_graph(tmp_path, build)
    copy = next(i for i, e in enumerate(graph.events) if e.name == "cudaMemcpy")
    before = replay.replay(graph, device=True)
    assert before == 30 * US  # the copy's start (515 µs) to the kernel's end (545)
    after = replay.replay(graph, replay.without_sync(graph, [copy]), device=True)
    # the copy at the call's start (20, for 5 µs), the host on at once: the operation at 30 (its
    # 10 µs after the call kept), the kernel launched at 32, running from 35 to 45
    assert after == (45 - 20) * US


def test_the_host_s_time_in_intervals_is_what_every_edge_of_the_thread_holds(examples_db):
    """_host_inside looks only at the edges that can reach each interval: on a real trace's steps,
    with intervals of every length (inside one edge, across many, before and after all), it finds
    what a walk over every edge of the thread finds."""
    import random

    from tracedb import critical

    with tracedb.connect(examples_db) as db:
        windows = critical.windows(db.con, "h100_bert-small")
        graphs = critical.build_all(db.con, windows[0][0], [(lo, hi) for _, _, lo, hi in windows])
    rng = random.Random(7)
    checked = 0
    for graph in graphs[:3]:
        took = replay._plan(graph).took
        for thread in {(e.pid, e.tid) for e in graph.events if e.kind == "host"}:
            edges = [(graph.node_ts(graph.src[e]), graph.node_ts(graph.dst[e]), e) for e in range(len(graph.src))
                     if took[e] > 0 and graph.type[e] in (critical.OPERATOR, critical.DEPENDENCY)
                     and graph.events[graph.src[e] >> 1].kind == graph.events[graph.dst[e] >> 1].kind == "host"
                     and (graph.events[graph.src[e] >> 1].pid, graph.events[graph.src[e] >> 1].tid) == thread
                     and (graph.events[graph.dst[e] >> 1].pid, graph.events[graph.dst[e] >> 1].tid) == thread]
            lo = min(e.ts for e in graph.events) - 1_000
            hi = max(e.end for e in graph.events) + 1_000
            for _ in range(20):
                cuts = sorted(rng.randrange(lo, hi) for _ in range(2 * rng.randrange(1, 6)))
                intervals = list(zip(cuts[::2], cuts[1::2]))
                want = {}
                for a, b, e in edges:
                    part = sum(max(0, min(b, h) - max(a, l)) for l, h in replay._merged(intervals))
                    if part:
                        want[e] = part
                assert replay._host_inside(graph, thread, intervals) == want
                checked += bool(want)
    assert checked >= 10  # the intervals did hold the threads' time
