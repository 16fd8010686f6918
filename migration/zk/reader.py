"""Read a whole Kafka tree from ZooKeeper into a :class:`ZkSnapshot`.

The tree is crawled breadth first: each pass sends every read it knows of as pipelined
multi-read requests (ZooKeeper 3.6+; see :mod:`migration.zk.multiread`), and the
results name the reads of the next pass (topics -> partition states, ACL resource types
-> resources, ...). Five or six round-trip passes read any Kafka tree; the cost is then
the server's and the decoding, not the network's latency.

Consistency: ZooKeeper has no multi-znode snapshot reads; znodes created or deleted
while the crawl runs may or may not be seen (a znode that vanishes between listing and
reading is skipped). The migration reads while ZooKeeper's controller still serves,
under a persistent watch (:mod:`migration.zk.tree_watch`), and after the claim reads
again, with :func:`read_targets`, only what the watch named.

Errors: malformed data is collected in ``ZkSnapshot.malformed`` (never raised here); a
read refused by ZooKeeper (e.g. NoAuth) raises :class:`ZkReadError`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

from migration.common.gc_pause import gc_paused
from migration.common.text import PATH_LIMIT, shown
from migration.observability.progress import NullProgress, Progress
from migration.records.names import topic_name_problem
from migration.zk import paths
from migration.zk.changes import Targets
from migration.zk.client import NO_AUTH_REASON
from migration.zk.errors import ZnodeFormatError
from migration.zk.jute import ERR_NO_AUTH
from migration.zk.model import acls, brokers, cluster, configs, consumers, tokens, topics
from migration.zk.model.configs import QUOTA_ENTITY_TYPES, QuotaEntity
from migration.zk.multiread import NodeData, ReadError, ReadOp, ReadResult, TreeReader
from migration.zk.tree_read import (
    PartitionSnapshot,
    TopicSnapshot,
    Versioned,
    ZkSnapshot,
    canonical,
)

Handler = Callable[[str, ReadResult], None]
T = TypeVar("T")


class ZkReadError(RuntimeError):
    """ZooKeeper refused a read (other than 'no node'): names the path and the code."""

    def __init__(self, path: str, code: int) -> None:
        reason = NO_AUTH_REASON if code == ERR_NO_AUTH else f"error code {code}"
        super().__init__(
            f"{shown(path, PATH_LIMIT, bare=True)}: ZooKeeper refused the read ({reason})"
        )
        self.path = path
        self.code = code


PARTS = frozenset({"cluster", "brokers", "topics", "configs", "acls", "tokens", "consumers"})
ENTITY_PARTS = frozenset({"configs", "acls", "tokens"})
"""What a ZooKeeper-mode broker learns from ZooKeeper itself (through notifications)."""


def read_snapshot(
    client: TreeReader, progress: Progress | None = None, parts: frozenset[str] = PARTS
) -> ZkSnapshot:
    """Read the Kafka tree below ``client``'s chroot, or only the ``parts`` of it named
    (see :data:`PARTS`; the rest of the snapshot is left empty). See the module doc for
    guarantees."""
    unknown = parts - PARTS
    if unknown:
        raise ValueError(f"unknown snapshot parts {sorted(unknown)}; known: {sorted(PARTS)}")
    with gc_paused():
        return _Crawl(client, progress or NullProgress(), parts).run()


@dataclass(frozen=True)
class Reread:
    """What :func:`read_targets` read: ``snapshot`` holds each whole topic, config entity,
    ACL resource, token and the producer-id block targeted (one that no longer exists is
    absent from it); ``states`` each single partition targeted (``PartitionSnapshot(None,
    -1)``: it has no state znode)."""

    snapshot: ZkSnapshot
    states: dict[tuple[str, int], PartitionSnapshot]


def read_targets(client: TreeReader, targets: Targets) -> Reread:
    """Read again only what ``targets`` names (:mod:`migration.zk.changes`), as
    :func:`read_snapshot` reads it: the same parsing, malformed znodes collected in the
    snapshot's ``malformed``, :class:`ZkReadError` for a refused read."""
    crawl = _Crawl(client, NullProgress(), PARTS)
    tree = crawl.tree

    def pending_deletion(name: str) -> Handler:
        def handle(path: str, r: ReadResult) -> None:
            if isinstance(r, NodeData):
                tree.deletions.add(name)

        return handle

    def schedule() -> None:
        for name in sorted(targets.topics):
            crawl.on_topic(name)
            crawl.on_config_entity("topics", name)
            crawl.data(paths.delete_topic(name), pending_deletion(name))
        for name, pid in sorted(targets.partitions):
            tree.states.setdefault(name, {})
            crawl.data(paths.partition_state(name, pid), crawl.on_state)
        for kind, sanitized in sorted(targets.configs):
            crawl.on_config_entity(kind, sanitized)
        for prefixed, resource_type, name in sorted(targets.acls):
            crawl.on_acl(prefixed, resource_type, name)
        for token_id in sorted(targets.tokens):
            crawl.on_token(token_id)
        if targets.producer_id_block:
            crawl.singleton(paths.PRODUCER_ID_BLOCK, cluster.parse_producer_id_block)

    with gc_paused():
        snapshot = crawl.run(schedule)
    states = {(name, pid): tree.states[name][pid] for name, pid in targets.partitions}
    return Reread(snapshot, states)


