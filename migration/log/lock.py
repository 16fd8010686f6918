"""One writer per log directory: an advisory ``flock`` on ``<dir>/.lock``.

The lock lives as long as the process holds the file open, so a SIGKILLed owner
releases it with its file descriptors; a second opener fails at once, naming the
directory and the pid that holds it.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from migration.log.errors import LogDirLockedError

LOCK_FILE = ".lock"


class DirLock:
    def __init__(self, directory: Path) -> None:
        self.path = directory / LOCK_FILE
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise LogDirLockedError(
                f"{directory}: the log directory is in use by another process (pid {holder})"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd: int | None = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing drops the flock
            self._fd = None
