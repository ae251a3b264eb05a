"""Timeline strips (tracedb.strips): per step, a lane per stream and a lane of idle gaps coloured
by cause; A above B on one time axis; the slowest and a typical step by default, any on request;
drawn in the HTML of the timeline, compare, gaps and why reports."""

from __future__ import annotations

import re

import pytest

import tracedb
from builders import gap_trace
from tracedb import strips, testing
from tracedb.testing import run_command


def rects(svg: str, cls: str) -> list[dict]:
    return [dict(re.findall(r'([\w-]+)="([^"]*)"', m)) for m in re.findall(rf'<rect class="{cls}" ([^>]*)>', svg)]


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "t.duckdb"
    with tracedb.connect(path, read_only=False) as d:
        d.load(gap_trace(tmp_path / "a.json"), name="a")
        d.load(gap_trace(tmp_path / "b.json", start=2_000_000.5), name="b")
    return path


def test_a_gap_is_drawn_at_its_place_and_width(db):
    with tracedb.connect(db) as d:
        svg = d.timeline_strips(["a"], step=2)
        k = d.sql("SELECT k.ts_ns, k.ts_ns + k.dur_ns FROM kernels k JOIN kernel_facts f USING (trace_id, kernel_id) "
                  "JOIN traces t USING (trace_id) WHERE t.name = 'a' AND f.iteration = 2 ORDER BY k.ts_ns").rows
    start, end = k[0][0], max(e for _, e in k)
    per_px = (end - start) / strips.WIDTH
    gap = rects(svg, "gap")
    assert len(gap) == 1
    # from the second kernel's end to the third's start: 301 µs, the host launching late in its frame
    assert float(gap[0]["x"]) == pytest.approx(strips.LABEL_W + (k[1][1] - start) / per_px, abs=0.01)
    assert float(gap[0]["width"]) == pytest.approx((k[2][0] - k[1][1]) / per_px, abs=0.01)
    assert gap[0]["data-cause"] == "host launched late" and gap[0]["fill"] == strips.CAUSES["host launched late"]
    assert "model.py(42): forward" in svg and "301.0 µs at stake" in svg
    assert len(rects(svg, "act")) == 3  # the step's three kernels, one lane


def test_a_is_drawn_above_b_and_the_default_steps_are_the_slowest_and_a_typical_one(db):
    with tracedb.connect(db) as d:
        svg = d.timeline_strips(["a", "b"])
    groups = re.findall(r'<g class="strip" data-trace="(\w+)" data-step="(\d*)">', svg)
    # step 2 holds the 301 µs gap: the slowest; step 1 the typical one
    assert groups == [("a", "2"), ("a", "1"), ("b", "2"), ("b", "1")]
    first_y = {}
    for trace, body in re.findall(r'<g class="strip" data-trace="(\w+)"[^>]*>(.*?)</g>', svg):
        first_y.setdefault(trace, float(re.search(r'<rect class="act" [^>]*y="([\d.]+)"', body).group(1)))
    assert first_y["a"] < first_y["b"]


def test_slowest_and_typical_of_many_steps(tmp_path):
    """Five steps of 1, 2, 3, 4 and 9 kernels: the slowest is the fifth, the typical the third."""
    b = testing.KinetoTrace("nvidia")
    t = 1000
    for step, n in enumerate((1, 2, 3, 4, 9), start=1):
        start = t
        for _ in range(n):
            b.kernel("gemm", t - 4, t, dur=20)
            t += 21
        b.x("user_annotation", f"ProfilerStep#{step}", start - 10, t - start + 20)
        t += 100
    path = tmp_path / "t.duckdb"
    with tracedb.connect(path, read_only=False) as d:
        d.load(b.write(tmp_path / "steps.json"), name="steps")
        svg = d.timeline_strips(["steps"])
    assert re.findall(r'data-step="(\d+)"', svg) == ["5", "3"]


