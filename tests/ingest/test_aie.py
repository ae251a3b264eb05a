"""mlir-aie (AMD AIE) traces: ingest, robust kernel pairing, LOCK_STALL iterations, rates, reports.

The real fixtures check the ingest and the seed's rules on real data; traces built here plant
duplicates, outliers, boundaries, a missing iteration and an unclosed stall where the right
iteration table is known exactly; random traces check the views against a plain statement of the
seed's rules (tests/aie_reference.py).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

import aie_reference as ref
from conftest import FIXTURES, load, run_cli
from tracedb.db import open_db

AIE = FIXTURES / "aie"
CURRENT = AIE / "mlir-aie_parse-trace_test1.json"
LEGACY = AIE / "mlir-aie_cascade_plainx1_legacy-names.json"
SEED_CORE_KEYS = ["pid", "tile_name", "median_kernel_duration_cycles", "lock_stall_boundary_count",
                  "detected_total_iterations", "expected_total_iterations", "mismatch_note", "iterations",
                  "performance_window"]
SEED_ITERATION_KEYS = {"num_kernels", "avg_duration_cycles", "min_duration_cycles", "max_duration_cycles",
                       "total_span_cycles", "first_start", "last_end", "gmacs_per_second", "iteration_index", "phase"}
SEED_AGGREGATE_KEYS = ["iterations_considered", "count", "average", "best", "worst", "per_iteration", "note"]


# --- building traces -------------------------------------------------------------------------

class Tile:
    """Events of one traced tile, written the way mlir-aie's parser writes them."""

    SLOTS = ["INSTR_EVENT_0", "INSTR_EVENT_1", "INSTR_VECTOR", "PORT_RUNNING_0", "PORT_RUNNING_1",
             "INSTR_LOCK_ACQUIRE_REQ", "INSTR_LOCK_RELEASE_REQ", "LOCK_STALL"]

    def __init__(self, process_name: str):
        self.process_name = process_name
        self.events: list[tuple[str, str, int]] = []  # (name, ph, ts)

    def kernel(self, start: int, end: int) -> "Tile":
        self.events += [("INSTR_EVENT_0", "B", start), ("INSTR_EVENT_0", "E", start + 1),
                        ("INSTR_EVENT_1", "B", end - 1), ("INSTR_EVENT_1", "E", end)]
        return self

    def mark(self, name: str, ph: str, ts: int) -> "Tile":
        self.events.append((name, ph, ts))
        return self

    def stall(self, begin: int, end: int | None) -> "Tile":
        self.events.append(("LOCK_STALL", "B", begin))
        if end is not None:
            self.events.append(("LOCK_STALL", "E", end))
        return self


def write_aie(path: Path, tiles: list[Tile]) -> Path:
    out = []
    for pid, tile in enumerate(tiles):
        out.append({"name": "process_name", "ph": "M", "pid": pid, "args": {"name": tile.process_name}})
        out += [{"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": slot}}
                for tid, slot in enumerate(Tile.SLOTS)]
    for pid, tile in enumerate(tiles):
        for name, ph, ts in sorted(tile.events, key=lambda e: e[2]):
            tid = Tile.SLOTS.index(name) if name in Tile.SLOTS else 0
            out.append({"name": name, "ts": ts, "ph": ph, "pid": pid, "tid": tid, "args": {}})
    path.write_text(json.dumps(out))
    return path


def planted(tmp_path: Path) -> Path:
    """Two cores. Iteration k starts at 10000 (k + 1); kernels every 150 cycles.
    Core tile2,0: kernels of 100 cycles, 3 iterations; a stall before the first kernel (a
    boundary opening no kernel), a duplicate start 5 cycles after one, a 1000-cycle outlier, and
    short stalls that are no boundaries.
    Core tile3,0: kernels of 120 cycles, only 2 iterations, and a stall never closed."""
    a, b = Tile("core_trace for tile2,0"), Tile("core_trace for tile3,0")
    a.stall(0, 9990)
    for k in range(3):
        base = 10000 * (k + 1)
        for j in range(4):
            a.kernel(base + 150 * j, base + 150 * j + 100)
        a.stall(base + 110, base + 140)
        if k < 2:
            a.stall(base + 600, base + 10000 - 10)
    a.mark("INSTR_EVENT_0", "B", 20005)
    a.kernel(30600, 31600)
    for k in range(2):
        base = 10000 * (k + 1)
        for j in range(4):
            b.kernel(base + 150 * j, base + 150 * j + 120)
        b.stall(base + 600, base + 10000 - 10 if k == 0 else None)
    mem = Tile("memtile_trace for tile1,0").mark("PORT_RUNNING_0", "B", 100).mark("PORT_RUNNING_0", "E", 200)
    return write_aie(tmp_path / "planted.json", [a, b, mem])


