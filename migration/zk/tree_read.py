"""ZkSnapshot: one consistent-enough read of a whole Kafka tree, as immutable values.

A snapshot is read once and never changes; decisions (preflight, the copy) are taken on
it, not on live ZooKeeper. Malformed znodes do not stop the read: each becomes a
:class:`ZnodeFormatError` in ``malformed`` and the rest of the tree is still read, so an
operator sees every problem at once. Consumers that must not proceed on bad data (the
copy) call :meth:`ZkSnapshot.raise_if_malformed`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Generic, TypeVar

from migration.zk import paths
from migration.zk.errors import ZnodeFormatError
from migration.zk.model.acls import ResourceAcls
from migration.zk.model.brokers import BrokerRegistration
from migration.zk.model.cluster import (
    ClusterId,
    ControllerZnode,
    FeatureZnode,
    MigrationZnode,
    ProducerIdBlock,
)
from migration.zk.model.configs import QuotaEntity, ScramCredential
from migration.zk.model.consumers import LegacyOffset
from migration.zk.model.tokens import DelegationToken
from migration.zk.model.topics import PartitionState, ReassignmentTarget, TopicAssignment


@dataclass(frozen=True, slots=True)
class PartitionSnapshot:
    """A partition's state znode and its stat version (Kafka's partition epoch);
    ``state`` is None when the state znode does not exist."""

    state: PartitionState | None
    zk_version: int


@dataclass(frozen=True, slots=True)
class TopicSnapshot:
    assignment: TopicAssignment
    partitions: dict[int, PartitionSnapshot]

    @property
    def name(self) -> str:
        return self.assignment.name


T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Versioned(Generic[T]):
    """A value and the stat version of the znode it came from (a fencing token)."""

    value: T
    zk_version: int


@dataclass(frozen=True)
class ZkSnapshot:
    chroot: str = ""
    cluster_id: ClusterId | None = None
    controller: ControllerZnode | None = None
    controller_epoch: Versioned[int] | None = None
    migration: Versioned[MigrationZnode] | None = None
    feature: FeatureZnode | None = None
    producer_id_block: ProducerIdBlock | None = None
    brokers: dict[int, BrokerRegistration] = field(default_factory=dict)
    broker_seqid_version: int | None = None
    topics: dict[str, TopicSnapshot] = field(default_factory=dict)
    pending_deletions: frozenset[str] = frozenset()
    reassignment: tuple[ReassignmentTarget, ...] = ()
    topic_configs: dict[str, dict[str, str]] = field(default_factory=dict)
    broker_configs: dict[str | None, dict[str, str]] = field(default_factory=dict)
    quotas: dict[QuotaEntity, dict[str, float]] = field(default_factory=dict)
    scram: dict[str, dict[int, ScramCredential]] = field(default_factory=dict)
    acls: tuple[ResourceAcls, ...] = ()
    delegation_tokens: dict[str, DelegationToken] = field(default_factory=dict)
    legacy_offsets: tuple[LegacyOffset, ...] = ()
    malformed: tuple[ZnodeFormatError, ...] = ()
    znodes_read: int = 0
    """How many znodes the reader read the data of: the Kafka znodes it knows that exist
    (ZooKeeper's own ``/zookeeper``, listings and znodes asked for but absent are not
    counted; nor are znodes Kafka does not define, which the reader never asks for)."""
    config_znodes: frozenset[str] = field(default=frozenset(), compare=False)
    """Every config znode that exists (``/config/<type>/<name>``, the user-client ones
    and their ``clients`` parents), empty ones included: the full sync creates, sets or
    deletes by it. Left out of equality: its content is in the fields above."""
    znode_versions: dict[str, int] = field(default_factory=dict, compare=False)
    """The stat version of every config and ACL znode read: what a read-modify-write of
    one (a ZooKeeper-mode broker's admin request) checks it still has."""

    @cached_property
    def topic_config_names(self) -> frozenset[str]:
        """The topics with a config znode (read, or listed though empty)."""
        prefix = paths.TOPIC_CONFIGS
        listed = (p[len(prefix) :] for p in self.config_znodes if p.startswith(prefix))
        return frozenset(self.topic_configs.keys()).union(listed)

    @cached_property
    def entity_config_znodes(self) -> frozenset[str]:
        """:attr:`config_znodes` but the topics' (a few: brokers, users and their
        clients, clients, IPs), found once per snapshot: the sync after the copy asks
        inside the migration's pause, and a million-partition tree has 50,000 topic
        config znodes to pass over."""
        return frozenset(p for p in self.config_znodes if not p.startswith(paths.TOPIC_CONFIGS))

    @property
    def partition_count(self) -> int:
        return sum(len(t.assignment.partitions) for t in self.topics.values())

    def raise_if_malformed(self) -> None:
        """Raise the first malformed znode's error (the copy refuses bad data)."""
        if self.malformed:
            raise self.malformed[0]

    def counts(self) -> dict[str, int]:
        """How many entities of each kind the snapshot holds (for reports)."""
        acl_entries = sum(len(r.entries) for r in self.acls)
        return dict(
            brokers=len(self.brokers),
            topics=len(self.topics),
            partitions=self.partition_count,
            topic_configs=sum(len(c) for c in self.topic_configs.values()),
            broker_configs=sum(len(c) for c in self.broker_configs.values()),
            quota_entities=len(self.quotas),
            scram_credentials=sum(len(c) for c in self.scram.values()),
            acl_entries=acl_entries,
            delegation_tokens=len(self.delegation_tokens),
            pending_deletions=len(self.pending_deletions),
            legacy_offsets=len(self.legacy_offsets),
            malformed=len(self.malformed),
        )


def canonical(snap: ZkSnapshot) -> ZkSnapshot:
    """``snap`` with its ordered collections in the canonical order the reader uses
    (ACLs by pattern, resource type and name; legacy offsets by group, topic, partition)."""
    return replace(
        snap,
        acls=tuple(
            sorted(snap.acls, key=lambda a: (a.pattern_type, a.resource_type, a.resource_name))
        ),
        legacy_offsets=tuple(
            sorted(snap.legacy_offsets, key=lambda o: (o.group, o.topic, o.partition))
        ),
    )
