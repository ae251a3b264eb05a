"""One accepted event never breaks a report: times beyond what 64-bit arithmetic on them allows
are set aside at the load, and arithmetic on recorded sizes cannot overflow. A trace holding the
extreme values sits beside a good one, and every report runs on both."""

from __future__ import annotations

import json

import pytest

import tracedb
from conftest import KINETO, run_cli
from builders import ALL_REDUCE, Built, comms_args, stream

GOOD = KINETO[3]  # h100_bert-small
US = 1000


def _extreme_sizes(path):
    """A good step, then a collective of 2^62 elements and a GEMM of 2^40 in every dimension."""
    b = Built()
    b.x("user_annotation", "ProfilerStep#1", 0, 10_000)
    b.x("cpu_op", "record_param_comms", 100, 5, **comms_args(1, 0, 4, **{"In msg nelems": 2**62,
                                                                         "Out msg nelems": 2**62}))
    b.on(ALL_REDUCE, 101, 1000, 10, stream(9), ext=1)
    b.x("cpu_op", "aten::mm", 200, 50, **{"External id": 2, "Input Dims": [[2**40, 2**40], [2**40, 2**40]],
                                          "Input type": ["c10::BFloat16", "c10::BFloat16"]})
    b.on("nvjet_tst_128x64_64x4_1x2_h_bz_TNT", 201, 2000, 100, stream(7), ext=2)
    b.x("cpu_op", "aten::mm", 300, 50, **{"External id": 3, "Input Dims": [[64, 64], [64, 64]],
                                          "Input type": ["c10::BFloat16", "c10::BFloat16"]})
    b.on("nvjet_tst_128x64_64x4_1x2_h_bz_TNT", 301, 3000, 10, stream(7), ext=3)
    # serving ops of 2^62 heads, channels, experts and tokens, in a step whose sums are near 2^63
    big, bf16 = 2**62, "c10::BFloat16"
    serving = [("vllm::unified_attention_with_output", [[1, big, big], [1, big, big], [1, big, big], [1, big, big]]),
               ("aiter::rmsnorm", [[2, big], [2, big], [big], []]),
               ("aten::native_layer_norm", [[2, big], [], [big], [big], []]),
               ("vllm::rocm_aiter_fused_moe", [[big, big], [big, 2 * big, big], [big, big, big], [big, big]]),
               ("sgl_kernel::rotary_embedding", [[big], [big, big], [big, big], [], [big, 2], []])]
    for ext, (name, dims) in enumerate(serving, start=4):
        b.x("cpu_op", name, 100 * ext, 50, **{"External id": ext, "Input Dims": dims, "Input type": [bf16] * len(dims)})
        b.on(f"serving_kernel_{ext}", 100 * ext + 1, 1000 * ext, 10, stream(7), ext=ext)
    b.x("user_annotation", f"execute_9_context_1(sq{big}sk{big}sqsq{big}sqsk{big})_generation_1(sq{big}sk{2**63 - 1}"
        f"sqsq{big}sqsk{2**63 - 1})", 350, 1000)
    return b.write(path)


def _extreme_times(path):
    """Events whose start or end leaves the times 64-bit arithmetic on them allows, beside good ones."""
    kernel = {"ph": "X", "cat": "kernel", "pid": 0, "tid": 7, "args": {"device": 0, "stream": 7}}
    events = [{**kernel, "name": "good", "ts": 1000, "dur": 5},
              {**kernel, "name": "end beyond int64", "ts": 9.2e15, "dur": 1e14},
              {**kernel, "name": "end beyond", "ts": 4.6e15, "dur": 2e13},
              {**kernel, "name": "start beyond", "ts": "4700000000000000", "dur": 1},
              {**kernel, "name": "far back", "ts": -4.7e15, "dur": 1},
              {**kernel, "name": "late but fine", "ts": 4.6e15, "dur": 1},
              # the first and the last times kept: 10 µs inside -2^62 ns and 10 µs inside 2^62 ns
              {**kernel, "name": "earliest kept", "ts": -(2**62) / 1000 + 10, "dur": 5},
              {**kernel, "name": "latest kept", "ts": 2**62 / 1000 - 10, "dur": 5}]
    path.write_text(json.dumps({"traceEvents": events}))
    return path


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    """The good trace and the two extreme ones in one database (reports only read it)."""
    tmp = tmp_path_factory.mktemp("overflow")
    db = tmp / "t.duckdb"
    run_cli("load", GOOD, _extreme_times(tmp / "times.json"), _extreme_sizes(tmp / "sizes.json"),
            "--jobs", "1", db=db, check=True)
    return db


