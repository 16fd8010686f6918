"""When the metadata log's appends reach the disk, and whether anything still can.

Contracts:

- :class:`FlushPolicy` says when appends are flushed by themselves: by count of batches,
  by time since the last flush, or never (rolls and ``close`` always flush).
- :class:`Durability` keeps the count and the clock the policy is judged on, and the
  fsync that failed: after one failure every later fsync raises
  :class:`~.errors.LogFlushError` without trying (fsyncgate: a retried fsync proves
  nothing about what was written before it), so the log's owner must stop.
- :meth:`Durability.fsync_later` hands the fsync to another thread (the Raft loop must
  not wait on the disk): it covers what was written when it was taken, and its outcome
  comes back through :meth:`Durability.fsynced` on the owner's thread.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from migration.log.errors import LogFlushError
from migration.log.segment import Segment


@dataclass(frozen=True, slots=True)
class FlushPolicy:
    """When appends reach the disk by themselves: after ``every_batches`` batches
    (0: not by count) or when ``every_seconds`` have passed since the last flush,
    checked at each append (None: not by time). Rolls and ``close`` always flush."""

    every_batches: int = 1
    every_seconds: float | None = None

    @classmethod
    def per_batch(cls) -> FlushPolicy:
        return cls(1, None)

    @classmethod
    def never(cls) -> FlushPolicy:
        """Leave flushing to the OS (tests, benchmarks, dry runs that are redone)."""
        return cls(0, None)


class Durability:
    """The flush state of the log in ``directory``: ``unflushed`` batches appended since
    the last flush, when that was (``clock``), and the fsync that failed, if one did.
    Not thread-safe: the log's one owner calls it."""

    def __init__(self, directory: Path, policy: FlushPolicy, clock: Callable[[], float]) -> None:
        self.directory = directory
        self.policy = policy
        self._clock = clock
        self.unflushed = 0
        self._last_flush = clock()
        self._error: BaseException | None = None
        self._in_flight: tuple[int, Path] | None = None  # fsync_later's batches and file

    def fsync(self, seg: Segment) -> None:
        """fsync ``seg``; after one failure, never again pretend anything is durable
        (LogFlushError, whether or not this one would fail)."""
        self.refuse_if_failed()
        try:
            seg.flush()
        except OSError as exc:
            self._error = exc
            raise LogFlushError(f"{seg.path}: fsync failed: {exc}") from exc

    def fsync_later(self, seg: Segment | None) -> Callable[[], None]:
        """The fsync of ``seg`` as written so far, to run on any thread (a no-op when
        nothing is unflushed or ``seg`` is None): it fsyncs a duplicate of the segment's
        descriptor, so a roll, truncation or close meanwhile leaves it valid, and covers
        the batches counted unflushed now. Exactly one :meth:`fsynced` must follow, on
        the owner's thread, before the next ``fsync_later``."""
        self.refuse_if_failed()
        if self._in_flight is not None:
            raise RuntimeError(f"{self.directory}: an fsync is already in flight")
        if not self.unflushed or seg is None:
            self._in_flight = (0, self.directory)
            return _nothing
        fd = os.dup(seg.fd)
        self._in_flight = (self.unflushed, seg.path)

        def fsync() -> None:
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

        return fsync

    def fsynced(self, error: BaseException | None) -> None:
        """The outcome of :meth:`fsync_later`'s fsync: the batches it covered are
        durable, or (``error``) nothing ever is again (LogFlushError, now and later)."""
        if self._in_flight is None:
            raise RuntimeError(f"{self.directory}: no fsync is in flight")
        (count, path), self._in_flight = self._in_flight, None
        if error is not None:
            self._error = error
            raise LogFlushError(f"{path}: fsync failed: {error}") from error
        self.unflushed = max(0, self.unflushed - count)
        self._last_flush = self._clock()

    def refuse_if_failed(self) -> None:
        """LogFlushError if an fsync has failed: nothing more goes into this log."""
        if self._error is not None:
            raise LogFlushError(
                f"{self.directory}: an earlier fsync failed ({self._error}); what was "
                "written since may not be on disk, and a retried fsync proves nothing"
            )

    def appended(self) -> None:
        """One more batch written, not yet flushed."""
        self.unflushed += 1

    def due(self) -> bool:
        """Whether the policy asks for a flush now."""
        policy = self.policy
        return bool(policy.every_batches and self.unflushed >= policy.every_batches) or (
            policy.every_seconds is not None
            and self._clock() - self._last_flush >= policy.every_seconds
        )

    def flushed(self) -> None:
        """Everything appended so far is durable: the count and the clock start again."""
        self.unflushed = 0
        self._last_flush = self._clock()


def _nothing() -> None:
    pass
