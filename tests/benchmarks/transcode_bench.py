"""Records per second through :mod:`migration.kafka_log.transcode` alone: Kafka's record
values (the image of :mod:`.kafka_log_bench`: a metadata.version, twelve brokers,
PARTITIONS partitions in topics of 50) into RecordBatchPayload bytes, 1,000 records a
batch, then the same with protobuf's parse of each batch (what replay pays per record);
and a whole Kafka snapshot of that image transcoded as replay reads it (scanned, each
batch's records read, :func:`~migration.kafka_log.files.transcode`). CPU time, medians.
Run alone: ``python -m tests.benchmarks.transcode_bench [PARTITIONS]``.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from migration.kafka_log import files, transcode
from migration.kafka_log.mapping import from_proto
from migration.kafka_log.records import encode_metadata
from migration.kafka_log.writer import write_snapshot
from migration.log.snapshots import SnapshotId
from tests.benchmarks.kafka_log_bench import image_records

BATCH = 1000


def kafka_values(partitions: int) -> list[list[bytes]]:
    """The image's records as Kafka writes their values, in batches of :data:`BATCH`."""
    values = [encode_metadata(from_proto(r)) for r in image_records(partitions)]
    return [values[i : i + BATCH] for i in range(0, len(values), BATCH)]


def _seconds(batches: list[list[bytes]], step: Callable[[list[bytes]], object]) -> float:
    started = time.process_time()  # CPU time: the cores may be shared
    for batch in batches:
        step(batch)
    return time.process_time() - started


def log_seconds(path: Path) -> float:
    """CPU seconds to scan the Kafka-format file ``path`` and transcode every batch."""
    started = time.process_time()
    scanned = files.scan(path, None, may_tear=False)
    for at in scanned.batches:
        files.transcode(scanned, at)
    return time.process_time() - started


def measure(module: ModuleType, batches: list[list[bytes]], rounds: int) -> dict[str, float]:
    """Records/s of ``module``'s add_metadata alone and with parse_payload (medians)."""
    add, parse = module.add_metadata, module.parse_payload

    def only(batch: list[bytes]) -> bytearray:
        payload = bytearray()
        for v in batch:
            add(payload, v)
        return payload

    records = sum(len(b) for b in batches)
    alone = statistics.median(_seconds(batches, only) for _ in range(rounds))
    parsed = statistics.median(_seconds(batches, lambda b: parse(only(b))) for _ in range(rounds))
    return {"transcode_per_s": records / alone, "with_parse_per_s": records / parsed}


def run(partitions: int = 200_000, rounds: int = 5) -> dict[str, Any]:
    batches = kafka_values(partitions)
    figures = measure(transcode, batches, rounds)
    records = list(image_records(partitions))
    with tempfile.TemporaryDirectory(prefix="transcode-bench-") as tmp:
        path = write_snapshot(
            Path(tmp), SnapshotId(len(records), 1), records, last_contained_timestamp=0
        )
        log = statistics.median(log_seconds(path) for _ in range(rounds))
    return {"records": len(records), **figures, "log_per_s": (len(records) + 2) / log}


def report(r: dict[str, Any]) -> None:
    print(f"Transcoding Kafka's records ({r['records']:,} records):")
    print(f"  add_metadata:          {r['transcode_per_s']:12,.0f} records/s")
    print(f"  add_metadata + parse:  {r['with_parse_per_s']:12,.0f} records/s")
    print(f"  a snapshot file:       {r['log_per_s']:12,.0f} records/s")


if __name__ == "__main__":
    report(run(int(sys.argv[1]) if len(sys.argv) > 1 else 200_000))
