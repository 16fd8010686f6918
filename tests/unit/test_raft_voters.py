"""KIP-853 lite: a replica is (node id, directory id). A replaced disk, or a controller
formatted to join, is an observer until the log's VotersRecord names it: its votes and
its fetch offsets never count; the leader pins the static set only when the operator
upgrades kraft.version to 1, once it has heard every voter's directory id; voter
changes are one at a time, each answered once committed. The set lives in the log and
its snapshots only: a node opening its log rebuilds it from them.

Real files (MetadataLog, quorum-state); only the transport and the clock are injected,
as in test_raft_node."""

from __future__ import annotations

import random
from pathlib import Path

from migration.common.kafka_errors import ErrorCode
from migration.log.metadata_log import FlushPolicy, MetadataLog
from migration.proto import raft_pb2 as pb
from migration.proto.metadata_pb2 import MetadataRecord, NoOpRecord
from migration.raft.config import RaftConfig
from migration.raft.node import RaftNode, Request, Response, Role
from migration.raft.quorum_state_store import FileQuorumStateStore
from migration.raft.voters import (
    voter_sets_in,
    voters_record,
)
from migration.records.uuids import new_uuid, uuid_text
from tests.unit.test_raft_node import NOOP, Clock, Wire

VOTERS = frozenset({1, 2, 3})
DIRS = {n: uuid_text(new_uuid()) for n in (1, 2, 3)}
NEW_DISK = uuid_text(new_uuid())


def make(
    tmp_path: Path,
    node_id: int = 1,
    clock: Clock | None = None,
    directory_id: str | None = None,
    joining: bool = False,
) -> tuple[RaftNode, Wire]:
    path = tmp_path / f"n{node_id}"
    path.mkdir(parents=True, exist_ok=True)
    wire = Wire()
    node = RaftNode(
        RaftConfig(
            node_id=node_id,
            voters=VOTERS,
            cluster_id="c",
            directory_id=DIRS[node_id] if directory_id is None else directory_id,
            joining=joining,
        ),
        MetadataLog(path, flush=FlushPolicy.never()),
        FileQuorumStateStore(path),
        wire,
        clock=clock or Clock(),
        rng=random.Random(1),
    )
    return node, wire


def ask(node: RaftNode, request: Request) -> list[Response]:
    answers: list[Response] = []
    node.handle_request(request, answers.append)
    return answers


def fetch(
    node: RaftNode, replica: int, directory_id: str, offset: int, observer: bool = False
) -> pb.FetchResponse:
    (answer,) = ask(
        node,
        pb.FetchRequest(
            cluster_id="c",
            replica_id=replica,
            current_leader_epoch=node.epoch,
            fetch_offset=offset,
            last_fetched_epoch=node.epoch if offset > 0 else 0,
            replica_directory_id=directory_id,
            observer=observer,
        ),
    )
    assert isinstance(answer, pb.FetchResponse) and answer.error_code == ErrorCode.NONE
    return answer


def elect(node: RaftNode, wire: Wire, clock: Clock, dirs: dict[int, str] | None = None) -> None:
    """Time out, win the pre-vote and the vote from voters answering with ``dirs``."""
    clock.now += 10_000
    node.tick()
    for _ in range(2):
        node.tick()
        for voter, request in wire.take(pb.VoteRequest):
            node.handle_response(
                voter,
                request,
                pb.VoteResponse(
                    leader_id=-1,
                    leader_epoch=node.epoch,
                    vote_granted=True,
                    voter_directory_id=(dirs or DIRS)[voter],
                ),
            )
    assert node.role is Role.LEADER
    node.tick()  # the leader-change record flushed


def upgrade(node: RaftNode, level: int = 1) -> list[Response]:
    """``zk2kraft features upgrade --feature kraft.version=LEVEL`` to ``node``."""
    return ask(node, pb.UpdateKRaftVersionRequest(cluster_id="c", kraft_version=level))


def pinned_leader(tmp_path: Path) -> tuple[RaftNode, Wire, Clock]:
    """Node 1 leads, has heard 2 and 3 with their directories, and the operator has
    upgraded kraft.version to 1 (the pin committed)."""
    clock = Clock()
    node, wire = make(tmp_path, clock=clock)
    elect(node, wire, clock)
    fetch(node, 2, DIRS[2], node.log.end_offset)
    fetch(node, 3, DIRS[3], node.log.end_offset)
    answered = upgrade(node)
    assert answered == [] and node.pinned_voters() == DIRS  # in force, not committed
    node.tick()  # flushed
    fetch(node, 2, DIRS[2], node.log.end_offset)
    assert node.high_watermark == node.log.end_offset  # the pin is committed
    assert code(answered) == ErrorCode.NONE
    return node, wire, clock


