"""Kafka's own migration, audited by zk2kraft, and zk2kraft's copy held against
Kafka's (Kafka as the oracle): one real Kafka 3.9.2 cluster for the module
(tests/kafka_migration.py: 3 ZooKeeper-mode brokers, 3 KRaft controllers, every entity
kind written by Kafka), migrated by Kafka's own procedure. The tests run in order: each
moves the migration one step on (admin changes, a controller failover, the brokers
rolled into KRaft mode, drift behind Kafka's back)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka import TopicPartition
from kafka.admin import (
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    ConfigResource,
    ConfigResourceType,
    KafkaAdminClient,
    NewTopic,
    ResourcePattern,
    ResourceType,
)

from migration.local.zookeeper import EmbeddedZooKeeper
from tests.kafka_migration import KafkaMigration, kafka_migration, roll_into_kraft, wait_for

pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def kafka_mig(
    zk_server: EmbeddedZooKeeper, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KafkaMigration]:
    yield from kafka_migration(zk_server, tmp_path_factory.mktemp("kafka-migration"))


def cli(*args: str, timeout_s: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "migration.cli.main", *args],
        capture_output=True, text=True, timeout=timeout_s, check=False,
    )  # fmt: skip


def dump(log_dir: Path) -> list[dict[str, Any]]:
    done = cli("log", "dump", "--log-dir", str(log_dir), "--json", "--show-secrets")
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def audit(m: KafkaMigration, log_dir: Path | None = None) -> tuple[int, dict[str, Any]]:
    """``zk2kraft audit`` of ZooKeeper against the active controller's log (exit code,
    report)."""
    log_dir = log_dir or m.active_controller().data_dir
    done = cli("audit", "--zk", m.zk_connect, "--log-dir", str(log_dir),
               "--password-encoder-secret-file", str(m.encoder_secret_file), "--json")  # fmt: skip
    assert done.returncode in (0, 1), done.stdout + done.stderr
    return done.returncode, json.loads(done.stdout)


def test_cluster_migrated_by_kafka(kafka_mig: KafkaMigration) -> None:
    m = kafka_mig
    print("seconds", {k: round(v, 1) for k, v in m.seconds.items()})
    state = m.migration_znode()
    assert state["kraft_metadata_offset"] > 0
    assert state["kraft_controller_id"] in m.controllers
    with m.zk() as zk:
        controller = json.loads(zk.kazoo.get("/controller")[0])
        moving = json.loads(zk.kazoo.get("/brokers/topics/moving")[0])
    assert controller["brokerid"] == state["kraft_controller_id"]
    assert controller["kraftControllerEpoch"] == state["kraft_controller_epoch"]
    assert moving["adding_replicas"] == {"0": [2, 3]}  # still in flight
    records = dump(m.active_controller().data_dir)
    states = [r["zk_migration_state"] for r in records if r["type"] == "ZkMigrationStateRecord"]
    assert states == [2, 1]  # PRE_MIGRATION at the bootstrap, MIGRATION after the copy


COPIED_TYPES = frozenset({
    "TopicRecord", "PartitionRecord", "ConfigRecord", "ClientQuotaRecord",
    "UserScramCredentialRecord", "ProducerIdsRecord", "AccessControlEntryRecord",
    "DelegationTokenRecord", "FeatureLevelRecord",
})  # fmt: skip
NOT_CONTENT = ("offset", "epoch", "version", "snapshot", "id")
"""Where a record sits (offset, epoch, the version Kafka wrote it at) and an ACL's
fresh id: meant to differ between two copies."""


def canonical(records: list[dict[str, Any]]) -> dict[str, list[str]]:
    """The copy's records by type, each as sorted JSON without what is meant to differ,
    sorted: the same records in any order compare equal."""
    out: dict[str, list[str]] = {}
    for r in records:
        if r["type"] not in COPIED_TYPES:
            continue
        body = {k: v for k, v in r.items() if k not in NOT_CONTENT}
        out.setdefault(r["type"], []).append(json.dumps(body, sort_keys=True))
    return {kind: sorted(rows) for kind, rows in out.items()}


def kafkas_copy(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records of Kafka's copy: from its BeginTransactionRecord to its
    EndTransactionRecord, plus the feature levels the controllers' bootstrap wrote."""
    begin = next(
        i for i, r in enumerate(records)
        if r["type"] == "BeginTransactionRecord" and r["name"] == "ZK Migration"
    )  # fmt: skip
    end = next(
        i for i, r in enumerate(records) if i > begin and r["type"] == "EndTransactionRecord"
    )
    features = [r for r in records[:begin] if r["type"] == "FeatureLevelRecord"]
    return features + records[begin : end + 1]


