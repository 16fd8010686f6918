"""MetadataDelta: the changes that records make to a base image.

A delta replays records against its base image (validating each against the state it
would produce, including the delta's own earlier changes) and builds the next image
with :meth:`MetadataDelta.apply`. Its fields say what changed, which is what
publishers (the ZooKeeper dual-writer, brokers) act on. Not thread-safe; one delta is
owned by one loader.

Kafka's replay rules, as applied here: a topic name and a topic id are unique; a
partition belongs to an existing topic; a PartitionChangeRecord bumps the partition
epoch, and the leader epoch when the leader or the replicas change; removing a topic
removes its partitions and configs; a ConfigRecord without a value deletes the key;
producer ids only move forward; feature level 0 removes a feature.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from migration.common.shared_ids import shared_ids
from migration.common.text import shown
from migration.image.model import (
    AclImage,
    BrokerImage,
    ConfigKey,
    EndpointImage,
    MetadataImage,
    PartitionImage,
    ProducerIdsImage,
    QuotaKey,
    ScramImage,
    TokenImage,
    TopicImage,
)
from migration.image.persistent import CHUNK, PersistentMap, next_version
from migration.proto import metadata_pb2 as mpb
from migration.proto.metadata_pb2 import MetadataRecord
from migration.records.acls import acl_values
from migration.records.codes import TOPIC_RESOURCE
from migration.records.kinds import KINDS
from migration.records.quotas import record_entity
from migration.records.registration import endpoint_values, feature_range
from migration.records.scram import credential_values
from migration.records.tokens import token_values
from migration.records.uuids import uuid_text


class RecordApplyError(Exception):
    """A record that cannot apply to the image it meets (names offset and type)."""

    def __init__(self, offset: int, record_type: str, problem: str) -> None:
        super().__init__(f"offset {offset} ({record_type}): {problem}")
        self.offset = offset
        self.record_type = record_type
        self.problem = problem


@dataclass
class TopicDelta:
    """A topic created or changed by the delta; ``partitions`` holds changed ones only."""

    name: str
    topic_id: bytes
    base: TopicImage | None
    partitions: dict[int, PartitionImage] = field(default_factory=dict)

    def partition(self, pid: int) -> PartitionImage | None:
        found = self.partitions.get(pid)
        if found is None and self.base is not None:
            found = self.base.partitions.get(pid)
        return found

    def build(self) -> TopicImage:
        """The topic's next image; a topic of more than :data:`CHUNK` partitions keeps
        them in a PersistentMap, so a change to one copies a chunk, not all of them."""
        partitions: Mapping[int, PartitionImage] = (
            self.partitions
            if self.base is None
            else next_version(self.base.partitions, self.partitions, ())
        )
        if len(partitions) > CHUNK and not isinstance(partitions, PersistentMap):
            partitions = PersistentMap.of(partitions)
        return TopicImage(self.name, self.topic_id, partitions)


class MetadataDelta:
    def __init__(self, base: MetadataImage) -> None:
        self.base = base
        self.features: dict[str, int | None] = {}
        self.brokers: dict[int, BrokerImage | None] = {}
        self.topics: dict[bytes, TopicDelta] = {}
        self.deleted_topics: dict[bytes, str] = {}  # topic id -> name, topics of the base
        self._created_names: dict[str, bytes] = {}  # topics the delta created
        self.configs: dict[ConfigKey, dict[str, str | None]] = {}
        self.quotas: dict[QuotaKey, dict[str, float | None]] = {}
        self.scram: dict[tuple[str, int], ScramImage | None] = {}
        self.acls: dict[bytes, AclImage | None] = {}
        self.delegation_tokens: dict[str, TokenImage | None] = {}
        self.producer_ids: ProducerIdsImage | None = None
        self.zk_migration_state: int | None = None
        self.records = 0
        self.last_offset = base.offset
        self.last_epoch = base.epoch

    # --- replay -----------------------------------------------------------------------

    def replay(
        self, record: MetadataRecord, offset: int, epoch: int, which: str | None = None
    ) -> None:
        """Apply one record (not a transaction marker: the loader handles those).
        ``which`` is the envelope's oneof field when the caller already knows it."""
        which = which or record.WhichOneof("record")
        if which is None:
            raise RecordApplyError(offset, "?", "empty record envelope")
        handler = _HANDLERS.get(which)
        if handler is not None:
            try:
                handler(self, getattr(record, which))
            except _InvalidRecordError as exc:
                raise RecordApplyError(offset, KINDS[which].type_name, str(exc)) from None
        self.records += 1
        self.last_offset, self.last_epoch = offset, epoch

    def is_empty(self) -> bool:
        return self.records == 0

    # --- lookups through the delta -----------------------------------------------------

    def topic_id_of(self, name: str) -> bytes | None:
        tid = self._created_names.get(name)
        if tid is not None:
            return tid
        tid = self.base.topic_ids.get(name)
        return None if tid is None or tid in self.deleted_topics else tid

    def _topic(self, topic_id: bytes) -> TopicDelta:
        found = self.topics.get(topic_id)
        if found is not None:
            return found
        base = self.base.topics.get(topic_id)
        if base is None or topic_id in self.deleted_topics:
            raise _InvalidRecordError(f"unknown topic id {_uuid(topic_id)}")
        found = self.topics[topic_id] = TopicDelta(base.name, topic_id, base)
        return found

    def _broker(self, broker_id: int) -> BrokerImage:
        if broker_id in self.brokers:
            found = self.brokers[broker_id]
        else:
            found = self.base.brokers.get(broker_id)
        if found is None:
            raise _InvalidRecordError(f"broker {broker_id} is not registered")
        return found

    # --- handlers ---------------------------------------------------------------------

    def _topic_record(self, r: mpb.TopicRecord) -> None:
        if len(r.topic_id) != 16:
            raise _InvalidRecordError(f"topic id of {len(r.topic_id)} bytes")
        if self.topic_id_of(r.name) is not None:
            raise _InvalidRecordError(f"topic {shown(r.name)} already exists")
        exists = r.topic_id in self.topics or (
            r.topic_id in self.base.topics and r.topic_id not in self.deleted_topics
        )
        if exists:
            raise _InvalidRecordError(f"topic id {_uuid(r.topic_id)} is already in use")
        self.topics[r.topic_id] = TopicDelta(r.name, r.topic_id, None)
        self._created_names[r.name] = r.topic_id

    def _partition_record(self, r: mpb.PartitionRecord) -> None:
        topic = self._topic(r.topic_id)
        if not r.replicas:
            raise _InvalidRecordError(f"partition {r.partition_id} has no replicas")
        topic.partitions[r.partition_id] = PartitionImage(
            shared_ids(r.replicas),
            shared_ids(r.isr),
            shared_ids(r.removing_replicas),
            shared_ids(r.adding_replicas),
            r.leader,
            r.leader_recovery_state,
            r.leader_epoch,
            r.partition_epoch,
        )

    def _partition_change_record(self, r: mpb.PartitionChangeRecord) -> None:
        topic = self._topic(r.topic_id)
        old = topic.partition(r.partition_id)
        if old is None:
            raise _InvalidRecordError(f"unknown partition {topic.name}-{r.partition_id}")
        topic.partitions[r.partition_id] = changed_partition(old, r)

    def _remove_topic_record(self, r: mpb.RemoveTopicRecord) -> None:
        topic = self._topic(r.topic_id)
        del self.topics[r.topic_id]
        self._created_names.pop(topic.name, None)
        if topic.base is not None:
            self.deleted_topics[r.topic_id] = topic.name
        key = (TOPIC_RESOURCE, topic.name)
        entries = self.configs.setdefault(key, {})
        entries.update(dict.fromkeys([*self.base.configs.get(key, {}), *entries]))

    def _config_record(self, r: mpb.ConfigRecord) -> None:
        key = (r.resource_type, r.resource_name)
        self.configs.setdefault(key, {})[r.name] = r.value if r.HasField("value") else None

    def _client_quota_record(self, r: mpb.ClientQuotaRecord) -> None:
        entity: QuotaKey = tuple(sorted(record_entity(r.entity)))
        if not entity:
            raise _InvalidRecordError("client quota record names no entity")
        self.quotas.setdefault(entity, {})[r.key] = None if r.remove else r.value

    def _user_scram_credential_record(self, r: mpb.UserScramCredentialRecord) -> None:
        self.scram[(r.name, r.mechanism)] = ScramImage(**credential_values(r))

    def _remove_user_scram_credential_record(self, r: mpb.RemoveUserScramCredentialRecord) -> None:
        self.scram[(r.name, r.mechanism)] = None

    def _delegation_token_record(self, r: mpb.DelegationTokenRecord) -> None:
        self.delegation_tokens[r.token_id] = TokenImage(**token_values(r))

    def _remove_delegation_token_record(self, r: mpb.RemoveDelegationTokenRecord) -> None:
        self.delegation_tokens[r.token_id] = None

    def _access_control_entry_record(self, r: mpb.AccessControlEntryRecord) -> None:
        if len(r.id) != 16:
            raise _InvalidRecordError(f"ACL id of {len(r.id)} bytes")
        self.acls[r.id] = AclImage(**acl_values(r))

    def _remove_access_control_entry_record(self, r: mpb.RemoveAccessControlEntryRecord) -> None:
        present = self.acls[r.id] is not None if r.id in self.acls else r.id in self.base.acls
        if not present:
            raise _InvalidRecordError(f"no ACL with id {_uuid(r.id)}")
        self.acls[r.id] = None

    def _feature_level_record(self, r: mpb.FeatureLevelRecord) -> None:
        self.features[r.name] = r.feature_level or None

    def _producer_ids_record(self, r: mpb.ProducerIdsRecord) -> None:
        current = self.producer_ids or self.base.producer_ids
        if current is not None and r.next_producer_id <= current.next_producer_id:
            raise _InvalidRecordError(
                f"next producer id {r.next_producer_id} does not move past "
                f"{current.next_producer_id}"
            )
        self.producer_ids = ProducerIdsImage(r.broker_id, r.broker_epoch, r.next_producer_id)

    def _zk_migration_state_record(self, r: mpb.ZkMigrationStateRecord) -> None:
        self.zk_migration_state = r.zk_migration_state

    def _register_broker_record(self, r: mpb.RegisterBrokerRecord) -> None:
        self.brokers[r.broker_id] = BrokerImage(
            r.broker_id,
            r.incarnation_id,
            r.broker_epoch,
            tuple(EndpointImage(**endpoint_values(e)) for e in r.end_points),
            tuple(feature_range(f) for f in r.features),
            r.rack if r.HasField("rack") else None,
            r.fenced,
            r.in_controlled_shutdown,
            r.is_migrating_zk_broker,
        )

    def _unregister_broker_record(self, r: mpb.UnregisterBrokerRecord) -> None:
        self._broker(r.broker_id)
        self.brokers[r.broker_id] = None

    def _fence_broker_record(self, r: mpb.FenceBrokerRecord) -> None:
        self._change_broker(r.id, r.epoch, fenced=True)

    def _unfence_broker_record(self, r: mpb.UnfenceBrokerRecord) -> None:
        self._change_broker(r.id, r.epoch, fenced=False)

    def _broker_registration_change_record(self, r: mpb.BrokerRegistrationChangeRecord) -> None:
        self._change_broker(
            r.broker_id,
            r.broker_epoch,
            fenced=r.fenced if r.HasField("fenced") else None,
            in_controlled_shutdown=(
                r.in_controlled_shutdown if r.HasField("in_controlled_shutdown") else None
            ),
        )

    def _change_broker(
        self,
        broker_id: int,
        epoch: int,
        fenced: bool | None = None,
        in_controlled_shutdown: bool | None = None,
    ) -> None:
        broker = self._broker(broker_id)
        if broker.epoch != epoch:
            raise _InvalidRecordError(f"broker {broker_id} has epoch {broker.epoch}, not {epoch}")
        self.brokers[broker_id] = replace(
            broker,
            fenced=broker.fenced if fenced is None else fenced,
            in_controlled_shutdown=(
                broker.in_controlled_shutdown
                if in_controlled_shutdown is None
                else in_controlled_shutdown
            ),
        )

    # --- building the next image -------------------------------------------------------

    def apply(self) -> MetadataImage:
        """The image this delta leads to (the base when nothing changed)."""
        b = self.base
        if self.is_empty():
            return b
        topics, topic_ids = b.topics, b.topic_ids
        if self.topics or self.deleted_topics:  # new versions, sharing what is unchanged
            topics = next_version(
                b.topics, {tid: t.build() for tid, t in self.topics.items()}, self.deleted_topics
            )
            topic_ids = next_version(
                b.topic_ids,
                {t.name: tid for tid, t in self.topics.items()},
                self.deleted_topics.values(),
            )
        return MetadataImage(
            features=_merge(b.features, self.features),
            brokers=_merge(b.brokers, self.brokers),
            topics=topics,
            topic_ids=topic_ids,
            configs=_merge_nested(b.configs, self.configs),
            quotas=_merge_nested(b.quotas, self.quotas),
            scram=_merge(b.scram, self.scram),
            acls=_merge(b.acls, self.acls),
            delegation_tokens=_merge(b.delegation_tokens, self.delegation_tokens),
            producer_ids=self.producer_ids or b.producer_ids,
            zk_migration_state=(
                b.zk_migration_state if self.zk_migration_state is None else self.zk_migration_state
            ),
            offset=self.last_offset,
            epoch=self.last_epoch,
        )


