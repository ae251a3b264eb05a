"""What a person reads: kernel names demangled and shortened, units said once, comparison reports
that fit 120 columns, and long results bounded in a terminal (whole in csv and json)."""

from __future__ import annotations

import csv
import io
import json

import pytest

from conftest import FIXTURES, database_of, run_cli
from tracedb import names, present

MANGLED = "_ZN4vllm18act_and_mul_kernelIN3c108BFloat16EXadL_ZNS_11silu_kernelIS2_EET_RKS4_EELb1EEEvPS4_PS5_i"


def test_an_itanium_name_is_demangled_by_the_cxx_runtime():
    assert names.demangle(MANGLED) == ("void vllm::act_and_mul_kernel<c10::BFloat16, &(c10::BFloat16 "
                                       "vllm::silu_kernel<c10::BFloat16>(c10::BFloat16 const&)), true>"
                                       "(c10::BFloat16*, c10::BFloat16 const*, int)")
    # names that are not mangled, and mangled-looking names that are not valid, stay as written
    for name in ("nvjet_tst_128x64_64x4_1x2_h_bz_TNT", "triton_poi_fused_mul_silu_1", "_Zfoo", "_ZQQ"):
        assert names.demangle(name) == name


@pytest.mark.parametrize("name, short", [
    (MANGLED, "vllm::act_and_mul_kernel<BFloat16, &silu_kernel…"),
    # CUPTI writes names demangled already: the same shortening makes both vendors read alike
    ("void vllm::act_and_mul_kernel<c10::BFloat16, &(c10::BFloat16 vllm::silu_kernel<c10::BFloat16>"
     "(c10::BFloat16 const&)), true>(c10::BFloat16*, c10::BFloat16 const*, int)",
     "vllm::act_and_mul_kernel<BFloat16, &silu_kernel…"),
    ("void at::native::(anonymous namespace)::cunn_SoftMaxForward<8, c10::BFloat16, float, c10::BFloat16, "
     "at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(c10::BFloat16*, c10::BFloat16 const*, int)",
     "at::native::cunn_SoftMaxForward<8, BFloat16, fl…"),
    ("void at::native::reduce_kernel<128, 4, at::native::ReduceOp<c10::BFloat16, at::native::MeanOps<float, "
     "float, float, float>, unsigned int, c10::BFloat16, 4> >(at::native::ReduceOp<c10::BFloat16, "
     "at::native::MeanOps<float, float, float, float>, unsigned int, c10::BFloat16, 4>)",
     "at::native::reduce_kernel<128, 4, ReduceOp<…> >"),
    ("nvjet_tst_128x64_64x4_1x2_h_bz_TNT", "nvjet_tst_128x64_64x4_1x2_h_bz_TNT"),
])
def test_a_kernel_name_is_shortened_to_what_tells_it_apart(name, short):
    assert names.short(name) == short
    assert len(names.short(name)) <= 48
    cut = short if len(short) <= 20 else short[:19] + "…" if "<" in short else short[:10] + "…" + short[-9:]
    assert names.short(name, 20) == cut


def test_a_name_that_tells_apart_at_its_end_is_cut_in_the_middle():
    tiles = [f"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize{t}_warpgroupsize1x1x1_execute_segment_k_off_kernel"
             for t in ("128x128x64", "128x256x64", "64x128x64")]
    cut = [names.short(name + f"__5x_{t}", 48) for name, t in zip(tiles, "abc")]
    assert len(set(cut)) == 3 and all(len(c) == 48 and "…" in c for c in cut)
    assert all(c.startswith("sm90_xmma_gemm_") for c in cut)


def test_a_name_the_runtime_cannot_read_is_read_by_llvm():
    """GCC 12's runtime and binutils 2.40 read no Tn (a template parameter declared with its type);
    LLVM's demangler (pycxxfilt) does."""
    pytest.importorskip("pycxxfilt", reason="LLVM's demangler needs Python 3.11")
    newer = "_ZN4vllm18act_and_mul_kernelIN3c108BFloat16ETnPFT_RKS3_EXadL_ZNS_11silu_kernelIS2_EES3_S5_EELb1EEEvPS3_PS4_i"
    assert names.demangle(newer).startswith("void vllm::act_and_mul_kernel<c10::BFloat16, &")
    assert names.short(newer).startswith("vllm::act_and_mul_kernel<BFloat16")