def test_kafkas_copy_is_zk2kraft_s_dry_run_record_by_record(kafka_mig: KafkaMigration) -> None:
    m = kafka_mig
    kafka = canonical(kafkas_copy(dump(m.active_controller().data_dir)))
    ours = canonical(dump(m.dry_run_log))
    # metadata.version is no part of what ZooKeeper holds: Kafka's comes from the
    # controllers' storage format (3.9-IV0, 21); Kafka 3.9.2's registrations in
    # /brokers/ids carry "features":{} even with the migration flag and /feature holds
    # none, so the dry run falls back to the first migration-capable level (3.4-IV0, 8)
    # and says so (docs/kafka-log.md)
    assert kafka.pop("FeatureLevelRecord") == [
        json.dumps({"feature_level": 21, "name": "metadata.version",
                    "type": "FeatureLevelRecord"}, sort_keys=True)
    ]  # fmt: skip
    assert ours.pop("FeatureLevelRecord") and m.dry_run_manifest["metadata_version"] == 8
    assert m.dry_run_manifest["metadata_version_source"] == "default"
    for kind in sorted(kafka.keys() | ours.keys()):
        print(kind, len(kafka.get(kind, [])), len(ours.get(kind, [])))
        only_kafka = sorted(set(kafka.get(kind, [])) - set(ours.get(kind, [])))
        only_ours = sorted(set(ours.get(kind, [])) - set(kafka.get(kind, [])))
        for row in only_kafka:
            print("  kafka only:", row)
        for row in only_ours:
            print("  zk2kraft only:", row)
    assert kafka == ours


def test_audit_after_admin_changes_through_kafka(kafka_mig: KafkaMigration) -> None:
    """Admin operations sent to the ZooKeeper-mode brokers (forwarded to Kafka's active
    controller, which commits them and writes them behind into ZooKeeper)."""
    m = kafka_mig
    admin = KafkaAdminClient(bootstrap_servers=m.bootstrap, client_id="dual-write")
    try:
        admin.create_topics([
            NewTopic("dual-a", 2, 2, topic_configs={"retention.ms": "7200000"}),
            NewTopic("dual-b", 1, 1),
        ])  # fmt: skip
        admin.wait_for_topics(["dual-a", "dual-b"], timeout_ms=60_000)
        admin.delete_topics(["dual-b"])
        admin.create_partitions({"orders": 4})
        admin.alter_configs([
            ConfigResource(ConfigResourceType.TOPIC, "orders", configs={"retention.ms": "3600000"}),
            ConfigResource(ConfigResourceType.BROKER, "3", configs={"log.cleaner.threads": "3"}),
        ], incremental=True)  # fmt: skip
        admin.create_acls([
            ACL("User:carol", "*", ACLOperation.READ, ACLPermissionType.ALLOW,
                ResourcePattern(ResourceType.TOPIC, "dual-", ACLResourcePatternType.PREFIXED)),
        ])  # fmt: skip
        admin.delete_acls([
            ACLFilter("User:mallory", "10.0.0.1", ACLOperation.ALL, ACLPermissionType.DENY,
                      ResourcePattern(ResourceType.TOPIC, "events")),
        ])  # fmt: skip
        admin.alter_partition_reassignments({TopicPartition("events", 1): [3, 1, 2]})
    finally:
        admin.close()
    m.tool("configs", "--alter", "--entity-type", "users", "--entity-name", "alice",
           "--add-config", "SCRAM-SHA-256=[password=alice-256]")  # fmt: skip
    m.tool("configs", "--alter", "--entity-type", "users", "--entity-name", "alice",
           "--add-config", "producer_byte_rate=2048")  # fmt: skip
    m.wait_written_behind()
    with m.zk() as zk:
        assert zk.kazoo.exists("/brokers/topics/dual-a") is not None
        assert zk.kazoo.exists("/brokers/topics/dual-b") is None
        assert zk.kazoo.exists("/kafka-acl/Topic/events") is None
    code, report = audit(m)
    assert code == 0, json.dumps(report, indent=1)[:6000]


