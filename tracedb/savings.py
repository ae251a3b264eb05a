"""What fixing each cause of a wall-clock gap would save: the slower trace's steps replayed
(tracedb.critical.replay) with one part at the faster trace's times, for `report why`; the spans
replayed are the device's (first work's start to last work's end in each step), those why compares.

A part is one of why's (sql/modules/why/findings.sql keys them): an operation's kernels, per phase
(slower kernels: each kernel of it at the other side's time per call, when that is faster), or a
collective's waiting (each call's wait removed). What the replayed steps lose against the
unchanged replay is what fixing it saves; a part whose kernels run in the shadow of the host or of
other work saves little or nothing, whatever its time at stake. All the parts together give the
slower trace's predicted time, set beside the faster trace's own.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import duckdb

from . import critical

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
    """Per part of why (kind|what), the slower trace's kernels it changes and their new durations."""
    theirs, ours = _per_call(fast), _per_call(slow)
    out: dict[str, dict[int, int]] = defaultdict(dict)
    for k in slow:
        if k.comm:
            if k.wait:
                out[f"collective waiting|{k.what}"][k.kernel_id] = k.dur - k.wait
        elif k.what in theirs and theirs[k.what] < ours[k.what]:
            out[f"slower kernels|{k.what}"][k.kernel_id] = round(k.dur * theirs[k.what] / ours[k.what])
    return out


def register(con: duckdb.DuckDBPyConnection, trace: str | None, vs: str | None, phase: str | None) -> None:
    """Replay the slower trace's steps once unchanged and once per part, and register why_savings
    (part, saves_ns, steps) and why_together (slow_ns, predicted_ns, other_ns) on the connection.
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
        graphs = critical.build_all(con, windows[0][0], [(lo, hi) for _, _, lo, hi in windows]) if windows else []
        predicted, replayed = 0, 0
        # each changed kernel's graph and event, found once
        where: dict[int, tuple[int, int]] = {}
        for g, graph in enumerate(graphs):
            for i, e in enumerate(graph.events):
                if e.source == "kernels":
                    where[e.event_id] = (g, i)
        by_graph: dict[str, dict[int, dict[int, int]]] = {}
        for part, durations in parts.items():
            split: dict[int, dict[int, int]] = defaultdict(dict)
            for kernel, dur in durations.items():
                if kernel in where:
                    g, i = where[kernel]
                    split[g][i] = dur
            by_graph[part] = split
        for g, graph in enumerate(graphs):
            base = critical.replay(graph, device=True)
            replayed += base
            every: dict[int, int] = {}
            for part, split in by_graph.items():
                if g in split:
                    every.update(split[g])
                    savings[part] = savings.get(part, 0) + base - critical.replay(graph, split[g], device=True)
            predicted += critical.replay(graph, every, device=True) if every else base
        # the prediction, replayed, against the slower side's own replay and the other side's measure
        together.append((replayed, predicted, measured[fast]))
    con.register("why_savings", pa.table({"part": pa.array(list(savings), pa.string()),
                                          "saves_ns": pa.array(list(savings.values()), pa.int64())}))
    con.register("why_together", pa.table({"slow_ns": pa.array([t[0] for t in together], pa.int64()),
                                           "predicted_ns": pa.array([t[1] for t in together], pa.int64()),
                                           "other_ns": pa.array([t[2] for t in together], pa.int64())}))
