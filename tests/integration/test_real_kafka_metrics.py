"""zk2kraft's alert rules and dashboard read real Apache Kafka: a Kafka 3.9.2 KRaft
controller (``zookeeper.metadata.migration.enable``) and a ZooKeeper-mode 3.9.2 broker,
each with the Prometheus JMX exporter's agent and the project's exporter configuration
(charts/zk2kraft/files/kafka-jmx-exporter.yaml), scraped by a real Prometheus that loads
the project's rule file, through a real migration (the broker restarted with the
migration flag).

What it shows: Kafka's MBeans come out under the names zk2kraft exports (every one the
catalog has a Kafka MBean for, bar the three KIP-866 designed and Kafka never built, and
the ZooKeeper session as ``zk2kraft_zookeeper_connected``); the ZkMigrationState series
moves PRE_MIGRATION (2) → MIGRATION (1) in Prometheus' storage; MultipleActiveControllers
does not match while the ZooKeeper controller (the broker) and the KRaft controller in
PRE_MIGRATION both report ActiveControllerCount 1 (as Kafka's procedure has it), and the
roll's restart moves BrokerDown to pending and back; the write-behind lag, metadata
errors, the ZooKeeper write counts (a topic created after the migration is dual-written)
carry real values; every dashboard query
parses, and each whose series real Kafka exports returns data.

One JVM of each kind, one Prometheus; each stopped by its own handle (KafkaGroup, the
harness). About 20-35 s on 2 shared cores, most of it the two JVMs starting and the
broker's restart.
"""

from __future__ import annotations

import json
import re
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from kafka.admin import KafkaAdminClient, NewTopic

from migration.common.ports import unused_port
from migration.common.properties import parse_properties
from migration.local.kafka import KafkaGroup, KafkaNode, voters_text
from migration.local.kafka_release import kafka_release, tools_dir
from migration.local.zookeeper import EmbeddedZooKeeper
from migration.observability import catalog
from tests.broker_harness import eventually
from tests.prometheus_harness import Prometheus, prometheus
from tests.tools import CHART, DASHBOARD, RULES

EXPORTER_CONFIG = CHART / "files" / "kafka-jmx-exporter.yaml"
CONTROLLER_ID = 3000
STATE = catalog.ZK_MIGRATION_STATE.name
ACTIVE = catalog.ACTIVE_CONTROLLER_COUNT.name
METRIC = re.compile(r"\b((?:kafka|zk2kraft)_[a-z0-9_]+)\b")
# What the catalog has that real Kafka 3.9 has no MBean for: the three KIP-866 designed
# (never built in Kafka) and zk2kraft's own driver and settings; summaries have no _sum
# (Kafka's histograms keep none). The audit's are pushed by the audit, not a process.
NOT_IN_KAFKA = {
    catalog.MIGRATION_STATE.name,
    catalog.METADATA_TYPE.name,
    catalog.FEATURES.name,
    catalog.DRIVER_PHASE.name,
    catalog.DRIVER_PHASE_SECONDS.name,
    catalog.DUAL_WRITE_ERRORS.name,
    catalog.MIGRATION_ENABLED.name,
    catalog.MAX_WRITE_BEHIND.name,
} | {s.name + "_sum" for s in catalog.ALL if s.kind is catalog.Kind.SUMMARY}


def agent_jar() -> Path:
    jar = tools_dir() / "jmx-exporter" / "jmx_prometheus_javaagent.jar"
    if not jar.is_file():
        pytest.fail(f"{jar} is missing: run `make kafka` (make test does)")
    return jar


def rule_expr(alert: str) -> str:
    """``alert``'s expression in the project's rule file."""
    groups = yaml.safe_load(RULES.read_text())["groups"]
    (expr,) = [r["expr"] for g in groups for r in g["rules"] if r.get("alert") == alert]
    return str(expr)


def one_value(server: Prometheus, promql: str) -> float | None:
    result = server.query(promql)
    return float(result[0]["value"][1]) if result else None


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=20) as answer:
        text: str = answer.read().decode()
    return text


@dataclass
class Migrated:
    server: Prometheus
    controller: KafkaNode
    broker: KafkaNode
    targets: dict[str, str]  # job -> its one target
    since: float
    multiple_before: list[dict[str, Any]] = field(default_factory=list)
    broker_down: list[dict[str, Any]] = field(default_factory=list)
    states: list[float] = field(default_factory=list)


