"""Scratch folders in the temporary directory, named for the process that owns them.

Every folder tracedb writes outside the database or lake it works on (the segment files of a load,
the partitions of a parallel load, a worker's spill files, a lake reader's database) is made here,
as tracedb-<kind>-<pid>-<where>-<random>, where is a digest of the host and the PID namespace. Its
owner removes it when done; one whose owner was killed (SIGKILL, a crash, the machine's
out-of-memory killer) is removed by the next tracedb command that opens a database or a lake
(remove_dead), never while the owner lives: the pid in the name says whose it is, a folder made on
another host or in another container (a shared temporary directory) is left alone, and so is one
of a live process or of one this process cannot see.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import shutil
import socket
import tempfile
from pathlib import Path
from typing import Iterator

_NAME = re.compile(r"^tracedb-[a-z]+-(\d+)-([0-9a-f]{8})-")


@functools.cache
def where() -> str:
    """This host and PID namespace, in 8 hex digits: a pid means a process only within them."""
    try:
        namespace = str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        namespace = ""
    return hashlib.sha256(f"{socket.gethostname()}/{namespace}".encode()).hexdigest()[:8]


def make(kind: str) -> Path:
    """A new folder of this process (kind: a lower-case word saying what it holds)."""
    return Path(tempfile.mkdtemp(prefix=f"tracedb-{kind}-{os.getpid()}-{where()}-"))


@contextlib.contextmanager
def folder(kind: str) -> Iterator[Path]:
    """A new folder of this process, removed when the block ends, however it ends."""
    path = make(kind)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def remove_dead() -> list[Path]:
    """Remove the folders of tracedb processes that no longer run; returns them."""
    removed = []
    try:
        entries = list(os.scandir(tempfile.gettempdir()))
    except OSError:
        return removed
    for entry in entries:
        found = _NAME.match(entry.name)
        if found is None or not entry.is_dir(follow_symlinks=False) or not dead(int(found.group(1)), found.group(2)):
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        removed.append(Path(entry.path))
    return removed


def dead(pid: int, made_where: str) -> bool:
    """Whether process pid, of the host and PID namespace made_where (a where()), has ended: known
    only here (elsewhere a pid names another process or none)."""
    return made_where == where() and not alive(pid)


def alive(pid: int) -> bool:
    """Whether process pid of this machine may still run (True when it cannot be told)."""
    if pid == os.getpid() or os.name != "posix":  # elsewhere os.kill(pid, 0) is no question
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # another user's process, or one this process may not ask about: left alone
    return True
