"""What fixing each cause of a wall-clock gap would save: the slower trace's steps replayed
(tracedb.replay) with one part at the faster trace's times, for `report why`; the spans replayed are
the device's (first work's start to last work's end in each step), those why compares.

A part is one of why's (sql/modules/why/findings.sql keys them):
- an operation's kernels, per phase (slower kernels): each kernel of it at the other side's time
  per call, when that is faster;
- a collective's waiting: each call's wait removed;
- idle time while the host launched late (host-bound idle, by Python frame): the host's time in
  the part's gaps, from the device going idle to the launch, at the other side's (its idle time in
  the part over ours);
- idle time after a synchronisation (synchronisation idle, by call) the other side does not have:
  the synchronising calls behind the part's gaps removed.
What the replayed steps lose against the unchanged replay is what fixing it saves; a part whose
kernels run in the shadow of the host or of other work saves little or nothing, whatever its time at
stake. All the parts together give the slower trace's predicted time, set beside the faster trace's
own.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from dataclasses import dataclass

import duckdb

from . import critical
from .replay import Change, host_scale, replay, set_durations, without_sync

# The part of each kernel of a trace, as why_findings keys it (kind|what), with its duration and,
# for a collective, its wait
_PARTS = """
SELECT d.event_id AS kernel_id, d.dur_ns,
       CASE WHEN d.class = 'comm' THEN _why_comm_part(align_op(d.op, d.pattern), d.name, d.phase, $whole)
            ELSE _why_op_part(align_op(d.op, d.pattern), d.phase, $whole) END AS what,
       d.class = 'comm' AS comm, coalesce(f.call_id, -d.event_id) AS call, c.wait_ns
FROM device_activity d
JOIN traces t USING (trace_id)
LEFT JOIN kernel_facts f ON f.trace_id = d.trace_id AND f.kernel_id = d.event_id
LEFT JOIN collective_calls c ON c.trace_id = d.trace_id AND c.kernel_id = d.event_id
WHERE is_trace(t.name, t.trace_id, $trace) AND d.kind = 'kernel'
  AND ($phase IS NULL OR d.phase = $phase)
"""


@dataclass
class Kernel:
    kernel_id: int
    dur: int
    what: str
    comm: bool
    call: int
    wait: int | None


def _kernels(con: duckdb.DuckDBPyConnection, trace: str, phase: str | None) -> list[Kernel]:
    rows = con.execute(_PARTS, {"trace": trace, "phase": phase, "whole": phase is None}).fetchall()
    return [Kernel(*r) for r in rows]


def _per_call(kernels: list[Kernel]) -> dict[str, float]:
    """Each operation part's time per call (why's slower kernels compares these)."""
    ns, calls = defaultdict(int), defaultdict(set)
    for k in kernels:
        if not k.comm:
            ns[k.what] += k.dur
            calls[k.what].add(k.call)
    return {what: ns[what] / len(calls[what]) for what in ns}


def changes(slow: list[Kernel], fast: list[Kernel]) -> dict[str, dict[int, int]]:
    """Per part of why (kind|what), the slower trace's kernels it changes and their new durations: an
    operation's kernels at the other side's time per call (faster or slower: where the slower side
    is faster, the replay says what matching the other side would cost), a collective's without
    their wait."""
    theirs, ours = _per_call(fast), _per_call(slow)
    out: dict[str, dict[int, int]] = defaultdict(dict)
    for k in slow:
        if k.comm:
            if k.wait:
                out[f"collective waiting|{k.what}"][k.kernel_id] = k.dur - k.wait
        elif k.what in theirs and theirs[k.what] != ours[k.what]:
            out[f"slower kernels|{k.what}"][k.kernel_id] = round(k.dur * theirs[k.what] / ours[k.what])
    return out


# The gaps of both traces where the device idled while the host ran Python or after a
# synchronisation, with the part of why each counts to (as why_findings keys them)
_GAPS = """
SELECT s.side, _why_gap_kind(g.cause) || '|' || _why_gap_what(g.cause, k.frame, g.frame, g.sync_call, g.after_op) AS part,
       g.start_ns, g.end_ns, g.launch_tid, g.sync_call
FROM compared_sides($trace, $vs) s
JOIN gpu_idle_gaps_of((SELECT coalesce(list(DISTINCT trace_id), []) FROM compared_sides($trace, $vs)),
                      1000 * $min_gap_us) g USING (trace_id)
LEFT JOIN frame_keys((SELECT list(trace_id) FROM compared_sides($trace, $vs))) k
       ON k.trace_id = g.trace_id AND k.name = g.frame
WHERE g.cause IN ('host launched late', 'synchronisation')
  AND ($phase IS NULL OR (NOT g.between_steps AND (g.trace_id, g.step) IN
       (SELECT (trace_id, step) FROM gpu_timeline WHERE step IS NOT NULL AND phase = $phase)))
