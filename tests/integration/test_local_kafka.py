"""migration/local/kafka.py without starting Kafka, but with ports bound to find free ones:
the properties each kind of node gets. The rest: tests/unit/test_local_kafka.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from migration.common.properties import parse_properties
from migration.local.kafka import KafkaNode
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
