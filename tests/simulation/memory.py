"""In-memory storage for simulated nodes: a RaftLog that loses what was not flushed
when its node is killed, and a quorum-state store that is always durable (the real one
fsyncs before it returns). Both report to the invariant checker as they change."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence

from migration.log.batch import (
    BatchHeader,
    decode_records,
    encode_batch,
    frame_record,
    parse_header,
)
from migration.log.epochs import EpochStarts
from migration.log.snapshots import SnapshotId
from migration.proto.metadata_pb2 import MetadataRecord, SnapshotHeaderRecord
from migration.raft.quorum_state_store import ElectionState


class SafetyViolationError(AssertionError):
    """A Raft safety property broke; the message names it."""


def split_frames(data: bytes) -> list[tuple[BatchHeader, bytes]]:
    out = []
    pos = 0
    while pos < len(data):
        header = parse_header(data, pos, verify=True)
        if isinstance(header, str):
            raise ValueError(f"bad frame at byte {pos}: {header}")
        out.append((header, data[pos : pos + header.size]))
        pos += header.size
    return out


def _body(snapshot: bytes) -> list[tuple[BatchHeader, bytes]]:
    """A snapshot's batches but its header batch (the first, with the voter set)."""
    frames = split_frames(snapshot)
    if frames and decode_records(frames[0][1], 0, frames[0][0])[0].WhichOneof("record") == (
        "snapshot_header_record"
    ):
        return frames[1:]
    return frames


