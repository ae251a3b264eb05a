"""bench/profile_load.py: its profiled connection passes every result through, so a load under
DuckDB's profiler stores what a plain load stores, and each statement's planning is a part of it."""

from __future__ import annotations

import sys

from conftest import KINETO, ROOT
from tracedb.db import open_db
from tracedb.ingest.loader import load_file

sys.path.insert(0, str(ROOT / "bench"))
import profile_load  # noqa: E402

TABLES = ("kernels", "cpu_ops", "runtime_calls", "python_functions", "kernel_facts", "python_stacks")


def _counts(con) -> dict[str, int]:
    return {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}


def test_a_profiled_load_stores_what_a_plain_load_does(tmp_path):
    trace = next(p for p in KINETO if p.name == "h100_bert-small.json.gz")
    plain = open_db(str(tmp_path / "plain.duckdb"))
    timed = profile_load.TimedConnection(plain)
    load_file(timed, str(trace))
    profiled_con = open_db(str(tmp_path / "profiled.duckdb"))
    profiled = profile_load.ProfiledConnection(profiled_con, tmp_path)
    outcome = load_file(profiled, str(trace))

    assert outcome.events > 0
    assert _counts(profiled_con) == _counts(plain)
    assert _counts(plain)["kernel_facts"] > 0
    # every statement of the load was profiled, each once
    assert len(profiled.profiles) == sum(timed.calls.values())
    for query, times in profiled.profiles:
        planned = times["binding"] + times["optimizing"] + times["physical planning"]
        assert 0 <= planned <= times["whole statement"], query[:80]
    # the derivation's large statements are planned: binding them takes time
    derive = [t for q, t in profiled.profiles if profile_load.stage_of(q).startswith("phases")]
    assert derive and all(t["binding"] > 0 for t in derive)
    plain.close()
    profiled_con.close()
