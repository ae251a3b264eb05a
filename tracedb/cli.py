"""The tracedb command line: a thin layer over tracedb.api, with tracedb.reports preparing a report from its options and tracedb.present showing what comes back."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import sys
import textwrap
import time
from pathlib import Path
from typing import Annotated, Callable, List, Optional

import duckdb
import typer
import typer.core
import typer.main

from . import __version__, api, atomic, present, reports
from .db import STORAGE_VERSION, default_path
from .errors import Interrupted, TracedbError, damaged, is_damage, is_interrupt
from .render import PIPE_WIDTH, Format, output_width, printable
from .results import ReportResult, Result

# numpy, which pyarrow imports, would start a BLAS thread pool, with its buffers, that no command
# uses: under an address-space limit it was what failed first.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# The modules behind one command are imported by that command (a tiny load pays for nothing else).

app = typer.Typer(
    help="tracedb: stream accelerator profiler traces into one DuckDB file and query them with SQL.",
    no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
    # help is plain text: 'tracedb[dask]' and [NAME ...] must not be read as rich markup
    rich_markup_mode=None,
)
def say(message: str) -> None:
    """One plain line on stderr (never wrapped, no markup, no control character of a name)."""
    print(printable(message), file=sys.stderr, flush=True)

# Paths are checked by tracedb (one line naming the file, the other files still load), not by
# typer, whose check of a path it cannot read is a usage error that stops the whole command.
DbOption = Annotated[Optional[Path], typer.Option(
    "--db", readable=False, help="Database file (default: $TRACEDB_DB or ./tracedb.duckdb).", show_default=False)]
FormatOption = Annotated[Format, typer.Option("--format", "-f", help="Output format.")]
WaitOption = Annotated[float, typer.Option(
    "--wait", help="Seconds to keep trying while another process holds the database (a load, say).",
    show_default=False)]
OutputOption = Annotated[Optional[Path], typer.Option(
    "--output", "-o", readable=False, help="Write to this file instead of standard output (a device or a pipe "
                                           "is written in place).", show_default=False)]
WideOption = Annotated[bool, typer.Option("--wide", help="A table shows every column at its full width, however "
                                                         "wide the lines (else it fits the terminal).")]
RulesOption = Annotated[Optional[Path], typer.Option(
    "--rules", readable=False, help="Your own kernel rules or annotation patterns CSV, stored in the database and tried "
                    "before the built-in ones (see: tracedb rules --help).", show_default=False)]

def _db_path(db: Optional[Path]) -> Path:
    global _database
    _database = Path(db) if db else Path(default_path())
    return _database


# The database the command works on, for the line a damaged file found mid-command gives.
_database: Optional[Path] = None


@app.command()
def load(
    files: Annotated[List[Path], typer.Argument(
        readable=False, help="Trace files: Chrome-trace JSON (plain or gzip), Ascend CSV, op_mapping.yaml; or a "
                             "directory written by tracedb export.", show_default=False)],
    db: DbOption = None,
    name: Annotated[Optional[str], typer.Option(
        help="Trace name (default: file name without trace suffixes); only with one file.")] = None,
    replace: Annotated[bool, typer.Option(
        "--replace", help="Load again even if the same content or name is already loaded.")] = False,
    meta: Annotated[Optional[List[str]], typer.Option(
        "--meta", help="A parameter of the run the trace records, KEY=VALUE (repeatable), stored in "
                       "trace_params: M, K, N, rows, cols, warmup, iterations, clock_ghz, peak_macs, hwid "
                       "for AIE GEMM runs, or any key of your own.", show_default=False)] = None,
    wait: WaitOption = 0.0,
    storage_version: Annotated[Optional[str], typer.Option(
        "--storage-version", help=f"DuckDB storage format of a database created now: {STORAGE_VERSION} (default: "
                                  "DuckDB 1.4 and later read it), a later release such as v1.5.0, or latest.",
        show_default=False)] = None,
    op_mapping: Annotated[Optional[Path], typer.Option(
        "--op-mapping", readable=False, help="A TensorCast op_mapping.yaml: loaded too, and recorded as the mapping of the "
                             "traces loaded with it (tc-vs-prof uses it).", show_default=False)] = None,
    rules_file: RulesOption = None,
    lake: Annotated[Optional[Path], typer.Option(
        "--lake", readable=False, help="Add the traces to this trace lake (a directory of Parquet, one partition per trace, "
                       "written while others load and read) instead of a database file; "
                       "read it with --db DIR.", show_default=False)] = None,
    scheduler: Annotated[Optional[str], typer.Option(
        "--scheduler", envvar="TRACEDB_DASK_SCHEDULER",
        help="With --lake: run one task per file on this Dask scheduler (tcp://HOST:8786; pip install "
             "'tracedb[dask]'); the files and the lake must be at the same paths on its workers.",
        show_default=False)] = None,
    jobs: Annotated[Optional[int], typer.Option(
        "--jobs", "-j", help="Worker processes reading and deriving files side by side (default: one per free core, "
                             "one for less than 8 MiB of files or a busy machine); "
                             "each trace still commits in a transaction of its own, in the order given.",
        show_default=False, min=1)] = None,
    fmt: FormatOption = Format.table,
) -> None:
    """Load trace files, one transaction per file; print a summary of what was loaded. The format
    is told from the content: PyTorch-profiler (Kineto), mlir-aie, torch_npu trace_view.json and
    TensorCast Chrome traces (.json, .json.gz), Ascend profiler CSVs (kernel_details.csv,
    op_summary_*.csv, forward-pass CSVs) and op_mapping.yaml."""
    from .ingest import params

    run_params = params.parse_meta(meta)
    wait = _seconds(wait)
    if storage_version and _db_path(db).exists():
        say(f"tracedb: warning: {_db_path(db)} exists: it keeps its storage format (--storage-version applies "
            "to a database created by this load)")
    api.check_load_args(files, name)  # before the database is created
    api.check_something_to_load(files)
    if scheduler and lake is None:
        raise TracedbError("--scheduler runs the load on a Dask cluster, whose tasks write to a lake: add --lake DIR")
    if lake is not None:
        _load_lake(lake, files, db, name, replace, run_params, op_mapping, rules_file, jobs, scheduler, fmt)
        return
    database = api.connect(_db_path(db), read_only=False, wait=wait, storage=storage_version)
    outcomes: list = []
    try:
        with _LoadProgress(len(files)) as progress:
            done = database.load_all(
                files, name=name, replace=replace, meta=run_params, op_mapping=op_mapping, rules=rules_file, jobs=jobs,
                progress=progress.update if progress.shown else None,
                on_outcome=lambda o: (outcomes.append(o), progress.landed(o)), on_error=progress.failed)
        if done.outcomes:
            _show(done.result(), fmt)
    finally:
        try:
            database.close()
        except BaseException as exc:  # closing checkpoints the file: a signal can land there too
            if is_interrupt(exc):
                committed = [o.name for o in outcomes if o.status in ("loaded", "replaced")]
                if committed:
                    raise Interrupted(f"interrupted; loaded: {', '.join(committed)}") from None
            raise
    if done.failures:
        raise typer.Exit(1)


def _load_lake(lake: Path, files: list[Path], db: Optional[Path], name, replace: bool, run_params: dict,
               op_mapping: Optional[Path], rules_file: Optional[Path], jobs: Optional[int], scheduler: Optional[str],
               fmt: Format) -> None:
    if db is not None:
        raise TracedbError("--lake and --db: a load writes to one of them")
    if rules_file is not None:
        raise TracedbError("--rules applies to a database file: a lake's traces are derived with the built-in "
                           "rules (load into a database with --rules, then tracedb export)")
    with _LoadProgress(len(files)) as progress:
        done = api.load_lake(
            lake, files, name=name, replace=replace, meta=run_params, op_mapping=op_mapping, jobs=jobs,
            scheduler=scheduler, progress=progress.update if progress.shown else None,
            on_outcome=progress.landed, on_error=progress.failed)
    if done.outcomes:
        _show(done.result(), fmt)
    if done.failures:  # each said in its line, as a database load says them
        raise typer.Exit(1)


# What the progress display says of each stage of a load (tracedb.ingest.loader).
_STAGES = {"read": "reading", "type": "typing events", "derive": "deriving facts"}


class _LoadProgress:
    """One progress display on a terminal for a whole load: a line per file in progress naming its
    stage (reading with a bar of the bytes, then typing events, then deriving facts) and the events
    per second so far, counted as the summary counts them: events over the time since its load began.
    Off the terminal it shows nothing."""

    def __init__(self, files: int = 1):
        from rich.console import Console

        self.files = files  # several: a line counting the files done
        self.overall = None
        self.console = Console(stderr=True, highlight=False)
        self.shown = self.console.is_terminal
        self.bar = None
        self.tasks: dict[Path, tuple[int, float]] = {}
        self.finished: set[Path] = set()  # a worker's last report can come after its file is done

    def __enter__(self) -> "_LoadProgress":
        if self.shown:
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            self.bar = Progress(TextColumn("{task.description}"), BarColumn(bar_width=24), _amount_column(),
                                TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), console=self.console,
                                transient=True)
            self.bar.__enter__()
            if self.files > 1:
                self.overall = self.bar.add_task("files done", total=self.files, rate="", unit="files")
        return self

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.__exit__(*exc)

    def update(self, path: Path, stage: str, done_bytes: int, events: int) -> None:
        if path in self.finished:
            return
        if path not in self.tasks:
            size = path.stat().st_size if path.is_file() else 0
            self.tasks[path] = (self.bar.add_task(self._label(path, "read"), total=size or None, rate="",
                                                  unit="bytes"), time.perf_counter())
        task, started = self.tasks[path]
        elapsed = time.perf_counter() - started
        rate = f"{events:,} events, {events / elapsed:,.0f}/s" if elapsed > 0 and events else ""
        self.bar.update(task, completed=done_bytes, rate=rate, description=self._label(path, stage))

    def _label(self, path: Path, stage: str) -> str:
        """The file's name and stage, the name cut in the middle to leave the bar, the amount, the
        rate and the time one line (about 75 characters) of the terminal's width."""
        stage = _STAGES.get(stage, stage)
        room = max(12, self.console.width - 75 - len(stage) - 2)
        from rich.markup import escape

        name = printable(path.name)
        name = name if len(name) <= room else name[:room // 2 - 1] + "…" + name[-(room - room // 2):]
        return escape(f"{name}: {stage}")  # the description is markup: `[x].json` is a name

    def landed(self, outcome) -> None:
        """A file is done: its line goes, and what the summary does not say is said (a skip, events
        set aside, an incomplete trace)."""
        self.finish(outcome.path)
        _report_outcome(outcome)

    def failed(self, path: Path, why: str) -> None:
        self.finish(path)
        say(f"tracedb: error: {why}")

    def finish(self, path: Path) -> None:
        if self.overall is not None and path not in self.finished:
            self.bar.advance(self.overall)
        self.finished.add(path)
        task = self.tasks.pop(path, None)
        if task is not None and self.bar is not None:
            self.bar.remove_task(task[0])


def _amount_column():
    """A progress column showing a task's amount in its unit: files as "3/8 files", bytes as rich's
    download column does ("12.3/64.0 MB")."""
    from rich.progress import DownloadColumn, ProgressColumn
    from rich.text import Text

    class Amount(ProgressColumn):
        def __init__(self):
            super().__init__()
            self.download = DownloadColumn()

        def render(self, task):
            if task.fields.get("unit") == "files":
                return Text(f"{int(task.completed)}/{int(task.total or 0)} files", style="progress.download")
            return self.download.render(task)

    return Amount()


def _report_outcome(o) -> None:
    if o.status == "skipped":
        say(f"tracedb: {o.path}: skipped: {o.note}")
        return
    if o.rejected:
        say(f"tracedb: warning: {o.path}: {o.rejected} event(s) set aside in rejected_events "
                  "(see: tracedb sql \"SELECT * FROM rejected_events\")")
    if not o.complete:
        say(f"tracedb: warning: {o.path}: trace is incomplete, loaded {o.events} complete event(s): "
                  f"{o.problem}")


@app.command()
def export(
    directory: Annotated[Optional[Path], typer.Argument(
        readable=False, help="A new (or empty) directory to write to (not with --perfetto).", show_default=False)] = None,
    db: DbOption = None,
    wait: WaitOption = 0.0,
    trace: Annotated[Optional[List[str]], typer.Option(
        "--trace", "-t", help="Only this trace (name or #id; repeatable). Default: every trace; --perfetto: one.",
        show_default=False)] = None,
    perfetto: Annotated[Optional[Path], typer.Option(
        "--perfetto", help="Write one trace's window as Chrome-trace JSON for Perfetto UI (ui.perfetto.dev), with "
                           "tracedb's steps, layers, idle gaps and why findings on tracks of their own.",
        show_default=False)] = None,
    step: Annotated[Optional[int], typer.Option(
        "--step", help="--perfetto: the window of this step (see: tracedb report timeline).", show_default=False)] = None,
    phase: Annotated[Optional[str], typer.Option(
        "--phase", help="--perfetto: the window of this phase's steps (prefill, decode, mixed, none).",
        show_default=False)] = None,
) -> None:
    """Write the traces as Parquet: DIR/<table>/trace=<name>/data.parquet for every table, the
    user's rules, and a manifest with the schema version. `tracedb load DIR` brings them back.
    With --perfetto FILE --trace T [--step N | --phase P]: a window of one trace for Perfetto UI."""
    if perfetto is not None:
        if directory is not None:
            raise TracedbError("export writes a directory or, with --perfetto, one file: give one of them")
        if not trace or len(trace) != 1:
            raise TracedbError("--perfetto exports one trace: give it with --trace")
        with api.connect(_db_path(db), wait=_seconds(wait)) as database:
            done = database.export_perfetto(perfetto, trace[0], step=step, phase=phase)
        where = f"step {step}" if step is not None else f"phase {phase}" if phase is not None else "the whole trace"
        say(f"tracedb: wrote {done.events:,} events of {done.trace} ({where}; {done.findings} why findings) "
            f"to {done.path}: open it in ui.perfetto.dev")
        return
    if directory is None:
        raise TracedbError("export needs a directory to write to (or --perfetto FILE)")
    if step is not None or phase is not None:
        raise TracedbError("--step and --phase choose the window of a --perfetto export")
    with api.connect(_db_path(db), wait=_seconds(wait)) as database:
        done = database.export(directory, trace)
    say(f"tracedb: exported {done.traces} trace(s) to {done.path} ({done.files} Parquet files)")


@app.command("ls")
def list_traces(db: DbOption = None, fmt: FormatOption = Format.table, wide: WideOption = False,
                wait: WaitOption = 0.0, output: OutputOption = None) -> None:
    """List the loaded traces."""
    with api.connect(_db_path(db), wait=_seconds(wait)) as database:
        result = database.traces()
    _to(output, db, lambda: _show(result, fmt, wide))


def _to(output: Path | None, db: Path | None, write: Callable[[], None]) -> None:
    """What write prints, on standard output or into the file -o names."""
    if output is None:
        write()
    else:
        _write_report(output, _db_path(db), write)


def _seconds(wait: float) -> float:
    if not wait >= 0:  # NaN included
        raise TracedbError("--wait takes a number of seconds, 0 or more")
    return wait


def _show(result: Result, fmt: Format, wide: bool = False) -> None:
    present.write(result.columns, result.rows, fmt, sys.stdout, title=result.title, formats=result.formats, wide=wide)


@app.command("rm")
def remove(
    names: Annotated[List[str], typer.Argument(help="Names of the traces to remove (or #ID for the trace of that id).",
                                               show_default=False)],
    db: DbOption = None,
) -> None:
    """Remove traces and every row that belongs to them."""
    with api.connect(_db_path(db), read_only=False, create=False) as database:
        removed = database.remove(*names)
    for name in removed:
        say(f"tracedb: removed {name}")


def _vs_help() -> str:
    """--vs's help, from the report headers: the reports that compare (a vs parameter), and those
    that take more traces (an alias when many, a traces parameter)."""
    available = reports.available()
    pairs = [n for n, r in available.items() if "vs" in r.params and not any(a.when == "patterns" for a in r.aliases)]
    many = sorted({a.name for r in available.values() for a in r.aliases if a.when == "many"}
                  | {n for n, r in available.items() if "traces" in r.params})
    return (f"Trace B of a comparison ({', '.join(sorted(pairs))}); repeat it to compare more traces "
            f"({', '.join(many)}).")


TERMINAL_ROWS = present.TERMINAL_ROWS  # rows of a table a terminal shows when no --limit is given


@app.command("sql")
def run_sql(
    query: Annotated[str, typer.Argument(help="SQL to run against the database (read-only).",
                                         show_default=False)],
    db: DbOption = None,
    wait: WaitOption = 0.0,
    fmt: FormatOption = Format.table,
    wide: WideOption = False,
    limit: Annotated[Optional[int], typer.Option(min=0, help=f"Rows a table shows (default {TERMINAL_ROWS}; "
                                                  "csv and json give every row).", show_default=False)] = None,
    units: Annotated[bool, typer.Option("--units", help="Show *_ns columns as durations and *_bytes as sizes, "
                                        "in a unit per column, as reports do.")] = False,
    output: OutputOption = None,
) -> None:
    """Run a SQL query and print its rows as they are stored. The query reads the database and
    nothing else: it cannot write (the file is open read-only), read or write other files
    (COPY ... TO, EXPORT DATABASE, ATTACH, read_csv; it has no temporary directory either, so it
    runs in memory), install or load extensions, or change settings. To save rows to a file, use
    -o FILE (with --format csv, json or html)."""
    with api.connect(_db_path(db), wait=_seconds(wait)) as database:  # read-only: locked down as it opens
        result = database.sql(query)
    if not result.columns:
        return
    formats = {} if units else {c: "raw" for c in result.columns}  # numbers as stored, not as durations
    rows = result.rows

    def write() -> None:
        if present.renderer(fmt).for_people and output is None:
            shown = TERMINAL_ROWS if limit is None else limit
            present.write(result.columns, rows[:shown], fmt, sys.stdout, title=result.title, formats=formats, wide=wide)
            if len(rows) > shown:
                typer.echo(f"  {len(rows):,} rows, {shown:,} shown: --limit N shows N, --format csv or json all of them\n")
            return
        present.write(result.columns, rows if limit is None else rows[:limit], fmt, sys.stdout, title=result.title,
                      formats=formats, wide=wide)

    _to(output, db, write)


@app.command("schema")
def schema(
    name: Annotated[Optional[str], typer.Argument(help="Only this table or view.", show_default=False)] = None,
    db: DbOption = None,
    wait: WaitOption = 0.0,
    fmt: FormatOption = Format.table,
) -> None:
    """Describe tables and views: every column with its type and meaning."""
    with api.connect(_db_path(db), wait=_seconds(wait)) as database:
        result = database.schema(name)
        described = dict((o, d) for o, _, d in database.objects().rows)
    if present.renderer(fmt).screen and not name:  # a heading row per object, its columns under it
        rows, last = [], None
        for obj, kind, column, type_, description in result.rows:
            if obj != last:
                rows.append((obj, kind, "", "", described.get(obj, "")))
                last = obj
            rows.append(("", kind, column, type_, description))
        result = Result(result.columns, rows, title=result.title)
    _show(result, fmt)


@app.command("reports")
def list_reports(fmt: FormatOption = Format.table) -> None:
    """List the reports with their parameters."""
    rows = [[r.name, r.summary, _params_text(r), "; ".join(r.examples)] for r in reports.available().values()]
    if not present.renderer(fmt).screen:
        present.write(["report", "summary", "parameters", "example"], rows, fmt, sys.stdout, title="Reports")
        return
    # a list, each summary whole: a table would cut it, or leave the parameters out
    width = max(60, output_width(sys.stdout))
    lines = ["Reports", ""]
    for name, summary, params, example in rows:
        lines.append(name)
        lines += textwrap.wrap(summary, width, initial_indent="    ", subsequent_indent="    ")
        lines += textwrap.wrap(f"parameters: {params}", width, initial_indent="    ", subsequent_indent="      ")
        if example:
            lines.append(f"    example: {example}")
        lines.append("")
    typer.echo("\n".join(lines).rstrip() + "\n")


def _params_text(r: reports.Report) -> str:
    """A report's parameters as given on the command line, each default said once: the -p
    parameters that share a default are listed together."""
    parts, shared = [], {}
    for p in r.params.values():
        if p.option:
            required = r.compares and (p.name == "trace" or (p.name == "vs" and r.needs_vs))
            parts.append(f"{reports.flag(p.name)} (required)" if required
                         else f"{reports.flag(p.name)} (default {_default(p)})")
        else:
            shared.setdefault(_default(p), []).append(p.name)
    parts += [f"-p {'/'.join(names)}=... (default {default})" for default, names in shared.items()]
    return "; ".join(parts) or "none"


_default = reports.default_text


class _ReportCommand(typer.core.TyperCommand):
    """tracedb report: its help ends with the options some reports declare in their headers
    (a parameter line with the flag `option`), read when the help is shown."""

    @property
    def epilog(self) -> str:
        lines = ["Options of one report (declared in its header):"]
        for name, owners in reports.own_options().items():
            doc = owners[0].params[name].doc
            lines.append(f"{reports.flag(name)} VALUE  ({', '.join(r.name for r in owners)}) {doc}")
        return "\n\n".join(lines) if len(lines) > 1 else ""

    @epilog.setter
    def epilog(self, value) -> None:  # click sets it from the decorator: the headers say it instead
        pass


@app.command("report", cls=_ReportCommand,
             context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def run_report(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Report to run (see: tracedb reports).", show_default=False)],
    db: DbOption = None,
    wait: WaitOption = 0.0,
    trace: Annotated[Optional[str], typer.Option("--trace", "-t", help="Only this trace (name or #id); for a "
                                                 "comparison, trace A.", show_default=False)] = None,
    vs: Annotated[Optional[List[str]], typer.Option("--vs", help=_vs_help(), show_default=False)] = None,
    phase: Annotated[Optional[str], typer.Option(help="Only kernels of this phase: prefill, decode, mixed, none "
                                                      "or all.", show_default=False)] = None,
    limit: Annotated[Optional[str], typer.Option(help="Rows per table, or all (default: the report's own).",
                                                 show_default=False)] = None,
    section: Annotated[Optional[str], typer.Option(help="Only this table of a report that prints several.",
                                                   show_default=False)] = None,
    param: Annotated[Optional[List[str]], typer.Option(
        "--param", "-p", help="Any other parameter of the report, KEY=VALUE (repeatable), e.g. -p M=512 "
                              "for aie-summary (see: tracedb reports).", show_default=False)] = None,
    rules_file: RulesOption = None,
    show_sql: Annotated[bool, typer.Option("--show-sql", help="Print the report's SQL and the parameter "
                                                              "values instead of running it.")] = False,
    wide: Annotated[bool, typer.Option("--wide", help="Every column in a table or markdown (csv, json and html "
                                                      "always have them all).")] = False,
    output: Annotated[Optional[Path], typer.Option(
        "--output", "-o", readable=False, help="Write to this file instead of standard output (e.g. with --format html: one "
                               "self-contained page with the tables and their charts).", show_default=False)] = None,
    fmt: Annotated[Format, typer.Option("--format", "-f", help="Output format; html: a page with charts.")]
        = Format.table,
) -> None:
    """Run a report: a table per trace with a totals row, or for a comparison (--trace A --vs B)
    its tables titled with both traces (csv/json: plain rows; html: a self-contained page with
    the report's charts as inline SVG). A terminal table shows the first rows of a long result
    and says how many more there are (--limit N shows N, --format csv all)."""
    bound = reports.prepare(name, {"trace": trace, "vs": vs, "phase": phase, "limit": _limit(limit)},
                            params=reports.parse_params(param), words=ctx.args, section=section)
    name = bound.report.name  # the report an alias names
    if show_sql:
        if output is not None:
            _write_report(output, _db_path(db), lambda: typer.echo(bound.script()))
        else:
            typer.echo(bound.script())
        return
    if rules_file:
        with api.connect(_db_path(db), read_only=False, create=False) as database:
            _add_rules(database, rules_file)
    sections = [s.name for s in bound.report.sections if s.first] + [s.name for s in bound.report.sections if not s.first]
    main_only = present.renderer(fmt).one_table and output is None and bound.section is None \
        and len(sections) > 1 and "main" in sections
    if main_only:  # a stream holds one table: the others are named, not run
        bound = dataclasses.replace(bound, section="main")
    with api.connect(_db_path(db), wait=_seconds(wait)) as database:
        own = bound.values.get("limit")
        if present.renderer(fmt).screen and output is None and limit is None and bound.report.limit_folds \
                and isinstance(own, int):
            # a terminal shows the findings that fit it: every shorter list is worked out at once
            shorter = database.run_by_limit(bound, list(range(own, 0, -1)))
            result = _fit_screen(shorter[own], shorter.__getitem__, wide)
        else:
            # the timeline strips are drawn for an HTML page alone, while the database is open
            result = database.run(bound, strips=present.renderer(fmt).figures)
    if main_only:
        rest = [n for n in sections if n != "main"]
        say(f"tracedb: report {name}: the main table; its other tables ({', '.join(rest)}): "
            "--section NAME, or -o FILE.csv for a file each")
        _print_report(result, fmt)
        return
    if present.renderer(fmt).one_table and len(result.sections) > 1:  # a stream or a file each
        if output is None:
            rest = [n for n in result.sections if n != result.main_name]
            say(f"tracedb: report {name}: the {result.main_name} table; its other tables ({', '.join(rest)}): "
                "--section NAME, or -o FILE.csv for a file each")
            _print_report(result.only(result.main_name), fmt)
            return
        _write_reports(_db_path(db), [(path, lambda part=part: _print_report(result.only(part), fmt))
                                      for part, path in _section_files(output, result)])
        return
    if output is not None:
        _write_report(output, _db_path(db), lambda: _print_report(result, fmt, wide, bounded=False))
    else:
        _print_report(result, fmt, wide, bounded=limit is None)


def _fit_screen(result: ReportResult, again: Callable[[int], ReportResult],
                wide: bool) -> ReportResult:
    """A report whose rows past its limit fold into a last row (why), shown on a terminal without
    --limit: as many rows as fit one screen, so that its first rows, the answer, are not scrolled
    away by its last (at least one row is kept). The rows that fit are counted on the table as
    drawn, and again(rows) gives the report listing that many (tried again while it still does not
    fit)."""
    import shutil

    height = shutil.get_terminal_size((PIPE_WIDTH, SCREEN_ROWS)).lines if sys.stdout.isatty() else SCREEN_ROWS
    rows = result.params.get("limit")
    while isinstance(rows, int) and rows > 1:
        text = result.text(Format.table, width=output_width(sys.stdout), wide=wide)
        lines = text.count("\n")
        if lines < height:  # the prompt takes the last line
            break
        tall = row_heights(text)  # the listed rows, then the folded one
        if len(tall) < 2:
            return result
        spare = lines - (height - 1)  # lines to give up
        keep = len(tall) - 1
        while keep > 1 and spare > 0:
            keep -= 1
            spare -= tall[keep]
        rows = min(rows - 1, keep)
        result = again(rows)
        result.bounded = True
    return result


def row_heights(text: str) -> list[int]:
    """The lines each row of the first table drawn in text takes: a row starts on a line whose
    first cell is not blank (its other lines fold its long cells), and the table's rows lie between
    the rule under its header and the rule over its totals."""
    lines = text.splitlines()
    rules = [i for i, line in enumerate(lines) if line.strip().startswith("━")]
    if not rules:
        return []
    header = lines[rules[0] - 1]
    first = len(header) - len(header.lstrip())
    first = header.find(" ", first + 1) if header.find(" ", first + 1) > 0 else first + 1  # the first cell's end
    body = lines[rules[0] + 1:rules[1] if len(rules) > 1 else len(lines)]
    heights: list[int] = []
    for line in body:
        if line[:first].strip() or not heights:
            heights.append(1)
        else:
            heights[-1] += 1
    return heights


# The rows of a screen a command's first answer must fit when the output is not a terminal that
# says its own (a 40-row terminal, as PIPE_WIDTH is a 120-column one).
SCREEN_ROWS = 40


def _limit(text: str | None) -> int | str | None:
    """--limit: a whole number of rows, or all."""
    if text is None or text == "all":
        return text
    try:
        return int(text)
    except ValueError:  # a usage error, as typer gives for a value of the wrong type
        raise typer.BadParameter(f"takes a number of rows or all, not {text[:40]!r}",
                                 param_hint="'--limit'") from None


def _section_files(output: Path, result: ReportResult) -> list[tuple[str, Path]]:
    """A file per section: the first at output, each other beside it as NAME.SECTION.SUFFIX
    (layer notes: NAME.layer_notes.csv)."""
    names = [result.main_name] + [n for n in result.sections if n != result.main_name]
    return [(names[0], output)] + [
        (n, output.with_name(f"{output.stem}.{n.replace(' ', '_')}{output.suffix or '.csv'}")) for n in names[1:]]


def _write_report(output: Path, database: Path, write) -> None:
    """Write a report to a file (see _write_reports)."""
    _write_reports(database, [(output, write)])


def _write_reports(database: Path, writes: list[tuple[Path, Callable[[], None]]]) -> None:
    """Write files, each by a function printing to standard output: all of them or none (each
    is written beside its target and the renames come once every one is written), never over the
    database or a directory."""
    for output, _ in writes:
        if output.exists() and database.exists() and os.path.samefile(output, database):
            raise TracedbError(f"{output}: is the database itself; choose another output file")
    current = writes[0][0]
    try:
        for current, _ in writes:
            atomic.output_kind(current)  # refused before any is written
        with contextlib.ExitStack() as files:
            for current, write in writes:
                out = files.enter_context(atomic.output(current))
                with contextlib.redirect_stdout(out):
                    write()
    except atomic.NotAFile as exc:
        raise TracedbError(f"{current}: {exc.strerror}") from None
    except OSError as exc:
        raise TracedbError(f"{current}: cannot write: {exc.strerror or exc}") from None
    for output, _ in writes:
        say(f"tracedb: wrote {output}")


def _print_report(result: ReportResult, fmt: Format, wide: bool = False, bounded: bool = False) -> None:
    present.print_report(result, fmt, sys.stdout, wide, bounded)


rules_app = typer.Typer(help="Rules as data: kernel classification rules, annotation and step frame patterns, "
                             "device peaks, why's hints, model shapes: list, add your own, remove.",
                        no_args_is_help=False, invoke_without_command=True, rich_markup_mode=None)
app.add_typer(rules_app, name="rules")


@rules_app.callback()
def rules_list(
    ctx: typer.Context,
    db: DbOption = None,
    wait: WaitOption = 0.0,
    table: Annotated[str, typer.Option(help="kernel_rules, annotation_patterns, step_frame_patterns, device_peaks, "
                                            "why_hints or model_shapes.")]
    = "kernel_rules",
    fmt: FormatOption = Format.table,
) -> None:
    """List the rules in the order they are tried (user rules first). A rules file is a CSV with the
    header of one of sql/rules/*.csv: kernel_rules (priority,platform,match,pattern,op,label,covers),
    annotation_patterns, step_frame_patterns (priority,framework,regex,phase), device_peaks, why_hints
    or model_shapes (priority,regex,model,hidden,intermediate,experts,top_k,reference)."""
    if ctx.invoked_subcommand:
        return
    with api.connect(_db_path(db), wait=_seconds(wait)) as database:
        _show(database.rules.list(table), fmt)


@rules_app.command("add")
def rules_add(
    given: Annotated[list[str], typer.Argument(
        help="[TABLE] FILE: a CSV file of rules, its table told by its header, or named first (kernel-rules, "
             "annotation-patterns, step-frame-patterns, device-peaks, why-hints, model-shapes).",
        show_default=False, metavar="[TABLE] FILE")],
    db: DbOption = None,
) -> None:
    """Store your own rules file (replacing an earlier one of the same name) and re-derive every trace."""
    if len(given) > 2:
        raise TracedbError(f"rules add: one file, with its table first if you like: not {len(given)} arguments")
    table, file = (given[0], Path(given[1])) if len(given) == 2 else (None, Path(given[0]))
    with api.connect(_db_path(db), read_only=False, create=False) as database:
        _add_rules(database, file, table)


@rules_app.command("rm")
def rules_rm(
    source: Annotated[str, typer.Argument(help="Source (file name) of the rules to remove.", show_default=False)],
    db: DbOption = None,
) -> None:
    """Remove your rules of one source and re-derive every trace."""
    with api.connect(_db_path(db), read_only=False, create=False) as database:
        removed = database.rules.remove(source)
    say(f"tracedb: removed {removed} rule(s) of {source}")


@app.command()
def refresh(db: DbOption = None) -> None:
    """Re-derive every trace's operations, phases, stacks and layers (after editing rules by hand)."""
    with api.connect(_db_path(db), read_only=False, create=False) as database:
        count = database.refresh()
    say(f"tracedb: refreshed {count} trace(s)")


def _add_rules(database: "api.Database", path: Path, table: str | None = None) -> None:
    table, source, count = database.rules.add(path, table)
    say(f"tracedb: {count} rule(s) from {path} stored in {table} as source {source!r}")


@app.command()
def version() -> None:
    """Print the versions of tracedb and DuckDB."""
    typer.echo(f"tracedb {__version__} (duckdb {duckdb.__version__})")


INTERRUPTED = 130  # the shell's code for a command ended by SIGINT
TERMINATED = 143  # and by SIGTERM
_exit_interrupted = INTERRUPTED  # the exit status of an interrupted command (run sets it on SIGTERM)


@functools.cache
def command() -> "typer.core.TyperGroup":
    """The click command typer builds from app, built once a process: building it reads every
    command's signature (30 ms, more than a small report takes); a click command is made to be
    called again (each call makes its own context)."""
    return typer.main.get_command(app)


def main() -> None:
    try:
        code = command()(standalone_mode=False)
        if code == INTERRUPTED:  # typer turns a KeyboardInterrupt into this exit code
            raise KeyboardInterrupt
        if isinstance(code, int) and code:
            sys.exit(code)
    except TracedbError as exc:
        say(f"tracedb: error: {exc}")
        sys.exit(1)
    except OSError as exc:  # a path the system refuses (a name too long, a folder closed to us, ...): one line
        where = f"{exc.filename}: " if exc.filename else ""
        say(f"tracedb: error: {where}{exc.strerror or exc}")
        sys.exit(1)
    except Interrupted as exc:
        say(f"tracedb: {exc}")
        sys.exit(_exit_interrupted)
    except (KeyboardInterrupt, duckdb.InterruptException, RuntimeError) as exc:
        if not is_interrupt(exc):
            raise
        say("tracedb: interrupted, database unchanged")
        sys.exit(_exit_interrupted)
    except duckdb.Error as exc:
        if not is_damage(exc):
            raise
        # a damaged block met after the file opened (a query, a load's commit): one line too
        say(f"tracedb: error: {damaged(_database or Path('the database'), exc)}")
        sys.exit(1)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (typer.Abort, EOFError):
        sys.exit(1)
    except typer.TyperException as exc:  # usage errors: typer prints the usage line and the problem
        show = getattr(exc, "show", None)
        if show:
            show()
        sys.exit(getattr(exc, "exit_code", 2))


def run() -> None:
    """The command's entry point: main, with SIGTERM taken as Ctrl-C (the load in progress rolls
    back, scratch folders go, one line, exit 143); then both ignored while the interpreter shuts
    down — the command has said what it did, and a signal then would kill the process without a
    word (and with no exit status of ours)."""
    import signal

    def terminate(signum, frame):
        global _exit_interrupted
        _exit_interrupted = TERMINATED
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, terminate)
    clean_up_at_exit = _exit_work()
    try:
        main()
        code = 0
    except SystemExit as exc:
        if not (exc.code is None or isinstance(exc.code, int)):
            raise
        code = exc.code or 0
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if _exit_work() == clean_up_at_exit:
        _exit_now(code)
    sys.exit(code)


def _exit_work() -> tuple[int, int]:
    """What the interpreter would do at exit beyond its own teardown: the functions registered to
    run then, and the threads it would wait for."""
    import atexit
    import threading

    return atexit._ncallbacks(), threading.active_count()


def _exit_now(code: int) -> None:
    """End the process without the interpreter's teardown, once the command is done and nothing
    it started waits for the exit (no function registered since start-up, no thread but this one;
    a parallel load registers both, and exits the usual way): freeing every module and DuckDB's
    took 20–30 ms of every command. The command has closed its database; what it printed is
    flushed here."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can reach the reader
            pass
    os._exit(code)


if __name__ == "__main__":
    run()
