"""The Raft core against hostile and stale peers: Pre-Vote (KIP-996), election timers
that only a leader or a granted vote restart, senders checked against the voter set,
int32-bounded epochs, capped fetch waits, a lost quorum-state file.

Real files (MetadataLog, quorum-state); only the transport and the clock are injected,
as in the seeded simulation."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from migration.common.kafka_errors import ErrorCode
from migration.image.committed import BULK_COMMIT_RECORDS
from migration.log.batch import encode_batch, frame_record
from migration.log.metadata_log import FlushPolicy, MetadataLog
from migration.proto import raft_pb2 as pb
from migration.proto.metadata_pb2 import MetadataRecord, NoOpRecord
from migration.raft.config import RaftConfig
from migration.raft.core import COMMIT_STEP_RECORDS
from migration.raft.node import EPOCH_LIMIT, RaftNode, Request, Response, Role
from migration.raft.quorum_state_store import FileQuorumStateStore, QuorumStateError

VOTERS = frozenset({1, 2, 3})
NOOP = frame_record(MetadataRecord(no_op_record=NoOpRecord()).SerializeToString())


class Wire:
    """The injected transport: what the node sent, in order."""

    def __init__(self) -> None:
        self.sent: list[tuple[int, Request]] = []

    def send(self, destination: int, request: Request) -> None:
        self.sent.append((destination, request))

    def take(self, kind: type) -> list[tuple[int, Request]]:
        found = [(d, r) for d, r in self.sent if isinstance(r, kind)]
        self.sent = [(d, r) for d, r in self.sent if not isinstance(r, kind)]
        return found


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def make(tmp_path: Path, node_id: int = 1, clock: Clock | None = None) -> tuple[RaftNode, Wire]:
    wire = Wire()
    node = RaftNode(
        RaftConfig(node_id=node_id, voters=VOTERS, cluster_id="c"),
        MetadataLog(tmp_path / f"n{node_id}", flush=FlushPolicy.never()),
        FileQuorumStateStore(_dir(tmp_path, node_id)),
        wire,
        clock=clock or Clock(),
        rng=random.Random(1),
    )
    return node, wire


def _dir(tmp_path: Path, node_id: int) -> Path:
    path = tmp_path / f"n{node_id}"
    path.mkdir(exist_ok=True)
    return path


def ask(node: RaftNode, request: Request) -> Response:
    answers: list[Response] = []
    node.handle_request(request, answers.append)
    assert len(answers) == 1
    return answers[0]


def vote(
    candidate: int, epoch: int, last_epoch: int = 0, end: int = 0, pre: bool = False
) -> pb.VoteRequest:
    return pb.VoteRequest(
        cluster_id="c",
        candidate_id=candidate,
        candidate_epoch=epoch,
        last_offset_epoch=last_epoch,
        last_offset=end,
        pre_vote=pre,
    )


def lost_leader(tmp_path: Path) -> tuple[RaftNode, Wire]:
    """Node 1 followed leader 2 in epoch 4, heard nothing for a fetch timeout, and has
    sent its pre-votes."""
    clock = Clock()
    node, wire = make(tmp_path, clock=clock)
    ask(node, pb.BeginQuorumEpochRequest(cluster_id="c", leader_id=2, leader_epoch=4))
    clock.now += node.config.fetch_timeout_ms + 1
    node.tick()  # prospective
    node.tick()  # the pre-votes go out
    return node, wire


def elect(node: RaftNode, wire: Wire, clock: Clock) -> None:
    """Time out, win the pre-vote, win the vote: ``node`` leads."""
    clock.now += 10_000
    node.tick()
    assert node.role is Role.PROSPECTIVE
    for then in (Role.CANDIDATE, Role.LEADER):
        node.tick()  # the (pre-)votes go out
        for voter, request in wire.take(pb.VoteRequest):
            granted = pb.VoteResponse(leader_id=-1, leader_epoch=node.epoch, vote_granted=True)
            node.handle_response(voter, request, granted)
        assert node.role is then


def test_a_refused_vote_in_a_higher_epoch_keeps_the_election_deadline(tmp_path: Path) -> None:
    """The livelock of seed 103865: stale candidates in ever higher epochs must not keep
    resetting the timers of the voters that could win."""
    clock = Clock()
    node, _ = make(tmp_path, clock=clock)
    node.log.append_framed([NOOP], epoch=3)  # more up to date than the candidate
    node.tick()
    deadline = node.next_deadline()
    assert deadline >= node.config.election_timeout_ms
    clock.now += 100
    answer = ask(node, vote(2, epoch=7, last_epoch=1, end=0))
    assert isinstance(answer, pb.VoteResponse) and not answer.vote_granted
    assert node.epoch == 7
    node.tick()
    assert node.next_deadline() <= deadline  # not pushed back by the refused candidate


def test_a_granted_vote_restarts_the_election_timer(tmp_path: Path) -> None:
    clock = Clock()
    node, _ = make(tmp_path, clock=clock)
    clock.now += 900  # close to the first deadline
    answer = ask(node, vote(2, epoch=1))
    assert isinstance(answer, pb.VoteResponse) and answer.vote_granted
    node.tick()
    assert node.next_deadline() >= clock.now + node.config.election_timeout_ms


def test_a_node_that_lost_its_leader_asks_pre_votes_before_bumping_its_epoch(
    tmp_path: Path,
) -> None:
    node, wire = lost_leader(tmp_path)
    assert node.role is Role.PROSPECTIVE
    assert node.epoch == 4  # nothing persisted, nothing bumped
    assert json.loads((tmp_path / "n1" / "quorum-state").read_text())["leaderEpoch"] == 4
    requests = [r for _, r in wire.take(pb.VoteRequest)]
    assert requests and all(r.pre_vote and r.candidate_epoch == 5 for r in requests)


def test_a_pre_vote_changes_nothing_on_the_voter(tmp_path: Path) -> None:
    node, _ = make(tmp_path)
    before = (
        (tmp_path / "n1" / "quorum-state").read_text()
        if (tmp_path / "n1" / "quorum-state").exists()
        else None
    )
    answer = ask(node, vote(2, epoch=9, pre=True))
    assert isinstance(answer, pb.VoteResponse) and answer.vote_granted
    assert node.epoch == 0 and node.voted_id is None
    after = (
        (tmp_path / "n1" / "quorum-state").read_text()
        if (tmp_path / "n1" / "quorum-state").exists()
        else None
    )
    assert before == after


def test_a_follower_that_hears_from_its_leader_refuses_pre_votes(tmp_path: Path) -> None:
    clock = Clock()
    node, _ = make(tmp_path, clock=clock)
    ask(node, pb.BeginQuorumEpochRequest(cluster_id="c", leader_id=2, leader_epoch=4))
    answer = ask(node, vote(3, epoch=5, last_epoch=4, end=100, pre=True))
    assert isinstance(answer, pb.VoteResponse) and not answer.vote_granted
    assert answer.leader_id == 2 and answer.leader_epoch == 4
    clock.now += node.config.fetch_timeout_ms + 1  # the leader has gone quiet
    answer = ask(node, vote(3, epoch=5, last_epoch=4, end=100, pre=True))
    assert isinstance(answer, pb.VoteResponse) and answer.vote_granted


def test_a_followers_own_work_between_an_answer_and_its_next_ask_is_not_the_leaders_silence(
    tmp_path: Path,
) -> None:
    """A follower that took longer than the fetch timeout to apply an answer (its own
    loop busy, as at a million partitions) asks again rather than standing: the leader
    was waiting to be asked. Once asked, the leader has the whole timeout to answer."""
    clock = Clock()
    node, wire = make(tmp_path, clock=clock)
    ask(node, pb.BeginQuorumEpochRequest(cluster_id="c", leader_id=2, leader_epoch=4))
    node.tick()
    ((leader, fetch),) = wire.take(pb.FetchRequest)
    clock.now += 100
    node.handle_response(leader, fetch, pb.FetchResponse(leader_id=2, leader_epoch=4))
    clock.now += node.config.fetch_timeout_ms + 500  # this node's own work
    node.tick()
    assert node.role is Role.FOLLOWER
    assert len(wire.take(pb.FetchRequest)) == 1  # asked again at once
    clock.now += node.config.fetch_timeout_ms - 1
    node.tick()
    assert node.role is Role.FOLLOWER
    clock.now += 2  # no answer for a whole timeout after the ask: the leader is gone
    node.tick()
    assert node.role is Role.PROSPECTIVE


def test_a_pre_vote_answer_naming_the_lost_leader_does_not_undo_the_grant(tmp_path: Path) -> None:
    """A voter still following the dead leader grants, naming it: the prospective counts
    the grant and stands, rather than going back to the dead leader."""
    node, wire = lost_leader(tmp_path)
    voter, request = next((d, r) for d, r in wire.take(pb.VoteRequest) if d == 3)
    node.handle_response(
        voter, request, pb.VoteResponse(leader_id=2, leader_epoch=4, vote_granted=True)
    )
    assert node.role is Role.CANDIDATE and node.epoch == 5


def test_a_majority_refusing_for_a_live_leader_sends_the_prospective_back(tmp_path: Path) -> None:
    node, wire = lost_leader(tmp_path)
    for voter, request in wire.take(pb.VoteRequest):
        node.handle_response(
            voter, request, pb.VoteResponse(leader_id=2, leader_epoch=4, vote_granted=False)
        )
    assert node.role is Role.FOLLOWER and node.leader_id == 2 and node.epoch == 4


@pytest.mark.parametrize(
    "request_",
    [
        pb.EndQuorumEpochRequest(cluster_id="c", leader_id=99, leader_epoch=EPOCH_LIMIT),
        pb.BeginQuorumEpochRequest(cluster_id="c", leader_id=99, leader_epoch=5),
        vote(99, epoch=5),
        pb.BeginQuorumEpochRequest(cluster_id="c", leader_id=1, leader_epoch=5),  # "from" itself
    ],
    ids=["end-epoch", "begin-epoch", "vote", "self"],
)
def test_election_requests_from_outside_the_voter_set_are_refused(
    tmp_path: Path, request_: Request
) -> None:
    node, _ = make(tmp_path)
    answer = ask(node, request_)
    assert answer.error_code == ErrorCode.INCONSISTENT_VOTER_SET
    assert node.epoch == 0 and node.role is Role.UNATTACHED
    node.log.close()
    restarted, _ = make(tmp_path)  # and nothing was persisted
    assert restarted.epoch == 0


@pytest.mark.parametrize(
    "request_",
    [
        vote(2, epoch=EPOCH_LIMIT),
        vote(2, epoch=-3),
        pb.EndQuorumEpochRequest(cluster_id="c", leader_id=2, leader_epoch=EPOCH_LIMIT),
        pb.FetchRequest(cluster_id="c", replica_id=7, fetch_offset=-1),
        pb.FetchSnapshotRequest(cluster_id="c", replica_id=7, position=-5),
    ],
    ids=["vote-max-epoch", "vote-negative", "end-max-epoch", "fetch-negative", "snapshot-negative"],
)
def test_epochs_and_offsets_out_of_range_are_invalid_requests(
    tmp_path: Path, request_: Request
) -> None:
    node, _ = make(tmp_path)
    assert ask(node, request_).error_code == ErrorCode.INVALID_REQUEST
    assert node.epoch == 0


def test_a_held_fetch_waits_at_most_the_leaders_own_limit(tmp_path: Path) -> None:
    clock = Clock()
    node, wire = make(tmp_path, clock=clock)
    elect(node, wire, clock)
    node.tick()  # flush the leader-change record
    answers: list[Response] = []
    fetch = pb.FetchRequest(
        cluster_id="c",
        replica_id=50,  # an observer
        current_leader_epoch=node.epoch,
        fetch_offset=node.log.end_offset,
        last_fetched_epoch=node.epoch,
        max_wait_ms=2**31 - 1,
    )
    node.handle_request(fetch, answers.append)
    assert not answers  # held: the long poll
    assert node.next_deadline() <= clock.now + node.config.fetch_max_wait_ms
    clock.now += node.config.fetch_max_wait_ms
    node.tick()
    assert len(answers) == 1 and answers[0].error_code == ErrorCode.NONE


def test_a_lost_quorum_state_starts_unattached_in_the_logs_last_epoch(tmp_path: Path) -> None:
    with MetadataLog(tmp_path / "n1") as log:
        log.append_framed([NOOP], epoch=6)
    node, _ = make(tmp_path)
    assert node.epoch == 6 and node.role is Role.UNATTACHED
    assert json.loads((tmp_path / "n1" / "quorum-state").read_text())["leaderEpoch"] == 6


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (
            b'{"leaderEpoch": 100000000000000000000000, "leaderId": -1, "votedId": -1}',
            "leaderEpoch",
        ),
        (b'{"leaderEpoch": 1, "leaderId": 2147483648, "votedId": -1}', "leaderId"),
        (b"\xff\xfe\x00garbage", "quorum state"),
        (b"[1, 2]", "not a JSON object"),
        (b'{"leaderEpoch": 1}', "missing field"),
    ],
)
def test_an_unusable_quorum_state_file_is_named(
    tmp_path: Path, content: bytes, problem: str
) -> None:
    (tmp_path / "quorum-state").write_bytes(content)
    with pytest.raises(QuorumStateError, match=problem) as caught:
        FileQuorumStateStore(tmp_path).read()
    assert str(tmp_path / "quorum-state") in str(caught.value)


def test_a_follower_downloading_a_snapshot_counts_for_check_quorum(tmp_path: Path) -> None:
    """Only FetchSnapshot from voter 2 for three fetch timeouts: the leader still hears
    from a majority and does not resign (it used to, and the download restarted)."""
    clock = Clock()
    node, wire = make(tmp_path, clock=clock)
    elect(node, wire, clock)
    epoch = node.epoch
    for _ in range(12):
        clock.now += node.config.fetch_timeout_ms / 4
        ask(
            node,
            pb.FetchSnapshotRequest(
                cluster_id="c",
                replica_id=2,
                current_leader_epoch=epoch,
                snapshot_id=pb.OffsetAndEpoch(end_offset=1, epoch=epoch),
            ),
        )
        node.tick()
    assert node.role is Role.LEADER and node.epoch == epoch


def test_the_leader_change_record_names_the_voters_that_granted(tmp_path: Path) -> None:
    clock = Clock()
    node, wire = make(tmp_path, clock=clock)
    elect(node, wire, clock)
    node.tick()
    (change,) = [r.leader_change_message for _, _, r in node.log.records()]  # type: ignore[attr-defined]
    assert change.leader_id == 1
    assert sorted(v.voter_id for v in change.granting_voters) == [1, 2]  # a majority


class Heard:
    """A RaftListener that records the commits it hears of."""

    def __init__(self) -> None:
        self.commits: list[int] = []

    def on_leader_change(self, leader_id: int | None, epoch: int) -> None:
        pass

    def on_commit(self, high_watermark: int) -> None:
        self.commits.append(high_watermark)

    def on_snapshot_installed(self, snapshot_id: object) -> None:
        pass


def test_a_large_commit_is_heard_in_steps_of_whole_batches_one_per_tick(tmp_path: Path) -> None:
    """30 batches of 1,000 records committed by one fetch: the listeners hear the first
    ~COMMIT_STEP_RECORDS at once and the rest a step per tick (the loop serves fetches
    between them), every step ending on a batch boundary, the last at the high watermark."""
    clock = Clock()
    node, wire = make(tmp_path, clock=clock)
    heard = Heard()
    node._listeners.append(heard)
    elect(node, wire, clock)
    node.tick()  # the leader change record is flushed
    ends = [node.append([NOOP] * 1000).next_offset for _ in range(30)]
    node.tick()  # flushed
    epoch = node.epoch
    fetch = pb.FetchRequest(
        cluster_id="c",
        replica_id=2,
        current_leader_epoch=epoch,
        fetch_offset=node.log.end_offset,
        last_fetched_epoch=epoch,
    )
    node.handle_request(fetch, lambda _: None)
    assert node.high_watermark == ends[-1]
    assert len(heard.commits) == 1 and heard.commits[0] < ends[-1]
    assert node.next_deadline() <= clock.now  # the next step is due at once
    ticks = 0
    while heard.commits[-1] < node.high_watermark:
        node.tick()
        ticks += 1
        assert ticks < 40
    assert ticks >= 2
    assert all(c in ends for c in heard.commits)
    assert heard.commits == sorted(set(heard.commits))
    steps = [b - a for a, b in zip([ends[0] - 1000, *heard.commits], heard.commits, strict=False)]
    assert max(steps) <= COMMIT_STEP_RECORDS + 1000


def test_a_commit_step_can_be_a_bulk_replay() -> None:
    """The committed image replays a commit of ``BULK_COMMIT_RECORDS`` or more with the
    collector paused and freezes what it leaves; commits reach it a step of about
    ``COMMIT_STEP_RECORDS`` at a time, so a bulk size above the step would never be met."""
    assert BULK_COMMIT_RECORDS <= COMMIT_STEP_RECORDS


def test_a_follower_hears_of_a_commit_on_its_tick_not_in_the_fetch_answers_event(
    tmp_path: Path,
) -> None:
    """The answer that appends a fetch's batches and raises the high watermark does not
    also replay the commit: the listeners hear of it on the tick that follows at once."""
    clock = Clock()
    node, wire = make(tmp_path, clock=clock)
    heard = Heard()
    node._listeners.append(heard)
    ask(node, pb.BeginQuorumEpochRequest(cluster_id="c", leader_id=2, leader_epoch=4))
    node.tick()
    ((leader, request),) = wire.take(pb.FetchRequest)
    records = encode_batch(0, 4, 0, [NOOP] * 3)
    answer = pb.FetchResponse(leader_id=2, leader_epoch=4, high_watermark=3, records=records)
    node.handle_response(leader, request, answer)
    assert node.high_watermark == 3 and heard.commits == []
    assert node.next_deadline() <= clock.now
    node.tick()
    assert heard.commits == [3]
