"""Metric families every metadata-holding process shares: counts over a committed
image (Kafka's ControllerMetadataMetrics: topics, partitions, offline partitions,
brokers fenced and active, migrating ZooKeeper brokers, the ZkMigrationState, the
finalized features) and the Raft node's ``raft-metrics``.

Threading: called on the scrape thread. Images are immutable; a Raft node's fields are
single attributes replaced whole by its loop thread, so each value read is one the node
held (two values may come from consecutive moments: metrics tolerate that).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from prometheus_client.core import Metric

from migration.image.model import MetadataImage
from migration.image.publishing import ImageChange
from migration.observability import catalog as c
from migration.observability.exposition import gauge, labelled
from migration.raft.node import NO_LEADER, RaftNode
from migration.zk.model.topics import LEADER_NONE


@dataclass(frozen=True)
class ImageCounts:
    topics: int
    partitions: int
    offline: int
    fenced: int
    active: int
    migrating_zk: int

    @classmethod
    def of(cls, image: MetadataImage) -> ImageCounts:
        partitions = offline = 0
        for topic in image.topics.values():
            partitions += len(topic.partitions)
            offline += sum(1 for p in topic.partitions.values() if p.leader == LEADER_NONE)
        brokers = image.brokers.values()
        return cls(
            topics=len(image.topics),
            partitions=partitions,
            offline=offline,
            fenced=sum(1 for b in brokers if b.fenced),
            active=sum(1 for b in brokers if not b.fenced),
            migrating_zk=sum(1 for b in brokers if b.is_migrating_zk_broker),
        )


class LatestImage:
    """A publisher that keeps the newest committed image and its counts, counted once
    per image at the first scrape that sees it (a million partitions cost one pass per
    scrape interval at most, never one per commit)."""

    name = "metrics"

    def __init__(self) -> None:
        self.image = MetadataImage.EMPTY
        self._counted: tuple[MetadataImage, ImageCounts] | None = None
        self._lock = threading.Lock()

    def publish(self, change: ImageChange) -> None:
        self.image = change.image

    def counts(self) -> tuple[MetadataImage, ImageCounts]:
        with self._lock:  # two concurrent scrapes count once
            image, counted = self.image, self._counted
            if counted is None or counted[0] is not image:
                counted = (image, ImageCounts.of(image))
                self._counted = counted
            return counted


def image_families(image: MetadataImage, counts: ImageCounts) -> list[Metric]:
    return [
        gauge(c.GLOBAL_TOPICS, counts.topics),
        gauge(c.GLOBAL_PARTITIONS, counts.partitions),
        gauge(c.OFFLINE_PARTITIONS, counts.offline),
        features(image),
    ]


def broker_families(counts: ImageCounts) -> list[Metric]:
    return [
        gauge(c.FENCED_BROKERS, counts.fenced),
        gauge(c.ACTIVE_BROKERS, counts.active),
        gauge(c.MIGRATING_ZK_BROKER_COUNT, counts.migrating_zk),
    ]


def features(image: MetadataImage) -> Metric:
    return labelled(
        c.FEATURES, (((name, str(level)), 1.0) for name, level in sorted(image.features.items()))
    )


def raft_families(raft: RaftNode) -> list[Metric]:
    state = raft.role.value.lower() if raft.is_voter else "observer"
    leader = raft.leader_id
    vote = raft.voted_id
    commits = raft.metrics.commit_latency.summary()
    return [
        labelled(c.RAFT_CURRENT_STATE, [((state,), 1.0)]),
        gauge(c.RAFT_CURRENT_LEADER, NO_LEADER if leader is None else leader),
        gauge(c.RAFT_CURRENT_EPOCH, raft.epoch),
        gauge(c.RAFT_CURRENT_VOTE, NO_LEADER if vote is None else vote),
        gauge(c.RAFT_HIGH_WATERMARK, raft.high_watermark),
        gauge(c.RAFT_LOG_END_OFFSET, raft.log.end_offset),
        gauge(c.RAFT_COMMIT_LATENCY_AVG, commits.mean_ms),
        gauge(c.RAFT_COMMIT_LATENCY_MAX, commits.max_ms),
        gauge(c.RAFT_APPEND_RATE, raft.metrics.append_records.rate()),
        gauge(c.RAFT_FETCH_RATE, raft.metrics.fetch_records.rate()),
    ]
