"""MetadataImage and its parts: immutable values, shared between images where unchanged.

No mapping in an image is mutated after the image is built: the topic maps (100,000s
of entries at a million partitions) and a large topic's partitions are
:class:`PersistentMap` versions that share all but what a change touched; the rest are
plain dicts, replaced whole when something in them changes. So images can be handed to
other threads and compared with ``==``. ``offset`` and ``epoch`` say which log position
an image reflects; they are provenance, not content, and take no part in equality.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import ClassVar, NamedTuple

from migration.image.persistent import PersistentMap

QuotaKey = tuple[tuple[str, str | None], ...]
"""A client-quota entity: ((entity_type, name or None for the default), ...), sorted."""

ConfigKey = tuple[int, str]
"""(ConfigResource type code, resource name); name "" is the cluster default broker."""

# Kafka's ZkMigrationState (what the KafkaController ZkMigrationState gauge reports).
ZK_MIGRATION_NONE, ZK_MIGRATION_MIGRATION, ZK_MIGRATION_PRE, ZK_MIGRATION_POST, ZK_MIGRATION_ZK = (
    range(5)
)

_EMPTY: Mapping[object, object] = MappingProxyType({})


class PartitionImage(NamedTuple):
    """One partition (a tuple: the image holds 100,000s and builds them on replay)."""

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    removing_replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    leader: int
    leader_recovery_state: int
    leader_epoch: int
    partition_epoch: int


@dataclass(frozen=True, slots=True)
class TopicImage:
    name: str
    topic_id: bytes
    partitions: Mapping[int, PartitionImage]


@dataclass(frozen=True, slots=True)
class EndpointImage:
    name: str
    host: str
    port: int
    security_protocol: int


@dataclass(frozen=True, slots=True)
class BrokerImage:
    broker_id: int
    incarnation_id: bytes
    epoch: int
    endpoints: tuple[EndpointImage, ...]
    features: tuple[tuple[str, int, int], ...]  # (name, min, max) supported
    rack: str | None
    fenced: bool
    in_controlled_shutdown: bool
    is_migrating_zk_broker: bool


@dataclass(frozen=True, slots=True)
class ScramImage:
    """SCRAM material; secret, so its repr shows none of it."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def __repr__(self) -> str:
        return f"ScramImage(iterations={self.iterations}, <redacted>)"


@dataclass(frozen=True, slots=True)
class AclImage:
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int


@dataclass(frozen=True, slots=True)
class TokenImage:
    owner: str
    requester: str
    renewers: tuple[str, ...]
    issue_timestamp: int
    max_timestamp: int
    expiration_timestamp: int


@dataclass(frozen=True, slots=True)
class ProducerIdsImage:
    broker_id: int
    broker_epoch: int
    next_producer_id: int


@dataclass(frozen=True)
class MetadataImage:
    features: Mapping[str, int] = field(default_factory=dict)
    brokers: Mapping[int, BrokerImage] = field(default_factory=dict)
    topics: Mapping[bytes, TopicImage] = field(default_factory=PersistentMap)
    topic_ids: Mapping[str, bytes] = field(default_factory=PersistentMap)  # name -> topic id
    configs: Mapping[ConfigKey, Mapping[str, str]] = field(default_factory=dict)
    quotas: Mapping[QuotaKey, Mapping[str, float]] = field(default_factory=dict)
    scram: Mapping[tuple[str, int], ScramImage] = field(default_factory=dict)  # (user, mechanism)
    acls: Mapping[bytes, AclImage] = field(default_factory=dict)
    delegation_tokens: Mapping[str, TokenImage] = field(default_factory=dict)
    producer_ids: ProducerIdsImage | None = None
    zk_migration_state: int = ZK_MIGRATION_NONE
    offset: int = field(default=-1, compare=False)  # last log offset reflected
    epoch: int = field(default=0, compare=False)  # leader epoch of that offset

    EMPTY: ClassVar[MetadataImage]

    def topic(self, name: str) -> TopicImage | None:
        topic_id = self.topic_ids.get(name)
        return self.topics[topic_id] if topic_id is not None else None

    def config(self, resource_type: int, name: str) -> Mapping[str, str]:
        found = self.configs.get((resource_type, name))
        return found if found is not None else _EMPTY  # type: ignore[return-value]

    @property
    def partition_count(self) -> int:
        return sum(len(t.partitions) for t in self.topics.values())

    def counts(self) -> dict[str, int]:
        """How many entities of each kind the image holds (for reports and checks)."""
        return dict(
            brokers=len(self.brokers),
            topics=len(self.topics),
            partitions=self.partition_count,
            config_entries=sum(len(c) for c in self.configs.values()),
            quota_entities=len(self.quotas),
            scram_credentials=len(self.scram),
            acl_entries=len(self.acls),
            delegation_tokens=len(self.delegation_tokens),
            features=len(self.features),
        )


MetadataImage.EMPTY = MetadataImage()
