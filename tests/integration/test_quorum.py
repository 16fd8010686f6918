"""Three real controller processes on loopback: elections, failover under SIGKILL with
writes in flight, catch-up after restart (by log and by snapshot), graceful SIGTERM, and
the admin/broker RPCs with Kafka's error codes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from migration.common.kafka_errors import ErrorCode, KafkaError
from migration.controller.client import BrokerSession
from migration.image.at_offset import image_at
from migration.log.errors import LogError
from migration.log.metadata_log import FlushPolicy, MetadataLog
from migration.proto import controller_pb2 as cpb
from migration.raft.log_fetch import fetch_log
from tests.quorum_harness import Quorum
from tests.support import zk2kraft

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def quorum(tmp_path: Path) -> Iterator[Quorum]:
    q = Quorum(tmp_path).start_all()
    try:
        yield q
    finally:
        q.stop_all()


@pytest.fixture(scope="module")
def shared(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Quorum, list[BrokerSession]]]:
    q = Quorum(tmp_path_factory.mktemp("shared"), extra={"broker.session.timeout.ms": "1500"})
    q.start_all()
    q.wait_leader()
    client = q.client()
    brokers = [BrokerSession(client, b).start() for b in (1, 2, 3, 4)]
    for b in brokers:
        b.wait_unfenced()
    try:
        yield q, brokers
    finally:
        for b in brokers:
            b.stop()
        q.stop_all()


def create(client: object, name: str, partitions: int = 3, rf: int = 3) -> cpb.CreatableTopicResult:
    request = cpb.CreateTopicsRequest()
    request.topics.add(name=name, num_partitions=partitions, replication_factor=rf)
    return client.call("CreateTopics", request).topics[0]  # type: ignore[attr-defined]


def admin(q: Quorum, *args: str) -> tuple[int, str, str]:
    result = zk2kraft("admin", "--bootstrap-controller", q.endpoint(1), *args)
    return result.returncode, result.stdout, result.stderr


def topic_names(q: Quorum) -> set[str]:
    return {t.name for t in q.client().call("Metadata", cpb.MetadataRequest()).topics}


# --- elections and failover ------------------------------------------------------------------


def test_failover_after_sigkill_loses_nothing_committed(quorum: Quorum) -> None:
    leader = quorum.wait_leader()
    client = quorum.client()
    brokers = [BrokerSession(client, b).start() for b in (1, 2, 3)]
    for b in brokers:
        b.wait_unfenced()
    for i in range(20):
        assert create(client, f"before-{i}").error_code == ErrorCode.NONE

    acked: list[str] = []
    refused: list[str] = []
    wrong: list[str] = []  # what the writer saw that it must not: checked by the test
    stop = threading.Event()

    def writer() -> None:  # one attempt per write: success, or a retriable error
        c = quorum.client(timeout_s=3)
        i = 0
        while not stop.is_set():
            name = f"inflight-{i}"
            i += 1
            try:
                result = create(c, name)
            except KafkaError as exc:
                if not exc.retriable:
                    wrong.append(f"{name}: non-retriable {exc}")
                refused.append(name)
                continue
            except Exception as exc:
                wrong.append(f"{name}: {exc!r}")
                return
            if result.error_code not in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS):
                wrong.append(f"{name}: error {result.error_code}")  # ALREADY_EXISTS: a retry
            acked.append(name)

    thread = threading.Thread(target=writer)
    thread.start()
    time.sleep(1.0)
    quorum.kill(leader)
    new_leader = quorum.wait_leader(not_in=(leader,))
    time.sleep(1.5)
    stop.set()
    thread.join(timeout=60)
    for b in brokers:
        b.stop()

    assert not thread.is_alive(), "the writer hung"
    assert not wrong, wrong
    assert new_leader != leader
    names = topic_names(quorum)
    assert {f"before-{i}" for i in range(20)} <= names
    assert set(acked) <= names, f"acknowledged but lost: {sorted(set(acked) - names)}"
    assert acked, "no write succeeded around the failover"

    quorum.start(leader)  # the killed node comes back and catches up
    deadline = time.monotonic() + 30
    while True:
        d = quorum.describe()
        me = next(v for v in d.current_voters if v.replica_id == leader)
        if me.log_end_offset >= d.high_watermark > 0:
            break
        assert time.monotonic() < deadline, f"node {leader} did not catch up: {d}"
        time.sleep(0.2)


def test_a_restarted_follower_catches_up_through_a_snapshot(tmp_path: Path) -> None:
    q = Quorum(
        tmp_path,
        extra={
            "metadata.log.segment.bytes": "4096",
            "metadata.log.max.record.bytes.between.snapshots": "8192",
        },
    ).start_all()
    try:
        leader = q.wait_leader()
        follower = next(i for i in q.ids if i != leader)
        client = q.client()
        brokers = [BrokerSession(client, b).start() for b in (1, 2)]
        for b in brokers:
            b.wait_unfenced()
        q.kill(follower)
        for i in range(60):
            assert create(client, f"t{i}", partitions=4, rf=2).error_code == ErrorCode.NONE
        leader_dir = tmp_path / f"log{leader}"
        assert list(leader_dir.glob("*.checkpoint")), "the leader should have taken a snapshot"
        first_segment = min(int(p.stem) for p in leader_dir.glob("*.log"))
        assert first_segment > 0, "old segments should be gone below the snapshot"
        q.start(follower)
        deadline = time.monotonic() + 30
        while True:
            d = q.describe()
            me = next(v for v in d.current_voters if v.replica_id == follower)
            if me.log_end_offset >= d.high_watermark:
                break
            assert time.monotonic() < deadline, f"follower did not catch up: {d}"
            time.sleep(0.2)
        assert "installed snapshot" in q.output(follower)
        for b in brokers:
            b.stop()
        # the caught-up follower serves the same metadata once it leads
        q.kill(leader)
        q.wait_leader(not_in=(leader,))
        assert {f"t{i}" for i in range(60)} <= topic_names(q)
    finally:
        q.stop_all()


def test_the_committed_log_is_copied_from_the_leader_through_its_snapshot(
    tmp_path: Path,
) -> None:
    q = Quorum(
        tmp_path / "quorum",
        extra={
            "metadata.log.segment.bytes": "4096",
            "metadata.log.max.record.bytes.between.snapshots": "8192",
        },
    ).start_all()
    try:
        q.wait_leader()
        client = q.client()
        broker = BrokerSession(client, 1).start()
        broker.wait_unfenced()
        for i in range(60):
            assert create(client, f"t{i}", partitions=4, rf=1).error_code == ErrorCode.NONE
        broker.stop()
        high = q.describe().high_watermark
        with MetadataLog(tmp_path / "copy", flush=FlushPolicy.never()) as copy:
            fetched = fetch_log(q.bootstrap, "test-cluster", copy, high - 1)
            assert copy.latest_snapshot() is not None and copy.start_offset > 0
            assert copy.end_offset >= high and fetched.high_watermark >= high
        image = image_at(tmp_path / "copy", high - 1).image
        assert {f"t{i}" for i in range(60)} <= set(image.topic_ids)
        # Not a replica: the leader lists no observer for the copier.
        assert not q.describe().observers
        # An offset the leader's snapshot replaced cannot be copied; another cluster's
        # id is refused by name.
        with (
            MetadataLog(tmp_path / "old", flush=FlushPolicy.never()) as old,
            pytest.raises(LogError, match="records there are gone"),
        ):
            fetch_log(q.bootstrap, "test-cluster", old, 1)
        with (
            MetadataLog(tmp_path / "other", flush=FlushPolicy.never()) as other,
            pytest.raises(KafkaError, match="another cluster"),
        ):
            fetch_log(q.bootstrap, "another-cluster", other, 1, timeout_s=10)
    finally:
        q.stop_all()


def test_sigterm_resigns_and_exits_cleanly(quorum: Quorum) -> None:
    leader = quorum.wait_leader()
    assert quorum.kill(leader, signal.SIGTERM) == 0
    quorum.wait_leader(not_in=(leader,))
    assert "resigning leadership" in quorum.output(leader)
    for follower in (i for i in quorum.ids if i != leader):  # told, not timed out
        assert f"no answer from leader {leader}" not in quorum.output(follower)


def test_quorum_describe_json_contract(quorum: Quorum) -> None:
    leader = quorum.wait_leader()
    result = zk2kraft("quorum", "describe", "--bootstrap-controller", quorum.endpoint(1), "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["leader_id"] == leader
    assert report["leader_epoch"] >= 1
    assert report["high_watermark"] >= 1
    assert sorted(v["replica_id"] for v in report["voters"]) == [1, 2, 3]
    for v in report["voters"]:
        assert {"replica_id", "log_end_offset", "lag"} <= v.keys()
    assert report["observers"] == []
    text = zk2kraft("quorum", "describe", "--bootstrap-controller", quorum.endpoint(2))
    assert f"LeaderId:        {leader}" in text.stdout


def test_bad_controller_config_lists_every_problem(tmp_path: Path) -> None:
    path = tmp_path / "bad.properties"
    path.write_text("node.id=x\nprocess.roles=broker\ncontroller.quorum.voters=1@h\n")
    result = zk2kraft("controller", "--config", str(path))
    assert result.returncode == 2
    for needle in ("node.id='x'", "process.roles", "1@h", "listeners", "metadata.log.dir"):
        assert needle in result.stderr, result.stderr


# --- admin and broker RPCs --------------------------------------------------------------------


def test_admin_topics_with_kafka_error_codes(shared: tuple[Quorum, list[BrokerSession]]) -> None:
    q, _ = shared
    code, out, err = admin(
        q,
        "create-topic",
        "orders",
        "--partitions",
        "6",
        "--replication-factor",
        "3",
        "--config",
        "retention.ms=1000",
    )
    assert code == 0, err
    assert "Created topic orders" in out
    code, _, err = admin(
        q, "create-topic", "orders", "--partitions", "1", "--replication-factor", "1"
    )
    assert code == 1 and "TOPIC_ALREADY_EXISTS (36)" in err
    for args, expected in (
        (["--partitions", "1", "--replication-factor", "9"], "INVALID_REPLICATION_FACTOR (38)"),
        (["--partitions", "0", "--replication-factor", "1"], "INVALID_PARTITIONS (37)"),
        (
            ["--partitions", "1", "--replication-factor", "1", "--config", "nope=1"],
            "INVALID_CONFIG (40)",
        ),
        (
            ["--partitions", "1", "--replication-factor", "1", "--config", "retention.ms=soon"],
            "INVALID_CONFIG (40)",
        ),
    ):
        code, _, err = admin(q, "create-topic", "other", *args)
        assert code == 1 and expected in err, err
    code, _, err = admin(
        q, "create-topic", "bad/name", "--partitions", "1", "--replication-factor", "1"
    )
    assert code == 1 and "INVALID_TOPIC_EXCEPTION (17)" in err

    code, out, _ = admin(q, "describe-topic", "orders", "--json")
    topic = json.loads(out)
    assert len(topic["partitions"]) == 6
    for p in topic["partitions"]:
        assert (
            len(set(p["replicas"])) == 3
            and p["leader"] == p["replicas"][0]
            and p["isr"] == p["replicas"]
        )
    leaders = {p["leader"] for p in topic["partitions"]}
    assert len(leaders) >= 3, "leadership should spread over the brokers"
    code, out, _ = admin(q, "list-topics", "--json")
    assert "orders" in json.loads(out)

    client = q.client()
    request = cpb.CreatePartitionsRequest()
    request.topics.add(name="orders", count=4)
    assert (
        client.call("CreatePartitions", request).results[0].error_code
        == ErrorCode.INVALID_PARTITIONS
    )
    request.topics[0].count = 8
    assert client.call("CreatePartitions", request).results[0].error_code == ErrorCode.NONE
    assert len(json.loads(admin(q, "describe-topic", "orders", "--json")[1])["partitions"]) == 8

    assert admin(q, "delete-topic", "orders")[0] == 0
    code, _, err = admin(q, "delete-topic", "orders")
    assert code == 1 and "UNKNOWN_TOPIC_OR_PARTITION (3)" in err


def test_admin_configs_quotas_acls_scram(shared: tuple[Quorum, list[BrokerSession]]) -> None:
    q, _ = shared
    assert admin(q, "create-topic", "cfg", "--partitions", "1", "--replication-factor", "1")[0] == 0
    assert (
        admin(
            q,
            "alter-config",
            "--entity-type",
            "topics",
            "--entity-name",
            "cfg",
            "--add-config",
            "cleanup.policy=compact,retention.ms=5000",
        )[0]
        == 0
    )
    assert (
        admin(
            q,
            "alter-config",
            "--entity-type",
            "topics",
            "--entity-name",
            "cfg",
            "--delete-config",
            "retention.ms",
        )[0]
        == 0
    )
    out = json.loads(
        admin(q, "describe-config", "--entity-type", "topics", "--entity-name", "cfg", "--json")[1]
    )
    assert out["configs"] == {"cleanup.policy": "compact"}
    code, _, err = admin(
        q,
        "alter-config",
        "--entity-type",
        "topics",
        "--entity-name",
        "missing",
        "--add-config",
        "retention.ms=1",
    )
    assert code == 1 and "UNKNOWN_TOPIC_OR_PARTITION" in err

    assert (
        admin(
            q,
            "alter-config",
            "--entity-type",
            "brokers",
            "--entity-default",
            "--add-config",
            "log.retention.ms=1000,ssl.keystore.password=hunter2",
        )[0]
        == 0
    )
    out = json.loads(
        admin(q, "describe-config", "--entity-type", "brokers", "--entity-default", "--json")[1]
    )
    assert out["configs"] == {"log.retention.ms": "1000", "ssl.keystore.password": "<redacted>"}

    assert (
        admin(
            q,
            "alter-quota",
            "--entity-type",
            "users",
            "--entity-name",
            "alice",
            "--add-config",
            "producer_byte_rate=1024",
        )[0]
        == 0
    )
    assert (
        admin(
            q,
            "alter-config",
            "--entity-type",
            "clients",
            "--entity-default",
            "--add-config",
            "consumer_byte_rate=2048",
        )[0]
        == 0
    )
    out = json.loads(
        admin(q, "describe-config", "--entity-type", "users", "--entity-name", "alice", "--json")[1]
    )
    assert out["configs"] == {"producer_byte_rate": 1024.0}
    code, _, err = admin(
        q,
        "alter-quota",
        "--entity-type",
        "ips",
        "--entity-name",
        "10.0.0.1",
        "--add-config",
        "producer_byte_rate=1",
    )
    assert code == 1 and "INVALID_REQUEST (42)" in err

    acl = [
        "--principal",
        "User:alice",
        "--operation",
        "Read",  # kafka-acls' spellings (delete-acl below: lower case)
        "--resource-type",
        "Topic",
        "--resource-name",
        "cfg",
    ]
    assert admin(q, "create-acl", *acl)[0] == 0
    assert (
        admin(
            q,
            "create-acl",
            *acl[:-1],
            "pay",
            "--resource-pattern-type",
            "PREFIXED",
            "--permission",
            "Deny",
        )[0]
        == 0
    )
    listed = json.loads(admin(q, "list-acls", "--principal", "User:alice", "--json")[1])
    assert {(a["resource_name"], a["pattern_type"], a["permission_type"]) for a in listed} == {
        ("cfg", "LITERAL", "ALLOW"),
        ("pay", "PREFIXED", "DENY"),
    }
    deleted = json.loads(
        admin(q, "delete-acl", "--principal", "User:alice", "--permission", "deny", "--json")[1]
    )
    assert [a["resource_name"] for a in deleted] == ["pay"]
    code, out, _ = admin(q, "create-acl", "--principal", "alice", *acl[2:], "--json")
    assert code == 1 and json.loads(out)["error"]["code"] == "INVALID_REQUEST"  # Kafka's name

    env = {**os.environ, "PW": "s3cret-value"}

    def scram(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "migration.cli.main",
                "admin",
                "--bootstrap-controller",
                q.endpoint(2),
                "alter-scram",
                *args,
            ],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )

    done = scram("--user", "alice", "--password-env", "PW", "--mechanism", "SCRAM-SHA-512")
    assert done.returncode == 0, done.stderr
    assert "s3cret" not in done.stdout + done.stderr
    weak = scram("--user", "bob", "--password-env", "PW", "--iterations", "100")
    assert weak.returncode == 2 and "--iterations 100 is outside [4096, 16384]" in weak.stderr
    request = cpb.AlterUserScramCredentialsRequest()  # the controller refuses it too
    request.upsertions.add(
        name="bob", mechanism=1, iterations=100, salt=b"s" * 32, salted_password=b"p" * 32
    )
    refused = q.client().call("AlterUserScramCredentials", request).results[0]
    assert refused.error_code == ErrorCode.UNACCEPTABLE_CREDENTIAL
    missing = scram("--user", "carol", "--delete")
    assert missing.returncode == 1 and "RESOURCE_NOT_FOUND (91)" in missing.stderr
    assert scram("--user", "alice", "--delete", "--mechanism", "SCRAM-SHA-512").returncode == 0
    for node in q.ids:
        assert "s3cret" not in q.output(node)


def test_broker_fencing_leader_election_alter_partition_and_producer_ids(
    shared: tuple[Quorum, list[BrokerSession]],
) -> None:
    q, brokers = shared
    client = q.client()
    assert create(client, "ha", partitions=4, rf=3).error_code == ErrorCode.NONE

    def partitions() -> list[cpb.PartitionState]:
        return list(
            client.call("Metadata", cpb.MetadataRequest(topics=["ha"])).topics[0].partitions
        )

    topic_id = client.call("Metadata", cpb.MetadataRequest(topics=["ha"])).topics[0].topic_id
    p0 = partitions()[0]
    leader = next(b for b in brokers if b.broker_id == p0.leader_id)
    follower = next(r for r in p0.replicas if r != p0.leader_id)

    # AlterPartition: the leader shrinks the ISR; stale epochs are refused with Kafka's codes
    request = cpb.AlterPartitionRequest(
        broker_id=leader.broker_id, broker_epoch=leader.broker_epoch
    )
    t = request.topics.add(topic_id=topic_id)
    t.partitions.add(
        partition_index=0,
        leader_epoch=p0.leader_epoch,
        partition_epoch=p0.partition_epoch,
        isr=[r for r in p0.isr if r != follower],
    )
    answer = client.call("AlterPartition", request).topics[0].partitions[0]
    assert answer.error_code == ErrorCode.NONE
    assert follower not in answer.isr and answer.partition_epoch == p0.partition_epoch + 1
    again = client.call("AlterPartition", request).topics[0].partitions[0]
    assert again.error_code == ErrorCode.INVALID_UPDATE_VERSION
    request.broker_epoch = 12345
    assert (
        client.call("AlterPartition", request).topics[0].partitions[0].error_code
        == ErrorCode.STALE_BROKER_EPOCH
    )

    ids = client.call(
        "AllocateProducerIds",
        cpb.AllocateProducerIdsRequest(broker_id=1, broker_epoch=brokers[0].broker_epoch),
    )
    more = client.call(
        "AllocateProducerIds",
        cpb.AllocateProducerIdsRequest(broker_id=1, broker_epoch=brokers[0].broker_epoch),
    )
    assert more.producer_id_start == ids.producer_id_start + ids.producer_id_len

    # a broker whose heartbeats stop is fenced; partitions it led move to another ISR member
    led = [p.partition_index for p in partitions() if p.leader_id == leader.broker_id]
    leader.stop()
    deadline = time.monotonic() + 15
    while any(p.leader_id == leader.broker_id for p in partitions()):
        assert time.monotonic() < deadline, "the silent broker kept its leadership"
        time.sleep(0.2)
    for p in partitions():
        assert leader.broker_id not in p.isr
        if p.partition_index in led:
            assert p.leader_id in p.isr and p.leader_id != leader.broker_id
    cluster = client.call("DescribeCluster", cpb.DescribeClusterRequest())
    assert next(b for b in cluster.brokers if b.broker_id == leader.broker_id).fenced

    # controlled shutdown: leadership moves first, then the broker may stop
    other = next(
        b
        for b in brokers
        if b is not leader and any(p.leader_id == b.broker_id for p in partitions())
    )
    answer = other.shutdown()
    assert answer.should_shut_down
    assert all(p.leader_id != other.broker_id for p in partitions())