def test_the_voter_set_is_pinned_only_by_the_operators_upgrade(tmp_path: Path) -> None:
    clock = Clock()
    node, wire = make(tmp_path, clock=clock)
    elect(node, wire, clock)
    fetch(node, 2, DIRS[2], node.log.end_offset)
    for _ in range(5):
        node.tick()
    assert node.pinned_voters() is None  # never automatic: static as kraft.version 0
    (refused,) = upgrade(node)
    assert isinstance(refused, pb.RaftVoterChangeResponse)
    assert refused.error_code == ErrorCode.INVALID_REQUEST and "[3]" in refused.error_message
    assert code(change(node, False, 3, DIRS[3])) == ErrorCode.UNSUPPORTED_VERSION
    fetch(node, 3, DIRS[3], node.log.end_offset)
    answered = upgrade(node)
    assert node.pinned_voters() == DIRS
    records = [r for _, _, r in node.log.records()]  # type: ignore[attr-defined]
    kinds = [r.WhichOneof("record") for r in records]
    assert kinds[-2:] == ["k_raft_version_record", "voters_record"]
    assert records[-2].k_raft_version_record.k_raft_version == 1
    assert {v.voter_id for v in records[-1].voters_record.voters} == VOTERS
    node.tick()
    fetch(node, 2, DIRS[2], node.log.end_offset)
    assert code(answered) == ErrorCode.NONE
    assert code(upgrade(node)) == ErrorCode.NONE  # a retry: done already
    assert code(upgrade(node, 0)) == ErrorCode.INVALID_UPDATE_VERSION  # one way
    # Only the log holds it: a restarted node finds it there (no side file).
    node.log.close()  # type: ignore[attr-defined]
    assert not (tmp_path / "n1" / "quorum-voters").exists()
    again, _ = make(tmp_path, clock=clock)
    assert again.pinned_voters() == DIRS


def test_a_replaced_disks_fetches_do_not_count_towards_the_high_watermark(
    tmp_path: Path,
) -> None:
    """The committed-data-loss case: {1, 3-old} committed; 3's disk replaced. 3-new's
    fetch offsets must not commit anything, whatever they say."""
    node, _, clock = pinned_leader(tmp_path)
    hw = node.high_watermark
    node.append([NOOP])
    node.tick()
    end = node.log.end_offset
    fetch(node, 3, NEW_DISK, end)  # the replaced disk claims everything
    assert node.high_watermark == hw
    quorum = node.describe_quorum()
    assert [o.replica_directory_id for o in quorum.observers] == [NEW_DISK]
    fetch(node, 3, DIRS[3], end)  # the voter itself
    assert node.high_watermark == end
    assert clock.now > 0


def test_a_vote_from_another_directory_is_not_counted(tmp_path: Path) -> None:
    """A candidate with a pinned set counts a grant only from the voter's own directory."""
    node, wire, clock = pinned_leader(tmp_path)
    epoch = node.epoch
    node.resign()
    clock.now += 10_000
    node.tick()
    asked = 0
    for _ in range(3):
        node.tick()
        for voter, request in wire.take(pb.VoteRequest):
            asked += 1
            assert isinstance(request, pb.VoteRequest)
            assert request.candidate_directory_id == DIRS[1]
            assert request.voter_directory_id == DIRS[voter]
            node.handle_response(
                voter,
                request,
                pb.VoteResponse(
                    leader_id=-1,
                    leader_epoch=node.epoch,
                    vote_granted=True,
                    voter_directory_id=NEW_DISK,  # both answer from replaced disks
                ),
            )
    assert asked >= 2
    assert node.role is Role.PROSPECTIVE and node.epoch == epoch  # never stood


