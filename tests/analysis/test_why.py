"""What to fix first (tracedb report why): the causes of a wall-clock gap ranked by the time at
stake, on two traces built here where each cause is planted with a known size, and on the
corpus's real pairs, where the findings must add up to the gap of the spans."""

from __future__ import annotations

import csv
import json
import re
import shlex
from pathlib import Path

import pytest

import tracedb
from conftest import run_cli
from builders import ALL_REDUCE, GEMM, NORM, Built, stream
from tracedb.reports import ALL_ROWS
from tracedb.testing import frame_event, runtime_call

US = 1000
FORWARD = "model/llama.py(374): forward"


def _fast(path) -> Path:
    """One step: a GEMM, an RMSNorm, four all-reduces of 10 µs and a second GEMM, back to back
    (100-390 µs): no idle time, span 290 µs."""
    b = Built()
    b.x("user_annotation", "ProfilerStep#1", 0, 20_000)
    b.events.append(frame_event("app.py(5): step", 1, 19_000, python_id=1, parent=None))
    b.on(GEMM, 10, 100, 100, stream(7))
    b.on(NORM, 20, 200, 50, stream(7))
    for i in range(4):
        b.on(ALL_REDUCE, 30 + i, 250 + 10 * i, 10, stream(7))
    b.on(GEMM, 40, 290, 100, stream(7))
    return b.write(path)


def _slow(path) -> Path:
    """The same step with every cause planted, each of a known size:
    - host-bound idle 5,060 µs: the GPU idles from 200 to 5,260 while the host sits in
      model/llama.py(374): forward (its own time: its one callee ran before the gap), which the
      fast trace never enters;
    - more calls: RMSNorm runs twice (two calls of 50 µs against one): 50 µs;
    - collective waiting 2,000 µs: one all-reduce of four takes 2,020 µs, the others 20;
    - collective transfer 40 µs: the all-reduces' median is 20 µs against 10;
    - synchronisation idle 310 µs: the host sits in cudaStreamSynchronize, then launches;
    - exposed memcpy 50 µs: a copy after the last kernel.
    Span 7,800 µs: 7,510 more than the fast trace's, the sum of the above."""
    b = Built()
    b.x("user_annotation", "ProfilerStep#1", 0, 20_000)
    b.events.append(frame_event("app.py(5): step", 1, 19_000, python_id=1, parent=None))
    b.events.append(frame_event(FORWARD, 150, 5_100, python_id=2, parent=1))
    b.events.append(frame_event("model/llama.py(20): helper", 160, 10, python_id=3, parent=2))
    b.on(GEMM, 10, 100, 100, stream(7))
    b.on(NORM, 5_250, 5_260, 50, stream(7))
    b.on(NORM, 5_253, 5_310, 50, stream(7))
    for i, (ts, dur) in enumerate([(5_360, 20), (5_380, 2_020), (7_400, 20), (7_420, 20)]):
        b.on(ALL_REDUCE, 5_256 + i, ts, dur, stream(7))
    b.events.append(runtime_call("cudaStreamSynchronize", 7_440, 300, 9_999))
    b.on(GEMM, 7_745, 7_750, 100, stream(7))
    b.on("Memcpy DtoH (Device -> Pinned)", 7_746, 7_850, 50, stream(7), cat="gpu_memcpy", launch="cudaMemcpyAsync")
    return b.write(path)


PLANTED = {  # kind, what -> at stake, µs
    ("host-bound idle", "model/llama.py: forward"): 5_060,
    ("collective waiting", "All-Reduce · NCCL/RCCL"): 2_000,
    ("synchronisation idle", "cudaStreamSynchronize"): 310,
    ("more kernels or calls", "RMSNorm"): 50,
    ("exposed memcpy", ""): 50,
    ("collective transfer", "All-Reduce · NCCL/RCCL"): 40,
}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("why")
    db = tmp / "why.duckdb"
    run_cli("load", _fast(tmp / "fast.json"), _slow(tmp / "slow.json"), "--jobs", "1", db=db, check=True)
    return db


