"""Copy the committed metadata log from a running quorum into a local directory, up to
an offset: how a tool outside the quorum (the audit) reads the log without a
controller's disk.

The copier fetches from the leader with Kafka's replica id for a client that is not a
replica (-1): the leader neither counts it towards the high watermark nor lists it as
an observer. Batches are appended with the same checks a follower makes (CRC,
contiguous offsets, epochs) and a snapshot is installed when the leader's log starts
past what is needed. Only committed offsets are asked for: the copy stops at the
leader's high watermark and fails rather than wait for an offset beyond it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import grpc

from migration.common import rpc
from migration.common.kafka_errors import ErrorCode, KafkaError, error_name
from migration.log.errors import LogError
from migration.log.metadata_log import MetadataLog
from migration.log.snapshots import SnapshotId
from migration.proto import raft_pb2 as pb
from migration.proto import raft_pb2_grpc

NOT_A_REPLICA = -1
FETCH_MAX_BYTES = 8 * 1024 * 1024
SNAPSHOT_CHUNK_BYTES = 8 * 1024 * 1024
RETRY_BACKOFF_S = 0.2


@dataclass(frozen=True)
class FetchedLog:
    leader_id: int
    leader_epoch: int
    high_watermark: int
    """The leader's committed end when the copy finished."""


class _Leader:
    """The quorum's leader among ``bootstrap``, found by asking each in turn."""

    def __init__(self, bootstrap: Sequence[str], cluster_id: str) -> None:
        self.bootstrap = list(bootstrap)
        self.cluster_id = cluster_id
        self.channel: grpc.Channel | None = None
        self.stub: raft_pb2_grpc.RaftStub | None = None
        self.epoch = 0
        self.leader_id = -1
        self.last_error = "no controller answered"

    def close(self) -> None:
        if self.channel is not None:
            self.channel.close()
        self.channel = self.stub = None

    def find(self, deadline: float) -> raft_pb2_grpc.RaftStub:
        while time.monotonic() < deadline:
            if self.stub is not None:
                return self.stub
            for endpoint in self.bootstrap:
                channel = rpc.channel(endpoint)
                stub = raft_pb2_grpc.RaftStub(channel)
                try:
                    # Unforwarded from a leader only: its error code says who leads.
                    quorum = stub.DescribeQuorum(pb.DescribeQuorumRequest(), timeout=5)
                    probe = stub.Fetch(self._probe(quorum.leader_epoch), timeout=5)
                except grpc.RpcError as exc:
                    self.last_error = f"{endpoint}: {exc.code().name}"
                    channel.close()
                    continue
                if probe.error_code == ErrorCode.NONE:
                    self.channel, self.stub = channel, stub
                    self.epoch, self.leader_id = probe.leader_epoch, probe.leader_id
                    return stub
                channel.close()
                self.last_error = f"{endpoint}: {error_name(probe.error_code)}"
                if probe.error_code == ErrorCode.INCONSISTENT_CLUSTER_ID:
                    raise KafkaError(
                        ErrorCode.INCONSISTENT_CLUSTER_ID,
                        f"{endpoint} is a controller of another cluster than {self.cluster_id}",
                    )
            time.sleep(RETRY_BACKOFF_S)
        raise KafkaError(ErrorCode.REQUEST_TIMED_OUT, f"no quorum leader: {self.last_error}")

    def _probe(self, epoch: int) -> pb.FetchRequest:
        return pb.FetchRequest(
            cluster_id=self.cluster_id,
            replica_id=NOT_A_REPLICA,
            current_leader_epoch=epoch,
            fetch_offset=0,
            last_fetched_epoch=0,
            max_wait_ms=0,
            max_bytes=1,
        )


def fetch_log(
    bootstrap: Sequence[str],
    cluster_id: str,
    log: MetadataLog,
    through: int | None,
    timeout_s: float = 120.0,
) -> FetchedLog:
    """Append the quorum's log to ``log`` (empty, writable) until it holds offset
    ``through`` (committed; None: up to the high watermark the first answer gives).
    Raises KafkaError when no leader answers in time or the
    offset is not committed, LogError when the leader's snapshot starts past
    ``through`` (the records there are gone) or a fetched batch is bad."""
    leader = _Leader(bootstrap, cluster_id)
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            stub = leader.find(deadline)
            request = pb.FetchRequest(
                cluster_id=cluster_id,
                replica_id=NOT_A_REPLICA,
                current_leader_epoch=leader.epoch,
                fetch_offset=log.end_offset,
                last_fetched_epoch=log.last_epoch,
                max_wait_ms=0,
                max_bytes=FETCH_MAX_BYTES,
            )
            try:
                response = stub.Fetch(request, timeout=30)
            except grpc.RpcError as exc:
                leader.last_error = f"Fetch: {exc.code().name}"
                leader.close()
                continue
            if response.error_code != ErrorCode.NONE:
                leader.last_error = f"Fetch: {error_name(response.error_code)}"
                leader.close()  # a new leader: find it
                continue
            if through is None:
                through = response.high_watermark - 1
            if log.end_offset > through:
                return FetchedLog(leader.leader_id, leader.epoch, response.high_watermark)
            if through >= response.high_watermark:
                raise KafkaError(
                    ErrorCode.OFFSET_OUT_OF_RANGE,
                    f"offset {through} is not committed: the quorum's high watermark is "
                    f"{response.high_watermark}",
                )
            if response.HasField("snapshot_id"):
                _install_snapshot(stub, leader, log, response.snapshot_id, through)
            elif response.HasField("diverging_epoch"):
                log.truncate_to(response.diverging_epoch.end_offset)  # an uncommitted tail
            else:
                log.append_frames(response.records)
    finally:
        leader.close()


def _install_snapshot(
    stub: raft_pb2_grpc.RaftStub,
    leader: _Leader,
    log: MetadataLog,
    snapshot: pb.OffsetAndEpoch,
    through: int,
) -> None:
    if snapshot.end_offset - 1 > through:
        raise LogError(
            f"the quorum's log starts at snapshot {snapshot.end_offset}-{snapshot.epoch}, past "
            f"offset {through}: the records there are gone from the leader (audit again once "
            "ZooKeeper has caught up, or read a controller's --log-dir)"
        )
    data = bytearray()
    while True:
        response = stub.FetchSnapshot(
            pb.FetchSnapshotRequest(
                cluster_id=leader.cluster_id,
                replica_id=NOT_A_REPLICA,
                current_leader_epoch=leader.epoch,
                snapshot_id=snapshot,
                position=len(data),
                max_bytes=SNAPSHOT_CHUNK_BYTES,
            ),
            timeout=30,
        )
        if response.error_code != ErrorCode.NONE:
            raise LogError(
                f"FetchSnapshot {snapshot.end_offset}-{snapshot.epoch}: "
                f"{error_name(response.error_code)}"
            )
        data += response.unaligned_records
        if len(data) >= response.size:
            break
    log.install_snapshot(SnapshotId(snapshot.end_offset, snapshot.epoch), bytes(data))
