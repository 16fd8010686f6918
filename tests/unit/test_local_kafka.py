"""migration/local/kafka.py without starting Kafka: finding the jars, the tools' class
names, the logging configurations, a local cluster's inventory. The properties each kind
of node gets (its ports taken from the machine): tests/integration/test_local_kafka.py."""

from __future__ import annotations

import base64
import shlex
import tomllib
from pathlib import Path

import pytest

from migration.cli.main import build_parser
from migration.cli.parser import UsageError
from migration.local import kafka_service
from migration.local.kafka_cluster import LocalKafkaCluster, inventory_text
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


def test_an_inventory_starts_every_node_with_the_clusters_heap_and_start_timeout(
    tmp_path: Path,
) -> None:
    """The inventory's restart and start templates are ``kafka-node`` commands carrying
    the cluster's heap and start timeout, as the CLI parses them; a heap Kafka cannot
    start in is a usage error."""
    cluster = LocalKafkaCluster(
        base=tmp_path, connect="h:1/c", brokers={1: tmp_path / "b1" / "server.properties"},
        broker_ports={1: 9}, controller_ports={3000: 10}, heap_mb=2048, start_timeout_s=539.5,
    )  # fmt: skip
    inventory = tomllib.loads(inventory_text(cluster))
    parser = build_parser()
    for kind, template in [("broker", "restart"), ("controller", "start")]:
        words = shlex.split(inventory["defaults"][kind][template])
        assert words[1:4] == ["-m", "migration.cli.main", "kafka-node"]
        args = parser.parse_args(words[3:])
        assert (args.kafka_node_command, args.heap_mb, args.timeout) == (template, 2048, 539.5)
    default = parser.parse_args(["kafka-node", "start", "--properties", "p"])
    assert (default.heap_mb, default.timeout) == (kafka_service.HEAP_MB, kafka_service.START_S)
    for bad in ("64", "lots", "-1"):
        with pytest.raises(UsageError, match=r"--heap-mb: .* is not a number of MiB >= 128"):
            parser.parse_args(["kafka-node", "restart", "--properties", "p", "--heap-mb", bad])
