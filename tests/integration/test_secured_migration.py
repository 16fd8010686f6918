"""The whole migration with security on where Kafka has it, with real processes and real
clients: a ZooKeeper that requires SASL (DIGEST-MD5) and every znode created with
``zookeeper.set.acl``; brokers whose client listener is SASL_SSL (SCRAM, PLAIN for the
admin) with the ACL authorizer; mutual TLS on every gRPC channel (Raft, the controllers'
RPCs to brokers, brokers to controllers, the tools).

One principal, ``User:alice``, whose SCRAM credential and ACLs were made in ZooKeeper
mode before the migration, is driven through every phase: ZooKeeper mode, dual-write,
back to ZooKeeper by a rollback drill, a second migration with KRaft brokers, and the
finalized cluster. At each phase she logs in with the same password (a wrong one is
refused with SASL_AUTHENTICATION_FAILED) and is allowed and refused exactly the same
operations. Then every log, output and status of the run is scanned for the secrets it
used: none appears."""

from __future__ import annotations

import base64
import json
import secrets
import shutil
import signal
import urllib.request
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from kafka import KafkaAdminClient
from kafka.admin import (
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    ResourcePatternFilter,
)
from kafka.admin import ResourceType as KafkaResourceType
from kafka.errors import KafkaError as KafkaPythonError
from kio.schema.metadata.v12.request import MetadataRequest

from migration.broker.modes import Mode
from migration.common import rpc
from migration.common.kafka_errors import KafkaError
from migration.common.tls import TlsSettings
from migration.kafka.client import ClientSecurity, KafkaConnection
from migration.kafka.wire import SIZE
from migration.local import seed
from migration.local.cluster import INTERNAL_LISTENER
from migration.local.seed import ClusterSpec
from migration.local.zookeeper import EmbeddedZooKeeper, client_jaas
from migration.zk import paths
from migration.zk.client import ZkClient, ZkConnectError
from migration.zk.model.cluster import parse_controller
from migration.zk.reader import ZkReadError, read_snapshot
from migration.zk.security import zk_config_security
from tests.broker_harness import eventually
from tests.migration_harness import (
    MigrationRig,
    format_storage,
    migration_rig,
    restart_controllers,
    results_of,
)
from tests.security_harness import CLIENT_LISTENER, Authority, SecuredCluster
from tests.support import zk2kraft

BROKERS = [1, 2, 3]
FLAG = "zookeeper.metadata.migration.enable"
ALICE = "alice"


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[SecuredCluster]:
    """The cluster's material; the test process's gRPC uses the tools' certificate (the
    controllers require one) until the test ends."""
    material = SecuredCluster(tmp_path / "security")
    rpc.use_tls(material.grpc_tls())
    try:
        yield material
    finally:
        rpc.use_tls(None)


def admin(rig: MigrationRig, secured: SecuredCluster, user: str, password: str) -> AdminClient:
    return AdminClient(
        {"bootstrap.servers": rig.cluster.bootstrap, **secured.librdkafka(user, password)}
    )


def super_admin(rig: MigrationRig, secured: SecuredCluster) -> AdminClient:
    return AdminClient(
        {
            "bootstrap.servers": rig.cluster.bootstrap,
            **secured.librdkafka("admin", secured.admin_password, "PLAIN"),
        }
    )


def acl(name: str, pattern: ResourcePatternType, op: AclOperation, allow: bool) -> AclBinding:
    permission = AclPermissionType.ALLOW if allow else AclPermissionType.DENY
    return AclBinding(ResourceType.TOPIC, name, pattern, f"User:{ALICE}", "*", op, permission)


def prepare(rig: MigrationRig, secured: SecuredCluster, password: str) -> None:
    """In ZooKeeper mode, as the super user: alice's SCRAM credential (set the Kafka
    way: AlterUserScramCredentials), two topics and her ACLs."""
    root = super_admin(rig, secured)
    upsert = UserScramCredentialUpsertion(
        ALICE, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), password.encode()
    )
    results_of(root.alter_user_scram_credentials([upsert]))
    results_of(root.create_topics([NewTopic(t, 3, 3) for t in ("ledger-1", "payments")]))
    results_of(
        root.create_acls(
            [
                acl("ledger-", ResourcePatternType.PREFIXED, AclOperation.ALL, True),
                acl("ledger-secret", ResourcePatternType.LITERAL, AclOperation.ALL, False),
                acl("payments", ResourcePatternType.LITERAL, AclOperation.DESCRIBE, True),
            ]
        )
    )


