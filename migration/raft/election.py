"""Elections: Prospective (KIP-996 Pre-Vote) and Candidate on the asking side; Vote
requests on the answering side.

A voter that lost its leader first asks whether the others *would* vote for it, changing
nobody's state; only a majority's yes lets it bump the epoch and stand. A voter that
heard from a live leader within the fetch timeout says no. A refused real vote in a
higher epoch moves the voter there but keeps its election deadline (only a leader or a
granted vote restarts it).
"""

from __future__ import annotations

from migration.common.kafka_errors import ErrorCode
from migration.proto import raft_pb2 as pb
from migration.raft.core import RESEND_MS, NodeCore, Request, log
from migration.raft.quorum_state_store import ElectionState
from migration.raft.roles import CandidacyState, Role


class ElectionRole(NodeCore):
    _last_vote_refusal: str = ""  # logged once until another refusal (votes are resent)

    # --- asking -------------------------------------------------------------------------------

    def _become_prospective(self) -> None:
        """Ask for pre-votes in the next epoch without entering it."""
        self._enter(Role.PROSPECTIVE, CandidacyState(granted={self.node_id}))
        self._election_deadline = self._randomized_timeout()
        log.info("node %d: prospective for epoch %d", self.node_id, self.epoch + 1)
        self._notify_leader(None)
        if len(self._candidacy().granted) >= self.majority:
            self._become_candidate()
            return
        self._wake(self._clock())

    def _become_candidate(self) -> None:
        self._enter(Role.CANDIDATE, CandidacyState(granted={self.node_id}))
        self._persist(ElectionState(self.epoch + 1, None, self.node_id))
        self._election_deadline = self._randomized_timeout()
        log.info("node %d: candidate in epoch %d", self.node_id, self.epoch)
        self._notify_leader(None)
        if len(self._candidacy().granted) >= self.majority:
            self._become_leader()
            return
        self._wake(self._clock())

    def _tick_election(self, now: float) -> None:
        """(Pre-)votes resent until answered; a lost or timed out election backs off,
        then starts over with a pre-vote."""
        state = self._candidacy()
        if state.backoff_until is not None:
            if now >= state.backoff_until:
                self._become_prospective()
            else:
                self._wake(state.backoff_until)
            return
        if now >= self._election_deadline:
            self._back_off(now, "timed out")
            return
        if now >= state.next_resend_ms:
            for voter in self._other_voters():
                if voter not in state.answered:
                    self._transport.send(voter, self._vote_request(voter))
            state.next_resend_ms = now + RESEND_MS
        self._wake(min(self._election_deadline, state.next_resend_ms))

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
        state = self._candidacy()
        state.backoff_until = now + backoff
        self._wake(state.backoff_until)

    def _vote_request(self, voter: int) -> pb.VoteRequest:
        pre_vote = self.role is Role.PROSPECTIVE
        pinned = self.pinned_voters() or {}
        return pb.VoteRequest(
            candidate_directory_id=self.config.directory_id,
            voter_directory_id=pinned.get(voter, ""),
            cluster_id=self.config.cluster_id,
            candidate_id=self.node_id,
            candidate_epoch=self.epoch + 1 if pre_vote else self.epoch,
            last_offset_epoch=self.log.last_epoch,
            last_offset=self.log.end_offset,
            pre_vote=pre_vote,
        )

    def _on_vote_response(self, voter: int, request: Request, response: pb.VoteResponse) -> None:
        assert isinstance(request, pb.VoteRequest)
        role = Role.PROSPECTIVE if request.pre_vote else Role.CANDIDATE
        epoch = self.epoch + 1 if request.pre_vote else self.epoch
        if self.role is not role or request.candidate_epoch != epoch:
            return
        if response.leader_epoch != self.epoch or response.error_code != ErrorCode.NONE:
            return
        state = self._candidacy()
        state.answered.add(voter)
        if response.vote_granted and not self.is_voter_key(
            voter, response.voter_directory_id, observer=False
        ):
            # KIP-853: a replaced disk's vote (another directory than the voter set's)
            # never counts -- it may have forgotten a vote or entries it acknowledged.
            log.warning(
                "node %d: vote from %d (directory %s) not counted: not in the voter set",
                self.node_id,
                voter,
                response.voter_directory_id or "none",
            )
        elif response.vote_granted:
            state.granted.add(voter)
            if len(state.granted) >= self.majority:
                if role is Role.PROSPECTIVE:
                    self._become_candidate()
                else:
                    self._become_leader()
            return
        if response.leader_id in self.config.voters and response.leader_id != self.node_id:
            state.named_leader = response.leader_id
        refused = len(state.answered) - len(state.granted) + 1
        if refused > len(self.voter_ids) // 2 and state.backoff_until is None:
            if role is Role.PROSPECTIVE and state.named_leader is not None:
                # A majority still hears from a leader: go back to it (no contact yet, so
                # this node keeps granting pre-votes until its own fetch succeeds).
                self._become_follower(self.epoch, state.named_leader, contact=False)
            else:
                self._back_off(self._clock(), "refused by a majority")

    # --- answering ----------------------------------------------------------------------------

    def _on_vote(self, req: pb.VoteRequest) -> pb.VoteResponse:
        refusal = self._vote_refusal(req)
        if refusal is not None:
            if refusal != self._last_vote_refusal:
                log.warning(
                    "node %d: refused vote of %d: %s", self.node_id, req.candidate_id, refusal
                )
            self._last_vote_refusal = refusal
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

    def _vote_refusal(self, req: pb.VoteRequest) -> str | None:
        """Why this replica must not answer ``req`` (KIP-853's voter keys), or None.

        The candidate's voter set decides whom it asks and whose yes counts; this
        replica's own set may be behind it. A replica the candidate's pinned set names
        with this very directory answers on the logs alone, even if its own log does not
        name it yet (the VotersRecord adding it not fetched, or lost unflushed in a
        crash), and so does a voter asked by a candidate its own set does not name yet
        (added by a record this replica lacks). Refusing either deadlocks: after
        ``{1,2}`` + add 3 (committed by 1 and 2) + remove 1, the set ``{2,3}`` needs 3's
        vote, and 3, without the add, cannot fetch it from a leader that needs that vote
        (Kafka's KafkaRaftClient checks only the voter key too). What stays refused:
        a request for another directory of this id (a replaced disk), a candidate of a
        static set asking a replica outside this one's set, and a candidate whose id
        this set names with another directory (its replaced disk)."""
        mine = self.config.directory_id
        if req.voter_directory_id and req.voter_directory_id != mine:
            return (
                f"the candidate's voter set names node {self.node_id} with directory "
                f"{req.voter_directory_id}, this disk is {mine or 'unformatted'}: a replaced "
                "disk never votes (observer until `zk2kraft quorum add-controller`)"
            )
        if not req.voter_directory_id and not self.is_voter:
            return f"this replica (directory {mine or 'none'}) is not in the voter set: an observer"
        pinned = self.pinned_voters()
        if pinned is None:
            known = self.is_voter_key(req.candidate_id, req.candidate_directory_id, observer=False)
        else:
            known = pinned.get(req.candidate_id, req.candidate_directory_id) == (
                req.candidate_directory_id
            )
        if not known:
            return (
                f"candidate {req.candidate_id} (directory {req.candidate_directory_id or 'none'})"
                " is not in the voter set"
            )
        return None

    def _become_voted(self, candidate: int) -> None:
        self._persist(ElectionState(self.epoch, None, candidate))
        self._enter(Role.VOTED, None)
        self._election_deadline = self._randomized_timeout()
        self._wake(self._election_deadline)

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
        if self.role is not Role.FOLLOWER:
            return False
        state = self._follower()
        return (
            not state.leader_resigned
            and self._clock() - state.leader_contact_ms < self.config.fetch_timeout_ms
        )
