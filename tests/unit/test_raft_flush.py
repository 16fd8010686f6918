"""The Raft log's fsync off the node's thread: what a flush in flight covers, what the
leader counts and a follower acknowledges meanwhile, a truncation under it, a failed one.

Real files (MetadataLog, quorum-state) and a real EventLoop; the flusher in the node
tests is a list the test completes by hand, as the event loop's fsync thread would."""

from __future__ import annotations

import errno
import random
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from migration.log.batch import encode_batch
from migration.log.errors import LogFlushError
from migration.log.metadata_log import FlushPolicy, MetadataLog
from migration.proto import raft_pb2 as pb
from migration.raft.config import RaftConfig
from migration.raft.event_loop import EventLoop
from migration.raft.node import RaftInvariantError, RaftNode, Role
from migration.raft.quorum_state_store import FileQuorumStateStore
from tests.unit.test_raft_node import NOOP, VOTERS, Clock, Wire, ask, elect

Done = Callable[[BaseException | None], None]


class Disk:
    """The injected flusher: each fsync waits here until the test completes it."""

    def __init__(self) -> None:
        self.waiting: list[tuple[Callable[[], None], Done]] = []

    def __call__(self, fsync: Callable[[], None], done: Done) -> None:
        self.waiting.append((fsync, done))

    def complete(self, error: BaseException | None = None) -> None:
        (fsync, done), *self.waiting = self.waiting
        if error is None:
            fsync()
        done(error)


def make(tmp_path: Path, clock: Clock) -> tuple[RaftNode, Wire, Disk]:
    wire, disk = Wire(), Disk()
    (tmp_path / "n1").mkdir()
    node = RaftNode(
        RaftConfig(node_id=1, voters=VOTERS, cluster_id="c"),
        MetadataLog(tmp_path / "n1", flush=FlushPolicy.never()),
        FileQuorumStateStore(tmp_path / "n1"),
        wire,
        clock=clock,
        rng=random.Random(1),
        flusher=disk,
    )
    return node, wire, disk


def _fetch(node: RaftNode, replica: int) -> pb.FetchRequest:
    return pb.FetchRequest(
        cluster_id="c",
        replica_id=replica,
        current_leader_epoch=node.epoch,
        fetch_offset=node.log.end_offset,
        last_fetched_epoch=node.epoch,
    )


def test_the_leader_counts_only_what_a_completed_fsync_covers(tmp_path: Path) -> None:
    """Voter 2 has everything, but the leader's own fsync is out: no commit until it
    comes back, then exactly what it covered; a batch appended meanwhile waits for the
    next flush, which starts only then (one at a time)."""
    clock = Clock()
    node, wire, disk = make(tmp_path, clock)
    elect(node, wire, clock)
    node.tick()  # the leader change record: its flush starts
    while disk.waiting:
        disk.complete()
    first = node.append([NOOP] * 3).next_offset
    node.tick()
    assert len(disk.waiting) == 1 and node.flushed_end_offset < first
    second = node.append([NOOP]).next_offset
    node.handle_request(_fetch(node, 2), lambda _: None)  # voter 2 holds both batches
    node.tick()
    assert len(disk.waiting) == 1  # the second batch's flush waits for the first's
    assert node.high_watermark < first
    disk.complete()
    assert node.flushed_end_offset == node.high_watermark == first
    node.tick()
    disk.complete()
    assert node.flushed_end_offset == node.high_watermark == second