def test_a_table_says_each_unit_once_and_keeps_machine_formats_raw():
    columns = ["op", "kernel", "a_total_ns", "share_pct", "gap_ns"]
    rows = [("Dense GEMM", MANGLED, 68_780_000, 61.25, -26_920_000), ("Softmax", "softmax_warp", 2_500, 0.5, 1_000)]
    formats = {"kernel": "kernel"}
    out = io.StringIO()
    present.write(columns, rows, "table", out, formats=formats, totals=["a_total_ns"])
    text = out.getvalue()
    assert "a_total ms" in text and "share %" in text and "gap ms" in text
    assert "68.78" in text and "-26.92" in text and "<0.01" in text and "61.2" in text
    assert " ms " not in text.replace("a_total ms", "").replace("gap ms", "")  # cells carry no unit
    assert "vllm::act_and_mul_kernel<BFloat16, &silu_kernel" in text and MANGLED not in text
    out = io.StringIO()
    present.write(columns, rows, "csv", out, formats=formats)
    assert list(csv.reader(io.StringIO(out.getvalue())))[1] == ["Dense GEMM", MANGLED, "68780000", "61.25", "-26920000"]
    out = io.StringIO()
    present.write(columns, rows, "json", out, formats=formats)
    assert json.loads(out.getvalue())[0]["kernel"] == MANGLED


@pytest.fixture(scope="module")
def vendor_pairs(tmp_path_factory):
    """The real BERT pair (NVIDIA, AMD) and the real vLLM / SGLang decode traces (AMD names, some
    mangled), in one database."""
    return database_of(tmp_path_factory, "pairs", [FIXTURES / "kineto" / f"{n}.json.gz" for n in (
        "h100_bert-small", "mi300_bert-small", "mi300_vllm_decode_hipgraph", "mi300x_sglang_qwen3-8b_decode")])


PAIRS = [("h100_bert-small", "mi300_bert-small"), ("mi300_vllm_decode_hipgraph", "mi300x_sglang_qwen3-8b_decode")]


@pytest.mark.parametrize("report", ["compare", "alignment", "fusion", "same-kernels"])
@pytest.mark.parametrize("a, b", PAIRS)
def test_every_comparison_report_fits_120_columns(vendor_pairs, report, a, b):
    proc = run_cli("report", report, "--trace", a, "--vs", b, db=vendor_pairs, env={"COLUMNS": "120"}, check=True)
    too_wide = [line for line in proc.stdout.splitlines() if len(line.rstrip()) > 120]
    assert not too_wide, too_wide[:3]
    # and nothing is folded to fit: every table row is one line (rich never prints past the width,
    # it wraps cells instead, so the line count is what tells); but the why findings, whose
    # sentences fold whole, a row starting with its rank
    sections = run_cli("report", report, "--trace", a, "--vs", b, "--format", "json", db=vendor_pairs,
                       check=True).stdout
    parsed = json.loads(sections)
    why = parsed.pop("why", []) if isinstance(parsed, dict) else []
    tables = parsed.values() if isinstance(parsed, dict) else [parsed]
    rows = sum(min(len(t), 40) for t in tables)
    assert rows > 0
    bodies = _table_bodies(proc.stdout, apart=True)
    if why:  # the first table shown: a line per row, its rank first, and the lines its sentence folds into
        first = bodies.pop(0)
        assert [int(line[:8]) for line in first if line[:8].strip()] == [f["rank"] for f in why]
    body = [line for table in bodies for line in table]
    assert len(body) == rows, "\n".join(body[:12])


def _table_bodies(text: str, apart: bool = False) -> list:
    """The lines between each table's header rule and its closing rule (or the blank line that
    ends a table without totals): one per row when no cell wraps. apart: a list of lines per table."""
    tables, inside = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("━"):
            inside = not inside
            if inside:
                tables.append([])
        elif inside and not line.strip():
            inside = False
        elif inside:
            tables[-1].append(line)
    return tables if apart else [line for table in tables for line in table]


