"""Opening the log directory's files safely."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from migration.log.errors import CorruptLogError


def open_regular(path: Path, flags: int) -> int:
    """``os.open`` that refuses anything but a regular file before reading from it (a
    FIFO named like a segment would block a reader forever): CorruptLogError."""
    fd = os.open(path, flags | os.O_NONBLOCK)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise CorruptLogError(path, None, "not a regular file")
    os.set_blocking(fd, True)
    return fd


def read_regular(path: Path, max_bytes: int) -> bytes:
    """The whole content of a regular file (see :func:`open_regular`) of at most
    ``max_bytes``; a longer one is CorruptLogError naming its size, and is not read past
    the limit (a file of gigabytes costs nothing to refuse)."""
    fd = open_regular(path, os.O_RDONLY)
    try:
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(max_bytes + 1)
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise CorruptLogError(path, None, f"more than {max_bytes:,} bytes")
    return data
