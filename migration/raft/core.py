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
from migration.raft.faults import RaftInvariantError
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
from migration.raft.voters import VoterHistory

log = logging.getLogger("migration.raft.node")

Request = (
    pb.VoteRequest
    | pb.BeginQuorumEpochRequest
    | pb.EndQuorumEpochRequest
    | pb.FetchRequest
    | pb.FetchSnapshotRequest
    | pb.DescribeQuorumRequest
    | pb.AddRaftVoterRequest
    | pb.RemoveRaftVoterRequest
    | pb.UpdateKRaftVersionRequest
)
Response = (
    pb.VoteResponse
    | pb.BeginQuorumEpochResponse
    | pb.EndQuorumEpochResponse
    | pb.FetchResponse
    | pb.FetchSnapshotResponse
    | pb.DescribeQuorumResponse
    | pb.RaftVoterChangeResponse
)
Reply = Callable[[Response], None]
# Runs a log's fsync (``RaftLog.begin_flush``'s callable) away from the node's thread,
# then hands its error, or None, to the callback on the node's thread.
Flusher = Callable[[Callable[[], None], Callable[[BaseException | None], None]], None]
R = TypeVar("R", bound=Message)

NO_LEADER = -1
RESEND_MS = 100  # how often unanswered votes / BeginQuorumEpoch are sent again
# Committed offsets the listeners hear of per step (whole batches); not below
# image.committed.BULK_COMMIT_RECORDS, or no commit step is replayed as a bulk one.
COMMIT_STEP_RECORDS = 2_000


class Transport(Protocol):
    def send(self, destination: int, request: Request) -> None:
        """Deliver ``request``; its answer comes back through ``handle_response``."""


class RaftListener(Protocol):
    """What the state machine above Raft hears (on the node's own thread)."""

    def on_leader_change(self, leader_id: int | None, epoch: int) -> None: ...

    def on_commit(self, high_watermark: int) -> None: ...

    def on_snapshot_installed(self, snapshot_id: SnapshotId) -> None: ...


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
    _needs_flush: bool  # appended since the last flush began
    _flushing: bool  # a flush handed to the flusher has not come back
    _flush_target: int  # the log end that flush covers
    _flusher: Flusher | None
    _wakeup: float
    voter_history: VoterHistory
    _warned_voters: bool  # the configured voters differ from the pinned ones: said once
    # Whether the leader may append a record of its own (a VotersRecord) now: the state
    # machine above may have records queued at offsets it has handed out already.
    own_appends_allowed: Callable[[], bool]

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

    def _check_no_flush_in_flight(self, change: str) -> None:
        """A follower cuts or replaces its log only on a fetch's answer, and sends no
        fetch while a flush is out: one in flight here would count as flushed what the
        change put in place of what it covered."""
        if self._flushing:
            raise RaftInvariantError(f"node {self.node_id}: {change} with a flush in flight")

    def _wake(self, at: float) -> None:
        self._wakeup = min(self._wakeup, at)

    def _randomized_timeout(self) -> float:
        t = self.config.election_timeout_ms
        return self._clock() + t + self._rng.random() * t

    # --- the voter set (KIP-853 lite: :mod:`.voters`) -----------------------------------------

    def pinned_voters(self) -> dict[int, str] | None:
        """The latest VotersRecord's voters (id -> directory id); None while the set is
        static (the ids of controller.quorum.voters)."""
        latest = self.voter_history.latest()
        return None if latest is None else dict(latest.voters)

    @property
    def voter_ids(self) -> frozenset[int]:
        latest = self.voter_history.latest()
        return self.config.voters if latest is None else frozenset(latest.voters)

    @property
    def is_voter(self) -> bool:
        """This replica (node id and directory id) is in its voter set: it may vote,
        stand, and its fetches count. A node formatted to join is not in a static set."""
        return self.is_voter_key(self.node_id, self.config.directory_id, observer=False)

    def is_voter_key(self, replica: int, directory_id: str, *, observer: bool) -> bool:
        """Whether (``replica``, ``directory_id``) is a voter here: in a pinned set the
        pair must be in it; in a static set the id must be, and the replica must not be
        one that counts itself an observer (``observer``; for this node: formatted to
        join)."""
        latest = self.voter_history.latest()
        if latest is not None:
            return bool(directory_id) and latest.voters.get(replica) == directory_id
        if replica == self.node_id:
            observer = observer or self.voter_history.joining
        return replica in self.config.voters and not observer

    @property
    def majority(self) -> int:
        return len(self.voter_ids) // 2 + 1

    def _voter_set_changed(self, why: str) -> None:
        """Log the voter set the log now gives (after ``why``) and this replica's place
        in it; a replaced disk (this id, another directory) says so."""
        pinned = self.pinned_voters()
        mine = self.config.directory_id or "none"
        if pinned is None:
            log.info(
                "node %d: voter set static %s after %s", self.node_id, sorted(self.voter_ids), why
            )
        else:
            log.info(
                "node %d: voter set %s after %s",
                self.node_id,
                self.voter_history.latest().describe(),  # type: ignore[union-attr]
                why,
            )
        if self.is_voter:
            log.info("node %d: this replica (directory %s) is a voter", self.node_id, mine)
        elif pinned is not None and self.node_id in pinned:
            log.warning(
                "node %d: the voter set names node %d with directory %s, but this disk is %s: "
                "a replaced disk is an observer (it never votes, never stands, its fetches "
                "never count) until `zk2kraft quorum remove-controller` of the old directory "
                "and `add-controller` of this one",
                self.node_id,
                self.node_id,
                pinned[self.node_id],
                mine,
            )
        else:
            log.info("node %d: this replica (directory %s) is an observer", self.node_id, mine)
        if pinned is not None and set(pinned) != self.config.voters and not self._warned_voters:
            self._warned_voters = True
            log.warning(
                "node %d: controller.quorum.voters names %s but the pinned voter set "
                "(kraft.version 1) is %s: the log's set wins; edits to "
                "controller.quorum.voters only give addresses now (use `zk2kraft quorum "
                "add-controller` / `remove-controller` to change the voters)",
                self.node_id,
                sorted(self.config.voters),
                sorted(pinned),
            )
        self._wake(self._clock())

    def _other_voters(self) -> list[int]:
        return [v for v in sorted(self.voter_ids) if v != self.node_id]

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
        if isinstance(leaving, LeaderState):
            waiting = [c[1] for c in (leaving.pending_change,) if c is not None]
            waiting += [c[2] for c in (leaving.queued_change,) if c is not None]
            leaving.pending_change = leaving.queued_change = None
            for reply in waiting:
                reply(self._error(pb.RaftVoterChangeResponse, ErrorCode.NOT_LEADER_OR_FOLLOWER))
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

    def _maybe_advance_high_watermark(self) -> None:
        raise NotImplementedError

    def _maybe_queued_change(self) -> None:
        raise NotImplementedError
