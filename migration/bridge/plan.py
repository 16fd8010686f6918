"""The ZooKeeper operations that turn one view of the tree into another: the one rule
that both the delta writer and the full sync follow.

:func:`plan` compares two :mod:`~migration.bridge.mirror` views over a :class:`Scope` (the
entities to look at) and returns a :class:`Plan`: ZooKeeper operations in an order that
applies (parents before children, deletes before re-creates under a re-used name, the
reference's kind order: topics, configs with quotas and SCRAM, the producer-id block,
ACLs, delegation tokens, pending deletions), plus what changed per kind, for reports.

- A delta (:meth:`Scope.of_change`): old = the previous image, new = the next one,
  scope = what the delta touched. ZooKeeper is assumed to hold the old view (the writer
  keeps it so); an operation that finds otherwise fails its multi, and the writer asks
  for a full sync rather than guess.
- The full sync (:data:`EVERYTHING`): old = ZooKeeper as read, new = the image.

Config-change and ACL-change notifications are planned next to the change they
announce, so they land in the same fenced multi (Kafka writes them unfenced, after).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from migration.bridge.mirror import (
    AclPattern,
    SnapshotView,
    ZkView,
    is_entity,
    quota_znode,
    render_config,
    user_of_client_path,
)
from migration.image.delta import MetadataDelta
from migration.image.model import MetadataImage
from migration.records import codes
from migration.zk import paths
from migration.zk.model import acls, cluster, configs, tokens, topics
from migration.zk.model.topics import PartitionState, TopicAssignment
from migration.zk.multiwrite import CreateMode, Op, create, delete, set_data
from migration.zk.render import entity_segment

KINDS = (
    "parents",
    "topics",
    "partitions",
    "configs",
    "producer_ids",
    "acls",
    "delegation_tokens",
    "pending_deletions",
)
ACTIONS = ("create", "set", "delete")


@dataclass(frozen=True)
class Scope:
    """Which entities a plan compares; None means every one either view has.
    ``partitions`` narrows a topic to the partitions named (a delta's changed ones)."""

    topics: frozenset[str] | None = None
    partitions: Mapping[str, frozenset[int]] = field(default_factory=dict)
    configs: frozenset[str] | None = None
    acls: frozenset[AclPattern] | None = None
    tokens: frozenset[str] | None = None
    producer_ids: bool = True
    pending_deletions: bool = True

    @classmethod
    def of_change(cls, previous: MetadataImage, delta: MetadataDelta) -> Scope:
        """What ``delta`` (applied to ``previous``) can have changed in ZooKeeper.
        Deleted ACLs are resolved to their pattern through ``previous``
        (docs/field-bugs.md#fb-10)."""
        names: set[str] = set(delta.deleted_topics.values())
        narrowed: dict[str, frozenset[int]] = {}
        for t in delta.topics.values():
            names.add(t.name)
            if t.base is not None:
                narrowed[t.name] = frozenset(t.partitions)
        for name in delta.deleted_topics.values():
            narrowed.pop(name, None)  # re-created under the same name: compare it all
        config_paths = {paths.TOPIC_CONFIGS + n for n in names}
        for rtype, rname in delta.configs:
            if rtype == codes.TOPIC_RESOURCE:
                config_paths.add(paths.TOPIC_CONFIGS + rname)
            elif rtype == codes.BROKER_RESOURCE:
                config_paths.add(paths.config_entity("brokers", entity_segment(rname or None)))
        for entity in delta.quotas:
            path = quota_znode(entity)
            config_paths.add(path)
            user = user_of_client_path(path)
            if user is not None:
                config_paths.update((user, user + "/clients"))
        for user, _ in delta.scram:
            config_paths.add(paths.config_entity("users", entity_segment(user)))
        patterns: set[AclPattern] = set()
        for acl_id, acl in delta.acls.items():
            for a in (acl, previous.acls.get(acl_id)):
                if a is not None:
                    patterns.add((a.pattern_type, a.resource_type, a.resource_name))
        return cls(
            topics=frozenset(names),
            partitions=narrowed,
            configs=frozenset(config_paths),
            acls=frozenset(patterns),
            tokens=frozenset(delta.delegation_tokens),
            producer_ids=delta.producer_ids is not None,
            pending_deletions=False,
        )

    def union(self, other: Scope) -> Scope:
        """Both scopes (what two consecutive deltas touched)."""

        def either(a: frozenset[Any] | None, b: frozenset[Any] | None) -> frozenset[Any] | None:
            return None if a is None or b is None else a | b

        narrowed: dict[str, frozenset[int]] = {}
        if self.topics is not None and other.topics is not None:
            for name in self.topics | other.topics:
                mine, theirs = self.partitions.get(name), other.partitions.get(name)
                if (name in self.topics and mine is None) or (
                    name in other.topics and theirs is None
                ):
                    continue  # one of them compares the whole topic
                narrowed[name] = (mine or frozenset()) | (theirs or frozenset())
        return Scope(
            topics=either(self.topics, other.topics),
            partitions=narrowed,
            configs=either(self.configs, other.configs),
            acls=either(self.acls, other.acls),
            tokens=either(self.tokens, other.tokens),
            producer_ids=self.producer_ids or other.producer_ids,
            pending_deletions=self.pending_deletions or other.pending_deletions,
        )


EVERYTHING = Scope()
"""Every entity either view has, pending deletions included: the full sync's scope."""


@dataclass
class Plan:
    """Operations in the order they must apply, and what they change per kind and
    action (``changes[kind][action]`` lists entity names)."""

    ops: list[Op] = field(default_factory=list)
    changes: dict[str, dict[str, list[str]]] = field(
        default_factory=lambda: {k: {a: [] for a in ACTIONS} for k in KINDS}
    )

    def note(self, kind: str, action: str, key: str) -> None:
        self.changes[kind][action].append(key)

    def counts(self) -> dict[str, dict[str, int]]:
        return {
            kind: {action: len(keys) for action, keys in by_action.items()}
            for kind, by_action in self.changes.items()
        }

    def nonempty_changes(self) -> dict[str, dict[str, list[str]]]:
        """``changes`` without the kinds and actions that change nothing."""
        out = {
            kind: {action: keys for action, keys in by_action.items() if keys}
            for kind, by_action in self.changes.items()
        }
        return {kind: by_action for kind, by_action in out.items() if by_action}

    def in_sync(self) -> bool:
        """Nothing but Kafka's empty persistent parents to create: they hold no metadata
        (a cluster without an authorizer or delegation tokens never had some of them)."""
        return not any(kind != "parents" for kind in self.nonempty_changes())


def plan(old: ZkView, new: ZkView, scope: Scope, secret: str | None = None) -> Plan:
    """The operations that make ZooKeeper, holding ``old``, hold ``new`` within
    ``scope``. ``secret`` (password.encoder.secret) encrypts broker password configs;
    a password config to write without it raises ValueError naming the znode."""
    out = Plan()
    _topics(old, new, scope, out)
    _configs(old, new, scope, out, secret)
    _producer_ids(old, new, scope, out)
    _acls(old, new, scope, out)
    _tokens(old, new, scope, out)
    if scope.pending_deletions:
        for name in sorted(old.pending_deletions()):
            out.ops.append(delete(paths.delete_topic(name)))
            out.note("pending_deletions", "delete", name)
    return out


def _every(wanted: frozenset[Any] | None, *found: Iterable[Any]) -> list[Any]:
    if wanted is not None:
        return sorted(wanted)
    keys: set[Any] = set()
    for f in found:
        keys.update(f)
    return sorted(keys)


# --- topics and partitions --------------------------------------------------------------


def _same_assignment(a: TopicAssignment, b: TopicAssignment) -> bool:
    return (a.partitions, a.topic_id, a.adding, a.removing) == (
        b.partitions,
        b.topic_id,
        b.adding,
        b.removing,
    )


def state_differs(current: PartitionState, wanted: PartitionState) -> bool:
    """Whether a state znode must be rewritten: leader, ISR, epochs or recovery state
    differ, or it names a controller epoch above ours, which a ZooKeeper controller
    after a rollback would refuse (docs/field-bugs.md#fb-24)."""
    return (
        current.leader != wanted.leader
        or current.leader_epoch != wanted.leader_epoch
        or current.isr != wanted.isr
        or current.leader_recovery_state != wanted.leader_recovery_state
        or current.controller_epoch > wanted.controller_epoch
    )


def _delete_tree(tree: Iterable[str], ops: list[Op]) -> None:
    ops.extend(delete(p) for p in sorted(tree, key=lambda p: (-p.count("/"), p)))


def _topics(old: ZkView, new: ZkView, scope: Scope, out: Plan) -> None:
    ops = out.ops
    for name in _every(scope.topics, old.topic_names(), new.topic_names()):
        was, want = old.assignment(name), new.assignment(name)
        if want is None:
            if was is not None:
                _delete_tree(old.topic_tree(name), ops)
                out.note("topics", "delete", name)
            continue
        if was is None or was.topic_id != want.topic_id:
            if was is not None:  # re-created under the same name: the old one goes first
                _delete_tree(old.topic_tree(name), ops)
                out.note("topics", "delete", name)
            ops.append(create(paths.topic(name), topics.render_topic(want)))
            ops.append(create(paths.topic_partitions(name)))
            for pid in want.partitions:
                state = new.state(name, pid)
                assert state is not None  # a view's topic has a state for each partition
                ops.append(create(paths.partition(name, pid)))
                ops.append(
                    create(paths.partition_state(name, pid), topics.render_partition_state(state))
                )
            out.note("topics", "create", name)
            continue
        _changed_topic(old, new, out, name=name, narrowed=scope.partitions.get(name))


def _changed_topic(
    old: ZkView, new: ZkView, out: Plan, *, name: str, narrowed: frozenset[int] | None
) -> None:
    """A topic both views have under the same id: its znode when the assignment moved,
    and each partition (only ``narrowed`` ones when given) created, set or deleted."""
    was, want = old.assignment(name), new.assignment(name)
    assert was is not None and want is not None
    if narrowed is None:
        pids = sorted(set(was.partitions) | set(want.partitions))
        moved = not _same_assignment(was, want)
    else:
        pids = sorted(narrowed)
        moved = False  # found out partition by partition below
    ops: list[Op] = []  # the partitions' operations, after the topic znode's
    tree: frozenset[str] | None = None
    old_state, new_state, render = old.state, new.state, topics.render_partition_state
    for pid in pids:  # the hot loop of a full sync and of a mass ISR change
        if narrowed is not None and not moved:
            moved = old.moving(name, pid) != new.moving(name, pid)
        current, wanted = old_state(name, pid), new_state(name, pid)
        if current is not None and wanted is not None:
            if state_differs(current, wanted):
                ops.append(set_data(paths.partition_state(name, pid), render(wanted)))
                out.note("partitions", "set", f"{name}-{pid}")
            continue
        tree = old.topic_tree(name) if tree is None else tree
        key = f"{name}-{pid}"
        node, state_path = paths.partition(name, pid), paths.partition_state(name, pid)
        if wanted is None:
            _delete_tree([p for p in (node, state_path) if p in tree], ops)
            out.note("partitions", "delete", key)
            continue
        if paths.topic_partitions(name) not in tree:
            ops.append(create(paths.topic_partitions(name)))
            tree = tree | {paths.topic_partitions(name)}
        if node not in tree:
            ops.append(create(node))
        if state_path in tree:  # a state znode the topic znode did not list
            ops.append(set_data(state_path, render(wanted)))
            out.note("partitions", "set", key)
        else:
            ops.append(create(state_path, render(wanted)))
            out.note("partitions", "create", key)
    if moved:
        out.ops.append(set_data(paths.topic(name), topics.render_topic(want)))
        out.note("topics", "set", name)
    out.ops.extend(ops)


# --- configs, quotas and SCRAM ------------------------------------------------------------


def _configs(old: ZkView, new: ZkView, scope: Scope, out: Plan, secret: str | None) -> None:
    removed: list[str] = []
    written: list[tuple[str, bool]] = []  # (path, exists already)
    announce: set[str] = set()
    for path in _every(scope.configs, old.config_paths(), new.config_paths()):
        was, want = old.config(path), new.config(path)
        if was == want:
            continue
        if want is None:
            removed.append(path)
        else:
            written.append((path, was is not None))
        if is_entity(path) and (was or {}) != (want or {}):
            announce.add(path)
    # Children go before their parents when deleted, after them when created; each
    # change is followed by its notification, which lands in the same multi.
    for path in sorted(removed, key=lambda p: (-p.count("/"), p)):
        out.ops.append(delete(path))
        out.note("configs", "delete", path)
        _announce(path, announce, out.ops)
    for path, exists in sorted(written, key=lambda w: (w[0].count("/"), w[0])):
        content = new.config(path)
        assert content is not None
        raw = render_config(path, content, secret)
        out.ops.append(set_data(path, raw) if exists else create(path, raw))
        out.note("configs", "set" if exists else "create", path)
        _announce(path, announce, out.ops)


def is_notification(op: Op) -> bool:
    """A config- or ACL-change notification: it always lands in the same multi as the
    operation just before it, the change it announces."""
    return op.mode == CreateMode.PERSISTENT_SEQUENTIAL


def _announce(path: str, announce: set[str], ops: list[Op]) -> None:
    if path in announce:
        entity_path = path.removeprefix(paths.CONFIG + "/")  # exactly: docs/field-bugs.md#fb-06
        ops.append(
            create(
                f"{paths.CONFIG_CHANGES}/config_change_",
                configs.render_config_change(entity_path),
                CreateMode.PERSISTENT_SEQUENTIAL,
            )
        )


# --- the producer-id block, ACLs, delegation tokens ------------------------------------


def _producer_ids(old: ZkView, new: ZkView, scope: Scope, out: Plan) -> None:
    want = new.producer_block()
    if not scope.producer_ids or want is None:
        return  # KRaft handed out none: ZooKeeper's block stands
    was = old.producer_block()
    if was is not None and (was == want or was.block_start > want.block_start):
        return  # never lowered: ZooKeeper already hands out ids above KRaft's
    if (
        was is not None
        and isinstance(old, SnapshotView)
        and was.next_producer_id >= want.block_start
    ):
        # The full sync, and ZooKeeper's next block starts at or above KRaft's next id:
        # nothing KRaft handed out can be handed out again (the audit's rule). Right
        # after the copy they are equal (the copy takes KRaft's next id from this block),
        # and Kafka's writer leaves the znode alone too. A delta still sets the block
        # as soon as KRaft's next id moves (its old view's block starts at the old one).
        return
    # Set, never created: one of Kafka's persistent znodes, empty until a first block
    # (the full sync creates it first when missing).
    out.ops.append(set_data(paths.PRODUCER_ID_BLOCK, cluster.render_producer_id_block(want)))
    out.note("producer_ids", "set", paths.PRODUCER_ID_BLOCK)


def acl_path(pattern: AclPattern) -> str:
    pattern_type, resource_type, name = pattern
    return paths.acl_resource(
        pattern_type == codes.PATTERN_PREFIXED, codes.RESOURCE_TYPE_NAMES[resource_type], name
    )


def _acls(old: ZkView, new: ZkView, scope: Scope, out: Plan) -> None:
    for pattern in _every(scope.acls, old.acl_patterns(), new.acl_patterns()):
        was, want = old.acl_entries(pattern), new.acl_entries(pattern)
        if was == want:
            continue
        path = acl_path(pattern)
        if not want:
            out.ops.append(delete(path))
            action = "delete"
        else:
            raw = acls.render_acls(
                tuple(
                    sorted(
                        want, key=lambda e: (e.principal, e.host, e.operation, e.permission_type)
                    )
                )
            )
            out.ops.append(set_data(path, raw) if was else create(path, raw))
            action = "set" if was else "create"
        out.note("acls", action, path.removeprefix("/"))
        pattern_type, resource_type, name = pattern
        root = (
            paths.ACL_EXTENDED_CHANGES
            if pattern_type == codes.PATTERN_PREFIXED
            else paths.ACL_CHANGES
        )
        out.ops.append(
            create(
                f"{root}/acl_changes_",
                acls.render_acl_change(resource_type, name, pattern_type),
                CreateMode.PERSISTENT_SEQUENTIAL,
            )
        )


def _tokens(old: ZkView, new: ZkView, scope: Scope, out: Plan) -> None:
    for token_id in _every(scope.tokens, old.token_ids(), new.token_ids()):
        was, want = old.token(token_id), new.token(token_id)
        if was == want:
            continue
        path = paths.delegation_token(token_id)
        if want is None:
            out.ops.append(delete(path))
            out.note("delegation_tokens", "delete", token_id)
        else:
            raw = tokens.render_token(want)
            out.ops.append(set_data(path, raw) if was is not None else create(path, raw))
            out.note("delegation_tokens", "set" if was is not None else "create", token_id)
