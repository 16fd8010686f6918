"""Writing Kafka's format: a snapshot of an image, ``bootstrap.checkpoint`` and the
directory around them (``zk2kraft log export --format kafka``).

A snapshot file, as Kafka's snapshot writer lays it out: a control batch holding the
SnapshotHeaderRecord, the records in batches of at most :data:`MAX_BATCH_BYTES` bytes
(KafkaRaftClient's bound, header included; a larger record alone), then a control batch
holding the SnapshotFooterRecord. Batch offsets start at 0 and follow each other; every
batch carries the snapshot's epoch as its leader epoch, no producer id, and the write
time. Each record is written at the lowest version of its schema that carries every
field it sets (:func:`~migration.kafka_log.mapping.lowest_version`), which every Kafka
release since the record's introduction reads.

Durability: each file is written whole or not at all (:func:`~migration.log.snapshots.
write_whole`: ``<name>.part``, fsynced, renamed into place, the directory fsynced).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from migration.kafka_log.batch import HEADER_SIZE, KafkaRecordData, encode_batch
from migration.kafka_log.codec import Struct
from migration.kafka_log.mapping import BY_NAME, from_proto
from migration.kafka_log.records import KafkaRecord, encode_control, encode_metadata
from migration.log.snapshots import SnapshotId, write_whole
from migration.proto.metadata_pb2 import MetadataRecord

MAX_BATCH_BYTES = 8 * 1024 * 1024
_RECORD_OVERHEAD = 16  # a record's framing around its value, at most (varints, attributes)


def _control(name: str, values: dict[str, object]) -> KafkaRecord:
    return KafkaRecord(BY_NAME[name], 0, Struct(dict(values)))


def _control_batch(offset: int, epoch: int, now_ms: int, record: KafkaRecord) -> bytes:
    key, value = encode_control(record)
    data = KafkaRecordData(0, 0, key, value)
    return encode_batch(offset, epoch, [data], base_timestamp=now_ms, control=True)


def snapshot_batches(
    records: Iterable[MetadataRecord],
    epoch: int,
    *,
    last_contained_timestamp: int,
    now_ms: int | None = None,
) -> Iterator[bytes]:
    """The batches of a snapshot of ``records`` (header and footer included)."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    header = _control(
        "SnapshotHeaderRecord",
        {"Version": 0, "LastContainedLogTimestamp": last_contained_timestamp},
    )
    yield _control_batch(0, epoch, now, header)
    offset = 1
    pending: list[KafkaRecordData] = []
    size = HEADER_SIZE
    for record in records:
        value = encode_metadata(from_proto(record))
        if pending and size + len(value) + _RECORD_OVERHEAD > MAX_BATCH_BYTES:
            yield encode_batch(offset, epoch, pending, base_timestamp=now)
            offset += len(pending)
            pending, size = [], HEADER_SIZE
        pending.append(KafkaRecordData(len(pending), 0, None, value))
        size += len(value) + _RECORD_OVERHEAD
    if pending:
        yield encode_batch(offset, epoch, pending, base_timestamp=now)
        offset += len(pending)
    yield _control_batch(offset, epoch, now, _control("SnapshotFooterRecord", {"Version": 0}))


def write_snapshot(
    directory: Path,
    snapshot_id: SnapshotId,
    records: Iterable[MetadataRecord],
    *,
    last_contained_timestamp: int,
    now_ms: int | None = None,
) -> Path:
    """``<end offset>-<epoch>.checkpoint`` in ``directory`` holding ``records``."""
    batches = snapshot_batches(
        records,
        snapshot_id.epoch,
        last_contained_timestamp=last_contained_timestamp,
        now_ms=now_ms,
    )
    return write_whole(directory / snapshot_id.file_name, batches)
