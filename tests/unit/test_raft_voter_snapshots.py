"""KIP-853 lite: the voter set lives in the log and its snapshots only. A snapshot
carries the set in force at its end (KRaftVersionRecord + VotersRecord after its
header); a node opening its log rebuilds the set from its latest snapshot and the log;
a follower's history changes only once a snapshot install is durable."""

from __future__ import annotations

from pathlib import Path

from migration.log.snapshots import SnapshotId
from migration.proto import raft_pb2 as pb
from migration.proto.metadata_pb2 import MetadataRecord, NoOpRecord
from migration.raft.node import RaftNode
from migration.raft.voters import snapshot_control_records
from tests.unit.test_raft_node import NOOP, Wire
from tests.unit.test_raft_voters import DIRS, ask, fetch, make, pinned_leader


def _snapshot(leader: RaftNode) -> SnapshotId:
    snapshot = SnapshotId(leader.log.end_offset, leader.epoch)
    control = snapshot_control_records(leader.voter_history.at(snapshot.end_offset))
    leader.log.write_snapshot(  # type: ignore[attr-defined]
        snapshot, [MetadataRecord(no_op_record=NoOpRecord())], control=control
    )
    return snapshot


def install(follower: RaftNode, wire: Wire, source: RaftNode, snapshot: SnapshotId) -> None:
    """The follower downloads ``snapshot`` from ``source``'s log and installs it."""
    ask(
        follower,
        pb.BeginQuorumEpochRequest(cluster_id="c", leader_id=1, leader_epoch=source.epoch),
    )
    follower.tick()
    (destination, request), *_ = wire.take(pb.FetchRequest)
    follower.handle_response(
        destination,
        request,
        pb.FetchResponse(
            leader_id=1,
            leader_epoch=source.epoch,
            high_watermark=snapshot.end_offset,
            snapshot_id=pb.OffsetAndEpoch(end_offset=snapshot.end_offset, epoch=snapshot.epoch),
        ),
    )
    for _ in range(10):
        follower.tick()
        for destination, chunk_request in wire.take(pb.FetchSnapshotRequest):
            assert isinstance(chunk_request, pb.FetchSnapshotRequest)
            assert chunk_request.replica_directory_id == DIRS[2] and not chunk_request.observer
            (answer,) = ask(source, chunk_request)
            follower.handle_response(destination, chunk_request, answer)
        if follower.log.start_offset == snapshot.end_offset:
            return
    raise AssertionError("the snapshot was not installed")


def test_a_snapshot_carries_the_voter_set_in_force_at_its_end(tmp_path: Path) -> None:
    """The VotersRecord may be gone from the leader's log (deleted below a snapshot):
    the snapshot itself holds the set (KRaftVersionRecord + VotersRecord after its
    header), a node reopening that log finds it there, and a follower installing the
    snapshot has it; readers of the image never see those control records."""
    leader, _, _ = pinned_leader(tmp_path / "l")
    leader.append([NOOP])
    leader.tick()
    fetch(leader, 2, DIRS[2], leader.log.end_offset)
    snapshot = _snapshot(leader)
    body = list(leader.log.read_snapshot(snapshot))  # type: ignore[attr-defined]
    assert [r.WhichOneof("record") for r in body] == ["no_op_record"]
    follower, wire = make(tmp_path / "f", node_id=2)
    install(follower, wire, leader, snapshot)
    assert follower.pinned_voters() == DIRS and follower.is_voter
    assert follower.log.end_offset == snapshot.end_offset  # no VotersRecord in its log
    follower.log.close()  # type: ignore[attr-defined]
    reopened, _ = make(tmp_path / "f", node_id=2)
    assert reopened.pinned_voters() == DIRS  # from the snapshot alone


def test_a_crash_between_the_snapshot_install_and_the_history_loses_nothing(
    tmp_path: Path,
) -> None:
    """The install is durable before the history changes: a node killed before the
    install reopens its old log and its old set; one killed after it, before its
    history heard of it, finds the set in the installed snapshot."""
    leader, _, _ = pinned_leader(tmp_path / "l")
    snapshot = _snapshot(leader)
    chunk = leader.log.snapshot_chunk(snapshot, 0, 1 << 30)
    assert chunk is not None
    follower, _ = make(tmp_path / "f", node_id=2)
    follower.log.append_frames(leader.log.read_frames(0, 1 << 20))
    follower.log.flush()
    follower.log.close()  # type: ignore[attr-defined]
    before, _ = make(tmp_path / "f", node_id=2)  # killed before the install
    assert before.pinned_voters() == DIRS
    before.log.install_snapshot(snapshot, chunk[0])  # killed right after it
    before.log.close()  # type: ignore[attr-defined]
    after, _ = make(tmp_path / "f", node_id=2)
    assert after.log.start_offset == snapshot.end_offset
    assert after.pinned_voters() == DIRS and after.is_voter