def _findings(db, *args) -> list[dict]:
    run = run_cli("report", "why", *args, "--format", "json", db=db)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def _worth(row: dict) -> int:
    """What a finding is ranked by: what fixing it saves where the replay models it, else its time at stake."""
    return row["saves_ns"] if row["saves_ns"] is not None else row["at_stake_ns"]


def test_each_planted_cause_is_a_finding_with_its_exact_time(built):
    rows = _findings(built, "--trace", "fast", "--vs", "slow")
    found = {tuple(r["part"].split("|", 1)): r["at_stake_ns"] for r in rows if r["kind"] != "remainder"}
    assert found == {k: v * US for k, v in PLANTED.items()}
    assert [r["rank"] for r in rows] == list(range(1, len(rows) + 1))
    assert [_worth(r) for r in rows[:-1]] == sorted((_worth(r) for r in rows[:-1]), reverse=True)
    remainder = rows[-1]
    assert remainder["kind"] == "remainder" and remainder["at_stake_ns"] == 0
    assert sum(r["at_stake_ns"] for r in rows) == (7_800 - 290) * US
    assert {r["slower"] for r in rows} == {"slow"}
    assert all(r["per_step_ns"] == r["at_stake_ns"] for r in rows)  # one step each


def test_the_host_finding_names_the_frame_and_both_sides_time_in_it(built):
    first = _findings(built, "--trace", "fast", "--vs", "slow")[0]
    assert first["kind"] == "host-bound idle" and first["where"] == FORWARD
    assert (first["a_ns"], first["b_ns"]) == (None, 5_060 * US)
    assert "slow's GPU idles 5.06 ms (5.06 ms a step) in 1 gap(s) while its host runs " + FORWARD in first["finding"]
    assert "(5.05 ms of it the frame's own time)" in first["finding"]  # the host's part: 200 to 5,250 µs
    assert "Host time in this frame per step: slow 5.10 ms, fast 0 ns (never enters it)" in first["finding"]
    assert first["next"] == "tracedb report host-frames --trace fast --vs slow"
    assert first["hint"].startswith("The host is the bottleneck")


def test_the_waiting_finding_says_where_the_wait_sits(built):
    rows = {r["kind"]: r for r in _findings(built, "--trace", "fast", "--vs", "slow")}
    wait = rows["collective waiting"]
    assert wait["b_detail"] == ("4 calls, median 20 µs, 2.00 ms waiting (2.00 ms of it in 1 calls above 10x the "
                                "median, 1 of them the first or second collective of their step), sized by kernel shape")
    assert wait["finding"].endswith("; the long calls follow the host stall of finding 1")
    transfer = rows["collective transfer"]
    assert "transfers for 20 µs a call (median) on slow against 10 µs on fast" in transfer["finding"]


def test_the_order_of_the_traces_does_not_change_the_findings(built):
    ab = _findings(built, "--trace", "fast", "--vs", "slow")
    ba = _findings(built, "--trace", "slow", "--vs", "fast")
    assert [(r["part"], r["at_stake_ns"]) for r in ab] == [(r["part"], r["at_stake_ns"]) for r in ba]
    assert [(r["a_ns"], r["b_ns"]) for r in ab] == [(r["b_ns"], r["a_ns"]) for r in ba]


def test_one_trace_against_its_ideal(built):
    rows = _findings(built, "--trace", "slow")
    kinds = {(r["kind"], r["at_stake_ns"]) for r in rows}
    assert ("host-bound idle", 5_060 * US) in kinds and ("synchronisation idle", 310 * US) in kinds
    assert ("collective waiting", 2_000 * US) in kinds and ("exposed memcpy", 50 * US) in kinds
    assert sum(r["at_stake_ns"] for r in rows) == 7_800 * US  # the whole span, the remainder at the roofline


