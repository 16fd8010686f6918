"""The field bugs of Kafka's ZooKeeper writer (docs/field-bugs.md), each as a scenario
against a real ZooKeeper: ``test_bug_NN_...`` is FB-NN there (docs/field-bugs.md#fb-NN)."""

from __future__ import annotations

import copy
import json

import pytest

from migration.bridge.sync import MigrationStateMismatchError, full_sync
from migration.bridge.writer import SyncNeededError, ZkWriter
from migration.records import codes
from migration.zk import paths
from migration.zk.client import ZkClient
from migration.zk.fence import FencedError, claim, read_migration
from migration.zk.model import cluster, passwords, topics
from migration.zk.model.cluster import MigrationZnode
from migration.zk.model.topics import PartitionState, TopicAssignment
from migration.zk.multiwrite import create, delete, set_data
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


def every_kind(t: Timeline) -> None:
    t.create_topic("orders", [[1, 2], [2, 3]])
    t.commit(
        topic_config("orders", "retention.ms", "1000"),
        broker_config("", "log.cleaner.threads", "2"),
        broker_config("2", PASSWORD_CONFIG, "s3cret"),
        quota({"user": "bob"}, "producer_byte_rate", 10.0),
        scram("bob"),
        scram("carol", 2),
        acl(new_id(), "orders"),
        token("token-1"),
        rec("producer_ids_record", broker_id=1, broker_epoch=5, next_producer_id=2000),
    )


def test_bug_01_writes_queued_before_a_failover_reach_zookeeper_through_the_full_sync(
    zk: ZkClient,
) -> None:
    writer, fence = synced_writer(zk)
    t = Timeline()
    writer.write_change(fence, t.create_topic("written", [[1]]))
    every_kind(t)  # committed, never written: the leader died with them queued
    successor = ZkWriter(zk, secret=SECRET)
    result = full_sync(successor, claim(zk, 3001, 6), t.image)
    assert result.fence is not None and result.fence.offset == t.offset
    assert_zk_holds(zk, t.image)


def test_bug_02_a_half_written_topic_is_repaired_by_the_sync(zk: ZkClient) -> None:
    writer, fence = synced_writer(zk)
    t = Timeline()
    fence = writer.write_change(fence, t.create_topic("half", [[1, 2], [2, 3], [3, 1]]))
    wrong = TopicAssignment("half", {0: (1, 2), 1: (3, 2), 2: (3, 1), 3: (1, 3)}, "x" * 22)
    zk.multi_write(
        [
            set_data(paths.topic("half"), topics.render_topic(wrong)),
            delete(paths.partition_state("half", 1)),  # missing state
            create(paths.partition("half", 3)),  # an extra partition with its state
            create(
                paths.partition_state("half", 3),
                topics.render_partition_state(PartitionState(1, 0, 1, (1, 3))),
            ),
            create(paths.partition("half", 7)),  # an orphan partition znode
        ]
    )
    full_sync(writer, fence, t.image)
    assert_zk_holds(zk, t.image)
    assert sorted(zk.kazoo.get_children(paths.topic_partitions("half"))) == ["0", "1", "2"]


def test_bug_03_acls_quotas_and_scram_created_in_kraft_are_all_synced(zk: ZkClient) -> None:
    writer, fence = synced_writer(zk)
    t = Timeline()
    every_kind(t)
    full_sync(writer, fence, t.image)
    assert_zk_holds(zk, t.image)


