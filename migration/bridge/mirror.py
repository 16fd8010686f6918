"""What ZooKeeper holds, as comparable values: for a :class:`MetadataImage` (what the
writer makes ZooKeeper hold) and for a :class:`ZkSnapshot` (what it holds now).

Both views answer the same questions, entity by entity, so that one planner
(:mod:`migration.bridge.plan`) compares any two of them: the previous image with the new
one (a delta, written behind KRaft) or ZooKeeper with an image (the full sync).

The canonical tree of an image -- what a full sync leaves and every delta keeps:

- each topic: ``/brokers/topics/T``, ``.../partitions``, ``.../partitions/P`` and
  ``.../partitions/P/state`` for every partition, and ``/config/topics/T`` (empty when
  the topic has no configs: ZooKeeper tools expect it);
- partition states carry the claimed ZooKeeper controller epoch, never a Raft epoch;
- every other config znode (brokers, users, clients, ips, user-clients) exists exactly
  when it holds something, except a user znode that is the parent of user-client
  quotas (and the ``clients`` znode between them);
- an ACL pattern's znode exists exactly when it has entries; tokens one znode each;
- ``/latest_producer_id_block`` holds the block after KRaft's next producer id (a full
  sync leaves a block whose next id is already at or above KRaft's next id as it is).

Content is compared as values, not bytes: JSON key order, ACL order and ids, the
partition states' controller epoch (unless it exceeds ours:
docs/field-bugs.md#fb-24) and the salt of encrypted passwords make no difference.

Views are immutable; an ``ImageView`` computes what it is asked lazily and caches it
(cheap on a delta that touches few entities of a large image). Not thread-safe.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Protocol

from migration.image.model import MetadataImage, PartitionImage
from migration.records import codes
from migration.records.acls import entry_values
from migration.records.scram import credential_values
from migration.records.secrets import is_sensitive_config
from migration.records.tokens import token_values
from migration.records.uuids import uuid_text
from migration.zk import paths
from migration.zk.model import configs, passwords
from migration.zk.model.acls import AclEntry
from migration.zk.model.cluster import ProducerIdBlock
from migration.zk.model.configs import QuotaEntity, ScramCredential
from migration.zk.model.tokens import DelegationToken
from migration.zk.model.topics import PartitionState, TopicAssignment
from migration.zk.render import entity_segment, quota_path
from migration.zk.tree_read import ZkSnapshot

AclPattern = tuple[int, int, str]
"""(pattern type, resource type, resource name): one ACL znode."""

ConfigContent = Mapping[str, object]
"""A config znode's meaning: config name -> value (str for topic and broker configs,
float for quotas, :class:`ScramCredential` for SCRAM mechanisms)."""

Moving = tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]
"""A partition's (replicas, adding replicas, removing replicas): its part of the topic
znode."""

PRODUCER_ID_BLOCK_SIZE = 1000
PASSWORD_UNREADABLE = "<password: not compared without password.encoder.secret>"
_CLIENTS = "/clients"
_BROKER_CONFIGS = f"{paths.CONFIG}/brokers/"


@dataclass(frozen=True, slots=True)
class MisstoredPassword:
    """A broker password config ZooKeeper holds in a form brokers cannot use with this
    secret; it equals no value, so the sync rewrites it (never shown: it is a secret)."""

    how: str


class ZkView(Protocol):
    """One side of a comparison (see the module doc)."""

    def topic_names(self) -> Iterable[str]: ...

    def assignment(self, name: str) -> TopicAssignment | None:
        """The topic znode's content; None when the topic is absent."""

    def moving(self, name: str, pid: int) -> Moving | None: ...

    def state(self, name: str, pid: int) -> PartitionState | None: ...

    def topic_tree(self, name: str) -> frozenset[str]:
        """Every znode that exists under (and including) ``/brokers/topics/<name>``."""

    def config_paths(self) -> Iterable[str]: ...

    def config(self, path: str) -> ConfigContent | None:
        """A config znode's content; None when the znode is absent."""

    def acl_patterns(self) -> Iterable[AclPattern]: ...

    def acl_entries(self, pattern: AclPattern) -> frozenset[AclEntry]: ...

    def token_ids(self) -> Iterable[str]: ...

    def token(self, token_id: str) -> DelegationToken | None: ...

    def producer_block(self) -> ProducerIdBlock | None: ...

    def pending_deletions(self) -> frozenset[str]: ...


