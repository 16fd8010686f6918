"""Snapshots: ``<endOffset:020>-<epoch:010>.checkpoint`` files in the log directory.

A snapshot holds the records that rebuild the image as of ``end_offset`` (exclusive:
it covers offsets below it), framed as log batches. The first record is a
SnapshotHeaderRecord and the last a SnapshotFooterRecord, so a snapshot cut short
is detected even when every batch in it is intact.

Durability: written to ``<name>.part``, fsynced, renamed into place, and the
directory fsynced; a crash leaves either no snapshot or a whole one (``.part``
files are left-overs, deleted when the log opens).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from migration.common import files
from migration.log.batch import batched_by_bytes, decode_records, encode_batch, frame_record
from migration.log.errors import CorruptLogError
from migration.log.files import open_regular
from migration.log.frame_file import FrameFile
from migration.proto.metadata_pb2 import MetadataRecord
from migration.records.kinds import kind_of

SUFFIX = ".checkpoint"
PARTIAL = ".part"
DEFAULT_BATCH_BYTES = 1 << 20
# A snapshot is fdatasynced every this many bytes as it is written (a million partitions:
# ~40 MB), so its final fsync never leaves the metadata log's fsyncs waiting behind it.
SYNC_EVERY_BYTES = 4 << 20


@dataclass(frozen=True, slots=True, order=True)
class SnapshotId:
    end_offset: int
    epoch: int

    @property
    def file_name(self) -> str:
        return f"{self.end_offset:020d}-{self.epoch:010d}{SUFFIX}"

    @classmethod
    def parse(cls, name: str) -> SnapshotId | None:
        stem = name.removesuffix(SUFFIX)
        offset, dash, epoch = stem.partition("-")
        if (
            name.endswith(SUFFIX)
            and dash
            and len(offset) == 20
            and len(epoch) == 10
            and offset.isdigit()
            and epoch.isdigit()
        ):
            return cls(int(offset), int(epoch))
        return None


def list_snapshots(directory: Path) -> list[SnapshotId]:
    """Whole snapshots in ``directory``, oldest first."""
    found = (SnapshotId.parse(p.name) for p in directory.iterdir())
    return sorted(s for s in found if s is not None)


def remove_partial_snapshots(directory: Path) -> None:
    for p in directory.glob(f"*{SUFFIX}{PARTIAL}"):
        p.unlink()


def write_snapshot(
    directory: Path,
    snapshot_id: SnapshotId,
    records: Iterable[MetadataRecord],
    control: Sequence[MetadataRecord] = (),
    batch_bytes: int = DEFAULT_BATCH_BYTES,
) -> Path:
    """Write a snapshot atomically (see the module doc) and return its path. The first
    batch holds the header and ``control`` alone (Kafka's KRaftVersionRecord and
    VotersRecord: the voter set in force at the snapshot's end, which Raft reads back
    from that batch alone); readers of the image pass control records over."""
    now_ms = int(time.time() * 1000)
    header = MetadataRecord()
    header.snapshot_header_record.last_contained_log_timestamp = now_ms
    footer = MetadataRecord()
    footer.snapshot_footer_record.SetInParent()

    def batches() -> Iterator[bytes]:
        first = [frame_record(r.SerializeToString()) for r in (header, *control)]
        yield encode_batch(0, snapshot_id.epoch, now_ms, first)
        offset = len(first)
        encoded = (r.SerializeToString() for r in _framed(records, footer))
        for batch in batched_by_bytes(encoded, batch_bytes):
            yield encode_batch(offset, snapshot_id.epoch, now_ms, batch)
            offset += len(batch)

    return write_whole(directory / snapshot_id.file_name, batches(), SYNC_EVERY_BYTES)


def write_whole(final: Path, chunks: Iterable[bytes], sync_every: int | None = None) -> Path:
    """``chunks`` as the file ``final``, whole or not at all: written to
    ``<name>.part`` (a left-over the next open deletes), fsynced (every ``sync_every``
    bytes too: :func:`~migration.common.files.write_synced`), renamed, the directory
    fsynced."""
    part = final.with_name(final.name + PARTIAL)
    fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
    try:
        files.write_synced(fd, chunks, sync_every)
    except BaseException:
        os.close(fd)
        part.unlink(missing_ok=True)
        raise
    os.close(fd)
    os.replace(part, final)
    files.fsync_dir(final.parent)
    return final


def snapshot_body(
    path: Path, records: Iterable[tuple[int, MetadataRecord]]
) -> Iterator[MetadataRecord]:
    """The records of a snapshot between its SnapshotHeaderRecord (first) and
    SnapshotFooterRecord (last), from (byte position of its batch, record) pairs; other
    control records (Kafka's KRaftVersion, Voters) are passed over. CorruptLogError
    when the header or footer is missing or records follow the footer."""
    started = footer_seen = False
    end = 0
    for end, record in records:
        kind = kind_of(record)
        if not started:
            if kind.type_name != "SnapshotHeaderRecord":
                raise CorruptLogError(path, 0, "snapshot does not start with its header")
            started = True
        elif footer_seen:
            raise CorruptLogError(path, end, "records after the snapshot footer")
        elif kind.type_name == "SnapshotFooterRecord":
            footer_seen = True
        elif not kind.is_control:
            yield record
    if not footer_seen:
        raise CorruptLogError(path, None, "snapshot has no footer (cut short)")


def store_fetched(directory: Path, snapshot_id: SnapshotId, data: bytes) -> Path:
    """A snapshot fetched from the leader, made durable as ``snapshot_id``'s file: written
    and checked (header, footer, every CRC) under a temporary name, fsynced, renamed, the
    directory fsynced. A bad snapshot raises CorruptLogError and leaves nothing behind."""
    final = directory / snapshot_id.file_name
    part = final.with_name(final.name + PARTIAL)
    with open(part, "wb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())
    try:
        for _ in read_snapshot(part):
            pass
    except CorruptLogError:
        part.unlink()
        raise
    os.replace(part, final)
    files.fsync_dir(directory)
    return final


def read_chunk(path: Path, position: int, max_bytes: int) -> tuple[bytes, int] | None:
    """Up to ``max_bytes`` of a snapshot file from ``position``, and the file's size;
    None if there is no such file (any more)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        size = os.fstat(fd).st_size
        return os.pread(fd, max(0, min(max_bytes, size - position)), position), size
    finally:
        os.close(fd)


def _framed(records: Iterable[MetadataRecord], footer: MetadataRecord) -> Iterator[MetadataRecord]:
    yield from records
    yield footer


def read_snapshot(path: Path) -> Iterator[MetadataRecord]:
    """The records of a snapshot, without its header and footer. Raises
    :class:`CorruptLogError` on any bad batch, a missing header or a missing footer
    (the records before the error have already been yielded: apply them to a scratch
    image, not a live one). Read a batch at a time (:mod:`.frame_file`): memory is
    bounded by the largest batch, not the file. Anything but a regular file is
    refused before it is read."""
    fd = open_regular(path, os.O_RDONLY)
    try:
        yield from _records(path, FrameFile(fd))
    finally:
        os.close(fd)


def _records(path: Path, frames: FrameFile) -> Iterator[MetadataRecord]:
    return snapshot_body(path, _positioned(path, frames))


def _positioned(path: Path, frames: FrameFile) -> Iterator[tuple[int, MetadataRecord]]:
    pos, expected = 0, 0
    while pos < frames.size:
        found = frames.header(pos)
        if isinstance(found, str):
            raise CorruptLogError(path, pos, found)
        data, header = found
        if header.base_offset != expected:
            raise CorruptLogError(path, pos, f"batch {header.base_offset} where {expected} was due")
        try:
            records = decode_records(data, 0, header)
        except ValueError as exc:
            raise CorruptLogError(path, pos, f"undecodable records: {exc}") from None
        for record in records:
            yield pos, record
        pos += header.size
        expected = header.next_offset
