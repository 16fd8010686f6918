"""Benchmarks of the metadata log, the image and the dry-run copy (run by run.py).

* append: 100,000 PartitionRecords in batches of 100, with an fsync per batch (what
  controllers do) and without (the OS flushes); ratio fsync/none.
* replay: the 100k-partition migration log read from disk and replayed into an image,
  against reading and decoding the same batches alone (the baseline); records/s.
* copy: the dry run of the 100k-partition tree, split into ZooKeeper read time and
  translate+append time. Goal: translate+append <= 20% of the read time.
* open: opening that log (the recovery scan: every CRC checked, every batch's records
  decoded) against walking the same bytes checking CRCs only (the baseline).
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from migration.driver.copy import dry_run
from migration.image.loader import MetadataLoader
from migration.local.seed import SEED_PASSWORD_ENCODER_SECRET
from migration.log.batch import parse_header
from migration.log.metadata_log import FlushPolicy, MetadataLog
from migration.proto.metadata_pb2 import MetadataRecord
from migration.zk.client import ZkClient

APPEND_RECORDS, PER_BATCH = 100_000, 100


def _partition_records() -> list[MetadataRecord]:
    topic_id = os.urandom(16)
    out = []
    for i in range(PER_BATCH):
        r = MetadataRecord()
        p = r.partition_record
        p.topic_id, p.partition_id, p.leader, p.leader_epoch = topic_id, i, 1, 3
        p.replicas.extend([1, 2, 3])
        p.isr.extend([1, 2, 3])
        out.append(r)
    return out


def _append_seconds(directory: Path, flush: FlushPolicy) -> float:
    batch = _partition_records()
    started = time.perf_counter()
    with MetadataLog(directory, flush=flush) as log:
        for _ in range(APPEND_RECORDS // PER_BATCH):
            log.append(batch, epoch=1)
    return time.perf_counter() - started


def bench_append(work: Path) -> dict[str, Any]:
    fsync = _append_seconds(work / "fsync", FlushPolicy.per_batch())
    none = _append_seconds(work / "none", FlushPolicy.never())
    return {
        "records": APPEND_RECORDS,
        "batches": APPEND_RECORDS // PER_BATCH,
        "fsync_per_batch_records_per_second": round(APPEND_RECORDS / fsync),
        "no_fsync_records_per_second": round(APPEND_RECORDS / none),
        "fsync_batches_per_second": round(APPEND_RECORDS / PER_BATCH / fsync),
        "fsync_over_no_fsync": round(fsync / none, 2),
    }


def bench_copy_and_replay(connect: str, work: Path, rounds: int) -> dict[str, Any]:
    reads, writes, replays, decodes = [], [], [], []
    records = 0
    with ZkClient(connect) as client:
        for i in range(rounds):
            manifest = dry_run(
                client, work / f"copy-{i}", password_encoder_secret=SEED_PASSWORD_ENCODER_SECRET
            )
            reads.append(manifest.read_seconds)
            writes.append(manifest.write_seconds)
            records = manifest.total_records
    opens, crc_only = [], []
    for i in range(rounds):
        started = time.perf_counter()
        with MetadataLog(work / f"copy-{i}", read_only=True):
            opens.append(time.perf_counter() - started)
        crc_only.append(_crc_walk_seconds(work / f"copy-{i}"))
        with MetadataLog(work / f"copy-{i}", read_only=True) as log:
            started = time.perf_counter()
            batches = list(log.read())
            decodes.append(time.perf_counter() - started)
            started = time.perf_counter()
            loader = MetadataLoader()
            for batch in batches:
                loader.replay_batch(batch)
            replays.append(time.perf_counter() - started + decodes[-1])
    read, write = statistics.median(reads), statistics.median(writes)
    replay, decode = statistics.median(replays), statistics.median(decodes)
    return {
        "records": records,
        "read_seconds": read,
        "translate_append_seconds": write,
        "translate_append_over_read": round(write / read, 3),
        "goal_met": write <= 0.2 * read,
        "copy_records_per_second": round(records / write),
        "replay_seconds": round(replay, 3),
        "replay_records_per_second": round(records / replay),
        "decode_only_seconds": round(decode, 3),
        "replay_over_decode_only": round(replay / decode, 2),
        "open_seconds": round(statistics.median(opens), 4),
        "crc_walk_seconds": round(statistics.median(crc_only), 4),
        "open_over_crc_walk": round(statistics.median(opens) / statistics.median(crc_only), 2),
    }


def _crc_walk_seconds(directory: Path) -> float:
    """The baseline of an open: read every segment and check each batch's CRC."""
    started = time.perf_counter()
    for path in sorted(directory.glob("*.log")):
        data = path.read_bytes()
        pos = 0
        while pos < len(data):
            header = parse_header(data, pos, verify=True)
            assert not isinstance(header, str), header
            pos += header.size
    return time.perf_counter() - started


def run(connect: str, rounds: int) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="zk2kraft-bench-"))
    try:
        return {
            "append": bench_append(work),
            "copy_100k": bench_copy_and_replay(connect, work, rounds),
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def report(results: dict[str, Any]) -> None:
    a = results["append"]
    print(f"log append, {a['records']:,} PartitionRecords in {a['batches']:,} batches:")
    print(
        f"  fsync per batch: {a['fsync_per_batch_records_per_second']:>10,} records/s "
        f"({a['fsync_batches_per_second']:,} batches/s)"
    )
    print(f"  no fsync:        {a['no_fsync_records_per_second']:>10,} records/s")
    print(f"  ratio fsync/no-fsync time: {a['fsync_over_no_fsync']}")
    c = results["copy_100k"]
    print(f"dry-run copy of the 100k-partition tree, {c['records']:,} records (median):")
    print(f"  ZooKeeper read:     {c['read_seconds']:8.3f} s")
    print(
        f"  translate + append: {c['translate_append_seconds']:8.3f} s "
        f"({c['copy_records_per_second']:,} records/s)"
    )
    print(
        f"  ratio (translate+append)/read: {c['translate_append_over_read']} "
        f"(goal <= 0.2: {'met' if c['goal_met'] else 'NOT met'})"
    )
    print(
        f"replay into the image: {c['replay_records_per_second']:,} records/s "
        f"({c['replay_seconds']} s; reading and decoding alone {c['decode_only_seconds']} s, "
        f"ratio {c['replay_over_decode_only']})"
    )
    print(
        f"log open (CRCs + records decoded): {c['open_seconds']} s vs CRC walk alone "
        f"{c['crc_walk_seconds']} s: ratio {c['open_over_crc_walk']}"
    )