class MemoryLog:
    """Batches as the frames MetadataLog would store; ``crash`` keeps the flushed ones."""

    def __init__(
        self,
        on_truncate: Callable[[int], None],
        on_append: Callable[[list[tuple[BatchHeader, bytes]], tuple[int, int] | None], None],
    ) -> None:
        self.batches: list[tuple[BatchHeader, bytes]] = []
        self.flushed = 0  # batches that survive a crash
        self.in_flight = 0  # batches a begin_flush covers, until its end_flush
        self.start = 0
        self.snapshot: tuple[SnapshotId, bytes] | None = None
        self._epochs = EpochStarts.before(None, 0)
        self._on_truncate = on_truncate
        self._on_append = on_append

    # --- RaftLog ----------------------------------------------------------------------

    @property
    def start_offset(self) -> int:
        return self.start

    @property
    def end_offset(self) -> int:
        return self.batches[-1][0].next_offset if self.batches else self.start

    @property
    def last_epoch(self) -> int:
        if self.batches:
            return self.batches[-1][0].epoch
        return self.snapshot[0].epoch if self.snapshot else 0

    def latest_snapshot(self) -> SnapshotId | None:
        return self.snapshot[0] if self.snapshot else None

    def append_framed(
        self, framed: Sequence[bytes], epoch: int, timestamp_ms: int | None = None
    ) -> BatchHeader:
        if epoch < self.last_epoch:
            raise SafetyViolationError(f"append in epoch {epoch} after epoch {self.last_epoch}")
        frame = encode_batch(self.end_offset, epoch, timestamp_ms or 0, framed)
        header = BatchHeader(self.end_offset, epoch, len(framed), timestamp_ms or 0, len(frame))
        self._add([(header, frame)])
        return header

    def append_frames(self, data: bytes) -> int:
        frames = split_frames(data)
        expected, last = self.end_offset, self.last_epoch
        for header, _ in frames:
            if header.base_offset != expected or header.epoch < last:
                raise ValueError(
                    f"batch {header.base_offset}/{header.epoch} does not follow {expected}/{last}"
                )
            expected, last = header.next_offset, header.epoch
        self._add(frames)
        return len(frames)

    def _add(self, frames: list[tuple[BatchHeader, bytes]]) -> None:
        prev = (
            (self.batches[-1][0].base_offset, self.batches[-1][0].epoch) if self.batches else None
        )
        self._on_append(frames, prev)
        for header, frame in frames:
            self.batches.append((header, frame))
            self._epochs.note(header.epoch, header.base_offset)

    def _index(self, offset: int) -> int:
        return bisect_right([h.base_offset for h, _ in self.batches], offset) - 1

    def read_frames(self, from_offset: int, max_bytes: int) -> bytes:
        out: list[bytes] = []
        size = 0
        for _, frame in self.batches[max(0, self._index(from_offset)) :]:
            if out and size + len(frame) > max_bytes:
                break
            out.append(frame)
            size += len(frame)
        return b"".join(out)

    def batch_end(self, offset: int) -> int:
        header, _ = self.batches[self._index(offset)]
        if not header.base_offset <= offset < header.next_offset:
            raise ValueError(f"offset {offset} is not in the log")
        return header.next_offset

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int] | None:
        return self._epochs.end_offset_for(epoch, self.end_offset)

    def truncate_to(self, offset: int) -> None:
        self._on_truncate(offset)
        keep = [b for b in self.batches if b[0].base_offset < offset]
        if keep and keep[-1][0].next_offset != offset:
            raise SafetyViolationError(f"truncation to {offset} is inside a batch")
        self.batches = keep
        self.flushed = min(self.flushed, len(keep))
        self.in_flight = min(self.in_flight, len(keep))
        self._epochs.truncate(offset)

    def flush(self) -> None:
        self.flushed = len(self.batches)

    def begin_flush(self) -> Callable[[], None]:
        """The batches now are covered; the world runs the returned no-op and calls
        ``end_flush`` after a disk's delay (a kill before then loses them)."""
        self.in_flight = len(self.batches)
        return lambda: None

    def end_flush(self, error: BaseException | None) -> None:
        if error is not None:
            raise error
        self.flushed, self.in_flight = max(self.flushed, self.in_flight), 0

    def snapshot_chunk(
        self, snapshot_id: SnapshotId, position: int, max_bytes: int
    ) -> tuple[bytes, int] | None:
        if self.snapshot is None or self.snapshot[0] != snapshot_id:
            return None
        data = self.snapshot[1]
        return data[position : position + max_bytes], len(data)

    def install_snapshot(self, snapshot_id: SnapshotId, data: bytes) -> None:
        split_frames(data)  # a damaged snapshot would raise here, as read_snapshot does
        self.snapshot = (snapshot_id, data)
        self.batches = []
        self.flushed = self.in_flight = 0
        self.start = snapshot_id.end_offset
        self._epochs = EpochStarts.before(snapshot_id.epoch, self.start)

    # --- what the simulation does to it -------------------------------------------------

    def take_snapshot(self, end_offset: int, control: Sequence[bytes] = ()) -> SnapshotId | None:
        """Snapshot everything below ``end_offset`` (a batch boundary the node has
        committed) and drop those batches; the snapshot is durable at once. Its first
        batch is a header with ``control`` (the voter set, framed), as a real one's;
        the rest are the log's batches."""
        below = [b for b in self.batches if b[0].base_offset < end_offset]
        if not below or below[-1][0].next_offset != end_offset or len(below) > self.flushed:
            return None
        snapshot_id = SnapshotId(end_offset, below[-1][0].epoch)
        previous = _body(self.snapshot[1]) if self.snapshot else []
        header = frame_record(
            MetadataRecord(snapshot_header_record=SnapshotHeaderRecord()).SerializeToString()
        )
        head = encode_batch(0, snapshot_id.epoch, 0, [header, *control])
        body = b"".join(f for _, f in [*previous, *below])
        self.snapshot = (snapshot_id, head + body)
        self.batches = self.batches[len(below) :]
        self.flushed -= len(below)
        self.in_flight = max(0, self.in_flight - len(below))
        self.start = end_offset
        self._rebuild_epochs()
        return snapshot_id

    def crash(self) -> None:
        """A hard kill: unflushed batches are gone."""
        del self.batches[self.flushed :]
        self.in_flight = 0
        self._rebuild_epochs()

    def _rebuild_epochs(self) -> None:
        self._epochs = EpochStarts.before(
            self.snapshot[0].epoch if self.snapshot else None, self.start
        )
        for header, _ in self.batches:
            self._epochs.note(header.epoch, header.base_offset)

    def all_batches(self) -> list[tuple[BatchHeader, bytes]]:
        """Everything the node holds: the snapshot's batches, then the log's."""
        return (_body(self.snapshot[1]) if self.snapshot else []) + self.batches

    @property
    def durable_end(self) -> int:
        if self.flushed:
            return self.batches[self.flushed - 1][0].next_offset
        return self.start


class MemoryQuorumState:
    """Always durable; refuses (as a violation) any state that goes back."""

    def __init__(self, node_id: int) -> None:
        self.node_id = node_id
        self.state: ElectionState | None = None

    def read(self) -> ElectionState | None:
        return self.state

    def write(self, state: ElectionState) -> None:
        old = self.state
        if old is not None and (
            state.epoch < old.epoch
            or (
                state.epoch == old.epoch
                and old.voted_id is not None
                and state.voted_id != old.voted_id
            )
        ):
            raise SafetyViolationError(
                f"node {self.node_id}: persisted state went back: {old} -> {state}"
            )
        self.state = state