def test_host_frames_show_a_frame_one_side_never_enters(built):
    run = run_cli("report", "host-frames", "--trace", "fast", "--vs", "slow", "--format", "json", db=built)
    assert run.returncode == 0, run.stderr
    rows = {r["frame"]: r for r in json.loads(run.stdout)}
    forward = rows["model/llama.py: forward"]
    assert (forward["a_step_ns"], forward["b_step_ns"], forward["a_name"], forward["b_name"]) == (
        0, 5_100 * US, None, FORWARD)
    assert rows["app.py: step"]["a_step_ns"] == rows["app.py: step"]["b_step_ns"] == 19_000 * US


def test_two_functions_of_one_name_in_one_file_stay_apart(tmp_path):
    """LlamaForCausalLM.forward (line 100) calls LlamaModel.forward (line 300) of the same file: two
    frames, each with its own time, in host-frames, gaps and why alike; matched across traces by
    their order in the file (#1, #2), not by the line, which two builds number differently."""
    b = Built()
    b.x("user_annotation", "ProfilerStep#1", 0, 2_000)
    b.events.append(frame_event("model/llama.py(100): forward", 1, 1_900, python_id=1, parent=None))
    b.events.append(frame_event("model/llama.py(300): forward", 50, 1_000, python_id=2, parent=1))
    b.on(GEMM, 10, 20, 10, stream(7))
    b.on(GEMM, 1_040, 1_045, 10, stream(7))  # launched at the end of the inner forward: 1,015 µs idle
    db = tmp_path / "frames.duckdb"
    run_cli("load", b.write(tmp_path / "one.json"), db=db, check=True)
    rows = {r["frame"]: r for r in json.loads(run_cli("report", "host-frames", "--trace", "one", "--format", "json",
                                                      db=db, check=True).stdout)}
    assert rows["model/llama.py: forward #1"]["a_step_ns"] == 1_900 * US  # in the order of the file
    assert rows["model/llama.py: forward #2"]["a_step_ns"] == 1_000 * US
    assert rows["model/llama.py: forward #2"]["a_name"] == "model/llama.py(300): forward"
    gaps = json.loads(run_cli("report", "gaps", "--trace", "one", "-p", "min_gap_us=20", "--format", "json",
                              db=db, check=True).stdout)
    frames = {r["frame"] for r in (gaps["main"] if isinstance(gaps, dict) else gaps) if r.get("frame")}
    assert frames == {"model/llama.py(300): forward"}  # the inner one holds the host's time in the gap
    findings = _findings(db, "--trace", "one")
    assert "host-bound idle|model/llama.py: forward #2" in {r["part"] for r in findings}


def _serving(path, loop_calls: int) -> Path:
    """One step of a server: the host in serve.py(10): schedule between two GEMMs; with loop_calls,
    the scheduler first calls dict.__getitem__ that many times, 20 µs apart, while the GPU idles."""
    b = Built()
    b.x("user_annotation", "ProfilerStep#1", 0, 10_000)
    b.events.append(frame_event("serve.py(10): schedule", 100, 9_000, python_id=1, parent=None))
    for i in range(loop_calls):
        b.events.append(frame_event("<built-in method __getitem__ of dict object at 0x7f00>", 130 + 20 * i, 2,
                                    python_id=10 + i, parent=1))
    b.on(GEMM, 110, 120, 10, stream(7))
    end = 130 + 20 * loop_calls
    b.on(GEMM, end, end + 5, 10, stream(7))
    return b.write(path)


def test_a_host_loop_shows_as_calls_a_step_and_their_spacing(tmp_path):
    db = tmp_path / "loop.duckdb"
    run_cli("load", _serving(tmp_path / "quick.json", 0), _serving(tmp_path / "looping.json", 200), "--jobs", "1",
            db=db, check=True)
    first = _findings(db, "--trace", "quick", "--vs", "looping")[0]
    assert first["kind"] == "host-bound idle" and first["where"] == "serve.py(10): schedule"
    assert ("in it, 200 calls a step to <built-in method __getitem__ of dict object>, one every 20 µs (quick: none)"
            in first["finding"])


CUSTOM = "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*, vllm::RankSignals, int)"


