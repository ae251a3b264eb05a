"""The dependency graph of a step and its critical path (the longest path through it); a replay
of the graph is tracedb.replay's, and the relations report critical-path reads tracedb.critical_steps'.

The events come from SQL (sql/modules/critical/graph.sql: a window's host operations, runtime
calls and the device work they launched, and the device's synchronisation records); the graph and
the walk are here, since a longest path over events ordered in time is one pass over arrays.

The graph follows Holistic Trace Analysis's (HTA's critical_path_analysis), so that where its
assumptions hold the two agree:
- every event is two nodes, its start and its end;
- on each host thread, the events nest: an edge runs from each node to the next one in the
  thread's depth-first order, weighted by the time between them (an operator edge); inside a
  blocking runtime call (a synchronize) the thread waits for the device, so the edge to its end
  weighs nothing; consecutive top-level operations are joined by a dependency of no weight;
- each kernel, copy or memset is an operator edge of its own duration; it follows its launch
  (a launch edge, weighted by the launch delay) when its stream had nothing queued, else the end of
  the stream's previous work (a kernel-to-kernel edge, weighted by the gap);
- the device's synchronisation records add edges of no weight: a device or stream synchronize
  waits for the last work of every stream or of its stream, an event synchronize for the work
  launched on the event's stream before the event was recorded, and a stream's wait for an event
  holds the next work launched on that stream until that work ends.
An edge that would run backwards in time (clock skew between host and device, a missing
correlation) is left out and counted; none is fatal.
"""

from __future__ import annotations

import bisect
import heapq
import re
from collections import defaultdict
from dataclasses import dataclass, field

import duckdb

from .errors import TracedbError

# Edge types, as HTA names them
OPERATOR, DEPENDENCY, LAUNCH, KERNEL_KERNEL, SYNC = "operator", "dependency", "launch", "kernel-kernel", "sync"
# work never starts before its launch, nor before the work ahead of it on its stream ends: an edge
# of no weight where the launch delay is not on the path (HTA's zero-weight launch edges), which
# keeps a replay causal
CAUSAL = "causal"
# a synchronising call the device recorded no synchronisation for waits, as far as a replay can
# tell, for the work still running on each stream when it began (not on HTA's path)
WAITS = "waits"
REPLAY_ONLY = (CAUSAL, WAITS)
_UNWEIGHTED = frozenset((DEPENDENCY, SYNC, *REPLAY_ONLY))  # no weight on HTA's path
_NO_TIME = frozenset((SYNC, WAITS))  # no time in a replay
# the calls that wait for the device until its work is done (an event query or an asynchronous copy
# returns at once, whatever HTA's list says): device, stream and event synchronize, synchronous copies
WAITING_CALL = re.compile(r"(?i)synchroni[sz]e|^(cuda|hip)memcpy(withstream|dtoh|2d)?$|^cuMemcpy(DtoH)?(_v2)?$")

# A negative edge weight down to this many nanoseconds is rounding (a child ending a nanosecond
# after its parent): it counts as 0. Beyond it, the edge runs backwards and is left out.
ROUNDING_NS = 1000

BOUNDS = ("host", "compute", "communication", "memcpy/memset", "launch overhead", "kernel-to-kernel overhead",
          "synchronisation")


@dataclass
class Event:
    kind: str
    event_id: int
    source: str
    name: str
    pid: str | None
    tid: str | None
    stream: int | None
    ts: int
    end: int
    correlation: int | None
    blocking: bool
    launch_id: int | None
    bound: str | None


