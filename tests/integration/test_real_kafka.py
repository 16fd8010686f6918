"""What real Apache Kafka leaves behind, as the fixtures of tests/real_kafka.py build it:
the shape each fixture promises, checked against Kafka's own tools and ZooKeeper."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from migration.local.kafka import KafkaRelease, kafka_release
from migration.zk.client import ZkClient
from migration.zk.datadir import open_data_dir
from tests.real_kafka import BuiltMetadataLog, MetadataLogShape, ZkModeCluster, zk_files
from tests.zk_files import walk

_TOPIC_NAME = re.compile(r'"name":"(topic-\d{3})"')


def _dump(release: KafkaRelease, built: BuiltMetadataLog, *names: str) -> str:
    files = ",".join(str(built.partition / name) for name in names)
    done = release.run_tool("dump-log", "--cluster-metadata-decoder", "--files", files,
                            work_dir=built.log_dir.parent / "tools")  # fmt: skip
    return done.stdout


@pytest.mark.parametrize("version", ["3.9.2", "4.1.2"])
def test_metadata_log_after_kafkas_own_retention(
    version: str, request: pytest.FixtureRequest
) -> None:
    fixture = "kafka39_metadata_log" if version == "3.9.2" else "kafka41_metadata_log"
    built: BuiltMetadataLog = request.getfixturevalue(fixture)
    shape = MetadataLogShape.of(built.partition)
    print(f"Kafka {version}: built in {built.seconds:.1f} s\n{shape.listing()}")
    assert (built.log_dir / "meta.properties").exists()
    assert not list(built.partition.glob("*.deleted"))
    assert built.deleted, "Kafka deleted nothing: no retention clean happened"
    # (i) snapshots, (ii) a segment older than the newest snapshot, (iii) the log start
    # moved: the leader-epoch checkpoint starts at the oldest snapshot kept
    assert len(shape.checkpoints) >= 2
    assert shape.segments and shape.segments[0] < shape.checkpoints[-1][0]
    (_, log_start), *_ = shape.leader_epochs
    assert log_start > 0
    assert shape.checkpoints[0][0] == log_start
    assert shape.segments[0] <= log_start
    assert "00000000000000000000.log.deleted" in built.deleted

    # Kafka's own decoder reads every file; the newest snapshot and the segments after
    # it name every live topic, and the snapshot none of the deleted ones
    release = kafka_release(version)
    names = [f"{offset:020d}-{epoch:010d}.checkpoint" for offset, epoch in shape.checkpoints]
    newest = names[-1]
    snapshot = _dump(release, built, newest)
    assert "SnapshotHeader" in snapshot and "SnapshotFooter" in snapshot
    segments = _dump(release, built, *(f"{base:020d}.log" for base in shape.segments))
    assert "baseOffset" in segments and "NO_OP_RECORD" in segments
    older = _dump(release, built, *names)
    assert older.count("SnapshotHeader") == len(shape.checkpoints)
    in_snapshot = set(_TOPIC_NAME.findall(snapshot))
    assert in_snapshot | set(_TOPIC_NAME.findall(segments)) >= set(built.topics)
    assert in_snapshot <= set(built.topics)


def test_zookeeper_mode_cluster_as_kafka_wrote_it(zk_mode_cluster: ZkModeCluster) -> None:
    cluster = zk_mode_cluster
    print(f"{len(cluster.brokers)} brokers and their topics in {cluster.seconds:.1f} s")
    with ZkClient(cluster.connect) as zk:
        kazoo = zk.kazoo
        assert sorted(kazoo.get_children("/brokers/ids")) == ["1", "2"]
        for broker in cluster.brokers:
            raw, _ = kazoo.get(f"/brokers/ids/{broker.node_id}")
            registration = json.loads(raw)
            assert registration["endpoints"] == [f"PLAINTEXT://{broker.bootstrap}"]
            assert "migration" not in raw.decode().lower()
            assert "kraftControllerId" not in registration
        for name, partitions in cluster.topics.items():
            topic = json.loads(kazoo.get(f"/brokers/topics/{name}")[0])
            assert len(topic["topic_id"]) == 22
            assert sorted(topic["partitions"], key=int) == [str(p) for p in range(partitions)]
        orders = json.loads(kazoo.get("/config/topics/orders")[0])["config"]
        assert orders == {"retention.ms": "86400000", "cleanup.policy": "compact"}
        events = json.loads(kazoo.get("/config/topics/events")[0])["config"]
        assert events == {"max.message.bytes": "2000000"}
        acls = json.loads(kazoo.get("/kafka-acl/Topic/orders")[0])["acls"]
        assert [a["principal"] for a in acls] == ["User:reader"]
        assert kazoo.exists("/controller") is not None
        assert kazoo.exists("/migration") is None


def test_zookeepers_own_files_hold_the_cluster(
    zk_mode_cluster: ZkModeCluster, zk_data_dir_copy: Path
) -> None:
    data_dir = zk_data_dir_copy
    names = [name for name, _ in zk_files(data_dir)]
    print(*zk_files(data_dir), sep="\n")
    assert any(n.startswith("snapshot.") for n in names)
    assert any(n.startswith("log.") for n in names)
    offline = open_data_dir([data_dir], zk_mode_cluster.chroot)
    tree = walk(offline, "/brokers/topics")
    assert {"/brokers/topics/orders", "/brokers/topics/events"} <= set(tree)


def test_zookeeper_mode_brokers_stop(zk_mode_cluster: ZkModeCluster) -> None:
    zk_mode_cluster.stop_brokers()
    assert all(not broker.running for broker in zk_mode_cluster.brokers)
    with ZkClient(zk_mode_cluster.connect) as zk:
        assert zk.kazoo.get_children("/brokers/ids") == []
