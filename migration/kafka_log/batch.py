"""Kafka's record batch, magic 2, as a metadata log holds it.

Layout (big-endian)::

    baseOffset           int64
    batchLength          int32   bytes that follow this field
    partitionLeaderEpoch int32
    magic                int8    2
    crc                  uint32  CRC32C of every byte from attributes to the end
    attributes           int16   bits 0-2 compression, 3 timestamp type,
                                 4 transactional, 5 control, 6 delete horizon
    lastOffsetDelta      int32
    baseTimestamp        int64
    maxTimestamp         int64
    producerId           int64
    producerEpoch        int16
    baseSequence         int32
    recordsCount         int32
    records                      compressed as a whole when attributes say so

and each record: varint length, int8 attributes, varlong timestampDelta, varint
offsetDelta, varint keyLength + key, varint valueLength + value, varint header count
+ headers (varints are zig-zag signed; -1 is a null key or value).

Contract: :func:`parse_header` checks the frame (length within bounds and the bytes
left, magic, CRC) before anything in it is believed; :func:`decode_records` decodes
its records (decompressing with cramjam: gzip, snappy -- raw or snappy-java's framing
--, lz4 frames, zstd -- into at most ``MAX_DECOMPRESSED_BATCH_BYTES``, a larger output
refused as a decompression bomb with the cap named, never held whole);
:func:`encode_batch` writes a batch, and writing back what :func:`decode_records` read
from an uncompressed batch gives the same bytes.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol

import cramjam
import google_crc32c

from migration.common.limits import MAX_BATCH_BYTES, MAX_DECOMPRESSED_BATCH_BYTES
from migration.common.snappy import (
    SNAPPY_MAGIC,
    raw_snappy_into,
    raw_snappy_length,
    xerial_blocks,
    xerial_into,
    xerial_total,
)
from migration.kafka_log.codec import Buf, RecordFormatError, read_uvarint, write_uvarint

HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
LENGTH_FROM = 12  # batchLength counts the bytes after baseOffset and itself
CRC_FROM = 21  # the CRC covers attributes to the end
MAGIC_AT = 16
MAGIC = 2

COMPRESSION = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
CONTROL_FLAG = 0x20
MIN_RECORD_BYTES = 7  # length, attributes, timestamp and offset deltas, key, value, headers
NO_PRODUCER_ID = -1


class KafkaRecordData(NamedTuple):
    """One record of a batch, before its key and value are read as metadata (a tuple:
    a batch of a million records builds a million of them)."""

    offset_delta: int
    timestamp_delta: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    attributes: int = 0


@dataclass(frozen=True, slots=True)
class KafkaBatchHeader:
    base_offset: int
    leader_epoch: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    count: int
    size: int  # the whole batch, header included

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG)

    @property
    def compression(self) -> str:
        return COMPRESSION.get(self.attributes & 7, f"unknown ({self.attributes & 7})")

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1


def frame_size(buf: Buf, pos: int) -> int | str:
    """The size of the batch at ``pos``, or what is wrong with its length (a
    caller tells a torn tail from corruption by whether the length reaches past the
    end)."""
    if pos + LENGTH_FROM > len(buf):
        return "a batch header cut short"
    length: int = struct.unpack_from(">i", buf, pos + 8)[0]
    if length < HEADER_SIZE - LENGTH_FROM or length > MAX_BATCH_BYTES:
        return f"batch length {length} is out of bounds"
    return length + LENGTH_FROM


def parse_header(buf: Buf, pos: int) -> KafkaBatchHeader:
    """The header of the whole batch at ``pos`` (its bytes must all be in ``buf``), its
    magic and CRC checked."""
    size = frame_size(buf, pos)
    if isinstance(size, str):
        raise RecordFormatError(size)
    if pos + size > len(buf):
        raise RecordFormatError(f"batch of {size} bytes cut short at {len(buf) - pos}")
    (base, _, epoch, magic, crc, attrs, lod, base_ts, max_ts, pid, pepoch, seq, count) = (
        HEADER.unpack_from(buf, pos)
    )
    if magic != MAGIC:
        raise RecordFormatError(f"record batch magic {magic}, not {MAGIC}")
    actual = google_crc32c.value(bytes(buf[pos + CRC_FROM : pos + size]))
    if actual != crc:
        raise RecordFormatError(f"CRC32C mismatch (stored {crc:#010x}, computed {actual:#010x})")
    if count < 0 or lod < 0 or base < 0:
        raise RecordFormatError(f"records count {count}, last offset delta {lod}")
    return KafkaBatchHeader(base, epoch, attrs, lod, base_ts, max_ts, pid, pepoch, seq, count, size)


def _decompressed(codec: int, data: memoryview) -> bytearray:
    """The records a compressed batch holds, at most
    :data:`~migration.common.limits.MAX_DECOMPRESSED_BATCH_BYTES` of them: snappy by the
    lengths its blocks declare (checked before anything is allocated), the other codecs
    into a buffer grown as they need it. RecordFormatError past the cap (naming it) or
    for data that does not decompress."""
    if codec == 2:
        try:
            return _unsnappied(data)
        except ValueError as exc:  # its text names the byte and the cap
            raise RecordFormatError(f"snappy data: {exc}") from None
    module = _STREAMED.get(codec)
    if module is None:
        raise RecordFormatError(f"unknown compression codec {codec}")
    try:
        return _grown(COMPRESSION[codec], module, data)
    except cramjam.DecompressionError as exc:
        raise RecordFormatError(f"{COMPRESSION[codec]} data does not decompress: {exc}") from None


class _Codec(Protocol):
    """What cramjam's gzip, lz4 and zstd modules offer: decompression into a buffer."""

    def decompress_into(self, data: memoryview, out: bytearray, /) -> int: ...


