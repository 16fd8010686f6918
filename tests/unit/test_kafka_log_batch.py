"""Kafka's record batch v2: read what a real Kafka client writes (kafka-python's batch
builder, with each of Kafka's compression codecs), write what it writes, byte for byte."""

from __future__ import annotations

import struct

import google_crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from migration.kafka_log.batch import (
    CRC_FROM,
    KafkaRecordData,
    decode_records,
    encode_batch,
    parse_header,
    reencode,
)
from migration.kafka_log.codec import RecordFormatError

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def client_batch(codec: int, values: list[bytes | None], base_offset: int, epoch: int) -> bytes:
    """A batch as kafka-python's producer builds it, then placed at ``base_offset`` and
    ``epoch`` as a broker does (neither is covered by the CRC)."""
    builder = DefaultRecordBatchBuilder(2, codec, False, -1, -1, -1, batch_size=1 << 24)
    for i, value in enumerate(values):
        builder.append(i, 1_700_000_000_000 + i, None, value, [])
    raw = bytearray(builder.build())
    struct.pack_into(">q", raw, 0, base_offset)
    struct.pack_into(">i", raw, 12, epoch)
    return bytes(raw)


@pytest.mark.parametrize("name", list(CODECS))
def test_reads_every_codec_a_kafka_client_writes(name: str) -> None:
    values = [b"metadata record %d " % i * 20 for i in range(50)] + [None]
    raw = client_batch(CODECS[name], values, base_offset=1234, epoch=7)
    header = parse_header(raw, 0)
    assert header.compression == name
    assert (header.base_offset, header.leader_epoch, header.next_offset) == (1234, 7, 1285)
    records = decode_records(raw, 0, header)
    assert [r.value for r in records] == values
    assert [r.offset_delta for r in records] == list(range(51))
    assert [r.timestamp_delta for r in records] == list(range(51))


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(st.one_of(st.none(), st.binary(max_size=300)), min_size=1, max_size=20),
    base=st.integers(0, 2**40),
    epoch=st.integers(0, 2**31 - 1),
)
def test_uncompressed_batches_are_written_as_a_kafka_client_writes_them(
    values: list[bytes | None], base: int, epoch: int
) -> None:
    theirs = client_batch(0, values, base, epoch)
    ours = encode_batch(
        base,
        epoch,
        [KafkaRecordData(i, i, None, v) for i, v in enumerate(values)],
        base_timestamp=1_700_000_000_000,
        producer_id=-1,
        attributes=0,
    )
    assert ours == theirs
    header = parse_header(ours, 0)
    assert reencode(header, decode_records(ours, 0, header)) == ours
    read_back = list(DefaultRecordBatch(bytearray(ours)))
    assert [r.value for r in read_back] == values


def test_a_control_batch_carries_the_control_flag() -> None:
    raw = encode_batch(5, 2, [KafkaRecordData(0, 0, b"\x00\x00\x00\x03", b"\x00\x00")],
                       base_timestamp=1, control=True)  # fmt: skip
    header = parse_header(raw, 0)
    assert header.is_control and DefaultRecordBatch(bytearray(raw)).is_control_batch


def test_every_flipped_byte_of_a_batch_is_caught_or_moves_its_offsets() -> None:
    """The CRC covers attributes onwards; base offset and leader epoch are checked by
    the directory reader (contiguity, epochs), the length and magic here."""
    raw = client_batch(0, [b"x" * 10, b"y" * 10], 0, 1)
    for i in range(len(raw)):
        bad = bytearray(raw)
        bad[i] ^= 0x01
        if i < 8 or 12 <= i < 16:  # base offset, leader epoch: outside the CRC
            parse_header(bytes(bad), 0)
            continue
        with pytest.raises(RecordFormatError):
            header = parse_header(bytes(bad), 0)
            decode_records(bytes(bad), 0, header)


def test_records_that_do_not_match_their_batch_are_refused() -> None:
    raw = bytearray(client_batch(0, [b"a", b"b"], 0, 0))
    struct.pack_into(">i", raw, 57, 3)  # three records claimed, two present
    crc = google_crc32c.value(bytes(raw[CRC_FROM:]))
    struct.pack_into(">I", raw, 17, crc)
    header = parse_header(bytes(raw), 0)
    with pytest.raises(RecordFormatError, match="cut short"):
        decode_records(bytes(raw), 0, header)


def test_compressed_garbage_is_a_named_error() -> None:
    raw = bytearray(client_batch(CODECS["zstd"], [b"z" * 500], 0, 0))
    raw[61:70] = b"\x00" * 9
    struct.pack_into(">I", raw, 17, google_crc32c.value(bytes(raw[CRC_FROM:])))
    header = parse_header(bytes(raw), 0)
    with pytest.raises(RecordFormatError, match="zstd data does not decompress"):
        decode_records(bytes(raw), 0, header)