def test_a_replaced_disk_refuses_to_vote_and_a_voter_refuses_an_unknown_candidate(
    tmp_path: Path,
) -> None:
    voter, _ = make(tmp_path, node_id=3, directory_id=NEW_DISK)
    expecting_old = pb.VoteRequest(
        cluster_id="c",
        candidate_id=1,
        candidate_epoch=5,
        candidate_directory_id=DIRS[1],
        voter_directory_id=DIRS[3],
    )
    (answer,) = ask(voter, expecting_old)
    assert isinstance(answer, pb.VoteResponse)
    assert answer.error_code == ErrorCode.INCONSISTENT_VOTER_SET and not answer.vote_granted
    assert voter.voted_id is None
    # A pinned voter refuses a candidate whose directory is not the set's.
    node, _, _ = pinned_leader(tmp_path / "p")
    follower_request = pb.VoteRequest(
        cluster_id="c",
        candidate_id=2,
        candidate_epoch=node.epoch + 1,
        last_offset_epoch=node.log.last_epoch,
        last_offset=node.log.end_offset,
        candidate_directory_id=NEW_DISK,
    )
    (answer,) = ask(node, follower_request)
    assert isinstance(answer, pb.VoteResponse) and not answer.vote_granted
    assert answer.error_code == ErrorCode.INCONSISTENT_VOTER_SET


def behind(tmp_path: Path, node_id: int, leader: int, voters: dict[int, str]) -> RaftNode:
    """``node_id`` following ``leader`` in epoch 1 has fetched the pin of ``voters`` and
    nothing after it (the VotersRecord of a later change never reached it), then lost
    that leader (no answer for the fetch timeout)."""
    clock = Clock()
    node, wire = make(tmp_path, node_id=node_id, clock=clock)
    ask(node, pb.BeginQuorumEpochRequest(cluster_id="c", leader_id=leader, leader_epoch=1))
    leader_log = MetadataLog(tmp_path / f"leader-of-{node_id}", flush=FlushPolicy.never())
    leader_log.append_framed([NOOP], 1)
    leader_log.append_framed([voters_record(voters)], 1)
    node.tick()
    (destination, request), *_ = wire.take(pb.FetchRequest)
    node.handle_response(
        destination,
        request,
        pb.FetchResponse(
            leader_id=leader,
            leader_epoch=1,
            high_watermark=2,
            records=leader_log.read_frames(0, 1 << 20),
        ),
    )
    node.tick()  # flushed
    assert node.pinned_voters() == voters
    clock.now += node.config.fetch_timeout_ms + 1
    node.tick()
    assert node.leader_id is None
    return node


def vote_of(candidate: int, node: RaftNode, voter_directory_id: str, pre: bool) -> pb.VoteRequest:
    """``candidate``'s (pre-)vote request in epoch 2, its log one batch ahead of ``node``'s."""
    return pb.VoteRequest(
        cluster_id="c",
        candidate_id=candidate,
        candidate_epoch=2,
        candidate_directory_id=DIRS[candidate],
        voter_directory_id=voter_directory_id,
        last_offset_epoch=1,
        last_offset=node.log.end_offset + 1,
        pre_vote=pre,
    )


def test_a_voter_that_does_not_know_it_was_added_still_votes(tmp_path: Path) -> None:
    """Seeds 100176, 100594, 100650 of the soak: {1, 2} + add 3 (committed by 1 and 2,
    3 never fetched it, or lost it unflushed in a crash) + remove 1 leaves {2, 3}; the
    leader lost, 2 needs 3's vote, and 3, still an observer by its own log, refused it:
    no leader ever again (3 learns of the add only from a leader). The candidate's set
    names 3 with this very directory: 3 answers on the logs alone, as Kafka does."""
    node = behind(tmp_path, 3, 1, {1: DIRS[1], 2: DIRS[2]})
    assert not node.is_voter  # by its own log
    for pre in (True, False):
        (answer,) = ask(node, vote_of(2, node, DIRS[3], pre))
        assert isinstance(answer, pb.VoteResponse)
        assert answer.error_code == ErrorCode.NONE and answer.vote_granted, pre
    assert node.voted_id == 2 and node.epoch == 2
    # Still refused: a request meant for another directory of this id (a replaced disk),
    # and a candidate of a static set (no voter key) asking a replica outside this set.
    other = behind(tmp_path / "o", 3, 1, {1: DIRS[1], 2: DIRS[2]})
    for voter_directory_id in (NEW_DISK, ""):
        (answer,) = ask(other, vote_of(2, other, voter_directory_id, pre=False))
        assert isinstance(answer, pb.VoteResponse) and not answer.vote_granted
        assert answer.error_code == ErrorCode.INCONSISTENT_VOTER_SET
    assert other.voted_id is None


