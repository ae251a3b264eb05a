"""Files and directories that appear whole or not at all: written beside their target under a
temporary name, then renamed into place (a rename within a directory is atomic). A reader, or a
command interrupted half way, never sees half a report, half a database or half an export.

    with atomic.replacing(path) as out:     # a file, replacing one that is there
    with atomic.output(path) as out:        # a command's output file (the rule below)
        out.write(text)
    atomic.create(path, fill)               # a new file, never over one another process made
    atomic.link_new(written, path)          # the same, of a file written elsewhere on its file system
    with atomic.directory(path) as tmp:     # a new directory, filled, then renamed into place
        ...
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import threading
from pathlib import Path
from typing import IO, Callable, Iterator


def _beside(path: Path, tag: str) -> Path:
    # the process and thread ids keep two writers of one target apart (the threads of a Dask worker
    # included); a leftover of a killed process of the same ids is stale and overwritten
    return path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.{tag}")


@contextlib.contextmanager
def replacing(path: Path, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """A file open for writing whose content replaces path when the block ends without error."""
    path = Path(path)
    partial = _beside(path, "partial")
    replaced = False
    try:
        with open(partial, mode, encoding=None if "b" in mode else encoding) as out:
            yield out
        os.replace(partial, path)
        replaced = True
    finally:
        if not replaced:  # renamed into place, the partial file is gone already
            partial.unlink(missing_ok=True)


class NotAFile(OSError):
    """An output path that names something a command must not write or replace."""


def output_kind(path: Path) -> str:
    """How a command's output reaches path, following symbolic links:
    'new' (nothing there) or 'file' (a regular file): written beside it and renamed into place,
    so that it appears whole or not at all;
    'stream' (a character device such as /dev/stdout or /dev/null, or a pipe such as bash's
    >(...)): written in place, never replaced, since renaming over it would replace the node
    itself (a machine's /dev/full with a JSON file);
    anything else (a directory, a block device, a socket) raises NotAFile."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        if os.path.islink(path):  # a dangling link: writing would create its target elsewhere
            raise NotAFile(errno.ENOENT, "is a symbolic link to nothing") from None
        return "new"
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        return "stream"
    what = ("a directory" if stat.S_ISDIR(mode) else "a block device" if stat.S_ISBLK(mode)
            else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")
    raise NotAFile(errno.EINVAL, f"is {what}; give a file name")


@contextlib.contextmanager
def output(path: Path, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """A command's output file, by the rule of output_kind: a regular file or a new path is
    replaced whole when the block ends without error; a character device or a pipe is written in
    place. A pipe nobody reads raises NotAFile at once rather than wait for a reader."""
    path = Path(path)
    kind = output_kind(path)
    if kind == "stream":
        try:  # a pipe with no reader fails at once (ENXIO) opened without blocking
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:
            if exc.errno == errno.ENXIO:
                raise NotAFile(errno.ENXIO, "is a pipe nobody reads") from None
            raise
        os.set_blocking(fd, True)
        with open(fd, mode, encoding=None if "b" in mode else encoding) as out:
            yield out
        return
    target = Path(os.path.realpath(path)) if path.is_symlink() else path  # a link keeps pointing at its file
    with replacing(target, mode, encoding) as out:
        yield out
        if output_kind(target) == "stream":  # swapped for a device while it was being written
            raise NotAFile(errno.EINVAL, "became a device or pipe while it was written")


def create(path: Path, fill: Callable[[IO[bytes]], None]) -> bool:
    """Write a new file at path with fill(out); False, leaving it alone, when a file is there
    already (another process created it first). OSError when the directory cannot be written."""
    path = Path(path)
    partial = _beside(path, "new")
    try:
        with open(partial, "wb") as out:
            fill(out)
        return link_new(partial, path)
    finally:
        partial.unlink(missing_ok=True)


def link_new(source: Path, path: Path) -> bool:
    """Give path source's content unless a file is there (False, leaving it alone): a hard link,
    atomic, which fails rather than replace a file that appeared; where the file system has no
    hard links, an exclusive create then a copy (seen empty for a moment)."""
    try:
        os.link(source, path)
        return True
    except FileExistsError:
        return False
    except OSError:
        pass
    try:
        with open(path, "xb") as out, open(source, "rb") as f:
            shutil.copyfileobj(f, out, 1 << 20)
    except FileExistsError:
        return False
    return True


@contextlib.contextmanager
def directory(path: Path) -> Iterator[Path]:
    """A temporary directory beside path, renamed to path when the block ends without error.
    path must not exist, or be an empty directory (it is replaced)."""
    target = Path(path).resolve()
    partial = _beside(target, "partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    try:
        yield partial
        if target.exists():
            target.rmdir()  # empty, or the rename below could not take its place anyway
        partial.rename(target)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