@pytest.fixture(scope="module")
def migrated(
    zk_server: EmbeddedZooKeeper, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Migrated]:
    tmp = tmp_path_factory.mktemp("real-kafka-metrics")
    release = kafka_release("3.9.2")
    connect = f"{zk_server.connect_string}/real-kafka-metrics/{uuid.uuid4().hex[:8]}"
    ports = {"controller": unused_port(), "broker": unused_port()}
    jar = agent_jar()

    def agent(job: str) -> tuple[str, ...]:
        return (f"-javaagent:{jar}=127.0.0.1:{ports[job]}:{EXPORTER_CONFIG}",)

    broker = KafkaNode.zookeeper_broker(release, tmp / "broker", 1, connect, heap_mb=384)
    broker.jvm_options = agent("broker")
    controller = KafkaNode.kraft(
        release, tmp / "controller", CONTROLLER_ID, roles=("controller",), heap_mb=384,
        extra={"zookeeper.metadata.migration.enable": "true", "zookeeper.connect": connect},
    )  # fmt: skip
    controller.jvm_options = agent("controller")
    targets = {job: f"127.0.0.1:{port}" for job, port in ports.items()}
    jobs = {job: [target] for job, target in targets.items()}
    with (
        prometheus(tmp / "prometheus", jobs, [RULES]) as server,
        KafkaGroup() as group,
    ):
        try:  # the broker stops first: it shuts down through the controller
            since = time.time()
            group.start(broker)  # the ZooKeeper controller, as before any migration
            meta = parse_properties((broker.data_dir / "meta.properties").read_text())
            controller.format(meta["cluster.id"])
            group.start(controller)
            on_controller = f'{STATE}{{job="controller"}}'
            eventually(lambda: one_value(server, on_controller) == 2, 60, "PRE_MIGRATION scraped")
            facts = Migrated(server, controller, broker, targets, since)
            eventually(lambda: one_value(server, f"sum({ACTIVE})") == 2, 30, "two leaders")
            facts.multiple_before = server.query(rule_expr("MultipleActiveControllers"))
            # the first broker roll of a migration: the flag and the KRaft controllers' voters
            broker.stop()
            facts.broker_down = eventually(
                lambda: server.active("BrokerDown"), 30, "BrokerDown pending in the roll"
            )
            assert controller.controller_port is not None
            broker.properties |= {
                "zookeeper.metadata.migration.enable": "true",
                "controller.quorum.voters": voters_text(
                    {CONTROLLER_ID: controller.controller_port}
                ),
                "controller.listener.names": "CONTROLLER",
            }
            broker.start()

            def migrated_states() -> list[float]:
                values = server.values(on_controller, since)
                return values if values[-1] == 1 else []

            facts.states = eventually(migrated_states, 120, "MIGRATION scraped")
            eventually(lambda: not server.active("BrokerDown"), 60, "BrokerDown resolved")
            eventually(
                lambda: "Completed migration" in controller.log_path.read_text(), 30, "Kafka's log"
            )
            yield facts
        finally:
            broker.stop()


def test_kafka_exports_the_names_zk2kraft_exports(migrated: Migrated) -> None:
    server = migrated.server
    eventually(lambda: server.scraped() == set(migrated.targets.values()), 30, "both scraped")
    names = {
        r["metric"]["__name__"]
        for r in server.query('group by (__name__) ({__name__=~"kafka_.*|zk2kraft_.*"})')
    }
    from_processes = catalog.names() - {  # not the audit's, not the driven migration's own
        s.name
        for s in catalog.ALL
        if catalog.Where.AUDIT in s.where or s.where == (catalog.Where.DRIVEN,)
    }
    assert from_processes - names == NOT_IN_KAFKA
    # the agent serves the process's health under prometheus_client's names too
    for name in ("process_resident_memory_bytes", "process_open_fds"):
        assert len(server.query(f"{name} > 0")) == 2, name


def test_the_state_moves_from_pre_migration_to_migration(migrated: Migrated) -> None:
    server, states = migrated.server, [int(v) for v in migrated.states]
    assert 2 in states and states[-1] == 1, states
    assert 2 not in states[states.index(1) :]  # 2 first, then 1, never back
    # every ZooKeeper-mode broker reports ZK (4), migrating or not
    assert one_value(server, f'{STATE}{{job="broker"}}') == 4
    assert one_value(server, f'{catalog.MIGRATING_ZK_BROKER_COUNT.name}{{job="controller"}}') == 1
    leader = f'{catalog.RAFT_CURRENT_STATE.name}{{job="controller",current_state="leader"}}'
    assert one_value(server, leader) == 1
    assert one_value(server, catalog.RAFT_CURRENT_LEADER.name) == CONTROLLER_ID
    high_watermark = one_value(server, catalog.RAFT_HIGH_WATERMARK.name)
    assert high_watermark is not None and high_watermark > 0


