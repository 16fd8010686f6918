"""QuorumController: requests in, records through Raft, answers after commit.

Runs entirely on the Raft event loop (see ``raft.runtime``): no locks, one order.

- **Two images.** ``committed`` is built only from records below the high watermark
  (reads are answered from it). The active controller also keeps ``pending``: the
  committed image plus every record it appended but has not seen commit, so a request
  is validated against the writes ahead of it (two CreateTopics for one name in flight:
  the second gets TOPIC_ALREADY_EXISTS).
- **Answers after commit.** A write's answer is sent once the high watermark passes
  its last record; an answer that wrote nothing waits for the writes ahead of it. If
  leadership is lost first, every waiting request gets NOT_CONTROLLER (retriable): a
  success is never reported for records that could still be truncated.
- **Batching.** Records of all requests handled in one loop round go out as one batch
  (``flush`` runs as the loop's idle hook), so pipelined clients share an fsync.
- **Activation.** A new leader serves writes only once its leader-change record is
  committed and it has replayed everything below it.
- **Faults.** A handler that raises gets its request an UNKNOWN_SERVER_ERROR answer at
  once (nothing of it is written); a request over the per-request record bound gets
  POLICY_VIOLATION. A failed append renounces leadership (pending state dropped, every
  waiting request answered NOT_CONTROLLER) and re-raises: the event loop halts the
  process (see ``raft.faults``), as Kafka does on a metadata-log I/O failure.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from migration.controller.context import MAX_RECORDS_PER_USER_OP, TooManyRecordsError
from migration.controller.errors import request_error
from migration.controller.handlers import HANDLERS, Handler, Reader, WriteContext
from migration.controller.registry import BrokerRegistry
from migration.image.delta import MetadataDelta
from migration.image.loader import MetadataLoader
from migration.image.model import MetadataImage
from migration.image.snapshot_records import image_records
from migration.kafka_errors import ErrorCode
from migration.log.batch import frame_record
from migration.log.metadata_log import MetadataLog
from migration.log.snapshots import SnapshotId, read_snapshot
from migration.proto.metadata_pb2 import MetadataRecord
from migration.raft.config import Address
from migration.raft.faults import is_fatal
from migration.raft.node import RaftInvariantError, RaftNode

log = logging.getLogger(__name__)

Reply = Callable[[object], None]


@dataclass(slots=True)
class _Waiting:
    offset: int  # answered once the high watermark is past this offset
    response: object
    reply: Reply


@dataclass
class ControllerSettings:
    cluster_id: str
    voters: dict[int, Address]
    snapshot_bytes: int = 20 * 1024 * 1024
    session_timeout_ms: int = 9000
    max_batch_records: int = 10000
    max_records_per_op: int = MAX_RECORDS_PER_USER_OP
    clock: Callable[[], float] = field(default=lambda: time.monotonic() * 1000.0)


class QuorumController:
    def __init__(
        self, node_id: int, metadata_log: MetadataLog, settings: ControllerSettings
    ) -> None:
        self.node_id = node_id
        self.log = metadata_log
        self.settings = settings
        self.raft: RaftNode | None = None
        self.leader_id: int | None = None
        self.active = False
        self._loader = self._load_snapshot()
        self._pending: MetadataImage | None = None
        self._next_offset = 0
        self._batch: list[MetadataRecord] = []
        self._waiting: deque[_Waiting] = deque()
        self._bytes_since_snapshot = 0
        self.registry = BrokerRegistry(settings.session_timeout_ms, settings.clock)

    # --- state ----------------------------------------------------------------------------

    @property
    def committed(self) -> MetadataImage:
        return self._loader.image

    def _load_snapshot(self) -> MetadataLoader:
        latest = self.log.latest_snapshot()
        if latest is None:
            return MetadataLoader()
        records = read_snapshot(self.log.snapshot_path(latest))
        return MetadataLoader.from_snapshot(records, latest.end_offset, latest.epoch)

    def not_controller(self) -> object:
        leader = self.leader_id
        endpoint = self.settings.voters.get(leader) if leader is not None else None
        return request_error(
            ErrorCode.NOT_CONTROLLER,
            "this controller is not the active one"
            + (f"; the active controller is {leader} at {endpoint}" if endpoint else ""),
            leader,
            str(endpoint) if endpoint else "",
        )

    # --- RaftListener (loop thread) ------------------------------------------------------

    def on_leader_change(self, leader_id: int | None, epoch: int) -> None:
        self.leader_id = leader_id
        if leader_id != self.node_id and (self.active or self._waiting):
            log.info("controller %d: no longer active (epoch %d)", self.node_id, epoch)
            self._deactivate()

    def on_commit(self, high_watermark: int) -> None:
        start = self._loader.last_offset + 1
        if start < high_watermark:
            self._replay(start, high_watermark)
        raft = self.raft
        if (
            not self.active
            and raft is not None
            and raft.is_leader
            and high_watermark > raft.epoch_start_offset
        ):
            self._activate()
        while self._waiting and self._waiting[0].offset < high_watermark:
            done = self._waiting.popleft()
            done.reply(done.response)
        self._maybe_snapshot()

    def on_snapshot_installed(self, snapshot_id: SnapshotId) -> None:
        self._loader = self._load_snapshot()
        self._bytes_since_snapshot = 0

    def _replay(self, start: int, end: int) -> None:
        for offset, epoch, record in self.log.records(start):
            if offset >= end:
                break
            self._loader.replay(record, offset, epoch)
            self._bytes_since_snapshot += record.ByteSize()
        self._loader.publish()

    def _activate(self) -> None:
        self.active = True
        self._pending = self.committed
        self._next_offset = self.log.end_offset
        self.registry.reset(self.committed)
        log.info("controller %d: active at offset %d", self.node_id, self._next_offset)

    def _deactivate(self) -> None:
        self.active = False
        self._pending = None
        self._batch = []
        waiting, self._waiting = self._waiting, deque()
        for w in waiting:
            w.reply(self.not_controller())

    def _maybe_snapshot(self) -> None:
        if self._bytes_since_snapshot < self.settings.snapshot_bytes:
            return
        if self._loader.open_transaction is not None:
            return
        image = self.committed
        snapshot_id = SnapshotId(image.offset + 1, image.epoch)
        if snapshot_id.end_offset <= 0 or snapshot_id == self.log.latest_snapshot():
            return
        self.log.write_snapshot(snapshot_id, image_records(image))
        self.log.delete_snapshots_before(snapshot_id)
        deleted = self.log.delete_segments_below(snapshot_id.end_offset)
        self._bytes_since_snapshot = 0
        log.info(
            "controller %d: snapshot at offset %d, %d segment(s) deleted",
            self.node_id,
            snapshot_id.end_offset,
            deleted,
        )

    # --- requests (loop thread) -------------------------------------------------------------

    def read(self, reader: Reader, request: object) -> object:
        if not self.active:
            return self.not_controller()
        try:
            return reader(self.committed, self, request)
        except Exception as exc:
            if is_fatal(exc):
                raise
            return _handler_failed(reader, exc)

    def write(
        self, handler: Handler, request: object, reply: Reply, *, internal: bool = False
    ) -> None:
        """Validate ``request`` against the pending image, queue its records for this
        round's batch, and ``reply`` once they commit. ``internal``: the controller's own
        work (fencing), not bounded like a user request."""
        if not self.active or self._pending is None:
            reply(self.not_controller())
            return
        context = WriteContext(
            self._pending,
            self._next_offset,
            self.registry,
            self.settings,
            max_records=None if internal else self.settings.max_records_per_op,
        )
        try:
            response = handler(context, request)
            records = context.records
            if records:
                delta = MetadataDelta(self._pending)
                for i, record in enumerate(records):
                    delta.replay(record, self._next_offset + i, 0)
                pending = replace(delta.apply(), offset=self._next_offset + len(records) - 1)
        except TooManyRecordsError as exc:
            reply(request_error(ErrorCode.POLICY_VIOLATION, str(exc)))
            return
        except Exception as exc:
            if is_fatal(exc):
                raise
            reply(_handler_failed(handler, exc))
            return
        if records:
            self._pending = pending
            self._batch.extend(records)
            self._next_offset += len(records)
        last = self._next_offset - 1
        if last <= self._loader.last_offset:
            reply(response)
        else:
            self._waiting.append(_Waiting(last, response, reply))

    def flush(self) -> None:
        """The loop's idle hook: append what this round's requests wrote, as one batch;
        then fence brokers whose sessions expired."""
        if self.active and self._batch and self.raft is not None:
            batch = self._batch
            try:
                for start in range(0, len(batch), self.settings.max_batch_records):
                    chunk = batch[start : start + self.settings.max_batch_records]
                    expected = self.log.end_offset
                    header = self.raft.append([frame_record(r.SerializeToString()) for r in chunk])
                    if header.base_offset != expected:
                        raise RaftInvariantError(
                            f"batch appended at {header.base_offset}, expected {expected}: "
                            "only the active controller appends"
                        )
            except BaseException:
                self._renounce("appending to the metadata log failed")
                raise
            self._batch = []
        if self.active:
            expired = self.registry.expired()
            if expired:
                self.write(HANDLERS["fence_expired"], expired, lambda _: None, internal=True)

    def _renounce(self, why: str) -> None:
        """Give up leadership: what was pending may never reach the log."""
        log.error("controller %d: renouncing leadership: %s", self.node_id, why)
        self._deactivate()
        if self.raft is not None:
            self.raft.resign()


def _handler_failed(handler: object, exc: Exception) -> object:
    name = getattr(handler, "__name__", "handler")
    log.error("%s failed on a request", name, exc_info=exc)
    return request_error(
        ErrorCode.UNKNOWN_SERVER_ERROR, f"the controller failed handling the request ({name})"
    )