def test_audit_after_a_kafka_controller_failover(kafka_mig: KafkaMigration) -> None:
    """The active controller stopped (by its handle): another takes ZooKeeper over
    (a higher kraftControllerEpoch, its full sync), dual-writes a new topic."""
    m = kafka_mig
    before = m.active_controller()
    epoch = m.migration_znode()["kraft_controller_epoch"]
    before.stop()
    others = [n for n in m.controllers.values() if n is not before]

    def taken_over() -> bool:
        state = m.migration_znode()
        return state["kraft_controller_epoch"] > epoch and state["kraft_controller_id"] != (
            before.node_id
        )

    wait_for("another controller dual-writing", taken_over, others)
    after = m.active_controller()
    wait_for("its DUAL_WRITE", lambda: "to DUAL_WRITE" in after.log_path.read_text(), others)
    admin = KafkaAdminClient(bootstrap_servers=m.bootstrap, client_id="failover")
    try:
        admin.create_topics([NewTopic("after-failover", 1, 3)])
        admin.wait_for_topics(["after-failover"], timeout_ms=60_000)
    finally:
        admin.close()
    before.start()
    m.wait_written_behind(after)
    code, report = audit(m, after.data_dir)
    assert code == 0, json.dumps(report, indent=1)[:6000]


def test_audit_after_the_brokers_are_rolled_into_kraft(kafka_mig: KafkaMigration) -> None:
    m = kafka_mig
    roll_into_kraft(m)
    admin = KafkaAdminClient(bootstrap_servers=m.bootstrap, client_id="kraft-brokers")
    try:
        admin.create_topics([NewTopic("on-kraft", 2, 2)])
        admin.wait_for_topics(["on-kraft"], timeout_ms=60_000)
    finally:
        admin.close()
    m.wait_written_behind()
    with m.zk() as zk:
        assert zk.kazoo.get_children("/brokers/ids") == []
        assert zk.kazoo.exists("/brokers/topics/on-kraft") is not None
    code, report = audit(m)
    assert code == 0, json.dumps(report, indent=1)[:6000]
    assert report["not_compared"]["broker_registrations"]["count"] == 0


def test_drift_behind_kafkas_back_is_found_and_named(kafka_mig: KafkaMigration) -> None:
    """ZooKeeper changed with plain kazoo while Kafka dual-writes: the audit names each."""
    m = kafka_mig
    with m.zk() as zk:
        kz = zk.kazoo
        path = "/brokers/topics/orders/partitions/0/state"
        state = json.loads(kz.get(path)[0])
        state["isr"] = state["isr"][:1]
        kz.set(path, json.dumps(state).encode())
        config = json.loads(kz.get("/config/topics/events")[0])
        config["config"]["min.compaction.lag.ms"] = "4242"
        kz.set("/config/topics/events", json.dumps(config).encode())
        quota = json.loads(kz.get("/config/clients/app-1")[0])
        quota["config"]["consumer_byte_rate"] = "9999"
        kz.set("/config/clients/app-1", json.dumps(quota).encode())
        kz.delete("/kafka-acl-extended/prefixed/Group/app-")
    code, report = audit(m)
    assert code == 1
    found = {(s["kind"], s["entity"], s["field"], s["difference"]) for s in report["samples"]}
    print(json.dumps(report["samples"], indent=1))
    assert found == {
        ("partition", "orders-0", "isr", "value_differs"),
        ("topic_config", "events", "min.compaction.lag.ms", "only_in_zookeeper"),
        ("client_quota", "clients/app-1", "consumer_byte_rate", "value_differs"),
        ("acl", "kafka-acl-extended/prefixed/Group/app-", None, "only_in_kraft"),
    }


