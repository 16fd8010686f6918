"""A local Apache Kafka 3.9 cluster in ZooKeeper mode, run as an operator runs one
outside Kubernetes, for ``zk2kraft kafka plan|migrate|rollback`` to drive (``zk2kraft demo
--kafka`` and the tests): brokers whose ``server.properties`` are files in their own
directories, each process managed by ``zk2kraft kafka-node``
(:mod:`~migration.local.kafka_service`: a pid file per node, detached from whoever
started it), and the inventory naming them with ``kafka-node`` commands as its
restart/format/start/stop templates. The KRaft controllers exist only in the inventory:
the driven migration writes their files, formats and starts them.
"""

from __future__ import annotations

import shlex
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from migration.bridge.preflight import check_partitions
from migration.common.ports import unused_port
from migration.local import kafka_service
from migration.local.kafka import KafkaNode
from migration.local.kafka_release import kafka_release
from migration.zk.client import ZkClient
from migration.zk.reader import read_snapshot

BROKERS = (1, 2, 3)
CONTROLLERS = (3000, 3001, 3002)
VERSION = "3.9.2"
# The AclAuthorizer with everyone a super user, a fast retry of a controlled shutdown that
# cannot move leaders yet; the internal topics replicated as widely as the brokers allow
# (:func:`broker_settings`).
BROKER_SETTINGS = {
    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    "super.users": "User:ANONYMOUS",
    "controlled.shutdown.retry.backoff.ms": "200",
}


def broker_settings(brokers: int) -> dict[str, str]:
    """:data:`BROKER_SETTINGS`, with the internal topics replicated on up to three of
    ``brokers`` (the default of one replica would lose the group offsets with a broker's
    restart)."""
    rf = min(3, brokers)
    return BROKER_SETTINGS | {
        "offsets.topic.replication.factor": str(rf),
        "transaction.state.log.replication.factor": str(rf),
        "transaction.state.log.min.isr": str(max(1, rf - 1)),
    }


@dataclass
class LocalKafkaCluster:
    base: Path
    connect: str
    brokers: dict[int, Path]  # broker id -> its server.properties
    broker_ports: dict[int, int]  # broker id -> its listener's port on 127.0.0.1
    controller_ports: dict[int, int] = field(default_factory=dict)
    heap_mb: int = kafka_service.HEAP_MB  # every node's -Xmx, the controllers' too
    start_timeout_s: float = kafka_service.START_S  # every node's start, a restart's too

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{p}" for p in self.broker_ports.values())

    @property
    def inventory(self) -> Path:
        return self.base / "inventory.toml"

    def controller_properties(self, node_id: int) -> Path:
        return self.base / f"controller{node_id}" / "server.properties"

    def metadata_dir(self, node_id: int) -> Path:
        return self.base / f"controller{node_id}" / "data"

    def stop(self) -> None:
        """Every node that runs, the brokers first (their controlled shutdown goes
        through the controllers)."""
        nodes = [*self.brokers.values(), *map(self.controller_properties, self.controller_ports)]
        for properties in nodes:
            if properties.exists():
                kafka_service.stop(properties)


def start_local_kafka_cluster(
    connect: str,
    base: Path,
    settings: Mapping[str, str] | None = None,
    *,
    broker_ids: Sequence[int] = BROKERS,
    per_broker: Mapping[int, Mapping[str, str]] | None = None,
    heap_mb: int = kafka_service.HEAP_MB,
    start_timeout_s: float = kafka_service.START_S,
) -> LocalKafkaCluster:
    """Brokers ``broker_ids`` of Kafka :data:`VERSION` on ``connect`` (chroot included),
    running, with :func:`broker_settings`, ``settings`` and each one's ``per_broker``
    (``broker.rack``, say); the inventory written, its commands starting every node
    (the controllers the migration adds too) with a heap of ``heap_mb`` MiB, each start
    given ``start_timeout_s``. The caller stops it (:meth:`LocalKafkaCluster.stop`)."""
    release = kafka_release(VERSION)
    brokers: dict[int, Path] = {}
    ports: dict[int, int] = {}
    common = broker_settings(len(broker_ids)) | dict(settings or {})
    for i in broker_ids:
        node = KafkaNode.zookeeper_broker(release, base / f"broker{i}", i, connect)
        node.properties |= common | dict((per_broker or {}).get(i, {}))
        brokers[i] = node.write_config()
        assert node.broker_port is not None
        ports[i] = node.broker_port
    cluster = LocalKafkaCluster(
        base=base,
        connect=connect,
        brokers=brokers,
        broker_ports=ports,
        controller_ports={c: unused_port() for c in CONTROLLERS},
        heap_mb=heap_mb,
        start_timeout_s=start_timeout_s,
    )
    try:
        for properties in brokers.values():
            kafka_service.start(properties, VERSION, start_timeout_s, heap_mb=heap_mb)
        cluster.inventory.write_text(inventory_text(cluster))
    except BaseException:
        cluster.stop()
        raise
    return cluster


