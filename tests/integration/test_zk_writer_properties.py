"""Property tests of the writer and the full sync against a real ZooKeeper.

- Round trip: random committed changes of every kind, written as deltas (one by one or
  merged), read back with the reader and translated to records = the image.
- Drift repair: random damage to the tree, within Kafka's formats, then a full sync:
  ZooKeeper = the image again, and a second sync plans nothing.
"""

from __future__ import annotations

import uuid

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kazoo.exceptions import NodeExistsError, NoNodeError

from migration.bridge.sync import compare, full_sync
from migration.image.model import MetadataImage
from migration.local.zookeeper import EmbeddedZooKeeper
from migration.proto.metadata_pb2 import MetadataRecord
from migration.records import codes
from migration.zk import paths
from migration.zk.client import ZkClient
from migration.zk.model import acls, cluster, configs, tokens, topics
from migration.zk.model.acls import AclEntry
from migration.zk.model.topics import PartitionState, TopicAssignment
from tests.zk_timeline import (
    PASSWORD_CONFIG,
    SECRET,
    Timeline,
    acl,
    assert_zk_holds,
    broker_config,
    new_id,
    quota,
    rec,
    scram,
    synced_writer,
    token,
    topic_config,
)

TOPICS = ["orders", "audit.log", "a_b", "x-1"]
USERS = [None, "alice", "bob@example.com", "a b", "100%~*"]
CLIENTS = [None, "app", "app 2"]
BROKERS = [1, 2, 3, 4]
QUOTA_KEYS = ["producer_byte_rate", "consumer_byte_rate", "request_percentage"]
QUOTA_VALUES = [1.0, 2.5, 1024.0, 1e6]
PRINCIPALS = ["User:alice", "User:bob", "Group:ops"]
ACTIONS = [
    "create_topic",
    "delete_topic",
    "recreate_topic",
    "change_partition",
    "reassign",
    "add_partition",
    "topic_config",
    "broker_config",
    "quota",
    "scram",
    "acl",
    "token",
    "producer_ids",
]
SETTINGS = settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def client(zk_server: EmbeddedZooKeeper) -> ZkClient:
    """A fresh chroot per example (hypothesis runs every example in one test call)."""
    zk = ZkClient(f"{zk_server.connect_string}/props/{uuid.uuid4().hex}")
    zk.ensure_chroot()
    return zk


# --- random committed changes ---------------------------------------------------------


def replicas(data: st.DataObject) -> list[int]:
    return data.draw(st.lists(st.sampled_from(BROKERS), min_size=1, max_size=3, unique=True))


def partition_records(tid: bytes, pid: int, reps: list[int]) -> MetadataRecord:
    return rec(
        "partition_record", topic_id=tid, partition_id=pid, replicas=reps, isr=reps, leader=reps[0]
    )


