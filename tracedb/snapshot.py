"""What a lake reader reads: the Parquet files of the traces committed when it opened, one whole
version of each, held open so that a replace or a removal afterwards cannot change or take them.

A replace renames a trace's old directories away (its traces directory first), the new ones in
(traces last), then deletes the old files. take() lists the committed traces and notes each one's
identity (the inode and change time of its traces directory, the inode and modification time of
its traces file: renaming the directory changes them), opens every file of the trace, and notes
the identity again. A trace whose identity changed meanwhile is opened again; one no longer
committed is left out (a reader that opens during a replace's renames does not see that trace).
Every file held must then carry its traces file's trace id (the Parquet statistics of trace_id),
or the trace is opened again.

On Linux a reader reads each file it holds through /proc/self/fd/N: a file held open stays
readable after it is renamed or deleted, so a reader gives the traces as it opened them for as
long as it lives. A table's files are closed when its Arrow dataset is collected, which the
connection that registered it keeps until it closes (a file number is never closed while a read
could still open it, which would then reach whatever file took the number). Where there is no
/proc/self/fd, or the process may not hold that many files open, a reader reads by path, and
Snapshot.changed tells its reads whether a trace they read was replaced or removed since.
"""

from __future__ import annotations

import os
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

from .errors import TracedbError

TRIES = 20  # openings of one trace before a reader gives up (each only as long as its renames)
SPARE_FILES = 256  # file numbers left free beside the held ones (pyarrow's reads, DuckDB's own)
_PROC_FD = Path("/proc/self/fd")

Identity = tuple[int, int, int, int]


def identity(lake: Path, folder: str) -> Identity | None:
    """(inode, change time) of a trace's traces directory and (inode, modification time) of its
    traces file; None when the trace is not committed."""
    try:
        directory = os.stat(lake / "traces" / folder)
        file = os.stat(lake / "traces" / folder / "data.parquet")
    except OSError:
        return None
    return directory.st_ino, directory.st_ctime_ns, file.st_ino, file.st_mtime_ns


def committed(lake: Path) -> list[str]:
    """The traces a reader opening now sees: those whose traces file is in place."""
    traces = lake / "traces"
    try:
        entries = os.listdir(traces)
    except OSError:
        return []
    return sorted(d for d in entries if d.startswith("trace=") and (traces / d / "data.parquet").is_file())


def state(lake: Path, folders: list[str] | None = None) -> dict[str, Identity]:
    """The identity of each committed trace (of folders): a replace or a removal changes it."""
    found = {folder: identity(lake, folder) for folder in (committed(lake) if folders is None else folders)}
    return {folder: ident for folder, ident in found.items() if ident is not None}


def same_version(a: Identity | None, b: Identity | None) -> bool:
    """Whether two identities are of one version of a trace: its traces file the same (its
    directory renamed away and back, a replace undone, changes the directory's time only)."""
    return a is not None and b is not None and a[2:] == b[2:]


def changed(lake: Path, opened: dict[str, Identity]) -> list[str]:
    """The names of the traces of opened (a state) that a load replaced or removed since."""
    now = state(lake, list(opened))
    return [unquote(folder[len("trace="):]) for folder, seen in opened.items() if now.get(folder) != seen]


@dataclass
class File:
    folder: str
    path: str  # what pyarrow opens: /proc/self/fd/N of the held file, or the file's path
    schema: object  # pyarrow.Schema
    trace_ids: set | None  # the trace ids its statistics give; None when they give none
    fd: int | None = None


