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
- **Durability**: appends are flushed on the next ``tick``: at once, or, given a
  ``flusher`` (a controller process's event loop), by an fsync on another thread whose
  outcome comes back as an event, so the node's thread never waits on the disk (one
  flush at a time; a failed one is LogFlushError, a fault). The leader counts only its
  flushed end offset towards the high watermark, and a follower acknowledges (its next
  fetch offset, sent only once no flush is pending) only what it has flushed, so a
  committed record is on the disks of a majority.
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
- **Voters** (KIP-853 lite, :mod:`.voters`, :mod:`.voter_changes`): a replica is its
  id and its directory id. The set is static (the ids of ``controller.quorum.voters``,
  Kafka's kraft.version 0) until the operator's upgrade to kraft.version 1 appends a
  VotersRecord; from then on a vote, a pre-vote or a fetch offset counts only from a
  pair in the latest one; a replica outside the set (a replaced disk, or one formatted
  to join) is an observer: it fetches, never stands, and answers a vote only when the
  candidate's set names its very directory (its own log may lack the record that added
  it: :meth:`~.election.ElectionRole._vote_refusal`). Voter changes are the leader's,
  one at a time. The set lives in the log and its snapshots only, and is
  rebuilt from them when the node opens its log.
- **Input**: requests are checked before they touch any state: the sender of Vote,
  BeginQuorumEpoch and EndQuorumEpoch must be another voter (else
  INCONSISTENT_VOTER_SET); epochs must fit an int32 below its maximum and offsets must
  not be negative (else INVALID_REQUEST); a fetch is held at most
  ``fetch_max_wait_ms`` whatever it asks for.
- **Roles**: each role keeps its own state (:mod:`.roles`), created on entering the role
  and dropped on leaving it; the role modules hold the behaviour (:mod:`.leader`,
  :mod:`.election`, :mod:`.follower`), this module dispatches.
- **Threading**: none. One caller (the event loop or the simulation) calls everything.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Sequence

from google.protobuf.message import Message

from migration.common.kafka_errors import ErrorCode
from migration.common.limits import INT32_MAX
from migration.log.batch import BatchHeader
from migration.proto import raft_pb2 as pb
from migration.raft.config import RaftConfig
from migration.raft.core import (
    NO_LEADER,
    Flusher,
    RaftListener,
    Reply,
    Request,
    Response,
    Transport,
    log,
)
from migration.raft.election import ElectionRole
from migration.raft.faults import RaftInvariantError
from migration.raft.follower import FollowerRole
from migration.raft.leader import LeaderRole
from migration.raft.metrics import RaftMetrics
from migration.raft.quorum_state_store import ElectionState, QuorumStateStore
from migration.raft.roles import CandidacyState, Fetcher, FollowerState, Role
from migration.raft.storage import RaftLog
from migration.raft.voter_changes import VoterChangeRole
from migration.raft.voters import VoterHistory

__all__ = [
    "NO_LEADER",
    "NotLeaderError",
    "RaftInvariantError",
    "RaftListener",
    "RaftNode",
    "Request",
    "Response",
    "Role",
    "Transport",
]

EPOCH_LIMIT = INT32_MAX  # epochs are int32 on the wire; a node must be able to bump one


class NotLeaderError(Exception):
    def __init__(self, leader_id: int | None, epoch: int) -> None:
        super().__init__(f"not the leader (leader {leader_id}, epoch {epoch})")
        self.leader_id = leader_id
        self.epoch = epoch


