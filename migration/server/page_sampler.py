"""What the live migration page shows that no single moment holds, sampled in the
controller process by one daemon thread: the (cluster state, driver phase) timeline with
the wall-clock time each was reached, the write-behind lag over the last
:data:`LAG_WINDOW_S`, the voters' progress as the leader tracks it, and, on a controller
that is not the active one, the active one's page address (its DescribeMigration answer).
Also the last audit's summary (``ReportAudit``), kept in memory.

Contract:

- Only what this process saw since it started: the timeline begins at the first sample,
  and the page says so. A state held for less than :data:`SAMPLE_S` may be missed.
- Nothing here waits on the Raft loop: the leader's DescribeQuorum is posted to it and
  publishes :attr:`PageSampler.quorum` when the loop runs it, and a new one is posted only
  once the previous one ran -- a loop busy for seconds (a large image) gets one, never a
  pile of them. The gRPC call to the active controller happens on the sampler's thread,
  bounded by :data:`LOOKUP_TIMEOUT_S`, at most every :data:`LOOKUP_EVERY_S`. The HTTP
  handlers read the attributes published here, each replaced whole: they never wait.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import grpc

from migration.common import rpc
from migration.common.kafka_errors import ErrorCode
from migration.common.periodic import Periodic
from migration.common.times import MAX_MS, representable_ms
from migration.controller.errors import request_error
from migration.driver.states import state_name
from migration.proto import controller_pb2 as cpb
from migration.proto import controller_pb2_grpc
from migration.raft.config import Address
from migration.raft.event_loop import EventLoop
from migration.raft.node import RaftNode

log = logging.getLogger(__name__)

SAMPLE_S = 1.0
LAG_WINDOW_S = 600.0
TIMELINE_MAX = 200  # transitions kept (oldest dropped; a flapping leadership is bounded)
LOOKUP_EVERY_S = 5.0
LOOKUP_TIMEOUT_S = 1.0
AUDIT_LIMIT = 2**53  # numbers beyond JSON's exact integers are not an audit's
AUDIT_SECONDS_LIMIT = 1e9  # about 32 years: no audit takes longer


@dataclass(frozen=True)
class Transition:
    at_ms: int  # wall clock, ms since the Unix epoch
    state: str  # ClusterState's name, or "Unknown"
    phase: str


@dataclass(frozen=True)
class VoterProgress:
    node_id: int
    log_end_offset: int  # as the leader last heard (-1: not yet)
    last_fetch_ms: int  # wall clock of its last fetch (-1: never)


@dataclass(frozen=True)
class Quorum:
    leader_id: int
    high_watermark: int
    voters: tuple[VoterProgress, ...]
    at_ms: int


@dataclass(frozen=True)
class ActivePage:
    node_id: int
    endpoint: str  # host:port of its metrics port; "" when it has none
    at_ms: int


@dataclass(frozen=True)
class AuditSummary:
    consistent: bool
    differences: int
    offset: int
    log_end_offset: int
    finished_ms: int
    seconds: float
    received_ms: int


def now_ms() -> int:
    return int(time.time() * 1000)


class PageSampler:
    def __init__(
        self,
        node_id: int,
        status: Callable[[], cpb.DescribeMigrationResponse],
        raft: RaftNode,
        loop: EventLoop,
        voters: Mapping[int, Address],
    ) -> None:
        self.node_id = node_id
        self.started_ms = now_ms()
        self._status = status
        self._raft = raft
        self._loop = loop
        self._voters = dict(voters)
        # published (each replaced whole; read by the HTTP handlers)
        self.timeline: tuple[Transition, ...] = ()
        self.lag: tuple[tuple[int, int], ...] = ()
        self.quorum: Quorum | None = None
        self.active_page: ActivePage | None = None
        self.audit: AuditSummary | None = None
        # the sampler's own
        self._lag: deque[tuple[int, int]] = deque(maxlen=int(LAG_WINDOW_S / SAMPLE_S) + 1)
        self._looked_up = -math.inf
        self._quorum_posted = threading.Event()  # set from the post until the loop ran it
        self._thread = Periodic("migration-page", SAMPLE_S, self.sample)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._thread.stop()

    def sample(self) -> None:
        """One sample (the thread's; tests call it directly)."""
        status = self._status()
        at = now_ms()
        point = Transition(at, state_name(status.state_code), status.driver_phase)
        last = self.timeline[-1] if self.timeline else None
        if last is None or (last.state, last.phase) != (point.state, point.phase):
            self.timeline = (*self.timeline, point)[-TIMELINE_MAX:]
        self._lag.append((at, int(status.zk_write_behind_lag)))
        self.lag = tuple(self._lag)
        self._ask_quorum()
        leader = self._raft.leader_id
        if leader is None or status.is_active or leader == self.node_id:
            self.active_page = None
        elif (
            self.active_page is None
            or self.active_page.node_id != leader
            or (time.monotonic() - self._looked_up >= LOOKUP_EVERY_S)
        ):
            self._looked_up = time.monotonic()
            self.active_page = self._lookup(leader, at)

    def _ask_quorum(self) -> None:
        """Post the leader's DescribeQuorum to the loop unless the last one is still
        queued (or the loop is not running): the figures stay as the last run left them."""
        if not self._raft.is_leader:
            self.quorum = None
            return
        if self._quorum_posted.is_set() or not self._loop.running:
            return
        self._quorum_posted.set()
        self._loop.post(self._publish_quorum)

    def _publish_quorum(self) -> None:
        """On the loop: the voters' progress as the leader tracks it (None off the lead)."""
        try:
            self.quorum = self._quorum() if self._raft.is_leader else None
        finally:
            self._quorum_posted.clear()

    def _quorum(self) -> Quorum | None:
        answer = self._raft.describe_quorum()
        if answer.error_code != ErrorCode.NONE:
            return None
        voters = tuple(
            VoterProgress(v.replica_id, v.log_end_offset, v.last_fetch_timestamp)
            for v in answer.current_voters
        )
        return Quorum(self.node_id, answer.high_watermark, voters, now_ms())

    def _lookup(self, leader: int, at: int) -> ActivePage | None:
        address = self._voters.get(leader)
        if address is None:
            return ActivePage(leader, "", at)
        try:
            with rpc.channel(str(address), []) as channel:
                answer = controller_pb2_grpc.ControllerStub(channel).DescribeMigration(
                    cpb.DescribeMigrationRequest(), timeout=LOOKUP_TIMEOUT_S
                )
        except grpc.RpcError as exc:
            log.debug("migration page: controller %d did not answer: %s", leader, exc.code())
            previous = self.active_page
            return previous if previous is not None and previous.node_id == leader else None
        return ActivePage(leader, answer.metrics_endpoint, at)

    def report_audit(
        self, request: cpb.ReportAuditRequest, is_active: bool
    ) -> cpb.ReportAuditResponse:
        """Keep an audit's summary (the last one wins); refuse numbers no audit has
        (:func:`audit_problem`) with INVALID_REQUEST naming the field, keeping the last
        good summary: nothing kept can make the page fail later."""
        problem = audit_problem(request)
        if problem is not None:
            return cpb.ReportAuditResponse(
                error=request_error(ErrorCode.INVALID_REQUEST, problem), node_id=self.node_id
            )
        self.audit = AuditSummary(
            consistent=request.consistent,
            differences=request.differences,
            offset=request.offset,
            log_end_offset=request.log_end_offset,
            finished_ms=request.finished_ms,
            seconds=request.seconds,
            received_ms=now_ms(),
        )
        return cpb.ReportAuditResponse(node_id=self.node_id, is_active=is_active)


def audit_problem(request: cpb.ReportAuditRequest) -> str | None:
    """What makes ``request`` no audit's summary, None when nothing does: the counts and
    offsets within [-1, :data:`AUDIT_LIMIT`] (-1: unknown), ``finished_ms`` -1 or a time
    the page can write (:func:`.times.representable_ms`, and not before the epoch),
    ``seconds`` finite within [0, :data:`AUDIT_SECONDS_LIMIT`)."""
    for name in ("differences", "offset", "log_end_offset"):
        value = getattr(request, name)
        if not -1 <= value <= AUDIT_LIMIT:
            return f"an audit summary out of bounds: {name} {value} is outside [-1, {AUDIT_LIMIT}]"
    finished = request.finished_ms
    if finished != -1 and not (finished >= 0 and representable_ms(finished)):
        return (
            f"an audit summary out of bounds: finished_ms {finished} is neither -1 nor "
            f"within [0, {MAX_MS}] (ms since the Unix epoch, up to the year 9999)"
        )
    if not 0 <= request.seconds < AUDIT_SECONDS_LIMIT:  # False for NaN too
        return (
            f"an audit summary out of bounds: seconds {request.seconds!r} is outside "
            f"[0, {AUDIT_SECONDS_LIMIT:.0e})"
        )
    return None
