"""tracedb dashboard: a Streamlit app over a tracedb database file, through tracedb's Python API.

    pip install '.[dashboard]'
    streamlit run examples/dashboard/app.py -- --db demo.duckdb

Every question opens the file read-only and closes it at once (see `report`), so `tracedb load`
can write to the same file between two clicks. Streamlit runs the page again on every click: a
report already run on the file as it stands is kept (st.cache_data), and a load or a removal,
which changes the file, has the reports run again. The tables and charts are tracedb's own reports
(db.report), so they hold exactly what `tracedb report` prints; durations are shown in the unit
the terminal table picks for each column (Result.in_units).
"""

from __future__ import annotations

import argparse
import inspect
import os
import re
import sys
from pathlib import Path

import altair as alt
import pandas as pd
import streamlit as st

import tracedb


def database_path() -> Path:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", default=os.environ.get("TRACEDB_DB", "tracedb.duckdb"))
    known, _ = parser.parse_known_args(sys.argv[1:])
    return Path(st.sidebar.text_input("Database file", known.db))


def report(db: Path, name: str, **params) -> dict[str, tracedb.Result]:
    """A report's sections, from one short read-only connection (it never keeps a writer out).
    Streamlit runs the whole page again on every click: a report already run on the file as it
    stands is not run again (a load that changes the file changes the key)."""
    return _report(str(db), tracedb.state(db), name, tuple(sorted(params.items())))


@st.cache_data(max_entries=128, show_spinner=False)
def _report(db: str, state: tuple, name: str, params: tuple) -> dict[str, tracedb.Result]:
    with tracedb.connect(db) as con:
        return con.report(name, **dict(params)).sections


def strips(db: Path, traces: tuple[str, str], step: int | None) -> str:
    """The timeline strips of A above B (one step, or the slowest and a typical one), drawn once
    for the file as it stands, like report()."""
    return _strips(str(db), tracedb.state(db), traces, step)


@st.cache_data(max_entries=32, show_spinner=False)
def _strips(db: str, state: tuple, traces: tuple[str, str], step: int | None) -> str:
    with tracedb.connect(db) as con:
        return con.timeline_strips(list(traces), step=step)


# Units a column of Result.in_units() names in its header ("a_total ms", "share %").
UNITS = (" ns", " µs", " ms", " s", " B", " KiB", " MiB", " GiB", " %")


def table(result: tracedb.Result) -> pd.DataFrame:
    """A result as a person reads it: durations in their column's unit with two decimals,
    percentages with one, ratios as 0.32x."""
    shown = result.in_units()
    frame = shown.df()
    config = {}
    for name in frame.columns:
        if shown.formats.get(name) == "ratio":
            fmt = "%.2fx"
        elif name.endswith(" %") or shown.formats.get(name) == "percent":
            fmt = "%.1f"
        elif name.endswith(UNITS) or pd.api.types.is_float_dtype(frame[name]):
            fmt = "%.2f"  # GMAC/s, TFLOP/s, ... as the terminal
        else:
            fmt = None
        if frame[name].isna().any() and (fmt is not None or not pd.api.types.is_numeric_dtype(frame[name])):
            # no value: an empty cell, not "None" (Streamlit shows a missing number as None)
            frame[name] = ["" if pd.isna(v) else (fmt % v if fmt else v) for v in frame[name]]
        elif fmt is not None:
            config[name] = st.column_config.NumberColumn(format=fmt)
    st.dataframe(frame, hide_index=True, column_config=config)
    return frame


# Markdown's and Streamlit's marks: a kernel or frame name such as __getitem__ or list[int] is
# text, never bold, a link or an emoji code (:fire:)
MARKS = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:])")


def plain(text: str) -> str:
    """text for st.markdown, shown as it is."""
    return MARKS.sub(r"\\\1", text)


def figure(markup: str) -> None:
    """A figure of tracedb's (its SVG, every text in it escaped) in a frame of its own: st.html
    removes SVG. st.iframe sizes the frame to its content; older Streamlit: components.html."""
    if hasattr(st, "iframe"):
        st.iframe(markup, height="content")
        return
    import streamlit.components.v1 as components

    heights = [int(h) for h in re.findall(r'<svg[^>]*\bheight="(\d+)"', markup)]
    components.html(markup, height=sum(heights) + 60 * max(1, len(heights)), scrolling=True)


