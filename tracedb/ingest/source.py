"""Opening a trace file: checks, gzip detection by magic bytes, progress counting, hashing.

A file is read once: TraceStream hashes the bytes it reads from disk (the SHA-256 that makes loads
idempotent) and holds the first decompressed bytes it was asked to look at (format detection)
until the reader takes them.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import stat
import zlib
from pathlib import Path

from ..errors import BadTraceFile

GZIP_MAGIC = b"\x1f\x8b"


def check_file(path: Path) -> int:
    """Raise BadTraceFile unless path is a readable, non-empty regular file; return its size."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise BadTraceFile(path, "no such file") from None
    except OSError as exc:  # a name too long, a folder closed to us, a loop of links
        raise BadTraceFile(path, f"cannot look at it: {exc.strerror or exc}") from None
    if stat.S_ISDIR(mode):
        raise BadTraceFile(path, "is a directory, not a trace file")
    if not stat.S_ISREG(mode):
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
    """A read-only file that counts (for progress bars) and hashes the bytes read from disk."""

    def __init__(self, raw):
        self._raw = raw
        self.bytes_read = 0
        self.sha256 = hashlib.sha256()

    def read_chunk(self, size: int) -> bytes:
        """Up to size bytes (fewer only at the end of the file), counted and hashed: read straight
        into the bytes returned, with no copy of them (1 GiB read through readinto and copied
        out took 0.1 s more)."""
        data = self._raw.read(size)
        if data:
            self.bytes_read += len(data)
            self.sha256.update(data)
        return data

    def digest(self) -> str:
        """SHA-256 of the whole file: the bytes not read yet are read (and hashed) now."""
        while self.read_chunk(1 << 20):
            pass
        return self.sha256.hexdigest()

    def close(self) -> None:
        self._raw.close()
        super().close()


class TraceStream(io.RawIOBase):
    """The decompressed bytes of a trace file, read in chunks.

    Tracks the offset in the decompressed stream (for error positions), hands every chunk to an
    optional observer (the metadata capture), and decompresses gzip itself (zlib, member by
    member) so that a stream cut short still yields every byte before the cut: a truncated
    .gz is a truncated trace, not a lost one.
    """

    def __init__(self, path: Path):
        self.path = path
        self.disk = CountingFile(open(path, "rb"))
        self.compressed = is_gzip(path)
        self._zlib = zlib.decompressobj(wbits=47) if self.compressed else None
        self._eof = False
        self.offset = 0
        self.observer = None
        self.read_error: str | None = None
        self._spill = b""  # bytes read but not yet handed out by readinto
        self._head = b""  # bytes looked at by head(), handed out (and observed) by the next reads

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        if size == 0:
            return b""
        size = size if size and size > 0 else 1 << 20
        if self._head:
            chunk, self._head = self._head, b""
        elif self.read_error:
            return b""
        else:
            chunk = self._read_plain(size) if self._zlib is None else self._read_gzip(size)
        if chunk and self.observer is not None:
            self.observer(chunk, self.offset)
        self.offset += len(chunk)
        return chunk

    def _read_plain(self, size: int) -> bytes:
        return self.disk.read_chunk(size)

    def _read_gzip(self, size: int) -> bytes:
        # at most size bytes inflated at a time (the compressed bytes beyond them wait in the
        # decompressor): 256 KiB of a highly compressible trace, a long name of one letter,
        # inflated to 256 MiB in one piece, which no bound after it could undo
        out = b""
        while not out and not self._eof:
            if self._zlib.eof and self._zlib.unused_data:  # the next gzip member, begun in what was read
                raw = self._zlib.unused_data
                self._zlib = zlib.decompressobj(wbits=47)
            else:
                raw = self._zlib.unconsumed_tail or self.disk.read_chunk(1 << 18)
            try:
                if not raw:
                    out = self._zlib.flush()
                    if not self._zlib.eof:
                        self._stop("compressed data ends early (truncated gzip)")
                    self._eof = True
                    break
                out = self._zlib.decompress(raw, size)
            except zlib.error as exc:
                self._stop(f"corrupt gzip data: {exc}")
                break
        return out

    def _stop(self, problem: str) -> None:
        at = self.offset + len(self._head)
        if at == 0:
            raise BadTraceFile(self.path, problem)
        self.read_error = f"{problem} at byte {at} of the JSON text"

    def readinto(self, buffer) -> int:
        # read() may return more than asked (a gzip block inflates to any size): keep the rest
        view = memoryview(buffer).cast("B")
        data = self._spill or self.read(len(view))
        n = min(len(view), len(data))
        view[:n] = data[:n]
        self._spill = data[n:]
        return n

    def head(self, n: int = 8192) -> bytes:
        """Up to n of the first decompressed bytes, without consuming them: the next reads return
        them (to the observer too). Only before the first read."""
        if self.offset or self._spill:
            raise ValueError("head() after reading")
        try:
            while len(self._head) < n and not self.read_error:
                piece = self._read_plain(n) if self._zlib is None else self._read_gzip(n)
                if not piece:
                    break
                self._head += piece
        except BadTraceFile:
            if not self._head:
                raise
        if not self._head and self.read_error:
            raise BadTraceFile(self.path, self.read_error.split(" at byte ")[0])
        return self._head[:n]

    def digest(self) -> str:
        """SHA-256 of the file as stored (compressed bytes for .gz)."""
        return self.disk.digest()

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
        self.disk.close()
        super().close()
