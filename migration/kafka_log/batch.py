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
--, lz4 frames, zstd); :func:`encode_batch` writes a batch, and writing back what
:func:`decode_records` read from an uncompressed batch gives the same bytes.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import cramjam
import google_crc32c

from migration.common.limits import MAX_BATCH_BYTES
from migration.common.snappy import xerial_snappy
from migration.kafka_log.codec import Buf, RecordFormatError, read_uvarint, write_uvarint

HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
LENGTH_FROM = 12  # batchLength counts the bytes after baseOffset and itself
CRC_FROM = 21  # the CRC covers attributes to the end
MAGIC_AT = 16
MAGIC = 2

COMPRESSION = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
CONTROL_FLAG = 0x20
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


def _decompress(codec: int, data: bytes) -> bytes:
    try:
        if codec == 1:
            return bytes(cramjam.gzip.decompress(data))
        if codec == 2:
            if data.startswith(b"\x82SNAPPY\x00"):
                return xerial_snappy(data)
            return bytes(cramjam.snappy.decompress_raw(data))
        if codec == 3:
            return bytes(cramjam.lz4.decompress(data))
        if codec == 4:
            return bytes(cramjam.zstd.decompress(data))
    except (cramjam.DecompressionError, ValueError) as exc:
        raise RecordFormatError(f"{COMPRESSION[codec]} data does not decompress: {exc}") from None
    raise RecordFormatError(f"unknown compression codec {codec}")


def _svarint(buf: Buf, pos: int) -> tuple[int, int]:
    n = buf[pos]
    if n >= 0x80:
        n, pos = read_uvarint(buf, pos)
        return (n >> 1) ^ -(n & 1), pos
    return (n >> 1) ^ -(n & 1), pos + 1


def _blob(data: bytes, pos: int, what: str) -> tuple[bytes | None, int]:
    n, pos = _svarint(data, pos)
    if n < 0:
        return None, pos
    end = pos + n
    if end > len(data):
        raise RecordFormatError(f"record {what} of {n} bytes past the end")
    return data[pos:end], end


def decode_records(buf: Buf, pos: int, header: KafkaBatchHeader) -> list[KafkaRecordData]:
    """The records of the (checked) batch at ``pos``."""
    data = bytes(buf[pos + HEADER_SIZE : pos + header.size])
    codec = header.attributes & 7
    if codec:
        data = _decompress(codec, data)
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


def _records(data: bytes, count: int) -> tuple[list[KafkaRecordData], int]:
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
