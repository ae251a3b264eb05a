"""A window of a trace as a Chrome-trace JSON file for Perfetto UI (tracedb export --perfetto).

The window is a step (its host interval and its device activity), the steps of a phase, or the
whole trace. The file holds the trace's own events that start in it, as the trace wrote them (ts
and dur in microseconds, written from the stored nanoseconds, so that loading the file back gives
the same times), and tracedb's findings on a process of its own, "tracedb findings": a track of
steps, one of layers, one of idle gaps (a slice per gap named by its cause, with its frame and the
idle time at stake in its args), one of the why findings of the window (the trace against its
own ideal), each a slice over the window's device activity, and one of the critical path of each
step in the window (tracedb.critical): a slice per stretch of the path with time, named for the
operation, call or kernel it is counted to, with flow arrows where the path hops from one of the
trace's tracks to another. The rows come from the table macro perfetto_window
(sql/modules/timeline/perfetto.sql).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import duckdb
import orjson

from . import critical, store, traces
from .atomic import NotAFile, output
from .errors import TracedbError

WHOLE = (-(1 << 62), 1 << 62)  # the window of a whole trace: every time tracedb keeps
PATH_STEPS = 50  # the steps of a window whose critical path is drawn at most (the first)
FINDINGS = 12  # the why findings drawn on their track
FLOW_IDS = 1 << 40  # the critical path's flow ids count up from here, clear of the trace's own
_INTEGER = re.compile(r"-?(?:0|[1-9][0-9]{0,17})")  # a JSON number: no leading zero


@dataclass
class PerfettoExport:
    path: Path
    trace: str
    events: int
    findings: int
    window: tuple[int, int] | None  # first and last nanosecond of the device activity in it


def window_of(con: duckdb.DuckDBPyConnection, trace_id: int, step: int | None, phase: str | None) -> tuple[int, int]:
    """[from, to) in nanoseconds: the step's host interval and device activity together; for a
    phase, from the first to the last of its steps (a step's phase: its kernels' most common one;
    one window, so steps of another phase between them are in it); the whole trace without either."""
    if step is None and phase is None:
        return WHOLE
    lo, hi, found = con.execute(
        """WITH s AS (SELECT step FROM device_activity WHERE trace_id = $t AND step IS NOT NULL GROUP BY step
                      HAVING ($step IS NULL OR step = $step) AND ($phase IS NULL OR mode(phase) = $phase)),
                a AS (SELECT * FROM device_activity WHERE trace_id = $t AND step IN (SELECT step FROM s))
           SELECT least(min(a.ts_ns), min(w.ts_ns)), greatest(max(a.end_ns), max(w.end_ns)), count(a.ts_ns)
           FROM a LEFT JOIN step_windows w ON w.trace_id = a.trace_id AND w.step = a.step""",
        {"t": trace_id, "step": step, "phase": phase}).fetchone()
    if not found:
        what = f"step {step}" if step is not None else f"phase {phase!r}"
        raise TracedbError(f"the trace has no device activity in {what} (see: tracedb report timeline)")
    return lo, hi + 1


def _findings(con: duckdb.DuckDBPyConnection, trace_id: int, phase: str | None, min_gap_us: float) -> list[dict]:
    """The why findings of the trace alone (against its own ideal; of the phase's steps with a
    phase), the first FINDINGS, from the macro why_findings."""
    cur = con.execute(f"SELECT * FROM why_findings(?, NULL, ?, ?, {FINDINGS}, NULL) ORDER BY rank",
                      [f"#{trace_id}", phase, min_gap_us])
    columns = [d[0] for d in cur.description]
    return [dict(zip(columns, row)) for row in cur.fetchall()]


def export(con: duckdb.DuckDBPyConnection, trace: str, out: Path, *, step: int | None = None,
           phase: str | None = None, min_gap_us: float = 20) -> PerfettoExport:
    """Write the window of trace to out (replaced whole, or not at all)."""
    trace_id, name = traces.find(con, trace)
    # the window, the findings and the events read the trace's step windows and device activity
    # many times: computed once (why_findings alone took 0.9 s, half of it planning them again)
    with store.shadowed(con, ["step_windows", "device_activity"], [trace_id]):
        lo, hi = window_of(con, trace_id, step, phase)
        findings = _findings(con, trace_id, phase, min_gap_us)  # once the window is known to hold something
        rows = con.execute("SELECT ph, cat, name, pid, tid, ts_ns, dur_ns, id, bp, args FROM "
                           "perfetto_window(?, ?, ?, ?) ORDER BY sort, ts_ns NULLS FIRST",
                           [trace_id, lo, hi, round(min_gap_us * 1000)]).fetchall()
        span = con.execute("SELECT min(ts_ns), max(end_ns) FROM device_activity WHERE trace_id = ? AND ts_ns >= ? "
                           "AND ts_ns < ?", [trace_id, lo, hi]).fetchone()
    pid = con.execute("SELECT perfetto_pid(?)", [trace_id]).fetchone()[0]
    told = 0

    def lines():
        nonlocal told
        for ph, cat, ev_name, ev_pid, tid, ts_ns, dur_ns, flow_id, bp, args in rows:
            yield _event(ph, cat, ev_name, ev_pid, tid, ts_ns, dur_ns, flow_id, bp, args)
        if span[0] is not None:
            for f in findings:
                told += 1
                args = {k: v for k, v in f.items() if v is not None}
                # the findings are the trace's (or the phase's), not the step's: drawn over the window
                args["of"] = f"phase {phase}" if phase is not None else "the whole trace"
                yield _event("X", "tracedb", f"{f.get('rank')}. {f.get('kind')}", str(pid), "4", span[0],
                             span[1] - span[0], None, None, orjson.dumps(args, default=str).decode())
        yield from _path(con, trace_id, lo, hi, pid)

    meta = {"tracedb": {"trace": name, "step": step, "phase": phase, "from_ns": None if (lo, hi) == WHOLE else lo,
                        "to_ns": None if (lo, hi) == WHOLE else hi}}
    events = 0

    def write(f) -> None:
        nonlocal events
        f.write(b'{"traceEvents": [\n')
        first = True
        for line in lines():
            f.write(line if first else b",\n" + line)
            first = False
            events += 1
        f.write(b'\n], "displayTimeUnit": "ns", "metadata": ' + orjson.dumps(meta) + b"}\n")

    try:
        with output(out, "wb") as f:
            write(f)
    except NotAFile as exc:
        raise TracedbError(f"{out}: {exc.strerror}") from None
    except OSError as exc:
        raise TracedbError(f"{out}: cannot write: {exc.strerror or exc}") from None
    return PerfettoExport(out, name, events, told, span if span[0] is not None else None)


def _path(con: duckdb.DuckDBPyConnection, trace_id: int, lo: int, hi: int, pid: int):
    """The critical path of each step in the window (PATH_STEPS at most; the whole trace where it
    has no steps), as events: a slice on tracedb's track per stretch of it that takes time, named
    for what it is counted to; and a flow arrow for each of its hops from one track of the trace
    to another (a launch to its kernel, the device's work to the call waiting for it), from the
    event the path leaves to the one it reaches."""
    windows = [w for w in critical.windows(con, f"#{trace_id}") if w[2] < hi and w[3] >= lo][:PATH_STEPS]
    flow = FLOW_IDS
    for (_, step, _, _), graph in zip(windows, critical.build_all(con, trace_id, [(w[2], w[3]) for w in windows])):
        if not graph.events:
            continue
        path = critical.longest_path(graph)
        for e in path.edges:
            src, dst = graph.events[graph.src[e] >> 1], graph.events[graph.dst[e] >> 1]
            start, end = graph.node_ts(graph.src[e]), graph.node_ts(graph.dst[e])
            if (src.pid, src.tid) != (dst.pid, dst.tid) and None not in (src.pid, dst.pid):
                flow += 1
                args = orjson.dumps({"edge": graph.type[e], "step": step}).decode()
                # each end bound to the slice it is in: an end node a nanosecond before the end
                yield _event("s", "tracedb critical path", graph.type[e], src.pid, src.tid,
                             _inside(start, src), None, flow, None, args)
                yield _event("f", "tracedb critical path", graph.type[e], dst.pid, dst.tid,
                             _inside(end, dst), None, flow, "e", args)
        for start, end, owner, bound, edge in critical.stretches(graph, path):
            yield _event("X", "tracedb", owner, str(pid), "5", start, end - start, None, None,
                         orjson.dumps({"bound": bound, "edge": edge, "step": step}).decode())


def _inside(ts: int, event: critical.Event) -> int:
    """A time inside the event's slice: ts, or a nanosecond before it at the slice's end."""
    return ts - 1 if ts >= event.end > event.ts else ts


def _micros(ns: int) -> bytes:
    """Nanoseconds as a JSON number of microseconds, exact (1736413971558972912 -> 1736413971558972.912)."""
    sign = "-" if ns < 0 else ""
    whole, frac = divmod(abs(ns), 1000)
    return f"{sign}{whole}.{frac:03d}".encode() if frac else f"{sign}{whole}".encode()


def _id(value) -> bytes:
    """A pid or tid as the trace wrote it: a number when it is one, else a string."""
    if value is None:
        return b"0"
    text = str(value)
    return text.encode() if _INTEGER.fullmatch(text) else orjson.dumps(text)


def _event(ph, cat, name, pid, tid, ts_ns, dur_ns, flow_id, bp, args) -> bytes:
    parts = [b'{"ph":' + orjson.dumps(ph)]
    if cat is not None:
        parts.append(b'"cat":' + orjson.dumps(cat))
    if name is not None:
        parts.append(b'"name":' + orjson.dumps(name))
    parts.append(b'"pid":' + _id(pid))
    parts.append(b'"tid":' + _id(tid))
    if ts_ns is not None:
        parts.append(b'"ts":' + _micros(ts_ns))
    if dur_ns is not None:
        parts.append(b'"dur":' + _micros(dur_ns))
    if flow_id is not None:
        parts.append(b'"id":' + _id(flow_id))
    if bp is not None:
        parts.append(b'"bp":' + orjson.dumps(bp))
    if args is not None:
        parts.append(b'"args":' + args.encode())  # stored JSON, written as it is
    return b",".join(parts) + b"}"