def entity_name(path: str, sanitized: str) -> str | None:
    """A config entity's name from its znode's (None: the default entity)."""
    if sanitized == paths.DEFAULT_ENTITY:
        return None
    try:
        return configs.desanitize(sanitized)
    except UnicodeDecodeError:
        raise ZnodeFormatError(
            path, f"entity name {shown(sanitized)} is not a sanitized name"
        ) from None


@dataclass
class _Tree:
    """The mutable accumulator the crawl fills; frozen into a ZkSnapshot at the end."""

    singletons: dict[str, Versioned[Any]] = field(default_factory=dict)
    brokers: dict[int, brokers.BrokerRegistration] = field(default_factory=dict)
    assignments: dict[str, topics.TopicAssignment] = field(default_factory=dict)
    states: dict[str, dict[int, PartitionSnapshot]] = field(default_factory=dict)
    deletions: set[str] = field(default_factory=set)
    topic_configs: dict[str, dict[str, str]] = field(default_factory=dict)
    broker_configs: dict[str | None, dict[str, str]] = field(default_factory=dict)
    quotas: dict[QuotaEntity, dict[str, float]] = field(default_factory=dict)
    scram: dict[str, dict[int, configs.ScramCredential]] = field(default_factory=dict)
    acls: list[acls.ResourceAcls] = field(default_factory=list)
    tokens: dict[str, tokens.DelegationToken] = field(default_factory=dict)
    offsets: list[consumers.LegacyOffset] = field(default_factory=list)
    config_znodes: set[str] = field(default_factory=set)
    versions: dict[str, int] = field(default_factory=dict)
    malformed: list[ZnodeFormatError] = field(default_factory=list)


def _state_read(tree: _Tree, path: str, r: ReadResult) -> None:
    """A partition's state znode into ``tree``: at :func:`paths.partition_state` of a
    topic whose name is one znode's (no ``/`` in it)."""
    _, _, _, name, _, pid, _ = path.split("/")
    if isinstance(r, NodeData):
        state = topics.parse_partition_state(path, r.data)
        tree.states[name][int(pid)] = PartitionSnapshot(state, r.version)
    else:
        tree.states[name][int(pid)] = PartitionSnapshot(None, -1)


