"""Opening a trace file: checks, gzip detection by magic bytes, progress counting, hashing."""

from __future__ import annotations

import gzip
import hashlib
import io
import zlib
from pathlib import Path

from ..errors import BadTraceFile

GZIP_MAGIC = b"\x1f\x8b"


def check_file(path: Path) -> int:
    """Raise BadTraceFile unless path is a readable, non-empty regular file; return its size."""
    if not path.exists():
        raise BadTraceFile(path, "no such file")
    if path.is_dir():
        raise BadTraceFile(path, "is a directory, not a trace file")
    if not path.is_file():
        raise BadTraceFile(path, "not a regular file")
    try:
        size = path.stat().st_size
        with open(path, "rb"):
            pass
    except OSError as exc:
        raise BadTraceFile(path, f"cannot read: {exc.strerror or exc}") from None
    if size == 0:
        raise BadTraceFile(path, "empty file")
    return size


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def is_gzip(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == GZIP_MAGIC


class CountingFile(io.RawIOBase):
    """A read-only file that counts the bytes read from disk (for progress bars)."""

    def __init__(self, raw):
        self._raw = raw
        self.bytes_read = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        n = self._raw.readinto(buffer)
        self.bytes_read += n or 0
        return n

    def close(self) -> None:
        self._raw.close()
        super().close()


class TraceStream(io.RawIOBase):
    """The decompressed bytes of a trace file, read in chunks.

    Tracks the offset of the decompressed stream (for error positions) and hands every chunk
    to an optional observer (the metadata capture), and turns gzip/zlib errors into BadTraceFile
    or, once data has been read, into a truncation the caller can handle.
    """

    def __init__(self, path: Path):
        self.path = path
        self.disk = CountingFile(open(path, "rb"))
        self.compressed = is_gzip(path)
        self._inner = gzip.GzipFile(fileobj=self.disk, mode="rb") if self.compressed else self.disk
        self.offset = 0
        self.observer = None
        self.read_error: str | None = None

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        if self.read_error or size == 0:
            return b""
        try:
            chunk = self._inner.read(size if size and size > 0 else 1 << 20)
        except (EOFError, gzip.BadGzipFile, zlib.error, OSError) as exc:
            if self.offset == 0:
                raise BadTraceFile(self.path, f"corrupt gzip data: {exc}") from None
            # A gzip stream cut short: treat like a truncated trace.
            self.read_error = f"compressed data ends early or is corrupt at byte {self.offset}: {exc}"
            return b""
        if chunk and self.observer is not None:
            self.observer(chunk, self.offset)
        self.offset += len(chunk)
        return chunk

    def readinto(self, buffer) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def peek_start(self, n: int = 4096) -> bytes:
        """The first n decompressed bytes, read through a separate handle."""
        with open(self.path, "rb") as raw:
            if not self.compressed:
                return raw.read(n)
            f = gzip.GzipFile(fileobj=raw, mode="rb")
            data = b""
            try:
                while len(data) < n:
                    piece = f.read(min(512, n - len(data)))
                    if not piece:
                        break
                    data += piece
            except (EOFError, gzip.BadGzipFile, zlib.error, OSError) as exc:
                if not data:  # nothing decompresses: not a truncated trace but a broken file
                    raise BadTraceFile(self.path, f"corrupt gzip data: {exc}") from None
            return data

    def close(self) -> None:
        try:
            if self._inner is not self.disk:
                self._inner.close()
        finally:
            self.disk.close()
            super().close()

