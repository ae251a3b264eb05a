"""The Python API: what the command line does, as calls that return results a notebook can show.

    import tracedb
    with tracedb.connect("runs.duckdb", read_only=False) as db:
        db.load("h100.json.gz", name="h100")
        r = db.report("compare", trace="h100", vs="mi300", phase="decode")
        r.df()                      # the main table as a pandas DataFrame
        r.sections["summary"].arrow()
        db.sql("SELECT op, count(*) FROM kernel_ops GROUP BY op").rows

A Result is one table: its columns, rows and the display format of each column; it prints as the
terminal table, renders as HTML in Jupyter, and converts to Arrow (always there), pandas or polars
(when installed). A ReportResult holds a report's sections; in Jupyter it is the HTML report with
its charts.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

import duckdb

from . import db as dbmod
from . import atomic, snapshot, store
from . import reports as reportmod
from . import traces as tracemod
from .errors import Interrupted, TracedbError, damaged, is_damage, is_interrupt
from .results import ReportResult, Result

if TYPE_CHECKING:  # the loader is imported by the calls that load (a report needs none of it)
    from .ingest.loader import LoadOutcome
    from .ingest.readers import ProgressFn


class Rules:
    """The database's rules: list them, add your own file, remove a source."""

    def __init__(self, database: "Database"):
        self._db = database

    def list(self, table: str = "kernel_rules") -> Result:
        from . import rules

        view = rules.kind_named(table).ordered
        return self._db._query(f"SELECT * FROM {view} ORDER BY rank", title=table)

    def add(self, path: str | Path, table: str | None = None) -> tuple[str, str, int]:
        """Store a rules CSV as its own source and re-derive every trace; (table, source, rows).
        table: the rules table it must be for (model_shapes, device_peaks, ...; else its header says)."""
        from . import rules

        return rules.add_file(self._db._writable("add rules"), Path(path), table=table)

    def remove(self, source: str) -> int:
        from . import rules

        return rules.remove_source(self._db._writable("remove rules"), source)


