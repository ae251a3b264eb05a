"""Files and directories that appear whole or not at all: written beside their target under a
temporary name, then renamed into place (a rename within a directory is atomic). A reader, or a
command interrupted half way, never sees half a report, half a database or half an export.

    with atomic.replacing(path) as out:     # a file, replacing one that is there
        out.write(text)
    atomic.create(path, fill)               # a new file, never over one another process made
    atomic.link_new(written, path)          # the same, of a file written elsewhere on its file system
    with atomic.directory(path) as tmp:     # a new directory, filled, then renamed into place
        ...
"""

from __future__ import annotations

import contextlib
import os
import shutil
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
    try:
        with open(partial, mode, encoding=None if "b" in mode else encoding) as out:
            yield out
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


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
