"""The dual-write's accounting: committed changes on their way to ZooKeeper, how far
ZooKeeper is behind the log, and the refusal of admin writes past the bound.

Contract:

- Changes arrive from the image publisher (:meth:`WriteBehind.publish`, its own thread)
  and are taken by the driver's poll thread in order (:meth:`pull`,
  :meth:`take_latest`) into :attr:`backlog`; a change leaves the backlog only once
  written. :meth:`drop_incoming` forgets what no leadership uses.
- The lag is committed records ZooKeeper does not hold yet: the newest committed offset
  known (the latest published image's, or the controller's committed image's when the
  caller passes it: a change committed, and perhaps acknowledged, but still on its way
  through the publisher counts) minus :attr:`zk_offset` (what ``/migration`` says), 0
  while the driver is not writing or holds no claim. Control records need no care: they
  are replayed into the image and published like any change, and the write of the
  change that holds them records their offset in ``/migration``.
- **Bounded write-behind**: past ``zookeeper.metadata.migration.max.write.behind.records``
  admin writes are refused (REQUEST_TIMED_OUT, retriable) with :func:`refusal`'s
  reason, until ZooKeeper catches up; the brokers' own writes are still served.

Threading: ``_incoming`` and ``_latest`` are under ``_lock``; the poll thread owns
``backlog`` and ``zk_offset``. The lag and the high watermark are read from any thread:
single attributes replaced whole, so a stale read is corrected on the next one.
"""

from __future__ import annotations

import threading

from migration.image.model import MetadataImage
from migration.image.publishing import ImageChange


def refusal(lag: int, bound: int) -> str | None:
    """Why admin writes are refused at this lag (None: they are not)."""
    if lag <= bound:
        return None
    return (
        f"ZooKeeper is {lag} records behind the metadata log, past "
        f"zookeeper.metadata.migration.max.write.behind.records={bound}: metadata "
        "writes are paused until it catches up (retriable)"
    )


class WriteBehind:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._incoming: list[ImageChange] = []
        self._latest: MetadataImage | None = None
        self.backlog: list[ImageChange] = []  # pulled, not yet written (the poll thread's)
        self.zk_offset = -1  # what /migration says ZooKeeper holds (-1: no claim)

    # --- the publisher thread ------------------------------------------------------------

    def publish(self, change: ImageChange) -> None:
        with self._lock:
            self._incoming.append(change)
            self._latest = change.image

    # --- the poll thread -----------------------------------------------------------------

    def pull(self) -> None:
        """Take every change published so far into the backlog."""
        with self._lock:
            incoming, self._incoming = self._incoming, []
        self.backlog.extend(incoming)

    def take_latest(self) -> MetadataImage | None:
        """The latest published image, with every change up to it taken in."""
        with self._lock:
            self.backlog.extend(self._incoming)
            self._incoming = []
            return self._latest

    def drop_incoming(self) -> None:
        """Forget the changes published so far (the latest image stays): held while no
        leadership uses them, a follower kept every change of a 100,000-partition roll
        (+360 MiB)."""
        with self._lock:
            self._incoming = []

    def reset(self) -> None:
        """Drop whatever belonged to an earlier leadership."""
        self.zk_offset = -1
        self.backlog = []
        self.drop_incoming()

    # --- any thread ----------------------------------------------------------------------

    @property
    def latest(self) -> MetadataImage | None:
        with self._lock:
            return self._latest

    @property
    def queued(self) -> int:
        """Committed changes held for ZooKeeper, published or pulled."""
        with self._lock:
            return len(self._incoming) + len(self.backlog)

    def lag(self, writing: bool, committed: int = -1) -> int:
        """Committed records ZooKeeper does not hold yet, up to the latest published
        image or ``committed`` (the committed image's offset), whichever is newer (0
        unless ``writing`` with a claim)."""
        latest = self._latest
        if not writing or self.zk_offset < 0 or latest is None:
            return 0
        return max(0, max(latest.offset, committed) - self.zk_offset)

    def high_watermark(self, polled: int) -> int:
        """The newest known: the last published image's (live) or ``polled``."""
        latest = self._latest
        return max(latest.offset + 1 if latest is not None else -1, polled)