class Database:
    """A tracedb file, open read-only unless asked otherwise (tracedb.connect)."""

    def __init__(self, path: str | Path | None = None, *, read_only: bool = True, wait: float = 0.0,
                 create: bool = True, storage: str | None = None, files: bool = False):
        from . import lake

        self.path = Path(path or dbmod.default_path())
        self.read_only = read_only
        self.sandboxed = False
        self.lake: Path | None = None  # a trace lake read in place (tracedb.lake)
        self._scratch: Path | None = None
        self._snapshot = None  # the files of a lake's traces as this reader opened them
        if lake.is_lake(self.path):
            if not read_only:
                raise TracedbError(f"{self.path}: a trace lake is read in place and written by loads: "
                                   f"tracedb load FILES --lake {self.path}")
            self.con, self._scratch, self._snapshot = lake.open_lake(self.path)
            self.lake = self.path
            # its folder goes at close, or, for a reader never closed, when it is collected or when
            # the interpreter exits
            self._remove_scratch = weakref.finalize(self, shutil.rmtree, self._scratch, True)
        elif read_only:
            self.con = dbmod.open_reader(self.path, wait=wait, sandbox=not files)
            self.sandboxed = not files
        else:
            self.con = dbmod.open_db(self.path, read_only=read_only, wait=wait, create=create, storage=storage)
        self.rules = Rules(self)
        if read_only and not files:
            self.lock_down()

    # -- lifetime
    def close(self) -> None:
        """Close the file (closing checkpoints it; a Ctrl-C there still leaves whole traces)."""
        try:
            if self.read_only and self.lake is None:
                dbmod.close_reader(self.path, self.con)
            else:
                self.con.close()
        finally:
            if self._scratch is not None:
                self._remove_scratch()

    def __enter__(self) -> "Database":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def lock_down(self) -> None:
        """Let the connection run a user's SQL and nothing else (tracedb.db.lock_down): no file
        read or written, a lake's included. A read-only connection is locked down when it opens,
        unless asked for with files=True."""
        if not self.sandboxed:
            try:
                if self.read_only and self.lake is None:
                    dbmod.lock_down_reader(self.path, self.con)
                else:
                    dbmod.lock_down(self.con)
            except BaseException:
                self.close()
                raise
            self.sandboxed = True

    def _writable(self, what: str) -> duckdb.DuckDBPyConnection:
        if self.read_only:
            raise TracedbError(f"{self.path}: open read-only; to {what}, connect with "
                               f"tracedb.connect({str(self.path)!r}, read_only=False)")
        return self.con

    @contextlib.contextmanager
    def _reading(self):
        """A read of a lake gives the traces as this connection opened them. Where the reader holds
        its files (tracedb.snapshot) nothing a load does later reaches them; where it reads by path,
        a load that replaces or removes a trace swaps its files under the reader, so their identity
        is checked before the read and after it, and a change is one line saying which trace
        changed (whatever the read made of the swap, an error or rows, is then not given). A
        damaged database file met by the read is one line naming it."""
        if self.lake is None:
            try:
                yield
            except duckdb.Error as exc:
                if not is_damage(exc):
                    raise
                raise TracedbError(damaged(self.path, exc)) from None
            return
        self._check_lake()
        try:
            yield
        except Exception:  # a Ctrl-C stays a Ctrl-C
            self._check_lake()
            raise
        self._check_lake()

    def _check_lake(self) -> None:
        changed = self._snapshot.changed()
        if changed:
            raise TracedbError(f"{self.lake}: trace {', '.join(map(repr, changed[:3]))} changed since this connection "
                               "opened the lake (a load replaced or removed it): connect again")

    def _query(self, sql: str, params: Sequence[Any] | dict | None = None, title: str | None = None) -> Result:
        with self._reading():
            try:
                cur = self.con.execute(sql, params) if params is not None else self.con.execute(sql)
                if cur is None:  # nothing but whitespace or comments
                    raise TracedbError("no SQL statement given")
                if cur.description is None:  # a statement that returns no rows
                    return Result([], [], title=title)
                return Result([d[0] for d in cur.description], cur.fetchall(), title=title)
            except duckdb.Error as exc:
                from .errors import reraise_interrupt

                reraise_interrupt(exc)
                if is_damage(exc):
                    raise  # said with the file's name by _reading
                raise TracedbError(f"SQL error: {' '.join(str(exc).split())}") from None

    # -- questions
    def sql(self, query: str, params: Sequence[Any] | dict | None = None) -> Result:
        """Run any SQL (read-only on a read-only connection) and return its rows."""
        return self._query(query, params)

    def traces(self) -> Result:
        """The loaded traces."""
        listed = self._query(
            "SELECT trace_id, name, format, platform, device_name, event_count AS events, "
            "rejected_count AS rejected, complete, problem, loaded_at, source_path "
            # a lake's traces land in any order (writers in parallel, ids the seconds each began): by name
            f"FROM traces ORDER BY {'name, ' if self.lake else ''}trace_id", title="Traces")
        listed.formats = {"name": "trace"}  # a trace's name: what a person types next, never cut
        return listed

    def objects(self) -> Result:
        """The tables and views, with what each holds."""
        return self._query(
            "SELECT table_name AS object, 'table' AS kind, coalesce(comment, '') AS description FROM duckdb_tables() "
            "WHERE schema_name = 'main' AND NOT temporary UNION ALL "
            "SELECT view_name, 'view', coalesce(comment, '') FROM duckdb_views() "
            "WHERE schema_name = 'main' AND NOT internal AND NOT temporary ORDER BY 2, 1", title="Objects")

    def schema(self, name: str | None = None) -> Result:
        """Every column of the tables and views (or of the one named) with its type and meaning."""
        objects = self.objects().rows
        if name is not None:
            objects = [o for o in objects if o[0] == name]
            if not objects:
                raise TracedbError(f"no table or view named {name!r} (see: tracedb schema)")
        rows = []
        for obj, kind, _ in objects:
            rows += [(obj, kind, *col) for col in self.con.execute(
                "SELECT column_name, data_type, coalesce(comment, '') FROM duckdb_columns() "
                "WHERE schema_name = 'main' AND table_name = ? ORDER BY column_index", [obj]).fetchall()]
        return Result(["object", "kind", "column", "type", "description"], rows, title="Schema")

    def trace(self, name: str) -> tuple[int, str]:
        """(trace_id, name) of a trace named by name or "#ID"."""
        return tracemod.find(self.con, name)

    def report(self, name: str, *, trace: str | None = None, vs: str | Sequence[str] | None = None,
               phase: str | None = None, limit: int | str | None = None, section: str | None = None,
               strips: bool | None = None, **params: Any) -> ReportResult:
        """Run a report (see tracedb.reports_available()); a comparison takes trace= and vs=.
        compare with several vs (vs=["b", "c"]) or a trace pattern (trace="h100_*") compares them
        all (the compare-many report); compare-many and trend take the traces as trace= and vs=.
        strips: draw the timeline strips of a report that has them now (True: for its HTML after
        the database closes), never (False), or on its first HTML rendering (None)."""
        bound = reportmod.prepare(name, {"trace": trace, "vs": vs, "phase": phase, "limit": limit, **params},
                                  section=section)
        return self.run(bound, strips=strips)

    def run(self, bound: reportmod.Bound, *, strips: bool | None = None) -> ReportResult:
        """Run a report prepared by tracedb.reports.prepare (what report() does)."""
        with self._reading():
            result = bound.run(self.con)
        if bound.report.strips and strips is not False:
            def draw() -> str:
                with self._reading():
                    return bound.strips(self.con, result)
            if strips:
                result.strips = draw()
            else:
                result.strips_later = draw
        return result

    def timeline_strips(self, traces: Sequence[str], *, step: int | None = None, phase: str | None = None,
                        min_gap_us: float = 20) -> str:
        """Timeline strips of one trace or of two (A above B) as an HTML figure of inline SVG: per
        step, its streams' kernels and its idle gaps by cause (tracedb.strips)."""
        from . import strips as stripsmod

        with self._reading():
            return stripsmod.figure(self.con, list(traces), step=step, phase=phase, min_gap_us=min_gap_us)

    def report_by_limit(self, name: str, limits: Sequence[int], *, trace: str | None = None,
                        vs: str | None = None, phase: str | None = None, section: str | None = None,
                        **params: Any) -> dict[int, ReportResult]:
        """A report whose rows past its limit fold into a last row (why), for each of several
        limits at the cost of about one run: {limit: its ReportResult}. What a terminal that
        shows as many findings as fit its screen asks for."""
        bound = reportmod.prepare(name, {"trace": trace, "vs": vs, "phase": phase, **params}, section=section)
        return self.run_by_limit(bound, limits)

    def run_by_limit(self, bound: reportmod.Bound, limits: Sequence[int]) -> dict[int, ReportResult]:
        """report_by_limit for a report prepared by tracedb.reports.prepare."""
        with self._reading():
            return bound.run_by_limit(self.con, list(limits))

    # -- changes
    def load(self, path: str | Path, *, name: str | None = None, replace: bool = False,
             meta: dict[str, str] | None = None, progress: ProgressFn | None = None,
             kind: str | None = None) -> LoadOutcome:
        """Load one trace file in one transaction; returns its LoadOutcome (status loaded, replaced
        or skipped). progress(stage, bytes read, events) is called as the load goes. kind: a
        reader's kind (e.g. "op-mapping") when the content should not decide."""
        from .ingest.loader import load_file
        if not isinstance(path, (str, os.PathLike)):
            raise TracedbError(f"load takes one file, not {type(path).__name__}; for several: load_all(paths)")

        return load_file(self._writable("load traces"), path, name=name, replace=replace, meta=meta,
                         progress=progress, kind=kind)

    def load_all(self, paths: Iterable[str | Path], *, name: str | None = None, replace: bool = False,
                 meta: dict[str, str] | None = None, op_mapping: str | Path | None = None,
                 rules: str | Path | None = None,
                 progress: Callable[[Path, str, int, int], None] | None = None,
                 on_outcome: Callable[[LoadOutcome], None] | None = None,
                 on_error: Callable[[Path, str], None] | None = None, jobs: int | None = None) -> "Loaded":
        """What `tracedb load` does: store a rules file and load an op mapping first when given,
        then each path (a trace file, or a directory written by export) in its own transaction.
        A file that cannot be loaded is a failure in the returned Loaded (and on_error(path,
        message)); the others still load. On Ctrl-C after some traces were committed, an
        Interrupted error names them. jobs: worker processes reading and deriving trace files
        side by side (default: the cores; 1 loads them one after the other in this process):
        they commit in the order given, with the rows a serial load gives (exports are loaded
        first, in this process)."""
        from . import exchange
        from .ingest.readers import OP_MAPPING

        paths = [Path(p) for p in paths]
        check_load_args(paths, name)
        con = self._writable("load traces")
        meta = dict(meta or {})
        done = Loaded([], [], on_outcome, on_error)
        paths, repeated = given_once(paths, name)
        landed, failed = done.landed, done.failed
        # trace ids are never reused: whatever this load commits gets a larger id than any there now
        first_new_id = con.execute("SELECT coalesce(max(trace_id), 0) + 1 FROM traces").fetchone()[0]

        def watch(path: Path):
            return (lambda stage, read, events: progress(path, stage, read, events)) if progress else None

        stored_rules = in_progress = None
        try:
            if rules is not None:
                stored_rules = self.rules.add(rules)[1]
            if op_mapping is not None:
                mapping = Path(op_mapping)
                try:
                    mapped = self.load(mapping, replace=replace, progress=watch(mapping), kind=OP_MAPPING)
                except TracedbError as exc:
                    raise TracedbError(f"--op-mapping: {exc}") from None
                landed(mapped)
                meta["op_mapping"] = mapped.name
            files = [p for p in paths if not exchange.is_export(p)]
            workers = 1
            if len(files) > 1:  # the worker pool's module (multiprocessing) only where it can serve
                from . import parallel

                workers = parallel.workers(jobs, files)
            together = workers > 1
            # side by side, the exports come first here and the trace files go to the pool below
            for path in [p for p in paths if p not in files] if together else paths:
                in_progress = None if exchange.is_export(path) else path
                try:
                    if exchange.is_export(path):
                        if name is not None or meta:
                            raise TracedbError(f"{path}: an export keeps its traces' names and parameters; "
                                               "--name, --meta and --op-mapping do not apply to it")
                        loaded = exchange.load_export(con, path, replace)
                    else:
                        loaded = [self.load(path, name=name, replace=replace, meta=meta, progress=watch(path))]
                except TracedbError as exc:
                    failed(path, str(exc))
                    continue
                for outcome in loaded:
                    landed(outcome)
                in_progress = None
            if together:
                def alone(path: Path) -> None:
                    try:
                        landed(self.load(path, name=name, replace=replace, meta=meta, progress=watch(path)))
                    except TracedbError as exc:
                        failed(path, str(exc))

                parallel.load_files(con, files, jobs=workers, replace=replace, meta=meta, progress=progress,
                                    landed=landed, failed=failed, alone=alone)
                done.in_order(files)
        except BaseException as exc:
            if is_interrupt(exc):
                _raise_if_committed(con, first_new_id, in_progress, stored_rules)
            raise
        for outcome in repeated:
            landed(outcome)
        return done

    def refresh(self) -> int:
        """Re-derive every trace (after editing rules by hand), in one transaction; the trace count."""
        from . import facts

        return facts.refresh(self._writable("re-derive traces"))

    def remove(self, *names: str) -> list[str]:
        """Remove traces (by name or "#ID") and all their rows, in one transaction."""
        from .ingest.loader import delete_trace

        con = self._writable("remove traces")
        found = [tracemod.find(con, name) for name in names]
        with store.transaction(con, "cannot remove traces"):
            for trace_id, _ in found:
                delete_trace(con, trace_id)
        return [name for _, name in found]

    def export(self, directory: str | Path, traces: Iterable[str] | None = None):
        """Write traces as Parquet (tracedb export); returns what was written."""
        from . import exchange

        return exchange.export(self.con, Path(directory), list(traces) if traces is not None else None)

    def export_perfetto(self, path: str | Path, trace: str, *, step: int | None = None, phase: str | None = None,
                        min_gap_us: float = 20):
        """Write a window of one trace (a step, the steps of a phase, or all of it) as a Chrome-trace
        JSON file for Perfetto UI, with tracedb's steps, layers, idle gaps and why findings on tracks
        of their own (tracedb export --perfetto); returns what was written."""
        from . import perfetto

        if step is not None and phase is not None:
            raise TracedbError("--step and --phase each choose the window: give one")
        out = Path(path)
        try:
            atomic.output_kind(out)
        except OSError as exc:
            raise TracedbError(f"{out}: {exc.strerror}") from None
        if self.path is not None and out.exists() and Path(self.path).exists() and os.path.samefile(out, self.path):
            raise TracedbError(f"{out}: is the database itself; choose another output file")
        with self._reading():
            return perfetto.export(self.con, trace, out, step=step, phase=phase, min_gap_us=min_gap_us)


