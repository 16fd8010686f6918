"""The ZooKeeper-to-KRaft copy through the active controller's own write path: every
record of the migration in ONE transaction, opened before the claim and committed
after it.

Contract:

- :func:`start_copy` refuses a tree the preflight blocks as one the copy cannot take (a
  malformed znode, a topic without an id, no Kafka cluster:
  :func:`~migration.bridge.preflight.refuse_uncopyable`, its codes in the error), a
  password it cannot decrypt and a record kind the finalized metadata.version cannot
  carry (delegation tokens below 3.6-IV2), each a :class:`CopyError` before anything is
  appended. Then it opens the transaction (BeginTransaction) and streams the records
  into it as they are translated (nothing of the tree is held twice, as records too),
  and returns once all of it is committed (invisible still: the transaction is open).
- The driver calls it *before* claiming ``/controller``, on a tree read under a
  persistent watch; after the claim, :meth:`OpenCopy.catch_up` appends what changed in
  between (:mod:`migration.bridge.catch_up`) and :meth:`OpenCopy.commit` appends
  ZkMigrationStateRecord(MIGRATION) and EndTransaction. Readers see nothing until
  EndTransaction commits, so bad data met late still leaves nothing committed.
- Batches of ``zookeeper.metadata.migration.min.batch.size`` records (fewer where bytes
  bound them), up to ``IN_FLIGHT_RECORDS`` in flight, each validated against the
  pending image like any write (broker registrations and heartbeats are served between
  them).
- Leadership lost mid-copy (a batch answered NOT_CONTROLLER, or posted under a newer
  epoch): :class:`~.controller_port.LeadershipLostError`; the next leader aborts the open
  transaction and copies again. A copy given up after its first append (any failure,
  :meth:`OpenCopy.abandon`) renounces leadership for the same reason.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from collections.abc import Iterable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from itertools import chain

from migration.bridge.catch_up import catch_up_records, patched
from migration.bridge.plan import EVERYTHING
from migration.bridge.preflight import estimate, refuse_uncopyable
from migration.bridge.sync import copied_scope, reread_scope
from migration.bridge.translate import CopyError, TranslateReport, translate_parts
from migration.common.gc_pause import gc_paused
from migration.controller.config import DEFAULT_MIN_BATCH_SIZE
from migration.driver.controller_port import ControllerPort
from migration.driver.copy import DEFAULT_BATCH_BYTES, transaction_begin, transaction_end
from migration.log.batch import grouped_unframed
from migration.observability.progress import NullProgress, Progress
from migration.proto.metadata_pb2 import MetadataRecord
from migration.records import versions
from migration.records.kinds import BY_TYPE_NAME, kind_of
from migration.zk.changes import Targets
from migration.zk.reader import Reread
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


def start_copy(
    snap: ZkSnapshot,
    port: ControllerPort,
    epoch: int,
    *,
    secret: str | None = None,
    batch_bytes: int = DEFAULT_BATCH_BYTES,
    min_batch_size: int = DEFAULT_MIN_BATCH_SIZE,
    progress: Progress | None = None,
    metadata_version: int | None,
) -> OpenCopy:
    """Open the migration's transaction and stream ``snap``'s records into it (the module
    doc); ``metadata_version``: the finalized level the copy is written under."""
    refuse_uncopyable(snap)
    copy = OpenCopy(snap, port, epoch, (batch_bytes, min_batch_size), metadata_version)
    report = TranslateReport()
    with gc_paused():
        topics, rest = translate_parts(snap, report, secret, copy.acl_ids)
        _refuse_unsupported(report.records, metadata_version)
        report.records["BeginTransactionRecord"] += 1
        progress = progress or NullProgress()
        progress.stage("copying records", estimate(snap, 0.0)["total_records"])
        try:
            copy.append(chain((transaction_begin(),), topics, rest), progress)
            copy.settle()  # committed before the claim: the pause waits for none of it
        except BaseException as exc:
            copy.abandon(f"the migration copy failed half-way: {exc}")
            raise
        progress.done()
    copy.records.update(report.records)
    copy.scope = copied_scope(snap)  # before the claim: the pause scans no partition for it
    return copy


class OpenCopy:
    """The migration's transaction while it is open (the module doc). ``snapshot``: the
    ZooKeeper state its records translate (the pre-copy's read, patched by each
    catch-up); ``records``: how many of each type it holds; ``acl_ids``: each ACL's id
    by its content; ``scope``: what ZooKeeper and the committed copy can disagree on
    (what the sync after the claim compares). One thread drives it (the driver's poll
    thread)."""

    def __init__(
        self,
        snap: ZkSnapshot,
        port: ControllerPort,
        epoch: int,
        batching: tuple[int, int],  # batch bytes, records
        metadata_version: int | None,
    ) -> None:
        self.snapshot = snap
        self.port = port
        self.epoch = epoch
        self.records: Counter[str] = Counter()
        self.acl_ids: dict[bytes, bytes] = {}
        self.batches = 0
        self.caught_up = 0  # records the catch-ups appended
        self.scope = EVERYTHING
        self._batching = batching
        self._level = metadata_version
        self._inflight: deque[tuple[Future[int], int]] = deque()
        self._pending = 0
        self._last = -1
        self._started = time.monotonic()

    def append(self, encoded: Iterable[bytes], progress: Progress | None = None) -> None:
        """Append serialized records in the copy's batches, waiting for the oldest batch
        in flight to commit past ``IN_FLIGHT_RECORDS``."""
        for group in grouped_unframed(encoded, *self._batching):
            records = [MetadataRecord.FromString(raw) for raw in group]
            self._inflight.append((self.port.append(self.epoch, records), len(records)))
            self.batches, self._pending = self.batches + 1, self._pending + len(records)
            if progress is not None:
                progress.advance(len(records))
            while self._pending > IN_FLIGHT_RECORDS:
                self._committed()

    def catch_up(
        self, targets: Targets, reread: Reread, secret: str | None = None
    ) -> list[MetadataRecord]:
        """Append what changed in the ``targets`` ZooKeeper named since the read the
        transaction holds (``reread``: those entities read again); the records appended.
        Raises the copy's errors for bad data; the caller abandons the copy then."""
        if not targets:
            return []
        new = patched(self.snapshot, targets, reread)
        records = catch_up_records(self.snapshot, new, targets, self.acl_ids, secret)
        counts = Counter(kind_of(r).type_name for r in records)
        _refuse_unsupported(counts, self._level)
        self.append(r.SerializeToString() for r in records)
        self.scope = self.scope.union(reread_scope(self.snapshot, new, targets))
        self.snapshot = new
        self.records.update(counts)
        self.caught_up += len(records)
        return records

    def commit(self) -> LiveCopyResult:
        """Close the transaction (ZkMigrationStateRecord(MIGRATION), EndTransaction) and
        wait until every batch is committed."""
        try:
            self.append(transaction_end())
            self.settle()
        except BaseException as exc:
            self.abandon(f"the migration copy failed half-way: {exc}")
            raise
        self.records.update(ZkMigrationStateRecord=1, EndTransactionRecord=1)
        seconds = time.monotonic() - self._started
        return LiveCopyResult(dict(self.records), self.batches, self._last, seconds)

    def settle(self) -> None:
        """Wait until every batch appended so far is committed (still invisible to
        readers: the transaction is open)."""
        while self._inflight:
            self._committed()

    def abandon(self, why: str) -> None:
        """Give the copy up: renounce leadership if anything was appended (the next
        leader aborts the open transaction)."""
        if self.batches:
            self.port.renounce(self.epoch, why)

    def _committed(self) -> None:
        """Wait for the oldest batch in flight to commit."""
        future, size = self._inflight.popleft()
        self._last, self._pending = future.result(COMMIT_TIMEOUT_S), self._pending - size


def _refuse_unsupported(records: Mapping[str, int], level: int | None) -> None:
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
