"""Device events of every accelerator Kineto records, not only CUDA/HIP kernels: an MTIA-like trace
(mtia_runtime calls, mtia_ccp_events on the device, ac2g flows) and Intel XPU runtime calls."""

from __future__ import annotations

from conftest import load
from tracedb.testing import CPU, flow_finish, flow_start, metadata_event, write_trace, x_event

DEVICE = {"pid": 1, "tid": 3}


def mtia_trace(path):
    """Three operators, each launching one device event through an mtia_runtime call (the same
    correlation, an ac2g flow from the call to the event), on an MTIA device."""
    events = [metadata_event("process_name", "python3", CPU["pid"]), metadata_event("process_name", "MTIA 0", 1)]
    for i in range(3):
        t, corr = 100 * i, 500 + i
        events.append(x_event("cpu_op", "aten::mm", t, 20, **{"External id": 10 + i}))
        events.append(x_event("mtia_runtime", "mtiaLaunchKernel", t + 2, 5, **{"External id": 10 + i,
                                                                              "correlation": corr}))
        events.append(x_event("mtia_ccp_events", f"gemm_fp16_{i}", t + 30, 40, DEVICE,
                              **{"External id": 10 + i, "correlation": corr}))
        events.append(flow_start("ac2g", corr, t + 2))
        events.append(flow_finish("ac2g", corr, t + 30, DEVICE))
    return write_trace(path, events, deviceProperties=[{"id": 0, "name": "MTIA v2"}])


def test_an_mtia_trace_has_kernels(con, tmp_path):
    trace = load(con, mtia_trace(tmp_path / "mtia.json"))
    assert con.execute("SELECT platform, device_name FROM traces WHERE trace_id = ?",
                       [trace.trace_id]).fetchone() == ("MTIA", "MTIA v2")
    kernels = con.execute("SELECT k.name, k.dur_ns, l.launch_name, l.cpu_op FROM kernels k "
                          "JOIN kernel_launches l USING (trace_id, kernel_id) WHERE trace_id = ? ORDER BY k.ts_ns",
                          [trace.trace_id]).fetchall()
    assert kernels == [(f"gemm_fp16_{i}", 40_000, "mtiaLaunchKernel", "aten::mm") for i in range(3)]
    # the category is kept: every event reads back as the trace wrote it
    cats = con.execute("SELECT cat, count(*) FROM all_events WHERE trace_id = ? AND table_name IN "
                       "('kernels', 'runtime_calls') GROUP BY cat ORDER BY cat", [trace.trace_id]).fetchall()
    assert cats == [("mtia_ccp_events", 3), ("mtia_runtime", 3)]
    assert con.execute("SELECT count(*) FROM other_events WHERE trace_id = ?", [trace.trace_id]).fetchone()[0] == 0
    timeline = con.execute("SELECT busy_ns, compute_ns FROM gpu_timeline WHERE trace_id = ? AND step IS NULL",
                           [trace.trace_id]).fetchone()
    assert timeline == (120_000, 120_000)


def test_runtime_calls_of_every_kineto_device_are_runtime_calls(con, tmp_path):
    cats = ["cuda_runtime", "cuda_driver", "mtia_runtime", "xpu_runtime", "xpu_driver", "privateuse1_runtime",
            "privateuse1_driver", "glow_runtime"]
    events = [x_event(cat, f"call_{cat}", 10 * i, 5, correlation=i) for i, cat in enumerate(cats)]
    trace = load(con, write_trace(tmp_path / "calls.json", events))
    got = con.execute("SELECT cat FROM runtime_calls WHERE trace_id = ? ORDER BY ts_ns", [trace.trace_id]).fetchall()
    assert [c for (c,) in got] == cats