def test_bug_04_a_scram_change_for_a_user_without_quotas_is_written_with_its_quotas(
    zk: ZkClient,
) -> None:
    writer, fence = synced_writer(zk)
    t = Timeline()
    fence = writer.write_change(fence, t.commit(scram("no-quotas")))
    fence = writer.write_change(fence, t.commit(quota({"user": "both"}, "producer_byte_rate", 5)))
    fence = writer.write_change(fence, t.commit(scram("both", 2)))
    assert set(json.loads(zk.get("/config/users/no-quotas")[0])["config"]) == {"SCRAM-SHA-256"}
    both = json.loads(zk.get("/config/users/both")[0])["config"]
    assert set(both) == {"producer_byte_rate", "SCRAM-SHA-512"}
    writer.write_change(
        fence, t.commit(rec("remove_user_scram_credential_record", name="both", mechanism=2))
    )
    assert json.loads(zk.get("/config/users/both")[0])["config"] == {"producer_byte_rate": "5"}
    assert_zk_holds(zk, t.image)


def test_bug_05_topic_configs_are_synced_and_passwords_never_stored_in_clear(
    zk: ZkClient,
) -> None:
    writer, fence = synced_writer(zk)
    t = Timeline()
    every_kind(t)
    zk.multi_write(
        [
            create(
                "/config/brokers/2",
                json.dumps({"version": 1, "config": {PASSWORD_CONFIG: "s3cret"}}).encode(),
            )
        ]
    )  # a password in clear, as Kafka's writer left it
    full_sync(writer, fence, t.image)
    stored = json.loads(zk.get("/config/brokers/2")[0])["config"][PASSWORD_CONFIG]
    assert stored != "s3cret" and passwords.decode(stored, SECRET) == "s3cret"
    assert json.loads(zk.get("/config/topics/orders")[0])["config"] == {"retention.ms": "1000"}
    assert_zk_holds(zk, t.image)


def test_bug_06_config_change_notifications_name_the_exact_entity_path(zk: ZkClient) -> None:
    writer, fence = synced_writer(zk)
    t = Timeline()
    fence = writer.write_change(fence, t.create_topic("orders", [[1]]))
    fence = writer.write_change(
        fence,
        t.commit(
            topic_config("orders", "retention.ms", "1"),
            broker_config("", "log.cleaner.threads", "2"),
            quota({"user": "a b", "client-id": None}, "producer_byte_rate", 1.0),
        ),
    )
    writer.write_change(
        fence,
        t.commit(
            topic_config("orders", "retention.ms", None),  # deletions are announced too
            broker_config("", "log.cleaner.threads", None),
            quota({"user": "a b", "client-id": None}, "producer_byte_rate", None),
        ),
    )
    paths_announced = [
        json.loads(zk.get(f"{paths.CONFIG_CHANGES}/{c}")[0])["entity_path"]
        for c in sorted(zk.kazoo.get_children(paths.CONFIG_CHANGES))
    ]
    expected = ["brokers/<default>", "topics/orders", "users/a%20b/clients/<default>"]
    assert sorted(paths_announced[:3]) == sorted(paths_announced[3:]) == expected
    assert zk.kazoo.exists("/config/users/a%20b") is None  # nothing left under the user


def test_bug_07_a_topic_created_in_kraft_has_its_config_znode(zk: ZkClient) -> None:
    writer, fence = synced_writer(zk)
    t = Timeline()
    writer.write_change(fence, t.create_topic("new", [[1]]))
    assert json.loads(zk.get("/config/topics/new")[0]) == {"version": 1, "config": {}}


def test_bug_08_quota_names_are_sanitized_once_and_defaults_kept_apart(zk: ZkClient) -> None:
    writer, fence = synced_writer(zk)
    t = Timeline()
    writer.write_change(
        fence,
        t.commit(
            quota({"user": "alice@example.com"}, "producer_byte_rate", 1.0),
            quota({"user": None}, "producer_byte_rate", 2.0),
            quota({"client-id": "percent%sign"}, "producer_byte_rate", 4.0),
            broker_config("", "log.cleaner.threads", "2"),
        ),
    )
    assert set(zk.kazoo.get_children("/config/users")) == {"alice%40example.com", "<default>"}
    assert "percent%25sign" in zk.kazoo.get_children("/config/clients")
    assert "<default>" in zk.kazoo.get_children("/config/brokers")
    assert_zk_holds(zk, t.image)


