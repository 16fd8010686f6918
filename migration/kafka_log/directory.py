"""A Kafka controller's metadata log directory, read-only.

``__cluster_metadata-0`` holds segments (``<offset:020>.log``; their ``.index`` and
``.timeindex`` are ignored), snapshots (``<end offset:020>-<epoch:010>.checkpoint``),
``quorum-state``, ``leader-epoch-checkpoint`` and ``partition.metadata``; the log
directory above it holds ``meta.properties`` and, on a controller, ``bootstrap.checkpoint``.
Either directory may be named.

:class:`KafkaMetadataLog` offers the read side of :class:`~migration.log.metadata_log.
MetadataLog` (``problems``, ``torn_tail``, ``start_offset``, ``end_offset``, ``read``,
``records``, ``snapshots``, ``read_snapshot``), so the image, ``log verify`` and the
audit replay either format alike. Kafka's records are mapped onto the project's
(:mod:`.mapping`); control records (leader changes, snapshot header and footer, the
KRaft version, voters) come as the control records they are. Nothing is written,
locked or cut: a running controller's directory can be read.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path
from types import TracebackType

from migration.kafka_log.files import BatchAt, ScannedFile, Unknown, decode, parse, scan
from migration.kafka_log.prefetch import payloads
from migration.kafka_log.records import KafkaRecord
from migration.kafka_log.side_files import read_meta_properties, side_file_findings
from migration.log.batch import LogBatch
from migration.log.errors import CorruptLogError, OffsetOutOfRangeError
from migration.log.files import require_dir
from migration.log.segment import parse_segment_name
from migration.log.snapshots import SnapshotId, snapshot_body
from migration.proto.metadata_pb2 import MetadataRecord

METADATA_PARTITION = "__cluster_metadata-0"
# Indexes, producer-state snapshots, and what Kafka leaves mid-write or mid-delete (a
# running controller's directory, copied, may hold any of them).
IGNORED_SUFFIXES = (
    ".index",
    ".timeindex",
    ".txnindex",
    ".snapshot",
    ".deleted",
    ".swap",
    ".part",
    ".tmp",
)
SIDE_FILES = ("quorum-state", "leader-epoch-checkpoint", "partition.metadata")


def metadata_dir(path: Path) -> Path:
    """The ``__cluster_metadata-0`` directory ``path`` names or holds."""
    inner = path / METADATA_PARTITION
    return inner if inner.is_dir() else path


class KafkaMetadataLog:
    """Read-only view of a Kafka metadata log. ``skip_unknown``: a record of a type or
    version this reader does not know is passed over (a no-op for the image, listed in
    ``skipped``) instead of stopping the read with CorruptLogError."""

    format = "kafka"

    def __init__(self, directory: Path, *, skip_unknown: bool = False) -> None:
        require_dir(Path(directory))
        self.directory = metadata_dir(Path(directory))
        self.skip_unknown = skip_unknown
        self.problems: list[CorruptLogError] = []
        self.torn_tail: CorruptLogError | None = None
        self.reconciled: list[str] = []
        self.warnings: list[str] = []
        self.skipped: list[str] = []
        self.unknown_files: list[str] = []
        self._segments: list[ScannedFile] = []
        self._snapshots: list[SnapshotId] = []
        names = sorted(p.name for p in self.directory.iterdir())
        segment_names = []
        for name in names:
            if parse_segment_name(name) is not None:
                segment_names.append(name)
            elif (snap := SnapshotId.parse(name)) is not None:
                self._snapshots.append(snap)
            elif name not in SIDE_FILES and not name.endswith(IGNORED_SUFFIXES):
                self.unknown_files.append(name)
        self._snapshots.sort()
        try:
            self._scan_segments(segment_names)
        except BaseException:
            self.close()
            raise
        self.warnings.extend(side_file_findings(self.directory, self._epochs()))
        if self.directory.name == METADATA_PARTITION:
            self.warnings.extend(_log_dir_findings(self.directory.parent))

    def _scan_segments(self, names: list[str]) -> None:
        """Scan every segment whole: damage is recorded (``problems``) and the scan goes
        on, so batches after it -- in the same segment or the next -- are checked too."""
        expected: int | None = None
        epoch = -1
        for i, name in enumerate(names):
            base = parse_segment_name(name)
            assert base is not None
            seg = scan(self.directory / name, base, may_tear=i == len(names) - 1, epoch=epoch)
            if expected is not None and base != expected:
                gap = CorruptLogError(seg.path, None, f"starts at {base}, where {expected} was due")
                seg.problems.insert(0, gap)
                seg.breaks.insert(0, 0)
            self._segments.append(seg)
            self.problems.extend(seg.problems)
            self.torn_tail = seg.torn_tail
            expected = seg.next_offset if seg.batches else expected
            epoch = seg.batches[-1].header.leader_epoch if seg.batches else epoch

    def _epochs(self) -> list[tuple[int, int]]:
        """(epoch, first offset) of every epoch the segments hold."""
        out: list[tuple[int, int]] = []
        for seg in self._segments:
            for at in seg.batches:
                if not out or out[-1][0] != at.header.leader_epoch:
                    out.append((at.header.leader_epoch, at.header.base_offset))
        return out

    # --- the read side of MetadataLog ----------------------------------------------------

    @property
    def segment_paths(self) -> list[Path]:
        return [s.path for s in self._segments]

    @property
    def segments(self) -> list[ScannedFile]:
        """The scanned segments, oldest first (their batches, damage and torn tail)."""
        return list(self._segments)

    @property
    def start_offset(self) -> int:
        """The first segment's base offset (with no batch in any segment: the newest
        snapshot's end)."""
        if any(seg.batches for seg in self._segments):
            base = parse_segment_name(self._segments[0].path.name)
            assert base is not None
            return base
        return self._snapshots[-1].end_offset if self._snapshots else 0

    @property
    def log_start_offset(self) -> int:
        """Kafka's log start offset: the segments' start, or the oldest snapshot's end
        when that is later (once a snapshot covers them, Kafka moves the log start up to
        it and deletes only the segments wholly below it, so the batches below the log
        start that share its segment stay on disk)."""
        first = self._snapshots[0].end_offset if self._snapshots else 0
        return max(self.start_offset, first)

    @property
    def end_offset(self) -> int:
        for seg in reversed(self._segments):
            if seg.batches:
                return seg.batches[-1].header.next_offset
        return self._snapshots[-1].end_offset if self._snapshots else 0

    def _batches_from(self, start: int) -> Iterator[tuple[ScannedFile, BatchAt]]:
        """The whole batches holding ``start`` and every offset after it; CorruptLogError
        (after the batches before it) where damage lies inside that range."""
        if not self.start_offset <= start <= self.end_offset:
            raise OffsetOutOfRangeError(
                f"offset {start} is outside the log [{self.start_offset}, {self.end_offset})"
            )
        pending: CorruptLogError | None = None
        for seg in self._segments:
            damage = seg.damage_before()
            for i, at in enumerate(seg.batches):
                pending = damage.get(i, pending)
                if at.header.next_offset <= start:
                    pending = None  # damage wholly before the range
                    continue
                if pending is not None and at.header.base_offset > start:
                    raise pending  # the range runs through the damage
                pending = None
                yield seg, at
            pending = damage.get(len(seg.batches), pending)
        if pending is not None:
            raise pending  # damage after the last whole batch

    def kafka_batches(
        self, from_offset: int | None = None
    ) -> Iterator[tuple[BatchAt, list[tuple[int, KafkaRecord | Unknown]]]]:
        """Batches from the one holding ``from_offset``, as Kafka's records."""
        start = self.start_offset if from_offset is None else from_offset
        for seg, at in self._batches_from(start):
            yield at, decode(seg, at, self.skip_unknown)

    def read(self, from_offset: int | None = None) -> Iterator[LogBatch]:
        """Batches from the one holding ``from_offset`` (default: the start) to the end."""
        start = self.start_offset if from_offset is None else from_offset
        wanted: dict[Path, list[BatchAt]] = {}
        for seg, at in self._batches_from(start):
            wanted.setdefault(seg.path, []).append(at)
        for seg in self._segments:
            for at, payload, skipped in payloads(seg, wanted.get(seg.path, []), self.skip_unknown):
                self.skipped.extend(skipped)
                yield _log_batch(seg, at, payload)

    def every_batch(self) -> Iterator[tuple[Path, LogBatch | CorruptLogError]]:
        """(segment, batch) for every batch of every segment in file order -- also those
        below the log start or a snapshot -- with each piece of damage in its place (a
        frame found bad by the scan, or a batch whose records do not decode); never
        raises CorruptLogError."""
        for seg in self._segments:
            damage = seg.damage_before()
            bounds = sorted({0, len(seg.batches), *damage})
            for lo, hi in pairwise(bounds):
                if lo in damage:
                    yield seg.path, damage[lo]
                for item in self._decoded(seg, seg.batches[lo:hi]):
                    yield seg.path, item
            if (trailing := damage.get(len(seg.batches))) is not None:
                yield seg.path, trailing

    def _decoded(
        self, seg: ScannedFile, run: list[BatchAt]
    ) -> Iterator[LogBatch | CorruptLogError]:
        done = 0
        while done < len(run):
            try:
                for at, payload, skipped in payloads(seg, run[done:], self.skip_unknown):
                    self.skipped.extend(skipped)
                    batch = _log_batch(seg, at, payload)
                    done += 1
                    yield batch
            except CorruptLogError as exc:  # records that do not decode: go on after them
                yield exc
                done += 1

    def records(self, from_offset: int | None = None) -> Iterator[tuple[int, int, MetadataRecord]]:
        start = self.start_offset if from_offset is None else from_offset
        for batch in self.read(start):
            for i, record in enumerate(batch.records):
                if batch.base_offset + i >= start:
                    yield batch.base_offset + i, batch.epoch, record

    def snapshots(self) -> list[SnapshotId]:
        return list(self._snapshots)

    def latest_snapshot(self) -> SnapshotId | None:
        return self._snapshots[-1] if self._snapshots else None

    def snapshot_path(self, snapshot_id: SnapshotId) -> Path:
        return self.directory / snapshot_id.file_name

    def read_snapshot(self, snapshot_id: SnapshotId) -> Iterator[MetadataRecord]:
        """The records of a snapshot without its header and footer; CorruptLogError for
        a bad batch or a missing header or footer (records before it were yielded)."""
        path = self.snapshot_path(snapshot_id)
        yield from read_kafka_snapshot(path, self.skipped if self.skip_unknown else None)

    def kafka_snapshot(
        self, snapshot_id: SnapshotId
    ) -> Iterator[tuple[BatchAt, list[tuple[int, KafkaRecord | Unknown]]]]:
        """A snapshot's batches as Kafka's records (its header and footer included; the
        offsets are the snapshot's own, from 0); CorruptLogError at damage."""
        file = scan(self.snapshot_path(snapshot_id), 0, may_tear=False)
        try:
            for at in file.batches[: file.breaks[0] if file.breaks else None]:
                yield at, decode(file, at, self.skip_unknown)
            if file.problem is not None:
                raise file.problem
        finally:
            file.close()

    def snapshot_damage(self, snapshot_id: SnapshotId) -> CorruptLogError | None:
        """The first damage in a snapshot's batch frames and CRCs (None: whole); the
        records are not decoded."""
        file = scan(self.snapshot_path(snapshot_id), 0, may_tear=False)
        try:
            return file.problem
        finally:
            file.close()

    def close(self) -> None:
        for seg in self._segments:
            seg.close()
        self._segments = []

    def __enter__(self) -> KafkaMetadataLog:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _log_batch(seg: ScannedFile, at: BatchAt, payload: bytes) -> LogBatch:
    h = at.header
    return LogBatch(h.base_offset, h.leader_epoch, h.max_timestamp, parse(seg, at, payload))


