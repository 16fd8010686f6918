"""What the Raft core needs from a log: :class:`RaftLog`.

:class:`migration.log.metadata_log.MetadataLog` is the durable implementation; the
seeded simulation has an in-memory one that loses what was not flushed when a node
is killed. Batches travel between nodes as the exact frames the log stores.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from migration.log.batch import BatchHeader
from migration.log.snapshots import SnapshotId


class RaftLog(Protocol):
    """Contract: offsets are contiguous; epochs never go back; ``flush`` makes every
    appended batch durable (what was appended but not flushed may vanish in a crash),
    and so does a ``begin_flush`` whose ``end_flush`` came without an error;
    ``truncate_to`` and ``install_snapshot`` are durable when they return."""

    @property
    def start_offset(self) -> int: ...

    @property
    def end_offset(self) -> int: ...

    @property
    def last_epoch(self) -> int: ...

    def latest_snapshot(self) -> SnapshotId | None: ...

    def append_framed(
        self, framed: Sequence[bytes], epoch: int, timestamp_ms: int | None = None
    ) -> BatchHeader: ...

    def append_frames(self, data: bytes) -> int: ...

    def read_frames(self, from_offset: int, max_bytes: int) -> bytes: ...

    def batch_end(self, offset: int) -> int:
        """The end (exclusive) of the batch holding ``offset``."""
        ...

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int] | None: ...

    def truncate_to(self, offset: int) -> None: ...

    def flush(self) -> None: ...

    def begin_flush(self) -> Callable[[], None]:
        """What ``flush`` does, split: the returned callable blocks on the disk (any
        thread) and covers the batches appended before this call; ``end_flush`` takes
        its outcome on the caller's thread, one per ``begin_flush``."""
        ...

    def end_flush(self, error: BaseException | None) -> None: ...

    def snapshot_chunk(
        self, snapshot_id: SnapshotId, position: int, max_bytes: int
    ) -> tuple[bytes, int] | None: ...

    def install_snapshot(self, snapshot_id: SnapshotId, data: bytes) -> None: ...
