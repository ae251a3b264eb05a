"""Loading many files into a trace lake: one task per file, tracedb.lake.add (a path in, a
partition out), run here one after the other, in a pool of worker processes (jobs), or on a Dask
distributed cluster (scheduler). Each task writes its partition into the lake itself: nothing
is committed centrally, so the files land as their tasks finish, and a file that fails is a
failure of its own while the others land.

On Dask the trace files and the lake must be at the same paths on every worker (a shared file
system or a bucket mounted alike), and the workers need tracedb (pip install tracedb[dask]).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import uuid
from concurrent.futures import as_completed
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Callable

from . import lake as lakemod
from .errors import TracedbError
from .ingest.loader import LoadOutcome, default_name
from .parallel import (cores, end_relay, relay, size_of, spawn_context, stop, without_main_module, worker_pool,
                       worker_progress)

Landed = Callable[[LoadOutcome], None]
Failed = Callable[[Path, str], None]


def task(path: str, lake: str, name: str | None = None, replace: bool = False, meta: dict | None = None,
         threads: int = 1, progress=None, run: str | None = None) -> LoadOutcome:
    """The task of one file, for any engine: tracedb.lake.add, its error a plain one-line
    TracedbError (an error of our own with extra fields may not cross a process boundary)."""
    try:
        return lakemod.add(path, lake, name=name, replace=replace, meta=meta, threads=threads, progress=progress,
                           run=run)
    except TracedbError as exc:
        raise TracedbError(str(exc)) from None


def _pool_task(path: str, lake: str, replace: bool, meta: dict | None, threads: int) -> LoadOutcome:
    return task(path, lake, None, replace, meta, threads, worker_progress(path))


def load(lake: Path, paths: list[Path], *, name: str | None = None, replace: bool = False,
         meta: dict[str, str] | None = None, jobs: int = 1, scheduler: str | None = None,
         progress: Callable[[Path, str, int, int], None] | None = None, landed: Landed, failed: Failed) -> None:
    """Add each file to the lake: landed(outcome) or failed(path, why) as each is done."""
    lakemod.create(lake)  # a lake that cannot be written is one error, before any task
    todo = _distinct_names(paths, name, failed)
    if scheduler:
        _on_dask(scheduler, lake, todo, replace, meta, landed, failed)
    elif jobs > 1 and len(todo) > 1:
        _on_pool(lake, todo, jobs, replace, meta, progress, landed, failed)
    else:
        for path in todo:
            watch = (lambda stage, read, events, path=path: progress(path, stage, read, events)) if progress else None
            try:
                landed(task(str(path), str(lake), name, replace, meta, cores(), watch))
            except TracedbError as exc:
                failed(path, str(exc))


def _distinct_names(paths: list[Path], name: str | None, failed: Failed) -> list[Path]:
    """The files to run, each name once: two tasks writing one name at once would mix their
    partitions, so the later file of a name is refused here."""
    seen: dict[str, Path] = {}
    todo = []
    for path in paths:
        trace = name if name is not None else default_name(path)
        if trace in seen:
            failed(path, f"{path}: a trace named {trace!r} comes from {seen[trace]} in this load too; "
                         "load one of them with --name")
            continue
        seen[trace] = path
        todo.append(path)
    return todo


def _on_pool(lake: Path, paths: list[Path], jobs: int, replace: bool, meta: dict | None,
             progress, landed: Landed, failed: Failed) -> None:
    jobs = min(jobs, len(paths))
    context = spawn_context()
    queue = context.SimpleQueue()
    listener = threading.Thread(target=relay, args=(queue, progress), daemon=True)
    listener.start()
    pool = worker_pool(jobs, context, queue)
    try:
        jobs_of = {}
        for path in sorted(paths, key=lambda p: -size_of(p)):  # the largest first
            with without_main_module():
                jobs_of[pool.submit(_pool_task, str(path), str(lake), replace, meta,
                                    max(1, cores() // jobs))] = path
        _land(jobs_of, as_completed(jobs_of), BrokenProcessPool,
              lambda exc: "the worker process loading it died (out of memory?)", landed, failed)
    except BaseException:
        stop(pool)  # Ctrl-C, SIGTERM or an error: the files in progress are not waited for
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        end_relay(queue, listener)


SCHEDULER_TIMEOUT = 20  # seconds to reach a Dask scheduler


def _check_reachable(scheduler: str) -> None:
    """One line at once when nothing listens at a tcp:// or tls:// scheduler's address (Dask's
    client would try again until its timeout): a plain connection to the host and port, which a
    closed port refuses straight away."""
    import socket
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(scheduler if "://" in scheduler else f"tcp://{scheduler}")
        host, port = parts.hostname, parts.port
    except ValueError:
        return  # Dask says what is wrong with it
    if parts.scheme not in ("tcp", "tls") or not host or not port:
        return
    try:
        socket.create_connection((host, port), timeout=SCHEDULER_TIMEOUT).close()
    except OSError as exc:
        raise TracedbError(f"cannot reach the Dask scheduler {scheduler}: {exc.strerror or exc}") from None


def _on_dask(scheduler: str, lake: Path, paths: list[Path], replace: bool, meta: dict | None,
             landed: Landed, failed: Failed) -> None:
    try:
        import distributed
        from distributed import Client, as_completed as dask_completed
    except ImportError:
        raise TracedbError("--scheduler needs Dask: pip install 'tracedb[dask]'") from None
    _check_reachable(scheduler)
    try:
        client = Client(scheduler, timeout=f"{SCHEDULER_TIMEOUT}s")
    except (OSError, TimeoutError, ValueError) as exc:
        raise TracedbError(f"cannot reach the Dask scheduler {scheduler}: {' '.join(str(exc).split())[:200]}") \
            from None
    # the client logs its attempts to reconnect to a scheduler that died, tracebacks and all: what
    # became of each file is said below, one line each
    quiet = [logging.getLogger(n) for n in ("distributed", "distributed.client", "distributed.core")]
    levels = [log.level for log in quiet]
    for log in quiet:
        log.setLevel(logging.CRITICAL + 1)
    lost: list[Path] = []
    token = None
    try:
        # the tasks commit while this load stands by them: a worker outliving its scheduler finishes
        # the task it runs, and would otherwise put a trace in the lake after the lake was looked at
        token = lakemod.open_run(lake)
        # one plain task per file; pure=False: a file loaded again is a new task, not a cached result
        run = uuid.uuid4().hex[:8]
        futures = {client.submit(task, str(Path(p).resolve()), str(lake.resolve()), replace=replace, meta=meta,
                                 run=str(token.resolve()), pure=False,
                                 key=f"tracedb-load-{run}-{i}-{Path(p).name}"): Path(p)
                   for i, p in enumerate(paths)}
        # a worker lost, a task killed: the file fails, the others go on; the scheduler gone: what
        # the lake holds of the files not heard of is looked up after
        heard: set[Path] = set()
        try:
            for future in dask_completed(futures):
                path = futures[future]
                heard.add(path)
                try:
                    landed(future.result())
                except TracedbError as exc:
                    failed(path, str(exc))
                except Exception as exc:
                    if _scheduler_gone(exc, distributed):
                        lost.append(path)
                    else:
                        failed(path, f"{path}: the Dask task failed: {type(exc).__name__}: "
                                     f"{' '.join(str(exc).split())[:200]}")
        except Exception as exc:  # the iteration itself lost the scheduler
            if not _scheduler_gone(exc, distributed):
                raise
        lost += [p for p in futures.values() if p not in heard]
    finally:
        try:
            if token is not None:
                lakemod.end_run(token)  # no task of this load commits from here on
        finally:
            with contextlib.suppress(Exception):
                client.close(timeout=2)
            for log, level in zip(quiet, levels):
                log.setLevel(level)
    for path in lost:
        _after_the_scheduler(lake, path, landed, failed)


def _scheduler_gone(exc: BaseException, distributed) -> bool:
    """The client lost its scheduler (it died, or the network to it): the task's fate is unknown."""
    from distributed.client import FutureCancelledError

    text = str(exc)  # (a task's own OSError is the task's failure, said as such)
    return (isinstance(exc, distributed.comm.CommClosedError)
            or (isinstance(exc, FutureCancelledError) and "scheduler" in text)
            or "scheduler-connection-lost" in text)


