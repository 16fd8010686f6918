"""A ZooKeeper-to-KRaft migration run by real Apache Kafka 3.9.2 itself, for the tests
that audit it with zk2kraft and hold zk2kraft's copy against Kafka's.

:func:`start_kafka_migration` builds it on a chroot of the tests' ZooKeeper (Debian's
ZooKeeper, :class:`~migration.local.zookeeper.EmbeddedZooKeeper`):

1. Three ZooKeeper-mode brokers (ids 1-3; a PLAINTEXT listener, everyone on it a super
   user, and a SASL_PLAINTEXT listener with SCRAM; the AclAuthorizer; delegation tokens
   and ``password.encoder.secret`` on).
2. Every entity kind, written by the brokers from Kafka's Admin API (kafka-python
   speaking it) or, where that client has no call, from Kafka's own tools
   (ConfigCommand for SCRAM, quotas and the default broker config,
   ReassignPartitionsCommand, DelegationTokenCommand): topics with configs, a
   partition reassignment kept in flight by a 1 B/s replication throttle, literal and
   prefixed ACLs, SCRAM-SHA-256/512 users, user, client, user+client and ip quotas
   (defaults too), per-broker and cluster-default broker configs, a password config
   (encrypted by the brokers), a delegation token (created over SASL), a producer-id
   block (an idempotent producer's). Legacy ZooKeeper
   consumer offsets: no tool of Kafka 3.9 writes them (the old Scala consumer that did
   was removed in 2.0, and ``kafka-consumer-groups`` lost ``--zookeeper`` with it), so
   they are written as that consumer's ZookeeperConsumerConnector wrote them: the offset
   as decimal text at ``/consumers/<group>/offsets/<topic>/<partition>``, its parents
   persistent and empty.
3. Kafka's procedure, step by step: the brokers rolled with
   ``zookeeper.metadata.migration.enable`` (towards controllers not yet running),
   ZooKeeper left to settle, zk2kraft's ``migrate --dry-run`` of the tree as it stands
   (:attr:`KafkaMigration.dry_run_log`), then three KRaft controllers (ids 3000-3002)
   formatted with ``/cluster/id`` and started with the flag: Kafka copies the tree and
   dual-writes. The brokers roll before the controllers start so that the tree the
   dry run reads is the tree Kafka's copy reads (a roll moves leaders and epochs).

Every JVM is a :class:`~migration.local.kafka.KafkaNode` of one
:class:`~migration.local.kafka.KafkaGroup`, stopped by its own handle.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from kafka import KafkaProducer
from kafka.admin import (
    ACL,
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
from kafka.errors import UnknownBrokerIdError

from migration.common.ports import unused_port
from migration.local.kafka import KafkaGroup, KafkaNode
from migration.local.kafka_release import KafkaRelease, kafka_release, random_cluster_id
from migration.local.zookeeper import EmbeddedZooKeeper
from migration.zk.client import ZkClient

BROKERS = (1, 2, 3)
CONTROLLERS = (3000, 3001, 3002)
ADMIN, ADMIN_PASSWORD = "admin", "admin-secret"
ENCODER_SECRET = "encoder-secret-for-tests"
TOKEN_SECRET = "token-secret-for-tests"
SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
PROTOCOLS = "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT"
LEGACY_OFFSETS = {("legacy-group", "orders", 0): 42, ("legacy-group", "orders", 1): 17}
MOVING = "moving"  # the topic whose reassignment stays in flight
WAIT_S = 120.0


def _common() -> dict[str, str]:
    """What every node of the cluster shares (brokers and controllers alike)."""
    return {
        "super.users": f"User:ANONYMOUS;User:{ADMIN}",
        "delegation.token.secret.key": TOKEN_SECRET,
        "password.encoder.secret": ENCODER_SECRET,
        "listener.security.protocol.map": PROTOCOLS,
        "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
    }


@dataclass
class KafkaMigration:
    """The cluster of :func:`start_kafka_migration` and what was written into it."""

    release: KafkaRelease
    base_dir: Path
    zk_connect: str  # with the chroot
    chroot: str
    group: KafkaGroup
    brokers: dict[int, KafkaNode]
    controllers: dict[int, KafkaNode]
    sasl_ports: dict[int, int]
    cluster_id: str = ""
    dry_run_log: Path = Path()
    dry_run_manifest: dict[str, Any] = field(default_factory=dict)
    token_id: str = ""
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers.values())

    @property
    def voters(self) -> dict[int, int]:
        return {i: n.controller_port for i, n in self.controllers.items() if n.controller_port}

    @property
    def encoder_secret_file(self) -> Path:
        path = self.base_dir / "encoder-secret"
        path.write_text(ENCODER_SECRET)
        return path

    @property
    def client_config(self) -> Path:
        """Kafka's client settings for the SASL listener, as ``admin``."""
        path = self.base_dir / "admin-client.properties"
        jaas = (
            "org.apache.kafka.common.security.scram.ScramLoginModule required "
            f'username="{ADMIN}" password="{ADMIN_PASSWORD}";'
        )
        path.write_text(
            "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"
            f"sasl.jaas.config={jaas}\n"
        )
        return path

    def tool(self, name: str, *args: str, bootstrap: str | None = None) -> str:
        """One of Kafka's tools against the brokers; its standard output."""
        done = self.release.run_tool(
            name, "--bootstrap-server", bootstrap or self.bootstrap, *args,
            work_dir=self.base_dir / "tools",
        )  # fmt: skip
        return done.stdout

    def zk(self) -> ZkClient:
        return ZkClient(self.zk_connect)

    def migration_znode(self) -> dict[str, int]:
        with self.zk() as zk:
            raw, _ = zk.kazoo.get("/migration")
        return json.loads(raw)  # type: ignore[no-any-return]

    def active_controller(self) -> KafkaNode:
        """The controller ``/controller`` names (the KRaft leader that claimed ZooKeeper)."""
        with self.zk() as zk:
            raw, _ = zk.kazoo.get("/controller")
        return self.controllers[json.loads(raw)["brokerid"]]

    def wait_written_behind(self, node: KafkaNode | None = None) -> dict[str, int]:
        """Wait until ``/migration`` names an offset at or past the end the active
        controller's log had when called (Kafka publishes every ~500 ms: its
        dual-write has caught up with everything before); the znode's content."""
        node = node or self.active_controller()
        target = _log_end(node.metadata_dir) - 1
        deadline = time.monotonic() + WAIT_S
        while True:
            state = self.migration_znode()
            if state["kraft_metadata_offset"] >= target:
                return state
            if time.monotonic() > deadline:
                raise TimeoutError(f"/migration at {state}, log end {target}:\n{node.log_tail()}")
            time.sleep(0.2)

    def stop(self) -> None:
        """The brokers first (their controlled shutdown goes through the controllers),
        then the controllers; each node by its own handle."""
        for node in self.brokers.values():
            node.stop()
        self.group.stop()


