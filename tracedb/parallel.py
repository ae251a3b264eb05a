"""Loading many files at once on one machine: a pool of worker processes builds each file's
partition (tracedb.partition: read, staged, typed and derived in a private database of its own,
one DuckDB thread each, the load's memory limits each), and this process puts each partition into
the database in a transaction of its own, in the order the files were given: trace ids, names and
every row are what a serial load gives. A file that fails is a failure of its own; the others land.

Workers start with "spawn" (a fork would copy this process's open DuckDB database), and without
the caller's main module: a script that loads with tracedb and has no `if __name__ == "__main__"`
guard would otherwise run again in every worker. What a worker reports of its progress comes back
through a queue, read by a thread that hands it to the caller's progress function.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import shutil
import signal
import sys
import types
import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Callable

import duckdb

from . import partition, scratch, store
from .errors import TracedbError
from .ingest.loader import LoadOutcome, check_existing, default_name, delete_trace, precheck

_progress_queue = None  # a worker's end of the progress queue (set by start_worker)


def cores() -> int:
    """Cores this process may run on: those it may be scheduled on, within a container's CPU quota
    (cgroup v2 cpu.max, v1 cpu.cfs_quota_us), not the machine's count."""
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        n = os.cpu_count() or 1
    quota = _cpu_quota()
    return max(1, min(n, quota) if quota else n)