def given_once(paths: list[Path], name: str | None) -> tuple[list[Path], list["LoadOutcome"]]:
    """The files of a load, each once, and an outcome "skipped" for each file given again (the same
    file by any path), landed after the others."""
    from .ingest.loader import LoadOutcome, default_name

    seen: set = set()
    once, repeated = [], []
    for path in paths:
        try:
            key = path.resolve()
        except (OSError, RuntimeError):  # a path resolve() cannot follow: the load names its problem
            key = path
        if key in seen:
            repeated.append(LoadOutcome(path, name or default_name(path), "skipped",
                                        note="given twice in this load: loaded once"))
            continue
        seen.add(key)
        once.append(path)
    return once, repeated


def connect(path: str | Path | None = None, *, read_only: bool = True, wait: float = 0.0,
            create: bool = True, storage: str | None = None, files: bool = False) -> Database:
    """Open a tracedb file: read-only unless read_only=False (which also creates a missing file,
    unless create=False). wait: seconds to keep trying while another process holds the file.
    storage: the DuckDB storage version of a file created now (default: tracedb.db.STORAGE_VERSION).

    A read-only connection runs in the sandbox of `tracedb sql`: the SQL given to it reads the
    database and nothing else (no COPY ... TO, EXPORT DATABASE, ATTACH, read_csv, no setting
    changed; its queries run in memory). files=True opens a read-only connection without it, for
    SQL that reads or writes files of its own; read_only=False is the writable connection."""
    return Database(path, read_only=read_only, wait=wait, create=create, storage=storage, files=files)


