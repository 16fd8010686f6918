"""The demo's second half: the live migration of the running ZooKeeper-mode cluster, the
Kafka way. Three KRaft controllers are formatted with ZooKeeper's cluster id and started
with the migration flag; the brokers are restarted one by one with it; the driver's
phases are shown as they pass; a topic created through a broker afterwards lands in the
log and, written behind, in ZooKeeper."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from migration.cli.migration_commands import describe_migration, print_status, status_json
from migration.controller.storage import format_storage
from migration.kafka.admin_client import KafkaAdminClient
from migration.local.cluster import INTERNAL_LISTENER, PROTOCOLS, LocalCluster
from migration.local.quorum import (
    LocalQuorum,
    broker_migration_properties,
    controller_migration_properties,
)
from migration.observability import catalog
from migration.proto import controller_pb2 as cpb
from migration.records import versions
from migration.zk import paths
from migration.zk.client import ZkClient
from migration.zk.model.cluster import parse_cluster_id

WAIT_S = 300.0  # a hang guard for each step
NEW_TOPIC = "created-after-migration"


class PhaseWatch:
    """Prints each new (phase, outcome) ``migration status`` reports."""

    def __init__(self, quorum: LocalQuorum) -> None:
        self.quorum = quorum
        self.last: tuple[str, str] | None = None

    def poll(self) -> dict[str, Any] | None:
        try:
            report = status_json(describe_migration(self.quorum.bootstrap))
        except ConnectionError:
            return None
        now = (report["driver_phase"], report["outcome"])
        if now != self.last and report["active_controller"] >= 0:
            print(f"  [{report['state']} / {report['driver_phase']}] {report['outcome']}")
            self.last = now
        return report

    def until(self, done: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """The first report of an active controller for which ``done`` holds."""
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            report = self.poll()
            if report is not None and report["active_controller"] >= 0 and done(report):
                return report
            time.sleep(0.1)
        raise TimeoutError(f"the migration did not get there within {WAIT_S:g}s")


def create_topic(cluster: LocalCluster, name: str) -> None:
    """CreateTopics (3 partitions, 3 replicas) through the brokers' Kafka listener."""
    KafkaAdminClient(cluster.bootstrap).call(
        "CreateTopics",
        cpb.CreateTopicsRequest(
            topics=[cpb.CreatableTopic(name=name, num_partitions=3, replication_factor=3)]
        ),
    )


SHOWN_METRICS = (
    catalog.ZK_MIGRATION_STATE,
    catalog.MIGRATION_STATE,
    catalog.ACTIVE_CONTROLLER_COUNT,
    catalog.MIGRATING_ZK_BROKER_COUNT,
    catalog.ZK_WRITE_BEHIND_LAG,
    catalog.GLOBAL_PARTITIONS,
    catalog.DRIVER_PHASE,
)


def show_metrics(quorum: LocalQuorum, node: int) -> None:
    """A few lines of what Prometheus scrapes from the active controller."""
    url = f"http://{quorum.metrics_target(node)}/metrics"
    print(f"\ncurl {url}   (Prometheus' view; docs/metrics.md lists every metric)")
    with urllib.request.urlopen(url, timeout=10) as answer:
        text = answer.read().decode()
    names = {spec.name for spec in SHOWN_METRICS}
    for line in text.splitlines():
        name = line.split("{")[0].split(" ")[0]
        if name in names and not (name == catalog.DRIVER_PHASE.name and line.endswith(" 0.0")):
            print("  " + line)


def audit(connect: str, quorum: LocalQuorum) -> None:
    """The Spark audit of ZooKeeper against the quorum's log, as an operator runs it."""
    bootstrap = ",".join(quorum.bootstrap)
    print(f"\nzk2kraft audit --zk {connect} --bootstrap-controller {bootstrap}", flush=True)
    done = subprocess.run(
        [sys.executable, "-m", "migration.cli.main", "audit", "--zk", connect,
         "--bootstrap-controller", bootstrap],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    for line in (done.stdout or done.stderr).splitlines():
        print("  " + line)


@contextmanager
def live_migration(
    cluster: LocalCluster, client: ZkClient, connect: str, tmp: Path, secret: str
) -> Iterator[tuple[LocalQuorum, PhaseWatch]]:
    """Up to DUAL_WRITE and a topic dual-written; the quorum runs until the block ends."""
    cluster_id = parse_cluster_id(paths.CLUSTER_ID, client.get(paths.CLUSTER_ID)[0]).id
    quorum = LocalQuorum(
        tmp / "quorum",
        first_id=3000,
        cluster_id=None,
        metrics=True,
        extra=controller_migration_properties(connect, INTERNAL_LISTENER, secret),
    )
    print("\nthe live migration: three KRaft controllers with zookeeper.metadata.migration.enable")
    for node in quorum.ids:
        format_storage(quorum.log_dir(node), node, cluster_id, versions.LATEST)
        print(f"zk2kraft storage format --config {quorum.config(node)} --cluster-id {cluster_id}")
    quorum.start_all()
    try:
        watch = PhaseWatch(quorum)
        watch.until(lambda r: r["driver_phase"] == "WAIT_FOR_BROKERS")
        print("rolling restart of the brokers with zookeeper.metadata.migration.enable=true")
        cluster.reconfigure(**broker_migration_properties(quorum, PROTOCOLS))
        for broker in cluster.broker_ids:
            print(f"  restarting broker {broker}", flush=True)
            cluster.restart(broker)
            cluster.wait_ready(WAIT_S)
            watch.poll()
        done = watch.until(lambda r: r["driver_phase"] == "DUAL_WRITE")
        print(f"the active controller's log ({done['active_controller']}):")
        for line in quorum.output(done["active_controller"]).splitlines():
            if "migration driver [" in line or "Completed migration" in line:
                print("  " + line.split(": ", 1)[-1][:200])
        print(f"\na topic created through a broker: {NEW_TOPIC} (forwarded to the controller)")
        create_topic(cluster, NEW_TOPIC)
        report = watch.until(lambda r: r["zk_write_behind_lag"] == 0)
        present = client.kazoo.exists(paths.topic(NEW_TOPIC)) is not None
        print(f"  {paths.topic(NEW_TOPIC)} in ZooKeeper: {present}\n\nzk2kraft migration status")
        print_status(report)
        show_metrics(quorum, done["active_controller"])
        audit(connect, quorum)
        yield quorum, watch
    finally:
        quorum.stop_all(signal.SIGTERM)