def _log_dir_findings(log_dir: Path) -> list[str]:
    """Warnings about the log directory's ``meta.properties`` and ``bootstrap.checkpoint``
    (they do not change what the log holds)."""
    found: list[str] = []
    try:
        props = read_meta_properties(log_dir)
    except (CorruptLogError, ValueError) as exc:
        found.append(f"{log_dir / 'meta.properties'}: unreadable ({exc})")
    else:
        if props is not None and (
            props.get("version") not in ("0", "1") or not props.get("cluster.id")
        ):
            found.append(f"{log_dir / 'meta.properties'}: not version 0 or 1 with a cluster.id")
    bootstrap = log_dir / "bootstrap.checkpoint"
    if bootstrap.exists():
        try:
            for _ in read_kafka_snapshot(bootstrap):
                pass
        except CorruptLogError as exc:
            found.append(f"bootstrap.checkpoint: {exc}")
    return found


def read_kafka_snapshot(path: Path, skipped: list[str] | None = None) -> Iterator[MetadataRecord]:
    """The records of a Kafka snapshot file (``.checkpoint``, also ``bootstrap.checkpoint``)
    between its SnapshotHeader and SnapshotFooter control records; ``skipped``: as
    :func:`~migration.kafka_log.files.transcode` takes it."""
    file = scan(path, 0, may_tear=False)
    try:
        if file.problem is not None:
            raise file.problem
        yield from snapshot_body(path, _positioned(file, skipped))
    finally:
        file.close()


def _positioned(
    file: ScannedFile, skipped: list[str] | None
) -> Iterator[tuple[int, MetadataRecord]]:
    for at, payload, found in payloads(file, file.batches, skipped is not None):
        if skipped is not None:
            skipped.extend(found)
        for proto in parse(file, at, payload):
            yield at.position, proto
