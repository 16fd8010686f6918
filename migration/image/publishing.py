"""Publishing committed metadata to whoever needs it (the ZooKeeper writer, the RPCs to
ZooKeeper-mode brokers, metrics), off the Raft thread.

Contract:

- A publisher receives :class:`ImageChange` values in commit order, each exactly once:
  the previous image, the new one, the delta between them (None for a full-image
  change: a snapshot was loaded), and a :class:`LoadManifest` (offsets, epoch, whether it
  came from a snapshot).
- Each publisher runs on its own thread with its own queue (:class:`PublisherThread`),
  so a slow one (ZooKeeper) never delays Raft nor the other publishers; images are
  immutable, so handing them across threads is safe.
- A publisher that raises is reported to ``on_error`` (default: logged) and keeps
  receiving later changes; deciding whether that is fatal is the publisher's business.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from migration.image.delta import MetadataDelta
from migration.image.model import MetadataImage

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class LoadManifest:
    """Where a change came from: offsets ``first_offset``..``last_offset`` of the log
    (for a snapshot: its last contained offset), the epoch of the last one."""

    first_offset: int
    last_offset: int
    epoch: int
    from_snapshot: bool = False


@dataclass(frozen=True, slots=True)
class ImageChange:
    previous: MetadataImage
    image: MetadataImage
    delta: MetadataDelta | None  # None: a full-image change (a snapshot was loaded)
    manifest: LoadManifest


class MetadataPublisher(Protocol):
    name: str

    def publish(self, change: ImageChange) -> None:
        """Called on the publisher's own thread, in commit order."""


class PublisherThread:
    """One publisher on its own daemon thread, fed through an unbounded queue."""

    def __init__(
        self,
        publisher: MetadataPublisher,
        on_error: Callable[[MetadataPublisher, BaseException], None] | None = None,
    ) -> None:
        self.publisher = publisher
        self._queue: queue.SimpleQueue[ImageChange | None] = queue.SimpleQueue()
        self._on_error = on_error or log_publisher_error
        self._idle = threading.Event()
        self._idle.set()
        self._pending = 0
        self._lock = threading.Lock()
        self._thread = threading.Thread(
            target=self._run, name=f"publisher-{publisher.name}", daemon=True
        )
        self._thread.start()

    def submit(self, change: ImageChange) -> None:
        """Queue ``change`` (never blocks the caller)."""
        with self._lock:
            self._pending += 1
            self._idle.clear()
        self._queue.put(change)

    def wait_idle(self, timeout_s: float) -> bool:
        """Whether everything submitted so far was published within ``timeout_s``."""
        return self._idle.wait(timeout_s)

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while (change := self._queue.get()) is not None:
            try:
                self.publisher.publish(change)
            except BaseException as exc:  # reported; later changes still arrive
                self._on_error(self.publisher, exc)
            with self._lock:
                self._pending -= 1
                if not self._pending:
                    self._idle.set()


def log_publisher_error(publisher: MetadataPublisher, exc: BaseException) -> None:
    """The default report of a publisher that raised: an ERROR with its traceback."""
    log.error("publisher %s failed", publisher.name, exc_info=exc)