def outcome(future: Any) -> str:
    try:
        future.result(timeout=60)
    except KafkaException as exc:
        return exc.args[0].name()
    return "ok"


def describe_acls(rig: MigrationRig, secured: SecuredCluster, password: str) -> str:
    """DescribeAcls through kafka-python (librdkafka drops the response's error code)."""
    client = KafkaAdminClient(
        bootstrap_servers=rig.cluster.bootstrap,
        security_protocol="SASL_SSL",
        sasl_mechanism="SCRAM-SHA-512",
        sasl_plain_username=ALICE,
        sasl_plain_password=password,
        ssl_cafile=str(secured.ca_file),
        request_timeout_ms=30_000,
    )
    try:
        pattern = ResourcePatternFilter(KafkaResourceType.ANY, None, ACLResourcePatternType.ANY)
        client.describe_acls(
            ACLFilter(f"User:{ALICE}", "*", ACLOperation.ANY, ACLPermissionType.ANY, pattern)
        )
    except KafkaPythonError as exc:
        return str(exc.message)
    finally:
        client.close()
    return "ok"


def probe(rig: MigrationRig, secured: SecuredCluster, password: str) -> dict[str, Any]:
    """What alice may do, through the brokers as they are now (each operation's outcome
    by its Kafka error name), and what a wrong password gets."""
    client = admin(rig, secured, ALICE, password)
    topics = sorted(t for t in client.list_topics(timeout=60).topics)

    def configs(topic: str) -> str:
        return outcome(
            next(
                iter(client.describe_configs([ConfigResource(ResourceType.TOPIC, topic)]).values())
            )
        )

    def alter(topic: str) -> str:
        resource = ConfigResource(ResourceType.TOPIC, topic)
        resource.add_incremental_config(
            ConfigEntry("retention.ms", "5000", incremental_operation=AlterConfigOpType.SET)
        )
        return outcome(
            next(iter(client.incremental_alter_configs([resource], validate_only=True).values()))
        )

    def create(topic: str) -> str:
        new = [NewTopic(topic, 1, 3)]
        return outcome(next(iter(client.create_topics(new, validate_only=True).values())))

    seen = {
        "topics": topics,
        "describe_configs ledger-1": configs("ledger-1"),
        "describe_configs payments": configs("payments"),
        "alter_configs ledger-1": alter("ledger-1"),
        "alter_configs payments": alter("payments"),
        "create_topics ledger-2": create("ledger-2"),
        "create_topics ledger-secret": create("ledger-secret"),
        "create_topics payments-2": create("payments-2"),
        "create_acls": outcome(
            next(
                iter(
                    client.create_acls(
                        [acl("x-", ResourcePatternType.PREFIXED, AclOperation.ALL, True)]
                    ).values()
                )
            )
        ),
        "describe_acls": describe_acls(rig, secured, password),
    }
    wrong = ClientSecurity(
        "SASL_SSL", TlsSettings(trusted=secured.ca.pem), "SCRAM-SHA-512", ALICE, password + "x"
    )
    port = rig.cluster.brokers[BROKERS[0]].port
    with pytest.raises(KafkaError) as refused:
        KafkaConnection("127.0.0.1", port, 20, security=wrong).close()
    seen["wrong password"] = refused.value.code.name
    return seen


EXPECTED = {
    "topics": ["ledger-1", "payments"],
    "describe_configs ledger-1": "ok",
    "describe_configs payments": "TOPIC_AUTHORIZATION_FAILED",
    "alter_configs ledger-1": "ok",
    "alter_configs payments": "TOPIC_AUTHORIZATION_FAILED",
    "create_topics ledger-2": "ok",
    "create_topics ledger-secret": "TOPIC_AUTHORIZATION_FAILED",
    "create_topics payments-2": "TOPIC_AUTHORIZATION_FAILED",
    "create_acls": "CLUSTER_AUTHORIZATION_FAILED",
    "describe_acls": "CLUSTER_AUTHORIZATION_FAILED",
    "wrong password": "SASL_AUTHENTICATION_FAILED",
}