def canonical_topic_tree(name: str, pids: Iterable[int]) -> frozenset[str]:
    tree = {paths.topic(name), paths.topic_partitions(name)}
    for pid in pids:
        tree.add(paths.partition(name, pid))
        tree.add(paths.partition_state(name, pid))
    return frozenset(tree)


def user_of_client_path(path: str) -> str | None:
    """``/config/users/<u>`` for a user-client znode or its ``clients`` parent."""
    if not path.startswith("/config/users/"):
        return None
    head, found, _ = path.partition(_CLIENTS)
    return head if found else None


def is_entity(path: str) -> bool:
    """True for a config entity znode, False for a user's ``clients`` parent."""
    return not path.endswith(_CLIENTS)


def render_config(path: str, content: ConfigContent, secret: str | None) -> bytes:
    """A config znode's bytes in Kafka's format: password configs of brokers encrypted
    with ``password.encoder.secret``, quotas as Kafka writes them
    (``configs.render_quota``), SCRAM as ``salt=..,stored_key=..,server_key=..,iterations=N``."""
    if not is_entity(path):
        return b""
    out: dict[str, str] = {}
    for name, value in content.items():
        if isinstance(value, ScramCredential):
            out[name] = configs.render_scram(value)
        elif isinstance(value, float):
            out[name] = configs.render_quota(name, value)
        elif path.startswith("/config/brokers/") and is_sensitive_config(name):
            if secret is None or value == PASSWORD_UNREADABLE:
                raise ValueError(
                    f"{path}: {name} is a password config; it is written encrypted with "
                    "password.encoder.secret, which this writer was not given"
                )
            out[name] = passwords.encode(str(value), secret)
        else:
            out[name] = str(value)
    return configs.render_entity_config(out)


class _AclLookups:
    """The ACL half of both views, over a pattern -> entries index built once."""

    def _acl_index(self) -> dict[AclPattern, frozenset[AclEntry]]:
        raise NotImplementedError

    @cached_property
    def _acls(self) -> dict[AclPattern, frozenset[AclEntry]]:
        return self._acl_index()

    def acl_patterns(self) -> Iterable[AclPattern]:
        return self._acls.keys()

    def acl_entries(self, pattern: AclPattern) -> frozenset[AclEntry]:
        return self._acls.get(pattern, frozenset())


# --- an image --------------------------------------------------------------------------