def side_by_side(result: tracedb.Result, label: str, a: str, b: str, names: tuple[str, str],
                 order: list | None = None) -> None:
    """A bar pair per row of a comparison: trace A's and trace B's values next to each other
    (not stacked), rows in the given order (default: as the report orders them)."""
    if not result.rows:
        st.info("Nothing to chart.")
        return
    shared = result.in_units(shared=True)  # A and B on one axis: one unit for both
    frame = shared.df()
    a_col, b_col = (shared.columns[result.columns.index(c)] for c in (a, b))
    unit = a_col.rsplit(" ", 1)[-1]
    long = pd.concat([pd.DataFrame({label: frame[label].astype(str), "trace": f"A: {names[0]}", unit: frame[a_col]}),
                      pd.DataFrame({label: frame[label].astype(str), "trace": f"B: {names[1]}", unit: frame[b_col]})])
    rows = [str(v) for v in (order if order is not None else frame[label].tolist())]
    chart = alt.Chart(long).mark_bar().encode(
        y=alt.Y(f"{label}:N", sort=rows, title=None),
        yOffset=alt.YOffset("trace:N"),
        x=alt.X(f"{unit}:Q", title=f"GPU time ({unit})"),
        color=alt.Color("trace:N", legend=alt.Legend(orient="top", title=None)),
        tooltip=[label, "trace", alt.Tooltip(f"{unit}:Q", format=",.2f")])
    st.altair_chart(chart, width="stretch", height=120 + 34 * len(rows))


# The parts of a step's wall-clock time, in the order they stack (they add up to its span).
STEP_PARTS = {"compute_ns": "compute", "exposed_comm_ns": "communication", "exposed_memcpy_ns": "memcpy",
              "idle_ns": "idle"}


def stacked_steps(result: tracedb.Result, names: tuple[str, str]) -> None:
    """Each side's steps as stacked bars (compute, exposed communication, exposed memcpy, idle),
    the two steps of a pair next to each other: compare's steps section."""
    if not result.rows:
        st.info("No steps to chart.")
        return
    shared = result.in_units(shared=True)  # every part on one axis: one unit for all
    frame = shared.df()
    shown = {shared.columns[result.columns.index(c)]: part for c, part in STEP_PARTS.items()}
    unit = next(iter(shown)).rsplit(" ", 1)[-1]
    frame["step"] = [f"{phase} {pair} · {names[0] if side == 'A' else names[1]}"
                     for pair, phase, side in zip(frame["pair"], frame["phase"], frame["side"])]
    long = frame.melt(id_vars=["step"], value_vars=list(shown), var_name="part", value_name=unit)
    long["part"] = long["part"].map(shown)
    order = list(STEP_PARTS.values())
    long["order"] = long["part"].map(order.index)
    chart = alt.Chart(long).mark_bar().encode(
        y=alt.Y("step:N", sort=frame["step"].tolist(), title=None),
        x=alt.X(f"{unit}:Q", stack="zero", title=f"wall-clock time ({unit})"),
        color=alt.Color("part:N", sort=order, legend=alt.Legend(orient="top", title=None)),
        order=alt.Order("order:Q"),
        tooltip=["step", "part", alt.Tooltip(f"{unit}:Q", format=",.2f")])
    st.altair_chart(chart, width="stretch", height=120 + 28 * len(frame))


def bars(result: tracedb.Result, label: str, value: str, title: str) -> None:
    """One bar per row, in the report's order."""
    if not result.rows:
        st.info("Nothing to chart.")
        return
    shown = result.in_units()
    frame = shown.df()
    header = shown.columns[result.columns.index(value)]
    unit = header.rsplit(" ", 1)[-1] if header != value else ""  # a duration's unit; a count has none
    frame[label] = frame[label].astype(str)
    chart = alt.Chart(frame).mark_bar().encode(
        y=alt.Y(f"{label}:N", sort=frame[label].tolist(), title=None),
        x=alt.X(f"{header}:Q", title=f"{title} ({unit})" if unit else title),
        tooltip=[label, alt.Tooltip(f"{header}:Q", format=",.2f")])
    st.altair_chart(chart, width="stretch", height=120 + 24 * len(frame))


def main() -> None:
    st.set_page_config(page_title="tracedb", layout="wide")
    st.title("tracedb")
    db = database_path()
    if not db.is_file():
        st.error(f"{db}: no such database (load traces first: tracedb load FILE --db {db})")
        return
    try:
        show(db)
    except tracedb.TracedbError as exc:
        st.error(str(exc))


def why_list(result: tracedb.Result) -> None:
    """The why findings as a numbered list: time at stake, the sentence whole, the next command."""
    for row in result.records():
        stake = row["at_stake_ns"] / 1e6
        st.markdown(f"**{row['rank']}. {row['kind']}: {stake:,.2f} ms at stake** — {plain(row['finding'])}")
        st.code(row["next"], language="bash")


TABS = ["Traces", "Operations", "Compare", "Timeline", "Fusion", "Layer gaps", "AIE iterations"]