def secured_rig(
    zk: EmbeddedZooKeeper, secured: SecuredCluster, tmp: Path, **kw: Any
) -> AbstractContextManager[MigrationRig]:
    """The migration rig with every process secured (the quorum not started: ``kw``)."""
    return migration_rig(
        zk,
        tmp,
        ClusterSpec(topics=3, partitions=9, scram_users=2, acl_resources=3, delegation_tokens=1),
        broker_props=secured.broker_properties(INTERNAL_LISTENER),
        controller_props=secured.controller_properties(INTERNAL_LISTENER),
        zk_security=secured.zk_security(),
        client_listener=CLIENT_LISTENER,
        client_security=secured.admin_security(),
        **kw,
    )


def roll(rig: MigrationRig, mode: Mode) -> None:
    """Every broker restarted into ``mode``, one at a time."""
    for b in BROKERS:
        rig.cluster.set_mode(b, mode)
        rig.cluster.restart(b)
        rig.cluster.wait_ready(90, expected=BROKERS)


def tool(secured: SecuredCluster, *args: str) -> Any:
    """The zk2kraft command with the tools' TLS certificate for the controllers."""
    return zk2kraft("--command-config", str(secured.command_config), *args)


def zookeeper_acls(rig: MigrationRig, secured: SecuredCluster, zk: EmbeddedZooKeeper) -> None:
    """Kafka's ACLs on ZooKeeper: SCRAM credentials readable by the brokers' principal
    only; another SASL user gets NoAuth, named (the library and the command); a client
    without a login is told the server requires one."""
    user_acl = rig.zk.kazoo.get_acls(f"{paths.CONFIG}/users/{ALICE}")[0]
    assert [(a.id.scheme, a.id.id, a.perms) for a in user_acl] == [("sasl", "kafka", 31)]
    topic_acl = rig.zk.kazoo.get_acls(paths.topic("ledger-1"))[0]
    assert {(a.id.scheme, a.id.id) for a in topic_acl} == {("sasl", "kafka"), ("world", "anyone")}
    other = secured.root / "intruder.properties"
    jaas = client_jaas(secured.root / "intruder-jaas.conf", "intruder", INTRUDER_PASSWORD)
    other.write_text(f"java.security.auth.login.config={jaas}\n")
    with (
        ZkClient(rig.zk_connect, security=zk_config_security(other)) as intruder,
        pytest.raises(ZkReadError, match="NoAuth"),
    ):
        read_snapshot(intruder)
    refused = zk2kraft("preflight", "--zk", rig.zk_connect, "--zk-config", str(other))
    assert refused.returncode == 2 and "NoAuth" in refused.stderr, refused.stderr
    anonymous = zk2kraft("preflight", "--zk", rig.zk_connect)  # the server requires SASL
    assert anonymous.returncode == 2, anonymous.stderr
    assert "error: ZooKeeper requires a SASL login: give --zk-config" in anonymous.stderr


INTRUDER_PASSWORD = "intruder-password"


def strangers_are_refused(rig: MigrationRig, secured: SecuredCluster) -> None:
    """No TLS, no login, or a certificate the cluster's CA did not sign: refused."""
    port = rig.cluster.brokers[BROKERS[0]].port
    metadata = MetadataRequest(
        topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False
    )
    tls_only = ClientSecurity("SSL", TlsSettings(trusted=secured.ca.pem))
    for security in (ClientSecurity(), tls_only):  # plaintext bytes; TLS without a login
        with (
            pytest.raises(OSError),
            KafkaConnection("127.0.0.1", port, 20, security=security) as conn,
        ):
            conn.request(metadata)
    with (  # before a login, 512 KiB at most (sasl.server.max.receive.size)
        pytest.raises(OSError),
        KafkaConnection("127.0.0.1", port, 20, security=tls_only) as conn,
    ):
        conn.send_raw(SIZE.pack(600_000) + bytes(600_000))
        conn.read_frame()
    quorum = ["--bootstrap-controller", ",".join(rig.quorum.bootstrap), "--json"]
    assert zk2kraft("migration", "status", *quorum).returncode != 0  # no TLS
    key, cert = Authority("a stranger's CA").issue("tool")
    stranger = secured.root / "stranger.properties"
    store = secured.root / "stranger.pem"
    store.write_text(key + cert)
    stranger.write_text(
        f"security.protocol=SSL\nssl.truststore.location={secured.ca_file}\n"
        f"ssl.keystore.location={store}\n"
    )
    refused = zk2kraft("--command-config", str(stranger), "migration", "status", *quorum)
    assert refused.returncode != 0
    assert tool(secured, "migration", "status", *quorum).returncode == 0