def _log_end(partition: Path) -> int:
    """The next offset of a running controller's metadata log, from zk2kraft's reader."""
    done = subprocess.run(
        [sys.executable, "-m", "migration.cli.main", "log", "verify", "--log-dir",
         str(partition.parent), "--json"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    return int(json.loads(done.stdout)["end_offset"])


def wait_for(
    what: str, check: Callable[[], bool], nodes: list[KafkaNode], timeout_s: float = WAIT_S
) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline or not all(n.running for n in nodes):
            tails = "\n".join(n.log_tail(15) for n in nodes)
            raise TimeoutError(f"{what} not seen in {timeout_s:g}s:\n{tails}")
        time.sleep(0.25)


def _broker(
    release: KafkaRelease, base: Path, broker_id: int, connect: str
) -> tuple[KafkaNode, int]:
    node = KafkaNode.zookeeper_broker(release, base / f"broker{broker_id}", broker_id, connect)
    sasl = unused_port()
    port = node.broker_port
    node.properties |= _common() | {
        "listeners": f"PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{sasl}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{sasl}",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": SCRAM_JAAS,
        "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": SCRAM_JAAS,
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "num.partitions": "1",
        "default.replication.factor": "1",
        "auto.leader.rebalance.enable": "false",
        "controlled.shutdown.retry.backoff.ms": "200",
        # a throttled follower gets one small fetch before its 1 B/s quota holds it
        "replica.fetch.max.bytes": "65536",
        "replica.fetch.response.max.bytes": "65536",
    }
    return node, sasl


def _controller(
    release: KafkaRelease, base: Path, node_id: int, voters: dict[int, int], connect: str
) -> KafkaNode:
    return KafkaNode.kraft(
        release, base / f"controller{node_id}", node_id, roles=("controller",), voters=voters,
        controller_port=voters[node_id],
        extra=_common() | {
            "zookeeper.metadata.migration.enable": "true",
            "zookeeper.connect": connect,
            "inter.broker.listener.name": "PLAINTEXT",
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        },
    )  # fmt: skip


def start_all(group: KafkaGroup, nodes: list[KafkaNode]) -> None:
    """Start ``nodes`` at once (a KRaft controller is ready only once a quorum is up)."""
    with ThreadPoolExecutor(len(nodes)) as pool:
        for done in [pool.submit(group.start, node, WAIT_S) for node in nodes]:
            done.result()


def _ok(failed: object, what: str) -> None:
    if failed:
        raise RuntimeError(f"{what} refused: {failed}")


def _until_every_broker_is_known(call: Callable[[], Any]) -> Any:
    """``call()``, again while the client's metadata does not list a broker it addresses
    yet (CI saw UnknownBrokerIdError for a broker that had just started); a hang guard."""
    deadline = time.monotonic() + WAIT_S
    while True:
        try:
            return call()
        except UnknownBrokerIdError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def _configs_set(admin: KafkaAdminClient, resources: list[ConfigResource]) -> dict[str, str]:
    """Set ``resources``' configs (incremental: setting them again is harmless), again while
    a broker says a topic just created does not exist (the broker answering has not had
    the controller's UpdateMetadata for it yet: CI saw it); what was refused, by name. A
    hang guard."""
    deadline = time.monotonic() + WAIT_S
    while True:
        altered = _until_every_broker_is_known(
            lambda: admin.alter_configs(resources, incremental=True, raise_on_unknown=False)
        )
        failed = {k: v for r in altered.values() for k, v in r.items() if v != "OK"}
        unknown = any("UnknownTopicOrPartition" in str(v) for v in failed.values())
        if not unknown or time.monotonic() > deadline:
            return failed
        time.sleep(0.5)


def populate(m: KafkaMigration) -> None:
    """Every entity kind, through Kafka's Admin API (kafka-python speaking it to the
    brokers, which write ZooKeeper) and, where that client has no call for it, Kafka's
    own tools (see the module doc)."""
    admin = KafkaAdminClient(bootstrap_servers=m.bootstrap, client_id="populate")
    try:
        admin.create_topics([
            NewTopic("orders", 3, 2, topic_configs={"retention.ms": "86400000",
                                                     "cleanup.policy": "compact"}),
            NewTopic("events", 2, 3),
            NewTopic(MOVING, replica_assignments={0: [1]}),
        ])  # fmt: skip
        admin.wait_for_topics(["orders", "events", MOVING], timeout_ms=60_000)
        _ok(_configs_set(admin, [
            ConfigResource(ConfigResourceType.TOPIC, "events",
                           configs={"max.message.bytes": "2000000", "min.insync.replicas": "2"}),
            ConfigResource(ConfigResourceType.BROKER, "1", configs={"log.cleaner.threads": "2"}),
            ConfigResource(ConfigResourceType.BROKER, "2", configs={
                "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": SCRAM_JAAS}),
        ]), "configs")  # fmt: skip
        topic = ResourcePattern(ResourceType.TOPIC, "orders")
        acls = [
            ACL("User:reader", "*", ACLOperation.READ, ACLPermissionType.ALLOW, topic),
            ACL("User:reader", "*", ACLOperation.DESCRIBE, ACLPermissionType.ALLOW, topic),
            ACL("User:alice", "*", ACLOperation.WRITE, ACLPermissionType.ALLOW,
                ResourcePattern(ResourceType.TOPIC, "orders-", ACLResourcePatternType.PREFIXED)),
            ACL("User:mallory", "10.0.0.1", ACLOperation.ALL, ACLPermissionType.DENY,
                ResourcePattern(ResourceType.TOPIC, "events")),
            ACL("User:alice", "*", ACLOperation.READ, ACLPermissionType.ALLOW,
                ResourcePattern(ResourceType.GROUP, "app-", ACLResourcePatternType.PREFIXED)),
            ACL("User:alice", "*", ACLOperation.IDEMPOTENT_WRITE, ACLPermissionType.ALLOW,
                ResourcePattern(ResourceType.CLUSTER, "kafka-cluster")),
        ]  # fmt: skip
        _ok(admin.create_acls(acls)["failed"], "ACLs")
    finally:
        admin.close()
    # data for the reassignment from an idempotent producer (a producer-id block; before
    # the default user quota, which would hold it to 4 KiB/s), then the move, held in
    # flight by a 1 B/s throttle (Kafka's tool sets the throttles)
    producer = KafkaProducer(bootstrap_servers=m.bootstrap, acks="all", enable_idempotence=True)
    try:
        for i in range(2000):
            producer.send(MOVING, value=b"%04d" % i + b"x" * 996)
        producer.flush(60)
    finally:
        producer.close()
    plan = m.base_dir / "reassign.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": MOVING, "partition": 0, "replicas": [2, 3]}]}))  # fmt: skip
    m.tool("reassign-partitions", "--reassignment-json-file", str(plan), "--execute",
           "--throttle", "1")  # fmt: skip
    # SCRAM by Kafka's tool (kafka-python's AlterUserScramCredentials upsertion left a
    # credential the brokers' SCRAM login refused), before the quotas of the same znodes
    m.tool("configs", "--alter", "--entity-type", "users", "--entity-name", ADMIN,
           "--add-config", f"SCRAM-SHA-256=[iterations=8192,password={ADMIN_PASSWORD}],"
           f"SCRAM-SHA-512=[password={ADMIN_PASSWORD}]")  # fmt: skip
    m.tool("configs", "--alter", "--entity-type", "users", "--entity-name", "alice",
           "--add-config", "SCRAM-SHA-512=[iterations=4096,password=alice-secret]")  # fmt: skip
    # quotas (kafka-python has no client-quota call): Kafka's ConfigCommand, two at once
    quotas = [
        ("--entity-type", "users", "--entity-name", "alice",
         "--add-config", "producer_byte_rate=1024,consumer_byte_rate=2048"),
        ("--entity-type", "users", "--entity-name", "svc@prod",
         "--add-config", "request_percentage=50"),
        ("--entity-type", "users", "--entity-default", "--add-config", "producer_byte_rate=4096"),
        ("--entity-type", "clients", "--entity-name", "app-1",
         "--add-config", "consumer_byte_rate=8192"),
        ("--entity-type", "clients", "--entity-default", "--add-config", "request_percentage=75"),
        ("--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients",
         "--entity-name", "app-1", "--add-config", "producer_byte_rate=512"),
        ("--entity-type", "ips", "--entity-name", "127.0.0.2",
         "--add-config", "connection_creation_rate=10"),
        # the cluster default broker config (kafka-python cannot name <default>)
        ("--entity-type", "brokers", "--entity-default",
         "--add-config", "log.retention.ms=604800001"),
    ]  # fmt: skip
    with ThreadPoolExecutor(2) as pool:
        for future in [pool.submit(m.tool, "configs", "--alter", *q) for q in quotas]:
            future.result()
    # a delegation token, over SASL as the admin (once its credential reached the brokers)
    sasl = ",".join(f"127.0.0.1:{p}" for p in m.sasl_ports.values())
    deadline = time.monotonic() + 60
    while True:
        done = m.release.run_tool(
            "delegation-tokens", "--bootstrap-server", sasl, "--create",
            "--max-life-time-period", "-1", "--command-config", str(m.client_config),
            "--renewer-principal", "User:bob", work_dir=m.base_dir / "tools", check=False,
        )  # fmt: skip
        created = re.search(r"tokenId\s*:\s*(\S+)", done.stdout)
        if done.returncode == 0 and created:
            m.token_id = created[1]
            break
        if time.monotonic() > deadline:
            raise RuntimeError(f"no delegation token: {done.stdout}{done.stderr[-2000:]}")
        time.sleep(1)
    # legacy consumer offsets, as the old ZooKeeper consumer wrote them
    with m.zk() as zk:
        for (group, name, partition), offset in LEGACY_OFFSETS.items():
            zk.kazoo.ensure_path(f"/consumers/{group}/ids")
            zk.kazoo.ensure_path(f"/consumers/{group}/owners/{name}")
            zk.kazoo.create(
                f"/consumers/{group}/offsets/{name}/{partition}", str(offset).encode(),
                makepath=True,
            )  # fmt: skip


