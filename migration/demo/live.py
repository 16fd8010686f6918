"""The demo's second half: the live migration of the running ZooKeeper-mode cluster, the
Kafka way. Three KRaft controllers are formatted with ZooKeeper's cluster id and started
with the migration flag; the brokers are restarted one by one with it; the driver's
phases are shown as they pass; a topic created through a broker afterwards lands in the
log and, written behind, in ZooKeeper. The steps are :mod:`migration.rehearse.procedure`'s;
each is told through the :class:`~migration.demo.view.DemoView`."""

from __future__ import annotations

import signal
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from migration.kafka.admin_client import KafkaAdminClient
from migration.local.cluster import LocalCluster
from migration.local.quorum import LocalQuorum
from migration.observability import catalog
from migration.proto import controller_pb2 as cpb
from migration.rehearse import procedure
from migration.rehearse.procedure import PhaseWatch
from migration.zk import paths
from migration.zk.client import ZkClient
from migration.zk.model.cluster import parse_cluster_id

if TYPE_CHECKING:
    from migration.demo.view import DemoView

NEW_TOPIC = "created-after-migration"


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


def show_metrics(quorum: LocalQuorum, node: int, view: DemoView) -> None:
    """A few lines of what Prometheus scrapes from the active controller."""
    url = f"http://{quorum.metrics_target(node)}/metrics"
    view.say(f"\ncurl {url}   (Prometheus' view; docs/metrics.md lists every metric)")
    with urllib.request.urlopen(url, timeout=10) as answer:
        text = answer.read().decode()
    names = {spec.name for spec in SHOWN_METRICS}
    for line in text.splitlines():
        name = line.split("{")[0].split(" ")[0]
        if name in names and not (name == catalog.DRIVER_PHASE.name and line.endswith(" 0.0")):
            view.say("  " + line)


def audit(connect: str, quorum: LocalQuorum, view: DemoView) -> None:
    """The Spark audit of ZooKeeper against the quorum's log, as an operator runs it."""
    bootstrap = ",".join(quorum.bootstrap)
    view.say(f"\nzk2kraft audit --zk {connect} --bootstrap-controller {bootstrap}")
    done = procedure.audit(connect, quorum)
    for line in (done.stdout or done.stderr).splitlines():
        view.say("  " + line)


@contextmanager
def live_migration(
    cluster: LocalCluster,
    client: ZkClient,
    connect: str,
    tmp: Path,
    secret: str,
    *,
    view: DemoView,
) -> Iterator[tuple[LocalQuorum, PhaseWatch]]:
    """Up to DUAL_WRITE and a topic dual-written; the quorum runs until the block ends."""
    cluster_id = parse_cluster_id(paths.CLUSTER_ID, client.get(paths.CLUSTER_ID)[0]).id
    view.say("\nthe live migration:", end=" ")
    quorum = procedure.migration_quorum(cluster, tmp / "quorum", secret)
    say = view.say
    try:  # the controllers run in sessions of their own: stopped here, also on Ctrl-C
        procedure.start_controllers(quorum, cluster_id, say)
        watch = PhaseWatch(quorum, say)
        procedure.roll_with_flag(cluster, quorum, watch, say)
        done = procedure.until_dual_write(quorum, watch, say)
        view.say(f"\na topic created through a broker: {NEW_TOPIC} (forwarded to the controller)")
        create_topic(cluster, NEW_TOPIC)
        report = watch.until(lambda r: r["zk_write_behind_lag"] == 0)
        present = client.kazoo.exists(paths.topic(NEW_TOPIC)) is not None
        view.say(f"  {paths.topic(NEW_TOPIC)} in ZooKeeper: {present}\n\nzk2kraft migration status")
        view.status(report)
        show_metrics(quorum, done["active_controller"], view)
        audit(connect, quorum, view)
        yield quorum, watch
    finally:
        quorum.stop_all(signal.SIGTERM)