def test_a_secured_cluster_migrates_rolls_back_and_finalizes_with_logins_and_acls_intact(
    secured: SecuredCluster, tmp_path: Path
) -> None:
    password = "alice-" + secrets.token_urlsafe(9)
    users = {**secured.zk_users, "intruder": INTRUDER_PASSWORD}
    seen: dict[str, dict[str, Any]] = {}
    outputs: list[str] = []
    with (
        EmbeddedZooKeeper(base_dir=tmp_path / "zk", sasl_users=users) as zk,
        secured_rig(zk, secured, tmp_path, start_quorum=False, metrics=True) as rig,
    ):
        prepare(rig, secured, password)
        seen["ZooKeeper mode"] = probe(rig, secured, password)
        zookeeper_acls(rig, secured, zk)

        rig.quorum.start_all()
        rig.wait_phase("DUAL_WRITE")
        seen["dual-write"] = probe(rig, secured, password)
        strangers_are_refused(rig, secured)
        outputs += tools_on_a_secured_cluster(rig, secured, password)
        root = super_admin(rig, secured)  # referenced until its futures are done
        results_of(root.create_topics([NewTopic("payments-dual", 2, 3)]))
        eventually(lambda: rig.zk.kazoo.exists(paths.topic("payments-dual")), 60, "dual-written")
        dual_acl = rig.zk.kazoo.get_acls(paths.topic("payments-dual"))[0]
        assert ("sasl", "kafka") in {(a.id.scheme, a.id.id) for a in dual_acl}

        outputs.append(json.dumps(rig.status()))

        # the rollback drill from MigrationActive: the quorum stopped once ZooKeeper caught
        # up, ZooKeeper handed back by the command (SASL to ZooKeeper, TLS to the quorum)
        eventually(lambda: rig.status()["zk_write_behind_lag"] == 0, 60, "ZooKeeper caught up")
        rig.quorum.stop_all(signal.SIGTERM)
        logs = [a for n in rig.quorum.ids for a in ("--log-dir", str(rig.quorum.log_dir(n)))]
        back = tool(
            secured, "rollback", "--zk", rig.zk_connect, "--zk-config", str(secured.zk_config),
            *logs, "--settle-s", "1", "--json",
        )  # fmt: skip
        assert back.returncode == 0, back.stdout + back.stderr
        outputs.append(back.stdout + back.stderr)
        eventually(
            lambda: (
                (o := parse_controller(paths.CONTROLLER, rig.zk.get(paths.CONTROLLER)[0]))
                and not o.is_kraft
            ),
            60,
            "a ZooKeeper controller elected",
        )
        seen["after rollback"] = probe(rig, secured, password)

        # a second migration, finalized
        for node in rig.quorum.ids:
            shutil.rmtree(rig.quorum.log_dir(node))
            formatted = format_storage(rig.quorum, node, rig.cluster_id)
            assert formatted.returncode == 0, formatted.stderr
        rig.quorum.start_all()
        rig.wait_phase("DUAL_WRITE")
        roll(rig, Mode.KRAFT)
        eventually(lambda: rig.status()["state"] == "MigrationFinished", 60, "finished")
        seen["KRaft brokers"] = probe(rig, secured, password)
        restart_controllers(rig, **{FLAG: "false", "zookeeper.connect": None})
        eventually(lambda: rig.status()["state"] == "KRaft", 60, "finalized")
        seen["finalized"] = probe(rig, secured, password)
        status = tool(
            secured, "migration", "status", "--bootstrap-controller",
            ",".join(rig.quorum.bootstrap), "--json",
        )  # fmt: skip
        assert status.returncode == 0, status.stderr
        outputs.append(status.stdout)
        dump = zk2kraft("log", "dump", "--log-dir", str(rig.quorum.log_dir(rig.quorum.ids[0])))
        outputs.append(dump.stdout + dump.stderr)
        outputs += metric_pages(rig)
        snapshot = read_snapshot(rig.zk)

    assert {phase: found for phase, found in seen.items() if found != EXPECTED} == {}
    texts = outputs + [
        f.read_text(errors="replace")
        for f in tmp_path.rglob("*")
        if f.is_file() and f.suffix in (".log", ".out")
    ]
    assert_no_secrets(secured, snapshot, password, texts)


