"""Every read-only command on the tree real Kafka 3.9.2 wrote to ZooKeeper, live and
through ``--zk-data-dir`` on ZooKeeper's own files: preflight, the dry run, ``zk diff``,
``zk export-offsets``, the rehearsal.

The tree is the ``zk_mode_cluster`` fixture's (two ZooKeeper-mode brokers, the
AclAuthorizer, topics, configs, an ACL), and then more written by Kafka itself: a SCRAM
user, quotas (a user, the client-id default, an IP) and a default broker config by
ConfigCommand, a prefixed ACL by AclCommand, a producer-id block for an idempotent
producer, and consumer offsets in ZooKeeper (``/consumers``), which Kafka 3.x writes for
an OffsetCommit request of version 0. ZooKeeper's files are copied after Kafka's last
write; the newest ZooKeeper snapshot in the copy is older than that write, so offline
reads find it only by replaying ZooKeeper's transaction log.

This module starts its own cluster (``zk_mode_cluster`` is module-scoped) rather than
adding to test_real_kafka.py: the writes above would change the tree that module's
tests check, and its last test stops the brokers.
"""

from __future__ import annotations

import json
import socket
import struct
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaProducer

from migration.local.kafka_release import kafka_release
from migration.local.zookeeper import EmbeddedZooKeeper
from migration.zk.client import ZkClient
from migration.zkfiles.datadir import open_data_dir
from tests.real_kafka import ZkModeCluster, copy_zk_data_dir, zk_files
from tests.support import zk2kraft
from tests.zk_files import walk

OFFSETS = {("legacy-group", "orders", 0): 42, ("legacy-group", "orders", 1): 7}
TOKEN_PARENTS = ["/delegation_token", "/delegation_token/tokens"]


@dataclass(frozen=True)
class Written:
    """The cluster after Kafka's own writes, and a copy of ZooKeeper's files taken after
    the last of them."""

    cluster: ZkModeCluster
    data_dir: Path
    last_zxid: int  # the zxid of Kafka's last write (the offsets' znodes)
    work: Path

    def live(self) -> list[str]:
        return ["--zk", self.cluster.connect]

    def offline(self) -> list[str]:
        return ["--zk-data-dir", str(self.data_dir), "--zk-chroot", self.cluster.chroot]


def _string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def _commit_offsets_v0(bootstrap: str, offsets: dict[tuple[str, str, int], int]) -> list[int]:
    """OffsetCommit version 0 (one group, one topic), which a ZooKeeper-mode Kafka 3.x
    broker stores in ZooKeeper's ``/consumers/<group>/offsets``; the partitions' error
    codes. Encoded here: kafka-python 3 sends OffsetCommit from version 2 on."""
    [group] = {g for g, _, _ in offsets}
    [topic] = {t for _, t, _ in offsets}
    body = _string(group) + struct.pack(">i", 1) + _string(topic) + struct.pack(">i", len(offsets))
    for (_, _, partition), offset in sorted(offsets.items()):
        body += struct.pack(">iq", partition, offset) + _string("")
    request = struct.pack(">hhi", 8, 0, 1) + _string("zk2kraft-tests") + body
    host, port = bootstrap.split(":")
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        conn.sendall(struct.pack(">i", len(request)) + request)
        reader = conn.makefile("rb")
        (size,) = struct.unpack(">i", reader.read(4))
        answer = reader.read(size)
    # correlation id, [topic name, [partition, error code]]
    at = 4 + 4 + 2 + len(topic) + 4
    return [struct.unpack_from(">ih", answer, at + 6 * i)[1] for i in range(len(offsets))]


@pytest.fixture(scope="module")
def written(
    zk_mode_cluster: ZkModeCluster,
    zk_server: EmbeddedZooKeeper,
    tmp_path_factory: pytest.TempPathFactory,
) -> Written:
    cluster = zk_mode_cluster
    work = tmp_path_factory.mktemp("readonly")
    release = kafka_release("3.9.2")
    bootstrap = ",".join(b.bootstrap for b in cluster.brokers)

    def tool(name: str, *args: str) -> None:
        release.run_tool(name, "--bootstrap-server", bootstrap, *args, work_dir=work / "tools")

    def configs(entity: list[str], settings: str) -> None:
        tool("configs", "--alter", *entity, "--add-config", settings)

    configs(["--entity-type", "users", "--entity-name", "alice"],
            "SCRAM-SHA-256=[iterations=8192,password=alice-secret],"
            "SCRAM-SHA-512=[password=alice-secret]")  # fmt: skip
    configs(["--entity-type", "users", "--entity-name", "alice"],
            "producer_byte_rate=1048576,consumer_byte_rate=2097152")  # fmt: skip
    configs(["--entity-type", "clients", "--entity-default"], "request_percentage=50")
    configs(["--entity-type", "ips", "--entity-name", "10.0.0.9"], "connection_creation_rate=10")
    configs(["--entity-type", "brokers", "--entity-default"], "log.cleaner.threads=2")
    tool("acls", "--add", "--allow-principal", "User:writer", "--operation", "Write",
         "--topic", "ev", "--resource-pattern-type", "prefixed")  # fmt: skip
    producer = KafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True, acks="all")
    try:
        producer.send("events", b"idempotent").get(timeout=30)
    finally:
        producer.close()
    assert _commit_offsets_v0(cluster.brokers[0].bootstrap, OFFSETS) == [0] * len(OFFSETS)
    with ZkClient(cluster.connect) as zk:
        last = max(zk.kazoo.get(f"/consumers/{g}/offsets/{t}/{p}")[1].czxid for g, t, p in OFFSETS)
    data_dir = copy_zk_data_dir(zk_server, work / "zk-data")
    return Written(cluster, data_dir, last, work)


