"""One file of Kafka's metadata log -- a segment or a snapshot -- read batch by batch.

:func:`scan` maps the file read-only and checks every batch's frame (length, magic,
CRC32C) and that base offsets follow each other; it never decodes records.
:func:`decode` turns one checked batch into Kafka's records (what ``log dump`` shows);
:func:`transcode` and :func:`parse` into the project's records (what the replay reads,
possibly transcoded in another process: :mod:`.prefetch`). Every problem names the file,
the batch's byte position and the record's offset.

A file that ends inside a batch (its length reaches past the end, or fewer than 12
bytes are left) has a *torn tail* -- a write cut short by a crash -- when the file is
the log's last segment; anywhere else, and for any other damage, it is corruption.
"""

from __future__ import annotations

import mmap
import os
from dataclasses import dataclass, field
from pathlib import Path

from migration.kafka_log.batch import (
    MAGIC_AT,
    KafkaBatchHeader,
    KafkaRecordData,
    decode_records,
    frame_size,
    parse_header,
)
from migration.kafka_log.codec import RecordFormatError
from migration.kafka_log.records import (
    KafkaRecord,
    UnknownRecordError,
    decode_control,
    decode_metadata,
)
from migration.kafka_log.transcode import add_control, add_metadata, add_no_op, parse_payload
from migration.log.errors import CorruptLogError
from migration.log.files import open_regular
from migration.proto.metadata_pb2 import MetadataRecord

Bytes = bytes | mmap.mmap


@dataclass(frozen=True, slots=True)
class BatchAt:
    position: int
    header: KafkaBatchHeader


@dataclass
class ScannedFile:
    """One file's batch frames. ``problems`` is every piece of damage found, in file
    order; ``breaks[i]`` is the index in ``batches`` of the first batch after
    ``problems[i]`` (``len(batches)`` when nothing whole follows it)."""

    path: Path
    data: Bytes
    batches: list[BatchAt] = field(default_factory=list)
    problems: list[CorruptLogError] = field(default_factory=list)
    breaks: list[int] = field(default_factory=list)
    torn_tail: CorruptLogError | None = None

    @property
    def problem(self) -> CorruptLogError | None:
        """The first damage (None: the file is whole)."""
        return self.problems[0] if self.problems else None

    @property
    def next_offset(self) -> int | None:
        return self.batches[-1].header.next_offset if self.batches else None

    def damage_before(self) -> dict[int, CorruptLogError]:
        """batch index -> the damage just before that batch (the first, if several)."""
        out: dict[int, CorruptLogError] = {}
        for index, problem in zip(self.breaks, self.problems, strict=True):
            out.setdefault(index, problem)
        return out

    def _damaged(self, problem: CorruptLogError) -> None:
        self.problems.append(problem)
        self.breaks.append(len(self.batches))

    def close(self) -> None:
        if isinstance(self.data, mmap.mmap):
            self.data.close()


