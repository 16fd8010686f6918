"""The ZooKeeper-mode cluster (``make bench``): the baselines the KRaft side will be
measured against, on three real broker processes over a seeded tree.

* Metadata for every topic through Kafka's protocol (one connection, p50/p99 of the
  rounds), against the reader's time for the same tree measured beside it: as clients
  see it (the broker answers a repeated all-topics request from its encoded copy until
  the image changes), after a change (a topic created: only the changed topics are
  encoded again), and every topic encoded (the first request of a version).
* CreateTopics/s through confluent-kafka's AdminClient (one topic per request, three
  partitions, replication factor 3: ZooKeeper write, controller, UpdateMetadata and
  LeaderAndIsr, answered once the broker's cache shows leaders).
* Legacy controller failover: SIGKILL of the controller broker until every partition has
  a live leader known to every surviving broker. The ZooKeeper session timeout (the
  time ZooKeeper needs to notice the dead session) is part of it and reported apart.
"""

from __future__ import annotations

import json
import signal
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from kio.schema.metadata.v11.request import MetadataRequest as MetadataRequestV11
from kio.schema.metadata.v12.request import MetadataRequest

from migration.kafka.client import KafkaConnection
from migration.local import seed
from migration.local.cluster import LocalCluster
from migration.zk import paths
from migration.zk.client import ZkClient
from migration.zk.reader import read_snapshot

SESSION_TIMEOUT_MS = 6000
EVERY_TOPIC = MetadataRequest(
    topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False
)
EVERY_TOPIC_V11 = MetadataRequestV11(
    topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False
)


