"""The copy's catch-up: what changed in ZooKeeper between the pre-copy's read and the
claim, as records that turn what the open transaction holds into what ZooKeeper holds.

The live copy reads and translates the tree before it claims ``/controller``, under a
persistent recursive watch (:mod:`migration.zk.tree_watch`); after the claim it reads
again only the entities the watch named (:func:`~migration.zk.changes.targets_of`,
:func:`~migration.zk.reader.read_targets`). :func:`patched` is the pre-copy's snapshot
with those entities replaced; :func:`catch_up_records` the records between the two.

Contract of :func:`catch_up_records` (one rule, Kafka's translation, for both sides):
the targeted entities of each snapshot are translated by
:func:`~migration.bridge.translate.translate`, and the records are matched by what they
set (a topic by name and id, a partition by topic id and index, a config by resource
and name, a quota by entity and key, a credential by user and mechanism, an ACL by its
whole content, a token by id). A record of the new side that is missing or different
on the old is emitted; a key of the old side missing on the new is removed with Kafka's
removal record (RemoveTopicRecord, a ConfigRecord without value, a quota with
``remove``, RemoveUserScramCredentialRecord, RemoveAccessControlEntryRecord by the id
the pre-copy gave it, RemoveDelegationTokenRecord). A removed topic takes its
partitions and configs with it (Kafka's replay), so a topic deleted and created again
under the same name is removed and then written whole. Order: topic removals, then
the new side's records in the translation's order, then the other removals. Replayed
after the pre-copy's records, they give the image the new snapshot translates to.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, TypeVar

from migration.bridge.preflight import refuse_uncopyable
from migration.bridge.translate import TranslateReport, translate
from migration.proto.metadata_pb2 import MetadataRecord
from migration.records.acls import acl_content
from migration.records.codes import PATTERN_PREFIXED, RESOURCE_TYPE_NAMES, TOPIC_RESOURCE
from migration.zk import paths
from migration.zk.changes import Targets
from migration.zk.model.acls import ResourceAcls
from migration.zk.model.configs import QUOTA_ENTITY_TYPES
from migration.zk.reader import Reread, entity_name
from migration.zk.tree_read import TopicSnapshot, ZkSnapshot

Key = tuple[Any, ...]
K = TypeVar("K")
V = TypeVar("V")


def _quota_match(kind: str, name: str | None) -> Any:
    """Whether a quota entity belongs to config entity ``kind``/``name`` (a user's own
    and its user-client entities; a client's or an IP's alone)."""
    entity_type = QUOTA_ENTITY_TYPES[kind]
    if kind == "users":
        return lambda entity: entity[0] == (entity_type, name)
    return lambda entity: entity == ((entity_type, name),)


def _entity_name(kind: str, sanitized: str) -> str | None:
    return entity_name(paths.config_entity(kind, sanitized), sanitized)


def _put(mapping: dict[K, V], key: K, value: V | None) -> None:
    """``mapping[key] = value``, or no ``key`` when ``value`` is None."""
    mapping.pop(key, None)
    if value is not None:
        mapping[key] = value


def _under(path: str, roots: set[str]) -> bool:
    """Whether ``path`` is one of ``roots`` or below one (a walk up its own parents: as
    cheap with a thousand roots as with one)."""
    while path:
        if path in roots:
            return True
        path = path.rpartition("/")[0]
    return False


def patched(old: ZkSnapshot, targets: Targets, reread: Reread) -> ZkSnapshot:
    """``old`` with every entity ``targets`` names replaced by what ``reread`` found (an
    entity it did not find is gone), bookkeeping included (config znodes, versions)."""
    new = reread.snapshot
    topics = dict(old.topics)
    topic_configs = dict(old.topic_configs)
    deletions = set(old.pending_deletions)
    for name in targets.topics:
        _put(topics, name, new.topics.get(name))
        _put(topic_configs, name, new.topic_configs.get(name))
        deletions.discard(name)
        if name in new.pending_deletions:
            deletions.add(name)
    for (name, pid), state in reread.states.items():
        topic = topics.get(name)
        if topic is not None and pid in topic.assignment.partitions:
            topics[name] = TopicSnapshot(topic.assignment, {**topic.partitions, pid: state})
    broker_configs, quotas, scram = dict(old.broker_configs), dict(old.quotas), dict(old.scram)
    for kind, sanitized in targets.configs:
        entity = _entity_name(kind, sanitized)
        if kind == "brokers":
            _put(broker_configs, entity, new.broker_configs.get(entity))
            continue
        belongs = _quota_match(kind, entity)
        quotas = {e: v for e, v in quotas.items() if not belongs(e)}
        quotas.update((e, v) for e, v in new.quotas.items() if belongs(e))
        if kind == "users" and entity is not None:
            _put(scram, entity, new.scram.get(entity))
    acl_keys = set(targets.acls)
    acls = tuple(r for r in old.acls if _acl_target(r) not in acl_keys) + new.acls
    tokens = {t: v for t, v in old.delegation_tokens.items() if t not in targets.tokens}
    tokens.update(new.delegation_tokens)
    config_roots = {paths.config_entity(k, n) for k, n in targets.configs}
    config_roots.update(paths.config_entity("topics", n) for n in targets.topics)
    read_again = config_roots | {paths.acl_resource(*a) for a in targets.acls}
    versions = dict(old.znode_versions)
    config_znodes = set(old.config_znodes)
    if read_again:
        versions = {p: v for p, v in versions.items() if not _under(p, read_again)}
        config_znodes = {p for p in config_znodes if not _under(p, config_roots)}
    versions.update(new.znode_versions)
    return replace(
        old,
        topics=topics,
        topic_configs=topic_configs,
        pending_deletions=frozenset(deletions),
        broker_configs=broker_configs,
        quotas=quotas,
        scram=scram,
        acls=tuple(sorted(acls, key=lambda a: (a.pattern_type, a.resource_type, a.resource_name))),
        delegation_tokens=tokens,
        producer_id_block=(
            new.producer_id_block if targets.producer_id_block else old.producer_id_block
        ),
        config_znodes=frozenset(config_znodes | new.config_znodes),
        znode_versions=versions,
        znodes_read=old.znodes_read + new.znodes_read,
    )


def _acl_target(resource: ResourceAcls) -> tuple[bool, str, str]:
    """An ACL resource's target key (prefixed, resource type name, resource name)."""
    prefixed = resource.pattern_type == PATTERN_PREFIXED
    return (prefixed, RESOURCE_TYPE_NAMES[resource.resource_type], resource.resource_name)