@dataclass
class Snapshot:
    """The files of a lake's traces as a reader opened them (take)."""

    lake: Path
    pinned: bool  # the files are held open (see the module docstring)
    state: dict[str, Identity] = field(default_factory=dict)
    files: dict[str, list[File]] = field(default_factory=dict)  # table -> its files, by trace

    def changed(self) -> list[str]:
        """The traces a read of this snapshot may not give as opened: none when pinned."""
        return [] if self.pinned else changed(self.lake, self.state)

    def dataset(self, table: str):
        """The files of table as one Arrow dataset, which holds them open until it is collected;
        files written by an older tracedb read NULL for the columns they lack."""
        import pyarrow as pa
        import pyarrow.dataset as ds

        files = self.files.pop(table)
        schemas = [f.schema for f in files]
        try:
            schema = schemas[0] if all(s.equals(schemas[0]) for s in schemas) else \
                pa.unify_schemas(schemas, promote_options="permissive")
            dataset = ds.dataset([f.path for f in files], schema=schema, format="parquet")
        except (OSError, pa.ArrowException) as exc:  # partitions of one table that do not agree
            _close(files)
            raise TracedbError(f"{self.lake}: cannot read the lake: {' '.join(str(exc).split())[:300]}") from None
        # not at the interpreter's exit, when the connection may still read them (a file number
        # closed then could be reached by a read meant for this file)
        weakref.finalize(dataset, _close, files).atexit = False
        return dataset

    def close(self) -> None:
        """Close the files not handed to a dataset."""
        for files in self.files.values():
            _close(files)
        self.files.clear()

    def _open(self, folders: list[str], tables: list[str]) -> list[str]:
        """Open the files of the traces of folders; returns those to open again."""
        before = {folder: identity(self.lake, folder) for folder in folders}
        folders = [folder for folder in folders if before[folder] is not None]  # since gone: not seen
        present = {table: _entries(self.lake / table) for table in tables}
        wanted = [(table, folder) for folder in folders for table in tables if folder in present[table]]
        if self.pinned and not self.state:  # the first opening: room for every file, or read by path
            self.pinned = _room_for(len(wanted))
        opened: dict[str, list[tuple[str, File]]] = {folder: [] for folder in folders}
        again = set()
        try:
            for table, folder in wanted:
                file = self._file(folder, self.lake / table / folder / "data.parquet")
                if file is None:
                    again.add(folder)  # moved away since it was listed
                else:
                    opened[folder].append((table, file))
        except BaseException:  # a file that is no Parquet, Ctrl-C: none of these stays open
            for files in opened.values():
                _close([f for _, f in files])
            raise
        for folder in folders:
            files = opened[folder]
            if folder in again or identity(self.lake, folder) != before[folder] or not _one_version(files):
                again.add(folder)
                _close([f for _, f in files])
                continue
            self.state[folder] = before[folder]
            for table, file in files:
                self.files.setdefault(table, []).append(file)
        return [folder for folder in folders if folder in again]

    def _file(self, folder: str, path: Path) -> File | None:
        """One file opened and its footer read, or None when it is no longer there."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        fd = None
        try:
            if self.pinned:
                fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
                where = f"{_PROC_FD}/{fd}"
            else:
                where = str(path)
            metadata = pq.read_metadata(where)
            return File(folder, where, metadata.schema.to_arrow_schema(), _trace_ids(metadata), fd)
        except FileNotFoundError:
            _close_fd(fd)
            return None
        except (OSError, pa.ArrowException) as exc:  # a partition that is not Parquet, or not one of ours
            _close_fd(fd)
            if not path.exists():
                return None
            raise TracedbError(f"{path}: cannot read the lake: {' '.join(str(exc).split())[:300]}") from None
        except BaseException:
            _close_fd(fd)
            raise


def take(lake: Path, tables: list[str], *, pin: bool = True) -> Snapshot:
    """The files of tables of the traces committed in lake now, each trace one whole version."""
    snap = Snapshot(lake, pinned=pin and _PROC_FD.is_dir())
    pending = committed(lake)
    try:
        for _ in range(TRIES):
            if not pending:
                break
            pending = snap._open(pending, tables)
        else:
            names = ", ".join(repr(unquote(f[len("trace="):])) for f in pending[:3])
            raise TracedbError(f"{lake}: trace{'s' if len(pending) > 1 else ''} {names} changed {TRIES} times while it was being opened: "
                               "open the lake again")
    except BaseException:
        snap.close()
        raise
    for files in snap.files.values():
        files.sort(key=lambda f: f.folder)
    return snap


def _one_version(files: list[tuple[str, File]]) -> bool:
    """Whether every file of a trace carries its traces file's trace id (a file whose statistics
    give none is not held against it)."""
    traces = next((f for table, f in files if table == "traces"), None)
    if traces is None:
        return False  # its traces file went since it was listed: opened again
    if traces.trace_ids is None or len(traces.trace_ids) != 1:
        return True
    return all(f.trace_ids is None or f.trace_ids == traces.trace_ids for _, f in files)


def _trace_ids(metadata) -> set | None:
    """The trace ids the statistics of a Parquet file's trace_id column give, or None."""
    names = [metadata.schema.column(i).name for i in range(metadata.num_columns)]
    if "trace_id" not in names:
        return None
    column = names.index("trace_id")
    ids = set()
    for group in range(metadata.num_row_groups):
        stats = metadata.row_group(group).column(column).statistics
        if stats is None or not stats.has_min_max:
            return None
        ids.update({stats.min, stats.max})
    return ids


def _entries(directory: Path) -> set[str]:
    try:
        return set(os.listdir(directory))
    except OSError:
        return set()


def _room_for(count: int) -> bool:
    """Whether this process may hold count more files open, raising its soft limit if need be."""
    try:
        import resource
    except ImportError:
        return False
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        need = len(os.listdir(_PROC_FD)) + count + SPARE_FILES
    except OSError:
        return False
    if soft == resource.RLIM_INFINITY or need <= soft:
        return True
    if hard != resource.RLIM_INFINITY and need > hard:
        return False
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))
    except (ValueError, OSError):
        return False
    return True


def _close(files: list[File]) -> None:
    for f in files:
        _close_fd(f.fd)
        f.fd = None


def _close_fd(fd: int | None) -> None:
    if fd is not None:
        try:
            os.close(fd)
        except OSError:
            pass