def state(path: str | Path | None = None) -> tuple:
    """A value that changes whenever what a reader of the database or lake at path sees changes (a
    load, a replace, a removal, a rule added): a key for caching what was read from it, without
    opening it. Equal values, the same content; a file copied back over itself, or changed in the
    last two seconds (within a tick of its timestamps), counts as changed."""
    from . import lake

    path = Path(path or dbmod.default_path())
    return lake.state(path) if lake.is_lake(path) else dbmod.state(path)


def load_lake(lake: str | Path, paths: Iterable[str | Path], *, name: str | None = None, replace: bool = False,
              meta: dict[str, str] | None = None, op_mapping: str | Path | None = None, jobs: int | None = None,
              scheduler: str | None = None, progress: Callable[[Path, str, int, int], None] | None = None,
              on_outcome: Callable[[LoadOutcome], None] | None = None,
              on_error: Callable[[Path, str], None] | None = None) -> "Loaded":
    """What `tracedb load FILES --lake DIR` does: add each trace file to a trace lake (a directory
    of Parquet, tracedb.lake) as a partition of its own, locking only its name while it commits:
    other loads may write to the lake meanwhile and readers (tracedb.connect(DIR)) see whole traces only. jobs: worker
    processes (default: the cores); scheduler: the address of a Dask scheduler to run one task
    per file on instead. A file that fails is a failure in the returned Loaded; the others land."""
    from . import fanout, parallel
    from . import lake as lakemod
    from .ingest.readers import OP_MAPPING

    lake = Path(lake)
    paths = [Path(p) for p in paths]
    check_load_args(paths, name)
    meta = dict(meta or {})
    done = Loaded([], [], on_outcome, on_error)
    given = paths
    paths, repeated = given_once(given, name)
    jobs = parallel.workers(jobs, paths)
    before = snapshot.state(lake)
    try:
        if op_mapping is not None:
            try:
                mapped = lakemod.add(op_mapping, lake, replace=replace, kind=OP_MAPPING)
            except TracedbError as exc:
                raise TracedbError(f"--op-mapping: {exc}") from None
            done.landed(mapped)
            meta["op_mapping"] = mapped.name
        fanout.load(lake, paths, name=name, replace=replace, meta=meta, jobs=jobs, scheduler=scheduler,
                    progress=progress, landed=done.landed, failed=done.failed)
    except BaseException as exc:
        if is_interrupt(exc):
            try:  # what the interrupted loads left, should their own settling have been cut short
                lakemod.recover(lake, mine=scheduler is None)
            except BaseException:  # a second Ctrl-C: the next writer or reader recovers the rest
                pass
            ours = [(p, name) for p in paths] + ([(Path(op_mapping), None)] if op_mapping is not None else [])
            _raise_if_lake_committed(lake, before, ours)
        raise
    for outcome in repeated:
        done.landed(outcome)
    done.in_order(given)
    return done