"""

# The calls of the Python frames why finds the device idle in while the host runs them (host-bound
# idle), on both sides, as host_frames counts them, with the steps counted on their side: a frame's
# host time per step is their sum over those steps (host_frames_of's a_step_ns and b_step_ns)
_FRAME_CALLS = """
SELECT c.side, c.frame, c.pid, c.tid, c.ts_ns, c.end_ns, c.dur_ns, s.steps
FROM host_frame_calls($trace, $vs, $phase, $frames) c
JOIN host_frame_steps($trace, $vs, $phase) s ON s.side = c.side AND s.trace_id = c.trace_id
ORDER BY c.frame, c.ts_ns
"""


@dataclass
class Gap:
    side: str
    part: str
    start: int
    end: int
    thread: str | None
    sync_call: str | None


class _Windows:
    """The graphs' windows, to find the graph a time falls in."""

    def __init__(self, bounds: list[tuple[int, int]]):
        self.ordered = sorted((lo, hi, g) for g, (lo, hi) in enumerate(bounds))
        self.starts = [lo for lo, _, _ in self.ordered]

    def of(self, ts: int) -> int | None:
        at = bisect.bisect_right(self.starts, ts) - 1
        return self.ordered[at][2] if at >= 0 and ts <= self.ordered[at][1] else None


def _thread(graph: critical.Graph, pid: str | None, tid: str | None) -> tuple | None:
    """The graph's host thread of that pid and tid (as the trace names them)."""
    for e in graph.events:
        if e.kind == "host" and (str(e.pid), str(e.tid)) == (str(pid), str(tid)):
            return (e.pid, e.tid)
    return None


