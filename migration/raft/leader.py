"""The leader: its epoch's start, serving fetches (the long poll), the high watermark,
check-quorum, snapshots for lagging replicas, DescribeQuorum, and resignation."""

from __future__ import annotations

import math

from migration.common.kafka_errors import ErrorCode
from migration.log.batch import frame_record
from migration.log.snapshots import SnapshotId
from migration.proto import raft_pb2 as pb
from migration.proto.metadata_pb2 import MetadataRecord
from migration.raft.core import RESEND_MS, NodeCore, Reply, Response, log
from migration.raft.faults import RaftInvariantError
from migration.raft.quorum_state_store import ElectionState
from migration.raft.roles import LeaderState, ParkedFetch, ReplicaProgress, Role


class LeaderRole(NodeCore):
    def _become_leader(self) -> None:
        now = self._clock()
        granted = sorted(self._candidacy().granted)
        self._persist(ElectionState(self.epoch, self.node_id, self.node_id))
        pinned = self.pinned_voters() or {}
        self._enter(
            Role.LEADER,
            LeaderState(
                epoch_start_offset=self.log.end_offset,
                became_leader_ms=now,
                progress={
                    v: ReplicaProgress(directory_id=pinned.get(v, "")) for v in self._other_voters()
                },
            ),
        )
        change = MetadataRecord()
        message = change.leader_change_message
        message.leader_id = self.node_id
        # Version 0, as Kafka's LEADER_CHANGE_CURRENT_VERSION: ids only (the directory
        # ids are the VotersRecord's).
        for voter in sorted(self.voter_ids):
            message.voters.add().voter_id = voter
        for voter in granted:
            message.granting_voters.add().voter_id = voter
        self.log.append_framed([frame_record(change.SerializeToString())], self.epoch)
        self._needs_flush = True
        self.metrics.new_leadership()
        log.info(
            "node %d: leader in epoch %d from offset %d",
            self.node_id,
            self.epoch,
            self._leader().epoch_start_offset,
        )
        self._notify_leader(self.node_id)
        self._wake(now)

    def _tick_leader(self, now: float) -> None:
        state = self._leader()
        for parked in [p for p in state.parked if p.deadline <= now]:
            state.parked.remove(parked)
            parked.reply(self._fetch_answer(parked.request, now))
        for p in state.parked:
            self._wake(p.deadline)
        if now >= state.next_resend_ms:
            for voter in self._other_voters():
                if voter not in state.begin_acked:
                    self._transport.send(
                        voter,
                        pb.BeginQuorumEpochRequest(
                            cluster_id=self.config.cluster_id,
                            leader_id=self.node_id,
                            leader_epoch=self.epoch,
                        ),
                    )
            state.next_resend_ms = now + RESEND_MS
        if len(state.begin_acked) < len(self._other_voters()):
            self._wake(state.next_resend_ms)
        self._maybe_queued_change()
        window = 1.5 * self.config.fetch_timeout_ms
        if now - state.became_leader_ms > window:
            heard = 1 + sum(
                1 for v in self._other_voters() if now - state.progress[v].last_fetch_ms <= window
            )
            if heard < self.majority:
                self._resign(
                    f"heard from {heard} of {len(self.voter_ids)} voters in {window:.0f} ms"
                )
                return
        self._wake(now + self.config.fetch_timeout_ms / 4)

    def _resign(self, why: str) -> None:
        log.info("node %d: resigning leadership of epoch %d: %s", self.node_id, self.epoch, why)
        progress = self._leader().progress
        successors = sorted(self._other_voters(), key=lambda v: (-progress[v].end_offset, v))
        self._enter(Role.RESIGNED, None)
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

    def _on_begin_quorum_epoch_response(
        self, voter: int, response: pb.BeginQuorumEpochResponse
    ) -> None:
        if self.role is Role.LEADER and response.leader_epoch == self.epoch:
            self._leader().begin_acked.add(voter)

    # --- serving replicas ---------------------------------------------------------------------

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
            self._leader().parked.append(ParkedFetch(req, reply, deadline))
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
        self._note_fetch(req, now)
        if req.fetch_offset < self.log.end_offset:
            response.records = self.log.read_frames(
                req.fetch_offset,
                min(req.max_bytes or self.config.fetch_max_bytes, self.config.fetch_max_bytes),
            )
        return response

    def _replica(
        self, replica: int, directory_id: str = "", observer: bool = False
    ) -> ReplicaProgress | None:
        """The progress record of ``replica``: a voter's when (``replica``,
        ``directory_id``) is in the voter set and the fetcher does not call itself an
        observer, else an observer's (a replaced disk keeps its id: it is tracked apart
        from the voter it replaces); None for this node itself and for a fetcher that is
        not a replica (Kafka's replica id -1, e.g. a log copier)."""
        state = self._leader()
        if replica < 0 or replica == self.node_id:
            return None
        if self.is_voter_key(replica, directory_id, observer=observer):
            return state.progress[replica]
        progress = state.observers.get(replica)
        if progress is None or progress.directory_id != directory_id:
            progress = state.observers[replica] = ReplicaProgress(directory_id=directory_id)
        return progress

    def _note_fetch(self, req: pb.FetchRequest, now: float) -> None:
        replica = req.replica_id
        progress = self._replica(replica, req.replica_directory_id, req.observer)
        if progress is None:
            return
        progress.end_offset = req.fetch_offset
        progress.last_fetch_ms = now
        if req.replica_directory_id:
            progress.directory_id = req.replica_directory_id
        if req.fetch_offset >= self.log.end_offset:
            progress.last_caught_up_ms = now
        if progress is self._leader().progress.get(replica):
            self._maybe_advance_high_watermark()

    def _maybe_advance_high_watermark(self) -> None:
        """The highest offset a majority of the voter set holds (the leader's flushed
        end and each voter's last fetch offset), once it passes this leader's
        leader-change record; a voter change waiting for it is answered."""
        state = self._leader()
        ends = sorted(
            [self.flushed_end_offset, *(p.end_offset for p in state.progress.values())],
            reverse=True,
        )
        candidate = ends[self.majority - 1]
        if candidate > self.high_watermark and candidate > state.epoch_start_offset:
            self.high_watermark = candidate
            now = self._clock()
            self.metrics.committed(candidate, now)
            self._complete_parked(now)
            self._notify_commit()
            if state.pending_change is not None and state.pending_change[0] < candidate:
                reply = state.pending_change[1]
                state.pending_change = None
                reply(self._error(pb.RaftVoterChangeResponse, ErrorCode.NONE))

    def _complete_parked(self, now: float) -> None:
        state = self._leader()
        parked, state.parked = state.parked, []
        for p in parked:
            p.reply(self._fetch_answer(p.request, now))

    def _on_fetch_snapshot(self, req: pb.FetchSnapshotRequest) -> Response:
        error = self._leader_epoch_error(req.current_leader_epoch)
        if error is not None:
            return self._error(pb.FetchSnapshotResponse, error)
        progress = self._replica(req.replica_id, req.replica_directory_id, req.observer)
        if progress is not None:  # a replica downloading a snapshot is alive (check-quorum)
            progress.last_fetch_ms = self._clock()
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
        state = self._leader()
        now, wall = self._clock(), self._wall_ms()
        response = self._error(pb.DescribeQuorumResponse, ErrorCode.NONE)
        response.high_watermark = self.high_watermark

        def stamp(ms: float) -> int:
            return -1 if math.isinf(ms) else int(wall - (now - ms))

        for voter in sorted(self.voter_ids):
            if voter == self.node_id:
                response.current_voters.add(
                    replica_id=voter,
                    replica_directory_id=self.config.directory_id,
                    log_end_offset=self.log.end_offset,
                    last_fetch_timestamp=wall,
                    last_caught_up_timestamp=wall,
                )
            else:
                p = state.progress[voter]
                response.current_voters.add(
                    replica_id=voter,
                    log_end_offset=p.end_offset,
                    last_fetch_timestamp=stamp(p.last_fetch_ms),
                    last_caught_up_timestamp=stamp(p.last_caught_up_ms),
                    replica_directory_id=p.directory_id,
                )
        for observer, p in sorted(state.observers.items()):
            response.observers.add(
                replica_id=observer,
                log_end_offset=p.end_offset,
                last_fetch_timestamp=stamp(p.last_fetch_ms),
                last_caught_up_timestamp=stamp(p.last_caught_up_ms),
                replica_directory_id=p.directory_id,
            )
        return response