LED_POLL_S = 5.0


def wait_led(connect: str, timeout_s: float, say: Callable[[str], None]) -> None:
    """Until no partition in the tree at ``connect`` is offline (leader -1), as the
    migration's preflight judges it: a cluster whose brokers just started has such
    partitions until its controller has seen their replicas register and elected leaders
    (minutes at 100,000 partitions); the preflight refuses to start a migration before.
    Reads the brokers and topics every :data:`LED_POLL_S` s and says how many are left;
    raises TimeoutError naming the count when ``timeout_s`` pass with none of them led
    (a controller still electing, however slowly, is waited for)."""
    deadline = time.monotonic() + timeout_s
    least: int | None = None
    with ZkClient(connect) as zk:
        while True:
            tree = read_snapshot(zk, parts=frozenset({"brokers", "topics"}))
            offline = sum(1 for f in check_partitions(tree) if f.code == "OFFLINE_PARTITION")
            if not offline:
                return
            if least is None or offline < least:
                least, deadline = offline, time.monotonic() + timeout_s
            elif time.monotonic() > deadline:
                raise TimeoutError(
                    f"{offline:,} partitions still without a leader, none led in the last "
                    f"{timeout_s:g} s"
                )
            say(f"{offline:,} partitions without a leader yet: the controller elects them")
            time.sleep(LED_POLL_S)


@contextmanager
def local_kafka_cluster(
    connect: str, base: Path, settings: Mapping[str, str] | None = None
) -> Iterator[LocalKafkaCluster]:
    cluster = start_local_kafka_cluster(connect, base, settings)
    try:
        yield cluster
    finally:
        cluster.stop()


def node_command(action: str, *more: str) -> str:
    """A ``kafka-node`` command template as an inventory holds it."""
    words = [sys.executable, "-m", "migration.cli.main", "kafka-node", action,
             "--properties", "{properties}", *more]  # fmt: skip
    return " ".join(w if "{" in w else shlex.quote(w) for w in words)  # placeholders as they are


def _literal(text: str) -> str:
    """A TOML literal string (no escapes inside)."""
    if "'" in text or "\n" in text:
        raise ValueError(f"{text!r} cannot be a TOML literal string")
    return f"'{text}'"


def inventory_text(c: LocalKafkaCluster) -> str:
    heap = (f"--heap-mb={c.heap_mb}", f"--timeout={c.start_timeout_s:g}")
    lines = [
        "# a local Apache Kafka cluster's inventory (zk2kraft's migration.local.kafka_cluster)",
        "[kafka]", f'version = "{VERSION}"', "",
        "[zookeeper]", f"connect = {_literal(c.connect)}", "",
        "[defaults.broker]", f"restart = {_literal(node_command('restart', *heap))}", "",
        "[defaults.controller]",
        f"format = {_literal(node_command('format', '--cluster-id={cluster_id}'))}",
        f"start = {_literal(node_command('start', *heap))}",
        f"stop = {_literal(node_command('stop'))}", "",
    ]  # fmt: skip
    for i, properties in c.brokers.items():
        lines += ["[[broker]]", f"id = {i}", 'host = "127.0.0.1"',
                  f"properties = {_literal(str(properties))}", ""]  # fmt: skip
    for n, port in c.controller_ports.items():
        lines += ["[[controller]]", f"id = {n}", 'host = "127.0.0.1"', f"port = {port}",
                  f"properties = {_literal(str(c.controller_properties(n)))}",
                  f"metadata_log_dir = {_literal(str(c.metadata_dir(n)))}", ""]  # fmt: skip
    return "\n".join(lines)
