"""The ZooKeeper controller's in-memory view of the cluster (Kafka's ControllerContext):
owned by the controller's event thread, never shared."""

from __future__ import annotations

from dataclasses import dataclass, field

from migration.zk.model.brokers import BrokerRegistration
from migration.zk.model.topics import PartitionState, TopicAssignment

TopicPartition = tuple[str, int]


@dataclass
class ControllerContext:
    """Live brokers (and their epochs: the registrations' czxids), assignments, partition
    states with their znode versions, and the brokers in controlled shutdown."""

    live: dict[int, BrokerRegistration] = field(default_factory=dict)
    broker_epochs: dict[int, int] = field(default_factory=dict)
    assignments: dict[str, TopicAssignment] = field(default_factory=dict)
    states: dict[TopicPartition, tuple[PartitionState, int]] = field(default_factory=dict)
    shutting_down: set[int] = field(default_factory=set)

    def partitions_of(self, broker: int) -> list[TopicPartition]:
        return [
            (t, p)
            for t, a in self.assignments.items()
            for p, replicas in a.partitions.items()
            if broker in replicas
        ]

    def usable(self) -> set[int]:
        return set(self.live) - self.shutting_down
