"""A real Apache Kafka 3.9.2 cluster in ZooKeeper mode, run the way an operator runs
one outside Kubernetes, for ``zk2kraft kafka plan|migrate`` to drive: three brokers whose
``server.properties`` are files in their own directories, each process managed by
``zk2kraft kafka-node`` (a pid file per node, detached from whoever started it, so a
driver SIGKILLed mid-run leaves the cluster running), and an inventory naming them with
``kafka-node`` commands as its restart/format/start/stop templates. The three KRaft
controllers (ids 3000-3002) exist only in the inventory: the driven migration writes
their files, formats and starts them.

:class:`Traffic` is a producer (``acks=all``, idempotent) and a consumer group running
throughout, counting what was acknowledged and what was consumed.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

from migration.common.ports import unused_port
from migration.local.kafka import KafkaNode
from migration.local.kafka_release import kafka_release
from migration.local.zookeeper import EmbeddedZooKeeper

BROKERS = (1, 2, 3)
CONTROLLERS = (3000, 3001, 3002)
TOPIC = "traffic"
MOVING = "moving"  # the topic a test reassigns
GROUP = "traffic-readers"


def node_command(action: str, *more: str) -> str:
    """A ``kafka-node`` command template as an inventory holds it."""
    words = [sys.executable, "-m", "migration.cli.main", "kafka-node", action,
             "--properties", "{properties}", *more]  # fmt: skip
    return " ".join(w if w.startswith("{") else shlex.quote(w) for w in words)


def kafka_node(action: str, properties: Path, *more: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "migration.cli.main", "kafka-node", action,
         "--properties", str(properties), *more],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


@dataclass
class DrivenCluster:
    base: Path
    connect: str
    chroot: str
    inventory: Path
    brokers: dict[int, Path]  # broker id -> its server.properties
    bootstrap: str
    controller_ports: dict[int, int] = field(default_factory=dict)

    def controller_properties(self, node_id: int) -> Path:
        return self.base / f"controller{node_id}" / "server.properties"

    def metadata_dir(self, node_id: int) -> Path:
        return self.base / f"controller{node_id}" / "data"

    def every_node(self) -> list[Path]:
        return [*self.brokers.values(), *(self.controller_properties(c) for c in CONTROLLERS)]

    def stop(self) -> None:
        """Every node that runs, the brokers first (their controlled shutdown goes
        through the controllers)."""
        for properties in self.every_node():
            if properties.exists():
                kafka_node("stop", properties)


def start_driven_cluster(zk_server: EmbeddedZooKeeper, base: Path) -> DrivenCluster:
    """The cluster of the module doc, running, with topic ``traffic`` (3 partitions, 3
    replicas, min.insync.replicas 2) and its inventory written. The caller stops it
    (:meth:`DrivenCluster.stop`)."""
    release = kafka_release("3.9.2")
    chroot = f"/driven/{uuid.uuid4().hex[:8]}"
    connect = zk_server.connect_string + chroot
    brokers: dict[int, Path] = {}
    ports: list[int] = []
    for i in BROKERS:
        node = KafkaNode.zookeeper_broker(release, base / f"broker{i}", i, connect)
        node.properties |= {
            "offsets.topic.replication.factor": "3",
            "transaction.state.log.replication.factor": "3",
            "transaction.state.log.min.isr": "2",
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
            "super.users": "User:ANONYMOUS",
            "controlled.shutdown.retry.backoff.ms": "200",
            # a throttled follower gets one small fetch before its 1 B/s quota holds it
            "replica.fetch.max.bytes": "65536",
            "replica.fetch.response.max.bytes": "65536",
        }
        brokers[i] = node.write_config()
        assert node.broker_port is not None
        ports.append(node.broker_port)
    cluster = DrivenCluster(
        base=base,
        connect=connect,
        chroot=chroot,
        inventory=base / "inventory.toml",
        brokers=brokers,
        bootstrap=",".join(f"127.0.0.1:{p}" for p in ports),
        controller_ports={c: unused_port() for c in CONTROLLERS},
    )
    try:
        for properties in brokers.values():
            started = kafka_node("start", properties)
            assert started.returncode == 0, started.stderr
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
        admin.create_topics([
            NewTopic(TOPIC, 3, 3, topic_configs={"min.insync.replicas": "2"}),
            NewTopic(MOVING, replica_assignments={0: [1, 2]}),
        ])  # fmt: skip
        admin.close()
        producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all")
        for _ in range(64):  # 1 MiB: more than a throttled follower's first fetch
            producer.send(MOVING, b"x" * 16384)
        producer.flush()
        producer.close()
        cluster.inventory.write_text(inventory_text(cluster))
    except BaseException:
        cluster.stop()
        raise
    return cluster


def inventory_text(c: DrivenCluster) -> str:
    lines = [
        "# the driven cluster's inventory (tests/kafka_drive.py)",
        "[kafka]", 'version = "3.9.2"', "",
        "[zookeeper]", f'connect = "{c.connect}"', "",
        "[defaults.broker]", f"restart = {_toml(node_command('restart'))}", "",
        "[defaults.controller]",
        f"format = {_toml(node_command('format', '--cluster-id', '{cluster_id}'))}",
        f"start = {_toml(node_command('start'))}",
        f"stop = {_toml(node_command('stop'))}", "",
    ]  # fmt: skip
    for i, properties in c.brokers.items():
        lines += ["[[broker]]", f"id = {i}", 'host = "127.0.0.1"',
                  f"properties = {_toml(str(properties))}", ""]  # fmt: skip
    for n in CONTROLLERS:
        lines += ["[[controller]]", f"id = {n}", 'host = "127.0.0.1"',
                  f"port = {c.controller_ports[n]}",
                  f"properties = {_toml(str(c.controller_properties(n)))}",
                  f"metadata_log_dir = {_toml(str(c.metadata_dir(n)))}", ""]  # fmt: skip
    return "\n".join(lines)


def _toml(text: str) -> str:
    """A TOML literal string (no escapes inside)."""
    assert "'" not in text
    return f"'{text}'"


@contextmanager
def driven_cluster(zk_server: EmbeddedZooKeeper, base: Path) -> Iterator[DrivenCluster]:
    cluster = start_driven_cluster(zk_server, base)
    try:
        yield cluster
    finally:
        cluster.stop()


class Traffic:
    """A producer and a consumer group on ``traffic`` from :meth:`start` to :meth:`stop`.
    ``acked``: the values the brokers acknowledged (acks=all); ``consumed``: the values
    the group read; ``problems``: client errors other than the retriable ones a roll
    causes (each send is retried until acknowledged or its delivery timeout)."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.acked: set[int] = set()
        self.consumed: set[int] = set()
        self.failed_sends = 0
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._produce, daemon=True),
            threading.Thread(target=self._consume, daemon=True),
        ]
        self._lock = threading.Lock()

    def start(self) -> Traffic:
        for t in self._threads:
            t.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=120)

    def _produce(self) -> None:
        producer = KafkaProducer(
            bootstrap_servers=self.bootstrap, acks="all", retries=2**31 - 1,
            enable_idempotence=True, max_in_flight_requests_per_connection=5,
            delivery_timeout_ms=120_000, request_timeout_ms=10_000, linger_ms=5,
        )  # fmt: skip
        value = 0
        while not self._stop.is_set():
            future = producer.send(TOPIC, str(value).encode())
            future.add_callback(self._acked, value)
            future.add_errback(self._failed)
            value += 1
            time.sleep(0.01)
        producer.flush(timeout=120)
        producer.close(timeout=30)

    def _acked(self, value: int, _: object) -> None:
        with self._lock:
            self.acked.add(value)

    def _failed(self, _: object) -> None:
        with self._lock:
            self.failed_sends += 1

    def _consume(self) -> None:
        consumer = KafkaConsumer(
            TOPIC, bootstrap_servers=self.bootstrap, group_id=GROUP,
            auto_offset_reset="earliest", enable_auto_commit=True,
            auto_commit_interval_ms=500, consumer_timeout_ms=1000,
        )  # fmt: skip
        while not self._stop.is_set():
            for record in consumer:
                with self._lock:
                    self.consumed.add(int(record.value))
                if self._stop.is_set():
                    break
        consumer.commit()
        consumer.close()


def read_all(bootstrap: str) -> set[int]:
    """Every value in ``traffic``, read from the start by a consumer of no group."""
    consumer = KafkaConsumer(
        TOPIC, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
        enable_auto_commit=False, consumer_timeout_ms=10_000,
    )  # fmt: skip
    values = {int(r.value) for r in consumer}
    consumer.close()
    return values