def _outside(span: tuple[int, int], inner: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The pieces of span outside the inner spans (sorted by start)."""
    out, at = [], span[0]
    for lo, hi in inner:
        if lo > at:
            out.append((at, min(lo, span[1])))
        at = max(at, hi)
    if at < span[1]:
        out.append((at, span[1]))
    return out


def frame_changes(con: duckdb.DuckDBPyConnection, graphs: list[critical.Graph], windows: _Windows, trace: str,
                  vs: str, slow: str, phase: str | None, frames: list[str]) -> dict[str, dict[int, Change]]:
    """Per host-bound frame of why (by key), its change to each graph of the slower side (slow: 'A'
    or 'B'): the host's time in the frame's calls, less the calls of the other frames listed inside
    them (parts of their own), at the other side's host time in the frame per step over ours (above
    1 where the slower side spends less). The parts share no time, so that their changes combine."""
    if not frames:
        return {}
    rows = con.execute(_FRAME_CALLS, {"trace": trace, "vs": vs, "phase": phase, "frames": frames}).fetchall()
    host: dict[tuple[str, str], int] = defaultdict(int)  # (side, frame) -> its host time, ns
    steps: dict[str, int] = {}
    for side, frame, _, _, _, _, dur, counted in rows:
        host[(side, frame)] += dur
        steps[side] = counted
    # each side's host time in the frame per step, rounded to the nanosecond as host_frames gives it
    per_step = {key: round(ns / steps[key[0]]) for key, ns in host.items()}
    other = "B" if slow == "A" else "A"
    by_thread: dict[tuple, list[tuple[int, int, str]]] = defaultdict(list)
    factor: dict[str, float] = {}
    for side, frame, pid, tid, ts, end, _, _ in rows:
        ours = per_step.get((slow, frame), 0)
        if side == slow and ours:
            by_thread[(pid, tid)].append((ts, end, frame))
            factor[frame] = per_step.get((other, frame), 0) / ours
    spans: dict[str, dict[tuple[int, tuple], list[tuple[int, int]]]] = defaultdict(lambda: defaultdict(list))
    for thread, calls in by_thread.items():
        calls.sort(key=lambda c: (c[0], -c[1]))
        starts = [c[0] for c in calls]
        for n, (ts, end, frame) in enumerate(calls):
            g = windows.of(ts)
            if g is None:
                continue
            inner = [(lo, hi) for lo, hi, other in calls[n + 1:bisect.bisect_left(starts, end, lo=n + 1)]
                     if other != frame and hi <= end]
            spans[frame][(g, thread)] += _outside((ts, end), inner)
    out: dict[str, dict[int, Change]] = {}
    for frame, held in spans.items():
        changes: dict[int, Change] = {}
        for (g, (pid, tid)), pieces in held.items():
            thread = _thread(graphs[g], pid, tid)
            if thread is not None:
                change = host_scale(graphs[g], thread, pieces, factor[frame])
                if change:
                    changes[g] = changes.get(g, Change()) | change
        if changes:
            out[f"host-bound idle|{frame}"] = changes
    return out


def _gaps(con: duckdb.DuckDBPyConnection, trace: str, vs: str, phase: str | None, min_gap_us: float) -> list[Gap]:
    rows = con.execute(_GAPS, {"trace": trace, "vs": vs, "phase": phase, "min_gap_us": min_gap_us}).fetchall()
    return [Gap(*r) for r in rows]


def sync_changes(graphs: list[critical.Graph], windows: _Windows, slow: str,
                 gaps: list[Gap]) -> dict[str, dict[int, Change]]:
    """Per synchronisation idle part of why the other side has none of, its change to each graph of
    the slower side: the synchronising calls behind the part's gaps removed. Where the other side
    waits there too, how many of the calls it does without is not known: no change."""
    gaps = [gap for gap in gaps if gap.part.startswith("synchronisation idle|")]
    theirs = {gap.part for gap in gaps if gap.side != slow}
    held: dict[str, dict[int, list[Gap]]] = defaultdict(lambda: defaultdict(list))
    for gap in gaps:
        g = windows.of(gap.start)
        if gap.side == slow and gap.part not in theirs and g is not None:
            held[gap.part][g].append(gap)
    out: dict[str, dict[int, Change]] = {}
    for part, by_graph in held.items():
        changes = {g: without_sync(graphs[g], _sync_calls(graphs[g], mine)) for g, mine in by_graph.items()}
        changes = {g: c for g, c in changes.items() if c}
        if changes:
            out[part] = changes
    return out


def _sync_calls(graph: critical.Graph, gaps: list[Gap]) -> list[int]:
    """The graph's synchronising calls behind the gaps: of the call each gap names, on its
    launching thread, the last to start before the device started again (one pass over the
    graph's events, then a binary search per gap)."""
    calls: dict[tuple[str, str], list[int]] = defaultdict(list)  # (name, pid:tid) -> events, by start
    for i, e in enumerate(graph.events):  # events are in the order they start
        if e.source == "runtime_calls" and e.blocking:
            calls[(e.name, f"{e.pid}:{e.tid}")].append(i)
    found = []
    for gap in gaps:
        mine = calls.get((gap.sync_call, gap.thread), [])
        at = bisect.bisect_right([graph.events[i].ts for i in mine], gap.end) - 1
        if at >= 0:
            found.append(mine[at])
    return found


def for_report(con: duckdb.DuckDBPyConnection, values: dict) -> None:
    """What why's `-- Computed: savings` runs: register() for its parameters."""
    register(con, values.get("trace"), values.get("vs"), values.get("phase"), values.get("min_gap_us", 20))


def register(con: duckdb.DuckDBPyConnection, trace: str | None, vs: str | None, phase: str | None,
             min_gap_us: float = 20) -> None:
    """Replay the slower trace's steps once unchanged and once per part, and register why_savings
    (part, saves_ns) and why_together (slow_ns, predicted_ns, other_ns) on the connection.
    One trace alone (no vs) has nothing to take times from: both relations are empty."""
    import pyarrow as pa

    savings: dict[str, int] = {}
    together: list[tuple] = []
    if trace is not None and vs is not None:
        # the slower side as why finds it, and both sides' measure: the spans of the device's work
        a_ns, b_ns = con.execute("SELECT a_ns, b_ns FROM compare_wall(?, ?, ?) WHERE part = 'span'",
                                 [trace, vs, phase]).fetchone()
        slow, fast = (trace, vs) if a_ns >= b_ns else (vs, trace)
        measured = {trace: a_ns, vs: b_ns}
        parts = changes(_kernels(con, slow, phase), _kernels(con, fast, phase))
        windows = critical.windows(con, slow, phase=phase)
        bounds = [(lo, hi) for _, _, lo, hi in windows]
        graphs = critical.build_all(con, windows[0][0], bounds) if windows else []
        # each changed kernel's graph and event, found once
        where: dict[int, tuple[int, int]] = {}
        for g, graph in enumerate(graphs):
            for i, e in enumerate(graph.events):
                if e.source == "kernels":
                    where[e.event_id] = (g, i)
        by_graph: dict[str, dict[int, Change]] = {}
        for part, durations in parts.items():
            split: dict[int, dict[int, int]] = defaultdict(dict)
            for kernel, dur in durations.items():
                if kernel in where:
                    g, i = where[kernel]
                    split[g][i] = dur
            by_graph[part] = {g: set_durations(d) for g, d in split.items()}
        if graphs:
            side = "A" if slow == trace else "B"
            gaps = _gaps(con, trace, vs, phase, min_gap_us)
            frames = sorted({g.part.split("|", 1)[1] for g in gaps if g.part.startswith("host-bound idle|")})
            of_time = _Windows(bounds)
            by_graph.update(frame_changes(con, graphs, of_time, trace, vs, side, phase, frames))
            by_graph.update(sync_changes(graphs, of_time, side, gaps))
        predicted, replayed = 0, 0
        for g, graph in enumerate(graphs):
            base = replay(graph, device=True)
            replayed += base
            every = Change()
            for part, split in by_graph.items():
                if g in split:
                    every = every | split[g]
                    savings[part] = savings.get(part, 0) + base - replay(graph, split[g], device=True)
            predicted += replay(graph, every, device=True) if every else base
        # the prediction, replayed, against the slower side's own replay and the other side's measure
        together.append((replayed, predicted, measured[fast]))
    con.register("why_savings", pa.table({"part": pa.array(list(savings), pa.string()),
                                          "saves_ns": pa.array(list(savings.values()), pa.int64())}))
    con.register("why_together", pa.table({"slow_ns": pa.array([t[0] for t in together], pa.int64()),
                                           "predicted_ns": pa.array([t[1] for t in together], pa.int64()),
                                           "other_ns": pa.array([t[2] for t in together], pa.int64())}))
