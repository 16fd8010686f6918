"""RaftNode: the KRaft quorum protocol, free of threads, sockets and wall clocks.

Everything outside comes in through four doors, so the same code runs in the seeded
simulation and in a controller process:

- ``handle_request(request, reply)``: an RPC from a peer; ``reply`` is called exactly
  once, possibly later (a fetch the leader holds until data arrives: the long poll);
- ``handle_response(destination, request, response)``: the answer to a request this
  node sent through ``transport.send`` (``None`` when it failed or timed out);
- ``tick()``: timers (elections, fetch timeouts, retries, the leader's quorum check)
  and the deferred flush; ``next_deadline()`` says when it wants the next one;
- ``append(framed_records)``: the leader's writes.

Contracts:

- **Election state** is persisted (``QuorumStateStore.write``) before the node acts on
  it: a node never votes twice in one epoch, even across restarts, and its epoch never
  goes back.
- **Durability**: appends are flushed on the next ``tick``. The leader counts only its
  flushed end offset towards the high watermark, and a follower acknowledges (its next
  fetch offset) only what it has flushed, so a committed record is on the disks of a
  majority.
- **Commit**: the high watermark is the majority's end offset, advanced only once an
  offset of the leader's own epoch (its leader-change record) is replicated. It never
  goes back, and no node truncates below it.
- **Elections** (KIP-996 Pre-Vote): a voter that lost its leader first asks the voters
  whether they *would* vote for it (``Prospective``), changing nobody's state; only a
  majority of yeses lets it bump the epoch and stand (``Candidate``). A voter that has
  heard from a live leader within the fetch timeout says no, so a node rejoining with a
  stale log or a cut link cannot depose a healthy leader. Only hearing from a leader or
  granting a vote resets a voter's election timer: a refused vote in a higher epoch
  moves the voter to that epoch but keeps its deadline (otherwise stale candidates can
  keep the voters that could win from ever standing).
- **Input**: requests are checked before they touch any state: the sender of Vote,
  BeginQuorumEpoch and EndQuorumEpoch must be another voter (else
  INCONSISTENT_VOTER_SET); epochs must fit an int32 below its maximum and offsets must
  not be negative (else INVALID_REQUEST); a fetch is held at most
  ``fetch_max_wait_ms`` whatever it asks for.
- **Threading**: none. One caller (the event loop or the simulation) calls everything.
"""

from __future__ import annotations

import logging
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol, TypeVar

from google.protobuf.message import Message

from migration.kafka_errors import ErrorCode
from migration.limits import INT32_MAX
from migration.log.batch import BatchHeader, frame_record
from migration.log.snapshots import SnapshotId
from migration.proto import raft_pb2 as pb
from migration.proto.metadata_pb2 import MetadataRecord
from migration.raft.config import RaftConfig
from migration.raft.quorum_state import ElectionState, QuorumStateStore
from migration.raft.storage import RaftLog

log = logging.getLogger(__name__)

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
EPOCH_LIMIT = INT32_MAX  # epochs are int32 on the wire; a node must be able to bump one


class Role(StrEnum):
    UNATTACHED = "Unattached"
    VOTED = "Voted"
    PROSPECTIVE = "Prospective"
    CANDIDATE = "Candidate"
    FOLLOWER = "Follower"
    LEADER = "Leader"
    RESIGNED = "Resigned"


class Transport(Protocol):
    def send(self, destination: int, request: Request) -> None:
        """Deliver ``request``; its answer comes back through ``handle_response``."""


class RaftListener(Protocol):
    """What the state machine above Raft hears (on the node's own thread)."""

    def on_leader_change(self, leader_id: int | None, epoch: int) -> None: ...

    def on_commit(self, high_watermark: int) -> None: ...

    def on_snapshot_installed(self, snapshot_id: SnapshotId) -> None: ...


class NotLeaderError(Exception):
    def __init__(self, leader_id: int | None, epoch: int) -> None:
        super().__init__(f"not the leader (leader {leader_id}, epoch {epoch})")
        self.leader_id = leader_id
        self.epoch = epoch


class RaftInvariantError(AssertionError):
    """The protocol was about to break one of Raft's guarantees: a bug, never input."""


@dataclass(slots=True)
class ReplicaProgress:
    end_offset: int = -1
    last_fetch_ms: float = -math.inf
    last_caught_up_ms: float = -math.inf


@dataclass(slots=True)
class _ParkedFetch:
    request: pb.FetchRequest
    reply: Reply
    deadline: float


@dataclass(slots=True)
class _SnapshotDownload:
    snapshot_id: SnapshotId
    data: bytearray = field(default_factory=bytearray)


