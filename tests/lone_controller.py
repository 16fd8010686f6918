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