def test_times_beyond_the_range_are_set_aside(db):
    with tracedb.connect(db) as con:
        rows = con.sql("SELECT r.event_id, r.reason FROM rejected_events r JOIN traces t USING (trace_id) "
                       "WHERE t.name = 'times' ORDER BY r.event_id").rows
        kept = con.sql("SELECT k.name FROM kernels k JOIN traces t USING (trace_id) WHERE t.name = 'times' "
                       "ORDER BY k.ts_ns").rows
    beyond = "is beyond the times tracedb keeps (±2^62 ns, 146 years either side of 1970)"
    assert rows == [(1, f"ts 9200000000000000.0 µs {beyond}"),
                    (2, f"end ts + dur (4600000000000000.0 + 20000000000000.0 µs) {beyond}"),
                    (3, f"ts 4700000000000000 µs {beyond}"),
                    (4, f"ts -4700000000000000.0 µs {beyond}")]
    assert kept == [("earliest kept",), ("good",), ("late but fine",), ("latest kept",)]


def test_the_streaming_reader_sets_the_same_events_aside(tmp_path, monkeypatch):
    from tracedb.ingest import readers

    monkeypatch.setattr(readers, "read_raw", lambda *a, **k: (_ for _ in ()).throw(readers.NotBulk("forced")))
    db = tmp_path / "s.duckdb"
    run_cli("load", _extreme_times(tmp_path / "times.json"), db=db, check=True)
    with tracedb.connect(db) as con:
        assert [r[0] for r in con.sql("SELECT event_id FROM rejected_events ORDER BY 1").rows] == [1, 2, 3, 4]


# Every report on Kineto traces, by the reports' headers: those of one trace (or every trace), and
# the comparisons, of the good trace with an extreme one and of an extreme one alone where the
# header allows it.
KINETO_REPORTS = {n: r for n, r in tracedb.reports_available().items()
                  if r.rows_for != "mlir-aie traces" and "forward_passes" not in r.params}
ONE = sorted(n for n, r in KINETO_REPORTS.items() if not r.compares and "traces" not in r.params)
TWO = sorted(n for n, r in KINETO_REPORTS.items() if r.compares or "traces" in r.params)


@pytest.mark.parametrize("trace", ["h100_bert-small", "times", "sizes", None])
def test_every_report_runs_on_every_trace(db, trace):
    for report in ONE + [n for n in TWO if KINETO_REPORTS[n].alone and trace is not None]:
        run = run_cli("report", report, *(["--trace", trace] if trace else []), "--format", "json", db=db)
        assert run.returncode == 0, (report, run.stderr)
        json.loads(run.stdout)


@pytest.mark.parametrize("extreme", ["times", "sizes"])
def test_every_comparison_with_the_extreme_trace_runs(db, extreme):
    for report in TWO:
        run = run_cli("report", report, "--trace", "h100_bert-small", "--vs", extreme, "--format", "json", db=db)
        assert run.returncode == 0, (report, run.stderr)
        json.loads(run.stdout)


def test_sizes_beyond_64_bits_are_kept_exact_or_null(db):
    with tracedb.connect(db) as con:
        calls = con.sql("SELECT c.bytes FROM collective_calls c JOIN traces t USING (trace_id) "
                        "WHERE t.name = 'sizes'").rows
        work = con.sql("SELECT w.shape, w.flops, w.bytes FROM op_work w JOIN traces t USING (trace_id) "
                       "WHERE t.name = 'sizes' ORDER BY w.event_id").rows
        serving = con.sql("SELECT w.cpu_op, w.flops, w.bytes, w.reason FROM op_work w JOIN traces t USING (trace_id) "
                          "WHERE t.name = 'sizes' AND w.family NOT IN ('gemm') ORDER BY w.event_id").rows
    assert calls == [(2**62 * 2,)]  # bf16: two bytes an element, beyond BIGINT, exact
    assert work[0][0] == f"{2**40}×{2**40}×{2**40}" and work[0][1:] == (None, None)
    assert work[1] == ("64×64×64", 2 * 64 ** 3, 3 * 64 * 64 * 2)
    # the serving ops' work, 2^63 and more, is not kept, and says so
    assert len(serving) == 5
    assert all(f is None and b is None and r == "FLOPs or bytes of 2^63 and more: not kept" for _, f, b, r in serving)
