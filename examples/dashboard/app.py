"""tracedb dashboard: a Streamlit app over a tracedb database file.

    pip install '.[dashboard]'
    streamlit run examples/dashboard/app.py -- --db demo.duckdb

Every question opens the file read-only and closes it at once (see `query`), so `tracedb load`
can write to the same file between two clicks. The tables and charts come from tracedb's own
reports (sql/reports/*.sql), so they show exactly what `tracedb report` shows.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import duckdb
import pandas as pd
import streamlit as st

from tracedb import reports
from tracedb.errors import TracedbError


def database_path() -> Path:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", default=os.environ.get("TRACEDB_DB", "tracedb.duckdb"))
    known, _ = parser.parse_known_args(sys.argv[1:])
    return Path(st.sidebar.text_input("Database file", known.db))


def query(db: Path, sql: str, params: list | None = None) -> pd.DataFrame:
    """One short read-only connection per question: it never keeps a writer out for long."""
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(sql, params or []).df()


def report(db: Path, name: str, **given) -> dict[str, pd.DataFrame]:
    """A tracedb report's sections as DataFrames, from one short read-only connection."""
    spec = reports.get(name)
    values = reports.bind(spec, given)
    with duckdb.connect(str(db), read_only=True) as con:
        return {section.name: pd.DataFrame(rows, columns=columns)
                for section, columns, rows in reports.run(con, spec, values)}


def bars(frame: pd.DataFrame, label: str, values: list[str], scale: float = 1.0, unit: str = "") -> None:
    """A bar chart of some columns of a frame, labelled by one of its columns."""
    if frame.empty:
        st.info("Nothing to chart.")
        return
    chart = frame.set_index(label)[values].astype(float) / scale
    st.bar_chart(chart.rename(columns={v: f"{v} ({unit})" if unit else v for v in values}), horizontal=True)


def traces_overview(db: Path) -> pd.DataFrame:
    traces = query(db, "SELECT t.trace_id, t.name, t.format, t.platform, t.device_name, t.event_count, "
                       "t.rejected_count, t.complete, (SELECT count(*) FROM kernels k WHERE k.trace_id = t.trace_id) "
                       "AS kernels, (SELECT sum(dur_ns) FROM kernels k WHERE k.trace_id = t.trace_id) / 1e6 AS kernel_ms "
                       "FROM traces t ORDER BY t.trace_id")
    st.dataframe(traces, hide_index=True)
    return traces


def main() -> None:
    st.set_page_config(page_title="tracedb", layout="wide")
    st.title("tracedb")
    db = database_path()
    if not db.is_file():
        st.error(f"{db}: no such database (load traces first: tracedb load FILE --db {db})")
        return
    try:
        show(db)
    except (duckdb.Error, TracedbError) as exc:
        st.error(" ".join(str(exc).split()))


def show(db: Path) -> None:
    tabs = st.tabs(["Traces", "Operations", "Compare", "Fusion", "Layer gaps", "AIE iterations"])
    with tabs[0]:
        traces = traces_overview(db)
    with_kernels = traces[traces.kernels > 0].name.tolist()
    with tabs[1]:
        if not with_kernels:
            st.info("No trace with kernels.")
        else:
            name = st.selectbox("Trace", with_kernels, key="ops_trace")
            ops = report(db, "ops", trace=name, limit=30)["main"]
            bars(ops.assign(label=ops.op + " · " + ops.phase), "label", ["total_ns"], 1e3, "µs")
            st.dataframe(ops, hide_index=True)
    if len(with_kernels) < 2:
        for tab in tabs[2:5]:
            with tab:
                st.info("Load two traces with kernels to compare them.")
    else:
        a = st.sidebar.selectbox("Trace A", with_kernels, index=0, key="trace_a")
        b = st.sidebar.selectbox("Trace B", with_kernels, index=1, key="trace_b")
        with tabs[2]:
            compare = report(db, "compare", trace=a, vs=b)
            bars(compare["main"], "op", ["a_total_ns", "b_total_ns"], 1e3, "µs")
            st.dataframe(compare["main"], hide_index=True)
            st.dataframe(compare["summary"], hide_index=True)
        with tabs[3]:
            fusion = report(db, "fusion", trace=a, vs=b)
            findings = fusion["main"]
            st.metric("Findings", len(findings))
            if not findings.empty:
                bars(findings.assign(label=findings.finding.astype(str) + " · " + findings.fused_op),
                     "label", ["at_stake_ns"], 1e3, "µs at stake")
            st.dataframe(findings, hide_index=True)
            st.dataframe(fusion["sides"], hide_index=True)
        with tabs[4]:
            layers = report(db, "alignment", trace=a, vs=b)["main"]
            if layers.empty:
                st.info("No layers found in these traces.")
            else:
                bars(layers.assign(label="layer " + layers.layer.astype(str)), "label", ["gap_ns"], 1e3, "µs")
            st.dataframe(layers, hide_index=True)
    with tabs[5]:
        aie = traces[traces.format == "mlir-aie"].name.tolist()
        if not aie:
            st.info("No mlir-aie trace loaded.")
        else:
            name = st.selectbox("AIE trace", aie, key="aie_trace")
            iterations = report(db, "aie-iterations", trace=name)["main"]
            bars(iterations.assign(label=iterations.tile_name + " · " + iterations.iteration_index.astype(str)),
                 "label", ["total_span_cycles"], 1.0, "cycles")
            st.dataframe(iterations, hide_index=True)


main()