def _all_reduces(path, library_kernel, library_us, custom_us, flavour="nvidia") -> Path:
    """One step of 10 all-reduces (vllm::all_reduce) run by the collective library's kernel and 40
    run by vLLM's custom kernel, back to back."""
    b = Built(flavour)
    b.x("user_annotation", "ProfilerStep#1", 0, 100_000)
    t = 100
    for n in range(50):
        name, dur = (library_kernel, library_us) if n < 10 else (CUSTOM, custom_us)
        b.x("cpu_op", "vllm::all_reduce", t - 5, 4, **{"External id": 500 + n})
        b.on(name, t - 4, t, dur, stream(7), ext=500 + n)
        t += dur
    return b.write(path)


def test_one_collective_run_by_two_kernels_is_two_findings(tmp_path):
    """The same all-reduce, run by NCCL (or RCCL) for large messages and by a custom kernel for small
    ones: each kernel's time is a finding of its own, named for that kernel, with its own per-call
    times, rather than one finding naming whichever kernel is most frequent."""
    db = tmp_path / "ar.duckdb"
    a = _all_reduces(tmp_path / "nccl.json", "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                     102, 4)
    b = _all_reduces(tmp_path / "rccl.json", "ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)", 263, 7,
                     flavour="amd")
    run_cli("load", a, b, "--jobs", "1", db=db, check=True)
    rows = {r["part"]: r for r in _findings(db, "--trace", "nccl", "--vs", "rccl", "--limit", "all")}
    library, custom = rows["collective transfer|All-Reduce · NCCL/RCCL"], \
        rows["collective transfer|All-Reduce · vllm::cross_device_reduce_1stage"]
    assert (library["a_ns"], library["b_ns"], custom["a_ns"], custom["b_ns"]) == (
        10 * 102 * US, 10 * 263 * US, 40 * 4 * US, 40 * 7 * US)
    assert library["at_stake_ns"] == 10 * (263 - 102) * US and custom["at_stake_ns"] == 40 * (7 - 4) * US
    assert "263 µs a call (median) on rccl against 102 µs on nccl" in library["finding"]
    assert "ncclDevKernel_Generic" in library["where"] and "cross_device_reduce_1stage" in custom["where"]


def _phases(path, prefill_us, decode_us, flavour="nvidia") -> Path:
    """A prefill step of four GEMMs, then a decode step of four, each step annotated as SGLang
    annotates its batches, the GEMMs back to back."""
    b = Built(flavour)
    t = 100
    for phase, us in (("PREFILL", prefill_us), ("DECODE", decode_us)):
        b.x("user_annotation", f"step[{phase} bs=4]", t - 50, 4 * us + 60)
        for _ in range(4):
            b.on(GEMM, t - 4, t, us, stream(7))
            t += us
        t += 100
    return b.write(path)


def test_an_operation_in_two_phases_is_a_finding_per_phase(tmp_path):
    """The GEMMs of prefill and of decode run different kernels at different speeds: one side
    slower in decode and faster in prefill is two findings, each with its phase's per-call times,
    rather than one that nets the two."""
    db = tmp_path / "ph.duckdb"
    run_cli("load", _phases(tmp_path / "a.json", 100, 10), _phases(tmp_path / "b.json", 80, 40, flavour="amd"),
            "--jobs", "1", db=db, check=True)
    rows = {r["part"]: r for r in _findings(db, "--trace", "a", "--vs", "b", "--limit", "all")}
    decode, prefill = rows["slower kernels|Dense GEMM · decode"], rows["slower kernels|Dense GEMM · prefill"]
    assert decode["slower"] == "b" and decode["at_stake_ns"] == 4 * (40 - 10) * US
    assert "takes 40 µs a call on b against 10 µs on a" in decode["finding"]
    assert prefill["kind"] == "faster kernels" and prefill["at_stake_ns"] == -4 * (100 - 80) * US
    assert "b is 80 µs faster here" in prefill["finding"]


def test_the_sql_macro_gives_the_report_s_rows(built):
    with tracedb.connect(built) as con:
        rows = con.sql("SELECT part, at_stake_ns FROM why_findings('fast', 'slow', NULL, 20, 12, NULL) ORDER BY rank").rows
    assert sum(r[1] for r in rows) == 7_510 * US and rows[0] == ("host-bound idle|model/llama.py: forward", 5_060 * US)


def test_a_hint_of_the_user_s_own_comes_first(built, tmp_path):
    db = tmp_path / "copy.duckdb"
    db.write_bytes(built.read_bytes())
    hints = tmp_path / "our_hints.csv"
    with open(hints, "w", newline="") as f:
        csv.writer(f).writerows([["priority", "kind", "hint"],
                                 [1, "host-bound idle", "Ours: run the scheduler in its own process."]])
    assert run_cli("rules", "add", hints, db=db).returncode == 0
    first = _findings(db, "--trace", "fast", "--vs", "slow")[0]
    assert first["hint"] == "Ours: run the scheduler in its own process."


def test_the_terminal_shows_each_finding_whole(built):
    run = run_cli("report", "why", "--trace", "fast", "--vs", "slow", db=built, env={"COLUMNS": "120"})
    assert run.returncode == 0, run.stderr
    assert all(len(line) <= 120 for line in run.stdout.splitlines())
    text = " ".join(run.stdout.split())
    assert "in 1 gap(s) while its host runs " + FORWARD in text
    assert "1. tracedb report host-frames --trace fast --vs slow" in run.stdout


PAIRS = [("h100_timesformer", "mi300_timesformer"), ("h100_falconsai-vit", "mi300_falconsai-vit")]


@pytest.mark.parametrize("a, b", PAIRS)
def test_real_pairs_add_up_and_each_next_command_runs(corpus_db, a, b):
    db = corpus_db
    with tracedb.connect(db) as con:
        wall = con.report("compare", trace=a, vs=b, section="wall-clock")["wall-clock"].records()
        span = {r["part"]: r for r in wall}["span"]
        # --limit 12, --limit all and the default (6), worked out in one run as the terminal's are
        by_limit = con.report_by_limit("why", [12, ALL_ROWS, 6], trace=a, vs=b)
    rows, every, shown = (by_limit[n].main.records() for n in (12, ALL_ROWS, 6))
    assert rows == _findings(db, "--trace", a, "--vs", b, "--limit", "12")  # as the command line gives them
    gap = abs(span["a_ns"] - span["b_ns"])
    assert sum(r["at_stake_ns"] for r in rows) == gap
    # the slower side's losses first, what fixing saves first (else the time at stake), then where it
    # is faster, largest first
    stakes = [r["at_stake_ns"] for r in rows[:-1]]
    losses, gains = [_worth(r) for r in rows[:-1] if r["at_stake_ns"] > 0], [x for x in stakes if x < 0]
    assert stakes == [x for x in stakes if x > 0] + gains
    assert losses == sorted(losses, reverse=True) and gains == sorted(gains)
    assert all(r["kind"].startswith(("faster", "fewer", "less", "more overlap"))
               for r in rows[:-1] if r["at_stake_ns"] < 0)
    assert all(r["finding"].endswith("faster here") for r in rows[:-1] if r["at_stake_ns"] < 0)
    remainder = rows[-1]
    assert remainder["kind"] == "remainder" and "% of the gap" in remainder["finding"]
    assert every[-1]["kind"] == "remainder" and every[-1]["at_stake_ns"] == 0 and len(every) > len(rows)

    def order(found: list[dict]) -> list[str]:
        """The parts in the order they are chosen: losses by what fixing saves (else the time at
        stake), then gains by size."""
        parts = [r for r in found[:-1] if r["at_stake_ns"] != 0]
        return [r["part"] for r in sorted(parts, key=lambda r: (r["at_stake_ns"] < 0, -_worth(r) if r["at_stake_ns"] > 0
                                                                 else r["at_stake_ns"], r["part"]))]

    # the parts listed are the first of every part in that order, whatever the limit
    chosen = order(every)
    assert sorted(r["part"] for r in rows[:-1]) == sorted(chosen[:len(rows) - 1])
    assert len(shown) == 7 and sorted(r["part"] for r in shown[:-1]) == sorted(chosen[:6])
    alone = _findings(db, "--trace", a)
    for command in {r["next"] for r in rows} | {r["next"] for r in alone}:
        argv = shlex.split(command)
        assert argv[:2] == ["tracedb", "report"]
        run = run_cli(*argv[1:], db=db)
        assert run.returncode == 0 and run.stdout.strip(), (command, run.stderr)


def test_a_phase_adds_up_to_its_steps_gap(tmp_path):
    """With --phase, the findings add up to the gap of the phase's spans (compare_wall per phase)."""
    from conftest import KINETO

    db = tmp_path / "decode.duckdb"
    a, b = "mi300_vllm_decode_hipgraph", "mi300x_sglang_qwen3-8b_decode"
    run_cli("load", *[p for p in KINETO if p.name.split(".")[0] in (a, b)], "--jobs", "1", db=db, check=True)
    rows = _findings(db, "--trace", a, "--vs", b, "--phase", "decode")
    with tracedb.connect(db) as con:
        (gap,) = con.sql(f"SELECT abs(a_ns - b_ns) FROM compare_wall('{a}', '{b}', 'decode') WHERE part = 'span'").rows[0]
    assert gap > 0 and sum(r["at_stake_ns"] for r in rows) == gap
    assert all(r["next"].endswith("--phase decode") for r in rows
               if r["kind"] not in ("more kernels or calls", "less overlap", "exposed memcpy", "fewer kernels or calls",
                                    "more overlap", "less exposed memcpy"))


@pytest.mark.parametrize("a, b", PAIRS)
def test_the_first_screen_holds_the_answer(corpus_db, a, b):
    """At 120 columns on a 40-row screen, why without options starts with its answer in one line,
    shows its first findings whole, and ends with each next command once: nothing it prints scrolls
    the answer away."""
    run = run_cli("report", "why", "--trace", a, "--vs", b, db=corpus_db, env={"COLUMNS": "120"})
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert len(lines) < 40 and all(len(line) <= 120 for line in lines)
    rows = _findings(corpus_db, "--trace", a, "--vs", b)
    slower = rows[0]["slower"]
    assert lines[0].startswith(f"{slower} is ") and " slower than " in lines[0]
    assert " ".join(run.stdout.split()).startswith(rows[0]["answer"])
    if rows[0]["saves_ns"] is not None and rows[0]["saves_ns"] <= 0:
        # no finding listed saves time when fixed alone: the answer says so rather than name one
        assert "no single part explains it" in rows[0]["answer"] and "first fix" not in rows[0]["answer"]
    else:
        assert "first fix: " + rows[0]["kind"] in rows[0]["answer"]
    shown = [line for line in lines if line.strip().startswith(("1 ", "1. ", "1, "))]
    assert shown, run.stdout  # finding 1 and its command are on the screen
    commands = [line.split(". ", 1)[1] for line in lines if ". tracedb report " in line]
    assert commands and len(commands) == len(set(commands))  # each next command once
    assert "tracedb report" in commands[0]


def test_a_narrow_screen_lists_fewer_findings_never_none(built):
    """The narrower the screen, the fewer findings fit: the command lists fewer, down to one, and
    the rest fold into the remainder (the findings still add up to the gap)."""
    whole = run_cli("report", "why", "--trace", "fast", "--vs", "slow", db=built, env={"COLUMNS": "120"})
    narrow = run_cli("report", "why", "--trace", "fast", "--vs", "slow", db=built, env={"COLUMNS": "100"})
    assert whole.returncode == 0 and narrow.returncode == 0
    assert narrow.stdout.startswith("slow is ") and whole.stdout.startswith("slow is ")
    listed = [line for line in narrow.stdout.splitlines() if ". tracedb report " in line]
    assert listed and listed[0].split(". ")[0].split(", ")[0].strip() == "1"  # finding 1 is always there
    def more(text: str) -> int:  # the parts the remainder holds
        found = re.search(r"(\d+) more part\(s\)", " ".join(text.split()))
        return int(found.group(1)) if found else 0

    assert more(narrow.stdout) > more(whole.stdout)


def test_the_html_page_puts_each_finding_before_its_evidence(built):
    page = run_cli("report", "why", "--trace", "fast", "--vs", "slow", "--format", "html", db=built, check=True).stdout
    head = re.search(r"<thead><tr>(.*?)</tr></thead>", page).group(1)
    columns = re.findall(r"<th>([^<]*)</th>", head)
    assert columns.index("finding") == 5 < columns.index("a_detail")  # rank, kind, at stake, saves, per step, finding
    assert "answer" not in columns and "first fix: host-bound idle" in page  # the answer above the table


def _gemm_then_norm(path, gemm_us, norm_launch_us, flavour="nvidia") -> Path:
    """One step: a GEMM launched at 1 µs, then an RMSNorm launched at norm_launch_us (queued behind
    the GEMM when launched early, held by the host when launched late)."""
    b = Built(flavour)
    b.x("user_annotation", "ProfilerStep#1", 0, 3_000)
    b.on(GEMM, 1, 5, gemm_us, stream(7))
    b.on(NORM, norm_launch_us, max(5 + gemm_us, norm_launch_us + 5), 10, stream(7))
    return b.write(path)


@pytest.mark.parametrize("held", [False, True])
def test_what_fixing_saves_is_checked_by_replay(tmp_path, held):
    """B's GEMM takes 300 µs against A's 100. Where the next kernel is queued behind it, B's step
    is 200 µs longer and a GEMM at A's speed saves all 200 (saves = at stake). Where B's host
    launches the next kernel later still (B's host is 200 µs slower there, the GEMM finishing long
    before), the GEMM's 200 µs are at stake but hidden: a faster GEMM saves nothing, and the finding
    says so."""
    launch = 1_000 if held else 2
    a = _gemm_then_norm(tmp_path / "a.json", 100, launch)
    b = _gemm_then_norm(tmp_path / "b.json", 300, launch + (200 if held else 0), flavour="amd")
    db = tmp_path / "s.duckdb"
    run_cli("load", a, b, "--jobs", "1", db=db, check=True)
    rows = {r["part"]: r for r in _findings(db, "--trace", "a", "--vs", "b", "--limit", "all")}
    gemm = rows["slower kernels|Dense GEMM"]
    assert gemm["at_stake_ns"] == 200 * US
    if held:
        # both sides idle 900 µs: bookkeeping puts the gap on the GEMM; the replay shows fixing it saves nothing
        assert gemm["saves_ns"] == 0 and "its time is hidden" in gemm["finding"]
        first = next(r for r in rows.values() if r["rank"] == 1)
        assert "no single part explains it" in first["answer"] and "first fix" not in first["answer"]
    else:
        assert gemm["saves_ns"] == 200 * US and "hidden" not in gemm["finding"]
        assert gemm["rank"] == 1


@pytest.mark.parametrize("a, b", PAIRS)
def test_every_part_at_once_predicts_the_faster_side_s_time(corpus_db, a, b):
    """The slower side's steps replayed with every part at the other side's times predict the
    other side's measured span within 10 % on the corpus's eager pairs, and the answer prints the
    prediction, the measure and the error."""
    from tracedb import savings

    with tracedb.connect(corpus_db) as db:
        savings.register(db.con, a, b, None)
        slow, predicted, other = db.con.execute("SELECT slow_ns, predicted_ns, other_ns FROM why_together").fetchone()
    assert slow > other and abs(predicted - other) / other < 0.10
    answer = _findings(corpus_db, "--trace", a, "--vs", b)[0]["answer"]
    assert f"measured there ({100 * (predicted - other) / other:+.1f} %; " in answer
