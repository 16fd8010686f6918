"""A real Apache Kafka 3.9.2 cluster in ZooKeeper mode for ``zk2kraft kafka
plan|migrate|rollback`` to drive (:mod:`migration.local.kafka_cluster`: three brokers
managed by ``kafka-node``, detached, so a driver SIGKILLed mid-run leaves the cluster
running; the controllers only in the inventory), with the topics the tests use, and the
runbook's blocks run against it.

:class:`Traffic` is a producer (``acks=all``, idempotent) and a consumer group running
throughout, counting what was acknowledged and what was consumed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

from migration.local.kafka_cluster import (
    CONTROLLERS,
    LocalKafkaCluster,
    local_kafka_cluster,
)
from migration.local.zookeeper import EmbeddedZooKeeper
from tests.runbook_host import ROOT, blocks

TOPIC = "traffic"
MOVING = "moving"  # the topic a test reassigns
GROUP = "traffic-readers"
# a throttled follower gets one small fetch before its 1 B/s quota holds it
SMALL_FETCHES = {"replica.fetch.max.bytes": "65536", "replica.fetch.response.max.bytes": "65536"}

DrivenCluster = LocalKafkaCluster


def runbook(c: DrivenCluster, section: int) -> subprocess.CompletedProcess[str]:
    """Section ``section`` of runbooks/kafka-clusters.md, its ``sh`` blocks run by bash
    (``-e``) with the environment the runbook reads."""
    script = "\n".join(blocks("kafka-clusters.md", (section,)))
    assert script, f"runbooks/kafka-clusters.md has no sh block in section {section}"
    env = os.environ | {
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "INVENTORY": str(c.inventory),
        "ZK": c.connect,
        "CONTROLLER_LOG_DIR": str(c.metadata_dir(CONTROLLERS[0])),
    }
    return subprocess.run(["bash", "-e", "-c", script], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=900, check=False)  # fmt: skip


@contextmanager
def driven_cluster(zk_server: EmbeddedZooKeeper, base: Path) -> Iterator[DrivenCluster]:
    """The local cluster (:mod:`migration.local.kafka_cluster`) on a chroot of its own,
    with topic ``traffic`` (3 partitions, 3 replicas, min.insync.replicas 2) and ``moving``
    (one partition on brokers 1 and 2, 1 MiB in it); stopped at the end."""
    connect = f"{zk_server.connect_string}/driven/{uuid.uuid4().hex[:8]}"
    with local_kafka_cluster(connect, base, SMALL_FETCHES) as cluster:
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
        yield cluster


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
