"""Stored derived facts: each file of sql/derive/ fills its tables for one trace (kernel_facts.sql:
kernel_facts and python_stacks; aie_kernels.sql: the kernel runs of AIE core tiles). A file's header
may say when it applies (`-- When: format = 'mlir-aie'`, a condition on the trace's row of traces);
a new derivation is a new file, run for every trace it applies to.

The analysis is defined by the SQL modules in sql/modules; deriving stores their result per trace so that
every question afterwards (tracedb report, a DuckDB shell, a dashboard) reads it at once. It runs
inside the load transaction, and for every trace when the rules or the views change.
"""

from __future__ import annotations

import hashlib

import duckdb

from . import sqlfiles, store
from .sqlfiles import literal


def derivations(files: list[str] | None = None) -> list[tuple[str, str | None]]:
    """The files of sql/derive/ (those named in files, else all), each with the condition its
    header's `-- When:` line gives (None: every trace), in the order of their names."""
    out = []
    for path in sorted((sqlfiles.sql_dir() / "derive").glob("*.sql")):
        if files is not None and path.name not in files:
            continue
        when = None
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip() and not line.startswith("--"):  # the header ends at the first statement
                break
            if line[2:].strip().lower().startswith("when:"):
                when = line.split(":", 1)[1].strip()
        out.append((path.name, when))
    return out


def derive(con: duckdb.DuckDBPyConnection, trace_id: int, files: list[str] | None = None) -> None:
    """(Re)derive one trace's facts (the caller owns the transaction): every file of sql/derive/
    that applies to it, or those named in files."""
    # the regex rules written out as the kernel rules stand now, however they got into the table
    # (a rules file, a lake's or an export's rules, a worker's copy of the user's)
    refresh_regex_rules(con)
    # the load's tighter limit for staging is raised to the derivation's while it runs. DuckDB's
    # choice of each hash join's build side, made again after the join order from estimated row
    # counts, is off: the views' scope filter (_in_scope) and the recursive walk of the Python
    # stacks are estimated far from their size, and it hashed 3 million frames with their names
    # to look up half a million (on a 1 GiB trace the stacks took 1.7 s instead of 0.6, spilling
    # 420 MB); the join order alone decides here (the corpus's loads are unchanged by it)
    disabled = [o for o in con.execute("SELECT current_setting('disabled_optimizers')").fetchone()[0].split(",") if o]
    disabled += [] if "build_side_probe_side" in disabled else ["build_side_probe_side"]  # the user's kept
    with store.settings(con, memory_limit=store.DERIVE_MEMORY_LIMIT, disabled_optimizers=",".join(disabled)):
        # the views read this trace's rows alone (the _in_scope macro): no other trace is scanned
        con.execute(f"SET VARIABLE {store.SCOPE_VARIABLE} = {int(trace_id)}")
        try:
            for name, when in derivations(files):
                # a derivation only for the traces it applies to: no work for formats the trace is not
                if when is None or con.execute(f"SELECT ({when}) FROM traces WHERE trace_id = ?",
                                               [trace_id]).fetchone()[0]:
                    store.run_file(con, f"derive/{name}", {"trace_id": trace_id})
        finally:
            try:
                con.execute(f"RESET VARIABLE {store.SCOPE_VARIABLE}")
            except duckdb.TransactionException:
                pass  # the transaction failed: its own error is the one to report (store.rollback clears the scope)


def derive_all(con: duckdb.DuckDBPyConnection, files: list[str] | None = None) -> int:
    """(Re)derive every trace's facts (the caller owns the transaction), by every file of
    sql/derive/ or those named in files; returns the trace count."""
    ids = [r[0] for r in con.execute("SELECT trace_id FROM traces ORDER BY trace_id").fetchall()]
    for trace_id in ids:
        derive(con, trace_id, files)
    return len(ids)


def refresh(con: duckdb.DuckDBPyConnection) -> int:
    """Re-derive every trace in one transaction of its own; returns the trace count."""
    with store.transaction(con, "cannot re-derive the traces"):
        count = derive_all(con)
    return count


def refresh_regex_rules(con: duckdb.DuckDBPyConnection) -> None:
    """Rewrite the macros _regex_rule_hits and _inductor_rule_hits (sql/modules/classify/kernel_ops.sql),
    _context_rule_hits (sql/modules/classify/kernel_ops_live.sql) and _step_frame_rule_hits
    (sql/modules/steps/phases.sql) with the rules' patterns written out as constants: DuckDB compiles a
    constant pattern once per query, a pattern read from a table once per row, and matching every
    distinct kernel name against every regex rule was most of a load's classification time (the
    context rules' patterns tried per text, most of the rest; the inductor rules' tried per
    Inductor name, a quarter of the operations' time on a compiled diffusion model; the step frame
    patterns tried per frame name, half the phases' time on a 34 MB vLLM trace of 120,000 Python
    frames). Every
    derivation calls it first (tracedb.facts), whatever path the rules took into the table; loading
    rules calls it too, so that the macro a DuckDB shell reads follows the table. The macros are
    written only when their texts differ from the last ones written, told by the digest kept in
    _rule_hits_digest (writing the four took 10 ms of every load)."""
    # every rule and the digest of the macros last written, in one query (five took 4 ms a load)
    rows = con.execute(
        "SELECT 'kernel' AS source, rank, match, platform, pattern FROM _kernel_rules_ordered "
        "UNION ALL SELECT 'frame', rank, NULL, NULL, regex FROM _step_frame_patterns_ordered "
        "UNION ALL SELECT 'digest', NULL, NULL, NULL, _rule_hits_digest() ORDER BY source, rank").fetchall()
    kernel = [r[1:] for r in rows if r[0] == "kernel"]
    statements = []
    for match, signature, text in (("regex", "_regex_rule_hits(kernel_name, kernel_platform)", "kernel_name"),
                                   ("inductor", "_inductor_rule_hits(fused_ops, kernel_platform)", "fused_ops")):
        statements.append(_hits_macro(
            signature, [f"CASE WHEN {'' if platform == 'any' else f'kernel_platform = {literal(platform)} AND '}"
                        f"regexp_matches({text}, {literal(pattern)}) THEN {int(rank)} END"
                        for rank, kind, platform, pattern in kernel if kind == match]))
    statements.append(_hits_macro(
        "_context_rule_hits(context_kind, context_text)",
        [f"CASE WHEN context_kind = {literal(kind)} AND regexp_matches(context_text, {literal(pattern)}) "
         f"THEN {int(rank)} END" for rank, kind, _, pattern in kernel if kind in ("cpu_op", "collective", "annotation")]))
    statements.append(_hits_macro(
        "_step_frame_rule_hits(frame_name)",
        [f"CASE WHEN regexp_matches(frame_name, {literal(regex)}) THEN {int(rank)} END"
         for source, rank, _, _, regex in rows if source == "frame"]))
    digest = hashlib.sha256("\n".join(statements).encode()).hexdigest()
    if next(r[4] for r in rows if r[0] == "digest") == digest:
        return
    for statement in statements:
        con.execute(statement)
    con.execute(f"CREATE OR REPLACE MACRO _rule_hits_digest() AS '{digest}'")


def _hits_macro(signature: str, hits: list[str]) -> str:
    """A macro giving the ranks of the rules that hit: hits, one CASE per rule, NULL on a miss."""
    body = f"list_filter([{', '.join(hits)}]::INTEGER[], lambda r: r IS NOT NULL)" if hits else "[]::INTEGER[]"
    return f"CREATE OR REPLACE MACRO {signature} AS {body}"