class _InvalidRecordError(Exception):
    pass


def _uuid(raw: bytes) -> str:
    return uuid_text(raw) if len(raw) == 16 else raw.hex()


def _merge(base: Mapping[Any, Any], changes: Mapping[Any, Any]) -> Mapping[Any, Any]:
    """``base``'s next version: ``changes`` set, their None values removed."""
    if not changes:
        return base
    return next_version(
        base,
        {key: value for key, value in changes.items() if value is not None},
        [key for key, value in changes.items() if value is None and key in base],
    )


def _merge_nested(
    base: Mapping[Any, Mapping[str, Any]], changes: Mapping[Any, Mapping[str, Any]]
) -> Mapping[Any, Mapping[str, Any]]:
    if not changes:
        return base
    out = dict(base)
    for key, entries in changes.items():
        merged = _merge(out.get(key, {}), entries)
        if merged:
            out[key] = merged
        else:
            out.pop(key, None)
    return out


_HANDLERS: dict[str, Callable[[MetadataDelta, Any], None]] = {
    field: getattr(MetadataDelta, f"_{field}")
    for field in KINDS
    if hasattr(MetadataDelta, f"_{field}")
}
"""Records that change the image (a ``_<oneof field>`` method each); the rest (no-ops,
control records) pass through."""


def changed_partition(old: PartitionImage, r: mpb.PartitionChangeRecord) -> PartitionImage:
    """``old`` after the PartitionChangeRecord ``r``: the fields it sets replaced, the
    partition epoch bumped, and (Kafka's rule) the leader epoch bumped when the record
    names a leader, even the same one; nothing else bumps it. (Hot: every record of a
    controlled shutdown, replayed by every controller; one pass over the fields the
    record sets, half the time of asking for each.)"""
    replicas, isr, removing, adding, leader, recovery, leader_epoch, partition_epoch = old
    for descriptor, value in r.ListFields():
        name = descriptor.name
        if name == "isr":
            isr = shared_ids(value.ids)
        elif name == "leader":
            leader, leader_epoch = value, leader_epoch + 1
        elif name == "replicas":
            replicas = shared_ids(value.ids)
        elif name == "removing_replicas":
            removing = shared_ids(value.ids)
        elif name == "adding_replicas":
            adding = shared_ids(value.ids)
        elif name == "leader_recovery_state":
            recovery = value
    return PartitionImage(
        replicas, isr, removing, adding, leader, recovery, leader_epoch, partition_epoch + 1
    )
