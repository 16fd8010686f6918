"""The ZooKeeper-to-KRaft copy: every record of the migration in ONE transaction.

:func:`copy_to_log` appends BeginTransaction, the translated records, the
ZkMigrationStateRecord (MIGRATION) and EndTransaction, framed into batches bounded by
bytes (never one batch per entity: each committed batch costs a round of
replication, and Kafka measured 32 s for 1,000 topics batched per topic). A reader
sees none of it until EndTransaction is committed; a writer that dies mid-copy leaves
an open transaction that the next leader aborts before copying again.

:func:`dry_run` is the offline form an operator runs against a live ZooKeeper: read,
translate, append to a fresh local log, replay the log to prove the records apply,
and report a :class:`CopyManifest`. It writes nothing to ZooKeeper, and it never
leaves a partial log: the log is built in a hidden sibling directory and renamed into
place only once complete and verified.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any

from migration.bridge.preflight import estimate, refuse_uncopyable
from migration.bridge.translate import CopyError, TranslateReport, translate
from migration.common.files import replace_contents
from migration.common.gc_pause import gc_paused
from migration.controller.config import DEFAULT_MIN_BATCH_SIZE
from migration.image.loader import MetadataLoader
from migration.image.model import ZK_MIGRATION_MIGRATION
from migration.log.batch import batched_by_bytes
from migration.log.metadata_log import FlushPolicy, MetadataLog
from migration.observability.progress import NullProgress, Progress
from migration.proto.metadata_pb2 import MetadataRecord
from migration.zk.multiread import TreeReader
from migration.zk.reader import read_snapshot
from migration.zk.tree_read import ZkSnapshot

DEFAULT_BATCH_BYTES = 1024 * 1024
TRANSACTION_NAME = "zk-to-kraft-migration"


@dataclass
class CopyStats:
    records: dict[str, int]  # by record type name
    batches: int
    bytes: int
    begin_offset: int
    end_offset: int  # offset of the EndTransactionRecord

    @property
    def total_records(self) -> int:
        return sum(self.records.values())


def transaction_begin() -> bytes:
    """The copy's BeginTransactionRecord, serialized."""
    begin = MetadataRecord()
    begin.begin_transaction_record.name = TRANSACTION_NAME
    return begin.SerializeToString()


def transaction_end() -> tuple[bytes, bytes]:
    """What closes the copy, serialized: ZkMigrationStateRecord(MIGRATION) and
    EndTransactionRecord."""
    state, end = MetadataRecord(), MetadataRecord()
    state.zk_migration_state_record.zk_migration_state = ZK_MIGRATION_MIGRATION
    end.end_transaction_record.SetInParent()
    return state.SerializeToString(), end.SerializeToString()


def migration_records(
    snap: ZkSnapshot,
    report: TranslateReport,
    password_encoder_secret: str | None = None,
    *,
    features: bool = True,
) -> Iterator[bytes]:
    """The whole transaction, serialized: Begin, the translation, the migration state, End
    (``features``: see :func:`~migration.bridge.translate.translate`)."""
    report.records.update(
        BeginTransactionRecord=1, ZkMigrationStateRecord=1, EndTransactionRecord=1
    )
    return chain(
        (transaction_begin(),),
        translate(snap, report, password_encoder_secret, features=features),
        transaction_end(),
    )


def copy_to_log(
    snap: ZkSnapshot,
    log: MetadataLog,
    epoch: int,
    report: TranslateReport,
    *,
    batch_bytes: int = DEFAULT_BATCH_BYTES,
    min_batch_size: int = DEFAULT_MIN_BATCH_SIZE,
    progress: Progress | None = None,
    password_encoder_secret: str | None = None,
) -> CopyStats:
    """Append the migration transaction to ``log`` in batches of ``min_batch_size``
    records, fewer where the batch would pass ``batch_bytes`` (a single larger record
    gets a batch of its own). Raises :class:`CopyError` on data
    that cannot be translated; what was appended by then is an open transaction."""
    progress = progress or NullProgress()
    progress.stage("copying records", estimate(snap, 0.0)["total_records"])
    begin_offset = log.end_offset
    batches = size = 0
    with gc_paused():
        records = migration_records(snap, report, password_encoder_secret)
        for framed in batched_by_bytes(records, batch_bytes, min_batch_size):
            header = log.append_framed(framed, epoch)
            batches, size = batches + 1, size + header.size
            progress.advance(header.count)
    progress.done()
    return CopyStats(
        records=dict(report.records),
        batches=batches,
        bytes=size,
        begin_offset=begin_offset,
        end_offset=log.end_offset - 1,
    )


def expected_image_counts(snap: ZkSnapshot) -> dict[str, int]:
    """What the image must hold after the copy (checked by the dry run)."""
    live = {n: t for n, t in snap.topics.items() if n not in snap.pending_deletions}
    return dict(
        topics=len(live),
        partitions=sum(len(t.assignment.partitions) for t in live.values()),
        quota_entities=len(snap.quotas),
        scram_credentials=sum(len(c) for c in snap.scram.values()),
        acl_entries=sum(len(r.entries) for r in snap.acls),
        delegation_tokens=len(snap.delegation_tokens),
    )