def test_migration_status_reads_kafkas_own_state(kafka_mig: KafkaMigration) -> None:
    """``zk2kraft migration status --kafka`` while Kafka dual-writes: the ZkMigrationState
    from the active controller's log, ``/migration`` and ``/controller`` as Kafka wrote
    them, the quorum from Kafka's DescribeQuorum; then with parts unreachable."""
    m = kafka_mig
    active = m.active_controller()
    before = m.wait_written_behind(active)
    bootstrap = ",".join(f"127.0.0.1:{port}" for port in m.voters.values())
    done = cli("migration", "status", "--kafka", "--zk", m.zk_connect,
               "--bootstrap-controller", bootstrap,
               "--log-dir", str(active.metadata_dir.parent), "--json")  # fmt: skip
    after = m.migration_znode()
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    print(json.dumps(report, indent=1))
    assert (report["zk_migration_state"], report["zk_migration_state_code"]) == ("MIGRATION", 1)
    log = report["metadata_log"]
    assert log["error"] is None and log["format"] == "kafka"
    zk = report["zookeeper"]
    assert zk["error"] is None and zk["problems"] == []
    znode = zk["migration_znode"]
    assert before["kraft_metadata_offset"] <= znode["kraft_metadata_offset"]
    assert znode["kraft_metadata_offset"] <= after["kraft_metadata_offset"]
    assert znode["kraft_controller_id"] == after["kraft_controller_id"] == active.node_id
    assert znode["kraft_controller_epoch"] == after["kraft_controller_epoch"]
    assert znode["copy_done"] and znode["kraft_metadata_offset"] <= log["offset"]
    assert report["zk_write_behind_lag"] == log["offset"] - znode["kraft_metadata_offset"]
    controller = zk["controller_znode"]
    assert controller["is_kraft"] and controller["broker_id"] == active.node_id
    assert controller["kraft_controller_epoch"] == znode["kraft_controller_epoch"]
    with m.zk() as client:
        registered = sorted(int(i) for i in client.kazoo.get_children("/brokers/ids"))
    assert [b["broker_id"] for b in zk["brokers"]] == registered  # none once rolled into KRaft
    # Kafka's ZooKeeper-mode brokers restarted with the flag write `"features":{}`: the
    # flag shows in their registration with the KRaft controllers, in the log's image.
    assert not any(b["migration_flag"] for b in zk["brokers"])
    assert all(b["kraft_registration"]["is_migrating_zk_broker"] for b in zk["brokers"])
    assert {b["broker_id"] for b in log["brokers"]} >= set(registered)
    quorum = report["quorum"]
    assert quorum["error"] is None
    assert quorum["leader_id"] == active.node_id and quorum["leader_epoch"] > 0
    assert sorted(v["replica_id"] for v in quorum["voters"]) == sorted(m.controllers)
    assert quorum["high_watermark"] >= znode["kraft_metadata_offset"]

    text = cli("migration", "status", "--kafka", "--zk", m.zk_connect,
               "--bootstrap-controller", bootstrap)  # fmt: skip
    assert text.returncode == 0, text.stderr
    assert "ZkMigrationState:    MIGRATION (1)" not in text.stdout  # no --log-dir: not read
    assert "no --log-dir" in text.stdout and f"KRaft controller {active.node_id}" in text.stdout
    assert f"Quorum:              leader {active.node_id}," in text.stdout

    # A controller down and no log: those parts say so; ZooKeeper is still read.
    closed = "127.0.0.1:1"
    partial = cli("migration", "status", "--kafka", "--zk", m.zk_connect,
                  "--bootstrap-controller", closed, "--json")  # fmt: skip
    assert partial.returncode == 0, partial.stdout + partial.stderr
    shown = json.loads(partial.stdout)
    assert shown["zk_migration_state"] is None and "no --log-dir" in shown["metadata_log"]["error"]
    assert "127.0.0.1:1" in shown["quorum"]["error"]
    assert shown["zookeeper"]["migration_znode"]["kraft_controller_id"] == active.node_id