def _after_the_scheduler(lake: Path, path: Path, landed: Landed, failed: Failed) -> None:
    """A file whose task the client lost with its scheduler: loaded when the lake holds a trace of
    its name and content (its task committed it before the scheduler died), else one line."""
    import pyarrow.parquet as pq

    from .ingest.source import sha256_of

    name = default_name(path)
    file = lake / "traces" / lakemod.folder_of(name) / "data.parquet"
    try:
        rows = pq.read_table(file).to_pylist() if file.is_file() else []
        digest = sha256_of(path) if rows else None
    except (OSError, ValueError):
        rows, digest = [], None
    row = next((r for r in rows if r.get("sha256") == digest), None)
    if row is None:
        failed(path, f"{path}: not loaded: the Dask scheduler went away before its task finished")
        return
    landed(LoadOutcome(path, name, "loaded", row["trace_id"], row["event_count"] or 0, row["rejected_count"] or 0,
                       bool(row["complete"]), row["problem"], row["platform"], row["load_seconds"] or 0.0,
                       row["file_bytes"] or 0))


def _land(files_of: dict, completed, lost: type[BaseException], why: Callable[[BaseException], str],
          landed: Landed, failed: Failed) -> None:
    """Each task's outcome as it finishes: landed(outcome), or failed(path, ...) with the task's own
    error, or why(exc) when the engine lost the task (an exception of type lost)."""
    for future in completed:
        path = files_of[future]
        try:
            landed(future.result())
        except TracedbError as exc:
            failed(path, str(exc))
        except lost as exc:
            failed(path, f"{path}: {why(exc)}")
