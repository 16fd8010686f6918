"""ZooKeeper's Kafka metadata as KRaft records, following Kafka's mapping.

:func:`translate` turns a :class:`ZkSnapshot` into the records of the migration, in
this order: features (metadata.version), topics each followed by its partitions,
topic configs, broker configs, client quotas, SCRAM credentials,
the producer-id block, ACLs, delegation tokens. The transaction markers and the
ZkMigrationStateRecord around them are the copy's business (:mod:`.copy`).

Mapping decisions (the reference's table):

- topics pending deletion (``/admin/delete_topics``) and their configs are left out;
- a partition without a state znode gets Kafka's defaults: isr = replicas,
  leader = first replica, epochs 0; otherwise partition_epoch = the state znode's
  version;
- a topic without a topic id cannot be migrated (Kafka 2.8+ assigns them): CopyError;
- broker configs of ``<default>`` use the empty resource name; quota entities keep
  their desanitized names, ``<default>`` is an unset name;
- the producer-id record hands out the block after the last one in ZooKeeper;
- each ACL entry becomes one record with a fresh id;
- ZooKeeper brokers are not copied: each registers itself over RPC once it runs with
  the migration enabled (Kafka's way), with its real broker epoch; until then it is not
  a broker the controller may place replicas on.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

from migration.proto import metadata_pb2 as mpb
from migration.proto.metadata_pb2 import MetadataRecord
from migration.records.acls import acl_content, acl_values
from migration.records.codes import BROKER_RESOURCE, TOPIC_RESOURCE
from migration.records.quotas import quota_record
from migration.records.scram import credential_values
from migration.records.secrets import is_sensitive_config
from migration.records.tokens import token_values
from migration.records.uuids import new_uuid, uuid_bytes
from migration.records.versions import IBP_3_4_IV0 as MIGRATION_METADATA_VERSION
from migration.records.versions import METADATA_VERSION
from migration.zk import paths
from migration.zk.model import passwords
from migration.zk.model.topics import RECOVERED
from migration.zk.tree_read import ZkSnapshot

UNKNOWN_BROKER_EPOCH = -1


class CopyError(Exception):
    """ZooKeeper data that cannot become records; names the znode."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


@dataclass
class TranslateReport:
    """What the translation left out and decided, for the manifest."""

    metadata_version: int = MIGRATION_METADATA_VERSION
    metadata_version_source: str = "default"
    skipped: dict[str, int] = field(
        default_factory=lambda: {"topics_pending_deletion": 0, "orphan_topic_configs": 0}
    )
    records: Counter[str] = field(default_factory=Counter)  # by record type name


def metadata_version(snap: ZkSnapshot) -> tuple[int, str]:
    """The metadata.version to finalize: /feature's when present, else the highest that
    every registered broker supports, never below the first migration-capable one."""
    if snap.feature is not None and METADATA_VERSION in snap.feature.max_levels:
        return snap.feature.max_levels[METADATA_VERSION], paths.FEATURE
    supported = [
        b.features[METADATA_VERSION].max_version
        for b in snap.brokers.values()
        if METADATA_VERSION in b.features
    ]
    if supported:
        return max(min(supported), MIGRATION_METADATA_VERSION), "brokers' supported range"
    return MIGRATION_METADATA_VERSION, "default"


def translate(
    snap: ZkSnapshot,
    report: TranslateReport,
    password_encoder_secret: str | None = None,
    *,
    features: bool = True,
) -> Iterator[bytes]:
    """The migration's records, each a serialized MetadataRecord; counts them by type
    in ``report.records``. Password configs of brokers are decrypted with the brokers'
    ``password.encoder.secret`` (never copied as ciphertext): without it, or with the
    wrong one, CopyError names the config. ``features=False`` leaves out the feature
    levels (the live copy: a running quorum keeps the metadata.version it was formatted
    with, which cannot change during a migration)."""
    if features:
        yield from _counted(report, "FeatureLevelRecord", _features(snap, report))
    topics, rest = translate_parts(snap, report, password_encoder_secret)
    yield from topics
    yield from rest