def settled(m: KafkaMigration) -> bool:
    """Every partition's ISR is its replica set (the one in flight: its source replica)
    and has a leader."""
    with m.zk() as zk:
        kz = zk.kazoo
        for topic in kz.get_children("/brokers/topics"):
            assignment = json.loads(kz.get(f"/brokers/topics/{topic}")[0])
            adding = assignment.get("adding_replicas", {})
            for pid, replicas in assignment["partitions"].items():
                raw, _ = kz.get(f"/brokers/topics/{topic}/partitions/{pid}/state")
                state = json.loads(raw)
                want = [r for r in replicas if r not in adding.get(pid, [])]
                if state["leader"] < 0 or sorted(state["isr"]) != sorted(want):
                    return False
        return True


def roll_with_flag(m: KafkaMigration) -> None:
    """Kafka's step 3: each broker restarted with the migration flag, one at a time."""
    flag = {
        "zookeeper.metadata.migration.enable": "true",
        "controller.quorum.voters": ",".join(
            f"{i}@127.0.0.1:{p}" for i, p in sorted(m.voters.items())
        ),
        "controller.listener.names": "CONTROLLER",
    }
    nodes = list(m.brokers.values())
    for node in nodes:
        node.stop()
        node.properties |= flag
        node.start(WAIT_S)
        wait_for(f"broker {node.node_id}'s partitions back in sync", lambda: settled(m), nodes)