class ImageView(_AclLookups):
    """What the canonical tree of ``image`` holds (partition states name
    ``zk_controller_epoch``). Broker password configs are compared in clear and need
    ``secret`` only to be rendered."""

    def __init__(self, image: MetadataImage, zk_controller_epoch: int, secret: str | None):
        self.image = image
        self.zk_controller_epoch = zk_controller_epoch
        self.secret = secret
        self._assignments: dict[str, TopicAssignment | None] = {}
        self._last_topic: tuple[str | None, Mapping[int, PartitionImage]] = (None, {})

    def topic_names(self) -> Iterable[str]:
        return self.image.topic_ids.keys()

    def _partition(self, name: str, pid: int) -> PartitionImage | None:
        if name != self._last_topic[0]:  # the planner asks topic by topic
            topic = self.image.topic(name)
            self._last_topic = (name, topic.partitions if topic is not None else {})
        return self._last_topic[1].get(pid)

    def assignment(self, name: str) -> TopicAssignment | None:
        if name not in self._assignments:
            topic = self.image.topic(name)
            self._assignments[name] = (
                None
                if topic is None
                else TopicAssignment(
                    name,
                    {pid: p.replicas for pid, p in sorted(topic.partitions.items())},
                    uuid_text(topic.topic_id),
                    {
                        pid: p.adding_replicas
                        for pid, p in topic.partitions.items()
                        if p.adding_replicas
                    },
                    {
                        pid: p.removing_replicas
                        for pid, p in topic.partitions.items()
                        if p.removing_replicas
                    },
                )
            )
        return self._assignments[name]

    def moving(self, name: str, pid: int) -> Moving | None:
        p = self._partition(name, pid)
        return None if p is None else (p.replicas, p.adding_replicas, p.removing_replicas)

    def state(self, name: str, pid: int) -> PartitionState | None:
        p = self._partition(name, pid)
        if p is None:
            return None
        return PartitionState(
            p.leader, p.leader_epoch, self.zk_controller_epoch, p.isr, p.leader_recovery_state
        )

    def topic_tree(self, name: str) -> frozenset[str]:
        topic = self.image.topic(name)
        return frozenset() if topic is None else canonical_topic_tree(name, topic.partitions)

    @cached_property
    def _configs(self) -> dict[str, ConfigContent]:
        """The config znodes of quotas and SCRAM credentials (topics' and brokers' are
        looked up directly)."""
        out: dict[str, dict[str, object]] = {}
        for entity, values in self.image.quotas.items():
            path = quota_znode(entity)
            out.setdefault(path, {}).update(values)
            user = user_of_client_path(path)
            if user is not None:
                out.setdefault(user, {})
                out.setdefault(user + _CLIENTS, {})
        for (user, mechanism), s in self.image.scram.items():
            path = paths.config_entity("users", entity_segment(user))
            out.setdefault(path, {})[codes.SCRAM_MECHANISM_NAMES[mechanism]] = ScramCredential(
                mechanism, **credential_values(s)
            )
        return dict(out)

    def config_paths(self) -> Iterable[str]:
        topics = {n for (t, n) in self.image.configs if t == codes.TOPIC_RESOURCE}
        topics.update(self.image.topic_ids)
        yield from (paths.TOPIC_CONFIGS + name for name in topics)
        for kind, name in self.image.configs:
            if kind == codes.BROKER_RESOURCE:
                yield paths.config_entity("brokers", entity_segment(name or None))
        yield from self._configs

    def config(self, path: str) -> ConfigContent | None:
        """A config znode's content, topics' and brokers' looked up directly (a scan of
        every config of a million-partition image: 16 ms inside the migration's pause)."""
        if path.startswith(paths.TOPIC_CONFIGS):
            name = path[len(paths.TOPIC_CONFIGS) :]
            config = self.image.configs.get((codes.TOPIC_RESOURCE, name))
            if config is None and name not in self.image.topic_ids:
                return None
            return dict(config or {})
        if not path.startswith(_BROKER_CONFIGS):
            return self._configs.get(path)
        segment = path[len(_BROKER_CONFIGS) :]
        broker = "" if segment == paths.DEFAULT_ENTITY else configs.desanitize(segment)
        stored = self.image.configs.get((codes.BROKER_RESOURCE, broker))
        if stored is None or entity_segment(broker or None) != segment:
            return None
        found = dict(stored)
        if self.secret is not None:
            return found
        return {  # compared without the secret: a password config's presence only
            k: PASSWORD_UNREADABLE if is_sensitive_config(k) else v for k, v in found.items()
        }

    def _acl_index(self) -> dict[AclPattern, frozenset[AclEntry]]:
        grouped: dict[AclPattern, set[AclEntry]] = {}
        for a in self.image.acls.values():
            grouped.setdefault((a.pattern_type, a.resource_type, a.resource_name), set()).add(
                AclEntry(**entry_values(a))
            )
        return {k: frozenset(v) for k, v in grouped.items()}

    def token_ids(self) -> Iterable[str]:
        return self.image.delegation_tokens.keys()

    def token(self, token_id: str) -> DelegationToken | None:
        t = self.image.delegation_tokens.get(token_id)
        if t is None:
            return None
        return DelegationToken(token_id, **token_values(t))

    def producer_block(self) -> ProducerIdBlock | None:
        """The block after everything KRaft handed out, owned by no broker
        (docs/field-bugs.md#fb-09)."""
        ids = self.image.producer_ids
        if ids is None:
            return None
        start = ids.next_producer_id
        return ProducerIdBlock(-1, start, start + PRODUCER_ID_BLOCK_SIZE - 1)

    def pending_deletions(self) -> frozenset[str]:
        return frozenset()


def quota_znode(entity: tuple[tuple[str, str | None], ...]) -> str:
    """The znode of an image's quota entity (sorted by type: client-id before user),
    which ZooKeeper's model names user first."""
    ordered: QuotaEntity = tuple(sorted(entity, key=lambda e: e[0] != "user"))
    return quota_path(ordered)


# --- a ZooKeeper snapshot --------------------------------------------------------------


