"""A seeded, single-threaded world for RaftNodes: simulated time, a network that drops,
delays, duplicates and partitions messages, fsyncs that take time, hard kills that lose
what no completed flush covered, restarts, client writes, snapshots, and Raft's safety
properties checked after every event.

Everything random comes from one ``random.Random(seed)``, and events are ordered by
(time, sequence number), so a seed replays exactly.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from migration.log.batch import BatchHeader, frame_record
from migration.proto import raft_pb2 as pb
from migration.proto.metadata_pb2 import MetadataRecord, TopicRecord
from migration.raft.config import RaftConfig
from migration.raft.node import NotLeaderError, RaftNode, Request, Response, Role
from migration.raft.voters import snapshot_control_records
from migration.records.uuids import uuid_text
from tests.simulation.memory import MemoryLog, MemoryQuorumState, SafetyViolationError

REQUEST_TIMEOUT_MS = 1500.0  # a lost request or answer is noticed this late (a gRPC deadline)


@dataclass(frozen=True)
class Faults:
    drop: float = 0.0
    duplicate: float = 0.0
    slow: float = 0.0  # share of messages delayed 100-400 ms instead of 1-10 ms (fsyncs: 50-200)
    partitions: bool = False
    kills: bool = False

    @classmethod
    def random(cls, rng: random.Random) -> Faults:
        return cls(
            drop=rng.choice([0.0, 0.01, 0.05, 0.15]),
            duplicate=rng.choice([0.0, 0.02, 0.1]),
            slow=rng.choice([0.0, 0.05, 0.2]),
            partitions=rng.random() < 0.6,
            kills=rng.random() < 0.7,
        )


@dataclass
class SimNode:
    node_id: int
    log: MemoryLog
    store: MemoryQuorumState
    raft: RaftNode | None = None
    incarnation: int = 0
    last_high_watermark: int = 0
    verified_to: int = 0  # batches below this were compared with the committed record


@dataclass(order=True)
class _Event:
    at: float
    seq: int
    action: Callable[[], None] = field(compare=False)
    node: int = field(default=-1, compare=False)  # -1: not tied to a node's incarnation
    incarnation: int = field(default=0, compare=False)


class Simulation:
    def __init__(
        self, seed: int, voters: int = 3, observers: int = 0, faults: Faults | None = None
    ) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.faults = faults if faults is not None else Faults.random(self.rng)
        self.initial_faults = self.faults
        self.fetch_max_bytes = self.rng.choice([120, 600, 8 << 20])  # small: catch-up in pieces
        self.now = 0.0
        self._seq = 0
        self._queue: list[_Event] = []
        self.voter_ids = frozenset(range(1, voters + 1))
        self.nodes: dict[int, SimNode] = {}
        self.cut: set[tuple[int, int]] = set()  # directed links that lose everything
        self.events = 0
        self.trace: list[str] = []
        # what the checker has learnt
        self.committed: dict[int, bytes] = {}  # base offset -> frame, below committed_end
        self.committed_end = 0
        self.by_position: dict[tuple[int, int], tuple[bytes, tuple[int, int] | None]] = {}
        self.leaders: dict[int, int] = {}  # epoch -> leader id
        self._complete_checked: set[int] = set()  # epochs whose leader was checked
        self.writes_sent = 0
        for node_id in [*sorted(self.voter_ids), *range(voters + 1, voters + 1 + observers)]:
            node = SimNode(node_id, self._new_log(node_id), MemoryQuorumState(node_id))
            self.nodes[node_id] = node
            self._start(node)

    # --- plumbing -------------------------------------------------------------------------

    def _new_log(self, node_id: int) -> MemoryLog:
        return MemoryLog(
            on_truncate=lambda offset: self._check_truncation(node_id, offset),
            on_append=self._check_append,
        )

    def _at(self, delay: float, action: Callable[[], None], node: SimNode | None = None) -> None:
        self._seq += 1
        heapq.heappush(
            self._queue,
            _Event(
                self.now + delay,
                self._seq,
                action,
                node.node_id if node else -1,
                node.incarnation if node else 0,
            ),
        )

    def _start(self, node: SimNode) -> None:
        node.incarnation += 1
        node.last_high_watermark = 0
        config = RaftConfig(
            node_id=node.node_id,
            voters=self.voter_ids,
            cluster_id="sim",
            directory_id=_directory(node.node_id),
            fetch_max_bytes=self.fetch_max_bytes,
            snapshot_chunk_bytes=self.fetch_max_bytes,
        )
        node.raft = RaftNode(
            config,
            node.log,
            node.store,
            _SimTransport(self, node),
            clock=lambda: self.now,
            rng=random.Random(self.rng.random()),
            wall_clock_ms=lambda: int(self.now),
            flusher=lambda fsync, done: self._at(
                self._disk_delay(), lambda: self._flushed(node, fsync, done), node
            ),
        )
        self._schedule_tick(node)

    def _flushed(
        self, node: SimNode, fsync: Callable[[], None], done: Callable[[BaseException | None], None]
    ) -> None:
        """A flush's fsync came back (a kill before this loses what it covered)."""
        fsync()
        done(None)
        self._schedule_tick(node)

    def _schedule_tick(self, node: SimNode) -> None:
        raft = node.raft
        if raft is None:
            return
        at = raft.next_deadline()
        if at != float("inf"):
            self._at(max(0.0, at - self.now), lambda: self._tick(node), node)

    def _tick(self, node: SimNode) -> None:
        assert node.raft is not None
        if node.raft.next_deadline() <= self.now:
            node.raft.tick()
            self._schedule_tick(node)

    def _alive(self, node: SimNode, incarnation: int) -> bool:
        return node.raft is not None and node.incarnation == incarnation

    def send(self, source: SimNode, destination: int, request: Request) -> None:
        """Deliver ``request`` (maybe twice, maybe never); the sender hears the first
        answer, or a failure at its deadline, like a gRPC call."""
        incarnation = source.incarnation
        target = self.nodes[destination]
        done = False

        def finish(response: Response | None) -> None:
            nonlocal done
            if done or not self._alive(source, incarnation):
                return
            done = True
            assert source.raft is not None
            source.raft.handle_response(destination, request, response)
            self._schedule_tick(source)

        def answer(response: Response) -> None:
            if self._deliverable(destination, source.node_id):
                self._at(self._delay(), lambda: finish(response), source)

        def deliver() -> None:
            assert target.raft is not None
            target.raft.handle_request(request, answer)
            self._schedule_tick(target)

        self._at(REQUEST_TIMEOUT_MS, lambda: finish(None), source)
        if self._deliverable(source.node_id, destination):
            self._at(self._delay(), deliver, target)
            if self.rng.random() < self.faults.duplicate:
                self._at(self._delay(), deliver, target)

    def _deliverable(self, source: int, destination: int) -> bool:
        return (source, destination) not in self.cut and self.rng.random() >= self.faults.drop

    def _disk_delay(self) -> float:
        """An fsync's time: mostly short, sometimes behind other writes."""
        if self.rng.random() < self.faults.slow:
            return self.rng.uniform(50, 200)
        return self.rng.uniform(0.5, 5)

    def _delay(self) -> float:
        if self.rng.random() < self.faults.slow:
            return self.rng.uniform(100, 400)
        return self.rng.uniform(1, 10)

    # --- what happens to the world ----------------------------------------------------------

    def kill(self, node: SimNode) -> None:
        self.trace.append(f"{self.now:.0f} kill {node.node_id}")
        node.raft = None
        node.incarnation += 1
        node.log.crash()
        node.verified_to = min(node.verified_to, node.log.end_offset)

    def restart(self, node: SimNode) -> None:
        self.trace.append(f"{self.now:.0f} restart {node.node_id}")
        self._start(node)

    def partition(self) -> None:
        ids = sorted(self.nodes)
        side = set(self.rng.sample(ids, self.rng.randint(1, len(ids) // 2)))
        self.cut = {(a, b) for a in ids for b in ids if (a in side) != (b in side)}
        if self.rng.random() < 0.3:  # a one-way cut
            self.cut = {(a, b) for a, b in self.cut if a in side}
        self.trace.append(f"{self.now:.0f} partition {sorted(side)}")

    def heal(self) -> None:
        self.cut = set()
        self.trace.append(f"{self.now:.0f} heal")

    def client_write(self) -> None:
        for node in self.nodes.values():
            if node.raft is not None and node.raft.role is Role.LEADER:
                payload = [  # real records: a fetch's VotersRecords are decoded
                    frame_record(
                        MetadataRecord(
                            topic_record=TopicRecord(
                                name=self.rng.randbytes(self.rng.randint(2, 20)).hex()
                            )
                        ).SerializeToString()
                    )
                    for _ in range(self.rng.randint(1, 3))
                ]
                try:
                    node.raft.append(payload)
                except NotLeaderError:
                    return
                self.writes_sent += 1
                self._schedule_tick(node)
                return

    def snapshot(self, node: SimNode) -> None:
        raft = node.raft
        if raft is not None and raft.high_watermark > node.log.start_offset:
            voters = raft.voter_history.at(raft.high_watermark)
            control = [
                frame_record(r.SerializeToString()) for r in snapshot_control_records(voters)
            ]
            node.log.take_snapshot(raft.high_watermark, control)

    def upgrade(self) -> None:
        """The operator's ``features upgrade --feature kraft.version=1``, to whichever
        node leads (retried until one answers it; KIP-853 from then on)."""
        for node in self.nodes.values():
            if node.raft is not None and node.raft.role is Role.LEADER:
                node.raft.handle_request(
                    pb.UpdateKRaftVersionRequest(cluster_id="sim", kraft_version=1),
                    lambda _answer: None,
                )
                self._schedule_tick(node)
                return

    def voter_change(self) -> None:
        """After the upgrade, the operator's one voter change at a time: a voter of
        controller.quorum.voters missing from the set is added back (it fetches as an
        observer meanwhile), else a voter other than the leader is removed. Refusals
        (not committed yet, not caught up) are retried at the next one."""
        for node in self.nodes.values():
            raft = node.raft
            if raft is None or raft.role is not Role.LEADER:
                continue
            pinned = raft.pinned_voters()
            if pinned is None:
                return
            missing = sorted(self.voter_ids - set(pinned))
            request: pb.AddRaftVoterRequest | pb.RemoveRaftVoterRequest
            if missing:
                voter = missing[0]
                request = pb.AddRaftVoterRequest(
                    cluster_id="sim", voter_id=voter, voter_directory_id=_directory(voter)
                )
            else:
                voter = self.rng.choice(sorted(set(pinned) - {node.node_id}))
                request = pb.RemoveRaftVoterRequest(
                    cluster_id="sim", voter_id=voter, voter_directory_id=pinned[voter]
                )
            raft.handle_request(request, lambda _answer: None)
            self._schedule_tick(node)
            return

    # --- running ------------------------------------------------------------------------------

    def run(self, duration_ms: float = 15000.0, settle_ms: float = 8000.0) -> None:
        """Faults for ``duration_ms``, then a healed network with every node up for
        ``settle_ms``, after which a write made after the heal must have committed."""
        t = 0.0
        while t < duration_ms:
            t += self.rng.uniform(30, 120)
            self._at_absolute(t, self.client_write)
        t = self.rng.uniform(500, 3000)
        while t < duration_ms:  # the kraft.version upgrade, retried (a no-op once done)
            self._at_absolute(t, self.upgrade)
            t += self.rng.uniform(300, 1500)
        t = self.rng.uniform(2000, 5000)
        while t < duration_ms + settle_ms / 2:  # ends with the set whole, most often
            self._at_absolute(t, self.voter_change)
            t += self.rng.uniform(500, 2500)
        for node in self.nodes.values():
            t = self.rng.uniform(500, 3000)
            while t < duration_ms + settle_ms:
                self._at_absolute(t, lambda node=node: self.snapshot(node))
                t += self.rng.uniform(1000, 4000)
        if self.faults.partitions:
            t = self.rng.uniform(500, 2000)
            while t < duration_ms:
                self._at_absolute(t, self.partition)
                t += self.rng.uniform(500, 3000)
                self._at_absolute(t, self.heal)
                t += self.rng.uniform(500, 3000)
        if self.faults.kills:
            t = self.rng.uniform(500, 3000)
            while t < duration_ms:
                victim = self.nodes[self.rng.choice(sorted(self.nodes))]
                self._at_absolute(t, lambda v=victim: self._kill_if_up(v))
                t += self.rng.uniform(200, 2500)
                self._at_absolute(t, lambda v=victim: self._restart_if_down(v))
                t += self.rng.uniform(200, 2000)
        self._at_absolute(duration_ms, self._heal_all)
        self._run_until(duration_ms)
        committed_at_heal = self.committed_end
        t = duration_ms + 1000
        while t < duration_ms + settle_ms:
            self._at_absolute(t, self.client_write)
            t += 200
        self._run_until(duration_ms + settle_ms)
        if self.committed_end <= committed_at_heal:
            raise SafetyViolationError(
                f"no progress: nothing committed in the {settle_ms:.0f} ms after the heal "
                f"(committed end {self.committed_end})"
            )

    def _at_absolute(self, at: float, action: Callable[[], None]) -> None:
        self._seq += 1
        heapq.heappush(self._queue, _Event(at, self._seq, action))

    def _kill_if_up(self, node: SimNode) -> None:
        if node.raft is not None:
            self.kill(node)

    def _restart_if_down(self, node: SimNode) -> None:
        if node.raft is None:
            self.restart(node)

    def _heal_all(self) -> None:
        self.heal()
        self.faults = Faults()
        for node in self.nodes.values():
            self._restart_if_down(node)

    def run_until(self, end: float) -> None:
        """Process every event up to simulated time ``end`` (checking after each)."""
        self._run_until(end)

    def leader(self) -> SimNode | None:
        """The live node that believes it leads in the highest epoch, if any."""
        leading = [n for n in self.nodes.values() if n.raft is not None and n.raft.is_leader]
        return max(leading, key=lambda n: n.raft.epoch if n.raft else -1, default=None)

    def isolate(self, node_id: int) -> None:
        """Cut every link to and from ``node_id``."""
        self.cut = {(a, b) for a in self.nodes for b in self.nodes if node_id in (a, b) and a != b}
        self.trace.append(f"{self.now:.0f} isolate {node_id}")

    def _run_until(self, end: float) -> None:
        while self._queue and self._queue[0].at <= end:
            event = heapq.heappop(self._queue)
            if event.node >= 0 and not self._alive(self.nodes[event.node], event.incarnation):
                continue
            self.now = event.at
            event.action()
            self.events += 1
            self.check()
        self.now = end

    # --- the invariants -------------------------------------------------------------------------

    def _check_append(
        self, frames: list[tuple[BatchHeader, bytes]], prev: tuple[int, int] | None
    ) -> None:
        """Log matching: a batch at one (offset, epoch) is the same everywhere, and so is
        the batch before it."""
        for header, frame in frames:
            key = (header.base_offset, header.epoch)
            known = self.by_position.get(key)
            if known is None:
                self.by_position[key] = (frame, prev)
            elif known[0] != frame or (
                prev is not None and known[1] is not None and known[1] != prev
            ):
                raise SafetyViolationError(
                    f"log matching: two different batches at offset/epoch {key}"
                )
            prev = key

    def _check_truncation(self, node_id: int, offset: int) -> None:
        node = self.nodes[node_id]
        raft = node.raft
        if raft is not None and offset < raft.high_watermark:
            raise SafetyViolationError(
                f"node {node_id} truncates to {offset} < its high watermark {raft.high_watermark}"
            )
        for header, frame in node.log.batches:
            if (
                offset <= header.base_offset < self.committed_end
                and self.committed.get(header.base_offset) == frame
            ):
                raise SafetyViolationError(
                    f"node {node_id} truncates to {offset}: loses committed {header.base_offset}"
                )
        node.verified_to = min(node.verified_to, offset)

    def check(self) -> None:
        for node in self.nodes.values():
            raft = node.raft
            if raft is None:
                continue
            if raft.role is Role.LEADER:
                leader = self.leaders.setdefault(raft.epoch, node.node_id)
                if leader != node.node_id:
                    raise SafetyViolationError(
                        f"two leaders in epoch {raft.epoch}: {leader} and {node.node_id}"
                    )
                if raft.epoch not in self._complete_checked:
                    self._check_leader_completeness(node)
            hw = raft.high_watermark
            if hw < node.last_high_watermark:
                raise SafetyViolationError(
                    f"node {node.node_id}: high watermark {node.last_high_watermark} -> {hw}"
                )
            node.last_high_watermark = hw
            if hw > node.log.end_offset:
                raise SafetyViolationError(
                    f"node {node.node_id}: high watermark {hw} > log end {node.log.end_offset}"
                )
            if hw > node.verified_to:
                self._verify_committed(node, hw)
        durable = sum(
            1 for v in self.voter_ids if self.nodes[v].log.durable_end >= self.committed_end
        )
        if durable < len(self.voter_ids) // 2 + 1:
            raise SafetyViolationError(
                f"only {durable} voters hold the committed prefix (to {self.committed_end}) durably"
            )

    def _verify_committed(self, node: SimNode, hw: int) -> None:
        """Same committed data everywhere: every batch below a node's high watermark is
        the batch the first node to commit that offset had."""
        for header, frame in node.log.all_batches():
            if header.next_offset <= node.verified_to:
                continue
            if header.base_offset >= hw:
                break
            if header.next_offset > hw:
                raise SafetyViolationError(
                    f"node {node.node_id}: high watermark {hw} inside a batch"
                )
            known = self.committed.setdefault(header.base_offset, frame)
            if known != frame:
                raise SafetyViolationError(
                    f"node {node.node_id} committed another batch at offset {header.base_offset}"
                )
        node.verified_to = hw
        self.committed_end = max(self.committed_end, hw)

    def _check_leader_completeness(self, node: SimNode) -> None:
        assert node.raft is not None
        held = {h.base_offset: f for h, f in node.log.all_batches()}
        for offset, frame in self.committed.items():
            if held.get(offset) != frame:
                raise SafetyViolationError(
                    f"leader completeness: leader {node.node_id} of epoch {node.raft.epoch} "
                    f"lacks committed batch {offset}"
                )
        self._complete_checked.add(node.raft.epoch)


class _SimTransport:
    def __init__(self, world: Simulation, node: SimNode) -> None:
        self._world = world
        self._node = node

    def send(self, destination: int, request: Request) -> None:
        self._world.send(self._node, destination, request)


def _directory(node_id: int) -> str:
    """A simulated node's directory id (its disk is never replaced here)."""
    return uuid_text(node_id.to_bytes(16, "big"))
