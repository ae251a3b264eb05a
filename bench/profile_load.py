"""Where a load's time goes, statement by statement, in one process.

    python bench/profile_load.py FILE [--db PATH] [--top 25]
    python bench/profile_load.py FILE --stages [--runs 3]
    python bench/profile_load.py FILE --planning

Loads FILE with tracedb.ingest.loader.load_file into PATH (default: a new database in a temporary
folder), through a connection that times every SQL statement it runs, and prints the total, the
time spent in SQL and the slowest statements (their first line and the time of all the runs of
the same text). The time not in SQL is Python: the feeder, the events typed in Python, the
bookkeeping. Interpreter start-up and argument parsing are not in it (they are the whole
command's: `python -X importtime -m tracedb ...`).

--stages sums the statements by the stage of the load they belong to (the rows of the README's
profile table) and prints, for --runs loads each into a new database, the median of each.

--planning runs the load with DuckDB's detailed profiler on every statement and prints, by stage,
what DuckDB spent before running each statement (binding it, the views it names included;
optimizing; physical planning) against the statement's whole time. The profiler's own work makes
the load slower; the split is the figure, not the total.
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tracedb import db  # noqa: E402
from tracedb.ingest import loader  # noqa: E402


class TimedConnection:
    """A DuckDB connection whose execute calls are timed by their statement text."""

    def __init__(self, con):
        self._con = con
        self.times: dict[str, float] = collections.defaultdict(float)
        self.calls: dict[str, int] = collections.Counter()
        self.last = ""  # the first statement that failed

    def execute(self, query, *args, **kwargs):
        start = time.perf_counter()
        try:
            self._con.execute(query, *args, **kwargs)
        except Exception:
            self.last = self.last or query  # the first failure; what runs after it is cleanup
            raise
        finally:
            self.times[query] += time.perf_counter() - start
            self.calls[query] += 1
        return self

    def __getattr__(self, name):
        return getattr(self._con, name)


class _Rows:
    """A statement's result, fetched before the profiler is switched off (which ends the query)."""

    def __init__(self, rows, description):
        self._rows, self.description = rows, description

    def fetchone(self):
        return self._rows.pop(0) if self._rows else None

    def fetchall(self):
        rows, self._rows = self._rows, []
        return rows


class ProfiledConnection:
    """A DuckDB connection that profiles each statement apart (DuckDB writes a statement's profile
    when its result is closed, so the result is fetched here) and keeps, for each statement in
    turn, its text, its planning times and its whole time."""

    def __init__(self, con, out: Path):
        self._con, self._out = con, out
        self.profiles: list[tuple[str, dict]] = []

    def execute(self, query, *args, **kwargs):
        target = self._out / f"{len(self.profiles)}.json"
        for setting in ("enable_profiling = 'json'", f"profiling_output = '{target}'",
                        "profiling_mode = 'detailed'", "profiling_coverage = 'ALL'"):
            self._con.execute(f"SET {setting}")
        self._con.execute(query, *args, **kwargs)
        description = self._con.description
        rows = self._con.fetchall() if description else []
        self._con.execute("RESET enable_profiling")
        profile = json.loads(target.read_text())
        self.profiles.append((query, {
            "binding": profile["planner"]["total_time"],
            "optimizing": profile["optimizer"]["total_time"],
            "physical planning": profile["physical_planner"]["total_time"],
            "whole statement": profile["query"]["total_time"],
        }))
        return _Rows(rows, description)

    def __getattr__(self, name):
        return getattr(self._con, name)


def planning(trace: str) -> None:
    with tempfile.TemporaryDirectory(prefix="tracedb-profile-") as tmp:
        con = db.open_db(str(Path(tmp) / "t.duckdb"))
        profiled = ProfiledConnection(con, Path(tmp))
        outcome = loader.load_file(profiled, trace, replace=True)
        con.close()
    sums: dict[str, dict[str, float]] = collections.defaultdict(lambda: collections.defaultdict(float))
    counts: dict[str, int] = collections.Counter()
    for query, times in profiled.profiles:
        for stage in (stage_of(query), "the whole load"):
            counts[stage] += 1
            for key, seconds in times.items():
                sums[stage][key] += seconds
    keys = ("binding", "optimizing", "physical planning", "whole statement")
    print(f"{outcome.name}: {outcome.events} events; {len(profiled.profiles)} statements, DuckDB's profile")
    print(f"{'stage':48s} {'statements':>10s} " + " ".join(f"{k:>17s}" for k in keys))
    for stage in [s for s, _ in STAGES] + [OTHER, "the whole load"]:
        if counts[stage]:
            print(f"{stage[:48]:48s} {counts[stage]:10d} " + " ".join(f"{sums[stage][k]:15.3f} s" for k in keys))