class SnapshotView(_AclLookups):
    """What ZooKeeper held when ``snap`` was read. ``trees`` gives the listed subtree of
    topics whose tree is not the canonical one of their assignment (a missing state
    znode, a topic to delete); other topics' trees are derived from the snapshot.
    Broker password configs are decrypted with ``secret`` to be compared in clear."""

    def __init__(
        self,
        snap: ZkSnapshot,
        secret: str | None,
        trees: Mapping[str, frozenset[str]] | None = None,
    ) -> None:
        self.snap = snap
        self.secret = secret
        self.trees = trees or {}

    def topic_names(self) -> Iterable[str]:
        return self.snap.topics.keys()

    def assignment(self, name: str) -> TopicAssignment | None:
        topic = self.snap.topics.get(name)
        return topic.assignment if topic is not None else None

    def moving(self, name: str, pid: int) -> Moving | None:
        a = self.assignment(name)
        if a is None or pid not in a.partitions:
            return None
        return a.partitions[pid], a.adding.get(pid, ()), a.removing.get(pid, ())

    def state(self, name: str, pid: int) -> PartitionState | None:
        topic = self.snap.topics.get(name)
        found = topic.partitions.get(pid) if topic is not None else None
        return found.state if found is not None else None

    def topic_tree(self, name: str) -> frozenset[str]:
        listed = self.trees.get(name)
        if listed is not None:
            return listed
        topic = self.snap.topics.get(name)
        return frozenset() if topic is None else canonical_topic_tree(name, topic.partitions)

    def needs_listing(self, name: str, wanted: TopicAssignment | None) -> bool:
        """Whether making the topic ``wanted`` needs its real tree: it is deleted or
        re-created, a partition lacks its state znode, or ``wanted`` has partitions the
        topic znode does not list (their znodes may exist all the same)."""
        topic = self.snap.topics.get(name)
        if topic is None:
            return False
        if wanted is None or wanted.topic_id != topic.assignment.topic_id:
            return True
        return not set(wanted.partitions) <= set(topic.assignment.partitions) or any(
            p.state is None for p in topic.partitions.values()
        )

    @cached_property
    def _configs(self) -> dict[str, ConfigContent]:
        """Every config znode but the topics' (those are looked up directly)."""
        s = self.snap
        out: dict[str, dict[str, object]] = {path: {} for path in s.entity_config_znodes}
        for broker, config in s.broker_configs.items():
            path = paths.config_entity("brokers", entity_segment(broker))
            out.setdefault(path, {}).update(
                {k: self._password(v) if is_sensitive_config(k) else v for k, v in config.items()}
            )
        for entity, values in s.quotas.items():
            out.setdefault(quota_path(entity), {}).update(values)
        for user, creds in s.scram.items():
            entry = out.setdefault(paths.config_entity("users", entity_segment(user)), {})
            for mechanism, cred in creds.items():
                entry[codes.SCRAM_MECHANISM_NAMES[mechanism]] = cred
        return dict(out)

    def _password(self, stored: str) -> object:
        if not passwords.is_encoded(stored):
            return MisstoredPassword("in clear")  # rewritten encrypted: docs/field-bugs.md#fb-05
        if self.secret is None:
            return PASSWORD_UNREADABLE
        try:
            return passwords.decode(stored, self.secret)
        except passwords.PasswordDecodeError:
            return MisstoredPassword("encrypted with another secret")  # rewritten with ours

    def config_paths(self) -> Iterable[str]:
        yield from (paths.TOPIC_CONFIGS + name for name in self.snap.topic_config_names)
        yield from self._configs

    def entity_config_paths(self) -> Iterable[str]:
        """The config znodes of every entity but topics, and the user znodes an image of
        them renders (a user's client quota makes the user's and its ``clients``)."""
        for path in self._configs:
            yield path
            user = user_of_client_path(path)
            if user is not None:
                yield from (user, user + _CLIENTS)

    def config(self, path: str) -> ConfigContent | None:
        if path.startswith(paths.TOPIC_CONFIGS):  # looked up directly: a million-partition tree
            found = self.snap.topic_configs.get(path[len(paths.TOPIC_CONFIGS) :])  # has 50,000
            if found is None:
                return {} if path in self.snap.config_znodes else None
            return dict(found)
        return self._configs.get(path)

    def _acl_index(self) -> dict[AclPattern, frozenset[AclEntry]]:
        return {
            (r.pattern_type, r.resource_type, r.resource_name): frozenset(r.entries)
            for r in self.snap.acls
        }

    def token_ids(self) -> Iterable[str]:
        return self.snap.delegation_tokens.keys()

    def token(self, token_id: str) -> DelegationToken | None:
        return self.snap.delegation_tokens.get(token_id)

    def producer_block(self) -> ProducerIdBlock | None:
        return self.snap.producer_id_block

    def pending_deletions(self) -> frozenset[str]:
        return self.snap.pending_deletions
