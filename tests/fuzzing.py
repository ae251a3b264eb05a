"""Mutation fuzzing of the readers (Chrome JSON, Ascend CSV, op-mapping YAML), shared by the suite's
bounded fuzz test (tests/ingest/test_fuzz.py) and the long run (bench/fuzz.py).

A mutant is a seed file with a few hostile edits: bytes flipped, inserted (NUL, newline, quotes,
brackets, NaN, lone surrogate escapes, huge exponents, invalid UTF-8), deleted, duplicated, or the
file cut short. Each is loaded into one database, and the invariants checked:

- the load succeeds, or fails with a TracedbError (the CLI prints it as one line, exit 1); any
  other exception is a finding (it would be a traceback);
- a failed load leaves the database with exactly the traces committed before it;
- a loaded trace accounts for every event it counts: its rows in the event tables plus its
  rejected events equal its event count (events after a truncation point are not counted: the
  trace is then marked incomplete).
"""

from __future__ import annotations

import gzip
import json
import random
import traceback
from dataclasses import dataclass
from pathlib import Path

import duckdb

from tracedb.errors import TracedbError
from tracedb.ingest.loader import load_file

HOSTILE = [b"\x00", b"\n", b"\r", b'"', b"\\", b"{", b"}", b"[", b"]", b",", b":", b"NaN", b"-Infinity",
           b"\\ud800", b"\\udc00\\ud800", b"1e999999999", b"1e400000", b"-0", b"\xff", b"\xc3", b"\xed\xa0\x80",
           b"null", b'"ts": null', b"99999999999999999999999", b"\t", b";", b"\xef\xbb\xbf"]


@dataclass
class Finding:
    seed: str
    mutant: bytes
    problem: str


def seeds(fixtures: Path) -> dict[str, tuple[bytes, str]]:
    """name -> (bytes, file suffix): small real files of each format, and a compact Kineto trace."""
    out = {}
    kineto = sorted((fixtures / "kineto").glob("*.json.gz"))
    small = min(kineto, key=lambda p: p.stat().st_size)
    text = gzip.decompress(small.read_bytes())
    out["kineto pretty"] = (text, ".json")
    doc = json.loads(text)
    out["kineto compact"] = (json.dumps(doc, separators=(",", ":")).encode(), ".json")
    aie = sorted((fixtures / "aie").glob("*.json"))
    if aie:
        out["mlir-aie"] = (aie[0].read_bytes()[:6000].rsplit(b"},", 1)[0] + b"}]", ".json")
    csv = sorted((fixtures / "ascend").glob("*.csv"))
    if csv:
        lines = csv[0].read_bytes().splitlines(keepends=True)
        out["ascend csv"] = (b"".join(lines[:12]), ".csv")
    out["op mapping"] = (b"operator_mappings:\n  aten.add.Tensor: {kernel_type: Add}\n"
                         b"  aten.mm.default:\n    kernel_type: MatMulV2\n", ".yaml")
    return out


def mutate(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        if not out:
            break
        at = rng.randrange(len(out))
        kind = rng.random()
        if kind < 0.35:
            out[at:at] = rng.choice(HOSTILE)
        elif kind < 0.55:
            out[at] = rng.randrange(256)
        elif kind < 0.7:
            del out[at:at + rng.randint(1, 40)]
        elif kind < 0.8:
            out[at:at] = out[at:at + rng.randint(1, 200)]
        elif kind < 0.9:
            del out[at:]
        else:  # a hostile value where a number stands
            digit = out.find(b": ", at)
            if digit >= 0:
                out[digit + 2:digit + 2] = rng.choice([b"NaN, ", b"1e999999999, ", b'"\\ud800", ', b"null, "])
    return bytes(out)


def check_one(con: duckdb.DuckDBPyConnection, path: Path, name: str) -> str | None:
    """Load path under name; the broken invariant, or None."""
    before = con.execute("SELECT count(*) FROM traces").fetchone()[0]
    try:
        out = load_file(con, path, name=name)
    except TracedbError as exc:
        if "\n" in str(exc):
            return f"error of more than one line: {str(exc)[:300]!r}"
        after = con.execute("SELECT count(*) FROM traces").fetchone()[0]
        return None if after == before else f"failed load changed the traces: {before} -> {after}"
    except Exception:  # a traceback for the user
        return traceback.format_exc(limit=-8)
    if out.status == "skipped":
        return None
    fmt = con.execute("SELECT format FROM traces WHERE trace_id = ?", [out.trace_id]).fetchone()[0]
    if fmt in ("op-mapping",):
        return None
    rows = con.execute("SELECT count(*) FROM all_events WHERE trace_id = ?", [out.trace_id]).fetchone()[0]
    rejected = con.execute("SELECT count(*) FROM rejected_events WHERE trace_id = ?", [out.trace_id]).fetchone()[0]
    if fmt not in ("ascend-csv",) and rows + rejected != out.events:
        return f"{rows} rows + {rejected} rejected != {out.events} events counted"
    return None


def run(fixtures: Path, scratch: Path, con: duckdb.DuckDBPyConnection, seed: int, mutants: int,
        deadline: float | None = None) -> tuple[int, list[Finding]]:
    """Load `mutants` mutants (or until the time.monotonic() deadline); (how many ran, findings)."""
    import time

    rng = random.Random(seed)
    pool = seeds(fixtures)
    names = sorted(pool)
    findings = []
    ran = 0
    for i in range(mutants):
        if deadline is not None and time.monotonic() > deadline:
            break
        which = names[i % len(names)]
        data, suffix = pool[which]
        mutant = mutate(data, rng)
        if rng.random() < 0.15:
            mutant = gzip.compress(mutant)
            mutant = mutant[:rng.randrange(len(mutant) + 1)] if rng.random() < 0.5 else mutant
        path = scratch / f"mutant{suffix}"
        path.write_bytes(mutant)
        problem = check_one(con, path, f"m{i}")
        ran += 1
        if problem:
            findings.append(Finding(which, mutant, problem))
    return ran, findings