def _mini(snap: ZkSnapshot, targets: Targets) -> ZkSnapshot:
    """Only the entities ``targets`` names, from ``snap`` (a topic targeted by a single
    partition keeps that partition alone, and no config)."""
    topics: dict[str, TopicSnapshot] = {
        name: snap.topics[name] for name in targets.topics if name in snap.topics
    }
    by_topic: dict[str, set[int]] = {}
    for name, pid in targets.partitions:
        by_topic.setdefault(name, set()).add(pid)
    for name, pids in by_topic.items():
        topic = snap.topics.get(name)
        if topic is None:
            continue
        a = topic.assignment
        kept = {p: r for p, r in a.partitions.items() if p in pids}
        assignment = replace(
            a,
            partitions=kept,
            adding={p: r for p, r in a.adding.items() if p in kept},
            removing={p: r for p, r in a.removing.items() if p in kept},
        )
        states = {p: s for p, s in topic.partitions.items() if p in kept}
        topics[name] = TopicSnapshot(assignment, states)
    belongs = [_quota_match(k, _entity_name(k, n)) for k, n in targets.configs if k != "brokers"]
    users = {_entity_name(k, n) for k, n in targets.configs if k == "users"}
    brokers = {_entity_name(k, n) for k, n in targets.configs if k == "brokers"}
    return ZkSnapshot(
        chroot=snap.chroot,
        cluster_id=snap.cluster_id,
        brokers=snap.brokers,
        topics=topics,
        pending_deletions=snap.pending_deletions & set(topics),
        topic_configs={n: c for n, c in snap.topic_configs.items() if n in targets.topics},
        broker_configs={n: c for n, c in snap.broker_configs.items() if n in brokers},
        quotas={e: v for e, v in snap.quotas.items() if any(b(e) for b in belongs)},
        scram={u: c for u, c in snap.scram.items() if u in users},
        acls=tuple(r for r in snap.acls if _acl_target(r) in targets.acls),
        delegation_tokens={t: v for t, v in snap.delegation_tokens.items() if t in targets.tokens},
        producer_id_block=snap.producer_id_block if targets.producer_id_block else None,
    )