def action_records(data: st.DataObject, t: Timeline) -> list[MetadataRecord]:
    """The records of one random action that applies to ``t``'s image."""
    image = t.image
    existing = sorted(image.topic_ids)
    action = data.draw(st.sampled_from(ACTIONS))
    if action in ("create_topic", "recreate_topic") or (not existing and "topic" in action):
        name = data.draw(st.sampled_from(TOPICS))
        records = []
        if name in image.topic_ids:
            if action == "create_topic":
                return []
            records.append(rec("remove_topic_record", topic_id=image.topic_ids[name]))
        tid = new_id()
        records.append(rec("topic_record", name=name, topic_id=tid))
        for pid in range(data.draw(st.integers(1, 3))):
            records.append(partition_records(tid, pid, replicas(data)))
        return records
    if action in ("delete_topic", "change_partition", "reassign", "add_partition", "topic_config"):
        if not existing:
            return []
        name = data.draw(st.sampled_from(existing))
        tid = image.topic_ids[name]
        parts = image.topics[tid].partitions
        pid = data.draw(st.sampled_from(sorted(parts)))
        p = parts[pid]
        if action == "delete_topic":
            return [rec("remove_topic_record", topic_id=tid)]
        if action == "add_partition":
            return [partition_records(tid, len(parts), replicas(data))]
        if action == "topic_config":
            key = data.draw(st.sampled_from(["retention.ms", "cleanup.policy"]))
            value = data.draw(st.sampled_from([None, "1000", "compact"]))
            return [topic_config(name, key, value)]
        if action == "reassign":
            target = replicas(data)
            adding = [b for b in target if b not in p.replicas]
            removing = [b for b in p.replicas if b not in target]
            merged = list(dict.fromkeys([*p.replicas, *target]))
            return [
                rec(
                    "partition_change_record",
                    topic_id=tid,
                    partition_id=pid,
                    replicas={"ids": merged},
                    adding_replicas={"ids": adding},
                    removing_replicas={"ids": removing},
                )
            ]
        isr = data.draw(st.lists(st.sampled_from(list(p.replicas)), min_size=1, unique=True))
        fields: dict[str, object] = {"isr": {"ids": isr}}
        if data.draw(st.booleans()):
            fields["leader"] = data.draw(st.sampled_from([*isr, -1]))
        if data.draw(st.booleans()):
            fields["leader_recovery_state"] = data.draw(st.sampled_from([0, 1]))
        return [rec("partition_change_record", topic_id=tid, partition_id=pid, **fields)]
    if action == "broker_config":
        broker = data.draw(st.sampled_from(["", "1", "2"]))
        key = data.draw(st.sampled_from(["log.cleaner.threads", PASSWORD_CONFIG]))
        return [broker_config(broker, key, data.draw(st.sampled_from([None, "2", "pw d"])))]
    if action == "quota":
        kind = data.draw(st.sampled_from(["user", "client-id", "user+client", "ip"]))
        entity: dict[str, str | None] = {}
        if kind in ("user", "user+client"):
            entity["user"] = data.draw(st.sampled_from(USERS))
        if kind in ("client-id", "user+client"):
            entity["client-id"] = data.draw(st.sampled_from(CLIENTS))
        if kind == "ip":
            entity["ip"] = data.draw(st.sampled_from([None, "10.0.0.1", "192.168.1.20"]))
        key = data.draw(st.sampled_from(QUOTA_KEYS))
        return [quota(entity, key, data.draw(st.sampled_from([None, *QUOTA_VALUES])))]
    if action == "scram":
        user = data.draw(st.sampled_from([u for u in USERS if u is not None]))
        mechanism = data.draw(st.sampled_from([1, 2]))
        if (user, mechanism) in image.scram and data.draw(st.booleans()):
            return [rec("remove_user_scram_credential_record", name=user, mechanism=mechanism)]
        return [scram(user, mechanism, data.draw(st.sampled_from([4096, 8192])))]
    if action == "acl":
        if image.acls and data.draw(st.booleans()):
            victim = data.draw(st.sampled_from(sorted(image.acls)))
            return [rec("remove_access_control_entry_record", id=victim)]
        record = acl(
            new_id(),
            data.draw(st.sampled_from(["orders", "*", "ord", "grp.1"])),
            data.draw(st.sampled_from(PRINCIPALS)),
            resource_type=data.draw(st.sampled_from([2, 3, 4, 5])),
            pattern_type=data.draw(
                st.sampled_from([codes.PATTERN_LITERAL, codes.PATTERN_PREFIXED])
            ),
            operation=data.draw(st.sampled_from([2, 3, 4])),
            permission=data.draw(st.sampled_from([2, 3])),
        )
        e = record.access_control_entry_record
        binding = (e.resource_type, e.resource_name, e.pattern_type, e.principal, e.operation)
        same = {
            (a.resource_type, a.resource_name, a.pattern_type, a.principal, a.operation)
            for a in image.acls.values()
            if a.permission_type == e.permission_type
        }
        return [] if binding in same else [record]  # Kafka keeps one binding once
    if action == "token":
        token_id = data.draw(st.sampled_from(["tok-1", "tok-2"]))
        if token_id in image.delegation_tokens and data.draw(st.booleans()):
            return [rec("remove_delegation_token_record", token_id=token_id)]
        return [token(token_id, data.draw(st.sampled_from(PRINCIPALS)))]
    current = image.producer_ids.next_producer_id if image.producer_ids else 0
    return [
        rec("producer_ids_record", broker_id=1, broker_epoch=1, next_producer_id=current + 1000)
    ]


def random_changes(data: st.DataObject, t: Timeline, steps: int) -> list[list[object]]:
    """``steps`` groups of consecutive committed changes."""
    groups = []
    for _ in range(steps):
        group = []
        for _ in range(data.draw(st.integers(1, 3))):
            records = action_records(data, t)
            if records:
                group.append(t.commit(*records))
        groups.append(group)
    return groups


@SETTINGS
@given(data=st.data())
def test_written_deltas_read_back_as_the_image(
    zk_server: EmbeddedZooKeeper, data: st.DataObject
) -> None:
    with client(zk_server) as zk:
        writer, fence = synced_writer(zk, max_multi_bytes=4096)
        t = Timeline()
        for group in random_changes(data, t, data.draw(st.integers(1, 8))):
            if not group:
                continue
            if data.draw(st.booleans()):
                fence = writer.write_changes(fence, group)  # type: ignore[arg-type]
            else:
                for change in group:
                    fence = writer.write_change(fence, change)  # type: ignore[arg-type]
        assert t.offset in (fence.offset, -1)
        assert_zk_holds(zk, t.image)


# --- damage within Kafka's formats ----------------------------------------------------


def put(zk: ZkClient, path: str, raw: bytes) -> None:
    if zk.kazoo.exists(path):
        zk.kazoo.set(path, raw)
    else:
        zk.kazoo.create(path, raw)


