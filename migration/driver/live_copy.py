"""ZK_MIGRATION: ZooKeeper's metadata copied into the replicated log in ONE transaction,
through the active controller's own write path.

Contract:

- The tree is read (after the claim), refused whole when the preflight finds a blocker
  the copy cannot take (a malformed znode, a topic without an id, no Kafka cluster:
  :func:`~migration.bridge.preflight.refuse_uncopyable`, its codes in the error), and
  translated completely before the first record is appended: bad data stops the copy
  with nothing written, and so does a record kind the finalized metadata.version cannot
  carry (delegation tokens below 3.6-IV2): a :class:`CopyError` naming it. The
  controller would refuse such a batch, and a refused internal write halts it.
- BeginTransaction, the records, ZkMigrationStateRecord(MIGRATION) and EndTransaction
  go out in batches of ``zookeeper.metadata.migration.min.batch.size`` records (fewer
  where bytes bound them), up to ``IN_FLIGHT_RECORDS`` in flight, each validated against the
  pending image like any write (broker registrations and heartbeats are served between
  them). Readers see nothing until EndTransaction commits.
- Leadership lost mid-copy (a batch answered NOT_CONTROLLER, or posted under a newer
  epoch): :class:`~.controller_port.LeadershipLostError`; the next leader aborts the open
  transaction and copies again. Any other failure after the first append renounces
  leadership for the same reason.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future
from dataclasses import dataclass

from migration.bridge.preflight import refuse_uncopyable
from migration.bridge.translate import CopyError, TranslateReport
from migration.common.gc_pause import gc_paused
from migration.controller.config import DEFAULT_MIN_BATCH_SIZE
from migration.driver.controller_port import ControllerPort
from migration.driver.copy import DEFAULT_BATCH_BYTES, migration_records
from migration.log.batch import grouped_unframed
from migration.observability.progress import NullProgress, Progress
from migration.proto.metadata_pb2 import MetadataRecord
from migration.records import versions
from migration.records.kinds import BY_TYPE_NAME
from migration.zk.tree_read import ZkSnapshot

IN_FLIGHT_RECORDS = 8_000  # records appended but not yet committed
COMMIT_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class LiveCopyResult:
    records: dict[str, int]
    batches: int
    end_offset: int  # the EndTransactionRecord's offset
    seconds: float

    @property
    def total_records(self) -> int:
        return sum(self.records.values())

    def summary(self, epoch: int, brokers: list[int]) -> str:
        """Kafka's log line, word for word where it has one."""
        types = ", ".join(f"{k}={v}" for k, v in sorted(self.records.items()))
        return (
            "Completed migration of metadata from Zookeeper to KRaft. "
            f"{self.total_records} records were generated in {self.seconds * 1000:.0f} ms "
            f"across {self.batches} batches. The record types were {{{types}}}. The current "
            f"metadata offset is now {self.end_offset} with an epoch of {epoch}. Saw "
            f"{len(brokers)} brokers in the migrated metadata {brokers}."
        )


def copy_live(
    snap: ZkSnapshot,
    port: ControllerPort,
    epoch: int,
    *,
    secret: str | None = None,
    batch_bytes: int = DEFAULT_BATCH_BYTES,
    min_batch_size: int = DEFAULT_MIN_BATCH_SIZE,
    progress: Progress | None = None,
    metadata_version: int | None,
) -> LiveCopyResult:
    """``metadata_version``: the finalized level the copy is written under."""
    progress = progress or NullProgress()
    started = time.monotonic()
    refuse_uncopyable(snap)
    report = TranslateReport()
    with gc_paused():
        encoded = list(migration_records(snap, report, secret, features=False))
    _refuse_unsupported(report.records, metadata_version)
    progress.stage("copying records", len(encoded))
    inflight: deque[tuple[Future[int], int]] = deque()
    batches = pending = 0
    last = -1
    try:
        for group in _groups(encoded, batch_bytes, min_batch_size):
            inflight.append((port.append(epoch, group), len(group)))
            batches, pending = batches + 1, pending + len(group)
            progress.advance(len(group))
            while pending > IN_FLIGHT_RECORDS:
                last, pending = _committed(inflight, pending)
        while inflight:
            last, pending = _committed(inflight, pending)
    except BaseException as exc:
        if batches:
            port.renounce(epoch, f"the migration copy failed half-way: {exc}")
        raise
    progress.done()
    return LiveCopyResult(dict(report.records), batches, last, time.monotonic() - started)


def _groups(
    encoded: list[bytes], max_bytes: int, max_records: int
) -> Iterator[list[MetadataRecord]]:
    """The copy's batches, by the log's own batching rule (the dry run's too)."""
    for group in grouped_unframed(encoded, max_bytes, max_records):
        yield [MetadataRecord.FromString(raw) for raw in group]


def _committed(inflight: deque[tuple[Future[int], int]], pending: int) -> tuple[int, int]:
    """Waits for the oldest batch in flight: its last offset, the records still pending."""
    future, size = inflight.popleft()
    return future.result(COMMIT_TIMEOUT_S), pending - size


def _refuse_unsupported(records: dict[str, int], level: int | None) -> None:
    """CopyError when the copy holds a record kind ``level`` cannot carry."""
    for type_name, count in sorted(records.items()):
        kind = BY_TYPE_NAME.get(type_name)
        problem = versions.unsupported(kind.field, level) if kind and count else None
        if problem:
            raise CopyError(
                "/",
                f"ZooKeeper holds {count} {type_name}(s) and {problem}: nothing is copied "
                "until metadata.version is upgraded",
            )
