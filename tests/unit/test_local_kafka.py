"""migration/local/kafka.py without starting Kafka: finding the jars, the properties each
kind of node gets, the tools' class names, the logging configurations."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from migration.common.properties import parse_properties
from migration.local.kafka import KafkaNode
from migration.local.kafka_release import (
    KafkaRelease,
    KafkaUnavailableError,
    kafka_release,
    random_cluster_id,
)

R39 = KafkaRelease("3.9.2", Path("/nowhere/kafka-3.9.2/libs"))
R41 = KafkaRelease("4.1.2", Path("/nowhere/kafka-4.1.2/libs"))


def test_missing_jars_name_make_kafka(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZK2KRAFT_TOOLS_DIR", str(tmp_path))
    with pytest.raises(KafkaUnavailableError, match="make kafka"):
        kafka_release("3.9.2")
    libs = tmp_path / "kafka-3.9.2" / "libs"
    libs.mkdir(parents=True)
    (libs / "kafka_2.13-3.9.2.jar").touch()
    assert kafka_release("3.9.2") == KafkaRelease("3.9.2", libs)


def test_cluster_ids_are_kafkas_form() -> None:
    for _ in range(200):
        cid = random_cluster_id()
        assert len(cid) == 22 and not cid.startswith("-")
        assert len(base64.urlsafe_b64decode(cid + "==")) == 16


def test_tool_classes_by_release() -> None:
    assert R39.tool_class("acls") == "kafka.admin.AclCommand"
    assert R41.tool_class("acls") == "org.apache.kafka.tools.AclCommand"
    assert R39.tool_class("topics") == R41.tool_class("topics")
    assert R41.tool_class("storage") == "kafka.tools.StorageTool"


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


@pytest.mark.parametrize("release", [R39, R41])
def test_log_configs(release: KafkaRelease, tmp_path: Path) -> None:
    node = release.log_config(tmp_path / "node.properties", to_file=True).read_text()
    tool = release.log_config(tmp_path / "tool.properties", to_file=False, level="WARN")
    assert "kafka.logs.dir}/server.log" in node and "INFO" in node
    assert "WARN" in tool.read_text() and "server.log" not in tool.read_text()
    cmd = release.java_command(
        "kafka.Kafka", ["x"], log_config=tool, logs_dir=tmp_path, heap_mb=512
    )
    assert cmd[-3:] == [f"{release.libs}/*", "kafka.Kafka", "x"]
    assert f"-Dkafka.logs.dir={tmp_path}" in cmd and "-Xmx512m" in cmd


def test_jvm_options_go_before_the_classpath(tmp_path: Path) -> None:
    log = R39.log_config(tmp_path / "log.properties", to_file=True)
    agent = "-javaagent:/x/agent.jar=127.0.0.1:9404:/x/config.yaml"
    cmd = R39.java_command(
        "kafka.Kafka", ["x"], log_config=log, logs_dir=tmp_path, heap_mb=512, jvm_options=(agent,)
    )
    assert cmd.index(agent) < cmd.index("-cp")