def roll_into_kraft(m: KafkaMigration) -> None:
    """Kafka's next step: each broker restarted as a KRaft broker (``node.id`` its old
    ``broker.id``, the ZooKeeper settings gone, the StandardAuthorizer), one at a time,
    on the same handle, ports and log directories."""
    for node in m.brokers.values():
        node.stop()
        props = {k: v for k, v in node.properties.items() if not k.startswith("zookeeper.")}
        del props["broker.id"]
        node.properties = props | {
            "process.roles": "broker",
            "node.id": str(node.node_id),
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        }
        node.start(WAIT_S)
        wait_for(
            f"broker {node.node_id} listing every broker",
            partial(_lists_every_broker, node),
            [node],
        )


def _lists_every_broker(node: KafkaNode) -> bool:
    """Whether ``node`` answers DescribeCluster with every broker of the cluster alive:
    Kafka's rolling procedure waits for a restarted broker to be back before the next,
    and an admin client bootstrapped earlier would not know a broker it is told to call
    (CI saw UnknownBrokerIdError for the broker rolled last)."""
    admin = KafkaAdminClient(bootstrap_servers=node.bootstrap, client_id="roll")
    try:
        listed = {b["broker_id"] for b in admin.describe_cluster()["brokers"]}
    finally:
        admin.close()
    return listed == set(BROKERS)