def _key(record: MetadataRecord) -> Key:
    """What ``record`` sets (the module doc's matching)."""
    which = record.WhichOneof("record")
    r: Any = getattr(record, which or "")
    match which:
        case "topic_record":
            return (which, r.name, r.topic_id)
        case "partition_record":
            return (which, r.topic_id, r.partition_id)
        case "config_record":
            return (which, r.resource_type, r.resource_name, r.name)
        case "client_quota_record":
            parts = tuple((e.entity_type, e.entity_name or None) for e in r.entity)
            return (which, parts, r.key)
        case "user_scram_credential_record":
            return (which, r.name, r.mechanism)
        case "access_control_entry_record":
            return (which, acl_content(r))
        case "delegation_token_record":
            return (which, r.token_id)
        case _:
            return (which,)  # the producer-id block: one per cluster


def _removal(key: Key, old: MetadataRecord, acl_ids: dict[bytes, bytes]) -> MetadataRecord | None:
    """Kafka's record removing what ``old`` set (None: nothing to remove)."""
    out = MetadataRecord()
    match key[0]:
        case "topic_record":
            out.remove_topic_record.topic_id = old.topic_record.topic_id
        case "config_record":
            c = old.config_record
            out.config_record.CopyFrom(c)
            out.config_record.ClearField("value")
        case "client_quota_record":
            out.client_quota_record.CopyFrom(old.client_quota_record)
            out.client_quota_record.value = 0.0
            out.client_quota_record.remove = True
        case "user_scram_credential_record":
            s = old.user_scram_credential_record
            out.remove_user_scram_credential_record.name = s.name
            out.remove_user_scram_credential_record.mechanism = s.mechanism
        case "access_control_entry_record":
            out.remove_access_control_entry_record.id = acl_ids.pop(key[1])
        case "delegation_token_record":
            out.remove_delegation_token_record.token_id = old.delegation_token_record.token_id
        case _:
            return None  # a partition goes with its topic; the producer-id block stays
    return out


def _translated(snap: ZkSnapshot, secret: str | None) -> dict[Key, MetadataRecord]:
    out: dict[Key, MetadataRecord] = {}
    for raw in translate(snap, TranslateReport(), secret, features=False):
        record = MetadataRecord.FromString(raw)
        out[_key(record)] = record
    return out


def catch_up_records(
    old: ZkSnapshot,
    new: ZkSnapshot,
    targets: Targets,
    acl_ids: dict[bytes, bytes],
    secret: str | None = None,
) -> list[MetadataRecord]:
    """The records from ``old``'s targeted entities to ``new``'s (the module doc).
    ``acl_ids``: each ACL the transaction holds, by :func:`acl_content`, its id; kept in
    step (removed ACLs leave it, added ones join it). Raises the copy's errors for bad
    data on the new side (a malformed znode, a topic without an id: CopyRefusedError; a
    password that cannot be decrypted: CopyError)."""
    fresh = _mini(new, targets)
    refuse_uncopyable(replace(fresh, malformed=new.malformed))
    before, after = _translated(_mini(old, targets), secret), _translated(fresh, secret)
    removed_topics = {
        k[2]: k[1] for k in before if k[0] == "topic_record" and k not in after
    }  # id -> name
    out: list[MetadataRecord] = []
    for key in [k for k in before if k[0] == "topic_record" and k not in after]:
        removal = _removal(key, before.pop(key), acl_ids)
        assert removal is not None
        out.append(removal)
    names = set(removed_topics.values())
    before = {
        k: r
        for k, r in before.items()
        if not (k[0] == "partition_record" and k[1] in removed_topics)
        and not (k[0] == "config_record" and k[1] == TOPIC_RESOURCE and k[2] in names)
    }
    for key, record in after.items():
        if key not in before or (key[0] != "access_control_entry_record" and before[key] != record):
            out.append(record)
            if key[0] == "access_control_entry_record":
                acl_ids[key[1]] = record.access_control_entry_record.id
    for key, record in before.items():
        if key not in after and (removal := _removal(key, record, acl_ids)) is not None:
            out.append(removal)
    return out