def test_a_follower_acknowledges_nothing_while_its_fsync_is_out(tmp_path: Path) -> None:
    """A fetched batch is appended at once; the next Fetch (its offset is the follower's
    acknowledgement) goes out only after the fsync comes back."""
    clock = Clock()
    node, wire, disk = make(tmp_path, clock)
    ask(node, pb.BeginQuorumEpochRequest(cluster_id="c", leader_id=2, leader_epoch=4))
    node.tick()
    ((leader, request),) = wire.take(pb.FetchRequest)
    batch = encode_batch(0, 4, 0, [NOOP, NOOP])
    answer = pb.FetchResponse(leader_id=2, leader_epoch=4, high_watermark=0, records=batch)
    node.handle_response(leader, request, answer)
    assert node.log.end_offset == 2
    for _ in range(3):
        clock.now += 100
        node.tick()
    assert wire.take(pb.FetchRequest) == [] and len(disk.waiting) == 1
    disk.complete()
    assert node.flushed_end_offset == 2 and node.next_deadline() <= clock.now
    node.tick()
    ((_, again),) = wire.take(pb.FetchRequest)
    assert again.fetch_offset == 2


def test_a_truncation_with_a_flush_in_flight_is_an_invariant_violation(tmp_path: Path) -> None:
    """No fetch goes out while a flush is out, so no answer can cut the log under it; if
    one ever did, the fsync's return would count the new tail as flushed: a fault."""
    clock = Clock()
    node, wire, disk = make(tmp_path, clock)
    ask(node, pb.BeginQuorumEpochRequest(cluster_id="c", leader_id=2, leader_epoch=4))
    node.tick()
    ((leader, request),) = wire.take(pb.FetchRequest)
    records = encode_batch(0, 4, 0, [NOOP, NOOP]) + encode_batch(2, 4, 0, [NOOP, NOOP])
    node.handle_response(
        leader, request, pb.FetchResponse(leader_id=2, leader_epoch=4, records=records)
    )
    node.tick()
    assert len(disk.waiting) == 1
    with pytest.raises(RaftInvariantError, match="truncation to 2 with a flush in flight"):
        node._truncate_diverging(pb.OffsetAndEpoch(epoch=4, end_offset=2))
    assert node.log.end_offset == 4


def test_a_failed_fsync_ends_the_node_and_every_later_flush_refuses(tmp_path: Path) -> None:
    clock = Clock()
    node, wire, disk = make(tmp_path, clock)
    elect(node, wire, clock)
    node.tick()
    with pytest.raises(LogFlushError, match="fsync failed"):
        disk.complete(OSError(errno.EIO, "Input/output error"))
    with pytest.raises(LogFlushError, match="an earlier fsync failed"):
        node.log.flush()
    assert node.role is Role.LEADER and node.high_watermark == 0


def test_a_log_fsync_taken_then_rolled_and_closed_still_runs(tmp_path: Path) -> None:
    """begin_flush's fsync holds its own descriptor: the log rolls its segment and is
    closed before the fsync runs on another thread, and it still succeeds."""
    log = MetadataLog(tmp_path / "log", flush=FlushPolicy.never(), segment_bytes=1024)
    log.append_framed([NOOP], epoch=1)
    fsync = log.begin_flush()
    with pytest.raises(RuntimeError, match="already in flight"):
        log.begin_flush()
    for _ in range(40):
        log.append_framed([NOOP] * 4, epoch=1)
    log.close()
    assert len(list((tmp_path / "log").glob("*.log"))) >= 2  # rolled
    errors: list[BaseException] = []

    def run() -> None:
        try:
            fsync()
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=30)
    assert errors == []
    log.end_flush(None)


def test_the_event_loop_fsyncs_off_its_thread_and_answers_on_it(tmp_path: Path) -> None:
    loop = EventLoop(name="flush-test")
    node, _, _ = make(tmp_path, Clock())
    seen: dict[str, str] = {}
    answered = threading.Event()

    def fsync() -> None:
        seen["fsync"] = threading.current_thread().name

    def done(error: BaseException | None) -> None:
        seen["done"] = threading.current_thread().name
        seen["error"] = repr(error)
        answered.set()

    loop.start(node)
    try:
        loop.flusher(fsync, done)
        assert answered.wait(30)
    finally:
        loop.stop()
    assert seen == {"fsync": "flush-test-fsync_0", "done": "flush-test", "error": "None"}
