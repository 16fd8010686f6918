"""Replaying a Kafka-format snapshot against replaying the project's own log (run by
run.py, or alone: ``python -m tests.benchmarks.kafka_log_bench [PARTITIONS]``).

The same image -- PARTITIONS partitions over PARTITIONS/50 topics, three replicas each,
a metadata.version and twelve brokers -- is written twice: as the project's own log
(segments of 1,000-record batches, as the copy writes them) and as a Kafka snapshot
(``<offset>-<epoch>.checkpoint`` in ``__cluster_metadata-0``, as ``log export`` and
Kafka's snapshot writer lay it out). Each is then replayed into an image by
:func:`~migration.image.at_offset.image_at`, the path the audit and ``log verify``
take; the figure is Kafka's time over the own log's. Goal: <= 1.5.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from migration.image.at_offset import image_at
from migration.kafka_log.directory import METADATA_PARTITION
from migration.kafka_log.writer import write_snapshot
from migration.log.metadata_log import FlushPolicy, MetadataLog
from migration.log.snapshots import SnapshotId
from migration.proto.metadata_pb2 import FeatureLevelRecord, MetadataRecord, TopicRecord
from migration.records.uuids import new_uuid

PER_TOPIC = 50
BROKERS = 12
GOAL = 1.5


def image_records(partitions: int) -> Iterator[MetadataRecord]:
    yield MetadataRecord(
        feature_level_record=FeatureLevelRecord(name="metadata.version", feature_level=21)
    )
    for b in range(BROKERS):
        r = MetadataRecord()
        rb = r.register_broker_record
        rb.broker_id, rb.incarnation_id, rb.broker_epoch = b, new_uuid(), 10 + b
        rb.end_points.add(name="PLAINTEXT", host=f"broker-{b}", port=9092, security_protocol=0)
        yield r
    for t in range(partitions // PER_TOPIC):
        topic_id = new_uuid()
        yield MetadataRecord(topic_record=TopicRecord(name=f"topic-{t:06d}", topic_id=topic_id))
        for p in range(PER_TOPIC):
            r = MetadataRecord()
            pr = r.partition_record
            pr.partition_id, pr.topic_id = p, topic_id
            replicas = [(t + p + i) % BROKERS for i in range(3)]
            pr.replicas.extend(replicas)
            pr.isr.extend(replicas)
            pr.leader, pr.leader_epoch, pr.partition_epoch = replicas[0], 1, 1
            yield r


def write_both(work: Path, partitions: int) -> tuple[Path, Path, int]:
    records = list(image_records(partitions))
    own = work / "own"
    with MetadataLog(own, flush=FlushPolicy.never()) as log:
        for i in range(0, len(records), 1000):
            log.append(records[i : i + 1000], epoch=1)
        log.flush()
    kafka = work / "kafka"
    (kafka / METADATA_PARTITION).mkdir(parents=True)
    write_snapshot(
        kafka / METADATA_PARTITION, SnapshotId(len(records), 1), records,
        last_contained_timestamp=0,
    )  # fmt: skip
    return own, kafka, len(records)


def _replay_seconds(log_dir: Path) -> tuple[float, int]:
    started = time.perf_counter()
    image = image_at(log_dir, None).image
    return time.perf_counter() - started, image.counts()["partitions"]


def run(partitions: int = 1_000_000, rounds: int = 3) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="kafka-log-bench-") as tmp:
        own, kafka, records = write_both(Path(tmp), partitions)
        own_s, kafka_s = [], []
        for _ in range(rounds):
            s, n = _replay_seconds(own)
            assert n == partitions
            own_s.append(s)
            s, n = _replay_seconds(kafka)
            assert n == partitions
            kafka_s.append(s)
    own_med, kafka_med = statistics.median(own_s), statistics.median(kafka_s)
    ratio = kafka_med / own_med
    return {
        "partitions": partitions,
        "records": records,
        "own_log_seconds": round(own_med, 3),
        "kafka_snapshot_seconds": round(kafka_med, 3),
        "kafka_over_own": round(ratio, 3),
        "goal_met": ratio <= GOAL,
    }


def report(r: dict[str, Any]) -> None:
    print(f"Kafka-format replay, {r['partitions']:,} partitions ({r['records']:,} records):")
    print(f"  the project's own log (baseline): {r['own_log_seconds']:8.3f} s")
    print(f"  a Kafka snapshot:                 {r['kafka_snapshot_seconds']:8.3f} s")
    met = "met" if r["goal_met"] else "NOT met"
    print(f"  ratio Kafka/own: {r['kafka_over_own']:.3f} (goal <= {GOAL}: {met})")


if __name__ == "__main__":
    report(run(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000, rounds=1))
