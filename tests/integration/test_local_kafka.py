"""migration/local/kafka.py without starting Kafka, but with ports bound to find free ones:
the properties each kind of node gets (the rest: tests/unit/test_local_kafka.py); and
waiting for a local Kafka cluster's partitions to be led, on a real ZooKeeper."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from migration.common.properties import parse_properties
from migration.local import kafka_cluster, seed
from migration.local.kafka import KafkaNode
from migration.zk import paths
from migration.zk.client import ZkClient
from migration.zk.model.topics import parse_partition_state, render_partition_state
from tests.unit.test_local_kafka import R39, R41


def test_node_properties(tmp_path: Path) -> None:
    combined = KafkaNode.kraft(R39, tmp_path / "n1", 1)
    props = combined.properties
    assert props["process.roles"] == "broker,controller"
    assert props["controller.quorum.voters"] == f"1@127.0.0.1:{combined.controller_port}"
    assert props["listeners"] == (
        f"PLAINTEXT://127.0.0.1:{combined.broker_port},"
        f"CONTROLLER://127.0.0.1:{combined.controller_port}"
    )
    assert combined.metadata_dir == tmp_path / "n1" / "data" / "__cluster_metadata-0"
    controller = KafkaNode.kraft(R41, tmp_path / "c", 3000, roles=("controller",))
    assert controller.broker_port is None
    assert controller.bootstrap == f"127.0.0.1:{controller.controller_port}"
    broker = KafkaNode.kraft(R41, tmp_path / "b", 2, roles=("broker",), voters={3000: 9})
    assert broker.properties["controller.quorum.voters"] == "3000@127.0.0.1:9"
    assert "CONTROLLER" not in broker.properties["listeners"]
    with pytest.raises(ValueError, match="voters"):
        KafkaNode.kraft(R41, tmp_path / "x", 2, roles=("broker",))
    zk_broker = KafkaNode.zookeeper_broker(R39, tmp_path / "z", 5, "h:1/c")
    assert "zookeeper.metadata.migration.enable" not in zk_broker.properties
    migrating = KafkaNode.zookeeper_broker(
        R39, tmp_path / "m", 5, "h:1/c", migration_voters={3000: 9}
    )
    assert migrating.properties["zookeeper.metadata.migration.enable"] == "true"
    with pytest.raises(ValueError, match="no ZooKeeper mode"):
        KafkaNode.zookeeper_broker(R41, tmp_path / "y", 5, "h:1/c")
    written = parse_properties(combined.write_config().read_text())
    assert written == props


def test_wait_led_returns_once_the_controller_has_led_every_partition(
    zk: ZkClient, zk_connect: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A just-started cluster's offline partitions (leader -1, as Kafka's controller
    leaves those whose replicas have not registered yet) hold the wait until a leader is
    written; a cluster that never gets one is a TimeoutError naming how many are left."""
    monkeypatch.setattr(kafka_cluster, "LED_POLL_S", 0.1)
    seed.write(zk, seed.generate(seed.ClusterSpec(brokers=3, topics=2, partitions=4)))
    name = sorted(zk.kazoo.get_children("/brokers/topics"))[0]
    path = paths.partition_state(name, 0)
    led = parse_partition_state(path, zk.kazoo.get(path)[0])
    zk.kazoo.set(path, render_partition_state(led._replace(leader=-1)))
    said: list[str] = []
    with pytest.raises(TimeoutError, match=r"^1 partitions still without a leader"):
        kafka_cluster.wait_led(zk_connect, 0.3, said.append)
    assert said and said[0] == "1 partitions without a leader yet: the controller elects them"

    done = threading.Event()
    waiter = threading.Thread(
        target=lambda: (kafka_cluster.wait_led(zk_connect, 60, said.append), done.set())
    )
    waiter.start()
    zk.kazoo.set(path, render_partition_state(led))  # the controller elected it
    waiter.join(60)
    assert done.is_set()
