"""Errors of the metadata log; each names the file (and position) it comes from."""

from __future__ import annotations

from pathlib import Path


class LogError(Exception):
    """Base class of the log's errors."""


class CorruptLogError(LogError):
    """Bytes on disk that are not a valid batch where one must be (a sealed segment, a
    snapshot, a gap between segments). Never repaired silently: an operator decides."""

    def __init__(self, path: Path, position: int | None, problem: str) -> None:
        where = f"{path}" if position is None else f"{path} at byte {position}"
        super().__init__(f"{where}: {problem}")
        self.path = path
        self.position = position
        self.problem = problem

    def __reduce__(self) -> tuple[type[CorruptLogError], tuple[Path, int | None, str]]:
        return type(self), (self.path, self.position, self.problem)  # crosses processes


class LogFlushError(LogError, OSError):
    """An fsync of the log failed: nothing written since is known to be durable, and
    the log refuses every later flush and append (the owner must stop)."""


class LogDirLockedError(LogError):
    """Another process has the log directory open."""


class OffsetOutOfRangeError(LogError):
    """A read or truncation asked for an offset the log does not hold."""