def metric_pages(rig: MigrationRig) -> list[str]:
    """What Prometheus would scrape from every process now."""
    targets = [rig.quorum.metrics_target(n) for n in rig.quorum.ids]
    targets += [f"127.0.0.1:{b.metrics_port}" for b in rig.cluster.brokers.values()]
    pages = []
    for target in targets:
        with urllib.request.urlopen(f"http://{target}/metrics", timeout=30) as page:
            pages.append(page.read().decode())
    return pages


def tools_on_a_secured_cluster(
    rig: MigrationRig, secured: SecuredCluster, password: str
) -> list[str]:
    """The commands an operator runs, secured: the admin tool over SASL_SSL as alice
    (her view), and the Spark audit (SASL to ZooKeeper, mutual TLS to the quorum):
    consistent. Returns what they printed."""
    login = secured.root / "alice.properties"
    login.write_text(
        f"security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
        f"ssl.truststore.location={secured.ca_file}\nsasl.jaas.config="
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{ALICE}" password="{password}";\n'
    )
    listed = zk2kraft(
        "--command-config", str(login), "admin", "--bootstrap-server", rig.cluster.bootstrap,
        "list-topics", "--json",
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    assert sorted(json.loads(listed.stdout)) == EXPECTED["topics"]
    audit = tool(
        secured, "audit", "--zk", rig.zk_connect, "--zk-config", str(secured.zk_config),
        "--bootstrap-controller", ",".join(rig.quorum.bootstrap), "--json",
    )  # fmt: skip
    assert audit.returncode == 0, audit.stdout + audit.stderr
    assert json.loads(audit.stdout)["consistent"]
    return [listed.stdout + listed.stderr, audit.stdout + audit.stderr]


def assert_no_secrets(
    secured: SecuredCluster, snapshot: Any, password: str, texts: list[str]
) -> None:
    """None of the run's secrets in any log, output, status or dump."""
    found = [password, secured.admin_password, secured.zk_password, INTRUDER_PASSWORD]
    found += [line for line in secured.node_key.splitlines() if "PRIVATE KEY" not in line]
    for creds in snapshot.scram.values():
        for c in creds.values():
            for raw in (c.salt, c.stored_key, c.server_key):
                found += [base64.b64encode(raw).decode(), raw.hex()]
    assert len(found) > 10
    leaked = {s for s in found if len(s) >= 8 for text in texts if s in text}
    assert not leaked, f"{len(leaked)} secret(s) leaked into logs or outputs"


def test_zookeeper_over_tls_with_sasl_and_kafkas_acls(
    secured: SecuredCluster, tmp_path: Path
) -> None:
    """``zookeeper.ssl.*``: the project's ZooKeeper client over TLS to the secure port,
    logged in with SASL; a client without TLS settings cannot talk there."""
    tls = (secured.node_file, secured.ca_file)
    with EmbeddedZooKeeper(base_dir=tmp_path / "zk", sasl_users=secured.zk_users, tls=tls) as zk:
        config = tmp_path / "zk-tls.properties"
        config.write_text(
            secured.zk_lines() + "zookeeper.ssl.client.enable=true\nzookeeper.clientCnxnSocket="
            "org.apache.zookeeper.ClientCnxnSocketNetty\n"
            f"zookeeper.ssl.truststore.location={secured.ca_file}\n"
            "zookeeper.ssl.truststore.type=PEM\n"
        )
        connect = zk.secure_connect_string + "/tls"
        with ZkClient(connect, security=zk_config_security(config)) as client:
            client.ensure_chroot()
            seed.write(client, seed.generate(ClusterSpec(topics=2, partitions=4, scram_users=1)))
            assert len(read_snapshot(client).topics) == 2
            users = client.kazoo.get_children(f"{paths.CONFIG}/users")
            acl = client.kazoo.get_acls(f"{paths.CONFIG}/users/{users[0]}")[0]
            assert [(a.id.scheme, a.id.id) for a in acl] == [("sasl", "kafka")]
        with pytest.raises(ZkConnectError):
            ZkClient(connect, timeout_s=3, security=secured.zk_security())