@dataclass
class CopyManifest:
    """What a dry run did: the record counts, sizes and times an operator plans with."""

    log_dir: str
    records: dict[str, int]
    total_records: int
    batches: int
    bytes: int
    transaction: dict[str, int]
    znodes_read: int
    read_seconds: float
    write_seconds: float  # translate + append (+ fsync per batch)
    verify_seconds: float  # replaying the log into an image
    metadata_version: int
    metadata_version_source: str
    skipped: dict[str, int]
    zk_brokers: list[int]  # registered in ZooKeeper; each registers itself over RPC
    image: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def dry_run(
    client: TreeReader,
    log_dir: Path,
    *,
    batch_bytes: int = DEFAULT_BATCH_BYTES,
    min_batch_size: int = DEFAULT_MIN_BATCH_SIZE,
    progress: Progress | None = None,
    password_encoder_secret: str | None = None,
) -> CopyManifest:
    """Copy ``client``'s Kafka tree into a fresh log at ``log_dir`` (see the module doc).

    Raises :class:`~migration.bridge.preflight.CopyRefusedError` (a CopyError) for a tree
    the preflight blocks as one the copy cannot take (its codes: a malformed znode, a
    topic without an id, no Kafka cluster under the chroot, no cluster id), and
    :class:`CopyError` for other data that cannot become records or a log that does not
    replay to what ZooKeeper holds; in every failure ``log_dir`` is left as it was."""
    progress = progress or NullProgress()
    log_dir = Path(log_dir)
    if log_dir.exists() and (not log_dir.is_dir() or any(log_dir.iterdir())):
        raise CopyError(str(log_dir), "not an empty directory; a dry run writes a fresh log")

    with gc_paused():  # one bulk job: no collection between its steps either
        return _dry_run(
            client, log_dir, (batch_bytes, min_batch_size), progress, password_encoder_secret
        )


def _meta_properties(cluster_id: str) -> bytes:
    """The dry run's ``meta.properties``: the cluster the copy came from (what ``log
    export`` names in the exported directory), and no ``node.id``: the log is no node's,
    and neither Kafka nor zk2kraft starts a node on it."""
    return f"#zk2kraft migrate --dry-run\ncluster.id={cluster_id}\nversion=1\n".encode()


def _dry_run(
    client: TreeReader,
    log_dir: Path,
    batching: tuple[int, int],  # batch bytes, records
    progress: Progress,
    secret: str | None,
) -> CopyManifest:
    started = time.monotonic()
    snap = read_snapshot(client, progress)
    read_seconds = time.monotonic() - started
    refuse_uncopyable(snap)

    staging = log_dir.parent / f".{log_dir.name}.partial-{os.getpid()}"
    report = TranslateReport()
    try:
        started = time.monotonic()
        with MetadataLog(staging, flush=FlushPolicy.per_batch()) as log:
            stats = copy_to_log(
                snap,
                log,
                epoch=0,
                report=report,
                batch_bytes=batching[0],
                min_batch_size=batching[1],
                progress=progress,
                password_encoder_secret=secret,
            )
        write_seconds = time.monotonic() - started

        started = time.monotonic()
        image_counts = _verify(staging, snap)
        verify_seconds = time.monotonic() - started
        assert snap.cluster_id is not None  # refuse_uncopyable: CLUSTER_ID_MISSING
        replace_contents(staging / "meta.properties", _meta_properties(snap.cluster_id.id))
        if log_dir.exists():
            log_dir.rmdir()
        staging.rename(log_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return CopyManifest(
        log_dir=str(log_dir),
        records=stats.records,
        total_records=stats.total_records,
        batches=stats.batches,
        bytes=stats.bytes,
        transaction={"begin_offset": stats.begin_offset, "end_offset": stats.end_offset},
        znodes_read=snap.znodes_read,
        read_seconds=round(read_seconds, 3),
        write_seconds=round(write_seconds, 3),
        verify_seconds=round(verify_seconds, 3),
        metadata_version=report.metadata_version,
        metadata_version_source=report.metadata_version_source,
        skipped=report.skipped,
        zk_brokers=sorted(snap.brokers),
        image=image_counts,
    )


def _verify(log_dir: Path, snap: ZkSnapshot) -> dict[str, int]:
    """Replay the copied log and check the image holds what ZooKeeper holds."""
    loader = MetadataLoader()
    with MetadataLog(log_dir, read_only=True) as log:
        for batch in log.read():
            loader.replay_batch(batch)
    if loader.open_transaction is not None:
        raise CopyError(str(log_dir), "the copy's transaction was not closed")
    counts = loader.image.counts()
    for key, want in expected_image_counts(snap).items():
        if counts[key] != want:
            raise CopyError(
                str(log_dir), f"the log replays to {counts[key]} {key}, ZooKeeper has {want}"
            )
    if loader.image.zk_migration_state != ZK_MIGRATION_MIGRATION:
        raise CopyError(str(log_dir), "the log does not record the migration state")
    return counts