def _spec(partitions: int) -> seed.ClusterSpec:
    return seed.ClusterSpec(brokers=3, topics=partitions // 20, partitions=partitions)


def _cluster(connect: str, ids: list[int], home: Path) -> LocalCluster:
    return LocalCluster(
        connect,
        ids,
        home,
        properties={
            "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
            "password.encoder.secret": seed.SEED_PASSWORD_ENCODER_SECRET,
        },
    )


def _all_led(cluster: LocalCluster, brokers: list[int], dead: int, partitions: int) -> bool:
    for b in brokers:
        m: Any = cluster.metadata(b, timeout_s=60)
        seen = [p for t in m.topics for p in t.partitions]
        if len(seen) < partitions or any(p.leader_id in (-1, dead) for p in seen):
            return False
    return True


def _wait(check: Any, timeout_s: float = 600) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError("the cluster did not converge")
        time.sleep(0.05)


def run(zk_connect: str, partitions: int, rounds: int = 20, creates: int = 100) -> dict[str, Any]:
    spec = _spec(partitions)
    snap = seed.generate(spec)
    connect = f"{zk_connect}/bench-broker-{partitions}"
    with ZkClient(connect) as zk, tempfile.TemporaryDirectory() as tmp:
        seed.write(zk, seed.without_registrations(snap))
        ids = sorted(snap.brokers)
        cluster = _cluster(connect, ids, Path(tmp))
        started = time.monotonic()
        cluster.start()
        try:
            _wait(lambda: _try(lambda: _all_led(cluster, ids, -2, partitions)))
            ready = time.monotonic() - started
            out: dict[str, Any] = {"partitions": partitions, "start_to_ready_s": round(ready, 3)}
            if rounds:
                out.update(_metadata(cluster, zk, ids[0], rounds))
            if creates:
                out.update(_creates(cluster, creates))
            out.update(_failover(cluster, zk, ids, partitions + 3 * creates))
            return out
        finally:
            cluster.stop()


def _try(check: Any) -> bool:
    try:
        return bool(check())
    except OSError:
        return False


def percentiles(times: list[float]) -> tuple[float, float]:
    times = sorted(times)
    return times[len(times) // 2], times[min(len(times) - 1, int(len(times) * 0.99))]


def _metadata(cluster: LocalCluster, zk: ZkClient, broker: int, rounds: int) -> dict[str, Any]:
    from confluent_kafka.admin import AdminClient, NewTopic

    times, fresh = [], []
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    with KafkaConnection("127.0.0.1", cluster.brokers[broker].port, 120) as conn:
        conn.request(EVERY_TOPIC)  # warm-up
        t0 = time.perf_counter()
        conn.request(EVERY_TOPIC_V11)  # a version not asked before: every topic encoded
        cold = time.perf_counter() - t0
        for _ in range(rounds):
            t0 = time.perf_counter()
            conn.request(EVERY_TOPIC)
            times.append(time.perf_counter() - t0)
        for i in range(rounds // 2):  # after a change: one topic created, then asked
            name = f"bench-changed-{i}"
            admin.create_topics([NewTopic(name, 1, 3)])[name].result(60)
            while True:  # the first answer that shows it (the broker may learn it later)
                t0 = time.perf_counter()
                answer = conn.request(EVERY_TOPIC)
                took = time.perf_counter() - t0
                if any(t.name == name for t in answer.topics):
                    fresh.append(took)
                    break
    reads = []
    for _ in range(3):
        t0 = time.perf_counter()
        read_snapshot(zk)
        reads.append(time.perf_counter() - t0)
    p50, p99 = percentiles(times)
    fresh50, fresh99 = percentiles(fresh)
    reader = statistics.median(reads)
    return {
        "metadata_p50_s": round(p50, 4),
        "metadata_p99_s": round(p99, 4),
        "metadata_cold_s": round(cold, 4),
        "metadata_fresh_p50_s": round(fresh50, 4),
        "metadata_fresh_p99_s": round(fresh99, 4),
        "metadata_fresh_p50_over_reader": round(fresh50 / reader, 4),
        "reader_s": round(reader, 4),
        "metadata_p50_over_reader": round(p50 / reader, 4),
    }


def _creates(cluster: LocalCluster, count: int) -> dict[str, Any]:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic("bench-warm-up", 3, 3)])["bench-warm-up"].result(60)
    t0 = time.perf_counter()
    for i in range(count - 1):
        name = f"bench-created-{i}"
        admin.create_topics([NewTopic(name, 3, 3)])[name].result(60)
    elapsed = time.perf_counter() - t0
    return {"create_topics_per_s": round((count - 1) / elapsed, 1)}


def _failover(
    cluster: LocalCluster, zk: ZkClient, ids: list[int], partitions: int
) -> dict[str, Any]:
    controller = json.loads(zk.get(paths.CONTROLLER)[0])["brokerid"]
    survivors = [b for b in ids if b != controller]
    t0 = time.monotonic()
    cluster.signal(controller, signal.SIGKILL)
    _wait(lambda: _try(lambda: _new_controller(zk, controller)))
    elected = time.monotonic() - t0
    _wait(lambda: _try(lambda: _all_led(cluster, survivors, controller, partitions)))
    total = time.monotonic() - t0
    return {
        "failover_s": round(total, 3),
        "failover_election_s": round(elected, 3),
        "failover_after_election_s": round(total - elected, 3),
        "session_timeout_s": SESSION_TIMEOUT_MS / 1000,
    }


def _new_controller(zk: ZkClient, old: int) -> bool:
    if zk.kazoo.exists(paths.CONTROLLER) is None:
        return False
    return bool(json.loads(zk.get(paths.CONTROLLER)[0])["brokerid"] != old)


def report(results: list[dict[str, Any]]) -> None:
    for r in results:
        print(f"ZooKeeper-mode cluster, 3 brokers, {r['partitions']:,} partitions:")
        print(f"  start to every partition led and known:   {r['start_to_ready_s']:8.3f} s")
        if "metadata_p50_s" in r:
            print(
                f"  Metadata (every topic, Kafka protocol):    p50 {r['metadata_p50_s']:.4f} s, "
                f"p99 {r['metadata_p99_s']:.4f} s; reader on the same tree "
                f"{r['reader_s']:.4f} s (ratio p50/reader {r['metadata_p50_over_reader']:.3f})"
            )
            print(
                f"  ... after a change (a topic created): "
                f"p50 {r['metadata_fresh_p50_s']:.4f} s, "
                f"p99 {r['metadata_fresh_p99_s']:.4f} s (ratio p50/reader "
                f"{r['metadata_fresh_p50_over_reader']:.3f}); every topic encoded (a "
                f"version not asked before) {r.get('metadata_cold_s', float('nan')):.4f} s"
            )
        if "create_topics_per_s" in r:
            print(f"  CreateTopics (confluent-kafka, 3x3):      {r['create_topics_per_s']} /s")
        print(
            f"  controller failover (SIGKILL):            {r['failover_s']:8.3f} s "
            f"(election after {r['failover_election_s']} s, of which the "
            f"{r['session_timeout_s']:g} s session timeout; then "
            f"{r['failover_after_election_s']} s to every leader known everywhere)"
        )