def translate_parts(
    snap: ZkSnapshot,
    report: TranslateReport,
    password_encoder_secret: str | None = None,
    acl_ids: dict[bytes, bytes] | None = None,
) -> tuple[Iterator[bytes], list[bytes]]:
    """:func:`translate`'s records after the features, in two parts: the topics' and
    their partitions' (streamed, the bulk of any tree: only a topic without an id fails
    there, which :func:`~migration.bridge.preflight.refuse_uncopyable` refuses first),
    and every other record, translated by the time this returns (so a password that
    cannot be decrypted fails before a record is appended). ``acl_ids`` gets each ACL
    record's id by its :func:`~migration.records.acls.acl_content`."""
    live = {name for name in snap.topics if name not in snap.pending_deletions}
    secret = password_encoder_secret
    rest = [
        *_counted(report, "ConfigRecord", _configs(snap, live, report, secret)),
        *_counted(report, "ClientQuotaRecord", _quotas(snap)),
        *_counted(report, "UserScramCredentialRecord", _scram(snap)),
        *_counted(report, "ProducerIdsRecord", _producer_ids(snap)),
        *_counted(report, "AccessControlEntryRecord", _acls(snap, acl_ids)),
        *_counted(report, "DelegationTokenRecord", _tokens(snap)),
    ]
    return _topics(snap, report), rest


def translate_entities(snap: ZkSnapshot, password_encoder_secret: str | None) -> Iterator[bytes]:
    """The records of what a ZooKeeper-mode broker learns from ZooKeeper itself (configs,
    quotas, SCRAM, ACLs, delegation tokens), from a snapshot read with
    :data:`~migration.zk.reader.ENTITY_PARTS`: topic configs are kept whatever topics the
    snapshot holds. Without the secret, encrypted password configs stay as stored (they
    are only ever shown redacted)."""
    report = TranslateReport()
    yield from _configs(snap, set(snap.topic_configs), report, password_encoder_secret, True)
    yield from _quotas(snap)
    yield from _scram(snap)
    yield from _acls(snap)
    yield from _tokens(snap)


def _counted(report: TranslateReport, type_name: str, records: Iterator[bytes]) -> Iterator[bytes]:
    n = 0
    for n, encoded in enumerate(records, 1):  # noqa: B007 (n is the count afterwards)
        yield encoded
    if n:
        report.records[type_name] += n


def _features(snap: ZkSnapshot, report: TranslateReport) -> Iterator[bytes]:
    report.metadata_version, report.metadata_version_source = metadata_version(snap)
    levels = dict(snap.feature.max_levels) if snap.feature is not None else {}
    levels[METADATA_VERSION] = report.metadata_version
    for name, level in sorted(levels.items()):
        level_record = mpb.FeatureLevelRecord(name=name, feature_level=level)
        yield MetadataRecord(feature_level_record=level_record).SerializeToString()


def _topics(snap: ZkSnapshot, report: TranslateReport) -> Iterator[bytes]:
    """Topic and partition records (counted as they go)."""
    # One scratch record, every field assigned for each partition: the hot loop of the
    # copy (100k partitions) allocates no message per partition.
    scratch = MetadataRecord()
    p = scratch.partition_record
    for name, topic in snap.topics.items():
        if name in snap.pending_deletions:
            report.skipped["topics_pending_deletion"] += 1
            continue
        a = topic.assignment
        if a.topic_id is None:
            raise CopyError(
                paths.topic(name),
                "topic has no topic_id (written before Kafka 2.8); let a ZooKeeper controller "
                "on Kafka 2.8+ assign one before migrating",
            )
        try:
            tid = uuid_bytes(a.topic_id)
        except ValueError as exc:  # a snapshot not from the reader (which refuses these)
            raise CopyError(paths.topic(name), f"topic_id: {exc}") from None
        topic_record = mpb.TopicRecord(name=name, topic_id=tid)
        yield MetadataRecord(topic_record=topic_record).SerializeToString()
        report.records["TopicRecord"] += 1
        report.records["PartitionRecord"] += len(a.partitions)
        states, moving = topic.partitions, bool(a.adding or a.removing)
        p.topic_id = tid
        for pid, replicas in sorted(a.partitions.items()):
            snap_state = states.get(pid)
            state = snap_state.state if snap_state is not None else None
            p.partition_id = pid
            p.replicas[:] = replicas
            if moving:
                p.adding_replicas[:] = a.adding.get(pid, ())
                p.removing_replicas[:] = a.removing.get(pid, ())
            if snap_state is None or state is None:
                p.isr[:] = replicas
                p.leader, p.leader_epoch, p.leader_recovery_state = replicas[0], 0, RECOVERED
                p.partition_epoch = 0
            else:
                p.isr[:] = state.isr
                p.leader, p.leader_epoch = state.leader, state.leader_epoch
                p.leader_recovery_state = state.leader_recovery_state
                p.partition_epoch = snap_state.zk_version
            yield scratch.SerializeToString()
        if moving:
            del p.adding_replicas[:], p.removing_replicas[:]


