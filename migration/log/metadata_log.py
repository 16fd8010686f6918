"""MetadataLog: the durable, segmented, CRC-checked metadata log of one node.

Files in the log directory::

    00000000000000000000.log                      segments, named by base offset
    00000000000000052113.log
    00000000000000052113-0000000003.checkpoint    snapshots (see snapshots.py)
    .lock                                         held by the process that writes

Contracts:

- **Offsets** are contiguous from the log start; ``append`` returns the batch's
  offsets. ``read`` yields whole batches, the first of which may begin before the
  asked-for offset (as a Raft fetch does).
- **Durability**: a batch is on disk once ``flush`` has run after it; the flush
  policy decides when that happens by itself (controllers: every batch). A segment is
  fsynced before the next one is created, so only the last segment can hold a torn
  write.
- **Recovery** on open (:mod:`.recovery`) checks every batch's CRC and decodes its
  records. A torn tail of the last segment (a crash mid-write) is cut, at WARNING;
  corruption a crash cannot cause stops a writable open with :class:`CorruptLogError`
  naming the file and byte, changing nothing -- except with ``repair_corrupt_tail`` (a
  voter whose quorum can send the data back), which cuts a corrupt last segment at the
  damage, at ERROR. An interrupted snapshot install is finished. ``read_only`` opens
  change nothing at all and collect problems instead of raising (``zk2kraft log
  verify`` / ``log dump``); they take no lock.
- **Flushing** (:mod:`.durability`): what was on disk at open is fsynced before it
  counts as durable. A failed fsync is never retried as if it could succeed
  (fsyncgate): every later flush and append raises :class:`LogFlushError` and the
  owner must stop.
- **Reads** check each batch's CRC again, so bytes that rot after the open are
  reported (:class:`CorruptLogError`), never returned.
- **Raft**: followers append the leader's batch frames byte for byte
  (``append_frames``), leaders serve them (``read_frames``); ``end_offset_for_epoch``
  answers Kafka's epoch-divergence question; ``install_snapshot`` replaces the whole
  log with a snapshot fetched from the leader.
- **Threading**: not thread-safe; one owner (the Raft event loop) serializes calls.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from types import TracebackType

from migration.common.files import ensure_dir, fsync_dir
from migration.log.batch import (
    BatchHeader,
    LogBatch,
    check_batch,
    encode_batch,
    frame_record,
)
from migration.log.durability import Durability, FlushPolicy
from migration.log.epochs import EpochStarts
from migration.log.errors import CorruptLogError, OffsetOutOfRangeError
from migration.log.files import require_dir
from migration.log.lock import DirLock
from migration.log.recovery import Recovery
from migration.log.segment import Segment, segment_name
from migration.log.snapshots import (
    SnapshotId,
    list_snapshots,
    read_chunk,
    read_snapshot,
    remove_partial_snapshots,
    store_fetched,
    write_snapshot,
)
from migration.proto.metadata_pb2 import MetadataRecord

__all__ = ["DEFAULT_SEGMENT_BYTES", "FlushPolicy", "MetadataLog"]  # FlushPolicy: durability's

log = logging.getLogger(__name__)

DEFAULT_SEGMENT_BYTES = 16 * 1024 * 1024


class MetadataLog:
    format = "zk2kraft"

    def __init__(
        self,
        directory: Path,
        *,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        flush: FlushPolicy | None = None,
        read_only: bool = False,
        repair_corrupt_tail: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if segment_bytes < 1024:
            raise ValueError(f"segment size {segment_bytes} is below 1024 bytes")
        self.directory = Path(directory)
        self.segment_bytes = segment_bytes
        self.read_only = read_only
        self._durability = Durability(self.directory, flush or FlushPolicy.per_batch(), clock)
        self._lock: DirLock | None = None
        if read_only:
            require_dir(self.directory)
        else:
            ensure_dir(self.directory)  # a symlink to nothing is refused, never followed
            self._lock = DirLock(self.directory)
        self._segments: list[Segment] = []
        self._epochs = EpochStarts()
        # What the open found and did: problems (read-only: what a writer would refuse),
        # torn_tail (read-only: what a writer would cut), recovered_bytes, reconciled,
        # unknown_files.
        self.recovery = Recovery(self.directory, read_only, repair_corrupt_tail, self._segments)
        try:
            if not read_only:
                remove_partial_snapshots(self.directory)
            latest = self.recovery.run()
            if not read_only:
                if not self._segments:
                    self._new_segment(latest.end_offset if latest else 0)
                else:
                    self._fsync(self._segments[-1])  # an earlier process's writes: durable now
            self._rebuild_epochs()
        except BaseException:
            self.close()
            raise

    @property
    def problems(self) -> list[CorruptLogError]:
        return self.recovery.problems

    @property
    def torn_tail(self) -> CorruptLogError | None:
        return self.recovery.torn_tail

    @property
    def recovered_bytes(self) -> int:
        return self.recovery.recovered_bytes

    @property
    def reconciled(self) -> list[str]:
        return self.recovery.reconciled

    @property
    def unknown_files(self) -> list[str]:
        return self.recovery.unknown_files

    # --- opening and recovery -------------------------------------------------------------

    def _rebuild_epochs(self) -> None:
        latest = self.latest_snapshot()
        start = self.start_offset
        self._epochs = EpochStarts.before(
            latest.epoch if latest is not None and latest.end_offset == start else None, start
        )
        for seg in self._segments:
            for base, epoch in zip(seg.offsets, seg.epochs, strict=True):
                self._epochs.note(epoch, base)

    def _new_segment(self, base_offset: int) -> None:
        self._segments.append(
            Segment.create(self.directory / segment_name(base_offset), base_offset)
        )
        fsync_dir(self.directory)

    def _fsync(self, seg: Segment) -> None:
        """fsync ``seg``; after one failure, never again pretend anything is durable."""
        self._durability.fsync(seg)

    # --- positions ------------------------------------------------------------------------

    @property
    def start_offset(self) -> int:
        """The first offset the log holds (older ones live only in snapshots)."""
        if self._segments:
            return self._segments[0].base_offset
        latest = self.latest_snapshot()
        return latest.end_offset if latest else 0

    @property
    def end_offset(self) -> int:
        """The offset the next appended record gets (Kafka's log end offset)."""
        return self._segments[-1].next_offset if self._segments else self.start_offset

    @property
    def last_epoch(self) -> int:
        """The leader epoch of the last batch (of the latest snapshot if the log is empty)."""
        for seg in reversed(self._segments):
            if seg.epochs:
                return seg.epochs[-1]
        latest = self.latest_snapshot()
        return latest.epoch if latest else 0

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int] | None:
        """(the largest epoch <= ``epoch`` this log knows, the offset where it ends), or
        None when ``epoch`` is older than anything the log still holds (only a snapshot
        can settle that). Raft's divergence check."""
        return self._epochs.end_offset_for(epoch, self.end_offset)

    def batch_end(self, offset: int) -> int:
        """The end (exclusive) of the batch holding ``offset``, which the log must hold."""
        for seg in self._segments:
            if seg.base_offset <= offset < seg.next_offset and seg.offsets:
                i = seg.batch_index(offset)
                return seg.offsets[i + 1] if i + 1 < len(seg.offsets) else seg.next_offset
        raise OffsetOutOfRangeError(
            f"offset {offset} is outside the log [{self.start_offset}, {self.end_offset})"
        )

    @property
    def size_bytes(self) -> int:
        return sum(s.size for s in self._segments)

    @property
    def segment_paths(self) -> list[Path]:
        return [s.path for s in self._segments]

    # --- appending ------------------------------------------------------------------------

    def append(
        self, records: Sequence[MetadataRecord], epoch: int, timestamp_ms: int | None = None
    ) -> BatchHeader:
        """Append ``records`` as one batch written in leader ``epoch``."""
        return self.append_framed(
            [frame_record(r.SerializeToString()) for r in records], epoch, timestamp_ms
        )

    def append_framed(
        self, framed: Sequence[bytes], epoch: int, timestamp_ms: int | None = None
    ) -> BatchHeader:
        """Append records already passed through :func:`frame_record` as one batch."""
        if self.read_only:
            raise PermissionError(f"{self.directory}: the log is open read-only")
        self._durability.refuse_if_failed()  # nothing more goes into a log whose fsync failed
        if epoch < 0:
            raise ValueError(f"leader epoch {epoch} is negative")
        if epoch < self.last_epoch:
            raise ValueError(f"epoch {epoch} is older than the log's last epoch {self.last_epoch}")
        ts = int(time.time() * 1000) if timestamp_ms is None else timestamp_ms
        base = self.end_offset
        frame = encode_batch(base, epoch, ts, framed)
        header = BatchHeader(base, epoch, len(framed), ts, len(frame))
        self._append_frame(frame, header)
        self._maybe_flush()
        return header

    def append_frames(self, data: bytes | memoryview) -> int:
        """Append whole batch frames exactly as another log stored them (a follower
        appending what it fetched). Every frame is checked first (CRC, contiguous
        offsets from the log end, epochs that never go back); a bad one raises
        ValueError naming it and nothing is appended. Returns the batches appended."""
        if self.read_only:
            raise PermissionError(f"{self.directory}: the log is open read-only")
        frames: list[tuple[BatchHeader, int]] = []
        self._durability.refuse_if_failed()  # nothing more goes into a log whose fsync failed
        pos, expected, last_epoch = 0, self.end_offset, self.last_epoch
        while pos < len(data):
            header = check_batch(data, pos)
            if isinstance(header, str):
                raise ValueError(f"replicated batch at byte {pos}: {header}")
            if header.base_offset != expected or header.epoch < last_epoch:
                raise ValueError(
                    f"replicated batch at byte {pos} (offset {header.base_offset}, epoch "
                    f"{header.epoch}) does not follow offset {expected}, epoch {last_epoch}"
                )
            frames.append((header, pos))
            pos += header.size
            expected, last_epoch = header.next_offset, header.epoch
        view = memoryview(data)
        for header, start in frames:
            self._append_frame(bytes(view[start : start + header.size]), header)
        if frames:
            self._maybe_flush()
        return len(frames)

    def _append_frame(self, frame: bytes, header: BatchHeader) -> None:
        active = self._segments[-1]
        if active.size and active.size + len(frame) > self.segment_bytes:
            self._fsync(active)  # sealed segments are always durable (see recovery)
            self._new_segment(header.base_offset)
            active = self._segments[-1]
        active.append(frame, header)
        self._epochs.note(header.epoch, header.base_offset)
        self._durability.appended()

    def _maybe_flush(self) -> None:
        if self._durability.due():
            self.flush()

    def flush(self) -> None:
        """Make every appended batch durable (fsync of the active segment)."""
        if self._durability.unflushed and self._segments and not self.read_only:
            self._fsync(self._segments[-1])
        self._durability.flushed()

    def begin_flush(self) -> Callable[[], None]:
        """Start making every batch appended so far durable without waiting for the
        disk: the returned fsync runs on another thread, and :meth:`end_flush` takes its
        outcome on this log's thread. Appends, rolls and truncation may go on
        meanwhile; what is appended after this call is not covered."""
        active = self._segments[-1] if self._segments and not self.read_only else None
        return self._durability.fsync_later(active)

    def end_flush(self, error: BaseException | None) -> None:
        """What :meth:`begin_flush` covered is durable; or, given its fsync's ``error``,
        LogFlushError (and every later flush refuses)."""
        self._durability.fsynced(error)

    # --- reading --------------------------------------------------------------------------

    def read(self, from_offset: int | None = None) -> Iterator[LogBatch]:
        """Batches from the one holding ``from_offset`` (default: the log start) to the end."""
        start = self.start_offset if from_offset is None else from_offset
        if start < self.start_offset or start > self.end_offset:
            raise OffsetOutOfRangeError(
                f"offset {start} is outside the log [{self.start_offset}, {self.end_offset})"
            )
        for seg in self._segments:
            if seg.next_offset <= start or not seg.offsets:
                continue
            first = seg.batch_index(start) if seg.base_offset <= start else 0
            for i in range(first, len(seg.offsets)):
                yield seg.read_batch(i)

    def read_frames(self, from_offset: int, max_bytes: int) -> bytes:
        """Whole batch frames from the batch holding ``from_offset``, as stored (CRCs
        checked), up to ``max_bytes`` but always at least one batch if there is one."""
        if not self.start_offset <= from_offset <= self.end_offset:
            raise OffsetOutOfRangeError(
                f"offset {from_offset} is outside the log [{self.start_offset}, {self.end_offset})"
            )
        out: list[bytes] = []
        size = 0
        for seg in self._segments:
            if seg.next_offset <= from_offset or not seg.offsets:
                continue
            first = seg.batch_index(from_offset) if seg.base_offset <= from_offset else 0
            for i in range(first, len(seg.offsets)):
                frame = seg.read_frame(i)
                if out and size + len(frame) > max_bytes:
                    return b"".join(out)
                out.append(frame)
                size += len(frame)
        return b"".join(out)

    def records(self, from_offset: int | None = None) -> Iterator[tuple[int, int, MetadataRecord]]:
        """(offset, epoch, record) from ``from_offset`` on."""
        start = self.start_offset if from_offset is None else from_offset
        for batch in self.read(start):
            for i, record in enumerate(batch.records):
                if batch.base_offset + i >= start:
                    yield batch.base_offset + i, batch.epoch, record

    # --- truncation, snapshots, retention -----------------------------------------------------

    def truncate_to(self, offset: int) -> None:
        """Remove every record at ``offset`` and above (Raft's truncation of a diverging
        tail). ``offset`` must be a batch boundary within [start_offset, end_offset]."""
        if self.read_only:
            raise PermissionError(f"{self.directory}: the log is open read-only")
        if not self.start_offset <= offset <= self.end_offset:
            raise OffsetOutOfRangeError(
                f"cannot truncate to {offset}: outside [{self.start_offset}, {self.end_offset}]"
            )
        keep = max(i for i, s in enumerate(self._segments) if i == 0 or s.base_offset < offset)
        seg = self._segments[keep]
        index = seg.batch_index(offset) if offset < seg.next_offset else len(seg.offsets)
        if index < len(seg.offsets) and seg.offsets[index] != offset:
            raise ValueError(f"offset {offset} is inside a batch; truncate at a batch boundary")
        for doomed in self._segments[keep + 1 :]:
            doomed.close()
            doomed.path.unlink()
        del self._segments[keep + 1 :]
        seg.truncate_at_batch(index)
        self._fsync(seg)
        fsync_dir(self.directory)
        self._epochs.truncate(offset)

    def latest_snapshot(self) -> SnapshotId | None:
        snapshots = self.snapshots()
        return snapshots[-1] if snapshots else None

    def snapshots(self) -> list[SnapshotId]:
        return list_snapshots(self.directory)

    def read_snapshot(self, snapshot_id: SnapshotId) -> Iterator[MetadataRecord]:
        return read_snapshot(self.snapshot_path(snapshot_id))  # a batch at a time

    def snapshot_path(self, snapshot_id: SnapshotId) -> Path:
        return self.directory / snapshot_id.file_name

    def write_snapshot(
        self,
        snapshot_id: SnapshotId,
        records: Iterable[MetadataRecord],
        control: Sequence[MetadataRecord] = (),
    ) -> Path:
        """Write a snapshot covering offsets below ``snapshot_id.end_offset``;
        ``control``: the records after its header (Raft's voter set)."""
        self.check_snapshot(snapshot_id)
        return write_snapshot(self.directory, snapshot_id, records, control=control)

    def check_snapshot(self, snapshot_id: SnapshotId) -> None:
        """Refuse a snapshot this log cannot hold: one past its end."""
        if snapshot_id.end_offset > self.end_offset:
            raise OffsetOutOfRangeError(
                f"snapshot at {snapshot_id.end_offset} is beyond the log end {self.end_offset}"
            )

    def delete_segments_below(self, offset: int) -> int:
        """Delete segments wholly below ``offset`` (which a snapshot must cover), never the
        active one. Returns how many were deleted."""
        latest = self.latest_snapshot()
        if latest is None or offset > latest.end_offset:
            raise ValueError(f"no snapshot covers the offsets below {offset}")
        deleted = 0
        while len(self._segments) > 1 and self._segments[0].next_offset <= offset:
            seg = self._segments.pop(0)
            seg.close()
            seg.path.unlink()
            deleted += 1
        if deleted:
            fsync_dir(self.directory)
            self._rebuild_epochs()
        return deleted

    def snapshot_chunk(
        self, snapshot_id: SnapshotId, position: int, max_bytes: int
    ) -> tuple[bytes, int] | None:
        """Up to ``max_bytes`` of a snapshot file from ``position``, and the file's size;
        None if this log has no such snapshot (any more)."""
        return read_chunk(self.snapshot_path(snapshot_id), position, max_bytes)

    def install_snapshot(self, snapshot_id: SnapshotId, data: bytes) -> None:
        """Replace the whole log with a snapshot fetched from the leader: the snapshot is
        written and checked (header, footer, every CRC) under a temporary name, made
        durable, renamed; only then are the segments and older snapshots deleted and
        the log restarted empty at ``snapshot_id.end_offset``. A bad snapshot raises
        :class:`CorruptLogError` and leaves the log as it was."""
        store_fetched(self.directory, snapshot_id, data)
        # The snapshot is durable: from here a crash leaves segments wholly below it,
        # which the next open drops (or a log ending below it, which restarts there).
        old_segments, self._segments = self._segments, []
        self._new_segment(snapshot_id.end_offset)
        for seg in old_segments:
            seg.close()
            seg.path.unlink()
        for old in list_snapshots(self.directory):
            if old != snapshot_id:
                self.snapshot_path(old).unlink()
        fsync_dir(self.directory)
        self._durability.unflushed = 0  # the segments they were in are gone
        self._rebuild_epochs()

    def delete_snapshots_before(self, snapshot_id: SnapshotId) -> None:
        """Delete snapshots older than ``snapshot_id`` (retention keeps the latest)."""
        for old in list_snapshots(self.directory):
            if old < snapshot_id:
                self.snapshot_path(old).unlink()

    # --- closing --------------------------------------------------------------------------

    def close(self) -> None:
        try:
            if not self.read_only:
                self.flush()
        finally:
            for seg in self._segments:
                seg.close()
            self._segments = []
            if self._lock is not None:
                self._lock.release()
                self._lock = None

    def __enter__(self) -> MetadataLog:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
