"""QuorumController: requests in, records through Raft, answers after commit.

Runs entirely on the Raft event loop (see ``raft.runtime``): no locks, one order.

- **Two images.** Reads are answered from the committed image
  (:class:`~migration.image.committed.CommittedMetadata`, which replays the log as the
  high watermark moves and publishes it). The active controller also keeps
  ``pending``: the committed image plus every record it appended but has not seen
  commit, so a request is validated against the writes ahead of it (two CreateTopics
  for one name in flight: the second gets TOPIC_ALREADY_EXISTS).
- **Answers after commit.** A write's answer is sent once the high watermark passes
  its last record; an answer that wrote nothing waits for the writes ahead of it. If
  leadership is lost first, every waiting request gets NOT_CONTROLLER (retriable): a
  success is never reported for records that could still be truncated.
- **Atomic requests, batches bounded by bytes.** The records of one request go into one
  batch, never split; the requests handled in one loop round share batches of up to
  ``max_batch_bytes`` (``flush`` runs as the loop's idle hook), so pipelined clients
  share an fsync.
- **metadata.version.** A request whose records the finalized metadata.version does not
  support is refused whole with UNSUPPORTED_VERSION (SCRAM needs 3.5-IV2, delegation
  tokens 3.6-IV2, transactions 3.6-IV1).
- **Activation.** A new leader serves only once its leader-change record is committed
  and it has replayed everything below it. The first record it writes in its epoch
  aborts a transaction the committed log leaves open (a leader died mid-copy: every
  later record would otherwise hide inside it), unconditionally: the abort is not
  validated (the transaction may hold the log's only metadata.version, so the image
  has none to gate it with). The rest of activation sees the image the abort leaves
  (the transaction's records gone): a log without a metadata.version then gets the one
  a fresh quorum is formatted with.
- **The controller's own writes** (:meth:`append_records`: activation, the migration
  driver; and fencing) go through the same path: validated against the pending image,
  one batch each, answered once committed or with NOT_CONTROLLER when leadership is
  lost. Any other answer is a refusal nobody would retry: it raises
  :class:`~migration.raft.faults.InternalWriteRefusedError`, a fault that halts the
  process (exit 70, the reason logged once), never a reply dropped.
- **Metrics** (Kafka's QuorumControllerMetrics; tallies a scrape reads from another
  thread): ``new_active_controllers`` counts each leader this controller learns of,
  once per epoch (Kafka's NewActiveControllersCount: leader churn), and
  ``timed_out_heartbeats`` the brokers' heartbeats that got no answer in time (the gRPC
  service counts them: Kafka's TimedOutBrokerHeartbeatCount).
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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TypeVar

from google.protobuf.message import Message

from migration.common.kafka_errors import ErrorCode, error_name
from migration.controller.brokers import fence_expired, fence_expired_rest, last_answer
from migration.controller.context import (
    MAX_RECORDS_PER_USER_OP,
    ControllerView,
    TooManyRecordsError,
    WriteContext,
    log_batches,
)
from migration.controller.errors import request_error
from migration.controller.handlers import HANDLERS
from migration.controller.registry import BrokerRegistry
from migration.controller.slices import SlicedRequest
from migration.image.committed import DEFAULT_SNAPSHOT_BYTES, CommittedMetadata
from migration.image.delta import MetadataDelta
from migration.image.model import ZK_MIGRATION_PRE, MetadataImage
from migration.log.snapshots import SnapshotId
from migration.observability.samples import Tally
from migration.proto import controller_pb2 as cpb
from migration.proto.metadata_pb2 import MetadataRecord
from migration.raft.config import Address
from migration.raft.event_loop import named
from migration.raft.faults import InternalWriteRefusedError, is_fatal
from migration.raft.node import RaftInvariantError, RaftNode
from migration.records import versions
from migration.records.kinds import KINDS

log = logging.getLogger(__name__)

Req = TypeVar("Req")
Resp = TypeVar("Resp")
Handler = Callable[[WriteContext, Req], Resp]
"""A write: validates a request against the context's image, adds its records, returns
the answer (an RPC's response or a RequestError; an internal write's own result)."""
Reply = Callable[[Resp | cpb.RequestError], None]
"""Gets a write's answer once its records commit, or a RequestError (NOT_CONTROLLER
when leadership is lost first; the refusal when it is refused)."""
DEFAULT_MAX_BATCH_BYTES = 1024 * 1024


@dataclass(slots=True)
class _Waiting:
    offset: int  # answered once the high watermark is past this offset
    answer: Callable[[], None]  # the reply with the write's answer
    refuse: Callable[[cpb.RequestError], None]  # the reply, if leadership is lost first


@dataclass
class ControllerSettings:
    cluster_id: str
    voters: dict[int, Address]
    snapshot_bytes: int = DEFAULT_SNAPSHOT_BYTES
    session_timeout_ms: int = 9000
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES
    max_records_per_op: int = MAX_RECORDS_PER_USER_OP
    num_partitions: int = 1  # num.partitions: CreateTopics with -1 partitions
    default_replication_factor: int = 1  # default.replication.factor: with -1
    zk_migration_enabled: bool = False  # zookeeper.metadata.migration.enable
    bootstrap_metadata_version: int = versions.LATEST
    clock: Callable[[], float] = field(default=lambda: time.monotonic() * 1000.0)


class QuorumController:
    def __init__(
        self, node_id: int, committed: CommittedMetadata, settings: ControllerSettings
    ) -> None:
        self.node_id = node_id
        self.committed_metadata = committed
        self.log = committed.log
        self.settings = settings
        self.raft: RaftNode | None = None
        self.leader_id: int | None = None
        self.active = False
        self._pending: MetadataImage | None = None
        self._next_offset = 0
        self._batch: list[list[MetadataRecord]] = []  # one group per request, never split
        self._waiting: deque[_Waiting] = deque()
        self.registry = BrokerRegistry(settings.session_timeout_ms, settings.clock)
        self._fencing = False  # a step of fencing expired brokers waits for its commit
        # While dual-writing: why admin writes are refused now (ZooKeeper too far behind),
        # set by the migration driver's thread; a plain attribute, read atomically.
        self.write_behind_refusal: str | None = None
        self.new_active_controllers = Tally()
        self.timed_out_heartbeats = Tally()
        self._leader_epoch_counted = -1
        # How a slice of a request is put on the loop behind what is queued (the
        # process wires the loop's post; in process, without a loop, it runs at once).
        self.post: Callable[[Callable[[], None]], None] = lambda action: action()

    # --- state ----------------------------------------------------------------------------

    @property
    def committed(self) -> MetadataImage:
        return self.committed_metadata.image

    @property
    def cluster_id(self) -> str:
        return self.settings.cluster_id

    def not_controller(self) -> cpb.RequestError:
        leader = self.leader_id
        endpoint = self.settings.voters.get(leader) if leader is not None else None
        return request_error(
            ErrorCode.NOT_CONTROLLER,
            "this controller is not the active one"
            + (f"; the active controller is {leader} at {endpoint}" if endpoint else ""),
            leader,
            str(endpoint) if endpoint else "",
        )

    # --- RaftListener (loop thread; registered after CommittedMetadata) -----------------------

    def on_leader_change(self, leader_id: int | None, epoch: int) -> None:
        self.leader_id = leader_id
        if leader_id is not None and epoch > self._leader_epoch_counted:
            self._leader_epoch_counted = epoch
            self.new_active_controllers.add()
        if leader_id != self.node_id and (self.active or self._waiting):
            log.info("controller %d: no longer active (epoch %d)", self.node_id, epoch)
            self._deactivate()

    def on_commit(self, high_watermark: int) -> None:
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
            done.answer()

    def on_snapshot_installed(self, snapshot_id: SnapshotId) -> None:
        pass  # CommittedMetadata reloads the image

    def _activate(self) -> None:
        self.active = True
        self._fencing = False
        self._pending = self.committed
        self._next_offset = self.log.end_offset
        self.registry.reset(self.committed)
        log.info("controller %d: active at offset %d", self.node_id, self._next_offset)
        self._abort_open_transaction()
        if versions.METADATA_VERSION not in self._pending.features:
            bootstrap = MetadataRecord()
            bootstrap.feature_level_record.name = versions.METADATA_VERSION
            bootstrap.feature_level_record.feature_level = self.settings.bootstrap_metadata_version
            records = [bootstrap]
            if self.settings.zk_migration_enabled:
                # A fresh quorum started for a migration: Kafka's PRE_MIGRATION, the state
                # the driver waits in until it has copied ZooKeeper.
                state = MetadataRecord()
                state.zk_migration_state_record.zk_migration_state = ZK_MIGRATION_PRE
                records.append(state)
            self.append_records(records, _committed)

    def _abort_open_transaction(self) -> None:
        """Queue an AbortTransactionRecord for a transaction the committed log leaves open,
        ahead of anything else of this epoch (nothing is queued yet at activation). It is
        written as is, never validated: a marker changes nothing in the image (the
        committed image never held the transaction's records), and no gate may stand
        between a new leader and a log it can trust."""
        dangling = self.committed_metadata.open_transaction
        if dangling is None:
            return
        assert self._pending is not None and not self._batch
        log.warning(
            "controller %d: aborting transaction %r left open at offset %d",
            self.node_id,
            dangling.name,
            dangling.begin_offset,
        )
        abort = MetadataRecord()
        abort.abort_transaction_record.reason = (
            f"a new controller ({self.node_id}) found it open at activation"
        )
        self._pending = replace(self._pending, offset=self._next_offset)
        self._batch.append([abort])
        self._next_offset += 1

    def _deactivate(self) -> None:
        self.active = False
        self._pending = None
        self._batch = []
        waiting, self._waiting = self._waiting, deque()
        for w in waiting:
            w.refuse(self.not_controller())

    # --- requests (loop thread) -------------------------------------------------------------

    def read(
        self,
        reader: Callable[[MetadataImage, ControllerView, Req], Resp],
        request: Req,
    ) -> Resp | cpb.RequestError:
        """``reader``'s answer to ``request`` from the committed image; NOT_CONTROLLER
        unless active, UNKNOWN_SERVER_ERROR if the reader raises."""
        if not self.active:
            return self.not_controller()
        try:
            return reader(self.committed, self, request)
        except Exception as exc:
            if is_fatal(exc):
                raise
            return _handler_failed(reader, exc)

    def handle(self, method: str, request: Message, reply: Callable[[Message], None]) -> None:
        """An RPC's write. Only users' admin requests (ADMIN_WRITES) are bounded to
        ``max_records_per_op`` records; a broker's own requests are not refused for
        their size (refusing a controlled shutdown would leave the broker to be fenced
        the hard way): the brokers and the heartbeat handler keep them to steps instead
        (AlterPartition and leadership moves, STEP_RECORDS at a time), since
        every request is handled on the quorum's event loop; and a step is handled in
        slices, each its own event of the loop (:mod:`migration.controller.slices`).

        Before the migration's copy is in the log (PRE_MIGRATION, as the records queued
        so far leave it), admin requests are refused with NOT_CONTROLLER (retriable):
        the copy would overwrite them with what ZooKeeper held when it was read, and an
        acknowledged change would be lost (the chaos runs found it). They are taken
        again once the copy's last batch is queued; they commit after it."""
        rpc = HANDLERS[method]
        admin = rpc.admin
        if admin and self.active and self._before_the_copy():
            reply(
                request_error(
                    ErrorCode.NOT_CONTROLLER,
                    "the migration has not copied ZooKeeper's metadata into the log yet "
                    "(PRE_MIGRATION): admin changes are taken once the copy is in; retry",
                )
            )
            return
        sliced = SlicedRequest(
            lambda piece, answer: self.write(rpc, piece, answer, internal=not admin),
            lambda action: self.post(named(method, action)),
            rpc.rest,
            rpc.whole,
            reply,
        )
        sliced.run(request)

    def _before_the_copy(self) -> bool:
        pending = self._pending
        return pending is not None and pending.zk_migration_state == ZK_MIGRATION_PRE

    def write(
        self,
        handler: Handler[Req, Resp],
        request: Req,
        reply: Reply[Resp],
        *,
        internal: bool = False,
    ) -> tuple[WriteContext, Resp | cpb.RequestError] | None:
        """Validate ``request`` against the pending image, queue its records (one group,
        never split) for this round's batches, and ``reply`` once they commit.
        ``internal``: the controller's own work, not bounded like a user request.
        Returns the handler's context and answer once its records are queued (None:
        refused at once, and ``reply`` already has the refusal)."""
        if not self.active or self._pending is None:
            reply(self.not_controller())
            return None
        if not self._batch:  # Raft's own records (a VotersRecord) may have been appended
            self._next_offset = self.log.end_offset
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
                problem = self._version_problem(records)
                if problem:
                    reply(request_error(ErrorCode.UNSUPPORTED_VERSION, problem))
                    return None
                delta = MetadataDelta(self._pending)
                for i, record in enumerate(records):
                    delta.replay(record, self._next_offset + i, 0)
                pending = replace(delta.apply(), offset=self._next_offset + len(records) - 1)
        except TooManyRecordsError as exc:
            reply(request_error(ErrorCode.POLICY_VIOLATION, str(exc)))
            return None
        except Exception as exc:
            if is_fatal(exc):
                raise
            reply(_handler_failed(handler, exc))
            return None
        if records:
            self._pending = pending
            self._batch.append(records)
            self._next_offset += len(records)
        last = self._next_offset - 1
        if last <= self.committed_metadata.last_offset:
            reply(response)
        else:
            self._waiting.append(_Waiting(last, partial(reply, response), reply))
        return context, response

    def append_records(self, records: Sequence[MetadataRecord], reply: Reply[int]) -> None:
        """The controller's own writes (the migration driver's transaction batches):
        validated against the pending image and appended whole, within one batch;
        ``reply`` gets the offset of the last record once it is committed, or
        NOT_CONTROLLER if leadership is lost first (the records may then vanish). A
        refusal raises :class:`InternalWriteRefusedError` (see :func:`_refusal_halts`)."""
        records = list(records)
        what = "its own write of " + _kinds(records)
        self.write(_as_is, records, self._refusal_halts(what, reply), internal=True)

    def _refusal_halts(self, what: str, reply: Reply[Resp]) -> Reply[Resp]:
        """``reply`` for a write the controller makes itself: its answer on commit, or
        NOT_CONTROLLER (leadership lost) passes on; any other answer is a refusal, raised
        as :class:`InternalWriteRefusedError` (fatal: the loop halts the process)."""

        def answered(response: Resp | cpb.RequestError) -> None:
            if (
                isinstance(response, cpb.RequestError)
                and response.error_code != ErrorCode.NOT_CONTROLLER
            ):
                raise InternalWriteRefusedError(
                    f"controller {self.node_id}: {what} was refused: "
                    f"{error_name(response.error_code)}: {response.error_message}"
                )
            reply(response)

        return answered

    def _version_problem(self, records: list[MetadataRecord]) -> str | None:
        assert self._pending is not None
        level = self._pending.features.get(versions.METADATA_VERSION)
        for record in records:
            which = record.WhichOneof("record")
            if which == "feature_level_record" and (
                record.feature_level_record.name == versions.METADATA_VERSION
            ):
                level = record.feature_level_record.feature_level
            elif which is not None and (problem := versions.unsupported(which, level)):
                return problem
        return None

    def flush(self) -> None:
        """The loop's idle hook: append what this round's requests wrote, in batches of
        whole requests bounded by bytes; then a step of fencing brokers whose sessions
        expired, if the step before has committed (steps paced by the quorum leave it
        room to answer fetches)."""
        if self.active and self._batch and self.raft is not None:
            # The offset handed to the first queued record: replies wait for the offsets
            # handed out, so the log must put each batch exactly there.
            expected = self._next_offset - sum(len(group) for group in self._batch)
            try:
                for batch in log_batches(self._batch, self.settings.max_batch_bytes):
                    header = self.raft.append(batch)
                    if header.base_offset != expected:
                        raise RaftInvariantError(
                            f"batch appended at {header.base_offset}, its records were "
                            f"handed offset {expected}: only the active controller appends"
                        )
                    expected = header.last_offset + 1
            except BaseException:
                self.renounce("appending to the metadata log failed")
                raise
            self._batch = []
        if self.active and self.raft is not None:
            self.raft.append_queued_change()  # a voter change waiting for a quiet moment
        if self.active and not self._fencing:
            expired = self.registry.expired()
            if expired:  # a step, once the one before has committed
                self._fencing = True
                fence = self._refusal_halts(
                    f"its fencing of brokers {sorted(expired)}", self._fenced_step
                )
                SlicedRequest(
                    lambda ids, answer: self.write(fence_expired, ids, answer, internal=True),
                    lambda action: self.post(named("fence_expired", action)),
                    fence_expired_rest,
                    last_answer,
                    fence,
                ).run(expired)

    def quiet(self) -> bool:
        """No records queued for the log: Raft may append its own (a voter change)
        without moving the offsets this controller has handed out."""
        return not self._batch

    def _fenced_step(self, _: cpb.RequestError | None) -> None:
        """A step of fencing committed (or leadership was lost): the next may go."""
        self._fencing = False

    def renounce(self, why: str) -> None:
        """Give up leadership: what was pending may never reach the log."""
        log.error("controller %d: renouncing leadership: %s", self.node_id, why)
        self._deactivate()
        if self.raft is not None:
            self.raft.resign()


def _as_is(ctx: WriteContext, records: list[MetadataRecord]) -> int:
    last = ctx.offset_of_next + len(records) - 1
    ctx.records.extend(records)
    return last


def _committed(_: int | cpb.RequestError) -> None:
    """Activation's own writes wait for nothing: their commit is the answer."""


def _kinds(records: list[MetadataRecord]) -> str:
    """``records`` named by kind, for a log line ("FeatureLevelRecord, ZkMigrationStateRecord")."""
    kinds = [KINDS.get(r.WhichOneof("record") or "") for r in records[:3]]
    names = [k.type_name if k is not None else "an empty record" for k in kinds]
    more = f" and {len(records) - 3} more" if len(records) > 3 else ""
    return ", ".join(names) + more


def _handler_failed(handler: Callable[..., object], exc: Exception) -> cpb.RequestError:
    name = getattr(handler, "__name__", "handler")
    log.error("%s failed on a request", name, exc_info=exc)
    return request_error(
        ErrorCode.UNKNOWN_SERVER_ERROR, f"the controller failed handling the request ({name})"
    )