def map_file(path: Path) -> Bytes:
    """``path`` mapped read-only (an empty file: no bytes)."""
    fd = open_regular(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        return mmap.mmap(fd, size, access=mmap.ACCESS_READ) if size else b""
    finally:
        os.close(fd)


def scan(path: Path, first_offset: int | None, may_tear: bool, epoch: int = -1) -> ScannedFile:
    """Every batch frame of ``path``; the first must start at ``first_offset`` (None:
    anywhere), no leader epoch may be below ``epoch`` or the one before it.

    Damage does not end the scan: it is recorded (``problems``, ``breaks``) and the scan
    goes on at the next place a whole, valid batch starts (its CRC checked), so every
    batch of the file is checked. A cut-short batch with nothing whole after it is a torn
    tail (``torn_tail``) when ``may_tear``, damage otherwise."""
    out = ScannedFile(path, map_file(path))
    data, pos, expected = out.data, 0, first_offset
    last_epoch = epoch
    while pos < len(data):
        size = frame_size(data, pos)
        if isinstance(size, str) or pos + size > len(data):
            cut = isinstance(size, int) or "cut short" in size
            what = size if isinstance(size, str) else f"a batch of {size} bytes runs past the end"
            later = _whole_batch_after(data, pos, expected)
            if later is not None:
                what += f", yet a whole batch follows at byte {later}"
            if cut and may_tear and later is None:
                out.torn_tail = CorruptLogError(path, pos, f"{what} (torn tail)")
                return out
            out._damaged(CorruptLogError(path, pos, what))
            if later is None:
                return out
            pos, expected = later, None
            continue
        try:
            header = parse_header(data, pos)
        except RecordFormatError as exc:
            out._damaged(CorruptLogError(path, pos, str(exc)))
            later = _whole_batch_after(data, pos, expected)  # the length may be the damage
            if later is None:
                return out
            pos, expected = later, None
            continue
        misplaced = None
        if expected is not None and header.base_offset != expected:
            misplaced = f"batch at offset {header.base_offset} where {expected} was due"
        elif header.leader_epoch < last_epoch:
            misplaced = f"leader epoch {header.leader_epoch} after epoch {last_epoch}"
        if misplaced is not None:  # whole, but not where it belongs: left out, the next taken
            out._damaged(CorruptLogError(path, pos, misplaced))
            expected = None
        else:
            last_epoch = header.leader_epoch
            out.batches.append(BatchAt(pos, header))
            expected = header.next_offset
        pos += size
    return out


def _whole_batch_after(data: Bytes, pos: int, expected: int | None) -> int | None:
    """Where a whole, valid batch starts after ``pos`` (None: nowhere): a crash tears
    only the end of a file, so a bad length with whole batches behind it is damage."""
    low = 0 if expected is None else expected
    at = pos + 1
    while True:
        at = data.find(b"\x02", at + MAGIC_AT) - MAGIC_AT  # candidates: magic 2 in place
        if at < pos + 1:
            return None
        base = int.from_bytes(data[at : at + 8], "big", signed=True)
        if low <= base < low + (1 << 31):
            try:
                parse_header(data, at)
                return at
            except RecordFormatError:
                pass
        at += 1


@dataclass(frozen=True, slots=True)
class Unknown:
    """A record this reader cannot read (kept by ``--skip-unknown``): why."""

    problem: str


def _batch_records(file: ScannedFile, at: BatchAt) -> list[KafkaRecordData]:
    header = at.header
    try:
        records = decode_records(file.data, at.position, header)
    except RecordFormatError as exc:
        problem = f"batch {header.base_offset}: {exc}"
        raise CorruptLogError(file.path, at.position, problem) from None
    for i, r in enumerate(records):
        if r.offset_delta != i:
            offset = header.base_offset + r.offset_delta
            raise CorruptLogError(
                file.path, at.position, f"offset {offset}: offset delta {r.offset_delta} at {i}"
            )
    return records


def decode(
    file: ScannedFile, at: BatchAt, skip_unknown: bool = False
) -> list[tuple[int, KafkaRecord | Unknown]]:
    """(offset, record) of every record of the checked batch ``at``, as Kafka's records.
    CorruptLogError for anything wrong, also an unknown record type or version unless
    ``skip_unknown`` (it is then an :class:`Unknown`)."""
    out: list[tuple[int, KafkaRecord | Unknown]] = []
    control = at.header.is_control
    for i, r in enumerate(_batch_records(file, at)):
        offset = at.header.base_offset + i
        try:
            out.append(
                (offset, decode_control(r.key, r.value) if control else decode_metadata(r.value))
            )
        except UnknownRecordError as exc:
            if not skip_unknown:
                raise CorruptLogError(file.path, at.position, f"offset {offset}: {exc}") from None
            out.append((offset, Unknown(str(exc))))
        except RecordFormatError as exc:
            raise CorruptLogError(file.path, at.position, f"offset {offset}: {exc}") from None
    return out


def transcode(file: ScannedFile, at: BatchAt, skipped: list[str] | None = None) -> bytes:
    """The records of the checked batch ``at`` as a serialized RecordBatchPayload of the
    project's records (what :func:`parse` reads). An unknown record is
    CorruptLogError unless ``skipped`` collects it; it is then a NoOpRecord (it changes
    nothing)."""
    payload = bytearray()
    control = at.header.is_control
    for i, r in enumerate(_batch_records(file, at)):
        try:
            if control:
                add_control(payload, r.key, r.value)
            else:
                add_metadata(payload, r.value)
        except RecordFormatError as exc:
            problem = f"offset {at.header.base_offset + i}: {exc}"
            if skipped is None or not isinstance(exc, UnknownRecordError):
                raise CorruptLogError(file.path, at.position, problem) from None
            skipped.append(f"{file.path} {problem}")
            add_no_op(payload)
    return bytes(payload)


def parse(file: ScannedFile, at: BatchAt, payload: bytes) -> list[MetadataRecord]:
    """The records :func:`transcode` serialized (CorruptLogError naming the batch)."""
    try:
        return parse_payload(payload)
    except RecordFormatError as exc:
        problem = f"batch {at.header.base_offset}: {exc}"
        raise CorruptLogError(file.path, at.position, problem) from None