# The stages of a load, each told by a piece of its statements' text (the first that matches).
STAGES = [
    ("read the event texts", ("INTO _raw",)),
    ("type the events", ("TEMP TABLE _bulk", "_flagged", "INSERT INTO _staging_events", "_raw_parts")),
    ("split into the event tables", ("INSERT INTO _typed", "INSERT INTO kernels", "INSERT INTO memory_ops",
                                     "INSERT INTO runtime_calls", "INSERT INTO cpu_ops",
                                     "INSERT INTO python_functions", "INSERT INTO annotations",
                                     "INSERT INTO flows", "INSERT INTO instants", "INSERT INTO counters",
                                     "INSERT INTO metadata_events", "INSERT INTO other_events",
                                     "INSERT INTO rejected_events")),
    ("launches and Python stacks", ("TEMP TABLE kernel_launches", "_derive_leaves AS", "_derive_chain_frames AS",
                                    "_derive_keys AS", "_derive_stack_ids AS", "INSERT INTO python_stacks",
                                    "_derive_stacks AS")),
    ("operations, calls (kernel_facts, first stage)", ("INSERT INTO temp.kernel_facts",)),
    ("phases, layers, order", ("REPLACE (p.phase", "REPLACE (l.forward_pass", "_derive_facts AS",
                               "INSERT INTO kernel_facts BY NAME")),
    ("commit", ("COMMIT",)),
]

OTHER = "everything else (small statements, settings, metadata)"  # the statements of no stage above


def stage_of(query: str) -> str:
    body = "\n".join(line for line in query.splitlines() if not line.strip().startswith("--"))
    for stage, pieces in STAGES:
        if any(piece in body for piece in pieces):
            return stage
    return OTHER


def label(query: str) -> str:
    lines = [ln.strip() for ln in query.splitlines() if ln.strip() and not ln.strip().startswith("--")]
    return " ".join(" ".join(lines[:2]).split())[:110]


def load_once(trace: str, path: str | None):
    """(outcome, seconds to open, to load, to close, the timed connection) of one load."""
    with tempfile.TemporaryDirectory(prefix="tracedb-profile-") as tmp:
        path = path or str(Path(tmp) / "t.duckdb")
        start = time.perf_counter()
        con = db.open_db(path)
        opened = time.perf_counter() - start
        timed = TimedConnection(con)
        start = time.perf_counter()
        try:
            outcome = loader.load_file(timed, trace, replace=True)
        except Exception as exc:
            raise SystemExit(f"{exc}\nthe statement that failed: {label(timed.last)}") from None
        total = time.perf_counter() - start
        start = time.perf_counter()
        con.close()
        closed = time.perf_counter() - start
    return outcome, opened, total, closed, timed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace")
    ap.add_argument("--db")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--stages", action="store_true", help="sum the statements by stage")
    ap.add_argument("--runs", type=int, default=1, help="loads to take the median of (--stages)")
    ap.add_argument("--planning", action="store_true", help="DuckDB's planning time by stage (its profiler)")
    a = ap.parse_args()
    if a.planning:
        planning(a.trace)
        return
    if a.stages:
        runs = []
        for _ in range(max(1, a.runs)):
            outcome, _, total, closed, timed = load_once(a.trace, a.db)
            stages = collections.defaultdict(float)
            for query, seconds in timed.times.items():
                stages[stage_of(query)] += seconds
            stages["Python (outside SQL)"] = total - sum(timed.times.values())
            stages["closing the database (its checkpoint)"] = closed
            stages["the load and the close, in-process"] = total + closed
            runs.append(stages)
        print(f"{outcome.name}: {outcome.events} events; medians of {len(runs)} loads")
        for stage in [s for s, _ in STAGES] + [OTHER,
                                               "Python (outside SQL)", "closing the database (its checkpoint)",
                                               "the load and the close, in-process"]:
            print(f"{statistics.median(r.get(stage, 0.0) for r in runs):8.3f} s  {stage}")
        return
    outcome, opened, total, closed, timed = load_once(a.trace, a.db)
    in_sql = sum(timed.times.values())
    print(f"{outcome.name}: {outcome.events} events; open {opened:.3f} s, load {total:.3f} s "
          f"(SQL {in_sql:.3f} s in {sum(timed.calls.values())} statements), close {closed:.3f} s")
    for query, seconds in sorted(timed.times.items(), key=lambda kv: -kv[1])[:a.top]:
        print(f"{seconds:8.3f} s  x{timed.calls[query]:<3} {label(query)}")


if __name__ == "__main__":
    main()
