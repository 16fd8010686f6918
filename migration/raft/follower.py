"""Following: the fetch loop (also an observer's search for the leader), divergence and
truncation, the follower's high watermark, snapshot download, and what a follower hears
from its leader (BeginQuorumEpoch, EndQuorumEpoch); leaving a leader unattached."""

from __future__ import annotations

import math

from migration.common.kafka_errors import ErrorCode
from migration.log.snapshots import SnapshotId
from migration.proto import raft_pb2 as pb
from migration.raft.core import NodeCore, Response, log
from migration.raft.faults import RaftInvariantError
from migration.raft.quorum_state_store import ElectionState
from migration.raft.roles import CandidacyState, FollowerState, Role, SnapshotDownload
from migration.raft.voters import snapshot_voter_set, voter_sets_in


class FollowerRole(NodeCore):
    def _become_follower(self, epoch: int, leader: int, *, contact: bool) -> None:
        """Follow ``leader``; ``contact``: the leader itself spoke (else a third party
        named it, and until a fetch succeeds this node grants pre-votes)."""
        voted = self._state.voted_id if epoch == self.epoch else None
        now = self._clock()
        self._enter(
            Role.FOLLOWER,
            FollowerState(last_fetch_ok_ms=now, leader_contact_ms=now if contact else -math.inf),
        )
        self._persist(ElectionState(epoch, leader, voted))
        self._wake(now)
        self._notify_leader(leader)

    def _become_unattached(self, epoch: int, keep_deadline: bool = False) -> None:
        """Enter ``epoch`` with no leader. ``keep_deadline``: a refused vote brought this
        node here, which must not restart its election timer (only a leader or a granted
        vote does); the deadline it runs to is the one of the role it leaves."""
        deadline = self._current_deadline() if keep_deadline else self._randomized_timeout()
        voted = self._state.voted_id if epoch == self.epoch else None
        self._enter(Role.VOTED if voted is not None else Role.UNATTACHED, None)
        self._persist(ElectionState(epoch, None, voted))
        self._election_deadline = deadline
        self._wake(self._clock())
        self._notify_leader(None)

    def _current_deadline(self) -> float:
        """When this node would stand next in its current role."""
        state = self._role_state
        if isinstance(state, FollowerState) and not state.leader_resigned:
            if not state.asked_since_answer:
                return self._clock() + self.config.fetch_timeout_ms
            return state.last_fetch_ok_ms + self.config.fetch_timeout_ms
        if self.role is Role.LEADER:
            return self._randomized_timeout()
        if isinstance(state, CandidacyState) and state.backoff_until is not None:
            return state.backoff_until
        return self._election_deadline

    def _tick_follower(self, now: float) -> None:
        state = self._follower()
        if state.leader_resigned:
            if now >= self._election_deadline:
                if self.is_voter:
                    self._become_prospective()
                else:  # an observer (a replaced disk hears EndQuorumEpoch too) looks again
                    self._become_unattached(self.epoch)
                return
            self._wake(self._election_deadline)
            return
        timeout_at = state.last_fetch_ok_ms + self.config.fetch_timeout_ms
        if state.asked_since_answer and now >= timeout_at:
            log.info(
                "node %d: no answer from leader %s for %d ms",
                self.node_id,
                self._state.leader_id,
                self.config.fetch_timeout_ms,
            )
            if self.is_voter:
                self._become_prospective()
            else:
                self._become_unattached(self.epoch)
            return
        self._send_fetch(now)
        self._wake(self._current_deadline())

    # --- what the leader says -----------------------------------------------------------------

    def _on_begin_quorum_epoch(self, req: pb.BeginQuorumEpochRequest) -> Response:
        if req.leader_epoch < self.epoch:
            return self._error(pb.BeginQuorumEpochResponse, ErrorCode.FENCED_LEADER_EPOCH)
        if req.leader_epoch > self.epoch or self.role is not Role.FOLLOWER:
            if self.role is Role.LEADER and req.leader_epoch == self.epoch:
                raise RaftInvariantError(f"two leaders in epoch {self.epoch}")
            self._become_follower(req.leader_epoch, req.leader_id, contact=True)
        elif self._state.leader_id == req.leader_id:
            self._follower().leader_contact_ms = self._clock()
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
            self._follower().leader_resigned = True
            self._election_deadline = (
                self._clock() + delay + self._rng.random() * self.config.retry_backoff_ms
            )
            self._wake(self._election_deadline)
        return self._error(pb.EndQuorumEpochResponse, ErrorCode.NONE)

    # --- fetching -----------------------------------------------------------------------------

    def _fetch_target(self) -> int:
        if self.role is Role.FOLLOWER and self._state.leader_id is not None:
            return self._state.leader_id
        return self._rng.choice(sorted(self.config.voters - {self.node_id}))

    def _send_fetch(self, now: float) -> None:
        fetcher = self._fetcher
        if fetcher.inflight is not None or self._needs_flush or self._flushing:
            return
        if now < fetcher.next_fetch_ms:
            self._wake(fetcher.next_fetch_ms)
            return
        request: pb.FetchRequest | pb.FetchSnapshotRequest
        if fetcher.snapshot is not None:
            snap = fetcher.snapshot.snapshot_id
            request = pb.FetchSnapshotRequest(
                cluster_id=self.config.cluster_id,
                replica_id=self.node_id,
                current_leader_epoch=self.epoch,
                snapshot_id=pb.OffsetAndEpoch(end_offset=snap.end_offset, epoch=snap.epoch),
                position=len(fetcher.snapshot.data),
                max_bytes=self.config.snapshot_chunk_bytes,
                replica_directory_id=self.config.directory_id,
                observer=not self.is_voter,
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
                replica_directory_id=self.config.directory_id,
                observer=not self.is_voter,
            )
        fetcher.inflight = request
        state = self._role_state
        if isinstance(state, FollowerState) and not state.asked_since_answer:
            state.asked_since_answer = True  # the leader's silence counts from here
            state.last_fetch_ok_ms = self._clock()
        self._transport.send(self._fetch_target(), request)

    def _retry_fetch_later(self) -> None:
        self._fetcher.next_fetch_ms = self._clock() + self.config.retry_backoff_ms
        self._wake(self._fetcher.next_fetch_ms)

    def _following(self, source: int, response: Response) -> bool:
        return (
            self.role is Role.FOLLOWER
            and response.error_code == ErrorCode.NONE
            and response.leader_epoch == self.epoch
            and self._state.leader_id == source
        )

    def _on_fetch_response(self, source: int, response: pb.FetchResponse) -> None:
        if not self._following(source, response):
            self._retry_fetch_later()
            return
        now = self._clock()
        state = self._follower()
        state.last_fetch_ok_ms = state.leader_contact_ms = now
        state.asked_since_answer = False
        state.leader_high_watermark = max(state.leader_high_watermark, response.high_watermark)
        if response.HasField("diverging_epoch"):
            self._truncate_diverging(response.diverging_epoch)
        elif response.HasField("snapshot_id"):
            self._fetcher.snapshot = SnapshotDownload(
                SnapshotId(response.snapshot_id.end_offset, response.snapshot_id.epoch)
            )
        elif response.records:
            before = self.log.end_offset
            try:
                changes = [s for s in voter_sets_in(response.records) if s.offset >= before]
                self.log.append_frames(response.records)
            except ValueError as exc:
                log.warning("node %d: dropping fetched data from %d: %s", self.node_id, source, exc)
                self._fetcher.next_fetch_ms = now + self.config.retry_backoff_ms
                return
            for change in changes:  # the log holds them now (rebuilt from it on open)
                self.voter_history.add(change)
                self._voter_set_changed(f"a VotersRecord at offset {change.offset}")
            self._needs_flush = True
            self.metrics.fetched(self.log.end_offset - before)
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
            self._check_no_flush_in_flight(f"truncation to {target}")
            self.log.truncate_to(target)
            self.flushed_end_offset = min(self.flushed_end_offset, target)
            if self.voter_history.truncate(target):
                self._voter_set_changed(f"truncation to {target}")

    def _advance_follower_high_watermark(self, leader_high_watermark: int) -> None:
        new = min(leader_high_watermark, self.log.end_offset)
        if new > self.high_watermark:
            self.high_watermark = new
            # The listeners hear of it on the tick, in an event of its own: replaying a
            # commit step in the event that appended a fetch's megabyte held a follower's
            # loop twice as long.
            self._wake(self._clock())

    def _on_fetch_snapshot_response(self, source: int, response: pb.FetchSnapshotResponse) -> None:
        download = self._fetcher.snapshot
        if not self._following(source, response) or download is None:
            self._fetcher.snapshot = None  # start over from a fresh fetch
            self._fetcher.next_fetch_ms = self._clock() + self.config.retry_backoff_ms
            return
        state = self._follower()
        state.last_fetch_ok_ms = state.leader_contact_ms = self._clock()
        state.asked_since_answer = False
        if response.position != len(download.data):
            return
        download.data += response.unaligned_records
        if len(download.data) < response.size:
            return
        snapshot_id = download.snapshot_id
        self._fetcher.snapshot = None
        if snapshot_id.end_offset < self.high_watermark:
            raise RaftInvariantError(
                f"node {self.node_id}: snapshot {snapshot_id} < HW {self.high_watermark}"
            )
        self._check_no_flush_in_flight(f"installing snapshot {snapshot_id}")
        self.log.install_snapshot(snapshot_id, bytes(download.data))
        # Only now, the install durable: the set the snapshot carries (after a crash
        # before this line, the history is rebuilt from the same snapshot on open).
        self.voter_history.reset(snapshot_voter_set(self.log, snapshot_id))
        self.flushed_end_offset = self.log.end_offset
        self._voter_set_changed(f"snapshot {snapshot_id}")
        log.info("node %d: installed snapshot %s from %d", self.node_id, snapshot_id, source)
        for listener in self._listeners:
            listener.on_snapshot_installed(snapshot_id)
        self._advance_follower_high_watermark(snapshot_id.end_offset)