def test_wide_shows_the_columns_a_terminal_leaves_out(vendor_pairs):
    a, b = PAIRS[1]
    narrow = run_cli("report", "compare", "--trace", a, "--vs", b, db=vendor_pairs, env={"COLUMNS": "120"}, check=True)
    wide = run_cli("report", "compare", "--wide", "--trace", a, "--vs", b, db=vendor_pairs,
                   env={"COLUMNS": "250"}, check=True)
    for column in ("a_top_kernels", "b_cpu_op", "a_avg µs"):
        assert column not in narrow.stdout and column in wide.stdout
    csv_out = run_cli("report", "compare", "--trace", a, "--vs", b, "--format", "csv", db=vendor_pairs, check=True)
    header = csv_out.stdout.splitlines()[0].split(",")
    assert {"a_top_kernels", "b_cpu_op", "a_avg_ns"} <= set(header)


def test_a_long_result_is_bounded_in_a_terminal_and_whole_in_csv(vendor_pairs):
    a, b = PAIRS[1]
    table = run_cli("report", "alignment", "--section", "pairs", "--trace", a, "--vs", b, db=vendor_pairs,
                    env={"COLUMNS": "120"}, check=True).stdout
    rows = list(csv.DictReader(io.StringIO(run_cli("report", "alignment", "--section", "pairs", "--trace", a,
                                                   "--vs", b, "--format", "csv", db=vendor_pairs,
                                                   check=True).stdout)))
    assert len(rows) > 100
    assert f"{len(rows) - 40:,} more rows not shown" in table
    assert table.count("\n") < 60
    # the totals row sums every row, not only those shown
    wide = run_cli("report", "alignment", "--section", "pairs", "--wide", "--trace", a, "--vs", b, db=vendor_pairs,
                   env={"COLUMNS": "300"}, check=True).stdout
    total_line = next(line for line in wide.splitlines() if line.strip().startswith(f"total of {len(rows):,}"))
    assert f"{sum(int(r['a_kernels']) for r in rows):,}" in total_line
    # largest total gap first, in every format
    gaps = [abs(float(r["a_total_ns"] or 0) - float(r["b_total_ns"] or 0)) for r in rows]
    assert gaps == sorted(gaps, reverse=True)
    limited = run_cli("report", "alignment", "--section", "pairs", "--limit", "5", "--trace", a, "--vs", b,
                      db=vendor_pairs, env={"COLUMNS": "120"}, check=True).stdout
    assert "more rows not shown" not in limited


def _commands(command, path=()):
    """Every command of the command line, with its path of names (tracedb rules add: ('rules', 'add'))."""
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from _commands(sub, (*path, name))


def test_help_swallows_no_markup():
    """Square brackets in help ('tracedb[dask]', [NAME ...]) are shown as written, on every command."""
    import re

    from tracedb import cli

    checked = 0
    for path, command in _commands(cli.command()):
        texts = [command.help or ""] + [getattr(p, "help", None) or "" for p in command.params]
        brackets = [b for t in texts for b in re.findall(r"\[[^\]\s]*\]", t)]
        shown = " ".join(run_cli(*path, "--help", env={"COLUMNS": "120"}).stdout.split())
        for b in brackets:
            assert b in shown, (path, b)
            checked += 1
    assert checked >= 1  # at least --scheduler's 'tracedb[dask]'


def test_load_progress_counts_files_and_fits_one_line(tmp_path):
    """On a 120-column terminal: the files line counts files, and a file's line (a 200-character
    name, cut in the middle) stays one line."""
    from rich.console import Console

    from tracedb import cli

    long_name = tmp_path / ("h100_" + "x" * 190 + "_end.json")
    long_name.write_text("{}")
    progress = cli._LoadProgress(files=2)
    progress.console = Console(file=io.StringIO(), force_terminal=True, width=120, stderr=False)
    progress.shown = True
    with progress:
        progress.update(long_name, "read", 1, 0)
        plain = Console(file=io.StringIO(), width=120, color_system=None)  # the lines as a person reads them
        plain.print(progress.bar.make_tasks_table(progress.bar.tasks))
        drawn = plain.file.getvalue()
    lines = [line for line in drawn.splitlines() if line.strip()]
    files_line = next(line for line in lines if "files done" in line)
    assert "0/2 files" in files_line and "bytes" not in files_line
    file_line = next(line for line in lines if "reading" in line)
    assert "h100_x" in file_line and "x_end.json" in file_line and "…" in file_line
    assert len(lines) == 2 and all(len(line) <= 120 for line in lines)


