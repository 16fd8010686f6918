"""The on-disk frame of one batch of records.

Layout (big-endian)::

    length      u32   bytes that follow this field
    crc         u32   CRC32C (Castagnoli) of every byte after this field
    magic       u8    format version, 1
    base_offset i64   offset of the first record
    epoch       i32   leader epoch that wrote the batch
    count       i32   number of records (> 0)
    timestamp   i64   append time, ms since the epoch
    payload           the records: a RecordBatchPayload message (each record as field 1)

The CRC covers the header fields too, so a torn write, a flipped bit or garbage after a
crash is caught wherever it lands; ``length`` is checked against the format's bound
(:data:`MAX_BATCH_BYTES`) and the space left in the file before anything is trusted or
read (:func:`frame_size`). Files are read a frame at a time by :mod:`.frame_file`.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

import google_crc32c
from google.protobuf.message import DecodeError

from migration.common.limits import MAX_BATCH_BYTES
from migration.common.protowire import varint
from migration.proto.metadata_pb2 import MetadataRecord, RecordBatchPayload

MAGIC = 1
LENGTH = struct.Struct(">I")
HEADER = struct.Struct(">IIBqiiq")  # length, crc, magic, base_offset, epoch, count, timestamp
HEADER_SIZE = HEADER.size
CRC_FROM = 8  # the CRC covers bytes from the magic on

_RECORD_TAG = b"\x0a"  # RecordBatchPayload.records: field 1, length-delimited


@dataclass(frozen=True, slots=True)
class BatchHeader:
    base_offset: int
    epoch: int
    count: int
    timestamp_ms: int
    size: int  # whole frame, header included

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.count - 1

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.count


@dataclass(frozen=True, slots=True)
class LogBatch:
    """A decoded batch: records at ``base_offset`` .. ``base_offset + len(records) - 1``."""

    base_offset: int
    epoch: int
    timestamp_ms: int
    records: Sequence[MetadataRecord]

    @property
    def last_offset(self) -> int:
        return self.base_offset + len(self.records) - 1

    @property
    def next_offset(self) -> int:
        return self.base_offset + len(self.records)


_SHORT_PREFIX = [_RECORD_TAG + bytes((n,)) for n in range(0x80)]


def frame_record(encoded: bytes) -> bytes:
    """One serialized MetadataRecord as an element of a batch payload."""
    size = len(encoded)
    if size < 0x80:  # most records: one precomputed prefix
        return _SHORT_PREFIX[size] + encoded
    return _RECORD_TAG + varint(size) + encoded


def framed_size(size: int) -> int:
    """``len(frame_record(encoded))`` for a record of ``size`` serialized bytes."""
    if size < 0x80:
        return len(_SHORT_PREFIX[size]) + size
    return len(_RECORD_TAG) + len(varint(size)) + size


def batched_by_bytes(
    encoded_records: Iterable[bytes], max_bytes: int, max_records: int | None = None
) -> Iterator[list[bytes]]:
    """Frame serialized records and group them, in order, into batches whose whole frame
    (header included) is at most ``max_bytes`` (a single larger record gets a batch of
    its own) and, given ``max_records``, that hold at most that many records."""
    return _grouped(map(frame_record, encoded_records), len, max_bytes, max_records)


def grouped_unframed(
    encoded_records: Iterable[bytes], max_bytes: int, max_records: int | None = None
) -> Iterator[list[bytes]]:
    """The serialized records grouped as :func:`batched_by_bytes` groups them, left
    unframed: for a caller that hands the records on, not the frames (no record is
    framed only to be measured)."""
    return _grouped(encoded_records, lambda e: framed_size(len(e)), max_bytes, max_records)


def _grouped(
    items: Iterable[bytes], size: Callable[[bytes], int], max_bytes: int, max_records: int | None
) -> Iterator[list[bytes]]:
    """The one batching rule: ``items`` in order, each batch's frame (HEADER_SIZE plus each
    item's framed ``size``) at most ``max_bytes`` unless it holds a single item, and at
    most ``max_records`` items."""
    pending: list[bytes] = []
    pending_bytes = HEADER_SIZE
    for item in items:
        framed = size(item)
        if pending and (pending_bytes + framed > max_bytes or len(pending) == max_records):
            yield pending
            pending, pending_bytes = [], HEADER_SIZE
        pending.append(item)
        pending_bytes += framed
    if pending:
        yield pending


def encode_batch(base_offset: int, epoch: int, timestamp_ms: int, framed: Sequence[bytes]) -> bytes:
    """A whole batch frame from records already passed through :func:`frame_record`."""
    if not framed:
        raise ValueError("a batch holds at least one record")
    body = b"".join(framed)
    head = struct.pack(">Bqiiq", MAGIC, base_offset, epoch, len(framed), timestamp_ms)
    crc = google_crc32c.extend(google_crc32c.value(head), body)
    length = 4 + len(head) + len(body)
    if length > MAX_BATCH_BYTES:
        raise ValueError(f"batch of {length} bytes exceeds {MAX_BATCH_BYTES}")
    return LENGTH.pack(length) + struct.pack(">I", crc) + head + body


def frame_size(buf: bytes | memoryview, pos: int, left: int) -> int | str:
    """The size of the frame at ``buf[pos:]`` (header included) from its length field,
    when ``left`` bytes remain from ``pos`` to the end of the file, or why there can be
    no frame there: fewer than a header's bytes, a length the format does not allow, or
    one running past the end. Needs only the header's bytes in ``buf`` (all of them
    when ``left`` allows a header): a length is judged before a byte of the frame is
    read, so none is ever allocated."""
    if left < HEADER_SIZE:
        return f"{left} trailing bytes, shorter than a batch header"
    length: int = LENGTH.unpack_from(buf, pos)[0]
    if length < HEADER_SIZE - 4 or length > MAX_BATCH_BYTES:
        return f"impossible batch length {length}"
    if 4 + length > left:
        return f"batch of {4 + length} bytes but only {left} left in the file"
    return 4 + length


def parse_header(buf: bytes | memoryview, pos: int, verify: bool) -> BatchHeader | str:
    """The header of the batch at ``buf[pos:]`` (the rest of the file), or why there is
    no valid batch there (:func:`frame_size`, then the fields).

    With ``verify`` the CRC of the whole frame is checked too. A string answer means
    "not a batch": a torn tail, garbage, or corruption (the caller decides which).
    """
    size = frame_size(buf, pos, len(buf) - pos)
    if isinstance(size, str):
        return size
    _, crc, magic, base_offset, epoch, count, timestamp = HEADER.unpack_from(buf, pos)
    if verify and google_crc32c.value(bytes(buf[pos + CRC_FROM : pos + size])) != crc:
        return "CRC32C mismatch"
    if magic != MAGIC:
        return f"unknown batch format {magic}"
    if count <= 0 or base_offset < 0:
        return f"bad batch header (count {count}, base offset {base_offset})"
    return BatchHeader(base_offset, epoch, count, timestamp, size)


def decode_records(buf: bytes | memoryview, pos: int, header: BatchHeader) -> list[MetadataRecord]:
    """The records of a batch whose header was verified; ValueError if they do not parse
    or their number disagrees with the header."""
    return list(_payload(buf, pos, header).records)


def _payload(buf: bytes | memoryview, pos: int, header: BatchHeader) -> RecordBatchPayload:
    try:
        payload = RecordBatchPayload.FromString(bytes(buf[pos + HEADER_SIZE : pos + header.size]))
    except DecodeError as exc:
        raise ValueError(f"records do not decode: {exc}") from None
    if len(payload.records) != header.count:
        raise ValueError(f"batch says {header.count} records but holds {len(payload.records)}")
    return payload


def check_batch(buf: bytes | memoryview, pos: int) -> BatchHeader | str:
    """The header of the batch at ``buf[pos:]`` if it is whole: CRC right and records
    that decode; else why not (see :func:`parse_header`)."""
    header = parse_header(buf, pos, verify=True)
    if isinstance(header, str):
        return header
    try:
        _payload(buf, pos, header)
    except ValueError as exc:
        return f"batch at offset {header.base_offset} has a valid CRC but {exc}"
    return header
