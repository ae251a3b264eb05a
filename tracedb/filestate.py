"""What a file's state is, as the readers of files that others change see it: its stat key (size,
inode, times), whether it changed too lately for that key to be trusted, and its digest, read
again only when the key changes."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path


def stat_key(path: Path) -> tuple | None:
    """What a write to path changes: its size, inode and times (None when it is not there); a file
    copied back with its times kept is a new inode."""
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_size, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)


# A file whose times are this close to now may change again within the same timestamp (file
# times tick coarser than nanoseconds on many systems): its state is then taken for a new one.
RACY_NS = 2_000_000_000


def racy(key: tuple | None) -> bool:
    """Whether the file of this stat key changed within RACY_NS of now (git's rule for an index
    entry as recent as the index): what was read from it may not be what it holds."""
    return key is not None and time.time_ns() - max(key[2], key[3]) < RACY_NS


def settled(keys: tuple) -> tuple:
    """keys (stat_key of each file), or, where one is racy, keys with a value no other state holds:
    what was read from such a file is never taken as current."""
    if any(racy(key) for key in keys):
        return (*keys, os.urandom(8).hex())
    return keys


_digests: dict[tuple, str] = {}


def digest(path: Path) -> str:
    """The sha256 of a file's bytes, read again only when its stat key changes (a new database, a
    lake and a load each fingerprint the 250 SQL and rules files: 8 ms of reading and hashing each
    time, where their stats take 1); a racy file is read every time."""
    key = stat_key(path)
    if key is None:
        raise FileNotFoundError(path)
    known = _digests.get((str(path), key))
    if known is None:
        known = hashlib.sha256(path.read_bytes()).hexdigest()
        if not racy(key):
            _digests[(str(path), key)] = known
    return known
