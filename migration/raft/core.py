"""What every role of a RaftNode shares: the node's lasting state, timers, persistence,
answers, and the transitions one role module asks of another.

The role modules (:mod:`.leader`, :mod:`.election`, :mod:`.follower`) are mixins over
:class:`NodeCore`; :class:`~migration.raft.node.RaftNode` combines them and dispatches.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from typing import Protocol, TypeVar

from google.protobuf.message import Message

from migration.common.kafka_errors import ErrorCode
from migration.log.snapshots import SnapshotId
from migration.proto import raft_pb2 as pb
from migration.raft.config import RaftConfig
from migration.raft.metrics import RaftMetrics
from migration.raft.quorum_state_store import ElectionState, QuorumStateStore
from migration.raft.roles import (
    CandidacyState,
    Fetcher,
    FollowerState,
    LeaderState,
    Role,
    RoleState,
)
from migration.raft.storage import RaftLog

log = logging.getLogger("migration.raft.node")

Request = (
    pb.VoteRequest
    | pb.BeginQuorumEpochRequest
    | pb.EndQuorumEpochRequest
    | pb.FetchRequest
    | pb.FetchSnapshotRequest
    | pb.DescribeQuorumRequest
)
Response = (
    pb.VoteResponse
    | pb.BeginQuorumEpochResponse
    | pb.EndQuorumEpochResponse
    | pb.FetchResponse
    | pb.FetchSnapshotResponse
    | pb.DescribeQuorumResponse
)
Reply = Callable[[Response], None]
R = TypeVar("R", bound=Message)

NO_LEADER = -1
RESEND_MS = 100  # how often unanswered votes / BeginQuorumEpoch are sent again
COMMIT_STEP_RECORDS = 10_000  # committed offsets the listeners hear of per step


class Transport(Protocol):
    def send(self, destination: int, request: Request) -> None:
        """Deliver ``request``; its answer comes back through ``handle_response``."""


class RaftListener(Protocol):
    """What the state machine above Raft hears (on the node's own thread)."""

    def on_leader_change(self, leader_id: int | None, epoch: int) -> None: ...

    def on_commit(self, high_watermark: int) -> None: ...

    def on_snapshot_installed(self, snapshot_id: SnapshotId) -> None: ...


class RaftInvariantError(AssertionError):
    """The protocol was about to break one of Raft's guarantees: a bug, never input."""


class NodeCore:
    config: RaftConfig
    log: RaftLog
    node_id: int
    role: Role
    high_watermark: int
    _commit_heard: int  # the listeners have heard of the commit up to here
    flushed_end_offset: int
    metrics: RaftMetrics
    _store: QuorumStateStore
    _transport: Transport
    _clock: Callable[[], float]
    _rng: random.Random
    _listeners: list[RaftListener]
    _wall_ms: Callable[[], int]
    _state: ElectionState
    _role_state: RoleState
    _fetcher: Fetcher
    _election_deadline: float
    _needs_flush: bool
    _wakeup: float

    @property
    def epoch(self) -> int:
        return self._state.epoch

    # --- the role's state, typed --------------------------------------------------------------

    def _leader(self) -> LeaderState:
        state = self._role_state
        assert isinstance(state, LeaderState), self.role
        return state

    def _candidacy(self) -> CandidacyState:
        state = self._role_state
        assert isinstance(state, CandidacyState), self.role
        return state

    def _follower(self) -> FollowerState:
        state = self._role_state
        assert isinstance(state, FollowerState), self.role
        return state

    # --- shared helpers -----------------------------------------------------------------------

    def _wake(self, at: float) -> None:
        self._wakeup = min(self._wakeup, at)

    def _randomized_timeout(self) -> float:
        t = self.config.election_timeout_ms
        return self._clock() + t + self._rng.random() * t

    def _other_voters(self) -> list[int]:
        return [v for v in sorted(self.config.voters) if v != self.node_id]

    def _persist(self, state: ElectionState) -> None:
        old = self._state
        if state.epoch < old.epoch or (
            state.epoch == old.epoch and old.voted_id is not None and state.voted_id != old.voted_id
        ):
            raise RaftInvariantError(
                f"node {self.node_id}: election state {old} -> {state} goes back"
            )
        self._store.write(state)
        self._state = state

    def _enter(self, role: Role, state: RoleState) -> None:
        """Leave the current role (held fetches answered, its state dropped), enter
        ``role`` with ``state`` and a fresh fetcher."""
        leaving = self._role_state
        if isinstance(leaving, LeaderState) and leaving.parked:
            for parked in leaving.parked:
                parked.reply(self._error(pb.FetchResponse, ErrorCode.NOT_LEADER_OR_FOLLOWER))
            leaving.parked = []
        self.role = role
        self._role_state = state
        self._fetcher = Fetcher()

    def _error(self, kind: type[R], code: ErrorCode) -> R:
        """A ``kind`` response with ``code`` and what this node knows of the leader."""
        leader = self._state.leader_id if self.role in (Role.FOLLOWER, Role.LEADER) else None
        return kind(
            error_code=code,
            leader_id=NO_LEADER if leader is None else leader,
            leader_epoch=self.epoch,
        )

    def _notify_leader(self, leader: int | None) -> None:
        for listener in self._listeners:
            listener.on_leader_change(leader, self.epoch)

    def _notify_commit(self) -> None:
        """Tell the listeners of one step of the commit up to the high watermark: whole
        batches, about ``COMMIT_STEP_RECORDS`` offsets, ending on a batch boundary. The
        rest follows a step per tick, so the loop serves fetches and votes between steps:
        a million-record copy committed at once, replayed in one go, held a leader past
        its followers' fetch timeout and they elected again. Listeners hear offsets
        that only grow, each the end of a batch (never part of a batch)."""
        target = self.high_watermark
        heard = max(self._commit_heard, self.log.start_offset)
        if heard >= target:
            return
        end = min(target, self.log.batch_end(min(heard + COMMIT_STEP_RECORDS, target) - 1))
        self._commit_heard = end
        for listener in self._listeners:
            listener.on_commit(end)
        if end < target:
            self._wake(self._clock())

    # --- transitions one role asks of another (defined by the role modules) -------------------

    def _become_unattached(self, epoch: int, keep_deadline: bool = False) -> None:
        raise NotImplementedError

    def _become_prospective(self) -> None:
        raise NotImplementedError

    def _become_candidate(self) -> None:
        raise NotImplementedError

    def _become_follower(self, epoch: int, leader: int, *, contact: bool) -> None:
        raise NotImplementedError

    def _become_leader(self) -> None:
        raise NotImplementedError

    def _send_fetch(self, now: float) -> None:
        raise NotImplementedError
