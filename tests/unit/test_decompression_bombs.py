"""Every decompression bounded: a Kafka batch's records and a ZooKeeper snapshot's
stream decompress to at most their cap, refused past it with the cap and the byte
named; what the format cannot encode (a snappy block declaring more than 22x its size,
more records than their bytes can hold) is refused before anything is decompressed;
ordinary compressed batches and snapshots read as before."""

from __future__ import annotations

import gzip
import struct
from pathlib import Path

import cramjam
import google_crc32c
import pytest

from migration.common.limits import MAX_DECOMPRESSED_BATCH_BYTES
from migration.common.snappy import (
    SNAPPY_MAGIC,
    raw_snappy_length,
    xerial_blocks,
    xerial_snappy,
)
from migration.kafka_log import batch
from migration.kafka_log.batch import (
    CRC_FROM,
    HEADER_SIZE,
    LENGTH_FROM,
    KafkaRecordData,
    decode_records,
    encode_batch,
    parse_header,
)
from migration.kafka_log.codec import RecordFormatError
from migration.zkfiles import datafiles
from migration.zkfiles.datafiles import decompressed, stream_cap
from migration.zkfiles.snapfile import parse_snapshot
from tests.unit.test_zk_datafiles import TREE, snapshot

CODECS = {"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def bomb_batch(base_offset: int, codec: int, body: bytes, count: int = 1, epoch: int = 1) -> bytes:
    """A batch of ``count`` records whose (compressed) records are ``body``, its length
    and CRC right: the project's own encoder writes the header, the body and count are
    swapped in."""
    plain = encode_batch(
        base_offset, epoch, [KafkaRecordData(0, 0, None, b"")], base_timestamp=1_795_000_000_000
    )
    head = bytearray(plain[:HEADER_SIZE])
    struct.pack_into(">i", head, 8, HEADER_SIZE - LENGTH_FROM + len(body))
    struct.pack_into(">h", head, CRC_FROM, codec)
    struct.pack_into(">i", head, CRC_FROM + 2, count - 1)  # lastOffsetDelta
    struct.pack_into(">i", head, HEADER_SIZE - 4, count)  # recordsCount
    struct.pack_into(
        ">I", head, 17, google_crc32c.extend(google_crc32c.value(bytes(head[CRC_FROM:])), body)
    )
    return bytes(head) + body


def records_of(raw: bytes) -> list[KafkaRecordData]:
    return decode_records(raw, 0, parse_header(raw, 0))


def xerial(*blocks: bytes) -> bytes:
    framed = b"".join(len(b).to_bytes(4, "big") + b for b in blocks)
    return SNAPPY_MAGIC + bytes(8) + framed


# --- Kafka batches ----------------------------------------------------------------------


def test_a_batch_of_real_records_reads_the_same_through_every_codec() -> None:
    records = [KafkaRecordData(i, 0, None, b"metadata %d " % i * 30) for i in range(200)]
    plain = encode_batch(0, 1, records, base_timestamp=0)
    body = plain[HEADER_SIZE:]
    squeezed = {
        "gzip": bytes(cramjam.gzip.compress(body)),
        "snappy": xerial(
            bytes(cramjam.snappy.compress_raw(body[:5000])),
            bytes(cramjam.snappy.compress_raw(body[5000:])),
        ),
        "lz4": bytes(cramjam.lz4.compress(body)),
        "zstd": bytes(cramjam.zstd.compress(body)),
    }
    for name, compressed in squeezed.items():
        assert records_of(bomb_batch(0, CODECS[name], compressed, 200)) == records, name
    raw_snappy = bytes(cramjam.snappy.compress_raw(body))
    assert records_of(bomb_batch(0, 2, raw_snappy, 200)) == records


@pytest.mark.parametrize("name", ["gzip", "lz4", "zstd"])
def test_a_streamed_codec_stops_at_the_cap(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batch, "MAX_DECOMPRESSED_BATCH_BYTES", 1 << 20)
    module = getattr(cramjam, name)
    just = bytes(module.compress(bytes(1 << 20)))  # exactly the cap: read (and refused as records)
    with pytest.raises(RecordFormatError, match=r"does not match its fields|cut short"):
        records_of(bomb_batch(0, CODECS[name], just))
    over = bytes(module.compress(bytes((1 << 20) + 1)))
    with pytest.raises(RecordFormatError, match=f"{name} data decompresses past 1048576 bytes"):
        records_of(bomb_batch(0, CODECS[name], over))


def test_snappy_is_refused_by_its_declared_length_before_decompressing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(batch, "MAX_DECOMPRESSED_BATCH_BYTES", 1 << 20)
    block = bytes(cramjam.snappy.compress_raw(bytes(1 << 19)))
    with pytest.raises(RecordFormatError, match=r"past 1048576 bytes \(the block at byte \d+\)"):
        records_of(bomb_batch(0, 2, xerial(block, block, block)))
    raw = bytes(cramjam.snappy.compress_raw(bytes((1 << 20) + 1)))
    with pytest.raises(RecordFormatError, match="snappy block decompresses past 1048576"):
        records_of(bomb_batch(0, 2, raw))
    declares_4gib = b"\xff\xff\xff\xff\x0f\x00\x00"
    with pytest.raises(RecordFormatError, match="declares 4294967295 bytes, more than its 7"):
        records_of(bomb_batch(0, 2, declares_4gib))
    with pytest.raises(RecordFormatError, match="declares 4294967295 bytes"):
        records_of(bomb_batch(0, 2, xerial(declares_4gib)))


def test_more_records_than_the_bytes_can_hold_are_refused_before_decompressing() -> None:
    body = bytes(cramjam.zstd.compress(bytes(70)))
    with pytest.raises(RecordFormatError, match="cut short: 11 cannot fit in 70 bytes"):
        records_of(bomb_batch(0, 4, body, count=11))
    huge = bomb_batch(0, 4, body, count=MAX_DECOMPRESSED_BATCH_BYTES // 7 + 1)
    with pytest.raises(RecordFormatError, match=f"cannot fit in {MAX_DECOMPRESSED_BATCH_BYTES}"):
        records_of(huge)


def test_the_formats_bound_on_snappy() -> None:
    """A block of n bytes never decompresses past 22n: zeros, snappy's best case, reach
    about 21x."""
    zeros = bytes(cramjam.snappy.compress_raw(bytes(1 << 20)))
    assert raw_snappy_length(zeros) == 1 << 20
    assert (1 << 20) / len(zeros) < 22
    with pytest.raises(ValueError, match="at byte 5 declares 1048576 bytes"):
        raw_snappy_length(zeros[: len(zeros) // 2], at=5)
    with pytest.raises(ValueError, match="past 100 bytes"):
        xerial_snappy(xerial(zeros), limit=100)
    assert [b.size for b in xerial_blocks(xerial(zeros, zeros))] == [1 << 20] * 2


# --- ZooKeeper snapshots ----------------------------------------------------------------


def test_a_compressed_snapshot_reads_as_the_plain_one() -> None:
    stream = snapshot(TREE, {7: 18000}, trailer=b"digest")
    gz = decompressed(Path("snapshot.1.gz"), gzip.compress(stream))
    members = decompressed(
        Path("snapshot.1.gz"), gzip.compress(stream[:100]) + gzip.compress(stream[100:])
    )
    snappy = decompressed(
        Path("snapshot.1.snappy"), xerial(bytes(cramjam.snappy.compress_raw(stream)))
    )
    for read in (gz, members, snappy):
        assert read[:] == stream
        assert parse_snapshot(read) == parse_snapshot(stream)


def test_a_snapshot_stream_is_capped_by_its_file(monkeypatch: pytest.MonkeyPatch) -> None:
    assert stream_cap(1000) == 256_000
    assert stream_cap(1 << 40) == 4 * 1024**3
    bomb = gzip.compress(bytes(10 << 20))  # 10 MiB of zeros in ~10 KiB: past 256x
    with pytest.raises(
        ValueError, match=r"gzip stream decompresses past \d+ bytes \(at byte \d+\)"
    ):
        decompressed(Path("snapshot.1.gz"), bomb)
    monkeypatch.setattr(datafiles, "MAX_SNAPSHOT_STREAM_BYTES", 1000)
    with pytest.raises(ValueError, match="past 1000 bytes"):
        decompressed(Path("snapshot.1.gz"), gzip.compress(bytes(1001)))
    with pytest.raises(ValueError, match="past 1000 bytes"):
        decompressed(
            Path("snapshot.1.snappy"), xerial(bytes(cramjam.snappy.compress_raw(bytes(1001))))
        )


def test_damaged_gzip_names_the_byte() -> None:
    whole = gzip.compress(b"zookeeper " * 1000)
    for damaged, problem in [
        (whole[:-5], "cut short at byte"),
        (whole + b"\x00\x00", "bytes after the last member at byte"),
        (whole[:12] + b"\xff" * 8 + whole[20:], "near byte"),
        (b"PK" + whole[2:], "bad magic"),
    ]:
        with pytest.raises(ValueError, match=problem):
            decompressed(Path("snapshot.1.gz"), damaged)