class _Crawl:
    def __init__(self, client: TreeReader, progress: Progress, parts: frozenset[str]) -> None:
        self.client = client
        self.parts = parts
        self.progress = progress
        # the reads of the next pass and, beside them, their handlers (a pass holds a
        # million partition states: a tuple of three and a closure each would cost as
        # much again as the read itself keeps)
        self.pending: list[tuple[ReadOp, str]] = []
        self.handlers: list[Handler] = []
        self.tree = _Tree()
        # one handler for every partition, holding the tree, not the crawl: a bound
        # method kept here would be a cycle, and a crawl that outlives its read (the
        # serving processes leave cycles to a daily walk) would keep the whole tree
        self.on_state: Handler = partial(_state_read, self.tree)
        self.znodes = 0  # znodes whose data was read (not listings, not absent ones)

    # --- scheduling ------------------------------------------------------------------

    def data(self, path: str, handler: Handler) -> None:
        self.pending.append((ReadOp.GET_DATA, path))
        self.handlers.append(handler)

    def children(self, path: str, on_child: Callable[[str], None]) -> None:
        """List ``path`` and call ``on_child(name)`` for each child (none if missing)."""

        def handle(p: str, result: ReadResult) -> None:
            if isinstance(result, tuple):
                for child in sorted(result):
                    on_child(child)

        self.pending.append((ReadOp.GET_CHILDREN, path))
        self.handlers.append(handle)

    def run(self, schedule: Callable[[], None] | None = None) -> ZkSnapshot:
        """Crawl from the reads ``schedule`` makes (the whole tree's roots by default)."""
        (schedule or self.schedule_roots)()
        level = 0
        while self.pending:
            level += 1
            ops, handlers = self.pending, self.handlers
            self.pending, self.handlers = [], []
            self.progress.stage(f"read pass {level}", len(ops))
            position = 0
            for results in self.client.iter_multi_read(ops):
                end = position + len(results)
                for (_, path), handler, result in zip(
                    ops[position:end], handlers[position:end], results, strict=True
                ):
                    self.handle(path, handler, result)
                position = end
                self.progress.advance(len(results))
        self.progress.done()
        return self.freeze()

    def handle(self, path: str, handler: Handler, result: ReadResult) -> None:
        if isinstance(result, ReadError) and not result.no_node:
            raise ZkReadError(self.client.chroot + path, result.code)
        if isinstance(result, NodeData):
            self.znodes += 1
        try:
            handler(path, result)
        except ZnodeFormatError as exc:  # bad data only: any other error is a bug, raised
            self.tree.malformed.append(exc)

    # --- pass 1: singletons and top-level listings -----------------------------------

    def singleton(self, path: str, parse: Callable[[str, bytes], object]) -> None:
        def handle(p: str, r: ReadResult) -> None:
            if isinstance(r, NodeData):
                self.tree.singletons[p] = Versioned(parse(p, r.data), r.version)

        self.data(path, handle)

    def schedule_roots(self) -> None:
        parts = self.parts
        if "cluster" in parts:
            self.singleton(paths.CLUSTER_ID, cluster.parse_cluster_id)
            self.singleton(paths.CONTROLLER, cluster.parse_controller)
            self.singleton(paths.CONTROLLER_EPOCH, cluster.parse_controller_epoch)
            self.singleton(paths.FEATURE, cluster.parse_feature)
            self.singleton(paths.PRODUCER_ID_BLOCK, cluster.parse_producer_id_block)
            self.singleton(paths.MIGRATION, cluster.parse_migration)
            self.singleton(paths.REASSIGN_PARTITIONS, topics.parse_reassignment)
        if "brokers" in parts:
            self.singleton(paths.BROKER_SEQID, lambda p, raw: raw)
            self.children(paths.BROKER_IDS, self.on_broker)
        if "topics" in parts:
            self.children(paths.TOPICS, self.on_topic)
            self.children(paths.DELETE_TOPICS, self.tree.deletions.add)
        if "configs" in parts:
            for entity_type in paths.CONFIG_ENTITY_TYPES:
                self.children(
                    f"{paths.CONFIG}/{entity_type}", partial(self.on_config_entity, entity_type)
                )
        if "acls" in parts:
            for prefixed, root in ((False, paths.ACL_LITERAL), (True, paths.ACL_PREFIXED)):
                self.children(root, partial(self.on_acl_type, prefixed))
        if "tokens" in parts:
            self.children(paths.DELEGATION_TOKENS, self.on_token)
        if "consumers" in parts:
            self.children(paths.CONSUMERS, self.on_consumer_group)

    # --- brokers and topics ----------------------------------------------------------

    def on_broker(self, name: str) -> None:
        def handle(path: str, r: ReadResult) -> None:
            if not name.isdecimal():
                raise ZnodeFormatError(path, f"broker id {shown(name)} is not an integer")
            if isinstance(r, NodeData):
                self.tree.brokers[int(name)] = brokers.parse_broker(path, r.data, int(name))

        self.data(
            paths.broker(int(name)) if name.isdecimal() else f"{paths.BROKER_IDS}/{name}", handle
        )

    def on_topic(self, name: str) -> None:
        def handle(path: str, r: ReadResult) -> None:
            problem = topic_name_problem(name)
            if problem:
                raise ZnodeFormatError(path, problem)
            if isinstance(r, NodeData):
                assignment = topics.parse_topic(path, r.data, name)
                self.tree.assignments[name] = assignment
                self.tree.states[name] = {}
                for pid in assignment.partitions:
                    self.data(paths.partition_state(name, pid), self.on_state)

        self.data(paths.topic(name), handle)

    # --- configs, quotas, SCRAM ------------------------------------------------------

    def on_config_entity(self, entity_type: str, sanitized: str) -> None:
        path = paths.config_entity(entity_type, sanitized)

        def handle(p: str, r: ReadResult) -> None:
            if not isinstance(r, NodeData):
                return
            self.tree.config_znodes.add(p)
            self.tree.versions[p] = r.version
            name = entity_name(p, sanitized)
            config = (
                configs.parse_entity_config(p, r.data, entity_type, name).config if r.data else {}
            )
            if entity_type == "topics":  # every topic has one, often empty
                self.tree.topic_configs[sanitized] = config
            elif entity_type == "brokers":
                if name is not None and not name.isdecimal():
                    raise ZnodeFormatError(
                        p, f"broker config entity {shown(name)} is not a broker id"
                    )
                if config:
                    self.tree.broker_configs[name] = config
            else:
                self.add_quota(p, ((QUOTA_ENTITY_TYPES[entity_type], name),), config)
                if entity_type == "users":
                    self.add_scram(p, name, config)
                    if r.num_children:
                        self.on_user_clients(p, name)

        self.data(path, handle)

    def on_user_clients(self, user_path: str, user: str | None) -> None:
        def handle(p: str, r: ReadResult) -> None:
            if isinstance(r, tuple):
                self.tree.config_znodes.add(p)
                for client in sorted(r):
                    self.on_user_client(user_path, user, client)

        self.pending.append((ReadOp.GET_CHILDREN, f"{user_path}/clients"))
        self.handlers.append(handle)

    def on_user_client(self, user_path: str, user: str | None, sanitized: str) -> None:
        def handle(p: str, r: ReadResult) -> None:
            if isinstance(r, NodeData):
                self.tree.config_znodes.add(p)
                self.tree.versions[p] = r.version
            if isinstance(r, NodeData) and r.data:
                config = configs.parse_entity_config(p, r.data, "users", user).config
                entity = (("user", user), ("client-id", entity_name(p, sanitized)))
                self.add_quota(p, entity, config)

        self.data(f"{user_path}/clients/{sanitized}", handle)

    def add_quota(self, path: str, entity: QuotaEntity, config: dict[str, str]) -> None:
        values = configs.quota_values(path, config)
        if values:
            self.tree.quotas[entity] = values

    def add_scram(self, path: str, user: str | None, config: dict[str, str]) -> None:
        creds = configs.scram_credentials(path, config)
        if creds:
            if user is None:
                raise ZnodeFormatError(
                    path, "the default user entity cannot hold SCRAM credentials"
                )
            self.tree.scram[user] = creds

    # --- ACLs, tokens, legacy consumers ----------------------------------------------

    def on_acl_type(self, prefixed: bool, resource_type: str) -> None:
        root = paths.ACL_PREFIXED if prefixed else paths.ACL_LITERAL
        self.children(f"{root}/{resource_type}", partial(self.on_acl, prefixed, resource_type))

    def on_acl(self, prefixed: bool, resource_type: str, name: str) -> None:
        def handle(p: str, r: ReadResult) -> None:
            if isinstance(r, NodeData):
                self.tree.versions[p] = r.version
                self.tree.acls.append(acls.parse_acls(p, r.data, resource_type, name, prefixed))

        self.data(paths.acl_resource(prefixed, resource_type, name), handle)

    def on_token(self, token_id: str) -> None:
        def handle(p: str, r: ReadResult) -> None:
            if isinstance(r, NodeData):
                self.tree.tokens[token_id] = tokens.parse_token(p, r.data)

        self.data(paths.delegation_token(token_id), handle)

    def on_consumer_group(self, group: str) -> None:
        offsets_root = f"{paths.consumer_group(group)}/offsets"

        def on_topic(topic: str) -> None:
            def on_partition(part: str) -> None:
                def handle(p: str, r: ReadResult) -> None:
                    if not part.isdecimal():
                        raise ZnodeFormatError(p, f"partition {shown(part)} is not a number")
                    if isinstance(r, NodeData):
                        self.tree.offsets.append(
                            consumers.parse_offset(p, r.data, group, topic, int(part))
                        )

                self.data(f"{offsets_root}/{topic}/{part}", handle)

            self.children(f"{offsets_root}/{topic}", on_partition)

        self.children(offsets_root, on_topic)

    # --- the result ------------------------------------------------------------------

    def freeze(self) -> ZkSnapshot:
        t = self.tree

        def versioned(path: str, kind: type[T]) -> Versioned[T] | None:
            v = t.singletons.get(path)
            return v if v is not None and isinstance(v.value, kind) else None

        def value(path: str, kind: type[T]) -> T | None:
            v = versioned(path, kind)
            return v.value if v is not None else None

        seqid = t.singletons.get(paths.BROKER_SEQID)
        return canonical(
            ZkSnapshot(
                chroot=self.client.chroot,
                cluster_id=value(paths.CLUSTER_ID, cluster.ClusterId),
                controller=value(paths.CONTROLLER, cluster.ControllerZnode),
                controller_epoch=versioned(paths.CONTROLLER_EPOCH, int),
                migration=versioned(paths.MIGRATION, cluster.MigrationZnode),
                feature=value(paths.FEATURE, cluster.FeatureZnode),
                producer_id_block=value(paths.PRODUCER_ID_BLOCK, cluster.ProducerIdBlock),
                brokers=t.brokers,
                broker_seqid_version=seqid.zk_version if seqid is not None else None,
                topics={
                    name: TopicSnapshot(a, t.states.get(name, {}))
                    for name, a in t.assignments.items()
                },
                pending_deletions=frozenset(t.deletions),
                reassignment=value(paths.REASSIGN_PARTITIONS, tuple) or (),
                topic_configs=t.topic_configs,
                broker_configs=t.broker_configs,
                quotas=t.quotas,
                scram=t.scram,
                acls=tuple(t.acls),
                delegation_tokens=t.tokens,
                legacy_offsets=tuple(t.offsets),
                malformed=tuple(t.malformed),
                config_znodes=frozenset(t.config_znodes),
                znode_versions=t.versions,
                znodes_read=self.znodes,
            )
        )
