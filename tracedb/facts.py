"""Stored derived facts: kernel_facts and python_stacks, filled by sql/derive/kernel_facts.sql, and
the kernel runs of AIE core tiles (aie_kernels), filled by sql/derive/aie_kernels.sql.

The analysis is defined by the SQL modules in sql/modules; deriving stores their result per trace so that
every question afterwards (tracedb report, a DuckDB shell, a dashboard) reads it at once. It runs
inside the load transaction, and for every trace when the rules or the views change.
"""

from __future__ import annotations

import duckdb

from . import db


def derive(con: duckdb.DuckDBPyConnection, trace_id: int) -> None:
    """(Re)derive one trace's facts (the caller owns the transaction)."""
    from . import rules  # rules re-derives through this module

    # the regex rules written out as the kernel rules stand now, however they got into the table
    # (a rules file, a lake's or an export's rules, a worker's copy of the user's)
    rules.refresh_regex_rules(con)
    # the load's tighter limit for staging is raised to the derivation's while it runs. DuckDB's
    # choice of each hash join's build side, made again after the join order from estimated row
    # counts, is off: the views' scope filter (_in_scope) and the recursive walk of the Python
    # stacks are estimated far from their size, and it hashed 3 million frames with their names
    # to look up half a million (on a 1 GiB trace the stacks took 1.7 s instead of 0.6, spilling
    # 420 MB); the join order alone decides here (the corpus's loads are unchanged by it)
    disabled = [o for o in con.execute("SELECT current_setting('disabled_optimizers')").fetchone()[0].split(",") if o]
    disabled += [] if "build_side_probe_side" in disabled else ["build_side_probe_side"]  # the user's kept
    with db.settings(con, memory_limit=db.DERIVE_MEMORY_LIMIT, disabled_optimizers=",".join(disabled)):
        # the views read this trace's rows alone (the _in_scope macro): no other trace is scanned
        con.execute(f"SET VARIABLE {db.SCOPE_VARIABLE} = {int(trace_id)}")
        try:
            db.run_file(con, "derive/kernel_facts.sql", {"trace_id": trace_id})
            # AIE kernel runs only for an mlir-aie trace: no work for formats the trace is not
            if con.execute("SELECT format = 'mlir-aie' FROM traces WHERE trace_id = ?", [trace_id]).fetchone()[0]:
                db.run_file(con, "derive/aie_kernels.sql", {"trace_id": trace_id})
        finally:
            try:
                con.execute(f"RESET VARIABLE {db.SCOPE_VARIABLE}")
            except duckdb.TransactionException:
                pass  # the transaction failed: its own error is the one to report (db.rollback clears the scope)


def derive_all(con: duckdb.DuckDBPyConnection) -> int:
    """(Re)derive every trace's facts (the caller owns the transaction); returns the trace count."""
    ids = [r[0] for r in con.execute("SELECT trace_id FROM traces ORDER BY trace_id").fetchall()]
    for trace_id in ids:
        derive(con, trace_id)
    return len(ids)


def refresh(con: duckdb.DuckDBPyConnection) -> int:
    """Re-derive every trace in one transaction of its own; returns the trace count."""
    with db.transaction(con, "cannot re-derive the traces"):
        count = derive_all(con)
    return count