def test_bug_09_zookeeper_gets_the_producer_id_block_after_kraft_s(zk: ZkClient) -> None:
    writer, fence = synced_writer(zk)
    zk_mode_block = cluster.ProducerIdBlock(1, 0, 999)  # the last block a ZK controller gave
    # Kafka creates the znode empty at start-up (the sync made it), then sets it.
    zk.multi_write(
        [set_data(paths.PRODUCER_ID_BLOCK, cluster.render_producer_id_block(zk_mode_block))]
    )
    t = Timeline()  # the copy: KRaft goes on after ZooKeeper's block
    t.commit(rec("producer_ids_record", broker_id=1, broker_epoch=-1, next_producer_id=1000))
    synced = full_sync(writer, fence, t.image).fence
    assert synced is not None
    allocated = rec("producer_ids_record", broker_id=2, broker_epoch=5, next_producer_id=2000)
    writer.write_change(synced, t.commit(allocated))
    block = cluster.parse_producer_id_block("", zk.get(paths.PRODUCER_ID_BLOCK)[0])
    assert block is not None
    # A ZooKeeper controller after a rollback hands out ids above everything KRaft did.
    assert (block.broker, block.block_start, block.next_producer_id) == (-1, 2000, 3000)


def test_an_empty_producer_id_block_stays_empty_until_kraft_hands_out_one(zk: ZkClient) -> None:
    """Kafka leaves the znode with null data on a cluster that never used idempotence:
    the sync leaves it so, and KRaft's first block is then set (not created) there."""
    zk.multi_write([create(paths.PRODUCER_ID_BLOCK)])  # null data, as Kafka creates it
    writer, fence = synced_writer(zk)
    t = Timeline()
    fence = writer.write_change(fence, t.create_topic("orders", [[1]]))
    assert not zk.get(paths.PRODUCER_ID_BLOCK)[0]
    allocated = rec("producer_ids_record", broker_id=2, broker_epoch=5, next_producer_id=1000)
    writer.write_change(fence, t.commit(allocated))
    block = cluster.parse_producer_id_block("", zk.get(paths.PRODUCER_ID_BLOCK)[0])
    assert block is not None and (block.block_start, block.next_producer_id) == (1000, 2000)


def test_bug_10_deleting_an_acl_rewrites_its_pattern_from_the_previous_image(
    zk: ZkClient,
) -> None:
    writer, fence = synced_writer(zk)
    t = Timeline()
    keep, drop, other = new_id(), new_id(), new_id()
    fence = writer.write_change(
        fence,
        t.commit(
            acl(keep, "orders", "User:alice"),
            acl(drop, "orders", "User:bob"),
            acl(other, "orders", "User:bob", pattern_type=codes.PATTERN_PREFIXED),
        ),
    )
    fence = writer.write_change(fence, t.commit(rec("remove_access_control_entry_record", id=drop)))
    entries = json.loads(zk.get("/kafka-acl/Topic/orders")[0])["acls"]
    assert [e["principal"] for e in entries] == ["User:alice"]
    assert zk.kazoo.exists("/kafka-acl-extended/prefixed/Topic/orders") is not None
    writer.write_change(fence, t.commit(rec("remove_access_control_entry_record", id=keep)))
    assert zk.kazoo.exists("/kafka-acl/Topic/orders") is None
    assert_zk_holds(zk, t.image)


def test_bug_11_a_change_is_an_immutable_value_new_partitions_included(zk: ZkClient) -> None:
    writer, fence = synced_writer(zk)
    t = Timeline()
    fence = writer.write_change(fence, t.create_topic("grow", [[1]]))
    tid = t.topic_id("grow")
    change = t.commit(
        rec("partition_record", topic_id=tid, partition_id=1, replicas=[2], isr=[2], leader=2)
    )
    assert change.delta is not None
    before = copy.deepcopy((change.delta.topics, change.previous, change.image))
    writer.write_change(fence, change)
    assert (change.delta.topics, change.previous, change.image) == before
    assert json.loads(zk.get(paths.partition_state("grow", 1))[0])["leader"] == 2
    assert_zk_holds(zk, t.image)


