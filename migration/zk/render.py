"""Render a :class:`ZkSnapshot` into the znodes Kafka would have written for it.

The inverse of :mod:`migration.zk.reader`: ``read(write(render(s))) == s``. Used by the
seeder to build realistic clusters, and by tests to build exact fixtures. Operations
come parents first, so they can be streamed into byte-bounded multis in order.
Alongside the data, the notifications a live cluster leaves behind (config and ACL
change sequentials, legacy consumer registrations) are written too; they carry no state
the reader keeps.
"""

from __future__ import annotations

from collections.abc import Iterator

from migration.records import codes
from migration.zk import paths
from migration.zk.model import acls, brokers, cluster, configs, consumers, tokens, topics
from migration.zk.multiwrite import CreateMode, Op, create, set_data
from migration.zk.tree_read import ZkSnapshot

RECENT_NOTIFICATIONS = 10
"""Kafka purges change notifications after 15 minutes; a live tree holds a few."""


def entity_segment(name: str | None) -> str:
    return paths.DEFAULT_ENTITY if name is None else configs.sanitize(name)


def render_snapshot(snap: ZkSnapshot, *, ephemeral: bool = False) -> Iterator[Op]:
    """Create operations for every znode of ``snap`` (persistent parents excluded:
    see :data:`migration.zk.paths.PERSISTENT_PARENTS`). With ``ephemeral`` the broker
    registrations, ``/controller`` and legacy consumer ids are ephemeral, as in a live
    cluster, and vanish with the writing session."""
    live = CreateMode.EPHEMERAL if ephemeral else CreateMode.PERSISTENT
    yield from _cluster(snap, live)
    for broker in snap.brokers.values():
        yield create(paths.broker(broker.broker_id), brokers.render_broker(broker), live)
    for topic in snap.topics.values():
        name = topic.name
        yield create(paths.topic(name), topics.render_topic(topic.assignment))
        yield create(paths.topic_partitions(name))
        for pid, part in topic.partitions.items():
            yield create(paths.partition(name, pid))
            if part.state is not None:
                yield create(
                    paths.partition_state(name, pid), topics.render_partition_state(part.state)
                )
    yield from _configs(snap)
    yield from _acls(snap)
    for token in snap.delegation_tokens.values():
        yield create(paths.delegation_token(token.token_id), tokens.render_token(token))
    for name in sorted(snap.pending_deletions):
        yield create(paths.delete_topic(name))
    if snap.reassignment:
        yield create(paths.REASSIGN_PARTITIONS, topics.render_reassignment(snap.reassignment))
    yield from _consumers(snap, live)
    if snap.migration is not None:
        yield create(paths.MIGRATION, cluster.render_migration(snap.migration.value))


def _cluster(snap: ZkSnapshot, live: CreateMode) -> Iterator[Op]:
    if snap.cluster_id is not None:
        yield create(paths.CLUSTER_ID, cluster.render_cluster_id(snap.cluster_id))
    if snap.controller_epoch is not None:
        yield create(
            paths.CONTROLLER_EPOCH, cluster.render_controller_epoch(snap.controller_epoch.value)
        )
    if snap.controller is not None:
        mode = CreateMode.PERSISTENT if snap.controller.is_kraft else live
        yield create(paths.CONTROLLER, cluster.render_controller(snap.controller), mode)
    if snap.feature is not None:
        yield create(paths.FEATURE, cluster.render_feature(snap.feature))
    if snap.producer_id_block is not None:  # a persistent parent: created empty first
        yield set_data(
            paths.PRODUCER_ID_BLOCK, cluster.render_producer_id_block(snap.producer_id_block)
        )