class RaftNode(VoterChangeRole, LeaderRole, ElectionRole, FollowerRole):
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
        flusher: Flusher | None = None,
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
        self._commit_heard = 0
        self.flushed_end_offset = raft_log.end_offset  # what is on disk at open is durable
        self._needs_flush = False
        self._flushing = False
        self._flush_target = self.flushed_end_offset
        self._flusher = flusher
        self._wakeup = math.inf
        self._fetcher = Fetcher()
        self.metrics = RaftMetrics()
        self.own_appends_allowed: Callable[[], bool] = lambda: True
        self._warned_voters = False
        self.voter_history = VoterHistory.rebuild(raft_log, joining=config.joining)

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
        self._role_state = None
        if state.leader_id == self.node_id:
            # its log may have lost unflushed writes: never lead again in this epoch
            self.role = Role.RESIGNED
        elif state.leader_id is not None:
            self.role = Role.FOLLOWER
            self._role_state = FollowerState(last_fetch_ok_ms=clock())
        elif state.voted_id == self.node_id:
            self.role = Role.CANDIDATE
            self._role_state = CandidacyState(granted={self.node_id})
        elif state.voted_id is not None:
            self.role = Role.VOTED
        else:
            self.role = Role.UNATTACHED
        if not self.is_voter and self.role is not Role.FOLLOWER:
            self.role = Role.UNATTACHED  # an observer neither stands nor keeps a candidacy
            self._role_state = None
        if self.voter_history.latest() is not None or self.voter_history.joining:
            self._voter_set_changed("opening the log")
        self._wake(clock())

    # --- what the outside reads ---------------------------------------------------------------

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
    def leader_high_watermark(self) -> int | None:
        """The leader's high watermark as this node knows it: its own when it leads; a
        follower's or observer's from the leader's last fetch answer in this leadership;
        None when it follows no leader or has had no answer yet (read from any thread)."""
        if self.role is Role.LEADER:
            return self.high_watermark
        state = self._role_state
        if isinstance(state, FollowerState) and state.leader_high_watermark >= 0:
            return state.leader_high_watermark
        return None

    @property
    def epoch_start_offset(self) -> int:
        """The offset of the leader's leader-change record (leaders only; else 0)."""
        return self._leader().epoch_start_offset if self.role is Role.LEADER else 0

    def next_deadline(self) -> float:
        return self._wakeup

    # --- the leader's writes ------------------------------------------------------------------

    def add_listener(self, listener: RaftListener) -> None:
        """Tell ``listener`` too, after the listeners given at construction (call it
        before the node runs)."""
        self._listeners.append(listener)

    def append(self, framed_records: Sequence[bytes]) -> BatchHeader:
        """Append one batch in the leader's epoch; it commits once the high watermark
        passes ``header.last_offset`` in this same epoch. Raises NotLeaderError."""
        if self.role is not Role.LEADER:
            raise NotLeaderError(self._state.leader_id, self.epoch)
        header = self.log.append_framed(framed_records, self.epoch)
        self._needs_flush = True
        now = self._clock()
        self.metrics.appended(header.last_offset, header.count, now)
        self._wake(now)
        return header

    def resign(self) -> None:
        """Step down gracefully (shutdown): tell the voters, most caught-up first, so the
        next election starts at once instead of after a fetch timeout."""
        if self.role is Role.LEADER:
            self._resign("shutting down")

    # --- timers -------------------------------------------------------------------------------

    def tick(self) -> None:
        now = self._clock()
        self._wakeup = math.inf
        if self._needs_flush and not self._flushing:
            self._flush(now)  # first: a flusher's fsync runs while the step replays
        self._notify_commit()  # the next step of a commit not yet heard in full
        if self.role is Role.LEADER:
            self._tick_leader(now)
        elif self.role in (Role.CANDIDATE, Role.PROSPECTIVE) and not self.is_voter:
            self._become_unattached(self.epoch)  # the voter set changed under the candidacy
        elif self.role in (Role.CANDIDATE, Role.PROSPECTIVE):
            self._tick_election(now)
        elif self.role is Role.FOLLOWER:
            self._tick_follower(now)
        elif self.is_voter:  # UNATTACHED, VOTED, RESIGNED
            if now >= self._election_deadline:
                self._become_prospective()
                return
            self._wake(self._election_deadline)
        else:
            self._send_fetch(now)  # an observer looks for the leader

    def _flush(self, now: float) -> None:
        """Make what is appended durable: here, or through the flusher (its outcome comes
        back to :meth:`_flushed`)."""
        self._needs_flush = False
        self._flush_target = self.log.end_offset
        if self._flusher is None:
            self.log.flush()
            self._flushed_to(self._flush_target, now)
            return
        self._flushing = True
        self._flusher(self.log.begin_flush(), self._flushed)

    def _flushed(self, error: BaseException | None) -> None:
        """The flusher's fsync came back: what it covered counts as flushed; a failed
        fsync raises LogFlushError (a fault)."""
        self._flushing = False
        self.log.end_flush(error)
        now = self._clock()
        self._flushed_to(self._flush_target, now)
        self._wake(now)  # a follower's next fetch, or the next flush

    def _flushed_to(self, offset: int, now: float) -> None:
        self.flushed_end_offset = max(self.flushed_end_offset, offset)
        if self.role is Role.LEADER:
            self._complete_parked(now)
            self._maybe_advance_high_watermark()

    # --- what any answer teaches --------------------------------------------------------------

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

    # --- requests -----------------------------------------------------------------------------

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
            response = self._on_vote(request)
            response.voter_directory_id = self.config.directory_id
            reply(response)
        elif isinstance(request, pb.AddRaftVoterRequest | pb.RemoveRaftVoterRequest):
            self._on_voter_change(request, reply)
        elif isinstance(request, pb.UpdateKRaftVersionRequest):
            self._on_update_kraft_version(request, reply)
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

    # --- answers to this node's requests ------------------------------------------------------

    def handle_response(
        self, destination: int, request: Request, response: Response | None
    ) -> None:
        if isinstance(request, pb.FetchRequest | pb.FetchSnapshotRequest):
            if request is not self._fetcher.inflight:
                if response is not None:
                    self._observe(response.leader_epoch, response.leader_id, destination)
                return
            self._fetcher.inflight = None
            self._wake(self._clock())
        if response is None:
            if isinstance(request, pb.FetchRequest | pb.FetchSnapshotRequest):
                self._retry_fetch_later()
            return
        pre_vote = isinstance(request, pb.VoteRequest) and request.pre_vote
        if not pre_vote or response.leader_epoch > self.epoch:
            # A pre-vote's answer names the voter's leader in this epoch -- often the one
            # this node just lost; _on_vote_response weighs it instead of following it.
            self._observe(response.leader_epoch, response.leader_id, destination)
        if isinstance(response, pb.VoteResponse):
            self._on_vote_response(destination, request, response)
        elif isinstance(response, pb.BeginQuorumEpochResponse):
            self._on_begin_quorum_epoch_response(destination, response)
        elif isinstance(response, pb.FetchResponse):
            self._on_fetch_response(destination, response)
        elif isinstance(response, pb.FetchSnapshotResponse):
            self._on_fetch_snapshot_response(destination, response)


_RESPONSE_OF: dict[type[Message], type[Response]] = {
    pb.VoteRequest: pb.VoteResponse,
    pb.BeginQuorumEpochRequest: pb.BeginQuorumEpochResponse,
    pb.EndQuorumEpochRequest: pb.EndQuorumEpochResponse,
    pb.FetchRequest: pb.FetchResponse,
    pb.FetchSnapshotRequest: pb.FetchSnapshotResponse,
    pb.DescribeQuorumRequest: pb.DescribeQuorumResponse,
    pb.AddRaftVoterRequest: pb.RaftVoterChangeResponse,
    pb.RemoveRaftVoterRequest: pb.RaftVoterChangeResponse,
    pb.UpdateKRaftVersionRequest: pb.RaftVoterChangeResponse,
}