def check_load_args(paths: Sequence[Path], name: str | None) -> None:
    """A TracedbError when the arguments of a load contradict each other (checked before a
    database is created for it)."""
    if name is not None and len(paths) > 1:
        raise TracedbError("--name applies to one file; load the files one at a time to name them")


def check_something_to_load(paths: Sequence[Path]) -> None:
    """A TracedbError naming every file when none of them exists: a command that would create a
    database or a lake for the load checks this first (a mistyped argument would leave one
    behind)."""
    if paths and all(_missing(p) for p in paths):
        raise TracedbError("; ".join(f"{p}: no such file" for p in paths))


def _missing(path: Path) -> bool:
    try:
        Path(path).stat()
    except FileNotFoundError:
        return True
    except OSError:  # there, but not ours to read: the load says why
        return False
    return False


@dataclass
class Loaded:
    """What a load of several files did: an outcome per trace, and the files that failed."""

    outcomes: list[LoadOutcome]
    failures: list[tuple[Path, str]]  # (file, why)
    on_outcome: Callable[[LoadOutcome], None] | None = field(default=None, repr=False, compare=False)
    on_error: Callable[[Path, str], None] | None = field(default=None, repr=False, compare=False)

    def landed(self, outcome: LoadOutcome) -> None:
        self.outcomes.append(outcome)
        if self.on_outcome:
            self.on_outcome(outcome)

    def failed(self, path: Path, why: str) -> None:
        self.failures.append((path, why))
        if self.on_error:
            self.on_error(path, why)

    def in_order(self, paths: list[Path]) -> None:
        """Outcomes and failures in the order the files were given (they land as each is done);
        those of other paths (an op mapping, an export's traces) first."""
        position: dict[Path, int] = {}
        for i, path in enumerate(paths):
            position.setdefault(path, i)  # a file given twice: its place is its first
        self.outcomes.sort(key=lambda o: position.get(o.path, -1))
        self.failures.sort(key=lambda f: position.get(f[0], -1))

    def result(self) -> Result:
        """The summary `tracedb load` prints."""
        columns = ["name", "status", "trace_id", "platform", "events", "rejected", "complete", "seconds",
                   "events_per_s"]
        rows = [(o.name, o.status, o.trace_id, o.platform, o.events, o.rejected, o.complete, round(o.seconds, 2),
                 int(o.events / o.seconds) if o.seconds else None) for o in self.outcomes]
        return Result(columns, rows, title="Loaded")


