"""Re-timing a step through its dependency graph (Daydream's simulation, USENIX ATC 2020): every
node of the graph (tracedb.critical) happens at the latest of its incoming edges, each edge taking
the time it took in the trace unless a change says otherwise. The changes are Daydream's primitives:
device work at new durations (an operation's kernels at another device's times, a collective
without its wait), a host thread's time in some intervals set or scaled (a Python frame's self
time), a synchronisation removed. Replayed unchanged, a step gives its recorded span.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
from dataclasses import dataclass, field

from .critical import CAUSAL, DEPENDENCY, LAUNCH, OPERATOR, SYNC, WAITS, Graph, adjacency


@dataclass
class _Plan:
    """What every replay of a graph shares: its edges in an order each follows its source's
    incoming edges, the time each takes unchanged, the nodes with no incoming edge at their
    recorded time, the edges that are an event's own duration, and the device's nodes."""
    order: list[int]
    took: list[int]
    start: list[int]
    own: dict[int, int]  # event index -> its start-to-end edge
    device: list[int]


def _plan(graph: Graph) -> _Plan:
    cached = getattr(graph, "_replay_plan", None)
    if cached is not None:
        return cached
    nodes = 2 * len(graph.events)
    outgoing, indegree = adjacency(graph, nodes, causal=True)
    waited = {graph.dst[e] for e in range(len(graph.src)) if graph.type[e] in (SYNC, WAITS)}
    origin = min(e.ts for e in graph.events)
    start = [graph.node_ts(n) - origin if indegree[n] == 0 else 0 for n in range(nodes)]
    took = list(graph.elapsed)
    # a blocking call returns when the device work it waits for is done, plus the time it took to
    # return after the last of that work ended (its synchronisation edges carry it)
    latest: dict[int, int] = {}
    for e in range(len(graph.src)):
        v = graph.dst[e]
        if graph.type[e] in (SYNC, WAITS) and v % 2 and graph.events[v // 2].blocking:
            latest[v] = max(latest.get(v, 0), graph.node_ts(graph.src[e]))
    own = {}
    for e in range(len(graph.src)):
        u, v = graph.src[e], graph.dst[e]
        if v in waited and graph.type[e] == OPERATOR and graph.events[v // 2].blocking:
            took[e] = 0  # the call's host side: it waits on its sync edges
        if v in latest and graph.type[e] in (SYNC, WAITS):
            took[e] = max(0, graph.node_ts(v) - latest[v])
        if graph.type[e] == OPERATOR and u % 2 == 0 and v == u + 1:
            own[u // 2] = e
    order: list[int] = []
    heap = [(graph.node_ts(n), n) for n in range(nodes) if indegree[n] == 0]
    heapq.heapify(heap)
    while heap:
        _, u = heapq.heappop(heap)
        for e in outgoing[u]:
            order.append(e)
            v = graph.dst[e]
            indegree[v] -= 1
            if indegree[v] == 0:
                heapq.heappush(heap, (graph.node_ts(v), v))
    device = [n for n in range(nodes) if graph.events[n // 2].kind != "host"]
    plan = _Plan(order, took, start, own, device)
    graph._replay_plan = plan  # type: ignore[attr-defined]
    return plan


@dataclass
class Change:
    """What a replay changes (Daydream's primitives: the functions below build one): new durations
    of events, by index (device work: kernels, copies, memsets); new times of edges (the host's time
    between two of its nodes); and edges left out (a synchronisation removed). Changes combine with |,
    the right one's entries winning."""
    durations: dict[int, int] = field(default_factory=dict)
    edges: dict[int, int] = field(default_factory=dict)
    cut: frozenset[int] = frozenset()

    def __or__(self, other: "Change") -> "Change":
        return Change({**self.durations, **other.durations}, {**self.edges, **other.edges}, self.cut | other.cut)

    def __bool__(self) -> bool:
        return bool(self.durations or self.edges or self.cut)


def set_durations(durations: dict[int, int]) -> Change:
    """Device work (by event index) lasting the given nanoseconds: an operation's kernels at
    another device's times, or a collective's kernels without their wait."""
    return Change(durations=dict(durations))


def scale_durations(graph: Graph, events: list[int], factor: float) -> Change:
    """Device work (by event index) lasting factor times as long as recorded."""
    return Change(durations={i: round((graph.events[i].end - graph.events[i].ts) * factor) for i in events})


@dataclass
class _ThreadEdges:
    """A host thread's edges that took time, ordered by the time they start: where each starts and
    ends, and the latest end among it and those before it (an edge starting before an interval
    reaches into it only if that latest end does)."""
    lo: list[int]
    hi: list[int]
    edge: list[int]
    reach: list[int]


def _host_edges(graph: Graph) -> dict[tuple, _ThreadEdges]:
    """Per host thread (pid, tid), its edges between two of its host nodes that took time: its time,
    nested or between operations. Worked out once a graph: why asks it for every frame it replays."""
    cached = getattr(graph, "_replay_host_edges", None)
    if cached is not None:
        return cached
    took = _plan(graph).took
    spans: dict[tuple, list[tuple[int, int, int]]] = {}
    for e in range(len(graph.src)):
        if took[e] <= 0 or graph.type[e] not in (OPERATOR, DEPENDENCY):
            continue
        a, b = graph.events[graph.src[e] >> 1], graph.events[graph.dst[e] >> 1]
        if a.kind == b.kind == "host" and (a.pid, a.tid) == (b.pid, b.tid):
            spans.setdefault((a.pid, a.tid), []).append((graph.node_ts(graph.src[e]), graph.node_ts(graph.dst[e]), e))
    out = {}
    for thread, edges in spans.items():
        edges.sort()
        his = [hi for _, hi, _ in edges]
        out[thread] = _ThreadEdges([lo for lo, _, _ in edges], his, [e for _, _, e in edges],
                                   list(itertools.accumulate(his, max)))
    graph._replay_host_edges = out  # type: ignore[attr-defined]
    return out


def _merged(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(intervals):
        if out and lo <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        elif hi > lo:
            out.append((lo, hi))
    return out


def _host_inside(graph: Graph, thread: tuple[str | None, str | None],
                 intervals: list[tuple[int, int]]) -> dict[int, int]:
    """The host thread's edges with time inside the intervals, and how much of it (a blocking call's
    wait is the device's time: the replay finds it, it is not the thread's). Each interval looks
    only at the edges that can reach it: those starting before its end whose latest end reaches
    past its start (two binary searches), never at every edge of the graph."""
    edges = _host_edges(graph).get(thread)
    inside: dict[int, int] = {}
    if edges is None:
        return inside
    for lo, hi in _merged(intervals):
        first = bisect.bisect_right(edges.reach, lo)  # before it, no edge reaches past lo
        last = bisect.bisect_left(edges.lo, hi)  # from it on, every edge starts at hi or later
        for i in range(first, last):
            part = min(hi, edges.hi[i]) - max(lo, edges.lo[i])
            if part > 0:
                inside[edges.edge[i]] = inside.get(edges.edge[i], 0) + part
    return inside


def host_scale(graph: Graph, thread: tuple[str | None, str | None], intervals: list[tuple[int, int]],
               factor: float) -> Change:
    """The host thread's time inside the intervals at factor times what it recorded there."""
    took = _plan(graph).took
    return Change(edges={e: took[e] - part + round(part * max(factor, 0))
                         for e, part in _host_inside(graph, thread, intervals).items()})


def host_time(graph: Graph, thread: tuple[str | None, str | None], intervals: list[tuple[int, int]],
              ns: int) -> Change:
    """The host thread's time inside the intervals set to ns in all, each piece of it scaled alike. A
    Python frame's self time is its thread's time in the frame less its callees' frames: given
    those intervals, this sets the frame's self time."""
    recorded = sum(_host_inside(graph, thread, intervals).values())
    return host_scale(graph, thread, intervals, ns / recorded) if recorded else Change()


def without_sync(graph: Graph, calls: list[int]) -> Change:
    """The synchronising calls (by event index) removed: each returns at once, nothing waits for the
    device through it (its synchronisation edges are left out), and the device work it launched (a
    synchronous copy's own copy) is not held back: it starts once its stream is free."""
    ends = {2 * i + 1 for i in calls}
    starts = {2 * i for i in calls}
    cut = {e for e in range(len(graph.src)) if graph.dst[e] in ends and graph.type[e] in (SYNC, WAITS)}
    returns = {e: 0 for e in range(len(graph.src)) if graph.dst[e] in ends and graph.type[e] == OPERATOR}
    released = {e: 0 for e in range(len(graph.src)) if graph.src[e] in starts and graph.type[e] in (LAUNCH, CAUSAL)}
    return Change(edges={**returns, **released}, cut=frozenset(cut))


def replay(graph: Graph, change: Change | dict[int, int] | None = None, device: bool = False) -> int:
    """The span of the window re-timed through its graph (Daydream's simulation): every node happens
    at the latest of its incoming edges' sources plus the time each edge took in the trace, every
    device event lasting its duration; a node with no incoming edge keeps its recorded time. A
    synchronising call ends once both the host and the device work it waits for are done. A change
    (a Change, or device work's new durations by event index) re-times what it names. Unchanged,
    the replay gives the recorded span: of all the window's events, or with device true of its
    device work alone (the span why compares)."""
    if not graph.events:
        return 0
    plan = _plan(graph)
    if isinstance(change, dict):
        change = set_durations(change)
    took = plan.took
    cut: frozenset[int] = frozenset()
    if change:
        took = list(took)
        for i, d in change.durations.items():
            if i in plan.own:
                took[plan.own[i]] = d
        for e, t in change.edges.items():
            took[e] = t
        cut = change.cut
    at = list(plan.start)
    src, dst = graph.src, graph.dst
    for e in plan.order:
        if cut and e in cut:
            continue
        t = at[src[e]] + took[e]
        if t > at[dst[e]]:
            at[dst[e]] = t
    if device:
        ends = [at[n] for n in plan.device]
        return max(ends) - min(ends) if ends else 0
    return max(at) - min(at)