def damage(data: st.DataObject, zk: ZkClient, image: MetadataImage) -> None:
    """One random, well-formed change to the tree behind the writer's back."""
    k = zk.kazoo
    names = sorted(image.topic_ids) or ["orders"]
    name = data.draw(st.sampled_from([*names, "stray"]))
    kind = data.draw(
        st.sampled_from(
            [
                "delete_topic",
                "extra_topic",
                "state",
                "high_epoch",
                "drop_state",
                "assignment",
                "topic_id",
                "acl",
                "quota",
                "scram",
                "config",
                "token",
                "pending_deletion",
                "producer_ids",
            ]
        )
    )
    try:
        if kind == "delete_topic":
            k.delete(paths.topic(name), recursive=True)
        elif kind == "extra_topic":
            a = TopicAssignment("stray-" + name, {0: (1, 2)}, "A" * 21 + "g")
            k.create(paths.topic(a.name), topics.render_topic(a))
            state = topics.render_partition_state(PartitionState(1, 0, 1, (1, 2)))
            k.create(paths.partition_state(a.name, 0), state, makepath=True)
        elif kind in ("state", "high_epoch", "drop_state"):
            path = paths.partition_state(name, 0)
            if kind == "drop_state":
                k.delete(path)
            else:
                epoch = 10_000 if kind == "high_epoch" else 1
                isr = data.draw(st.lists(st.sampled_from(BROKERS), min_size=1, unique=True))
                state = PartitionState(isr[0], 77, epoch, tuple(isr))
                k.set(path, topics.render_partition_state(state))
        elif kind in ("assignment", "topic_id"):
            raw, _ = k.get(paths.topic(name))
            a = topics.parse_topic(paths.topic(name), raw, name)
            if kind == "topic_id":
                a = TopicAssignment(name, a.partitions, "B" * 21 + "g")
            elif data.draw(st.booleans()) and len(a.partitions) > 1:
                a = TopicAssignment(name, dict(list(a.partitions.items())[:-1]), a.topic_id)
            else:
                grown = {**a.partitions, len(a.partitions): (3, 4)}
                a = TopicAssignment(name, grown, a.topic_id)
            k.set(paths.topic(name), topics.render_topic(a))
        elif kind == "acl":
            path = paths.acl_resource(False, "Topic", data.draw(st.sampled_from(["orders", "zz"])))
            entry = AclEntry("User:mallory", "*", 2, 3)
            if data.draw(st.booleans()) and k.exists(path):
                k.delete(path)
            elif k.exists(path):
                raw, _ = k.get(path)
                found = acls.parse_acls(path, raw, "Topic", path.rsplit("/", 1)[1], False)
                k.set(path, acls.render_acls((*found.entries, entry)))
            else:
                k.create(path, acls.render_acls((entry,)))
        elif kind in ("quota", "scram"):
            user = data.draw(st.sampled_from(["alice", "mallory"]))
            path = f"/config/users/{user}"
            config = {"producer_byte_rate": "1"} if kind == "quota" else {}
            put(zk, path, configs.render_entity_config(config or {"consumer_byte_rate": "9"}))
        elif kind == "config":
            path = data.draw(st.sampled_from([f"/config/topics/{name}", "/config/brokers/1"]))
            if data.draw(st.booleans()) and k.exists(path):
                k.delete(path)
            else:
                body = {"retention.ms": "1", PASSWORD_CONFIG: "in clear"}
                put(zk, path, configs.render_entity_config(body))
        elif kind == "token":
            path = paths.delegation_token("tok-1")
            if k.exists(path):
                k.delete(path)
            else:
                t = tokens.DelegationToken("tok-1", "User:eve", "User:eve", (), 1, 2, 3)
                k.create(path, tokens.render_token(t))
        elif kind == "pending_deletion":
            k.create(paths.delete_topic(name))
        elif image.producer_ids is not None:  # a lower block (a ZooKeeper block the
            # image does not know of is left alone: it never lowers what ZooKeeper hands out)
            block = cluster.ProducerIdBlock(3, 0, 9)
            put(zk, paths.PRODUCER_ID_BLOCK, cluster.render_producer_id_block(block))
    except (NoNodeError, NodeExistsError):
        pass  # damage aimed at something absent: the tree stays as it was


@SETTINGS
@given(data=st.data())
def test_a_full_sync_repairs_any_drift(zk_server: EmbeddedZooKeeper, data: st.DataObject) -> None:
    with client(zk_server) as zk:
        writer, fence = synced_writer(zk, max_multi_bytes=4096)
        t = Timeline()
        random_changes(data, t, data.draw(st.integers(1, 6)))
        fence = full_sync(writer, fence, t.image).fence  # type: ignore[assignment]
        assert fence is not None
        for _ in range(data.draw(st.integers(1, 6))):
            damage(data, zk, t.image)
        fence = full_sync(writer, fence, t.image).fence  # type: ignore[assignment]
        assert fence is not None and fence.offset == t.offset
        assert_zk_holds(zk, t.image)
        again = compare(zk, t.image, fence.zk_controller_epoch, SECRET)
        assert again.plan.ops == [], again.plan.counts()