def test_a_voter_votes_for_a_candidate_added_by_a_record_it_lacks(tmp_path: Path) -> None:
    """{1, 2} + add 3 (committed by 1 and 3) with 2 behind: when the leader is lost, 3
    (its log ahead) needs 2's vote though 2's set does not name 3 yet. A candidate whose
    id this set names with another directory (its replaced disk) is still refused."""
    node = behind(tmp_path, 2, 1, {1: DIRS[1], 2: DIRS[2]})
    (answer,) = ask(node, vote_of(3, node, DIRS[2], pre=True))
    assert isinstance(answer, pb.VoteResponse) and answer.vote_granted
    (answer,) = ask(node, vote_of(3, node, DIRS[2], pre=False))
    assert isinstance(answer, pb.VoteResponse) and answer.vote_granted
    assert node.voted_id == 3
    other = behind(tmp_path / "o", 2, 3, {1: DIRS[1], 2: DIRS[2], 3: NEW_DISK})
    (answer,) = ask(other, vote_of(3, other, DIRS[2], pre=False))  # from DIRS[3]
    assert isinstance(answer, pb.VoteResponse) and not answer.vote_granted
    assert answer.error_code == ErrorCode.INCONSISTENT_VOTER_SET and other.voted_id is None


def test_a_joining_controller_is_an_observer_in_a_static_set(tmp_path: Path) -> None:
    """Formatted with --no-initial-controllers: it fetches (as an observer), never asks
    for a vote, never grants one, and a leader never counts its fetches."""
    clock = Clock()
    joiner, wire = make(tmp_path, node_id=3, clock=clock, directory_id=NEW_DISK, joining=True)
    assert not joiner.is_voter
    fetches = 0
    for _ in range(20):
        clock.now += 1_000
        joiner.tick()
        for destination, request in wire.take(pb.FetchRequest):
            fetches += 1
            assert isinstance(request, pb.FetchRequest) and request.observer
            joiner.handle_response(destination, request, None)
    assert fetches >= 10 and not wire.take(pb.VoteRequest)
    assert joiner.role is Role.UNATTACHED and joiner.epoch == 0
    (answer,) = ask(
        joiner,
        pb.VoteRequest(
            cluster_id="c", candidate_id=1, candidate_epoch=1, candidate_directory_id=DIRS[1]
        ),
    )
    assert isinstance(answer, pb.VoteResponse) and not answer.vote_granted
    # The leader of a static set counts an observer's fetch for nothing.
    leader_clock = Clock()
    leader, lwire = make(tmp_path, node_id=1, clock=leader_clock)
    elect(leader, lwire, leader_clock)
    leader.log.append_framed([NOOP], leader.epoch)
    leader.tick()
    hw = leader.high_watermark
    fetch(leader, 3, NEW_DISK, leader.log.end_offset, observer=True)
    assert leader.high_watermark == hw
    fetch(leader, 2, DIRS[2], leader.log.end_offset)
    (refused,) = upgrade(leader)  # an observer's directory never stands for voter 3
    assert isinstance(refused, pb.RaftVoterChangeResponse) and "[3]" in refused.error_message
    assert refused.error_code == ErrorCode.INVALID_REQUEST and leader.pinned_voters() is None


def test_a_cluster_without_directory_ids_stays_static(tmp_path: Path) -> None:
    """Formatted before directory ids (or from cluster.id alone): nothing pinned, the
    static quorum of controller.quorum.voters as before."""
    clock = Clock()
    node, wire = make(tmp_path, clock=clock, directory_id="")
    elect(node, wire, clock)
    fetch(node, 2, "", node.log.end_offset)
    fetch(node, 3, "", node.log.end_offset)
    node.tick()
    (refused,) = upgrade(node)
    assert isinstance(refused, pb.RaftVoterChangeResponse)
    assert refused.error_code == ErrorCode.INVALID_REQUEST and "[1, 2, 3]" in refused.error_message
    assert node.pinned_voters() is None and node.voter_ids == VOTERS
    assert node.high_watermark == node.log.end_offset


def change(node: RaftNode, adding: bool, voter: int, directory_id: str) -> list[Response]:
    kind = pb.AddRaftVoterRequest if adding else pb.RemoveRaftVoterRequest
    return ask(node, kind(cluster_id="c", voter_id=voter, voter_directory_id=directory_id))