def _cpu_quota() -> int | None:
    """The CPUs a cgroup's quota allows (rounded up), or None without a quota."""
    for path, period_path in (("/sys/fs/cgroup/cpu.max", None),
                              ("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "/sys/fs/cgroup/cpu/cpu.cfs_period_us")):
        try:
            with open(path, encoding="ascii") as f:
                fields = f.read().split()
            if period_path:
                with open(period_path, encoding="ascii") as f:
                    fields.append(f.read().strip())
            quota, period = fields[0], int(fields[1])
            if quota in ("max", "-1"):
                return None
            return max(1, -(-int(quota) // period))
        except (OSError, ValueError, IndexError, ZeroDivisionError):
            continue
    return None


# Below this many bytes of trace files in all, a load runs in this process: a worker costs its
# start (a spawned interpreter importing tracedb and DuckDB, about 0.4 s) and the hand-over of its
# trace (written as Parquet, then inserted by the one writer), more than side by side gains.
PARALLEL_MIN_BYTES = 8 << 20


def workers(jobs: int | None, paths: list[Path] | None = None) -> int:
    """The worker processes of a load: as many as asked (at least one); by default one per free
    core (cores() less the other tasks running now) and file, and one (this process) for a single
    file, for files too small to pay for a worker, or on a machine whose cores are busy: there
    two workers took 10.8-13.5 s for eight real traces that one process loaded in 7.0-7.8."""
    if jobs is not None:
        return max(1, int(jobs))
    paths = list(paths or [])
    if len(paths) < 2 or sum(size_of(p) for p in paths) < PARALLEL_MIN_BYTES:
        return 1
    return max(1, min(free_cores(), len(paths)))


def free_cores() -> int:
    """The cores no other task is running on now: cores() less the runnable tasks but this one
    (/proc/loadavg's fourth field counts them at this moment; elsewhere the one-minute load)."""
    try:
        with open("/proc/loadavg", encoding="ascii") as f:
            others = int(f.read().split()[3].split("/")[0]) - 1
    except (OSError, ValueError, IndexError):
        try:
            others = round(os.getloadavg()[0])
        except (OSError, AttributeError):
            others = 0
    return max(1, cores() - max(0, others))


def start_worker(queue, parent: int) -> None:
    """A worker's start: it dies with the process that started it, and leaves Ctrl-C to it."""
    global _progress_queue
    _progress_queue = queue
    # Ctrl-C reaches the terminal's whole process group: the parent stops the workers itself, so a
    # worker has no KeyboardInterrupt traceback of its own to print
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with(parent)


def _die_with(parent: int) -> None:
    """End this process when parent ends, however it ends (SIGKILL included): on Linux the kernel
    sends SIGKILL (PR_SET_PDEATHSIG); elsewhere a thread watches for the parent's exit."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the parent died before the request
            os._exit(1)
        return

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1)
        os._exit(1)

    threading.Thread(target=watch, name="tracedb-parent-watch", daemon=True).start()


def worker_progress(path: str) -> Callable[[str, int, int], None]:
    """In a worker: the progress function of a file, sending its reports to the pool's caller."""
    def progress(stage: str, read: int, events: int) -> None:
        if _progress_queue is not None:
            _progress_queue.put((path, stage, read, events))

    return progress


def _build(path: str, into: str, name: str | None, meta: dict | None, rules: dict,
           threads: int) -> partition.Partition:
    """A worker's task: one file's partition. Errors come back as one line (a TracedbError)."""
    try:
        return partition.build(path, into, name=name, meta=meta, rules=rules, threads=threads,
                               progress=worker_progress(path))
    except partition.NoRoom as exc:  # no fault of the file: this process loads it itself
        raise WorkerFailed(str(exc)) from None
    except TracedbError as exc:
        message = str(exc)
        if message.startswith(path):
            raise TracedbError(message) from None  # a plain error of one message crosses the process boundary
        # not the file's problem but the worker's (its private database or scratch folder: a full
        # temporary directory, say): this process loads the file itself
        raise WorkerFailed(f"{path}: {message}") from None
    except OSError as exc:
        raise WorkerFailed(f"{path}: {exc.strerror or exc}") from None


class WorkerFailed(TracedbError):
    """A worker could not build a file's partition for a reason of its own, not the file's."""


def load_files(con: duckdb.DuckDBPyConnection, paths: list[Path], *, jobs: int, replace: bool = False,
               meta: dict[str, str] | None = None,
               progress: Callable[[Path, str, int, int], None] | None = None,
               landed: Callable[[LoadOutcome], None], failed: Callable[[Path, str], None],
               alone: Callable[[Path], None] | None = None) -> None:
    """Load trace files with jobs worker processes; landed(outcome) and failed(path, why) are
    called as each file is done; alone(path) loads a file in this process, for those a worker
    failed on for a reason of its own (a full temporary directory: a worker's private database
    lives there, this process's load does not need it), after the others.

    The largest files go first (the pool ends with small ones, not with one large file on one
    core) and each partition is committed as soon as it is built, under the id reserved for it in
    the order the files were given: ids and rows are a serial load's. Two files of one name: the
    later is refused, as a serial load refuses it. Two files of one content under different
    names: the one committed first loads and the other is skipped."""
    rules = partition.user_rules(con)
    jobs = max(1, min(jobs, len(paths)))
    threads = max(1, cores() // jobs)
    context = spawn_context()
    queue = context.SimpleQueue()
    listener = threading.Thread(target=relay, args=(queue, progress), daemon=True)
    listener.start()
    work = scratch.make("load")
    pool = worker_pool(jobs, context, queue)
    try:
        todo, names = [], {}
        for path in paths:
            early = _precheck(con, path, replace, names)
            if isinstance(early, str):
                failed(path, early)
            elif early is not None:
                landed(early)
            else:
                todo.append(path)
        # ids in the order given, taken now (ids are never reused: one a file does not use is gone)
        ids = [r[0] for r in con.execute("SELECT nextval('trace_ids') FROM range(?)", [len(todo)]).fetchall()]
        jobs_of: dict[Future, tuple[Path, int]] = {}
        for i, path in sorted(enumerate(todo), key=lambda item: -size_of(item[1])):
            with without_main_module():  # a submit is where the pool starts a worker
                job = pool.submit(_build, str(path), str(work / str(i)), None, meta, rules, threads)
            jobs_of[job] = (path, ids[i])
        again = []
        for job in as_completed(jobs_of):
            path, trace_id = jobs_of[job]
            if alone is not None and isinstance(job.exception(), WorkerFailed):
                again.append(path)
                continue
            _commit(con, path, job, trace_id, replace, landed, failed)
        for path in sorted(again, key=paths.index):
            alone(path)
    except BaseException:
        stop(pool)  # Ctrl-C, SIGTERM or an error: the files in progress are not waited for
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        end_relay(queue, listener)
        shutil.rmtree(work, ignore_errors=True)


def spawn_context():
    """multiprocessing's spawn context, its resource tracker started with its standard error on
    the null device. The tracker outlives a command killed outright (SIGKILL) until its workers
    are gone, then unlinks the semaphores the command left and says so ("leaked semaphore
    objects"): on the user's terminal, after the prompt came back. What it cleans up is the
    command's own, so that line is the tracker's business, not the user's."""
    from multiprocessing import resource_tracker

    saved, null = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)  # the tracker inherits this process's standard error when it starts
        resource_tracker.ensure_running()
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)
    return multiprocessing.get_context("spawn")


def worker_pool(jobs: int, context, queue) -> ProcessPoolExecutor:
    """A pool of jobs spawned workers that report progress on queue and die with this process."""
    return ProcessPoolExecutor(jobs, mp_context=context, initializer=start_worker, initargs=(queue, os.getpid()))


def stop(pool: ProcessPoolExecutor) -> None:
    """Kill the pool's workers (the executor has no public way to; its process table is stable)."""
    for process in list(getattr(pool, "_processes", {}).values()):
        with contextlib.suppress(Exception):
            process.kill()


def size_of(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


@contextlib.contextmanager
def without_main_module():
    """Workers started in this block do not import the caller's __main__ (spawn re-runs a script's
    top level otherwise); the task they run lives in this module."""
    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        if main is not None:
            sys.modules["__main__"] = main


def _precheck(con: duckdb.DuckDBPyConnection, path: Path, replace: bool,
              names: dict[str, Path]) -> LoadOutcome | str | None:
    """What can be told before a worker reads the file: a skip (same content loaded), or why it
    cannot load (unreadable, a name taken without replace, a name an earlier file of this load
    has); None: build it. names: the names of this load so far (added to)."""
    name = default_name(path)
    try:
        if name in names:
            raise TracedbError(f"{path}: a trace named {name!r} comes from {names[name]} in this load too; "
                               "load one of them with --name")
        skipped = precheck(con, path, name, replace)[2]
    except TracedbError as exc:
        return str(exc)
    if skipped:
        return skipped
    names[name] = path
    return None


def _commit(con: duckdb.DuckDBPyConnection, path: Path, job: Future, trace_id: int, replace: bool,
            landed: Callable[[LoadOutcome], None], failed: Callable[[Path, str], None]) -> None:
    try:
        part: partition.Partition = job.result()
    except TracedbError as exc:
        failed(path, str(exc))
        return
    except BrokenProcessPool:
        failed(path, f"{path}: the worker process loading it died (out of memory?)")
        return
    started = time.perf_counter()
    clash = None
    try:
        outcome = part.outcome
        # checked again: a file of this load committed meanwhile may have the same content
        skipped, clash = check_existing(con, path, outcome.name, part.sha256, replace,
                                        "choose another --name or use --replace")
        if skipped:
            skipped.file_bytes = outcome.file_bytes
            landed(skipped)
            return
        with store.transaction(con, f"{path}: cannot load"):
            if clash:
                delete_trace(con, clash[0])
            partition.insert(con, {t: part.file(t) for t in part.tables}, trace_id)
            con.execute("UPDATE traces SET loaded_at = now()::TIMESTAMP, load_seconds = load_seconds + ? "
                        "WHERE trace_id = ?", [time.perf_counter() - started, trace_id])
    except TracedbError as exc:
        failed(path, str(exc))
        return
    finally:
        partition.remove(part)
    outcome.trace_id, outcome.status = trace_id, "replaced" if clash else "loaded"
    outcome.seconds += time.perf_counter() - started
    landed(outcome)


def end_relay(queue, listener: threading.Thread) -> None:
    """Stop the thread relaying the workers' progress. The end mark goes from a thread of its own:
    a worker killed while writing to the queue holds its lock for good, and the command must end
    all the same (the relay, a daemon, then ends with the process)."""
    threading.Thread(target=queue.put, args=(None,), name="tracedb-relay-end", daemon=True).start()
    listener.join(timeout=5)


def relay(queue, progress: Callable[[Path, str, int, int], None] | None) -> None:
    while True:
        message = queue.get()
        if message is None:
            return
        if progress is not None:
            path, stage, read, events = message
            progress(Path(path), stage, read, events)