_STREAMED: dict[int, _Codec] = {1: cramjam.gzip, 3: cramjam.lz4, 4: cramjam.zstd}
_OVERFLOW = "failed to write whole buffer"  # cramjam's words for an output buffer too small
_FIRST_GUESS = 16  # times the compressed size: the first buffer tried
_MIN_BUFFER = 1 << 16


def _grown(name: str, codec: _Codec, data: memoryview) -> bytearray:
    """``data`` decompressed into a buffer doubled from a guess until it holds the whole
    (cramjam stops at a full buffer: a bomb costs the cap, never more); past the cap,
    RecordFormatError."""
    cap = MAX_DECOMPRESSED_BATCH_BYTES
    size = min(max(len(data) * _FIRST_GUESS, _MIN_BUFFER), cap)
    while True:
        out = bytearray(size)
        try:
            written = codec.decompress_into(data, out)
        except cramjam.DecompressionError as exc:
            if str(exc) != _OVERFLOW:
                raise
            if size == cap:
                raise RecordFormatError(
                    f"{name} data decompresses past {cap} bytes, the cap on one batch"
                ) from None
            del out  # the next buffer replaces this one, never sits beside it
            size = min(size * 2, cap)
            continue
        del out[written:]
        return out


def _unsnappied(data: memoryview) -> bytearray:
    """Snappy as Kafka writes it, snappy-java's framing or one raw block, into a buffer
    of the length its blocks declare; ValueError past the cap."""
    cap = MAX_DECOMPRESSED_BATCH_BYTES
    if data[: len(SNAPPY_MAGIC)] == SNAPPY_MAGIC:
        blocks = xerial_blocks(data)
        out = bytearray(xerial_total(blocks, cap))
        with memoryview(out) as view:
            xerial_into(data, blocks, view)
        return out
    size = raw_snappy_length(data)
    if size > cap:
        raise ValueError(f"snappy block decompresses past {cap} bytes, the cap on one batch")
    out = bytearray(size)
    with memoryview(out) as view:
        raw_snappy_into(data, view)
    return out


def _svarint(buf: Buf, pos: int) -> tuple[int, int]:
    n = buf[pos]
    if n >= 0x80:
        n, pos = read_uvarint(buf, pos)
        return (n >> 1) ^ -(n & 1), pos
    return (n >> 1) ^ -(n & 1), pos + 1


def _blob(data: memoryview, pos: int, what: str) -> tuple[bytes | None, int]:
    """A key, value or header field at ``pos``: its bytes (copied) or None, and where it
    ends."""
    n, pos = _svarint(data, pos)
    if n < 0:
        return None, pos
    end = pos + n
    if end > len(data):
        raise RecordFormatError(f"record {what} of {n} bytes past the end")
    return bytes(data[pos:end]), end


def decode_records(buf: Buf, pos: int, header: KafkaBatchHeader) -> list[KafkaRecordData]:
    """The records of the (checked) batch at ``pos``, read through a view of ``buf`` (or
    of its records decompressed, see :func:`_decompressed`): only keys, values and
    headers are copied. A records count its bytes cannot hold (a record takes at least
    :data:`MIN_RECORD_BYTES`) is refused before any record is read, and before anything
    is decompressed when even the cap could not hold it."""
    codec = header.attributes & 7
    with memoryview(buf) as whole, whole[pos + HEADER_SIZE : pos + header.size] as stored:
        if not codec:
            return _checked_records(stored, header)
        _check_count(header.count, MAX_DECOMPRESSED_BATCH_BYTES)
        records = _decompressed(codec, stored)
    with memoryview(records) as view:
        return _checked_records(view, header)


def _check_count(count: int, size: int) -> None:
    """RecordFormatError when ``count`` records cannot fit in ``size`` bytes."""
    if count > size // MIN_RECORD_BYTES:
        raise RecordFormatError(
            f"records cut short: {count} cannot fit in {size} bytes "
            f"(a record takes at least {MIN_RECORD_BYTES})"
        )