def _run(*args: str) -> Any:
    done = zk2kraft(*args, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def test_kafkas_last_writes_are_read_from_zookeepers_transaction_log(written: Written) -> None:
    """The copy's newest ZooKeeper snapshot is older than Kafka's last write: reading
    the files offline replays the transaction log (log.*) to find it."""
    names = [name for name, _ in zk_files(written.data_dir)]
    snapshots = [int(n.split(".")[1], 16) for n in names if n.startswith("snapshot.")]
    assert snapshots and any(n.startswith("log.") for n in names)
    assert max(snapshots) < written.last_zxid
    tree = open_data_dir([written.data_dir], written.cluster.chroot)
    assert tree.zxid >= written.last_zxid
    assert "log file(s)" in tree.source and "transactions replayed" in tree.source
    found = walk(tree, "/consumers")
    for (group, topic, partition), offset in OFFSETS.items():
        data, *_ = found[f"/consumers/{group}/offsets/{topic}/{partition}"]
        assert data == str(offset).encode()


def test_preflight_live_and_from_zookeepers_files_agree(written: Written) -> None:
    live = _run("preflight", *written.live())
    offline = _run("preflight", *written.offline())
    assert live["ready"] is offline["ready"] is True
    for key in ("blockers", "warnings"):
        assert live[key] == offline[key]
    assert live["estimate"]["records"] == offline["estimate"]["records"]
    codes = {(w["code"], w["path"]) for w in live["warnings"]}
    assert ("LEGACY_CONSUMER_OFFSETS", "/consumers/legacy-group") in codes
    assert {("BROKER_MIGRATION_NOT_ENABLED", f"/brokers/ids/{b.node_id}")
            for b in written.cluster.brokers} <= codes  # fmt: skip


def _dump_without_acl_ids(log_dir: Path) -> list[dict[str, Any]]:
    done = zk2kraft("log", "dump", "--log-dir", str(log_dir), "--json")
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    for record in records:
        if record["type"] == "AccessControlEntryRecord":
            record.pop("id")  # a fresh id for each entry, as Kafka's copy makes one
    return records


def test_the_dry_run_live_and_from_zookeepers_files_copy_the_same_records(
    written: Written,
) -> None:
    live_log, offline_log = written.work / "live-log", written.work / "offline-log"
    live = _run("migrate", "--dry-run", *written.live(), "--log-dir", str(live_log))
    offline = _run("migrate", "--dry-run", *written.offline(), "--log-dir", str(offline_log))
    for key in ("records", "image", "zk_brokers", "metadata_version", "skipped", "transaction"):
        assert live[key] == offline[key], key
    assert _dump_without_acl_ids(live_log) == _dump_without_acl_ids(offline_log)
    records = live["records"]
    assert records["TopicRecord"] == len(written.cluster.topics)
    assert records["PartitionRecord"] == sum(written.cluster.topics.values())
    # SCRAM (2 mechanisms), quotas (2 + 1 + 1 keys), ACLs (literal and prefixed),
    # Kafka's producer-id block
    assert records["UserScramCredentialRecord"] == 2
    assert records["ClientQuotaRecord"] == 4
    assert records["AccessControlEntryRecord"] == 2
    assert records["ProducerIdsRecord"] == 1
    assert live["image"]["quota_entities"] == 3


def test_zk_diff_of_kafkas_zookeeper_against_the_dry_run_is_in_sync(written: Written) -> None:
    """A full sync would change nothing Kafka wrote; it would only add the delegation
    token parents, which Kafka creates only with token authentication on."""
    log_dir = written.work / "diff-log"
    _run("migrate", "--dry-run", *written.live(), "--log-dir", str(log_dir))
    for source in (written.live(), written.offline()):
        diff = _run("zk", "diff", *source, "--log-dir", str(log_dir))
        assert diff["in_sync"] is True, diff
        assert diff["changes"] == {"parents": {"create": TOKEN_PARENTS}}, diff


def test_export_offsets_live_and_from_zookeepers_files(written: Written) -> None:
    expected = [
        {"group": g, "topic": t, "partition": p, "offset": o} for (g, t, p), o in OFFSETS.items()
    ]
    assert _run("zk", "export-offsets", *written.live()) == expected
    assert _run("zk", "export-offsets", *written.offline()) == expected


@pytest.mark.long
@pytest.mark.timeout(900)
def test_a_rehearsal_of_the_live_cluster_runs_to_kraft(written: Written) -> None:
    """The rehearsal reads the running cluster's ZooKeeper (only reads) and runs the
    copy through to KRaft on Kafka's own brokers and controllers (the default engine
    where Kafka is installed); the rehearsal of ZooKeeper's own files, on zk2kraft's
    engine, is in test_real_kafka.py."""
    out = written.work / "rehearsal"
    done = subprocess.run(
        [sys.executable, "-m", "migration.cli.main", "rehearse", *written.live(),
         "--out", str(out), "--json", "--workload-seconds", "3"],
        capture_output=True, text=True, timeout=880, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["ok"] is True and report["problems"] == []
    assert report["source"]["broker_ids"] == [1, 2]
    assert report["engine"]["name"] == "kafka"  # Kafka is installed: its own processes ran
    copied = report["copy"]["records_by_type"]
    assert copied["UserScramCredentialRecord"] == 2 and copied["ProducerIdsRecord"] == 1
    assert report["audit"]["ok"] and report["audit"]["differences"] == 0
    assert report["finalized"]["ok"] is True and report["finalized"]["state"] == "KRaft"
