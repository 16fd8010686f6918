"""A ZooKeeper-mode cluster of three real broker processes, driven by real Kafka clients
(confluent-kafka's AdminClient, kafka-python's KafkaAdminClient) and zk2kraft's admin
CLI over Kafka's protocol: the effects land in ZooKeeper in Kafka's formats, and every
broker's answers follow ZooKeeper through the change notifications."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from kafka.admin import ConfigResource as KpConfigResource
from kafka.admin import ConfigResourceType as KpConfigResourceType
from kafka.admin import KafkaAdminClient
from kafka.admin import NewTopic as KpNewTopic
from kafka.errors import UnsupportedVersionError
from kafka.structs import TopicPartition

from migration.local.cluster import LocalCluster
from migration.local.zookeeper import EmbeddedZooKeeper
from migration.zk import paths
from migration.zk.client import ZkClient
from migration.zk.model import passwords
from migration.zk.model.acls import AclEntry, render_acls
from tests.broker_harness import eventually, leaders, running_cluster
from tests.support import zk2kraft

BROKERS = [1, 2, 3]
ENCODER_SECRET = "brokers-shared-secret"  # a test value: password.encoder.secret
KEYSTORE = "listener.name.internal.ssl.keystore.password"


@pytest.fixture(scope="module")
def cluster(
    zk_server: EmbeddedZooKeeper, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[LocalCluster, ZkClient]]:
    with running_cluster(
        zk_server,
        tmp_path_factory.mktemp("cluster"),
        BROKERS,
        **{"password.encoder.secret": ENCODER_SECRET},
    ) as running:
        yield running


@pytest.fixture(scope="module")
def admin(cluster: tuple[LocalCluster, ZkClient]) -> AdminClient:
    return AdminClient({"bootstrap.servers": cluster[0].bootstrap})


def _done(futures: dict[Any, Any]) -> dict[Any, Any]:
    return {k: f.result(timeout=60) for k, f in futures.items()}


def _json(client: ZkClient, path: str) -> Any:
    return json.loads(client.get(path)[0])


def _described(admin: AdminClient, resource: ConfigResource) -> dict[str, str | None]:
    (result,) = _done(admin.describe_configs([resource])).values()
    return {k: v.value for k, v in result.items()}


def test_confluent_admin_creates_lists_and_deletes_topics_the_zookeeper_way(
    cluster: tuple[LocalCluster, ZkClient], admin: AdminClient
) -> None:
    local, zk = cluster
    _done(admin.create_topics([NewTopic("orders", 6, 3), NewTopic("audit", 2, 2)]))

    assignment = _json(zk, paths.topic("orders"))
    assert assignment["version"] == 3 and len(assignment["topic_id"]) == 22
    assert sorted(assignment["partitions"]) == [str(p) for p in range(6)]
    assert zk.kazoo.exists(paths.config_entity("topics", "orders")) is not None
    state = _json(zk, paths.partition_state("orders", 0))
    controller_epoch = int(zk.get(paths.CONTROLLER_EPOCH)[0])
    assert state["controller_epoch"] == controller_epoch and state["leader"] in BROKERS

    cluster_view = admin.describe_cluster().result(timeout=30)
    assert sorted(n.id for n in cluster_view.nodes) == BROKERS
    assert cluster_view.controller.id == json.loads(zk.get(paths.CONTROLLER)[0])["brokerid"]
    assert cluster_view.cluster_id == _json(zk, paths.CLUSTER_ID)["id"]
    listed = admin.list_topics(timeout=30).topics["orders"].partitions
    assert len(listed) == 6 and all(p.leader in p.isrs for p in listed.values())
    for broker in BROKERS:  # every broker answers the same leaders
        eventually(lambda b=broker: len(leaders(local, b, "orders")) == 6)
    assert len({json.dumps(leaders(local, b, "orders")) for b in BROKERS}) == 1

    again = admin.create_topics([NewTopic("orders", 1, 1)])["orders"]
    with pytest.raises(Exception, match=r"TOPIC_ALREADY_EXISTS|already exists"):
        again.result(timeout=60)
    bad = admin.create_topics([NewTopic("too-many-replicas", 1, 4)])["too-many-replicas"]
    with pytest.raises(Exception, match=r"INVALID_REPLICATION_FACTOR|replication"):
        bad.result(timeout=60)

    _done(admin.create_partitions([NewPartitions("audit", 4)]))
    assert sorted(_json(zk, paths.topic("audit"))["partitions"]) == ["0", "1", "2", "3"]
    eventually(lambda: len(leaders(local, 2, "audit")) == 4, what="new partitions led")

    _done(admin.delete_topics(["audit"]))
    assert zk.kazoo.exists(paths.topic("audit")) is None
    assert zk.kazoo.get_children(paths.DELETE_TOPICS) == []
    for broker in BROKERS:
        eventually(lambda b=broker: leaders(local, b, "audit") == {}, what="deletion seen")


def test_configs_follow_zookeeper_on_every_broker(
    cluster: tuple[LocalCluster, ZkClient], admin: AdminClient
) -> None:
    local, zk = cluster
    _done(admin.create_topics([NewTopic("configured", 1, 2)]))
    resource = ConfigResource(
        ResourceType.TOPIC,
        "configured",
        incremental_configs=[
            ConfigEntry("retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    _done(admin.incremental_alter_configs([resource]))
    assert _json(zk, paths.config_entity("topics", "configured"))["config"] == {
        "retention.ms": "3600000"
    }
    changes = zk.kazoo.get_children(paths.CONFIG_CHANGES)
    assert any(
        _json(zk, f"{paths.CONFIG_CHANGES}/{c}")["entity_path"] == "topics/configured"
        for c in changes
    )
    for broker in BROKERS:  # each broker's own answer, through its notifications
        one = AdminClient({"bootstrap.servers": f"127.0.0.1:{local.brokers[broker].port}"})
        eventually(
            lambda a=one: (
                _described(a, ConfigResource(ResourceType.TOPIC, "configured")).get("retention.ms")
                == "3600000"
            ),
            what=f"broker {broker} sees the config",
        )
    bad = ConfigResource(
        ResourceType.TOPIC,
        "configured",
        incremental_configs=[
            ConfigEntry("retention.ms", "soon", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    with pytest.raises(Exception, match=r"INVALID_CONFIG|retention\.ms"):
        _done(admin.incremental_alter_configs([bad]))

    # kafka-python reads the same thing, and creates topics of its own
    kp = KafkaAdminClient(bootstrap_servers=local.bootstrap, request_timeout_ms=60000)
    try:
        answer = kp.describe_configs([KpConfigResource(KpConfigResourceType.TOPIC, "configured")])
        assert "retention.ms" in json.dumps(answer, default=str)
        # the legacy AlterConfigs (kafka-python sends the other modified configs along, so
        # nothing is reset behind the user's back)
        kp.alter_configs(
            [
                KpConfigResource(
                    KpConfigResourceType.TOPIC, "configured", configs={"cleanup.policy": "compact"}
                )
            ]
        )
        assert _json(zk, paths.config_entity("topics", "configured"))["config"] == {
            "cleanup.policy": "compact",
            "retention.ms": "3600000",
        }
        every = kp.describe_configs(
            [KpConfigResource(KpConfigResourceType.TOPIC, "configured")], config_filter="all"
        )
        assert "segment.bytes" in json.dumps(every, default=str)  # Kafka's defaults listed
        kp.create_topics([KpNewTopic("from-kafka-python", 3, 2)])
        eventually(lambda: len(leaders(local, 3, "from-kafka-python")) == 3)
        assert "from-kafka-python" in kp.list_topics()
    finally:
        kp.close()


def test_acls_scram_and_quotas_land_in_zookeeper_in_kafkas_formats(
    cluster: tuple[LocalCluster, ZkClient], admin: AdminClient, tmp_path: Path
) -> None:
    local, zk = cluster
    binding = AclBinding(
        ResourceType.TOPIC, "payments", ResourcePatternType.LITERAL, "User:alice", "*",
        AclOperation.READ, AclPermissionType.ALLOW,
    )  # fmt: skip
    _done(admin.create_acls([binding]))
    stored = _json(zk, paths.acl_resource(False, "Topic", "payments"))
    assert stored["acls"] == [
        {"principal": "User:alice", "permissionType": "Allow", "operation": "Read", "host": "*"}
    ]
    assert any(
        zk.get(f"{paths.ACL_CHANGES}/{c}")[0] == b"TOPIC:payments"
        for c in zk.kazoo.get_children(paths.ACL_CHANGES)
    )
    any_topic = AclBindingFilter(
        ResourceType.TOPIC, None, ResourcePatternType.ANY, None, None,
        AclOperation.ANY, AclPermissionType.ANY,
    )  # fmt: skip
    for broker in BROKERS:
        one = AdminClient({"bootstrap.servers": f"127.0.0.1:{local.brokers[broker].port}"})
        eventually(
            lambda a=one: len(a.describe_acls(any_topic).result(timeout=30)) == 1,
            what=f"broker {broker} sees the ACL",
        )
    deleted = _done(admin.delete_acls([any_topic]))
    assert [b.name for b in next(iter(deleted.values()))] == ["payments"]
    assert zk.kazoo.exists(paths.acl_resource(False, "Topic", "payments")) is None

    upsert = UserScramCredentialUpsertion(
        "carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), b"s3cret", b"salt-bytes"
    )
    _done(admin.alter_user_scram_credentials([upsert]))
    config = _json(zk, paths.config_entity("users", "carol"))["config"]
    assert (
        config["SCRAM-SHA-256"].startswith("salt=") and "iterations=8192" in config["SCRAM-SHA-256"]
    )
    described = eventually(
        lambda: admin.describe_user_scram_credentials(["carol"])["carol"].result(timeout=30)
    )
    assert described.scram_credential_infos[0].iterations == 8192

    # quotas: no maintained Python client has the quota APIs; zk2kraft's admin verb
    # sends Kafka's AlterClientQuotas / DescribeClientQuotas through a broker
    out = zk2kraft(
        "admin", "--bootstrap-server", local.bootstrap, "alter-config", "--entity-type",
        "users", "--entity-name", "carol", "--add-config", "producer_byte_rate=1048576",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert (
        _json(zk, paths.config_entity("users", "carol"))["config"]["producer_byte_rate"]
        == ("1048576.0")
        or _json(zk, paths.config_entity("users", "carol"))["config"]["producer_byte_rate"]
        == "1048576"
    )
    shown = zk2kraft(
        "admin", "--bootstrap-server", local.bootstrap, "describe-config", "--entity-type",
        "users", "--entity-name", "carol", "--json",
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["configs"] == {"producer_byte_rate": 1048576.0}


def test_admin_cli_over_kafkas_protocol(cluster: tuple[LocalCluster, ZkClient]) -> None:
    local, zk = cluster
    server = ("admin", "--bootstrap-server", local.bootstrap)
    created = zk2kraft(*server, "create-topic", "cli-made", "--partitions", "2",
                       "--replication-factor", "3")  # fmt: skip
    assert created.returncode == 0, created.stderr
    described = zk2kraft(*server, "describe-topic", "cli-made", "--json")
    assert described.returncode == 0, described.stderr
    report = json.loads(described.stdout)
    assert len(report["partitions"]) == 2
    assert all(p["leader"] in p["isr"] and len(p["replicas"]) == 3 for p in report["partitions"])
    altered = zk2kraft(*server, "alter-config", "--entity-type", "topics", "--entity-name",
                       "cli-made", "--add-config", "retention.ms=1000")  # fmt: skip
    assert altered.returncode == 0, altered.stderr

    def described() -> dict[str, str]:  # any broker answers, once its notification came
        out = zk2kraft(*server, "describe-config", "--entity-type", "topics", "--entity-name",
                       "cli-made", "--json")  # fmt: skip
        return json.loads(out.stdout)["configs"]  # type: ignore[no-any-return]

    assert eventually(described) == {"retention.ms": "1000"}  # what is set, no defaults
    missing = zk2kraft(*server, "describe-topic", "no-such-topic")
    assert missing.returncode == 1 and "UNKNOWN_TOPIC_OR_PARTITION" in missing.stderr
    acl = ("--principal", "User:dave", "--operation", "write", "--resource-type", "topic",
           "--resource-name", "cli-made")  # fmt: skip
    assert zk2kraft(*server, "create-acl", *acl).returncode == 0
    listed = eventually(
        lambda: json.loads(
            zk2kraft(*server, "list-acls", "--principal", "User:dave", "--json").stdout
        )
    )
    assert [(a["principal"], a["resource_name"]) for a in listed] == [("User:dave", "cli-made")]
    dropped = zk2kraft(*server, "delete-acl", *acl, "--json")
    assert dropped.returncode == 0 and json.loads(dropped.stdout)[0]["principal"] == "User:dave"
    assert zk.kazoo.exists(paths.acl_resource(False, "Topic", "cli-made")) is None
    scram = subprocess.run(
        [sys.executable, "-m", "migration.cli.main", *server, "alter-scram", "--user", "erin",
         "--password-env", "ERIN_PASSWORD"],
        env={**os.environ, "ERIN_PASSWORD": "not-in-any-log"},
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert scram.returncode == 0, scram.stderr
    stored = _json(zk, paths.config_entity("users", "erin"))["config"]["SCRAM-SHA-256"]
    assert "iterations=8192" in stored and "not-in-any-log" not in stored + scram.stdout
    deleted = zk2kraft(*server, "delete-topic", "cli-made")
    assert deleted.returncode == 0, deleted.stderr
    assert zk.kazoo.exists(paths.topic("cli-made")) is None


def test_a_broker_password_config_is_stored_encrypted_and_shown_redacted(
    cluster: tuple[LocalCluster, ZkClient], admin: AdminClient
) -> None:
    local, zk = cluster
    resource = ConfigResource(
        ResourceType.BROKER,
        "2",
        incremental_configs=[
            ConfigEntry(KEYSTORE, "hunter2", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    _done(admin.incremental_alter_configs([resource]))
    stored = _json(zk, paths.config_entity("brokers", "2"))["config"][KEYSTORE]
    assert "hunter2" not in stored and passwords.is_encoded(stored)
    assert passwords.decode(stored, ENCODER_SECRET) == "hunter2"

    def keystore(a: AdminClient) -> Any:
        (result,) = _done(a.describe_configs([ConfigResource(ResourceType.BROKER, "2")])).values()
        return result.get(KEYSTORE)

    for broker in BROKERS:  # every broker learns it through /config/changes
        one = AdminClient({"bootstrap.servers": f"127.0.0.1:{local.brokers[broker].port}"})
        entry = eventually(lambda a=one: keystore(a), what=f"broker {broker} sees it")
        assert entry.is_sensitive and entry.value is None


def test_delete_acls_answers_what_was_deleted_not_what_the_brokers_view_held(
    cluster: tuple[LocalCluster, ZkClient], admin: AdminClient
) -> None:
    """An ACL this broker has not heard of yet (its znode written without the change
    notification that would tell the brokers, as a notification still on its way) is
    deleted by a matching filter, and the answer names it."""
    _, zk = cluster
    path = paths.acl_resource(False, "Topic", "unheard-of")
    entry = AclEntry("User:mallory", "*", AclOperation.WRITE.value, AclPermissionType.DENY.value)
    zk.kazoo.create(path, render_acls((entry,)), makepath=True)
    unheard = AclBindingFilter(
        ResourceType.TOPIC, "unheard-of", ResourcePatternType.LITERAL, None, None,
        AclOperation.ANY, AclPermissionType.ANY,
    )  # fmt: skip
    assert admin.describe_acls(unheard).result(timeout=30) == []  # the brokers' views lack it
    deleted = next(iter(_done(admin.delete_acls([unheard])).values()))
    assert [(b.name, b.principal, b.operation) for b in deleted] == [
        ("unheard-of", "User:mallory", AclOperation.WRITE)
    ]
    assert zk.kazoo.exists(path) is None


def test_partition_reassignment_waits_for_a_kraft_controller(
    cluster: tuple[LocalCluster, ZkClient], admin: AdminClient
) -> None:
    """A ZooKeeper-mode zk2kraft cluster does not run reassignments (docs/kafka-log.md):
    both APIs answer UNSUPPORTED_VERSION, and the topic's znode is left as it was."""
    local, zk = cluster
    _done(admin.create_topics([NewTopic("not-moved", 1, 1)]))
    path = paths.topic("not-moved")
    before = eventually(lambda: zk.kazoo.exists(path) and zk.get(path)[0], 60, "created")
    client = KafkaAdminClient(bootstrap_servers=local.bootstrap, request_timeout_ms=30_000)
    try:
        with pytest.raises(UnsupportedVersionError, match="KRaft controller"):
            client.list_partition_reassignments()
        with pytest.raises(UnsupportedVersionError, match="KRaft controller"):
            client.alter_partition_reassignments({TopicPartition("not-moved", 0): [1, 2]})
    finally:
        client.close()
    assert zk.get(path)[0] == before