def _raise_if_committed(con: duckdb.DuckDBPyConnection, first_id: int, in_progress: Path | None,
                        rules_source: str | None) -> None:
    """After Ctrl-C: when a load committed anything before it (traces with an id from first_id
    on, a rules file), say what, and whether the trace file in progress was loaded (a Ctrl-C can
    land as its commit returns); else the interrupt goes on, and the command line says the
    database is unchanged."""
    try:
        rows = con.execute("SELECT name, source_path FROM traces WHERE trace_id >= ? ORDER BY trace_id",
                           [first_id]).fetchall()
    except duckdb.Error:
        rows = []
    done = [f"rules {rules_source!r} stored"] if rules_source else []
    if rows:
        done.append(f"loaded: {', '.join(r[0] for r in rows)}")
    if not done:
        return
    lost = in_progress is not None and str(in_progress.resolve()) not in {r[1] for r in rows}
    rest = " (the file in progress was not loaded)" if lost else ""
    raise Interrupted(f"interrupted; {'; '.join(done)}{rest}") from None


def _raise_if_lake_committed(lake: Path, before: dict, files: list[tuple[Path, str | None]]) -> None:
    """After Ctrl-C or SIGTERM in a lake load: when traces of its files were committed (their
    workers commit on their own), say which were added and which replaced; else that the lake is
    unchanged."""
    from . import lake as lakemod
    from .ingest.loader import default_name

    ours = {lakemod.folder_of(name or default_name(p)) for p, name in files}
    after = snapshot.state(lake)
    added = [f for f in after if f in ours and f not in before]
    replaced = [f for f in after if f in ours and f in before and not snapshot.same_version(after[f], before[f])]
    if not added and not replaced:
        raise Interrupted("interrupted, lake unchanged") from None
    said = lambda folders: ", ".join(unquote(f[len("trace="):]) for f in folders)  # noqa: E731
    parts = ([f"loaded: {said(added)}"] if added else []) + ([f"replaced: {said(replaced)}"] if replaced else [])
    raise Interrupted(f"interrupted; {'; '.join(parts)} (the other files were not loaded)") from None


def reports_available() -> dict[str, reportmod.Report]:
    """Every report, by name, with its parameters and sections."""
    return reportmod.available()
