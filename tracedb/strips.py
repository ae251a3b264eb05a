"""Timeline strips: a picture of where in a step the GPU works and where it sits idle.

Per trace and step: a line of the step's critical path above the lanes (tracedb.critical: each
stretch of the path coloured by what bounds it, what it is counted to on hover), one lane per
stream (kernels coloured by operation, one colour per operation in all the strips of a figure;
memcpys and memsets grey, collectives dark red), and one lane of the step's idle gaps coloured by
cause, the frame and the idle time at stake on hover (an SVG <title>: no JavaScript). Traces are drawn one above the other (A above
B), each step from its first device activity, on one time axis. By default a trace shows its
slowest step and a typical one (the step whose span is nearest the median); `step` asks for one.
The HTML of the timeline, compare, gaps and why reports (their headers declare `Strips:`) and the
dashboard's Timeline tab draw them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape

import duckdb

from . import critical
from . import traces as tracesmod
from .errors import TracedbError

WIDTH = 900  # pixels of the longest step drawn
LABEL_W = 150
LANE_H, LANE_GAP, HEAD_H = 12, 3, 20
OP_COLOURS = ("#4e79a7", "#f28e2b", "#59a14f", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f",
              "#86bcb6", "#8cd17d", "#499894", "#d4a6c8")
FIXED = {"Memcpy": "#9aa5b1", "Memset": "#c5ccd3"}
COMM = "#c0392b"
OTHER = "#dddddd"
CAUSES = {"host launched late": "#111111", "synchronisation": "#7b2cbf", "queued and waiting": "#bcbd22",
          "no launch recorded": "#7f7f7f"}  # colours no operation takes
# the critical path's stretches by what bounds them (critical.BOUNDS)
BOUNDS = {"host": "#111111", "compute": "#1f77b4", "communication": COMM, "memcpy/memset": "#9aa5b1",
          "launch overhead": "#ff7f0e", "kernel-to-kernel overhead": "#e6ab02", "synchronisation": "#7b2cbf"}
PATH_H = 5


@dataclass
class Strip:
    """One step of one trace, its times from the step's first device activity."""
    side: str  # "A", "B" or the trace's name
    trace: str
    step: int | None
    why: str  # slowest, typical, asked for, whole trace
    span_ns: int
    lanes: dict[str, list[tuple[int, int, str, str, str]]] = field(default_factory=dict)  # lane: (start, dur, op, class, name)
    gaps: list[tuple[int, int, str, str | None]] = field(default_factory=list)  # (start, idle, cause, frame)
    path: list[tuple[int, int, str, str]] = field(default_factory=list)  # (start, dur, bound, what)
    path_ns: int = 0  # the critical path's length


def _step_spans(con: duckdb.DuckDBPyConnection, trace_id: int, phase: str | None) -> list[tuple[int, int]]:
    """(step, span) of the trace's steps, of one phase if given (a step's phase: its kernels' most
    common one)."""
    return con.execute(
        "SELECT step, max(end_ns) - min(ts_ns) AS span FROM device_activity WHERE trace_id = ? AND step IS NOT NULL "
        "GROUP BY step HAVING ? IS NULL OR mode(phase) = ? ORDER BY span DESC, step", [trace_id, phase, phase]).fetchall()