@pytest.fixture(scope="module")
def aie_db(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("aie")
    path = tmp / "aie.duckdb"
    with open_db(path) as c:
        load(c, CURRENT)
        load(c, LEGACY)
        load(c, planted(tmp), meta={"M": "256", "K": "256", "N": "256", "rows": "1", "cols": "2",
                                    "warmup": "1", "iterations": "2"})
    return path


@pytest.fixture
def aie(aie_db):
    c = open_db(aie_db, read_only=True)
    yield c
    c.close()


def rows(con, sql, *params):
    return con.execute(sql, list(params)).fetchall()


# --- ingest ----------------------------------------------------------------------------------

def test_format_detected_and_tiles(aie):
    assert rows(aie, "SELECT name, format, platform FROM traces ORDER BY trace_id") == [
        ("mlir-aie_parse-trace_test1", "mlir-aie", "AIE"),
        ("mlir-aie_cascade_plainx1_legacy-names", "mlir-aie", "AIE"),
        ("planted", "mlir-aie", "AIE")]
    assert rows(aie, "SELECT trace_id, pid, trace_kind, tile_name, tile_row, tile_col, slots FROM aie_tiles "
                     "ORDER BY trace_id, pid") == [
        (1, "0", "core", "tile2,1", 2, 1, 8),
        (2, "0", "core", "tile2,1", 2, 1, 8), (2, "1", "memtile", "tile1,1", 1, 1, 8),
        (3, "0", "core", "tile2,0", 2, 0, 8), (3, "1", "core", "tile3,0", 3, 0, 8),
        (3, "2", "memtile", "tile1,0", 1, 0, 8)]


def test_every_event_kept_in_cycles(aie):
    data = json.loads(CURRENT.read_text())
    be = [(i, e["name"], e["ph"], e["ts"]) for i, e in enumerate(data) if e["ph"] in ("B", "E")]
    assert rows(aie, "SELECT event_id, raw_name, ph, ts_cycles FROM aie_events WHERE trace_id = 1 "
                     "ORDER BY event_id") == be
    assert rows(aie, "SELECT count(*) FROM metadata_events WHERE trace_id = 1")[0][0] == len(data) - len(be)


def test_legacy_names_map_to_one_vocabulary(aie):
    got = dict(rows(aie, "SELECT DISTINCT raw_name, name FROM aie_events WHERE trace_id = 2"))
    assert got == {"Event0": "INSTR_EVENT_0", "Event1": "INSTR_EVENT_1", "LockStall": "LOCK_STALL",
                   "PortRunning0": "PORT_RUNNING_0", "PortRunning1": "PORT_RUNNING_1",
                   "LockAcquireInstr": "INSTR_LOCK_ACQUIRE_REQ", "LockReleaseInstr": "INSTR_LOCK_RELEASE_REQ",
                   "True": "TRUE"}
    assert rows(aie, "SELECT aie_event_name('S2mm0StartTask'), aie_event_name('Mm2s1FinishedTask'), "
                     "aie_event_name('MemoryStall'), aie_event_name('PORT_RUNNING_3')")[0] == (
        "DMA_S2MM_0_START_TASK", "DMA_MM2S_1_FINISHED_TASK", "MEMORY_STALL", "PORT_RUNNING_3")


def test_spans_pair_and_flag_unclosed(aie):
    # test1: 19 LOCK_STALL begins, 18 ends; the last begin is never closed.
    assert rows(aie, "SELECT status, count(*) FROM aie_spans WHERE trace_id = 1 AND name = 'LOCK_STALL' "
                     "GROUP BY ALL ORDER BY 1") == [("closed", 18), ("unclosed", 1)]
    assert rows(aie, "SELECT start_cycles, end_cycles, dur_cycles FROM aie_spans WHERE trace_id = 1 "
                     "AND name = 'LOCK_STALL' AND status = 'closed' ORDER BY start_cycles LIMIT 2") == [
        (1, 2065, 2064), (2078, 2170, 92)]
    # the legacy trace's "True" slot begins once and never ends
    assert rows(aie, "SELECT name, status, start_cycles FROM aie_spans WHERE trace_id = 2 AND status <> 'closed'") \
        == [("TRUE", "unclosed", 1)]
    assert rows(aie, "SELECT status FROM aie_spans WHERE trace_id = 3 AND pid = '1' AND name = 'LOCK_STALL' "
                     "ORDER BY start_cycles") == [("closed",), ("unclosed",)]


def test_unopened_end_and_tile_spellings(tmp_path, con):
    t = Tile("core_trace for tile(0,2)").mark("PORT_RUNNING_0", "E", 5).mark("PORT_RUNNING_0", "B", 10) \
        .mark("PORT_RUNNING_0", "E", 10).mark("PORT_RUNNING_0", "E", 12)
    shim = Tile("intfc_trace for tile0,0").mark("PORT_RUNNING_1", "B", 3).mark("PORT_RUNNING_1", "E", 4)
    mem = Tile("mem_trace for column 3, row 4")
    load(con, write_aie(tmp_path / "spell.json", [t, shim, mem]))
    assert rows(con, "SELECT trace_kind, tile_row, tile_col FROM aie_tiles ORDER BY pid") == [
        ("core", 2, 0), ("shim", 0, 0), ("mem", 4, 3)]
    # an end at the begin's own cycle does not close it (the seed's rule): the one at 12 does
    assert rows(con, "SELECT status, start_cycles, end_cycles FROM aie_spans WHERE pid = '0' "
                     "ORDER BY coalesce(start_cycles, end_cycles), end_cycles") == [
        ("unopened", None, 5), ("unopened", None, 10), ("closed", 10, 12)]


def test_fractional_cycle_set_aside(tmp_path, con):
    t = Tile("core_trace for tile2,0").kernel(100, 200)
    path = write_aie(tmp_path / "frac.json", [t])
    data = json.loads(path.read_text())
    data[-1]["ts"] = 200.5
    path.write_text(json.dumps(data))
    outcome = load(con, path)
    assert outcome.rejected == 1
    assert rows(con, "SELECT reason FROM rejected_events") == [("AIE event time is not a whole number of cycles",)]
    assert json.loads(rows(con, "SELECT raw FROM rejected_events")[0][0])["ts"] == 200.5
    assert rows(con, "SELECT count(*) FROM aie_events WHERE ts_cycles = 200")[0][0] == 0


def test_kineto_traces_stay_kineto(con):
    from conftest import KINETO
    load(con, KINETO[0])
    assert rows(con, "SELECT format FROM traces") == [("kineto",)]
    assert rows(con, "SELECT count(*) FROM aie_tiles")[0][0] == 0


# --- pairing and iterations --------------------------------------------------------------------

def test_current_fixture_kernels_and_iterations(aie):
    assert rows(aie, "SELECT start_cycles, end_cycles FROM aie_kernels WHERE trace_id = 1 ORDER BY 1") == [
        (2203, 2276), (2714, 2787), (5192, 5265), (5703, 5776)]
    # median 73: boundaries are the stalls of at least 1460 cycles, ending at 2065 (before the
    # first kernel: opens no iteration) and 5173
    assert rows(aie, "SELECT end_cycles FROM aie_lock_stalls WHERE trace_id = 1 AND is_boundary ORDER BY 1") == [
        (2065,), (5173,)]
    assert rows(aie, "SELECT iteration_index, num_kernels, avg_duration_cycles, min_duration_cycles, "
                     "max_duration_cycles, total_span_cycles, first_start, last_end FROM aie_iterations "
                     "WHERE trace_id = 1 ORDER BY 1") == [
        (0, 2, 73.0, 73, 73, 584, 2203, 2787), (1, 2, 73.0, 73, 73, 584, 5192, 5776)]
    assert rows(aie, "SELECT kernels, boundaries, seed_iterations, iterations FROM aie_cores WHERE trace_id = 1") \
        == [(4, 2, 3, 2)]


def test_legacy_fixture_drops_the_outlier(aie):
    # 33 Event0/Event1 pairs: the first (2233 -> 9436, 7203 cycles) is over 3 x the 541 median
    got = rows(aie, "SELECT count(*), min(start_cycles), min(dur_cycles), max(dur_cycles) FROM aie_kernels "
                    "WHERE trace_id = 2")
    assert got == [(32, 9476, 541, 541)]
    assert rows(aie, "SELECT iterations, boundaries FROM aie_cores WHERE trace_id = 2") == [(1, 0)]


def test_planted_iteration_table(aie):
    got = rows(aie, "SELECT tile_name, iteration_index, phase, num_kernels, avg_duration_cycles, "
                    "min_duration_cycles, max_duration_cycles, total_span_cycles, first_start, last_end "
                    "FROM aie_core_iterations(want_trace := 'planted') ORDER BY pid, iteration_index")
    assert got == [
        ("tile2,0", 0, "warmup", 4, 100.0, 100, 100, 550, 10000, 10550),
        ("tile2,0", 1, "perf", 4, 100.0, 100, 100, 550, 20000, 20550),
        ("tile2,0", 2, "perf", 4, 100.0, 100, 100, 550, 30000, 30550),
        ("tile3,0", 0, "warmup", 4, 120.0, 120, 120, 570, 10000, 10570),
        ("tile3,0", 1, "perf", 4, 120.0, 120, 120, 570, 20000, 20570)]
    assert rows(aie, "SELECT tile_name, kernels, median_kernel_cycles, boundaries, seed_iterations, iterations "
                     "FROM aie_cores WHERE trace_id = 3 ORDER BY pid") == [
        ("tile2,0", 12, 100.0, 3, 4, 3), ("tile3,0", 8, 120.0, 1, 2, 2)]


def test_planted_rates_and_notes(aie):
    per_core = 256 ** 3 / 2
    got = rows(aie, "SELECT tile_name, iteration_index, gmacs_per_second, utilisation_pct "
                    "FROM aie_core_iterations(want_trace := 'planted') WHERE iteration_index = 1 ORDER BY pid")
    assert got == [("tile2,0", 1, pytest.approx(per_core * 1.25 / 550), pytest.approx(100 * per_core / (550 * 64))),
                   ("tile3,0", 1, pytest.approx(per_core * 1.25 / 570), pytest.approx(100 * per_core / (570 * 64)))]
    notes = rows(aie, "SELECT tile_name, detected_total_iterations, expected_total_iterations, mismatch_note, "
                      "performance_window FROM aie_core_summary(want_trace := 'planted') ORDER BY pid")
    assert notes == [("tile2,0", 3, 3, None, [1, 2]),
                     ("tile3,0", 2, 3, "Detected 2 iterations but expected 3. Proceeding with available iterations.",
                      [1])]
    # the system: iteration 1 is the only perf iteration both cores have; the slower core sets it
    system = rows(aie, "SELECT iterations_considered, count, best.runtime_cycles, best.gmacs_per_second, note "
                       "FROM aie_system_summary(want_trace := 'planted')")
    assert system == [([1], 1, 570, pytest.approx(256 ** 3 * 1.25 / 570),
                       "Only iterations present on all cores are considered.")]
    # report parameters override the stored ones; too many iterations expected truncates the note
    over = rows(aie, "SELECT mismatch_note FROM aie_core_summary(want_trace := 'planted', want_warmup := 0, "
                     "want_iterations := 1) ORDER BY pid")
    assert over[0][0] == "Detected 3 iterations but expected 1. Truncating to first 1 iterations for phase labeling."
    assert rows(aie, "SELECT note, count FROM aie_system_summary(want_trace := 'planted', want_warmup := 2)") == [
        ("No common perf iterations across all cores.", 0)]


def test_best_and_worst_iterations(tmp_path, con):
    tile = Tile("core_trace for tile2,0")
    for k, dur in enumerate([100, 90, 110, 90]):
        base = 10000 * (k + 1)
        for j in range(3):
            tile.kernel(base + 200 * j, base + 200 * j + dur)
        tile.stall(base + 700, base + 9990)
    load(con, write_aie(tmp_path / "bw.json", [tile]), meta={"M": "64", "K": "64", "N": "64"})
    best, worst, runtimes = rows(con, "SELECT best.iteration_index, worst.iteration_index, "
                                      "list_transform(per_iteration, lambda p: p.runtime_cycles) "
                                      "FROM aie_system_summary()")[0]
    assert runtimes == [500, 490, 510, 490]
    assert (best, worst) == (1, 2)  # the first of the two fastest


@pytest.mark.parametrize("seed", range(6))
def test_views_follow_the_seed_rules_on_random_cores(tmp_path, con, seed):
    rnd = random.Random(seed)
    tiles, expected = [], []
    for core in range(8):
        tile = Tile(f"core_trace for tile{2 + core % 4},{core // 4}")
        dur = rnd.randint(40, 400)
        t = rnd.randint(0, 50)
        starts, ends, sb, se = [], [], [], []
        for _ in range(rnd.randint(0, 40)):
            d = dur + rnd.randint(-dur // 10, dur // 10)
            if rnd.random() < 0.08:
                d = dur * rnd.choice([5, 6]) if rnd.random() < 0.5 else max(2, dur // 5)  # outlier
            starts.append(t)
            ends.append(t + d)
            if rnd.random() < 0.15:  # duplicate marks within a quarter of the duration
                starts.append(t + rnd.randint(0, dur // 5))
            if rnd.random() < 0.1:
                ends.append(t + d + rnd.randint(1, dur // 5))
            if rnd.random() < 0.05:
                ends.append(t + d)  # an end at the same cycle twice
            if rnd.random() < 0.08:  # a burst of starts closer than the gap to each other, but not to the first
                starts += [t + k * rnd.randint(dur // 10, dur // 5) for k in range(1, rnd.randint(3, 6))]
            # the next kernel starts at the cycle this one ends, now and then
            t += d + (0 if rnd.random() < 0.1 else rnd.randint(1, dur))
            if rnd.random() < 0.2:  # a stall: long ones end iterations
                length = rnd.choice([rnd.randint(1, 3 * dur), rnd.randint(20 * dur, 40 * dur)])
                sb.append(t)
                se.append(t + length)
                t += length + rnd.randint(1, 20)
        if rnd.random() < 0.3:
            sb.append(t + 5)  # never closed
        for s in starts:
            tile.mark("INSTR_EVENT_0", "B", s)
        for e in ends:
            tile.mark("INSTR_EVENT_1", "E", e)
        for s in sb:
            tile.mark("LOCK_STALL", "B", s)
        for e in se:
            tile.mark("LOCK_STALL", "E", e)
        tiles.append(tile)
        pairs = ref.robust_pairs(starts, ends)
        its = [it for it in ref.iterations(pairs, sb, se) if it]  # empty iterations are not counted
        expected.append((pairs, [(it[0][0], it[-1][1], len(it)) for it in its]))
    load(con, write_aie(tmp_path / f"random{seed}.json", tiles))
    for pid, (pairs, its) in enumerate(expected):
        got = rows(con, "SELECT start_cycles, end_cycles FROM aie_kernels WHERE pid = ? ORDER BY 1", str(pid))
        assert got == pairs, f"core {pid}"
        got_its = rows(con, "SELECT first_start, last_end, num_kernels FROM aie_iterations WHERE pid = ? "
                            "ORDER BY iteration_index", str(pid))
        assert got_its == its, f"core {pid}"


# --- parameters, reports, CLI --------------------------------------------------------------------

def test_params_from_path_and_meta(tmp_path):
    run = tmp_path / "npu2-gemm_512_256_128-2_row_4_col" / "traces"
    run.mkdir(parents=True)
    trace = run / "trace_mm_512_256_128.json"
    trace.write_text(CURRENT.read_text())
    db = tmp_path / "p.duckdb"
    run_cli("load", trace, "--meta", "warmup=1", "--meta", "N=64", db=db, check=True)
    with open_db(db, read_only=True) as c:
        assert sorted(rows(c, "SELECT key, value, source FROM trace_params")) == [
            ("K", "256", "path"), ("M", "512", "path"), ("N", "64", "meta"), ("cols", "4", "path"),
            ("hwid", "npu2", "path"), ("rows", "2", "path"), ("warmup", "1", "meta")]
        assert rows(c, "SELECT gemm_m, gemm_k, gemm_n, cores, warmup, macs_per_core FROM aie_run()") == [
            (512, 256, 64, 8, 1, 512 * 256 * 64 / 8)]
    for bad, message in [("M=big", "M must be an integer"), ("novalue", "expected KEY=VALUE"),
                         ("warmup=-1", "warmup must not be negative")]:
        proc = run_cli("load", CURRENT, "--meta", bad, db=tmp_path / "bad.duckdb")
        assert proc.returncode == 1 and message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("name", ["aie-iterations", "aie-summary"])
def test_report_headers_document_every_column(aie, name):
    from tracedb import reports
    report = reports.get(name)
    results = reports.run(aie, report, reports.bind(report, {"trace": "planted"}))
    assert len(results) == len(report.sections)
    for section, columns, got in results:
        assert got, f"{name} · {section.name} has rows"
        assert columns == list(section.columns), f"{name} · {section.name}: header documents every column, in order"


def test_report_json_has_the_seed_fields(aie_db):
    out = json.loads(run_cli("report", "aie-iterations", "-t", "planted", "--section", "cores", "-f", "json",
                             db=aie_db, check=True).stdout)
    assert set(SEED_CORE_KEYS) <= set(out[0])
    assert set(out[0]["iterations"][0]) == SEED_ITERATION_KEYS
    assert out[1]["mismatch_note"].startswith("Detected 2 iterations but expected 3")
    agg = json.loads(run_cli("report", "aie-summary", "-t", "planted", "--section", "main", "-f", "json",
                             db=aie_db, check=True).stdout)
    assert set(SEED_AGGREGATE_KEYS) <= set(agg[0])
    assert set(agg[0]["average"]) == {"runtime_cycles", "gmacs_per_second"}
    assert agg[0]["best"] == {"iteration_index": 1, "runtime_cycles": 570,
                              "gmacs_per_second": pytest.approx(256 ** 3 * 1.25 / 570)}


def test_report_markdown_is_the_details_table(aie_db):
    out = run_cli("report", "aie-iterations", "-t", "planted", "--section", "main", "-f", "markdown",
                  db=aie_db, check=True).stdout
    lines = [line for line in out.splitlines() if line.startswith("| tile")]
    assert lines and lines[0].startswith("| tile_name | iteration_index | phase | num_kernels | avg_duration_cycles")
    assert "| tile3,0 | 1 | perf | 4 | 120 | 120 | 120 | 570 |" in out


def test_report_params_override_and_errors(aie_db):
    out = json.loads(run_cli("report", "aie-summary", "-t", "planted", "-p", "clock_ghz=1.0", "-p", "warmup=0",
                             "--section", "per_iteration", "-f", "json", db=aie_db, check=True).stdout)
    assert [r["iteration_index"] for r in out] == [0, 1]
    assert out[1]["gmacs_per_second"] == pytest.approx(256 ** 3 * 1.0 / 570)
    for args, message in [(("-p", "bogus=1"), "report aie-summary has no parameter bogus; its parameters: --trace (default all), M (default none)"),
                          (("-p", "M"), "expected KEY=VALUE"), (("-p", "trace=x"), "use --trace instead")]:
        proc = run_cli("report", "aie-summary", *args, db=aie_db)
        assert proc.returncode == 1 and message in proc.stderr and "Traceback" not in proc.stderr
    table = run_cli("report", "aie-summary", db=aie_db, check=True).stdout
    assert "aie-summary — planted" in table and "per_iteration" in table


def test_truncated_aie_trace_keeps_its_complete_events(tmp_path, con):
    text = CURRENT.read_text()
    cut = text[: text.index('{"name": "INSTR_EVENT_0", "ts": 5192')] + '{"name": "INSTR_EV'
    path = tmp_path / "cut.json"
    path.write_text(cut)
    outcome = load(con, path)
    assert not outcome.complete and outcome.platform == "AIE"
    assert rows(con, "SELECT count(*) FROM aie_tiles")[0][0] == 1
    # every B/E event before the break is there, and the kernels they hold
    complete = sum(1 for e in json.loads(cut[: cut.rindex(",")] + "]") if e["ph"] in ("B", "E"))
    assert rows(con, "SELECT count(*) FROM aie_events")[0][0] == complete
    assert rows(con, "SELECT start_cycles, end_cycles FROM aie_kernels ORDER BY 1") == [(2203, 2276), (2714, 2787)]


def test_bad_aie_load_leaves_the_database_unchanged(tmp_path):
    from conftest import table_counts
    db = tmp_path / "keep.duckdb"
    run_cli("load", CURRENT, db=db, check=True)
    with open_db(db, read_only=True) as c:
        before = table_counts(c)
    broken = tmp_path / "broken.json"
    broken.write_text('[{"name": "process_name", "ph": "M", "pid": 0, "args": {"name": "core_trace for tile2,1"}}, 7')
    for args in (("load", LEGACY, "--meta", "M=big"), ("load", tmp_path / "missing.json"),
                 ("load", tmp_path)):
        proc = run_cli(*args, db=db)
        assert proc.returncode == 1 and len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    with open_db(db, read_only=True) as c:
        assert table_counts(c) == before
    # an entry that is not an event is set aside; the rest of the file loads
    run_cli("load", broken, db=db, check=True)
    with open_db(db, read_only=True) as c:
        assert rows(c, "SELECT t.format, t.rejected_count FROM traces t WHERE name = 'broken'") == [("mlir-aie", 1)]