def show(db: Path) -> None:
    # a link opens on a tab of its own: ?tab=Timeline (Streamlit that can choose the open tab)
    wanted = st.query_params.get("tab")
    opens = {"default": wanted} if wanted in TABS and "default" in inspect.signature(st.tabs).parameters else {}
    tabs = st.tabs(TABS, **opens)
    with tracedb.connect(db) as con:
        traces = con.sql("SELECT t.name, t.format, t.platform, t.device_name, t.event_count AS events, "
                         "t.rejected_count AS rejected, t.complete, count(k.kernel_id) AS kernels, "
                         "sum(k.dur_ns) AS kernel_ns FROM traces t LEFT JOIN kernels k USING (trace_id) "
                         "GROUP BY t.trace_id, t.name, t.format, t.platform, t.device_name, t.event_count, "
                         "t.rejected_count, t.complete ORDER BY t.trace_id")
    with tabs[0]:
        overview = table(traces)
    with_kernels = overview[overview.kernels > 0].name.tolist()
    with tabs[1]:
        if not with_kernels:
            st.info("No trace with kernels.")
        else:
            name = st.selectbox("Trace", with_kernels, key="ops_trace")
            ops = report(db, "ops", trace=name, limit=30)["main"]
            labelled = tracedb.Result(["operation", *ops.columns], [(f"{r[1]} · {r[2]}", *r) for r in ops.rows],
                                      ops.formats)
            bars(labelled, "operation", "total_ns", "GPU time")
            table(ops)
    if len(with_kernels) < 2:
        for tab in tabs[2:6]:
            with tab:
                st.info("Load two traces with kernels to compare them.")
    else:
        a = st.sidebar.selectbox("Trace A", with_kernels, index=0, key="trace_a")
        b = st.sidebar.selectbox("Trace B", with_kernels, index=1, key="trace_b")
        with tabs[2]:
            compare = report(db, "compare", trace=a, vs=b)
            st.subheader("What to fix first")  # the causes of the gap, largest first (report why)
            why_list(compare["why"])
            st.subheader("Wall-clock time")  # where the spans differ: idle time, each operation, ...
            side_by_side(compare["wall-clock"], "part", "a_ns", "b_ns", (a, b))
            table(compare["wall-clock"])
            st.subheader("Steps")
            stacked_steps(compare["steps"], (a, b))
            st.subheader("Operations")
            side_by_side(compare["main"], "op", "a_total_ns", "b_total_ns", (a, b))
            table(compare["main"])
            table(compare["summary"])
        with tabs[3]:
            # where each step's time goes, A above B, and where the idle time sits (gaps by cause and frame)
            st.subheader("Steps")
            stacked_steps(compare["steps"], (a, b))
            st.subheader("Steps on the timeline")  # A's slowest and typical step above B's, gaps by cause
            steps = sorted({r["step"] for r in report(db, "timeline", trace=a)["main"].records()
                            if r["step"] is not None})
            chosen = st.selectbox("Step", ["slowest and typical", *steps], key="strip_step")
            figure(strips(db, (a, b), None if chosen == "slowest and typical" else chosen))
            for side, name in (("A", a), ("B", b)):
                gaps = report(db, "gaps", trace=name, min_gap_us=20)["main"]
                st.subheader(f"Idle gaps — {side}: {name}")
                if gaps.rows:
                    cols = gaps.columns
                    labelled = tracedb.Result(["finding", *cols], [
                        (f"{r[cols.index('cause')]} · {r[cols.index('frame')] or '(no frame)'}", *r)
                        for r in gaps.rows[:15]], gaps.formats)
                    bars(labelled, "finding", "idle_ns", "idle time")
                table(gaps)
        with tabs[4]:
            fusion = report(db, "fusion", trace=a, vs=b)
            findings = fusion["main"]
            st.metric("Findings", len(findings))
            if findings.rows:
                labelled = tracedb.Result(["finding", *findings.columns[1:]],
                                          [(f"{r[0]} · {r[3]}", *r[1:]) for r in findings.rows], findings.formats)
                bars(labelled, "finding", "at_stake_ns", "at stake")
            table(findings)
            table(fusion["sides"])
        with tabs[5]:
            layers = report(db, "alignment", trace=a, vs=b)["main"]
            if not layers.rows:
                st.info("No layers found in these traces.")
            else:
                # the report puts the largest gaps first; the chart runs through the model, layer by layer
                order = sorted(r[0] for r in layers.rows)
                side_by_side(layers, "layer", "a_total_ns", "b_total_ns", (a, b), order=order)
            table(layers)
    with tabs[6]:
        aie = overview[overview.format == "mlir-aie"].name.tolist()
        if not aie:
            st.info("No mlir-aie trace loaded.")
        else:
            name = st.selectbox("AIE trace", aie, key="aie_trace")
            iterations = report(db, "aie-iterations", trace=name)["main"]
            cols = iterations.columns
            labelled = tracedb.Result(["iteration", *cols], [
                (f"{r[cols.index('tile_name')]} · {r[cols.index('iteration_index')]}", *r) for r in iterations.rows],
                iterations.formats)
            bars(labelled, "iteration", "total_span_cycles", "span (cycles)")
            table(iterations)


main()