def test_two_leaders_before_step_3_are_no_alarm_and_the_roll_moves_broker_down(
    migrated: Migrated,
) -> None:
    """Before the roll the broker is the ZooKeeper controller and the KRaft controller
    leads its quorum in PRE_MIGRATION: both report ActiveControllerCount 1, as Kafka's
    procedure has it, and MultipleActiveControllers does not match. The roll's restart
    moves BrokerDown to pending and back; the rolled broker finds /controller claimed by
    the KRaft controller: one active."""
    server = migrated.server
    assert migrated.multiple_before == []
    assert [a["state"] for a in migrated.broker_down] == ["pending"]
    assert migrated.broker_down[0]["job"] == "broker"
    # The KRaft controller leaves PRE_MIGRATION and claims /controller; until the next
    # scrape of the broker, Prometheus still holds the broker's last 1: the rule may go
    # pending for a scrape or two, which its `for: 1m` is there to absorb. It never fires.
    assert all(a["state"] == "pending" for a in server.active("MultipleActiveControllers"))
    # as scraped after the migration completed (the fixture returns on Kafka's log line,
    # which the next scrape follows)
    eventually(lambda: one_value(server, f"sum({ACTIVE})") == 1, 60, "one active controller")
    assert one_value(server, f'{ACTIVE}{{job="controller"}}') == 1
    eventually(lambda: not server.active("MultipleActiveControllers"), 60, "no longer pending")


def test_write_behind_errors_and_zookeeper_writes_are_real(migrated: Migrated) -> None:
    server, controller = migrated.server, '{job="controller"}'
    assert one_value(server, catalog.ZK_WRITE_BEHIND_LAG.name + controller) == 0
    assert one_value(server, catalog.METADATA_ERRORS.name + controller) == 0
    snapshot_count = catalog.ZK_WRITE_SNAPSHOT_TIME.name + "_count" + controller
    # the full sync after the copy, once scraped (the fixture returns on Kafka's log line)
    eventually(lambda: (one_value(server, snapshot_count) or 0) >= 1, 60, "the full sync")
    assert server.query(f'{catalog.ZK_WRITE_SNAPSHOT_TIME.name}{{quantile="0.99"}}')
    # a topic created through the broker: the controller commits it and writes it to
    # ZooKeeper (a dual-write), the broker learns it
    admin = KafkaAdminClient(bootstrap_servers=migrated.broker.bootstrap, client_id="metrics")
    try:
        admin.create_topics([NewTopic("orders", 2, 1)])
    finally:
        admin.close()
    delta = f"{catalog.ZK_WRITE_DELTA_TIME.name}_count{controller}"
    eventually(lambda: (one_value(server, delta) or 0) >= 1, 60, "a dual-write counted")
    topics = catalog.GLOBAL_TOPICS.name + controller
    eventually(lambda: one_value(server, topics) == 1, 30, "the topic counted")
    assert one_value(server, catalog.GLOBAL_PARTITIONS.name + controller) == 2
    assert one_value(server, catalog.ZK_WRITE_BEHIND_LAG.name + controller) == 0
    # the migration driver's ZooKeeper session: ZooKeeperUnreachable's expression is one
    # condition (the session lost) away from matching the active controller
    assert one_value(server, catalog.ZK_CONNECTED.name + controller) == 1
    join = (
        f"{catalog.ZK_CONNECTED.name} and on (instance, job) ({ACTIVE} == 1)"
        f" and on (instance, job) ({STATE} > 0 < 3)"
    )
    assert [r["metric"]["job"] for r in server.query(join)] == ["controller"]
    for alert in ("ZooKeeperUnreachable", "ZkWriteBehindLagGrowing", "OfflinePartitions"):
        assert not server.active(alert), alert


def test_the_dashboard_reads_real_kafka(migrated: Migrated) -> None:
    server = migrated.server
    board = json.loads(DASHBOARD.read_text())
    queries = [
        (panel["title"], target["expr"].replace("$cluster", ".*"))
        for panel in board["panels"]
        for target in panel.get("targets", [])
    ]
    with_data, without = [], []
    for title, expr in queries:
        result = server.query(expr)  # parses, or the API's error fails the test
        if set(METRIC.findall(expr)) & NOT_IN_KAFKA:
            without.append(title)
        else:
            assert result, (title, expr)
            with_data.append(title)
    assert len(with_data) >= 20, with_data
    assert "ZkMigrationState" in with_data and "Write-behind lag" in with_data
    # the ZkMigrationState panel reads the KRaft controllers' state, not the brokers' ZK
    (state,) = [e for t, e in queries if t == "ZkMigrationState"]
    assert one_value(server, state) == 1
    assert set(without) == {
        "Migration state",
        "Driver phase (active controller)",
        "Time in phase",
        "Write-behind lag",  # its bound: zk2kraft's setting
        "Dual-write errors",
        "Brokers by metadata type",
        "Finalized features",
    }


def test_the_exporter_config_maps_every_kafka_mbean_of_the_catalog(migrated: Migrated) -> None:
    """Read from the agent directly: the names are the agent's, not Prometheus'."""
    port = int(migrated.targets["controller"].rsplit(":", 1)[1])
    text = scrape(port)
    served = {line.split("{")[0].split(" ")[0] for line in text.splitlines() if line[:1] != "#"}
    for spec in catalog.ALL:
        if not spec.mbean or spec.designed:
            continue
        assert spec.name in served or spec.name + "_count" in served, spec.name
