"""The critical path of each step of a trace, for report critical-path: tracedb.critical finds
each step's graph and path, tracedb.replay re-times the step unchanged, and the results are
registered on the connection as relations the report's SQL reads."""

from __future__ import annotations

import duckdb

from .critical import BOUNDS, bound_of, build_all, longest_path, windows
from .errors import TracedbError
from .replay import replay


# each bound's column in critical_steps
BOUND_COLUMNS = {"host": "host_ns", "compute": "compute_ns", "communication": "communication_ns",
                 "memcpy/memset": "memcpy_ns", "launch overhead": "launch_ns",
                 "kernel-to-kernel overhead": "kernel_kernel_ns", "synchronisation": "sync_ns"}
STEP_COLUMNS = ("trace_id", "step", "span_ns", "work_ns", "replay_ns", "path_ns", *BOUND_COLUMNS.values(), "edges",
                "dropped")
EDGE_COLUMNS = ("trace_id", "step", "seq", "type", "bound", "weight_ns", "kind", "source", "event_id", "name")


def for_report(con: duckdb.DuckDBPyConnection, values: dict) -> None:
    """What the critical-path report's `-- Computed: critical_steps` runs: register() for its
    parameters."""
    register(con, values.get("trace"), values.get("step"), values.get("phase"), values.get("limit"))


def register(con: duckdb.DuckDBPyConnection, trace: str | None = None, step: int | None = None,
             phase: str | None = None, limit: int | None = None) -> None:
    """Find the critical path of each window of a trace (windows(); every trace with host
    operations or kernels when trace is None) and register the results on the connection, for a
    report's SQL: critical_steps (a row per window, the first limit of each trace: its span, the
    path's length and its split by bound) and critical_edges (a row per edge of each path, first to last, with the event its time
    is counted to)."""
    import pyarrow as pa

    traces = [trace] if trace is not None else [f"#{t}" for (t,) in con.execute(
        "SELECT trace_id FROM traces t WHERE EXISTS (SELECT 1 FROM cpu_ops c WHERE c.trace_id = t.trace_id) "
        "OR EXISTS (SELECT 1 FROM kernels k WHERE k.trace_id = t.trace_id) ORDER BY trace_id").fetchall()]
    chosen = []
    for name in traces:
        try:
            chosen += windows(con, name, step, phase)[:limit]  # the steps a report shows (limit: the first)
        except TracedbError:
            if trace is not None:
                raise  # the trace asked for has no such step; among every trace, those that have it
    steps, edges = [], []
    graphs = {}
    for trace_id in dict.fromkeys(t for t, *_ in chosen):
        mine = [(lo, hi) for t, _, lo, hi in chosen if t == trace_id]
        graphs.update(zip([(trace_id, lo, hi) for lo, hi in mine], build_all(con, trace_id, mine)))
    for trace_id, number, lo, hi in chosen:
        graph = graphs[(trace_id, lo, hi)]
        if not graph.events:
            continue
        path = longest_path(graph)
        bounds = path.bounds(graph)
        work = max(e.end for e in graph.events) - min(e.ts for e in graph.events)
        steps.append((trace_id, number, hi - lo, work, replay(graph), path.length, *[bounds[b] for b in BOUNDS],
                      len(graph.src), graph.dropped))
        for seq, e in enumerate(path.edges, 1):
            owner = graph.events[graph.owner[e]] if graph.owner[e] >= 0 else None
            edges.append((trace_id, number, seq, graph.type[e], bound_of(graph, e), graph.weight[e],
                          owner.kind if owner else None, owner.source if owner else None,
                          owner.event_id if owner else None, owner.name if owner else None))
    types = {"trace_id": pa.int32(), "step": pa.int64(), "seq": pa.int64(), "edges": pa.int64(), "dropped": pa.int64(),
             "event_id": pa.int64()}

    def table(columns: tuple[str, ...], rows: list[tuple]) -> "pa.Table":
        return pa.table({c: pa.array([r[i] for r in rows],
                                     type=types.get(c, pa.int64() if c.endswith("_ns") else pa.string()))
                         for i, c in enumerate(columns)})

    con.register("critical_steps", table(STEP_COLUMNS, steps))
    con.register("critical_edges", table(EDGE_COLUMNS, edges))
