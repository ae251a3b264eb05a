"""The floor of a Chrome-trace load: what any loader built on DuckDB's JSON reader must spend.

    python bench/floor.py FILE [--threads N]     # prints one JSON line: cut_s, read_s, events

Two steps, timed apart, in one process:

1. cut: the file decompressed and its event list cut into the loader's own segment files (the
   feeder of tracedb.ingest.bulk: arrays of whole events of about 16 MiB);
2. typed read: DuckDB's read_json over every segment at once, on every core, each event's
   columns typed in the same pass (ph, cat, name, bp, s as text; pid, tid, id as JSON; ts and dur
   as DECIMAL(38,9), which keeps the number's text exact; args as JSON), into a table.

The loader reads, types, splits and derives; the README's profile says what it spends above this.
(The floor an earlier version measured, the whole file parsed as one JSON value on one thread and
then unnested, is an order of magnitude slower than this and bounded nothing.)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tracedb.ingest.bulk import _Feeder  # noqa: E402
from tracedb.ingest.source import TraceStream  # noqa: E402
from tracedb.sqlfiles import literal  # noqa: E402

COLUMNS = ("{ph: 'VARCHAR', cat: 'VARCHAR', name: 'VARCHAR', pid: 'JSON', tid: 'JSON', id: 'JSON', "
           "ts: 'DECIMAL(38,9)', dur: 'DECIMAL(38,9)', bp: 'VARCHAR', s: 'VARCHAR', args: 'JSON'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="tracedb-floor-") as tmp:
        start = time.perf_counter()
        with TraceStream(Path(a.trace)) as stream:
            feeder = _Feeder(stream, Path(tmp), None)
            feeder.start()
            segments = []
            while (segment := feeder.segments.get()) is not None:
                # the feeder writes the next segment under the same name once this one is taken
                kept = segment.with_name(f"floor-{len(segments)}.json")
                segment.rename(kept)
                segments.append(kept)
            feeder.join()
        cut = time.perf_counter() - start
        if feeder.problem:
            raise SystemExit(f"{a.trace}: not a well-formed trace: {feeder.problem}")
        con = duckdb.connect()
        con.execute(f"SET threads = {a.threads}")
        start = time.perf_counter()
        files = "[" + ", ".join(literal(str(s)) for s in segments) + "]"
        con.execute(f"CREATE TABLE events AS SELECT * FROM read_json({files}, format = 'array', "
                    f"columns = {COLUMNS})")
        read = time.perf_counter() - start
        events = con.execute("SELECT count(*) FROM events").fetchone()[0]
    print(json.dumps({"cut_s": cut, "read_s": read, "events": events}))


if __name__ == "__main__":
    main()