def code(answers: list[Response]) -> ErrorCode:
    (answer,) = answers
    return ErrorCode(answer.error_code)


def test_replacing_a_disk_is_a_remove_then_an_add_each_committed(tmp_path: Path) -> None:
    node, _, clock = pinned_leader(tmp_path)
    assert code(change(node, True, 3, NEW_DISK)) == ErrorCode.DUPLICATE_VOTER  # one at a time
    assert code(change(node, False, 1, DIRS[1])) == ErrorCode.INVALID_REQUEST  # the leader
    assert code(change(node, False, 3, NEW_DISK)) == ErrorCode.VOTER_NOT_FOUND
    assert code(change(node, False, 3, "not-a-uuid")) == ErrorCode.INVALID_REQUEST

    removed = change(node, False, 3, DIRS[3])
    assert removed == []  # answered once committed
    assert node.voter_ids == {1, 2} and node.majority == 2
    assert code(change(node, True, 3, NEW_DISK)) == ErrorCode.REQUEST_TIMED_OUT  # in flight
    node.tick()
    fetch(node, 2, DIRS[2], node.log.end_offset)
    assert code(removed) == ErrorCode.NONE
    assert code(change(node, False, 3, DIRS[3])) == ErrorCode.NONE  # a retry: done already

    # 3-new must be an observer caught up with the log before it is added.
    assert code(change(node, True, 3, NEW_DISK)) == ErrorCode.REQUEST_TIMED_OUT
    fetch(node, 3, NEW_DISK, node.log.end_offset, observer=True)
    added = change(node, True, 3, NEW_DISK)
    assert added == [] and node.pinned_voters() == {**DIRS, 3: NEW_DISK}
    node.tick()
    hw = node.high_watermark
    fetch(node, 3, DIRS[3], node.log.end_offset)  # the old disk counts for nothing now
    assert node.high_watermark == hw and added == []
    fetch(node, 3, NEW_DISK, node.log.end_offset)  # the new one does
    assert code(added) == ErrorCode.NONE
    del clock


def test_a_truncated_voters_record_reverts_the_set(tmp_path: Path) -> None:
    """A follower that fetched an uncommitted VotersRecord and then truncates below it
    goes back to the set before it (KIP-853: uncommitted sets are in force)."""
    clock = Clock()
    follower, wire = make(tmp_path, node_id=2, clock=clock)
    (answer,) = ask(
        follower, pb.BeginQuorumEpochRequest(cluster_id="c", leader_id=1, leader_epoch=1)
    )
    leader_log = MetadataLog(tmp_path / "leader", flush=FlushPolicy.never())
    leader_log.append_framed([NOOP], 1)
    leader_log.append_framed([voters_record(DIRS)], 1)
    follower.tick()
    (destination, request), *_ = wire.take(pb.FetchRequest)
    follower.handle_response(
        destination,
        request,
        pb.FetchResponse(
            leader_id=1,
            leader_epoch=1,
            high_watermark=1,
            records=leader_log.read_frames(0, 1 << 20),
        ),
    )
    assert follower.pinned_voters() == DIRS
    follower.tick()
    follower._truncate_diverging(pb.OffsetAndEpoch(epoch=1, end_offset=1))
    assert follower.pinned_voters() is None and follower.voter_ids == VOTERS
    follower.log.close()  # type: ignore[attr-defined]
    again, _ = make(tmp_path, node_id=2, clock=clock)  # the log is all there is
    assert again.pinned_voters() is None
    del answer


def test_a_fetch_whose_voters_record_does_not_decode_is_dropped(tmp_path: Path) -> None:
    """A batch that holds the VotersRecord's tag but does not decode is never skipped
    silently: reading it raises (the fetch is dropped, nothing appended)."""
    import pytest

    log = MetadataLog(tmp_path / "l", flush=FlushPolicy.never())
    log.append_framed([voters_record(DIRS)], 1)
    frames = bytearray(log.read_frames(0, 1 << 20))
    assert [s.offset for s in voter_sets_in(memoryview(bytes(frames)))] == [0]
    with pytest.raises(ValueError):
        list(voter_sets_in(bytes(frames[:-2])))  # a batch cut short


