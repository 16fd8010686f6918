"""The metrics of a broker process. Every broker: where its metadata comes from
(MetadataType). A ZooKeeper-mode broker that is the ZooKeeper controller: Kafka's
KafkaController gauges from its context (0 on the others, as Kafka reports them). A
KRaft-mode broker: the finalized features of its image and its Raft observer.

Threading: read at scrape time. The ZooKeeper controller's context dicts are mutated
by its own thread, so they are copied (one C-level operation each) before counting.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import Metric

from migration.broker.kraft_broker import KraftBroker
from migration.broker.zk_broker import ZkBroker
from migration.image.model import ZK_MIGRATION_ZK
from migration.observability import catalog as c
from migration.observability.exposition import gauge
from migration.server.node_metrics import features, raft_families
from migration.zk.model.topics import LEADER_NONE


class ZkBrokerCollector:
    def __init__(self, broker: ZkBroker) -> None:
        self.broker = broker

    def collect(self) -> Iterator[Metric]:
        yield gauge(c.METADATA_TYPE, self.broker.metadata_type)
        controller = self.broker.controller
        active = controller is not None and controller.active
        topics = partitions = offline = 0
        if controller is not None and active:
            assignments = controller.ctx.assignments.copy()
            states = controller.ctx.states.copy()
            topics = len(assignments)
            partitions = sum(len(a.partitions) for a in assignments.values())
            offline = sum(1 for state, _ in states.values() if state.leader == LEADER_NONE)
        yield gauge(c.ACTIVE_CONTROLLER_COUNT, 1 if active else 0)
        yield gauge(c.ZK_MIGRATION_STATE, ZK_MIGRATION_ZK if active else 0)
        yield gauge(c.GLOBAL_TOPICS, topics)
        yield gauge(c.GLOBAL_PARTITIONS, partitions)
        yield gauge(c.OFFLINE_PARTITIONS, offline)


class KraftBrokerCollector:
    def __init__(self, broker: KraftBroker) -> None:
        self.broker = broker

    def collect(self) -> Iterator[Metric]:
        yield gauge(c.METADATA_TYPE, self.broker.metadata_type)
        yield features(self.broker.image())
        yield from raft_families(self.broker.quorum.raft)
