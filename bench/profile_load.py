"""Where a load's time goes, statement by statement, in one process.

    python bench/profile_load.py FILE [--db PATH] [--top 25]

Loads FILE with tracedb.ingest.loader.load_file into PATH (default: a new database in a temporary
folder), through a connection that times every SQL statement it runs, and prints the total, the
time spent in SQL and the slowest statements (their first line and the time of all the runs of
the same text). The time not in SQL is Python: the feeder, the events typed in Python, the
bookkeeping. Interpreter start-up and argument parsing are not in it (they are the whole
command's: `python -X importtime -m tracedb ...`).
"""

from __future__ import annotations

import argparse
import collections
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


def label(query: str) -> str:
    lines = [ln.strip() for ln in query.splitlines() if ln.strip() and not ln.strip().startswith("--")]
    return " ".join(" ".join(lines[:2]).split())[:110]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace")
    ap.add_argument("--db")
    ap.add_argument("--top", type=int, default=25)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="tracedb-profile-") as tmp:
        path = a.db or str(Path(tmp) / "t.duckdb")
        start = time.perf_counter()
        con = db.open_db(path)
        opened = time.perf_counter() - start
        timed = TimedConnection(con)
        start = time.perf_counter()
        try:
            outcome = loader.load_file(timed, a.trace, replace=True)
        except Exception as exc:
            raise SystemExit(f"{exc}\nthe statement that failed: {label(timed.last)}") from None
        total = time.perf_counter() - start
        start = time.perf_counter()
        con.close()
        closed = time.perf_counter() - start
    in_sql = sum(timed.times.values())
    print(f"{outcome.name}: {outcome.events} events; open {opened:.3f} s, load {total:.3f} s "
          f"(SQL {in_sql:.3f} s in {sum(timed.calls.values())} statements), close {closed:.3f} s")
    for query, seconds in sorted(timed.times.items(), key=lambda kv: -kv[1])[:a.top]:
        print(f"{seconds:8.3f} s  x{timed.calls[query]:<3} {label(query)}")


if __name__ == "__main__":
    main()