def test_a_default_formatted_replaced_disk_after_the_pin_is_an_observer(tmp_path: Path) -> None:
    """A lost disk formatted the default way (not --no-initial-controllers) after the
    upgrade: until it has fetched the log it takes the set for static, but no pinned
    voter counts its fetches (nor its votes: above); once it holds the VotersRecord it
    is an observer."""
    leader, _, _ = pinned_leader(tmp_path / "l")
    clock = Clock()
    replaced, wire = make(tmp_path / "r", node_id=3, clock=clock, directory_id=NEW_DISK)
    assert replaced.is_voter  # it cannot know yet
    ask(
        replaced,
        pb.BeginQuorumEpochRequest(cluster_id="c", leader_id=1, leader_epoch=leader.epoch),
    )
    replaced.tick()
    (destination, request), *_ = wire.take(pb.FetchRequest)
    hw = leader.high_watermark
    (answer,) = ask(leader, request)
    assert isinstance(answer, pb.FetchResponse)
    replaced.handle_response(destination, request, answer)
    assert not replaced.is_voter and replaced.pinned_voters() == DIRS
    assert leader.high_watermark == hw
    assert [o.replica_directory_id for o in leader.describe_quorum().observers] == [NEW_DISK]


def test_format_for_joining_writes_a_directory_that_starts_as_an_observer(
    tmp_path: Path,
) -> None:
    """``storage format --no-initial-controllers``: a new directory.id, and
    bootstrap.checkpoint saying kraft.version 1 (Kafka's format for a dynamic quorum):
    the node joins; the default format bootstraps a voter. A missing directory.id is
    assigned at startup."""
    from migration.controller.storage import ensure_directory_id, format_storage, read_storage
    from migration.records import versions

    voter = format_storage(tmp_path / "v", 3, "Cluster0000000000000001", versions.LATEST)
    joining = format_storage(
        tmp_path / "n3", 3, "Cluster0000000000000001", versions.LATEST, initial_controllers=False
    )
    assert not voter.joining and joining.joining
    assert joining.directory_id != voter.directory_id
    assert read_storage(tmp_path / "n3") == joining
    assert read_storage(tmp_path / "v") == voter
    node, _ = make(tmp_path, node_id=3, directory_id=joining.directory_id, joining=True)
    assert not node.is_voter and node.voter_ids == VOTERS
    meta = tmp_path / "v" / "meta.properties"
    lines = meta.read_text().splitlines()
    meta.write_text("\n".join(line for line in lines if "directory.id" not in line) + "\n")
    assert ensure_directory_id(tmp_path / "nothing") is None
    assigned = ensure_directory_id(tmp_path / "v")
    assert assigned is not None and assigned.directory_id
    assert read_storage(tmp_path / "v") == assigned


def test_a_voter_change_waits_for_the_controllers_queued_records(tmp_path: Path) -> None:
    """Raft's own records wait while the controller has records queued (never refused
    for load), go in at the controller's next flush, and the controller's next write
    takes its offset from the log after them: each write is answered with the offset
    its record really has, once that is committed."""
    from dataclasses import replace
    from typing import Any

    from tests.lone_controller import lone_controller

    lone = lone_controller(tmp_path)
    try:
        node, controller = lone.node, lone.controller
        node.config = replace(node.config, directory_id=DIRS[1])
        node.own_appends_allowed = controller.quiet  # as the controller process wires it
        answers: list[Any] = []
        lone.commit()
        controller.append_records([MetadataRecord(no_op_record=NoOpRecord())], answers.append)
        upgraded = upgrade(node)
        assert upgraded == [] and node.pinned_voters() is None  # queued behind the record
        assert code(upgrade(node)) == ErrorCode.REQUEST_TIMED_OUT  # one change at a time
        lone.commit()  # the record, then the upgrade at once
        assert node.pinned_voters() == {1: DIRS[1]}
        lone.commit()
        assert code(upgraded) == ErrorCode.NONE
        controller.append_records([MetadataRecord(no_op_record=NoOpRecord())], answers.append)
        lone.commit()
        kinds = {o: r.WhichOneof("record") for o, _, r in node.log.records()}  # type: ignore[attr-defined]
        assert len(answers) == 2
        for answered in answers:
            assert kinds[answered] == "no_op_record", (answered, kinds)
        assert answers[1] == max(kinds)  # after the VotersRecord
    finally:
        lone.close()