class RaftNode:
    def __init__(
        self,
        config: RaftConfig,
        raft_log: RaftLog,
        store: QuorumStateStore,
        transport: Transport,
        *,
        clock: Callable[[], float],
        rng: random.Random,
        listeners: Sequence[RaftListener] = (),
        wall_clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
    ) -> None:
        self.config = config
        self.log = raft_log
        self._store = store
        self._transport = transport
        self._clock = clock
        self._rng = rng
        self._listeners = list(listeners)  # told in this order
        self._wall_ms = wall_clock_ms
        self.node_id = config.node_id
        self.high_watermark = 0
        self.flushed_end_offset = raft_log.end_offset  # what is on disk at open is durable
        self._needs_flush = False
        self._wakeup = math.inf
        # follower / observer
        self._inflight_fetch: pb.FetchRequest | pb.FetchSnapshotRequest | None = None
        self._next_fetch_ms = -math.inf
        self._last_fetch_ok_ms = clock()
        self._leader_contact_ms = -math.inf  # last answer from the leader itself
        self._snapshot: _SnapshotDownload | None = None
        self._leader_resigned = False
        # candidate
        self._granted: set[int] = set()
        self._answered: set[int] = set()
        self._named_leader: int | None = None  # a leader a refused pre-vote named
        self._backoff_until: float | None = None
        self._next_resend_ms = -math.inf
        # leader
        self._epoch_start_offset = 0
        self._became_leader_ms = 0.0
        self._progress: dict[int, ReplicaProgress] = {}
        self._observers: dict[int, ReplicaProgress] = {}
        self._begin_acked: set[int] = set()
        self._parked: list[_ParkedFetch] = []

        state = store.read() or ElectionState(0)
        if state.epoch < raft_log.last_epoch:
            # A lost or stale quorum-state file: start unattached in the log's last epoch,
            # as Kafka does, never behind an epoch this node has already written in.
            log.warning(
                "node %d: quorum state epoch %d is behind the log's last epoch %d; "
                "starting unattached in epoch %d",
                config.node_id,
                state.epoch,
                raft_log.last_epoch,
                raft_log.last_epoch,
            )
            state = ElectionState(raft_log.last_epoch)
            store.write(state)
        if state.epoch >= EPOCH_LIMIT:
            raise RaftInvariantError(f"quorum state epoch {state.epoch} is not below {EPOCH_LIMIT}")
        self._state = state
        self._election_deadline = self._randomized_timeout()
        if state.leader_id == self.node_id:
            self.role = (
                Role.RESIGNED
            )  # its log may have lost unflushed writes: never lead again in this epoch
        elif state.leader_id is not None:
            self.role = Role.FOLLOWER
        elif state.voted_id == self.node_id:
            self.role = Role.CANDIDATE
            self._granted = {self.node_id}
        elif state.voted_id is not None:
            self.role = Role.VOTED
        else:
            self.role = Role.UNATTACHED
        self._wake(clock())

    # --- what the outside reads ----------------------------------------------------------

    @property
    def epoch(self) -> int:
        return self._state.epoch

    @property
    def leader_id(self) -> int | None:
        return self._state.leader_id if self.role in (Role.FOLLOWER, Role.LEADER) else None

    @property
    def voted_id(self) -> int | None:
        return self._state.voted_id

    @property
    def is_leader(self) -> bool:
        return self.role is Role.LEADER

    @property
    def epoch_start_offset(self) -> int:
        """The offset of the leader's leader-change record (leaders only)."""
        return self._epoch_start_offset

    def next_deadline(self) -> float:
        return self._wakeup

    def _wake(self, at: float) -> None:
        self._wakeup = min(self._wakeup, at)

    def _randomized_timeout(self) -> float:
        t = self.config.election_timeout_ms
        return self._clock() + t + self._rng.random() * t

    # --- the leader's writes ---------------------------------------------------------------

    def append(self, framed_records: Sequence[bytes]) -> BatchHeader:
        """Append one batch in the leader's epoch; it commits once the high watermark
        passes ``header.last_offset`` in this same epoch. Raises NotLeaderError."""
        if self.role is not Role.LEADER:
            raise NotLeaderError(self._state.leader_id, self.epoch)
        header = self.log.append_framed(framed_records, self.epoch)
        self._needs_flush = True
        self._wake(self._clock())
        return header

    def resign(self) -> None:
        """Step down gracefully (shutdown): tell the voters, most caught-up first, so the
        next election starts at once instead of after a fetch timeout."""
        if self.role is Role.LEADER:
            self._resign("shutting down")

    # --- timers ------------------------------------------------------------------------------

    def tick(self) -> None:
        now = self._clock()
        self._wakeup = math.inf
        if self._needs_flush:
            self.log.flush()
            self._needs_flush = False
            self.flushed_end_offset = self.log.end_offset
            if self.role is Role.LEADER:
                self._complete_parked(now)
                self._maybe_advance_high_watermark()
        if self.role is Role.LEADER:
            self._tick_leader(now)
        elif self.role in (Role.CANDIDATE, Role.PROSPECTIVE):
            self._tick_election(now)
        elif self.role is Role.FOLLOWER:
            self._tick_follower(now)
        elif self.config.is_voter:  # UNATTACHED, VOTED, RESIGNED
            if now >= self._election_deadline:
                self._become_prospective()
                return
            self._wake(self._election_deadline)
        else:
            self._send_fetch(now)  # an observer looks for the leader

    def _tick_leader(self, now: float) -> None:
        for parked in [p for p in self._parked if p.deadline <= now]:
            self._parked.remove(parked)
            parked.reply(self._fetch_answer(parked.request, now))
        for p in self._parked:
            self._wake(p.deadline)
        if now >= self._next_resend_ms:
            for voter in self._other_voters():
                if voter not in self._begin_acked:
                    self._transport.send(
                        voter,
                        pb.BeginQuorumEpochRequest(
                            cluster_id=self.config.cluster_id,
                            leader_id=self.node_id,
                            leader_epoch=self.epoch,
                        ),
                    )
            self._next_resend_ms = now + RESEND_MS
        if len(self._begin_acked) < len(self._other_voters()):
            self._wake(self._next_resend_ms)
        window = 1.5 * self.config.fetch_timeout_ms
        if now - self._became_leader_ms > window:
            heard = 1 + sum(
                1 for v in self._other_voters() if now - self._progress[v].last_fetch_ms <= window
            )
            if heard < self.config.majority:
                self._resign(
                    f"heard from {heard} of {len(self.config.voters)} voters in {window:.0f} ms"
                )
                return
        self._wake(now + self.config.fetch_timeout_ms / 4)

    def _tick_election(self, now: float) -> None:
        """Prospective and Candidate: (pre-)votes resent until answered; a lost or timed
        out election backs off, then starts over with a pre-vote."""
        if self._backoff_until is not None:
            if now >= self._backoff_until:
                self._become_prospective()
            else:
                self._wake(self._backoff_until)
            return
        if now >= self._election_deadline:
            self._back_off(now, "timed out")
            return
        if now >= self._next_resend_ms:
            for voter in self._other_voters():
                if voter not in self._answered:
                    self._transport.send(voter, self._vote_request())
            self._next_resend_ms = now + RESEND_MS
        self._wake(min(self._election_deadline, self._next_resend_ms))

    def _back_off(self, now: float, why: str) -> None:
        backoff = self._rng.random() * self.config.election_backoff_max_ms
        log.info(
            "node %d: %s in epoch %d %s; backing off %.0f ms",
            self.node_id,
            "pre-vote" if self.role is Role.PROSPECTIVE else "election",
            self.epoch,
            why,
            backoff,
        )
        self._backoff_until = now + backoff
        self._wake(self._backoff_until)

    def _tick_follower(self, now: float) -> None:
        if self._leader_resigned:
            if self.config.is_voter and now >= self._election_deadline:
                self._become_prospective()
                return
            self._wake(self._election_deadline)
            return
        timeout_at = self._last_fetch_ok_ms + self.config.fetch_timeout_ms
        if now >= timeout_at:
            log.info(
                "node %d: no answer from leader %s for %d ms",
                self.node_id,
                self._state.leader_id,
                self.config.fetch_timeout_ms,
            )
            if self.config.is_voter:
                self._become_prospective()
            else:
                self._become_unattached(self.epoch)
            return
        self._send_fetch(now)
        self._wake(timeout_at)

    # --- transitions (each persists before it acts) ----------------------------------------

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

    def _reset_role_state(self) -> None:
        if self._parked:
            for parked in self._parked:
                parked.reply(self._error(pb.FetchResponse, ErrorCode.NOT_LEADER_OR_FOLLOWER))
            self._parked = []
        self._inflight_fetch = None
        self._snapshot = None
        self._leader_resigned = False
        self._backoff_until = None
        self._granted = set()
        self._answered = set()
        self._named_leader = None
        self._next_fetch_ms = -math.inf
        self._next_resend_ms = -math.inf

    def _become_unattached(self, epoch: int, keep_deadline: bool = False) -> None:
        """Enter ``epoch`` with no leader. ``keep_deadline``: a refused vote brought this
        node here, which must not restart its election timer (only a leader or a granted
        vote does); the deadline it runs to is the one of the role it leaves."""
        deadline = self._current_deadline() if keep_deadline else self._randomized_timeout()
        voted = self._state.voted_id if epoch == self.epoch else None
        self._reset_role_state()
        self._persist(ElectionState(epoch, None, voted))
        self.role = Role.VOTED if voted is not None else Role.UNATTACHED
        self._election_deadline = deadline
        self._wake(self._clock())
        self._notify_leader(None)

    def _current_deadline(self) -> float:
        """When this node would stand next in its current role."""
        if self.role is Role.FOLLOWER and not self._leader_resigned:
            return self._last_fetch_ok_ms + self.config.fetch_timeout_ms
        if self.role is Role.LEADER:
            return self._randomized_timeout()
        if self._backoff_until is not None:
            return self._backoff_until
        return self._election_deadline

    def _become_voted(self, candidate: int) -> None:
        self._persist(ElectionState(self.epoch, None, candidate))
        self.role = Role.VOTED
        self._election_deadline = self._randomized_timeout()
        self._wake(self._election_deadline)

    def _become_prospective(self) -> None:
        """Ask for pre-votes in the next epoch without entering it (KIP-996)."""
        self._reset_role_state()
        self.role = Role.PROSPECTIVE
        self._granted = {self.node_id}
        self._election_deadline = self._randomized_timeout()
        log.info("node %d: prospective for epoch %d", self.node_id, self.epoch + 1)
        self._notify_leader(None)
        if len(self._granted) >= self.config.majority:
            self._become_candidate()
            return
        self._wake(self._clock())

    def _become_candidate(self) -> None:
        self._reset_role_state()
        self._persist(ElectionState(self.epoch + 1, None, self.node_id))
        self.role = Role.CANDIDATE
        self._granted = {self.node_id}
        self._election_deadline = self._randomized_timeout()
        log.info("node %d: candidate in epoch %d", self.node_id, self.epoch)
        self._notify_leader(None)
        if len(self._granted) >= self.config.majority:
            self._become_leader()
            return
        self._wake(self._clock())

    def _become_follower(self, epoch: int, leader: int, *, contact: bool) -> None:
        """Follow ``leader``; ``contact``: the leader itself spoke (else a third party
        named it, and until a fetch succeeds this node grants pre-votes)."""
        voted = self._state.voted_id if epoch == self.epoch else None
        self._reset_role_state()
        self._persist(ElectionState(epoch, leader, voted))
        self.role = Role.FOLLOWER
        self._last_fetch_ok_ms = self._clock()
        self._leader_contact_ms = self._clock() if contact else -math.inf
        self._wake(self._clock())
        self._notify_leader(leader)

    def _become_leader(self) -> None:
        now = self._clock()
        self._reset_role_state()
        self._persist(ElectionState(self.epoch, self.node_id, self.node_id))
        self.role = Role.LEADER
        self._became_leader_ms = now
        self._progress = {v: ReplicaProgress() for v in self._other_voters()}
        self._observers = {}
        self._begin_acked = set()
        self._epoch_start_offset = self.log.end_offset
        change = MetadataRecord()
        change.leader_change_message.leader_id = self.node_id
        for voter in sorted(self.config.voters):
            change.leader_change_message.voters.add().voter_id = voter
        for voter in sorted(self._granted):
            change.leader_change_message.granting_voters.add().voter_id = voter
        self.log.append_framed([frame_record(change.SerializeToString())], self.epoch)
        self._needs_flush = True
        log.info(
            "node %d: leader in epoch %d from offset %d",
            self.node_id,
            self.epoch,
            self._epoch_start_offset,
        )
        self._notify_leader(self.node_id)
        self._wake(now)

    def _resign(self, why: str) -> None:
        log.info("node %d: resigning leadership of epoch %d: %s", self.node_id, self.epoch, why)
        successors = sorted(self._other_voters(), key=lambda v: (-self._progress[v].end_offset, v))
        self._reset_role_state()
        self.role = Role.RESIGNED
        self._election_deadline = self._randomized_timeout()
        for voter in successors:
            self._transport.send(
                voter,
                pb.EndQuorumEpochRequest(
                    cluster_id=self.config.cluster_id,
                    leader_id=self.node_id,
                    leader_epoch=self.epoch,
                    preferred_successors=successors,
                ),
            )
        self._notify_leader(None)
        self._wake(self._election_deadline)

    def _notify_leader(self, leader: int | None) -> None:
        for listener in self._listeners:
            listener.on_leader_change(leader, self.epoch)

    def _observe(self, epoch: int, leader_id: int, source: int) -> None:
        """Learn from any answer: a newer epoch moves this node there; a leader named
        for the current epoch is followed."""
        if not 0 <= epoch < EPOCH_LIMIT or source not in self.config.voters:
            return
        leader = leader_id if leader_id in self.config.voters else None
        contact = leader == source
        if epoch > self.epoch:
            if leader is not None and leader != self.node_id:
                self._become_follower(epoch, leader, contact=contact)
            else:
                self._become_unattached(epoch)
        elif (
            epoch == self.epoch
            and leader is not None
            and leader != self.node_id
            and self.role in (Role.UNATTACHED, Role.VOTED, Role.PROSPECTIVE, Role.CANDIDATE)
        ):
            self._become_follower(epoch, leader, contact=contact)

    def _other_voters(self) -> list[int]:
        return [v for v in sorted(self.config.voters) if v != self.node_id]

    # --- requests ------------------------------------------------------------------------------

    def handle_request(self, request: Request, reply: Reply) -> None:
        cluster = getattr(request, "cluster_id", "")
        if cluster and self.config.cluster_id and cluster != self.config.cluster_id:
            reply(self._error(_RESPONSE_OF[type(request)], ErrorCode.INCONSISTENT_CLUSTER_ID))
            return
        refusal = self._refusal(request)
        if refusal is not None:
            code, why = refusal
            log.warning("node %d: refused %s: %s", self.node_id, type(request).__name__, why)
            reply(self._error(_RESPONSE_OF[type(request)], code))
            return
        if isinstance(request, pb.FetchRequest):
            self._on_fetch(request, reply)
        elif isinstance(request, pb.VoteRequest):
            reply(self._on_vote(request))
        elif isinstance(request, pb.BeginQuorumEpochRequest):
            reply(self._on_begin_quorum_epoch(request))
        elif isinstance(request, pb.EndQuorumEpochRequest):
            reply(self._on_end_quorum_epoch(request))
        elif isinstance(request, pb.FetchSnapshotRequest):
            reply(self._on_fetch_snapshot(request))
        else:
            reply(self.describe_quorum())

    def _refusal(self, request: Request) -> tuple[ErrorCode, str] | None:
        """Why ``request`` must not touch this node's state, with the error code to
        answer (None: it may)."""
        sender: int | None = None
        epochs: list[int] = []
        offsets: list[int] = []
        if isinstance(request, pb.VoteRequest):
            sender = request.candidate_id
            epochs = [request.candidate_epoch, request.last_offset_epoch]
            offsets = [request.last_offset]
        elif isinstance(request, pb.BeginQuorumEpochRequest | pb.EndQuorumEpochRequest):
            sender = request.leader_id
            epochs = [request.leader_epoch]
        elif isinstance(request, pb.FetchRequest):
            epochs = [request.current_leader_epoch, request.last_fetched_epoch]
            offsets = [request.fetch_offset]
        elif isinstance(request, pb.FetchSnapshotRequest):
            epochs = [request.current_leader_epoch, request.snapshot_id.epoch]
            offsets = [request.position, request.snapshot_id.end_offset]
        if sender is not None and (sender == self.node_id or sender not in self.config.voters):
            voters = sorted(self.config.voters)
            return ErrorCode.INCONSISTENT_VOTER_SET, f"{sender} is not another voter of {voters}"
        if any(not 0 <= e < EPOCH_LIMIT for e in epochs):
            return ErrorCode.INVALID_REQUEST, f"epoch out of range [0, {EPOCH_LIMIT}): {epochs}"
        if any(o < 0 for o in offsets):
            return ErrorCode.INVALID_REQUEST, f"negative offset or position: {offsets}"
        return None

    def _error(self, kind: type[R], code: ErrorCode) -> R:
        """A ``kind`` response with ``code`` and what this node knows of the leader."""
        leader = self._state.leader_id if self.role in (Role.FOLLOWER, Role.LEADER) else None
        return kind(
            error_code=code,
            leader_id=NO_LEADER if leader is None else leader,
            leader_epoch=self.epoch,
        )

    def _on_vote(self, req: pb.VoteRequest) -> pb.VoteResponse:
        if not self.config.is_voter:
            return self._error(pb.VoteResponse, ErrorCode.INCONSISTENT_VOTER_SET)
        up_to_date = (req.last_offset_epoch, req.last_offset) >= (
            self.log.last_epoch,
            self.log.end_offset,
        )
        if req.pre_vote:
            response = self._error(pb.VoteResponse, ErrorCode.NONE)
            response.vote_granted = up_to_date and self._would_vote(req) and not self._has_leader()
            return response
        if req.candidate_epoch > self.epoch:  # a granted vote restarts the timer below
            self._become_unattached(req.candidate_epoch, keep_deadline=True)
        granted = False
        if req.candidate_epoch == self.epoch and self._would_vote(req) and up_to_date:
            if self._state.voted_id is None:
                self._become_voted(req.candidate_id)
            granted = True
        response = self._error(pb.VoteResponse, ErrorCode.NONE)
        response.vote_granted = granted
        return response

    def _would_vote(self, req: pb.VoteRequest) -> bool:
        """Whether this node may vote for ``req``'s candidate in its epoch (log aside)."""
        if req.candidate_epoch > self.epoch:
            return True
        return (
            req.candidate_epoch == self.epoch
            and self._state.voted_id in (None, req.candidate_id)
            and (
                self.role in (Role.UNATTACHED, Role.VOTED)
                or (self.role is Role.PROSPECTIVE and self._state.leader_id is None)
            )
        )

    def _has_leader(self) -> bool:
        """A leader this node has heard from within the fetch timeout (it refuses
        pre-votes then: KIP-996's protection of a healthy leader)."""
        if self.role is Role.LEADER:
            return True
        return (
            self.role is Role.FOLLOWER
            and not self._leader_resigned
            and self._clock() - self._leader_contact_ms < self.config.fetch_timeout_ms
        )

    def _on_begin_quorum_epoch(self, req: pb.BeginQuorumEpochRequest) -> Response:
        if req.leader_epoch < self.epoch:
            return self._error(pb.BeginQuorumEpochResponse, ErrorCode.FENCED_LEADER_EPOCH)
        if req.leader_epoch > self.epoch or self.role is not Role.FOLLOWER:
            if self.role is Role.LEADER and req.leader_epoch == self.epoch:
                raise RaftInvariantError(f"two leaders in epoch {self.epoch}")
            self._become_follower(req.leader_epoch, req.leader_id, contact=True)
        elif self._state.leader_id == req.leader_id:
            self._leader_contact_ms = self._clock()
        return self._error(pb.BeginQuorumEpochResponse, ErrorCode.NONE)

    def _on_end_quorum_epoch(self, req: pb.EndQuorumEpochRequest) -> Response:
        if req.leader_epoch < self.epoch:
            return self._error(pb.EndQuorumEpochResponse, ErrorCode.FENCED_LEADER_EPOCH)
        if req.leader_epoch > self.epoch:
            self._become_unattached(req.leader_epoch)
        if self.role is Role.FOLLOWER and self._state.leader_id == req.leader_id:
            # The most caught-up successor stands first; the others give it a head start.
            successors = list(req.preferred_successors)
            rank = successors.index(self.node_id) if self.node_id in successors else len(successors)
            delay = min(
                self.config.election_backoff_max_ms, rank * 2 * self.config.retry_backoff_ms
            )
            self._leader_resigned = True
            self._election_deadline = (
                self._clock() + delay + self._rng.random() * self.config.retry_backoff_ms
            )
            self._wake(self._election_deadline)
        return self._error(pb.EndQuorumEpochResponse, ErrorCode.NONE)

    def _leader_epoch_error(self, current_leader_epoch: int) -> ErrorCode | None:
        if self.role is not Role.LEADER:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        if current_leader_epoch < self.epoch:
            return ErrorCode.FENCED_LEADER_EPOCH
        if current_leader_epoch > self.epoch:
            return ErrorCode.UNKNOWN_LEADER_EPOCH
        return None

    def _on_fetch(self, req: pb.FetchRequest, reply: Reply) -> None:
        error = self._leader_epoch_error(req.current_leader_epoch)
        if error is not None:
            reply(self._error(pb.FetchResponse, error))
            return
        now = self._clock()
        response = self._fetch_answer(req, now)
        wait_ms = min(req.max_wait_ms, self.config.fetch_max_wait_ms)
        if (
            not response.records
            and not response.HasField("diverging_epoch")
            and not response.HasField("snapshot_id")
            and wait_ms > 0
            and req.fetch_offset >= self.log.end_offset
        ):
            deadline = now + wait_ms
            self._parked.append(_ParkedFetch(req, reply, deadline))
            self._wake(deadline)
            return
        reply(response)

    def _fetch_answer(self, req: pb.FetchRequest, now: float) -> pb.FetchResponse:
        response = self._error(pb.FetchResponse, ErrorCode.NONE)
        response.log_start_offset = self.log.start_offset
        response.high_watermark = self.high_watermark
        snapshot = self.log.latest_snapshot()
        lookup = (
            self.log.end_offset_for_epoch(req.last_fetched_epoch)
            if req.fetch_offset >= self.log.start_offset
            else None
        )
        if lookup is None:
            if snapshot is None:
                raise RaftInvariantError(
                    f"fetch at {req.fetch_offset}: log start {self.log.start_offset}, no snapshot"
                )
            response.snapshot_id.end_offset = snapshot.end_offset
            response.snapshot_id.epoch = snapshot.epoch
            return response
        epoch, end = lookup
        if epoch < req.last_fetched_epoch or end < req.fetch_offset:
            response.diverging_epoch.epoch = epoch
            response.diverging_epoch.end_offset = end
            return response
        self._note_fetch(req.replica_id, req.fetch_offset, now)
        if req.fetch_offset < self.log.end_offset:
            response.records = self.log.read_frames(
                req.fetch_offset,
                min(req.max_bytes or self.config.fetch_max_bytes, self.config.fetch_max_bytes),
            )
        return response

    def _note_fetch(self, replica: int, fetch_offset: int, now: float) -> None:
        if replica in self.config.voters:
            if replica == self.node_id:
                return
            progress = self._progress[replica]
        else:
            progress = self._observers.setdefault(replica, ReplicaProgress())
        progress.end_offset = fetch_offset
        progress.last_fetch_ms = now
        if fetch_offset >= self.log.end_offset:
            progress.last_caught_up_ms = now
        if replica in self.config.voters:
            self._maybe_advance_high_watermark()

    def _maybe_advance_high_watermark(self) -> None:
        ends = sorted(
            [self.flushed_end_offset, *(p.end_offset for p in self._progress.values())],
            reverse=True,
        )
        candidate = ends[self.config.majority - 1]
        if candidate > self.high_watermark and candidate > self._epoch_start_offset:
            self.high_watermark = candidate
            self._complete_parked(self._clock())
            for listener in self._listeners:
                listener.on_commit(candidate)

    def _complete_parked(self, now: float) -> None:
        parked, self._parked = self._parked, []
        for p in parked:
            p.reply(self._fetch_answer(p.request, now))

    def _on_fetch_snapshot(self, req: pb.FetchSnapshotRequest) -> Response:
        error = self._leader_epoch_error(req.current_leader_epoch)
        if error is not None:
            return self._error(pb.FetchSnapshotResponse, error)
        snapshot_id = SnapshotId(req.snapshot_id.end_offset, req.snapshot_id.epoch)
        chunk = self.log.snapshot_chunk(snapshot_id, req.position, self.config.snapshot_chunk_bytes)
        if chunk is None:
            return self._error(pb.FetchSnapshotResponse, ErrorCode.SNAPSHOT_NOT_FOUND)
        data, size = chunk
        if req.position > size:
            return self._error(pb.FetchSnapshotResponse, ErrorCode.POSITION_OUT_OF_RANGE)
        response = self._error(pb.FetchSnapshotResponse, ErrorCode.NONE)
        response.snapshot_id.CopyFrom(req.snapshot_id)
        response.size = size
        response.position = req.position
        response.unaligned_records = data
        return response

    def describe_quorum(self) -> pb.DescribeQuorumResponse:
        if self.role is not Role.LEADER:
            return self._error(pb.DescribeQuorumResponse, ErrorCode.NOT_LEADER_OR_FOLLOWER)
        now, wall = self._clock(), self._wall_ms()
        response = self._error(pb.DescribeQuorumResponse, ErrorCode.NONE)
        response.high_watermark = self.high_watermark

        def stamp(ms: float) -> int:
            return -1 if math.isinf(ms) else int(wall - (now - ms))

        for voter in sorted(self.config.voters):
            if voter == self.node_id:
                response.current_voters.add(
                    replica_id=voter,
                    log_end_offset=self.log.end_offset,
                    last_fetch_timestamp=wall,
                    last_caught_up_timestamp=wall,
                )
            else:
                p = self._progress[voter]
                response.current_voters.add(
                    replica_id=voter,
                    log_end_offset=p.end_offset,
                    last_fetch_timestamp=stamp(p.last_fetch_ms),
                    last_caught_up_timestamp=stamp(p.last_caught_up_ms),
                )
        for observer, p in sorted(self._observers.items()):
            response.observers.add(
                replica_id=observer,
                log_end_offset=p.end_offset,
                last_fetch_timestamp=stamp(p.last_fetch_ms),
                last_caught_up_timestamp=stamp(p.last_caught_up_ms),
            )
        return response

    # --- outgoing requests and their answers ------------------------------------------------

    def _vote_request(self) -> pb.VoteRequest:
        pre_vote = self.role is Role.PROSPECTIVE
        return pb.VoteRequest(
            cluster_id=self.config.cluster_id,
            candidate_id=self.node_id,
            candidate_epoch=self.epoch + 1 if pre_vote else self.epoch,
            last_offset_epoch=self.log.last_epoch,
            last_offset=self.log.end_offset,
            pre_vote=pre_vote,
        )

    def _fetch_target(self) -> int:
        if self.role is Role.FOLLOWER and self._state.leader_id is not None:
            return self._state.leader_id
        return self._rng.choice(sorted(self.config.voters - {self.node_id}))

    def _send_fetch(self, now: float) -> None:
        if self._inflight_fetch is not None or self._needs_flush:
            return
        if now < self._next_fetch_ms:
            self._wake(self._next_fetch_ms)
            return
        request: pb.FetchRequest | pb.FetchSnapshotRequest
        if self._snapshot is not None:
            snap = self._snapshot.snapshot_id
            request = pb.FetchSnapshotRequest(
                cluster_id=self.config.cluster_id,
                replica_id=self.node_id,
                current_leader_epoch=self.epoch,
                snapshot_id=pb.OffsetAndEpoch(end_offset=snap.end_offset, epoch=snap.epoch),
                position=len(self._snapshot.data),
                max_bytes=self.config.snapshot_chunk_bytes,
            )
        else:
            request = pb.FetchRequest(
                cluster_id=self.config.cluster_id,
                replica_id=self.node_id,
                current_leader_epoch=self.epoch,
                fetch_offset=self.log.end_offset,
                last_fetched_epoch=self.log.last_epoch,
                max_wait_ms=self.config.fetch_max_wait_ms if self.role is Role.FOLLOWER else 0,
                max_bytes=self.config.fetch_max_bytes,
            )
        self._inflight_fetch = request
        self._transport.send(self._fetch_target(), request)

    def handle_response(
        self, destination: int, request: Request, response: Response | None
    ) -> None:
        if isinstance(request, pb.FetchRequest | pb.FetchSnapshotRequest):
            if request is not self._inflight_fetch:
                if response is not None:
                    self._observe(response.leader_epoch, response.leader_id, destination)
                return
            self._inflight_fetch = None
            self._wake(self._clock())
        if response is None:
            if isinstance(request, pb.FetchRequest | pb.FetchSnapshotRequest):
                self._next_fetch_ms = self._clock() + self.config.retry_backoff_ms
                self._wake(self._next_fetch_ms)
            return
        pre_vote = isinstance(request, pb.VoteRequest) and request.pre_vote
        if not pre_vote or response.leader_epoch > self.epoch:
            # A pre-vote's answer names the voter's leader in this epoch -- often the one
            # this node just lost; _on_vote_response weighs it instead of following it.
            self._observe(response.leader_epoch, response.leader_id, destination)
        if isinstance(response, pb.VoteResponse):
            self._on_vote_response(destination, request, response)
        elif isinstance(response, pb.BeginQuorumEpochResponse):
            if self.role is Role.LEADER and response.leader_epoch == self.epoch:
                self._begin_acked.add(destination)
        elif isinstance(response, pb.FetchResponse):
            self._on_fetch_response(destination, response)
        elif isinstance(response, pb.FetchSnapshotResponse):
            self._on_fetch_snapshot_response(destination, response)

    def _on_vote_response(self, voter: int, request: Request, response: pb.VoteResponse) -> None:
        assert isinstance(request, pb.VoteRequest)
        role = Role.PROSPECTIVE if request.pre_vote else Role.CANDIDATE
        epoch = self.epoch + 1 if request.pre_vote else self.epoch
        if self.role is not role or request.candidate_epoch != epoch:
            return
        if response.leader_epoch != self.epoch or response.error_code != ErrorCode.NONE:
            return
        self._answered.add(voter)
        if response.vote_granted:
            self._granted.add(voter)
            if len(self._granted) >= self.config.majority:
                if role is Role.PROSPECTIVE:
                    self._become_candidate()
                else:
                    self._become_leader()
            return
        if response.leader_id in self.config.voters and response.leader_id != self.node_id:
            self._named_leader = response.leader_id
        refused = len(self._answered) - len(self._granted) + 1
        if refused > len(self.config.voters) // 2 and self._backoff_until is None:
            if role is Role.PROSPECTIVE and self._named_leader is not None:
                # A majority still hears from a leader: go back to it (no contact yet, so
                # this node keeps granting pre-votes until its own fetch succeeds).
                self._become_follower(self.epoch, self._named_leader, contact=False)
            else:
                self._back_off(self._clock(), "refused by a majority")

    def _following(self, source: int, response: Response) -> bool:
        return (
            self.role is Role.FOLLOWER
            and response.error_code == ErrorCode.NONE
            and response.leader_epoch == self.epoch
            and self._state.leader_id == source
        )

    def _on_fetch_response(self, source: int, response: pb.FetchResponse) -> None:
        now = self._clock()
        if not self._following(source, response):
            self._next_fetch_ms = now + self.config.retry_backoff_ms
            self._wake(self._next_fetch_ms)
            return
        self._last_fetch_ok_ms = self._leader_contact_ms = now
        if response.HasField("diverging_epoch"):
            self._truncate_diverging(response.diverging_epoch)
        elif response.HasField("snapshot_id"):
            self._snapshot = _SnapshotDownload(
                SnapshotId(response.snapshot_id.end_offset, response.snapshot_id.epoch)
            )
        elif response.records:
            try:
                self.log.append_frames(response.records)
            except ValueError as exc:
                log.warning("node %d: dropping fetched data from %d: %s", self.node_id, source, exc)
                self._next_fetch_ms = now + self.config.retry_backoff_ms
                return
            self._needs_flush = True
            self._advance_follower_high_watermark(response.high_watermark)
        else:
            self._advance_follower_high_watermark(response.high_watermark)

    def _truncate_diverging(self, diverging: pb.OffsetAndEpoch) -> None:
        # Where this log's copy of the leader's epoch ends; if this log has no batches
        # of that epoch, cut back to the end of its own older epoch and let the next
        # fetch find the exact point (Kafka's rule: it converges in a few rounds).
        mine = self.log.end_offset_for_epoch(diverging.epoch)
        if mine is None:
            target = self.log.start_offset
        elif mine[0] == diverging.epoch:
            target = min(diverging.end_offset, mine[1])
        else:
            target = mine[1]
        if target < self.high_watermark:
            raise RaftInvariantError(
                f"node {self.node_id}: truncating to {target} < HW {self.high_watermark}"
            )
        if target < self.log.end_offset:
            log.info(
                "node %d: log diverges from the leader's at epoch %d: truncating %d -> %d",
                self.node_id,
                diverging.epoch,
                self.log.end_offset,
                target,
            )
            self.log.truncate_to(target)
            self.flushed_end_offset = min(self.flushed_end_offset, target)

    def _advance_follower_high_watermark(self, leader_high_watermark: int) -> None:
        new = min(leader_high_watermark, self.log.end_offset)
        if new > self.high_watermark:
            self.high_watermark = new
            for listener in self._listeners:
                listener.on_commit(new)

    def _on_fetch_snapshot_response(self, source: int, response: pb.FetchSnapshotResponse) -> None:
        download = self._snapshot
        if not self._following(source, response) or download is None:
            self._snapshot = None  # start over from a fresh fetch
            self._next_fetch_ms = self._clock() + self.config.retry_backoff_ms
            return
        self._last_fetch_ok_ms = self._leader_contact_ms = self._clock()
        if response.position != len(download.data):
            return
        download.data += response.unaligned_records
        if len(download.data) < response.size:
            return
        snapshot_id = download.snapshot_id
        self._snapshot = None
        if snapshot_id.end_offset < self.high_watermark:
            raise RaftInvariantError(
                f"node {self.node_id}: snapshot {snapshot_id} < HW {self.high_watermark}"
            )
        self.log.install_snapshot(snapshot_id, bytes(download.data))
        self.flushed_end_offset = self.log.end_offset
        log.info("node %d: installed snapshot %s from %d", self.node_id, snapshot_id, source)
        for listener in self._listeners:
            listener.on_snapshot_installed(snapshot_id)
        self._advance_follower_high_watermark(snapshot_id.end_offset)


_RESPONSE_OF: dict[type[Message], type[Response]] = {
    pb.VoteRequest: pb.VoteResponse,
    pb.BeginQuorumEpochRequest: pb.BeginQuorumEpochResponse,
    pb.EndQuorumEpochRequest: pb.EndQuorumEpochResponse,
    pb.FetchRequest: pb.FetchResponse,
    pb.FetchSnapshotRequest: pb.FetchSnapshotResponse,
    pb.DescribeQuorumRequest: pb.DescribeQuorumResponse,
}