@dataclass
class Graph:
    """Nodes 2i (start) and 2i+1 (end) of events[i]; edges as parallel lists."""
    events: list[Event]
    src: list[int] = field(default_factory=list)
    dst: list[int] = field(default_factory=list)
    weight: list[int] = field(default_factory=list)
    type: list[str] = field(default_factory=list)
    owner: list[int] = field(default_factory=list)  # the event an edge's time is counted to (-1: none)
    elapsed: list[int] = field(default_factory=list)  # the time the edge took in the trace (replay's weight)
    dropped: int = 0  # edges that would run backwards in time

    def node_ts(self, node: int) -> int:
        e = self.events[node // 2]
        return e.end if node % 2 else e.ts

    def add(self, src: int, dst: int, kind: str, owner: int = -1, zero: bool = False, timed: bool = False,
            untimed: bool = False) -> None:
        """An edge; zero: of no weight on the path; timed: a causal edge a replay gives its time;
        untimed: an edge a replay gives none."""
        a, b = self.events[src >> 1], self.events[dst >> 1]
        w = (b.end if dst & 1 else b.ts) - (a.end if src & 1 else a.ts)
        if w < -ROUNDING_NS:
            self.dropped += 1
            return
        w = w if w > 0 else 0
        self.src.append(src)
        self.dst.append(dst)
        self.weight.append(0 if zero or kind in _UNWEIGHTED else w)
        self.elapsed.append(0 if untimed or kind in _NO_TIME or kind == CAUSAL and not timed else w)
        self.type.append(kind)
        self.owner.append(owner)


@dataclass
class Path:
    """The critical path of a graph: its length and its edges, first to last."""
    length: int
    edges: list[int]

    def bounds(self, graph: Graph) -> dict[str, int]:
        """Nanoseconds of the path per bound (BOUNDS)."""
        out = dict.fromkeys(BOUNDS, 0)
        for e in self.edges:
            out[bound_of(graph, e)] += graph.weight[e]
        return out


def stretches(graph: Graph, path: Path) -> list[tuple[int, int, str, str, str]]:
    """The stretches of a path that take time, first to last: (start, end, what its time is counted
    to, bound, edge type); they add up to the path's length."""
    out = []
    for e in path.edges:
        if graph.weight[e] > 0:
            owner = graph.events[graph.owner[e]].name if graph.owner[e] >= 0 else graph.type[e]
            out.append((graph.node_ts(graph.src[e]), graph.node_ts(graph.dst[e]), owner, bound_of(graph, e),
                        graph.type[e]))
    return out


def bound_of(graph: Graph, edge: int) -> str:
    kind = graph.type[edge]
    if kind == LAUNCH:
        return "launch overhead"
    if kind == KERNEL_KERNEL:
        return "kernel-to-kernel overhead"
    if kind in (DEPENDENCY, SYNC, *REPLAY_ONLY):
        return "synchronisation"
    owner = graph.events[graph.owner[edge]] if graph.owner[edge] >= 0 else None
    if owner is None or owner.kind == "host":
        return "host"
    return owner.bound or "compute"


def events(con: duckdb.DuckDBPyConnection, trace_id: int, lo: int, hi: int) -> list[Event]:
    rows = con.execute("SELECT kind, event_id, source, name, pid, tid, stream, ts_ns, end_ns, correlation, blocking, "
                       "launch_id, bound FROM critical_events(?, ?, ?) ORDER BY ts_ns, end_ns DESC, source, event_id",
                       [trace_id, lo, hi]).fetchall()
    return [Event(*r) for r in rows]


def build(con: duckdb.DuckDBPyConnection, trace_id: int, lo: int, hi: int) -> Graph:
    """The dependency graph of the window [lo, hi] of a trace."""
    return build_all(con, trace_id, [(lo, hi)])[0]


def build_all(con: duckdb.DuckDBPyConnection, trace_id: int, windows: list[tuple[int, int]]) -> list[Graph]:
    """The dependency graphs of several windows of a trace, their events read in one query: a
    window holds the host events starting in it and the device work they launched."""
    if not windows:
        return []
    lo, hi = min(w[0] for w in windows), max(w[1] for w in windows)
    everything = events(con, trace_id, lo, hi)
    syncs = con.execute("SELECT kind, ts_ns, end_ns, stream, correlation, wait_on_stream, record_corr "
                        "FROM critical_syncs(?, ?, ?)", [trace_id, lo, hi]).fetchall()
    host = [e for e in everything if e.kind == "host"]  # ordered by start
    starts = [e.ts for e in host]
    device_of: dict[int, list[Event]] = defaultdict(list)  # launching call -> its device work
    for e in everything:
        if e.kind != "host":
            device_of[e.launch_id].append(e)
    graphs = []
    for w_lo, w_hi in windows:
        mine = host[bisect.bisect_left(starts, w_lo):bisect.bisect_right(starts, w_hi)]
        calls = {e.event_id for e in mine if e.source == "runtime_calls"}
        correlations = {e.correlation for e in mine if e.source == "runtime_calls"}
        work = [d for c in calls for d in device_of.get(c, ())]
        chosen = sorted(mine + work, key=lambda e: (e.ts, -e.end, e.source, e.event_id))
        graph = Graph(chosen)
        _host_edges(graph)
        _device_edges(graph, [r for r in syncs if r[4] in correlations])
        graphs.append(graph)
    return graphs


def _host_edges(graph: Graph) -> None:
    """Each host thread's events in depth-first order (they arrive ordered by start, outer first)."""
    threads: dict[tuple, list[int]] = defaultdict(list)
    for i, e in enumerate(graph.events):
        if e.kind == "host":
            threads[(e.pid, e.tid)].append(i)
    for members in threads.values():
        stack: list[int] = []
        last: int | None = None  # the last node visited, None between top-level operations
        last_top: int | None = None  # the end of the last top-level operation

        def leave() -> None:
            nonlocal last, last_top
            i = stack.pop()
            e = graph.events[i]
            if last is not None:
                # start -> end of a leaf is the leaf's; end -> end is the one ending
                graph.add(last, 2 * i + 1, OPERATOR, owner=i, zero=e.blocking)
            if stack:
                last = 2 * i + 1
            else:
                last, last_top = None, 2 * i + 1

        for i in members:
            e = graph.events[i]
            while stack and graph.events[stack[-1]].end <= e.ts:
                leave()
            if not stack and last_top is not None:
                graph.add(last_top, 2 * i, DEPENDENCY)
            if last is not None:
                # start -> start is the outer event's time; end -> start the parent's
                graph.add(last, 2 * i, OPERATOR, owner=(last // 2) if last % 2 == 0 else stack[-1])
            last = 2 * i
            stack.append(i)
        while stack:
            leave()


def _device_edges(graph: Graph, syncs: list[tuple]) -> None:
    """Kernels, copies and memsets in the order they start, the synchronisation records at their end."""
    by_event = {(e.source, e.event_id): i for i, e in enumerate(graph.events)}
    by_correlation = {e.correlation: i for i, e in enumerate(graph.events)
                      if e.source == "runtime_calls" and e.correlation is not None}
    device = [i for i, e in enumerate(graph.events) if e.kind != "host"]
    launches = _Launches(graph, device, by_event)

    def before_record(stream: int | None, record_corr: int | None) -> int | None:
        """The work launched on stream last before the event record of that correlation."""
        record = by_correlation.get(record_corr)
        if record is None or stream is None:
            return None
        return launches.last_before(stream, graph.events[record].ts)

    # a stream's wait for an event: the next work launched on it after the wait waits for the work
    # recorded by the event
    waits: dict[int, int] = {}
    items = [(graph.events[i].ts, 0, i) for i in device] + [(s[2], 1, n) for n, s in enumerate(syncs)]
    for _, what, n in sorted(items):
        if what == 1 and syncs[n][0] == "Stream Wait Event":
            kind, _, _, stream, corr, wait_on, record_corr = syncs[n]
            src = before_record(wait_on, record_corr)
            caller = by_correlation.get(corr)
            if src is None or caller is None or stream is None:
                continue
            nxt = launches.first_from(stream, graph.events[caller].ts)
            if nxt is not None:
                waits[nxt] = src
    # HTA's queue of each stream: work launched and not yet started. A launch delay is on the path
    # only where the work was alone in its queue from its launch to its start.
    alone = _alone_in_queue(graph, launches)
    last_on: dict[int, int] = {}  # stream -> its last work's event
    for _, what, n in sorted(items):
        if what == 1:
            kind, _, _, stream, corr, wait_on, record_corr = syncs[n]
            caller = by_correlation.get(corr)
            if caller is None:
                continue
            if kind == "Context Sync":
                for i in last_on.values():
                    graph.add(2 * i + 1, 2 * caller + 1, SYNC)
            elif kind == "Stream Sync" and stream in last_on:
                graph.add(2 * last_on[stream] + 1, 2 * caller + 1, SYNC)
            elif kind == "Event Sync":
                src = before_record(wait_on, record_corr)
                if src is not None:
                    graph.add(2 * src + 1, 2 * caller + 1, SYNC)
            continue
        i = n
        e = graph.events[i]
        graph.add(2 * i, 2 * i + 1, OPERATOR, owner=i)
        launch = by_event.get(("runtime_calls", e.launch_id))
        prev = last_on.get(e.stream)
        waited = waits.get(i)
        if waited is not None:
            graph.add(2 * waited + 1, 2 * i, SYNC)
        launch_ts = graph.events[launch].ts if launch is not None else None
        if launch_ts is not None and e.ts < launch_ts - ROUNDING_NS:
            graph.dropped += 1  # recorded before its launch: the launch edge would run backwards
            launch, launch_ts = None, None
        queued = prev is not None and (launch_ts is None or graph.events[prev].end >= launch_ts)
        held = waited is not None and (launch_ts is None or graph.events[waited].end >= launch_ts)
        if launch is not None and i in alone and not queued and not held:
            graph.add(2 * launch, 2 * i, LAUNCH)
            if prev is not None:
                graph.add(2 * prev + 1, 2 * i, CAUSAL)  # a replay keeps the stream's order
        else:
            follows = prev is not None and (waited is None or graph.events[waited].end < graph.events[prev].end)
            if follows:
                # on HTA's path the gap is kernel-to-kernel overhead; where the work was launched
                # after the work ahead of it ended, the host held it, and a replay times it from
                # its launch (below)
                graph.add(2 * prev + 1, 2 * i, KERNEL_KERNEL, owner=prev, untimed=not queued)
            if launch is not None:
                # with nothing before it on the stream in the window, or launched after that ended,
                # the launch delay the trace recorded is all a replay knows of when it started
                graph.add(2 * launch, 2 * i, CAUSAL, timed=(not follows or not queued) and waited is None)
        if e.stream is not None:
            last_on[e.stream] = i
    _inferred_waits(graph, launches)


class _Launches:
    """The device work of a graph launched on each stream, in launch order, found by launch time."""

    def __init__(self, graph: Graph, device: list[int], by_event: dict):
        self.on: dict[int, list[tuple[int, int]]] = defaultdict(list)  # stream -> [(launch ts, event)]
        for i in device:
            e = graph.events[i]
            launch = by_event.get(("runtime_calls", e.launch_id))
            if launch is not None and e.stream is not None:
                self.on[e.stream].append((graph.events[launch].ts, i))
        for work in self.on.values():
            work.sort()
        self._times = {stream: [ts for ts, _ in work] for stream, work in self.on.items()}

    def last_before(self, stream: int, ts: int) -> int | None:
        """The work launched on stream last at or before ts."""
        at = bisect.bisect_right(self._times.get(stream, []), ts) - 1
        return self.on[stream][at][1] if at >= 0 else None

    def first_from(self, stream: int, ts: int) -> int | None:
        """The work launched on stream first at or after ts."""
        times = self._times.get(stream, [])
        at = bisect.bisect_left(times, ts)
        return self.on[stream][at][1] if at < len(times) else None


def _inferred_waits(graph: Graph, launches: _Launches) -> None:
    """A synchronising call with no synchronisation record waits for the work of each stream
    launched before it began and still running then (replay-only edges)."""
    synced = {graph.dst[e] for e in range(len(graph.src)) if graph.type[e] == SYNC}
    for i, e in enumerate(graph.events):
        if not e.blocking or 2 * i + 1 in synced or not WAITING_CALL.search(e.name):
            continue
        for stream in launches.on:
            last = launches.last_before(stream, e.ts)
            # running when it began, done when it returned
            if last is not None and e.ts <= graph.events[last].end <= e.end:
                graph.add(2 * last + 1, 2 * i + 1, WAITS)


def _alone_in_queue(graph: Graph, launches: _Launches) -> set[int]:
    """The device work that was the only work queued on its stream from its launch to its start:
    each launch adds to its stream's queue and each start takes from it (a launch before a start
    at one time), and the work is alone when the queue holds 1 just after its launch and 0 just
    after its start."""
    alone = set()
    for work in launches.on.values():
        series = [(ts, 0, i) for ts, i in work] + [(graph.events[i].ts, 1, i) for _, i in work]
        queue = 0
        after_launch: dict[int, int] = {}
        for _, start, i in sorted(series):
            queue += -1 if start else 1
            if not start:
                after_launch[i] = queue
            elif queue == 0 and after_launch.get(i) == 1:
                alone.add(i)
    return alone


def adjacency(graph: Graph, nodes: int, causal: bool) -> tuple[list[list[int]], list[int]]:
    """Each node's outgoing edges and its number of incoming ones (the causal edges of a replay only
    when asked: HTA's path has none)."""
    outgoing: list[list[int]] = [[] for _ in range(nodes)]
    indegree = [0] * nodes
    for e, (u, v) in enumerate(zip(graph.src, graph.dst)):
        if causal or graph.type[e] not in REPLAY_ONLY:
            outgoing[u].append(e)
            indegree[v] += 1
    return outgoing, indegree


def longest_path(graph: Graph) -> Path:
    """The longest path through the graph: nodes taken in an order every edge follows (by time, then
    by the edges' own order among nodes of one time), each reached at the longest distance."""
    nodes = 2 * len(graph.events)
    if not nodes:
        raise TracedbError("no host operation or device work in this window")
    outgoing, indegree = adjacency(graph, nodes, causal=False)
    dist = [0] * nodes
    via = [-1] * nodes
    seen = 0
    heap = [(graph.node_ts(n), n) for n in range(nodes) if indegree[n] == 0]
    heapq.heapify(heap)
    while heap:
        _, u = heapq.heappop(heap)
        seen += 1
        for e in outgoing[u]:
            v = graph.dst[e]
            d = dist[u] + graph.weight[e]
            if d > dist[v] or via[v] < 0 and d >= dist[v]:
                dist[v], via[v] = d, e
            indegree[v] -= 1
            if indegree[v] == 0:
                heapq.heappush(heap, (graph.node_ts(v), v))
    if seen < nodes:
        raise TracedbError("the dependency graph has a cycle")  # every edge runs forward in time: a defect
    end = max(range(nodes), key=lambda n: (dist[n], -n))
    edges = []
    while via[end] >= 0:
        edges.append(via[end])
        end = graph.src[via[end]]
    edges.reverse()
    return Path(sum(graph.weight[e] for e in edges), edges)


def windows(con: duckdb.DuckDBPyConnection, trace: str, step: int | None = None,
            phase: str | None = None) -> list[tuple[int, int | None, int, int]]:
    """The windows of a trace a critical path is found in: (trace_id, step, start, end) of each of
    its steps (of one step, or of the steps of one phase), or of the whole trace where it has none."""
    rows = con.execute("SELECT trace_id, step, ts_ns, end_ns FROM critical_windows(?) ORDER BY step NULLS LAST, ts_ns",
                       [trace]).fetchall()
    steps = [r for r in rows if r[1] is not None]
    if phase is not None:
        phased = {s for (s,) in con.execute("SELECT DISTINCT iteration FROM kernel_facts f JOIN traces t USING (trace_id) "
                                            "WHERE is_trace(t.name, t.trace_id, ?) AND f.phase = ?",
                                            [trace, phase]).fetchall()}
        steps = [r for r in steps if r[1] in phased]
    if step is not None:
        steps = [r for r in steps if r[1] == step]
        if not steps:
            raise TracedbError(f"{trace}: no step {step} (tracedb report timeline --trace {trace} lists them)")
    if steps or phase is not None:
        return steps
    return [r for r in rows if r[1] is None]