UNIT_WORD = r"(ns|µs|ms|s|B|KiB|MiB|GiB|%)"
def _kineto_reports() -> list[str]:
    """Every report on Kineto traces (by their headers: not those of mlir-aie traces or TensorCast)."""
    from tracedb import reports

    return sorted(n for n, r in reports.available().items()
                  if r.rows_for != "mlir-aie traces" and "forward_passes" not in r.params)


KINETO_REPORTS = _kineto_reports()


def _shown_headers(report_name: str, section: str) -> list[str]:
    from tracedb import reports

    sec = next(s for s in reports.get(report_name).sections if s.name == section)
    return [c.name for c in sec.columns.values() if not c.wide and not c.json_only and not c.note and not c.lead]


@pytest.mark.parametrize("report", KINETO_REPORTS)
def test_every_report_reads_at_120_columns(vendor_pairs, report):
    """Every line within 120 characters, every header whole (or named as left out), and the A/B
    columns of one quantity in one unit."""
    import re

    from tracedb import reports

    a, b = PAIRS[0]
    args = ["--trace", a] + (["--vs", b] if reports.get(report).compares or report == "compare-many" else [])
    if report == "trend":
        args = ["--trace", "*bert*"]
    if report == "compare-pairs":
        args = ["--trace", "h100_*", "--vs", "mi300_*"]
    proc = run_cli("report", report, *args, db=vendor_pairs, env={"COLUMNS": "120"}, check=True)
    lines = proc.stdout.splitlines()
    assert not [line for line in lines if len(line.rstrip()) > 120], report
    data = json.loads(run_cli("report", report, *args, "--format", "json", db=vendor_pairs, check=True).stdout)
    sections = data if isinstance(data, dict) else {"main": data}
    for section, rows in sections.items():
        if not rows:
            continue
        for column in _shown_headers(report, section):
            if column == "trace" or column not in rows[0]:
                continue  # one table per trace, titled by it
            base = re.sub(r"_(ns|pct|bytes)$", "", column)
            shown = re.search(rf"(^|\s){re.escape(base)}( {UNIT_WORD})?(\s|$)", proc.stdout, re.M)
            left_out = re.search(rf"left out to fit 120 columns: [^(]*\b{re.escape(column)}\b", proc.stdout)
            assert shown or left_out, (report, section, column)
    for quantity in ("total", "avg", "ns"):
        units = {side: re.findall(rf"\b{side}_{quantity} {UNIT_WORD}", proc.stdout) for side in "ab"}
        for a_unit, b_unit in zip(units["a"], units["b"]):
            assert a_unit == b_unit, (report, quantity, units)


def test_ls_stacks_and_long_names_read_at_120_columns(tmp_path):
    """ls and stacks one line per row at 120 columns; kernel names of 200 characters that differ at
    their end stay told apart."""
    from tracedb.testing import KinetoTrace

    b = KinetoTrace()
    stem = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_" + "x" * 150
    for i, tile in enumerate(("tilesize128x128x64_kernel", "tilesize128x256x64_kernel", "tilesize64x64x64_kernel")):
        b.kernel(stem + tile, 10 * i, 100 + 10 * i)
    db = tmp_path / "t.duckdb"
    long_name = "a_trace_named_at_length_" + "y" * 60
    run_cli("load", b.write(tmp_path / "long.json"), "--name", long_name, db=db, check=True)
    run_cli("load", FIXTURES / "kineto" / "h100_bert-small.json.gz", db=db, check=True)
    kernels = run_cli("report", "kernels", "--trace", long_name, db=db, env={"COLUMNS": "120"}, check=True).stdout
    body = _table_bodies(kernels)
    assert len(body) == 3 and all(len(line.rstrip()) <= 120 for line in kernels.splitlines())
    names_shown = {line.split()[0] for line in body}
    assert len(names_shown) == 3 and all("…" in n for n in names_shown)
    for command in (["ls"], ["report", "stacks", "--trace", "h100_bert-small"]):
        out = run_cli(*command, db=db, env={"COLUMNS": "120"}, check=True).stdout
        assert all(len(line.rstrip()) <= 120 for line in out.splitlines()), command
        traces = 2 if command == ["ls"] else 7  # a row per trace; a row per operation of BERT-small
        assert len(_table_bodies(out)) == traces, (command, out)
    wide = run_cli("ls", "--wide", db=db, env={"COLUMNS": "120"}, check=True).stdout
    assert "source_path" in wide and long_name in wide  # every column whole, however wide
