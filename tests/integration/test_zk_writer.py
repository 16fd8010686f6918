"""The ZooKeeper writer against a real ZooKeeper: every kind in Kafka's formats, the
notifications inside the fenced multis, batching and the lag."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from migration.bridge.plan import is_notification
from migration.bridge.sync import full_sync
from migration.bridge.writer import SyncNeededError
from migration.records import codes
from migration.zk import paths
from migration.zk.client import ZkClient
from migration.zk.errors import ZnodeFormatError
from migration.zk.model import passwords
from migration.zk.multiwrite import DEFAULT_MULTI_BYTES, create
from tests.zk_timeline import (
    PASSWORD_CONFIG,
    SECRET,
    Timeline,
    acl,
    assert_zk_holds,
    broker_config,
    new_id,
    planned_ops,
    quota,
    rec,
    scram,
    synced_writer,
    token,
    topic_config,
)

KRAFT_EPOCH = 7


def data(zk: ZkClient, path: str) -> dict[str, object]:
    raw, _ = zk.get(path)
    loaded: dict[str, object] = json.loads(raw)
    return loaded


def notifications(zk: ZkClient, root: str) -> list[bytes]:
    return [zk.get(f"{root}/{c}")[0] for c in sorted(zk.kazoo.get_children(root))]


def test_a_topic_is_written_in_kafkas_formats_with_the_claimed_zookeeper_epoch(
    zk: ZkClient,
) -> None:
    writer, fence = synced_writer(zk, kraft_epoch=KRAFT_EPOCH)
    t = Timeline()
    change = t.create_topic("orders", [[1, 2, 3], [2, 3, 1]])
    fence = writer.write_change(fence, change)
    topic = data(zk, paths.topic("orders"))
    assert topic["version"] == 3 and topic["partitions"] == {"0": [1, 2, 3], "1": [2, 3, 1]}
    assert topic["adding_replicas"] == {} and topic["removing_replicas"] == {}
    state = data(zk, paths.partition_state("orders", 1))
    assert state == {
        "controller_epoch": fence.zk_controller_epoch,
        "leader": 2,
        "version": 1,
        "leader_epoch": 0,
        "isr": [2, 3, 1],
    }
    assert fence.zk_controller_epoch < KRAFT_EPOCH  # never the Raft epoch: docs/field-bugs.md#fb-24
    assert data(zk, paths.config_entity("topics", "orders")) == {"version": 1, "config": {}}
    assert fence.offset == change.manifest.last_offset and fence.lag(t.offset) == 0
    assert_zk_holds(zk, t.image)


def test_partition_changes_reassignments_and_deletions(zk: ZkClient) -> None:
    writer, fence = synced_writer(zk)
    t = Timeline()
    fence = writer.write_change(fence, t.create_topic("orders", [[1, 2, 3], [2, 3, 1]]))
    tid = t.topic_id("orders")
    fence = writer.write_change(
        fence,
        t.commit(
            rec("partition_change_record", topic_id=tid, partition_id=0, isr={"ids": [1, 2]}),
            rec(
                "partition_change_record",
                topic_id=tid,
                partition_id=1,
                replicas={"ids": [2, 3, 1, 4]},
                adding_replicas={"ids": [4]},
                leader=3,
            ),
            rec("partition_record", topic_id=tid, partition_id=2, replicas=[4, 1], isr=[4, 1]),
        ),
    )
    state = data(zk, paths.partition_state("orders", 1))
    assert state["leader"] == 3 and state["leader_epoch"] == 1
    assert data(zk, paths.topic("orders"))["adding_replicas"] == {"1": [4]}
    assert_zk_holds(zk, t.image)
    fence = writer.write_change(fence, t.commit(rec("remove_topic_record", topic_id=tid)))
    assert zk.kazoo.exists(paths.topic("orders")) is None
    assert zk.kazoo.exists(paths.config_entity("topics", "orders")) is None
    assert_zk_holds(zk, t.image)


def test_configs_quotas_scram_acls_tokens_and_producer_ids(zk: ZkClient) -> None:
    writer, fence = synced_writer(zk)
    t = Timeline()
    fence = writer.write_change(fence, t.create_topic("orders", [[1]]))
    fence = writer.write_change(
        fence,
        t.commit(
            topic_config("orders", "retention.ms", "1000"),
            broker_config("", "log.cleaner.threads", "2"),
            broker_config("1", PASSWORD_CONFIG, "s3cret"),
            quota({"user": "alice@example.com"}, "producer_byte_rate", 1024.0),
            quota({"user": None}, "consumer_byte_rate", 2048.5),
            quota({"user": "alice@example.com", "client-id": "app 1"}, "request_percentage", 50.0),
            quota({"ip": "10.0.0.1"}, "connection_creation_rate", 10.0),
            scram("alice@example.com", 2),
            acl(new_id(), "orders"),
            acl(new_id(), "ord", pattern_type=codes.PATTERN_PREFIXED),
            token("token-1"),
            rec("producer_ids_record", broker_id=1, broker_epoch=5, next_producer_id=5000),
        ),
    )
    assert_zk_holds(zk, t.image)
    user = data(zk, "/config/users/alice%40example.com")
    assert user["config"] == {
        "producer_byte_rate": "1024",
        "SCRAM-SHA-512": (
            "salt=c2FsdC1hbGljZUBleGFtcGxlLmNvbQ==,"
            "stored_key=c3RvcmVkLWFsaWNlQGV4YW1wbGUuY29t,"
            "server_key=c2VydmVyLWFsaWNlQGV4YW1wbGUuY29t,iterations=4096"
        ),
    }
    assert data(zk, "/config/users/<default>")["config"] == {"consumer_byte_rate": "2048.5"}
    assert data(zk, "/config/users/alice%40example.com/clients/app%201")["config"] == {
        "request_percentage": "50.0"  # a double quota, as Kafka writes it
    }
    assert data(zk, "/config/ips/10.0.0.1")["config"] == {"connection_creation_rate": "10"}
    stored = data(zk, "/config/brokers/1")["config"]
    assert isinstance(stored, dict) and stored[PASSWORD_CONFIG] != "s3cret"
    assert passwords.decode(stored[PASSWORD_CONFIG], SECRET) == "s3cret"
    assert data(zk, paths.PRODUCER_ID_BLOCK) == {
        "version": 1,
        "broker": -1,
        "block_start": "5000",
        "block_end": "5999",
    }
    assert json.loads(notifications(zk, paths.ACL_EXTENDED_CHANGES)[-1]) == {
        "version": 1,
        "resourceType": "TOPIC",
        "name": "ord",
        "patternType": "PREFIXED",
    }
    assert notifications(zk, paths.ACL_CHANGES)[-1] == b"TOPIC:orders"


def test_a_large_change_is_cut_into_fenced_multis_that_keep_the_offset_until_the_last(
    zk: ZkClient,
) -> None:
    landed: list[int] = []
    writer, fence = synced_writer(zk, max_multi_bytes=8 * 1024, progress=landed.append)
    t = Timeline()
    change = t.create_topic("wide", [[1, 2, 3]] * 300)
    before = fence
    landed.clear()  # the initial sync's multi
    fence = writer.write_change(fence, change)
    assert len(landed) > 5 and sum(landed) == len(planned_ops(writer, before, change))
    assert fence.migration_version == before.migration_version + len(landed)
    assert fence.offset == change.manifest.last_offset
    assert_zk_holds(zk, t.image)


def test_every_multi_fits_the_budget(zk: ZkClient) -> None:
    sizes: list[int] = []
    original = zk.multi_write_async

    def spy(ops: list[object]) -> object:
        sizes.append(sum(op.size(zk.chroot) for op in ops))  # type: ignore[attr-defined]
        return original(ops)  # type: ignore[arg-type]

    writer, fence = synced_writer(zk, max_multi_bytes=16 * 1024)
    zk.multi_write_async = spy  # type: ignore[method-assign]
    t = Timeline()
    writer.write_change(fence, t.create_topic("wide", [[1, 2, 3]] * 500))
    assert len(sizes) > 3 and max(sizes) <= 16 * 1024 < DEFAULT_MULTI_BYTES


def test_merged_changes_write_once_what_several_deltas_did(zk: ZkClient) -> None:
    writer, fence = synced_writer(zk)
    t = Timeline()
    changes = [
        t.create_topic("a", [[1]]),
        t.commit(topic_config("a", "retention.ms", "1")),
        t.commit(rec("remove_topic_record", topic_id=t.topic_id("a"))),
        t.create_topic("a", [[2]]),
        t.commit(quota({"user": "u"}, "producer_byte_rate", 1.0)),
        t.commit(quota({"user": "u"}, "producer_byte_rate", None)),
    ]
    fence = writer.write_changes(fence, changes)
    assert fence.offset == t.offset
    assert_zk_holds(zk, t.image)
    assert zk.kazoo.exists("/config/users/u") is None


@pytest.mark.parametrize("with_secret", [True, False])
def test_a_password_config_is_never_written_in_clear(zk: ZkClient, with_secret: bool) -> None:
    writer, fence = synced_writer(zk)
    writer.secret = SECRET if with_secret else None
    t = Timeline()
    change = t.commit(broker_config("", PASSWORD_CONFIG, "s3cret"))
    if with_secret:
        writer.write_change(fence, change)
        assert b"s3cret" not in zk.get("/config/brokers/<default>")[0]
    else:
        with pytest.raises(ValueError, match=r"password\.encoder\.secret"):
            writer.write_change(fence, change)
        assert zk.kazoo.exists("/config/brokers/<default>") is None


def test_each_notification_lands_in_the_multi_of_the_change_it_announces(zk: ZkClient) -> None:
    writer, fence = synced_writer(zk, max_multi_bytes=2048)
    t = Timeline()
    fence = writer.write_change(fence, t.create_topics(40, [[1]]))
    change = t.commit(*(topic_config(f"t{i:04}", "retention.ms", str(i)) for i in range(40)))
    multis, _ = writer.multis(fence, planned_ops(writer, fence, change), t.offset, t.epoch)
    assert len(multis) > 5
    for m in multis:
        body = m[1:-1]  # between the fence's check and its /migration write
        assert not is_notification(body[0])
        announced = [op for op in body if is_notification(op)]
        changed = [op for op in body if op.path.startswith("/config/topics/")]
        assert [json.loads(op.data)["entity_path"] for op in announced] == [
            op.path.removeprefix("/config/") for op in changed
        ]
    writer.write_change(fence, change)
    assert len(zk.kazoo.get_children(paths.CONFIG_CHANGES)) == 40


def test_a_change_loaded_from_a_snapshot_asks_for_the_full_sync(zk: ZkClient) -> None:
    writer, fence = synced_writer(zk)
    t = Timeline()
    change = t.create_topic("t", [[1]])
    from_snapshot = replace(change, delta=None)
    with pytest.raises(SyncNeededError, match="snapshot"):
        writer.write_change(fence, from_snapshot)
    assert zk.kazoo.exists(paths.topic("t")) is None


def test_malformed_znodes_stop_the_full_sync_naming_them(zk: ZkClient) -> None:
    writer, fence = synced_writer(zk)
    zk.multi_write([create(paths.topic("bad"), b'{"version":3,"partitions":"none"}')])
    t = Timeline()
    t.create_topic("good", [[1]])
    with pytest.raises(ZnodeFormatError, match=r"/brokers/topics/bad: .*1 malformed znode"):
        full_sync(writer, fence, t.image)
    assert zk.kazoo.exists(paths.topic("good")) is None  # nothing written


def test_ops_never_show_their_data(zk: ZkClient) -> None:
    writer, fence = synced_writer(zk)
    t = Timeline()
    change = t.commit(scram("alice"), broker_config("", PASSWORD_CONFIG, "s3cret"))
    text = repr(planned_ops(writer, fence, change))
    assert "salt" not in text and "stored" not in text and "s3cret" not in text