def _configs(
    snap: ZkSnapshot,
    migrated: set[str],
    report: TranslateReport,
    secret: str | None,
    keep_ciphertext: bool = False,
) -> Iterator[bytes]:
    for topic, config in snap.topic_configs.items():
        if topic not in migrated:
            report.skipped["orphan_topic_configs"] += topic not in snap.pending_deletions
            continue
        for name, value in sorted(config.items()):
            yield _config(TOPIC_RESOURCE, topic, name, value)
    for broker, config in snap.broker_configs.items():
        for name, stored in sorted(config.items()):
            value = (
                _decrypted(broker, name, stored, secret)
                if is_sensitive_config(name)
                and passwords.is_encoded(stored)
                and not (keep_ciphertext and secret is None)
                else stored
            )
            yield _config(BROKER_RESOURCE, broker or "", name, value)


def _config(resource_type: int, resource_name: str, name: str, value: str) -> bytes:
    config = mpb.ConfigRecord(
        resource_type=resource_type, resource_name=resource_name, name=name, value=value
    )
    return MetadataRecord(config_record=config).SerializeToString()


def _decrypted(broker: str | None, name: str, value: str, secret: str | None) -> str:
    where = paths.config_entity("brokers", broker or paths.DEFAULT_ENTITY)
    if secret is None:
        raise CopyError(
            where,
            f"{name} is encrypted with the brokers' password.encoder.secret; give it to the "
            "copy (--password-encoder-secret-file, or password.encoder.secret in "
            "controller.properties): a password is never copied as ciphertext",
        )
    try:
        return passwords.decode(value, secret)
    except passwords.PasswordDecodeError as exc:
        raise CopyError(where, f"{name}: {exc}") from None


def _quotas(snap: ZkSnapshot) -> Iterator[bytes]:
    for entity, values in snap.quotas.items():
        for key, value in sorted(values.items()):
            record = quota_record(entity, key, value)
            yield MetadataRecord(client_quota_record=record).SerializeToString()


def _scram(snap: ZkSnapshot) -> Iterator[bytes]:
    for user, creds in snap.scram.items():
        for mechanism, c in sorted(creds.items()):
            credential = mpb.UserScramCredentialRecord(
                name=user, mechanism=mechanism, **credential_values(c)
            )
            yield MetadataRecord(user_scram_credential_record=credential).SerializeToString()


def _producer_ids(snap: ZkSnapshot) -> Iterator[bytes]:
    block = snap.producer_id_block
    if block is not None:
        ids = mpb.ProducerIdsRecord(
            broker_id=block.broker,
            broker_epoch=UNKNOWN_BROKER_EPOCH,
            next_producer_id=block.next_producer_id,
        )
        yield MetadataRecord(producer_ids_record=ids).SerializeToString()


def _acls(snap: ZkSnapshot, ids: dict[bytes, bytes] | None = None) -> Iterator[bytes]:
    for resource in snap.acls:
        for entry in resource.entries:
            acl = mpb.AccessControlEntryRecord(id=new_uuid(), **acl_values(resource, entry))
            if ids is not None:
                ids[acl_content(acl)] = acl.id
            yield MetadataRecord(access_control_entry_record=acl).SerializeToString()


def _tokens(snap: ZkSnapshot) -> Iterator[bytes]:
    for token_id, t in sorted(snap.delegation_tokens.items()):
        token = mpb.DelegationTokenRecord(token_id=token_id, **token_values(t))
        yield MetadataRecord(delegation_token_record=token).SerializeToString()