def test_bug_16_a_new_leader_learns_the_migration_version_after_its_claim(zk: ZkClient) -> None:
    old_writer, old_fence = synced_writer(zk, kraft_epoch=5)
    stale = read_migration(zk)  # what a new leader read before claiming, in Kafka
    t = Timeline()
    old_writer.write_change(old_fence, t.create_topic("late", [[1]]))  # the late write
    now = read_migration(zk)
    assert stale is not None and now is not None and now[1] > stale[1]
    new_writer = ZkWriter(zk, secret=SECRET)
    new_fence = claim(zk, 3001, 6)
    new_fence = new_writer.write_change(
        new_fence, t.commit(topic_config("late", "retention.ms", "5"))
    )
    assert json.loads(zk.get("/config/topics/late")[0])["config"] == {"retention.ms": "5"}
    with pytest.raises(FencedError):  # and the deposed leader cannot write any more
        old_writer.write_change(old_fence, t.commit(topic_config("late", "retention.ms", "6")))


def test_bug_23_a_leftover_migration_znode_refuses_the_sync(zk: ZkClient) -> None:
    t = Timeline()
    every_kind(t)
    writer = ZkWriter(zk, secret=SECRET)
    fence = claim(zk, 3000, 5)
    left = MigrationZnode(3000, 4, 50_000, 4)  # an earlier attempt's
    zk.multi_write([set_data(paths.MIGRATION, cluster.render_migration(left))])
    fence = claim(zk, 3000, 6)
    with pytest.raises(MigrationStateMismatchError, match="offset 50000"):
        full_sync(writer, fence, t.image)
    assert zk.kazoo.exists(paths.topic("orders")) is None  # nothing written


def test_bug_24_states_carry_the_claimed_zookeeper_epoch_and_higher_ones_are_rewritten(
    zk: ZkClient,
) -> None:
    writer, fence = synced_writer(zk, kraft_epoch=500)
    t = Timeline()
    fence = writer.write_change(fence, t.create_topic("t", [[1, 2]]))
    state = json.loads(zk.get(paths.partition_state("t", 0))[0])
    assert state["controller_epoch"] == fence.zk_controller_epoch == 1
    raft_epoch_state = PartitionState(1, 0, 500, (1, 2))  # what Kafka's writer wrote
    zk.multi_write(
        [set_data(paths.partition_state("t", 0), topics.render_partition_state(raft_epoch_state))]
    )
    result = full_sync(writer, fence, t.image)
    assert result.plan.changes["partitions"]["set"] == ["t-0"]
    state = json.loads(zk.get(paths.partition_state("t", 0))[0])
    assert state["controller_epoch"] == fence.zk_controller_epoch


def test_bug_28_a_failed_write_is_reported_and_the_full_sync_repairs_it(zk: ZkClient) -> None:
    writer, fence = synced_writer(zk)
    t = Timeline()
    fence = writer.write_change(fence, t.create_topic("t", [[1, 2], [2, 1]]))
    zk.kazoo.delete(paths.partition_state("t", 1))  # ZooKeeper drifted
    change = t.commit(
        rec("partition_change_record", topic_id=t.topic_id("t"), partition_id=1, isr={"ids": [2]})
    )
    with pytest.raises(SyncNeededError, match="no such node"):
        writer.write_change(fence, change)
    found = read_migration(zk)
    assert found is not None and found[0].kraft_metadata_offset < t.offset  # not claimed
    result = full_sync(writer, fence, t.image)
    assert result.fence is not None and result.fence.offset == t.offset
    assert_zk_holds(zk, t.image)
