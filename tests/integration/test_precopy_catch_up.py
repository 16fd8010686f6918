"""The copy's catch-up on a real ZooKeeper: a tree is read and translated under a
persistent recursive watch (the pre-copy); ZooKeeper then changes, in Kafka's own byte
formats, one kind of entity at a time; the watch names the paths, only their entities are
read again, and the pre-copy's records followed by the catch-up's replay (validated as
the controller validates its own writes) to the very image a full copy of the changed tree
gives. And only what changed is read again."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace

import pytest

from migration.bridge.catch_up import catch_up_records, patched
from migration.bridge.mirror import ImageView, SnapshotView
from migration.bridge.plan import EVERYTHING, Scope, plan
from migration.bridge.sync import copied_scope, reread_scope
from migration.bridge.translate import TranslateReport, translate, translate_parts
from migration.image.delta import MetadataDelta
from migration.image.model import MetadataImage
from migration.local import seed
from migration.proto.metadata_pb2 import MetadataRecord
from migration.zk import multiwrite as mw
from migration.zk.changes import targets_of
from migration.zk.client import ZkClient
from migration.zk.model.acls import AclEntry, ResourceAcls
from migration.zk.model.cluster import ProducerIdBlock
from migration.zk.model.topics import TopicAssignment
from migration.zk.reader import read_snapshot, read_targets
from migration.zk.render import render_snapshot
from migration.zk.tree_read import PartitionSnapshot, TopicSnapshot, ZkSnapshot
from migration.zk.tree_watch import TreeWatch

SECRET = seed.SEED_PASSWORD_ENCODER_SECRET
SPEC = seed.ClusterSpec(
    topics=6,
    partitions=30,
    topic_config_permille=600,
    quota_entities=6,
    scram_users=3,
    acl_resources=6,
    delegation_tokens=3,
    pending_deletions=1,
)
Change = Callable[[ZkSnapshot], ZkSnapshot]
FRESH_ID, AGAIN_ID = "q1A3oB8dR3Sq9LkOrxpHzg", "3xVj0dVrS1uGQ5u3QKqvBg"  # Kafka's uuid text


def _first_topic(s: ZkSnapshot) -> str:
    return next(n for n in sorted(s.topics) if n not in s.pending_deletions)


def _isr_shrunk(s: ZkSnapshot) -> ZkSnapshot:
    name = _first_topic(s)
    topic = s.topics[name]
    part = topic.partitions[0]
    assert part.state is not None
    state = part.state._replace(isr=part.state.isr[:1], leader_epoch=part.state.leader_epoch + 1)
    partitions = {**topic.partitions, 0: PartitionSnapshot(state, part.zk_version + 1)}
    return replace(s, topics={**s.topics, name: TopicSnapshot(topic.assignment, partitions)})


def _topic_created(s: ZkSnapshot) -> ZkSnapshot:
    assignment = TopicAssignment("fresh", {0: (1, 2, 3), 1: (2, 3, 1)}, "q1A3oB8dR3Sq9LkOrxpHzg")
    topic = TopicSnapshot(
        assignment, {0: PartitionSnapshot(None, -1), 1: PartitionSnapshot(None, -1)}
    )
    return replace(
        s,
        topics={**s.topics, "fresh": topic},
        topic_configs={**s.topic_configs, "fresh": {"retention.ms": "1000"}},
    )


def _topic_deleted(s: ZkSnapshot) -> ZkSnapshot:
    name = _first_topic(s)
    return replace(
        s,
        topics={n: t for n, t in s.topics.items() if n != name},
        topic_configs={n: c for n, c in s.topic_configs.items() if n != name},
        acls=tuple(r for r in s.acls if r.resource_name != name),
    )


def _topic_recreated(s: ZkSnapshot) -> ZkSnapshot:
    name = _first_topic(s)
    old = s.topics[name]
    assignment = replace(
        old.assignment, topic_id="3xVj0dVrS1uGQ5u3QKqvBg", partitions={0: (1, 2, 3)}
    )
    topic = TopicSnapshot(assignment, {0: PartitionSnapshot(None, -1)})
    return replace(s, topics={**s.topics, name: topic}, topic_configs={**s.topic_configs, name: {}})


def _topic_marked_for_deletion(s: ZkSnapshot) -> ZkSnapshot:
    return replace(s, pending_deletions=s.pending_deletions | {_first_topic(s)})


def _partitions_added(s: ZkSnapshot) -> ZkSnapshot:
    name = _first_topic(s)
    topic = s.topics[name]
    added = max(topic.assignment.partitions) + 1
    assignment = replace(
        topic.assignment, partitions={**topic.assignment.partitions, added: (3, 1, 2)}
    )
    partitions = {**topic.partitions, added: PartitionSnapshot(None, -1)}
    return replace(s, topics={**s.topics, name: TopicSnapshot(assignment, partitions)})


def _topic_config_changed(s: ZkSnapshot) -> ZkSnapshot:
    name, config = next((n, c) for n, c in sorted(s.topic_configs.items()) if c)
    dropped = dict(sorted(config.items())[1:])
    return replace(
        s, topic_configs={**s.topic_configs, name: {**dropped, "cleanup.policy": "compact"}}
    )


def _broker_config_changed(s: ZkSnapshot) -> ZkSnapshot:
    return replace(s, broker_configs={**s.broker_configs, None: {"log.retention.ms": "5000"}})


def _quotas_changed(s: ZkSnapshot) -> ZkSnapshot:
    gone = next(e for e in sorted(s.quotas, key=repr) if e[0][0] == "client-id")
    kept = next(e for e in sorted(s.quotas, key=repr) if len(e) == 2)  # a user's client
    quotas = {e: v for e, v in s.quotas.items() if e != gone}
    quotas[kept] = {**quotas[kept], "producer_byte_rate": 4096.0}
    quotas[(("client-id", "late-client"),)] = {"consumer_byte_rate": 2048.0}
    quotas[(("ip", "10.1.2.3"),)] = {"connection_creation_rate": 5.0}
    return replace(s, quotas=quotas)


def _scram_changed(s: ZkSnapshot) -> ZkSnapshot:
    users = sorted(s.scram)
    scram = {u: c for u, c in s.scram.items() if u != users[0]}
    creds = s.scram[users[1]]
    scram[users[1]] = dict(list(creds.items())[:1])
    scram["late-user"] = dict(s.scram[users[0]])
    return replace(s, scram=scram)


def _acls_changed(s: ZkSnapshot) -> ZkSnapshot:
    first, second, *rest = s.acls
    grown = replace(
        second, entries=(*second.entries, AclEntry("User:late", "*", 3, 3))
    )  # Read, Allow
    shrunk = replace(first, entries=first.entries[1:]) if len(first.entries) > 1 else None
    fresh = ResourceAcls(2, "late-topic", 3, (AclEntry("User:late", "*", 4, 3),))
    return replace(s, acls=tuple(a for a in (shrunk, grown, *rest, fresh) if a is not None))


def _tokens_changed(s: ZkSnapshot) -> ZkSnapshot:
    ids = sorted(s.delegation_tokens)
    tokens = {t: v for t, v in s.delegation_tokens.items() if t != ids[0]}
    renewed = s.delegation_tokens[ids[1]]
    tokens[ids[1]] = replace(renewed, expiration_timestamp=renewed.expiration_timestamp + 1000)
    tokens["late-token"] = replace(renewed, token_id="late-token")
    return replace(s, delegation_tokens=tokens)


def _producer_ids_moved(s: ZkSnapshot) -> ZkSnapshot:
    block = s.producer_id_block
    assert block is not None
    return replace(
        s, producer_id_block=ProducerIdBlock(2, block.block_end + 1, block.block_end + 1000)
    )


def _nothing_copied_changed(s: ZkSnapshot) -> ZkSnapshot:
    return replace(s, controller_epoch=None, migration=None)  # neither is copied


CHANGES: dict[str, Change] = {
    "an ISR shrinks": _isr_shrunk,
    "a topic is created": _topic_created,
    "a topic is deleted": _topic_deleted,
    "a topic is deleted and created again": _topic_recreated,
    "a topic is marked for deletion": _topic_marked_for_deletion,
    "partitions are added": _partitions_added,
    "a topic's config changes": _topic_config_changed,
    "a broker config changes": _broker_config_changed,
    "quotas change": _quotas_changed,
    "SCRAM credentials change": _scram_changed,
    "ACLs change": _acls_changed,
    "delegation tokens change": _tokens_changed,
    "the producer-id block moves": _producer_ids_moved,
}


def _znodes(snap: ZkSnapshot) -> dict[str, bytes | None]:
    """Every znode of ``snap`` but the change notifications (sequential: each write adds
    one, and the copy reads none)."""
    return {op.path: op.data for op in render_snapshot(snap) if op.mode == mw.CreateMode.PERSISTENT}


def _change(zk: ZkClient, before: ZkSnapshot, after: ZkSnapshot) -> set[str]:
    """Turn ZooKeeper from ``before`` into ``after`` znode by znode, as Kafka writes them;
    the paths written."""
    old, new = _znodes(before), _znodes(after)  # (the producer-id block's is a set: kept)
    ops = [mw.create(p, new[p]) for p in sorted(new) if p not in old]
    ops += [mw.set_data(p, new[p]) for p in sorted(new) if p in old and old[p] != new[p]]
    ops += [mw.delete(p) for p in sorted(set(old) - set(new), reverse=True)]
    if ops:
        zk.multi_write(ops)
    return {op.path for op in ops}


def _replayed(records: Iterator[MetadataRecord]) -> MetadataImage:
    """The image ``records`` replay to, each validated as the controller validates its
    own writes."""
    delta = MetadataDelta(MetadataImage.EMPTY)
    for offset, record in enumerate(records):
        delta.replay(record, offset, 1)
    return delta.apply()


def _image(records: Iterator[MetadataRecord]) -> tuple[MetadataImage, list[str]]:
    """The image ``records`` replay to, its ACLs apart and without their ids (each copy
    names them afresh)."""
    image = _replayed(records)
    return replace(image, acls={}), sorted(map(repr, image.acls.values()))


def _synced_within(scope: Scope, zk: ZkSnapshot, image: MetadataImage) -> bool:
    """Whether the sync after the claim plans within ``scope`` exactly what it plans over
    everything, from ZooKeeper holding ``zk`` to ``image``."""
    epoch = (zk.controller_epoch.value if zk.controller_epoch else 0) + 1  # the claim's
    desired = ImageView(image, epoch, SECRET)
    everything = plan(SnapshotView(zk, SECRET), desired, EVERYTHING, SECRET)
    return plan(SnapshotView(zk, SECRET), desired, scope, SECRET).ops == everything.ops


def _parsed(raw: Iterator[bytes]) -> Iterator[MetadataRecord]:
    return (MetadataRecord.FromString(r) for r in raw)


@pytest.fixture
def tree(zk: ZkClient) -> ZkSnapshot:
    seed.write(zk, seed.generate(SPEC))
    return read_snapshot(zk)


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_the_catch_up_gives_the_image_of_a_full_copy_of_the_changed_tree(
    zk: ZkClient, zk_connect: str, tree: ZkSnapshot, change: str
) -> None:
    with TreeWatch(ZkClient(zk_connect)) as watch:
        old = read_snapshot(watch.client)
        acl_ids: dict[bytes, bytes] = {}
        topics, rest = translate_parts(old, TranslateReport(), SECRET, acl_ids)
        pre_copy = [*_parsed(topics), *_parsed(iter(rest))]
        written = _change(zk, old, CHANGES[change](old))
        changed, _ = watch.take()
    assert written and written <= changed  # (parents of created znodes are named too)
    targets = targets_of(changed)
    reread = read_targets(zk, targets)
    new = patched(old, targets, reread)
    caught = catch_up_records(old, new, targets, acl_ids, SECRET)

    full = read_snapshot(zk)
    assert replace(new, znodes_read=0) == replace(full, znodes_read=0)
    assert new.config_znodes == full.config_znodes
    assert new.znode_versions == full.znode_versions
    want = _image(_parsed(translate(full, TranslateReport(), SECRET, features=False)))
    assert _image(iter(pre_copy + caught)) == want
    assert caught  # every change here changes a record
    # the sync after the claim compares what the copy's scope, reckoned before the claim
    # and widened by what was read again, names, and plans what comparing all plans
    scope = copied_scope(old).union(reread_scope(old, new, targets))
    assert _synced_within(scope, full, _replayed(iter(pre_copy + caught)))
    assert reread.snapshot.znodes_read + len(reread.states) < old.znodes_read / 2


def test_changes_the_copy_does_not_read_catch_up_nothing(
    zk: ZkClient, zk_connect: str, tree: ZkSnapshot
) -> None:
    with TreeWatch(ZkClient(zk_connect)) as watch:
        old = read_snapshot(watch.client)
        zk.kazoo.create("/brokers/ids/77", b"{}", ephemeral=True)
        zk.kazoo.set("/controller_epoch", b"99")
        zk.kazoo.create("/config/changes/config_change_0000009999", b"{}")
        changed, _ = watch.take()
    targets = targets_of(changed)
    assert changed and not targets
    assert (
        catch_up_records(old, patched(old, targets, read_targets(zk, targets)), targets, {}) == []
    )