def start_kafka_migration(zk_server: EmbeddedZooKeeper, base: Path) -> KafkaMigration:
    """The cluster of the module doc, dual-writing. The caller stops it
    (:meth:`KafkaMigration.stop`)."""
    clock = time.monotonic()
    release = kafka_release("3.9.2")
    chroot = f"/kafka-migration/{uuid.uuid4().hex[:8]}"
    connect = zk_server.connect_string + chroot
    group = KafkaGroup()
    brokers, sasl_ports = {}, {}
    for i in BROKERS:
        brokers[i], sasl_ports[i] = _broker(release, base, i, connect)
    voters = {i: unused_port() for i in CONTROLLERS}
    controllers = {i: _controller(release, base, i, voters, connect) for i in CONTROLLERS}
    m = KafkaMigration(release, base, connect, chroot, group, brokers, controllers, sasl_ports)
    try:
        start_all(group, list(brokers.values()))
        m.seconds["brokers"] = time.monotonic() - clock
        populate(m)
        wait_for("the populated cluster in sync", lambda: settled(m), list(brokers.values()))
        m.seconds["populated"] = time.monotonic() - clock
        roll_with_flag(m)
        m.seconds["rolled"] = time.monotonic() - clock
        m.dry_run_log = base / "dry-run"
        done = subprocess.run(
            [sys.executable, "-m", "migration.cli.main", "migrate", "--dry-run", "--zk", connect,
             "--log-dir", str(m.dry_run_log), "--password-encoder-secret-file",
             str(m.encoder_secret_file), "--json"],
            capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"dry run failed: {done.stdout}{done.stderr}")
        m.dry_run_manifest = json.loads(done.stdout)
        with m.zk() as zk:
            m.cluster_id = json.loads(zk.kazoo.get("/cluster/id")[0])["id"]
        for node in controllers.values():
            node.format(m.cluster_id)
        start_all(group, list(controllers.values()))
        everyone = [*brokers.values(), *controllers.values()]
        wait_for("Kafka's copy", lambda: _copied(m), everyone)
        m.seconds["copied"] = time.monotonic() - clock
        wait_for("dual-write", lambda: _dual_writing(m), everyone)
        m.seconds["dual-write"] = time.monotonic() - clock
    except BaseException:
        group.stop()
        raise
    return m


