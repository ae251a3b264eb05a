"""Real traces of everyday size (../shared/corpus, see its SOURCES.md): every event of every file is
loaded or set aside, through the bulk reader, and reports run on them. Skipped when the corpus is
absent (a clone without it); CI has it."""

from __future__ import annotations

import gzip

import orjson
import pytest

from conftest import CORPUS, load
from tracedb.ingest import readers

FILES = sorted(CORPUS.glob("*.json.gz"))
pytestmark = pytest.mark.skipif(not FILES, reason=f"no corpus at {CORPUS} (set TRACEDB_CORPUS)")


@pytest.mark.parametrize("path", FILES, ids=[p.name.removesuffix(".json.gz") for p in FILES])
def test_every_event_of_a_real_trace_is_loaded(con, path, monkeypatch):
    streamed = []
    real = readers._stream_events
    monkeypatch.setattr(readers, "_stream_events", lambda *a: streamed.append(1) or real(*a))
    events = orjson.loads(gzip.decompress(path.read_bytes()))
    events = events["traceEvents"] if isinstance(events, dict) else events
    out = load(con, path)
    assert not streamed, "the bulk reader gave the file to the streaming reader"
    assert (out.events, out.rejected, out.complete, out.problem) == (len(events), 0, True, None)
    stored = con.execute("SELECT count(*) FROM all_events").fetchone()[0]
    assert stored == len(events)
    kernels = sum(1 for e in events if isinstance(e, dict) and e.get("cat") == "kernel")
    assert con.execute("SELECT count(*) FROM kernels").fetchone()[0] == kernels > 0
    # every kernel has its derived facts, an operation among them
    assert con.execute("SELECT count(*), count(op) FROM selected_kernels(NULL, NULL)").fetchone() == (kernels, kernels)