@pytest.mark.parametrize("argv", [
    ["timeline", "--trace", "a", "-p", "step=2"],
    ["gaps", "--trace", "a", "-p", "min_gap_us=20"],
    ["compare", "--trace", "a", "--vs", "b"],
    ["why", "--trace", "a", "--vs", "b"],
])
def test_the_reports_html_draws_the_strips(db, argv):
    code, out, err = run_command(["report", *argv, "--db", str(db), "--format", "html"])
    assert code == 0, err
    assert '<svg class="strips"' in out and 'class="gap"' in out
    code, text, err = run_command(["report", *argv, "--db", str(db)])
    assert code == 0 and '<svg class="strips"' not in text


def test_a_notebook_draws_them_while_the_database_is_open(db):
    with tracedb.connect(db) as d:
        result = d.report("timeline", trace="a")
        assert '<svg class="strips"' in result._repr_html_()
    late = None
    with tracedb.connect(db) as d:
        late = d.report("timeline", trace="a")
    assert '<svg class="strips"' not in late.to_html()  # drawn on first rendering: the database closed before


def test_a_step_one_side_lacks_is_said_and_names_are_escaped(tmp_path):
    b = testing.KinetoTrace("nvidia")
    b.kernel('k<"&>', 996, 1000, dur=20)
    b.x("user_annotation", "ProfilerStep#1", 990, 40)
    path = tmp_path / "t.duckdb"
    with tracedb.connect(path, read_only=False) as d:
        d.load(b.write(tmp_path / "one.json"), name="one")
        d.load(gap_trace(tmp_path / "two.json"), name="two")
        html = d.timeline_strips(["one", "two"], step=2)
        assert "Not drawn: A: no device activity in step 2" in html
        assert re.findall(r'data-trace="(\w+)"', html) == ["two"]
        escaped = d.timeline_strips(["one"])
    assert "k&lt;&quot;&amp;&gt;" in escaped and 'k<"&>' not in escaped


def test_a_step_that_is_not_a_whole_number_is_one_line(db):
    code, _, err = run_command(["report", "timeline", "--trace", "a", "-p", "step=abc", "--db", str(db), "--format", "html"])
    assert code == 1 and "step is a whole number" in err and len(err.strip().splitlines()) == 1


def test_the_critical_path_is_a_line_above_the_lanes(tmp_path):
    """HTA's cuda_event_sync step: the path's line is drawn above the stream lanes, each stretch at
    its place, coloured by what bounds it; the stretches inside the strip add up to no more than
    the path's length (2,401 µs, HTA's figure), the host's and the kernels' among them."""
    from conftest import FIXTURES
    from tracedb import critical

    path = tmp_path / "c.duckdb"
    with tracedb.connect(path, read_only=False) as d:
        d.load(FIXTURES / "critical" / "cuda_event_sync.json.gz")
    with tracedb.connect(path, files=True) as d:
        (trace_id, step, lo, hi), = critical.windows(d.con, "cuda_event_sync")
        svg = d.timeline_strips(["cuda_event_sync"], step=step)
        graph = critical.build(d.con, trace_id, lo, hi)
        stretches = critical.stretches(graph, critical.longest_path(graph))
        first = d.sql(f"SELECT min(ts_ns), max(end_ns) FROM device_activity WHERE trace_id = {trace_id} "
                      f"AND step = {step}").rows[0]
    line = rects(svg, "path")
    assert line and "critical path 2.401 ms" in svg
    assert {r["data-bound"] for r in line} >= {"host", "compute"}
    assert all(r["fill"] == strips.BOUNDS[r["data-bound"]] for r in line)
    # above the lanes: the path's row comes before the first activity's
    assert max(float(r["y"]) for r in line) < min(float(r["y"]) for r in rects(svg, "act"))
    # each stretch inside the strip at its place: the first from its start (or the strip's)
    start, end = first
    per_px = (end - start) / strips.WIDTH
    inside = [(max(lo, start), min(hi, end)) for lo, hi, *_ in stretches if hi > start and lo < end]
    assert len(line) == len(inside)
    for r, (lo, _) in zip(line, inside):
        assert float(r["x"]) == pytest.approx(strips.LABEL_W + (lo - start) / per_px, abs=0.01)
    assert "path: host" in svg and "path: compute" in svg  # the legend