def _configs(snap: ZkSnapshot) -> Iterator[Op]:
    changes: list[str] = []
    for name, config in snap.topic_configs.items():
        yield create(paths.config_entity("topics", name), configs.render_entity_config(config))
        if config:
            changes.append(f"topics/{name}")
    for broker_id, config in snap.broker_configs.items():
        segment = entity_segment(broker_id)
        yield create(paths.config_entity("brokers", segment), configs.render_entity_config(config))
        changes.append(f"brokers/{segment}")

    # Quotas and SCRAM share znodes: gather each znode's whole config first.
    by_path: dict[str, dict[str, str]] = {}
    for entity, values in snap.quotas.items():
        rendered = {k: configs.render_quota_value(v) for k, v in values.items()}
        by_path.setdefault(quota_path(entity), {}).update(rendered)
    for user, creds in snap.scram.items():
        config = by_path.setdefault(paths.config_entity("users", entity_segment(user)), {})
        for mechanism, cred in creds.items():
            config[codes.SCRAM_MECHANISM_NAMES[mechanism]] = configs.render_scram(cred)
    # A user+client quota needs its user's znode; Kafka creates it with no data.
    for path in [p for p in by_path if _is_user_client(p)]:
        by_path.setdefault(path.rsplit("/clients/", 1)[0], {})
    client_dirs: set[str] = set()
    for path in sorted(by_path, key=lambda p: (p.count("/"), p)):  # parents first
        config = by_path[path]
        if _is_user_client(path) and (parent := path.rsplit("/", 1)[0]) not in client_dirs:
            client_dirs.add(parent)
            yield create(parent)
        yield create(path, configs.render_entity_config(config) if config else b"")
        if config:
            changes.append(path.removeprefix(paths.CONFIG + "/"))
    for entity_path in changes[-RECENT_NOTIFICATIONS:]:
        yield create(
            f"{paths.CONFIG_CHANGES}/config_change_",
            configs.render_config_change(entity_path),
            CreateMode.PERSISTENT_SEQUENTIAL,
        )


def _is_user_client(path: str) -> bool:
    return path.startswith("/config/users/") and "/clients/" in path


_QUOTA_DIRS = {v: k for k, v in configs.QUOTA_ENTITY_TYPES.items()}


def quota_path(entity: configs.QuotaEntity) -> str:
    if len(entity) == 2:
        (_, user), (_, client) = entity
        return paths.user_client_config(entity_segment(user), entity_segment(client))
    ((entity_type, name),) = entity
    segment = name if entity_type == "ip" and name is not None else entity_segment(name)
    return paths.config_entity(_QUOTA_DIRS[entity_type], segment)


def _acls(snap: ZkSnapshot) -> Iterator[Op]:
    for resource in snap.acls:  # the resource-type directories are persistent parents
        prefixed = resource.pattern_type == codes.PATTERN_PREFIXED
        type_name = codes.RESOURCE_TYPE_NAMES[resource.resource_type]
        yield create(
            paths.acl_resource(prefixed, type_name, resource.resource_name),
            acls.render_acls(resource.entries),
        )
    for resource in snap.acls[-RECENT_NOTIFICATIONS:]:
        prefixed = resource.pattern_type == codes.PATTERN_PREFIXED
        root = paths.ACL_EXTENDED_CHANGES if prefixed else paths.ACL_CHANGES
        yield create(
            f"{root}/acl_changes_",
            acls.render_acl_change(
                resource.resource_type, resource.resource_name, resource.pattern_type
            ),
            CreateMode.PERSISTENT_SEQUENTIAL,
        )


def _consumers(snap: ZkSnapshot, live: CreateMode) -> Iterator[Op]:
    groups: dict[str, dict[str, list[consumers.LegacyOffset]]] = {}
    for off in snap.legacy_offsets:
        groups.setdefault(off.group, {}).setdefault(off.topic, []).append(off)
    for group, by_topic in groups.items():
        root = paths.consumer_group(group)
        yield create(root)
        yield create(f"{root}/ids")
        yield create(
            f"{root}/ids/{group}-consumer-1",
            consumers.render_consumer_registration({t: 1 for t in by_topic}, 1_700_000_000_000),
            live,
        )
        yield create(f"{root}/offsets")
        yield create(f"{root}/owners")
        for topic, offsets in by_topic.items():
            yield create(f"{root}/offsets/{topic}")
            yield create(f"{root}/owners/{topic}")
            for off in offsets:
                yield create(
                    paths.consumer_offset(group, topic, off.partition),
                    consumers.render_offset(off.offset),
                )