def chosen_steps(con: duckdb.DuckDBPyConnection, trace_id: int, step: int | None, phase: str | None) -> list[tuple[int | None, str]]:
    """The steps to draw, with why: the one asked for, else the slowest and a typical one (one
    step when they are the same), else the whole trace when it has no steps (and no phase was
    asked for: then nothing)."""
    if step is not None:
        return [(step, "asked for")]
    rows = _step_spans(con, trace_id, phase)
    if not rows:
        return [] if phase is not None else [(None, "whole trace")]
    spans = sorted(r[1] for r in rows)
    median = spans[(len(spans) - 1) // 2]
    typical = min(rows, key=lambda r: (abs(r[1] - median), r[0]))[0]
    return [(rows[0][0], "slowest")] + ([(typical, "typical")] if typical != rows[0][0] else [])


def strip_of(con: duckdb.DuckDBPyConnection, side: str, trace_id: int, name: str, step: int | None, why: str,
             gaps: list[tuple[int, int, int, str, str | None]]) -> Strip | None:
    """One step's strip; gaps: the trace's idle gaps (start, end, idle, cause, frame)."""
    acts = con.execute(
        "SELECT kind, name, op, class, device, stream, ts_ns, dur_ns FROM device_activity "
        "WHERE trace_id = ? AND (? IS NULL OR step = ?) ORDER BY ts_ns, end_ns", [trace_id, step, step]).fetchall()
    if not acts:
        return None
    start = acts[0][6]
    end = max(a[6] + a[7] for a in acts)
    devices = {a[4] for a in acts}
    strip = Strip(side, name, step, why, end - start)
    for kind, act_name, op, cls, device, stream, ts, dur in acts:
        lane = (f"device {device} " if len(devices) > 1 else "") + f"stream {stream}"
        strip.lanes.setdefault(lane, []).append((ts - start, dur, op or kind, cls, act_name))
    strip.lanes = dict(sorted(strip.lanes.items(), key=lambda kv: (-len(kv[1]), kv[0])))
    strip.gaps = [(s - start, idle, cause, frame) for s, e, idle, cause, frame in gaps if s >= start and e <= end]
    strip.path, strip.path_ns = _path(con, trace_id, step, start, end)
    return strip


def _path(con: duckdb.DuckDBPyConnection, trace_id: int, step: int | None, start: int,
          end: int) -> tuple[list[tuple[int, int, str, str]], int]:
    """The step's critical path (the whole trace's without a step): its stretches inside the strip
    (from start to end), from start, and its length; none where the trace has no such window."""
    try:
        windows = critical.windows(con, f"#{trace_id}", step=step)
    except TracedbError:
        return [], 0
    if not windows:
        return [], 0
    graph = critical.build(con, trace_id, windows[0][2], windows[0][3])
    if not graph.events:
        return [], 0
    path = critical.longest_path(graph)
    drawn = [(max(lo, start) - start, min(hi, end) - max(lo, start), bound, what)
             for lo, hi, what, bound, _ in critical.stretches(graph, path) if hi > start and lo < end]
    return drawn, path.length


def strips(con: duckdb.DuckDBPyConnection, wanted: list[str], *, step: int | None = None, phase: str | None = None,
           min_gap_us: float = 20, compare: bool | None = None) -> tuple[list[Strip], list[str]]:
    """The strips of the traces named (A first when compare, default: two traces), each its
    chosen steps; and what could not be drawn ("B: no step 7")."""
    out, missing = [], []
    compare = len(wanted) == 2 if compare is None else compare
    sides = ["A", "B"] if compare else [None] * len(wanted)
    for side, want in zip(sides, wanted):
        trace_id, name = tracesmod.find(con, want)
        gaps = con.execute("SELECT start_ns, end_ns, idle_ns, cause, frame FROM gpu_idle_gaps(?, ?) ORDER BY start_ns",
                           [trace_id, round(min_gap_us * 1000)]).fetchall()
        chosen = chosen_steps(con, trace_id, step, phase)
        if not chosen:
            missing.append(f"{side or name}: no step of phase {phase}")
        for number, why in chosen:
            s = strip_of(con, side or name, trace_id, name, number, why, gaps)
            if s is None:
                missing.append(f"{side or name}: no device activity in step {number}")
            else:
                out.append(s)
    return out, missing


def colours(drawn: list[Strip]) -> dict[tuple[str, str], str]:
    """A colour per (operation, class) of the strips: collectives dark red, memcpy and memset grey,
    the others the palette's colours in order of their time over all the strips drawn (so that
    one operation has one colour in A and in B, and the operations taking most time are told
    apart), the rest a light grey."""
    time: dict[tuple[str, str], int] = {}
    for s in drawn:
        for items in s.lanes.values():
            for _, dur, op, cls, _ in items:
                time[(op, cls)] = time.get((op, cls), 0) + dur
    out, free = {}, iter(OP_COLOURS)
    for key in sorted(time, key=lambda k: (-time[k], k)):
        op, cls = key
        out[key] = COMM if cls == "comm" else FIXED.get(op) or next(free, OTHER)
    return out


def _merged(items: list[tuple[int, int, str, str, str]], ns_per_px: float,
            colour: dict[tuple[str, str], str]) -> list[tuple[int, int, str, str, str, int, str]]:
    """A lane's activities, those under a pixel merged with the one before when it ends within a
    pixel (the count kept, the colour the first's): at most about two rectangles per pixel of the
    lane, whatever the step holds."""
    out: list[list] = []
    for start, dur, op, cls, name in items:
        if out and dur < ns_per_px and out[-1][1] < ns_per_px and start - (out[-1][0] + out[-1][1]) < ns_per_px:
            last = out[-1]
            last[1] = max(last[1], start + dur - last[0])
            last[5] += 1
            continue
        out.append([start, dur, op, cls, name, 1, colour[(op, cls)]])
    return [tuple(x) for x in out]


def svg(drawn: list[Strip]) -> str:
    """The strips as one inline SVG (no script): A's steps above B's, on one time axis."""
    if not drawn:
        return ""
    longest = max(s.span_ns for s in drawn) or 1
    ns_per_px = longest / WIDTH
    x = lambda ns: LABEL_W + ns / ns_per_px  # noqa: E731
    parts, y = [], 0
    colour = colours(drawn)
    for s in drawn:
        label = f"{s.side}: {s.trace}" if s.side != s.trace else s.trace
        where = "whole trace" if s.step is None else f"step {s.step} ({s.why})"
        idle = sum(g[1] for g in s.gaps)
        parts.append(f'<text x="0" y="{y + 14}" font-weight="600">{escape(label)} — {escape(where)}: '
                     f'{_ms(s.span_ns)} span, {_ms(idle)} in idle gaps</text>')
        y += HEAD_H
        parts.append(f'<g class="strip" data-trace="{escape(s.trace)}" data-step="{"" if s.step is None else s.step}">')
        if s.path:
            parts.append(f'<text x="0" y="{y + LANE_H - 2}" font-size="11">critical path '
                         f'{escape(_ms(s.path_ns))}</text>')
            for start, dur, bound, what in s.path:
                parts.append(f'<rect class="path" data-bound="{escape(bound)}" x="{x(start):.2f}" '
                             f'y="{y + (LANE_H - PATH_H) / 2}" '
                             f'width="{max(dur / ns_per_px, 0.5):.2f}" height="{PATH_H}" fill="{BOUNDS[bound]}">'
                             f'<title>{escape(bound)} · {escape(what)} · {dur / 1000:,.1f} µs</title></rect>')
            y += LANE_H + LANE_GAP
        for lane, items in s.lanes.items():
            parts.append(f'<text x="0" y="{y + LANE_H - 2}" font-size="11">{escape(lane)}</text>')
            parts.append(f'<rect x="{LABEL_W}" y="{y}" width="{s.span_ns / ns_per_px:.1f}" height="{LANE_H}" '
                         f'fill="#f4f4f4"/>')
            for start, dur, op, cls, name, n, fill in _merged(items, ns_per_px, colour):
                tip = f"{op}: {name}" if n == 1 else f"{n} activities from {op}: {name}"
                parts.append(f'<rect class="act" x="{x(start):.2f}" y="{y}" width="{max(dur / ns_per_px, 0.5):.2f}" '
                             f'height="{LANE_H}" fill="{fill}"><title>{escape(tip)} · '
                             f'{dur / 1000:,.1f} µs</title></rect>')
            y += LANE_H + LANE_GAP
        parts.append(f'<text x="0" y="{y + LANE_H - 2}" font-size="11">idle gaps</text>')
        for start, idle, cause, frame in s.gaps:
            tip = f"{cause} · {idle / 1000:,.1f} µs at stake" + (f" · {frame}" if frame else "")
            parts.append(f'<rect class="gap" data-cause="{escape(cause)}" x="{x(start):.2f}" y="{y}" '
                         f'width="{max(idle / ns_per_px, 0.5):.2f}" height="{LANE_H}" '
                         f'fill="{CAUSES.get(cause, "#7f8c8d")}"><title>{escape(tip)}</title></rect>')
        y += LANE_H + LANE_GAP
        parts.append("</g>")
        y += 10
    # the time axis: ticks at round fractions of the longest step
    step_ns = _tick(longest)
    parts.append(f'<line x1="{LABEL_W}" y1="{y}" x2="{LABEL_W + WIDTH}" y2="{y}" stroke="#999"/>')
    unit, per = ("ms", 1e6) if longest >= 10_000_000 else ("µs", 1e3)
    t = 0
    while t <= longest:
        parts.append(f'<line x1="{x(t):.1f}" y1="{y}" x2="{x(t):.1f}" y2="{y + 4}" stroke="#999"/>'
                     f'<text x="{x(t):.1f}" y="{y + 16}" font-size="10" text-anchor="middle">{t / per:,.0f} {unit}</text>')
        t += step_ns
    y += 26
    # legend: the operations with the most time, then the gaps' causes
    legend = [(op, c) for (op, cls), c in colour.items() if c != OTHER][:len(OP_COLOURS) + 2]
    legend += [(f"idle: {c}", colour) for c, colour in CAUSES.items()]
    if any(s.path for s in drawn):
        legend += [(f"path: {b}", colour) for b, colour in BOUNDS.items()
                   if any(p[2] == b for s in drawn for p in s.path)]
    lx = 0
    for text, colour in legend:
        w = 30 + 7 * len(text)
        if lx + w > LABEL_W + WIDTH:
            lx, y = 0, y + 16
        parts.append(f'<rect x="{lx}" y="{y}" width="12" height="12" fill="{colour}"/>'
                     f'<text x="{lx + 16}" y="{y + 10}" font-size="11">{escape(text)}</text>')
        lx += w
    y += 18
    # the style travels with the picture: a page's own, or none when the SVG is opened alone
    return (f'<svg class="strips" xmlns="http://www.w3.org/2000/svg" width="{LABEL_W + WIDTH + 10}" height="{y}" '
            f'viewBox="0 0 {LABEL_W + WIDTH + 10} {y}"><style>text {{ font-family: system-ui, sans-serif; '
            f'font-size: 12px; fill: #222; }}</style>' + "".join(parts) + "</svg>")


def _ms(ns: int) -> str:
    return f"{ns / 1e6:,.3f} ms"


def _tick(span: int) -> int:
    """A round tick interval giving 4 to 10 ticks over span nanoseconds."""
    unit = 1
    while span / unit > 10:
        for m in (2, 5, 10):
            if span / (unit * m) <= 10:
                return unit * m
        unit *= 10
    return unit


def figure(con: duckdb.DuckDBPyConnection, wanted: list[str], *, step: int | None = None, phase: str | None = None,
           min_gap_us: float = 20, compare: bool | None = None) -> str:
    """The strips of the traces as an HTML figure ('' when none of them has device activity)."""
    drawn, missing = strips(con, wanted, step=step, phase=phase, min_gap_us=min_gap_us, compare=compare)
    note = f'<p class="meta">Not drawn: {escape("; ".join(missing))}.</p>' if missing else ""
    if not drawn:
        return note
    two = {s.side for s in drawn} >= {"A", "B"}
    title = "Timeline strips: " + ("A above B, " if two else "") + \
        "each step from its first device activity (hover a gap for its cause, frame and time at stake)"
    return f"<figure><figcaption>{escape(title)}</figcaption>{svg(drawn)}{note}</figure>"
