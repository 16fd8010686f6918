"""An active quorum controller in process: a one-voter quorum on real files (MetadataLog,
quorum-state), driven by hand -- the clock and the ticks are the test's, there are no
peers. For the controller's handlers and seams without three processes."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from migration.controller.quorum_controller import ControllerSettings, QuorumController
from migration.image.committed import CommittedMetadata
from migration.image.model import MetadataImage
from migration.log.metadata_log import FlushPolicy, MetadataLog
from migration.proto import controller_pb2 as cpb
from migration.proto.metadata_pb2 import MetadataRecord
from migration.raft.config import Address, RaftConfig
from migration.raft.node import RaftNode, Request
from migration.raft.quorum_state_store import FileQuorumStateStore


class NoPeers:
    def send(self, destination: int, request: Request) -> None:  # a quorum of one
        raise AssertionError(f"a lone voter sent {request} to {destination}")


@dataclass
class LoneController:
    controller: QuorumController
    node: RaftNode
    committed: CommittedMetadata
    now: list[float] = field(default_factory=lambda: [0.0])

    def commit(self) -> None:
        """Append what the controller queued and commit it (a loop round)."""
        self.controller.flush()
        self.node.tick()

    def call(self, method: str, request: Any) -> Any:
        """A write RPC, committed, and its answer."""
        answers: list[Any] = []
        self.controller.handle(method, request, answers.append)
        self.commit()
        assert len(answers) == 1, answers
        return answers[0]

    @property
    def image(self) -> MetadataImage:
        return self.controller.committed

    # --- brokers and topics, through the RPCs a broker and an admin send ------------------

    def register(self, broker: int, incarnation: bytes | None = None) -> Any:
        return self.call(
            "BrokerRegistration",
            cpb.BrokerRegistrationRequest(
                broker_id=broker,
                cluster_id="c",
                incarnation_id=incarnation or bytes([broker]) * 16,
            ),
        )

    def heartbeat(self, broker: int, **flags: Any) -> Any:
        """A caught-up heartbeat in the broker's pending registration epoch."""
        epoch = self.controller._pending.brokers[broker].epoch  # type: ignore[union-attr]
        return self.call(
            "BrokerHeartbeat",
            cpb.BrokerHeartbeatRequest(
                broker_id=broker, broker_epoch=epoch, current_metadata_offset=10**9, **flags
            ),
        )

    def up(self, *brokers: int) -> None:
        """Register and unfence ``brokers``."""
        for b in brokers:
            assert self.register(b).error_code == 0
            assert not self.heartbeat(b).is_fenced

    def create(self, name: str, partitions: int, rf: int) -> Any:
        request = cpb.CreateTopicsRequest()
        request.topics.add(name=name, num_partitions=partitions, replication_factor=rf)
        return self.call("CreateTopics", request).topics[0]

    def partition(self, topic: str, index: int = 0) -> Any:
        image = self.image.topic(topic)
        assert image is not None
        return image.partitions[index]

    def copy_committed(self) -> None:
        """What the migration's copy leaves: ZkMigrationState MIGRATION (1) committed."""
        record = MetadataRecord()
        record.zk_migration_state_record.zk_migration_state = 1
        answers: list[Any] = []
        self.controller.append_records([record], answers.append)
        self.commit()
        assert self.image.zk_migration_state == 1, answers

    def expire(self, *keep: int) -> None:
        """Let every session but ``keep``'s run out (a controller built with
        ``session_timeout_ms=1000``), and the controller fence them."""
        self.now[0] += 600
        for b in keep:
            self.heartbeat(b)
        self.now[0] += 600
        self.commit()  # fences the silent ones
        self.commit()

    def close(self) -> None:
        self.committed.close()
        self.controller.log.close()


def lone_controller(directory: Path, **settings: Any) -> LoneController:
    log = MetadataLog(directory, flush=FlushPolicy.never())
    committed = CommittedMetadata(log)
    controller = QuorumController(
        1,
        committed,
        ControllerSettings(
            cluster_id="c", voters={1: Address("127.0.0.1", 9093)}, clock=lambda: now[0], **settings
        ),
    )
    now = [0.0]
    node = RaftNode(
        RaftConfig(node_id=1, voters=frozenset({1}), cluster_id="c"),
        log,
        FileQuorumStateStore(directory),
        NoPeers(),
        clock=lambda: now[0],
        rng=random.Random(3),
        listeners=[committed, controller],
    )
    controller.raft = node
    now[0] = 10_000.0  # past the first election timeout
    for _ in range(5):
        node.tick()
    assert controller.active
    lone = LoneController(controller, node, committed, now)
    lone.commit()  # what activation wrote (the bootstrap metadata.version)
    return lone