def _checked_records(data: memoryview, header: KafkaBatchHeader) -> list[KafkaRecordData]:
    """The batch's records from ``data``, which they must fill exactly."""
    _check_count(header.count, len(data))
    try:
        records, at = _records(data, header.count)
    except IndexError:
        raise RecordFormatError("records cut short inside their batch") from None
    if at != len(data):
        raise RecordFormatError(f"{len(data) - at} bytes after the batch's {header.count} records")
    if records and records[-1].offset_delta != header.last_offset_delta:
        raise RecordFormatError(
            f"last record's offset delta {records[-1].offset_delta}, "
            f"the batch says {header.last_offset_delta}"
        )
    return records


def _records(data: memoryview, count: int) -> tuple[list[KafkaRecordData], int]:
    """``count`` records from the start of ``data``, and where they end. The loop reads
    one-byte varints inline (a metadata record's framing is almost all of them): a
    million-record snapshot spends most of its framing time here."""
    records: list[KafkaRecordData] = []
    append = records.append
    at, size = 0, len(data)
    for _ in range(count):
        length = data[at]
        if length < 0x80:
            length, at = (length >> 1) ^ -(length & 1), at + 1
        else:
            length, at = _svarint(data, at)
        end = at + length
        if length < 0 or end > size:
            raise RecordFormatError(f"record of {length} bytes past the end of its batch")
        attributes, ts, delta = data[at], data[at + 1], data[at + 2]
        if ts < 0x80 and delta < 0x80:
            ts, delta, p = (ts >> 1) ^ -(ts & 1), (delta >> 1) ^ -(delta & 1), at + 3
        else:
            ts, p = _svarint(data, at + 1)
            delta, p = _svarint(data, p)
        if data[p] == 1:  # a null key (-1), as every metadata record has
            key, p = None, p + 1
        else:
            key, p = _blob(data, p, "key")
        value, p = _blob(data, p, "value")
        if p + 1 == end and data[p] == 0:  # no headers, the common case
            append(KafkaRecordData(delta, ts, key, value, (), attributes))
            at = end
            continue
        n_headers, p = _svarint(data, p)
        headers = []
        for _ in range(n_headers):
            hkey, p = _blob(data, p, "header key")
            hvalue, p = _blob(data, p, "header value")
            headers.append(((hkey or b"").decode(errors="replace"), hvalue))
        if p != end:
            raise RecordFormatError(f"record length {length} does not match its fields")
        append(KafkaRecordData(delta, ts, key, value, tuple(headers), attributes))
        at = end
    return records, at


def _zigzag(out: bytearray, n: int) -> None:
    write_uvarint(out, (n << 1) ^ (n >> 63))


def _write_blob(out: bytearray, value: bytes | None) -> None:
    if value is None:
        _zigzag(out, -1)
    else:
        _zigzag(out, len(value))
        out += value


def encode_record(r: KafkaRecordData) -> bytes:
    body = bytearray((r.attributes & 0xFF,))
    _zigzag(body, r.timestamp_delta)
    _zigzag(body, r.offset_delta)
    _write_blob(body, r.key)
    _write_blob(body, r.value)
    _zigzag(body, len(r.headers))
    for hkey, hvalue in r.headers:
        _write_blob(body, hkey.encode())
        _write_blob(body, hvalue)
    out = bytearray()
    _zigzag(out, len(body))
    return bytes(out + body)


def encode_batch(
    base_offset: int,
    leader_epoch: int,
    records: Sequence[KafkaRecordData],
    *,
    base_timestamp: int,
    max_timestamp: int | None = None,
    control: bool = False,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    attributes: int | None = None,
) -> bytes:
    """An uncompressed batch (as Kafka's controller writes its log and snapshots)."""
    if not records:
        raise ValueError("a batch holds at least one record")
    attrs = (CONTROL_FLAG if control else 0) if attributes is None else attributes
    if attrs & 7:
        raise ValueError("encode_batch writes uncompressed batches only")
    body = b"".join(encode_record(r) for r in records)
    last_ts = base_timestamp + max(r.timestamp_delta for r in records)
    head = struct.pack(
        ">hiqqqhii",
        attrs,
        records[-1].offset_delta,
        base_timestamp,
        last_ts if max_timestamp is None else max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        len(records),
    )
    crc = google_crc32c.extend(google_crc32c.value(head), body)
    length = HEADER_SIZE - LENGTH_FROM + len(body)
    return struct.pack(">qiibI", base_offset, length, leader_epoch, MAGIC, crc) + head + body


def reencode(header: KafkaBatchHeader, records: Sequence[KafkaRecordData]) -> bytes:
    """A batch written again from its decoded records (uncompressed
    batches only): the proof that the reader lost nothing."""
    return encode_batch(
        header.base_offset,
        header.leader_epoch,
        records,
        base_timestamp=header.base_timestamp,
        max_timestamp=header.max_timestamp,
        producer_id=header.producer_id,
        producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence,
        attributes=header.attributes,
    )