def _copied(m: KafkaMigration) -> bool:
    with m.zk() as zk:
        if zk.kazoo.exists("/migration") is None:
            return False
        raw, _ = zk.kazoo.get("/migration")
    return bool(raw) and json.loads(raw)["kraft_metadata_offset"] > 0


def _dual_writing(m: KafkaMigration) -> bool:
    node = m.active_controller()
    return "to DUAL_WRITE" in node.log_path.read_text(errors="replace")


def kafka_migration(zk_server: EmbeddedZooKeeper, base: Path) -> Iterator[KafkaMigration]:
    """The body of a module fixture: the migration of :func:`start_kafka_migration`,
    stopped at the end."""
    m = start_kafka_migration(zk_server, base)
    try:
        yield m
    finally:
        m.stop()


def start_kafka_dual_write(zk_server: EmbeddedZooKeeper, base: Path) -> KafkaMigration:
    """A lighter cluster than :func:`start_kafka_migration`, for the tests that only need
    Kafka dual-writing: an empty tree (``/cluster/id`` written first, so the controllers
    can be formatted before any broker runs), the three ZooKeeper-mode brokers started
    with the migration flag from the outset (no roll) and the AclAuthorizer, everyone a
    super user, and the three controllers started with them; nothing populated. Returns
    once the active controller dual-writes; the caller stops it (:meth:`KafkaMigration.stop`)."""
    clock = time.monotonic()
    release = kafka_release("3.9.2")
    chroot = f"/kafka-dual-write/{uuid.uuid4().hex[:8]}"
    connect = zk_server.connect_string + chroot
    cluster_id = random_cluster_id()
    with ZkClient(zk_server.connect_string) as zk:
        zk.kazoo.create(
            f"{chroot}/cluster/id", json.dumps({"version": "1", "id": cluster_id}).encode(),
            makepath=True,
        )  # fmt: skip
    group = KafkaGroup()
    voters = {i: unused_port() for i in CONTROLLERS}
    brokers = {}
    for i in BROKERS:
        node = KafkaNode.zookeeper_broker(
            release, base / f"broker{i}", i, connect, migration_voters=voters
        )
        node.properties |= {
            "super.users": "User:ANONYMOUS",
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
            "auto.leader.rebalance.enable": "false",
            "controlled.shutdown.retry.backoff.ms": "200",
        }
        brokers[i] = node
    controllers = {i: _controller(release, base, i, voters, connect) for i in CONTROLLERS}
    m = KafkaMigration(release, base, connect, chroot, group, brokers, controllers, {})
    m.cluster_id = cluster_id
    try:
        for node in controllers.values():
            node.format(cluster_id)
        everyone = [*brokers.values(), *controllers.values()]
        start_all(group, everyone)
        m.seconds["started"] = time.monotonic() - clock
        wait_for("Kafka's copy", lambda: _copied(m), everyone)
        wait_for("dual-write", lambda: _dual_writing(m), everyone)
        m.seconds["dual-write"] = time.monotonic() - clock
    except BaseException:
        group.stop()
        raise
    return m
