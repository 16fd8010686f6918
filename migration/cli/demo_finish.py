"""The demo's last act, after DUAL_WRITE: the brokers restarted one by one into KRaft mode
(Metadata through a ZooKeeper-mode and a KRaft-mode broker compared at each step, offline
partitions counted), MigrationFinished, then either finalization (controllers restarted
without the flag: KRaft) or, with ``--rollback``, the checked way back to ZooKeeper."""

from __future__ import annotations

import re
import signal
import time
from dataclasses import dataclass, field
from typing import Any

from migration.broker.modes import Mode
from migration.cli.demo_migration import PhaseWatch as Watch
from migration.cli.migration_commands import print_status
from migration.kafka.admin_client import KafkaAdminClient
from migration.local.cluster import LocalCluster
from migration.local.quorum import LocalQuorum
from migration.proto import controller_pb2 as cpb
from migration.rollback import assess, hand_back
from migration.zk import paths
from migration.zk.client import ZkClient
from migration.zk.model.cluster import parse_controller

WAIT_S = 300.0


@dataclass
class Figures:
    """What the summary reports."""

    copy_ms: float = 0.0
    copy_records: int = 0
    max_lag: int = 0
    offline: set[str] = field(default_factory=set)
    disagreements: int = 0
    comparisons: int = 0


def _shape(cluster: LocalCluster, broker: int) -> tuple[Any, ...]:
    m: Any = cluster.metadata(broker)
    brokers = tuple(sorted(b.node_id for b in m.brokers))
    topics = tuple(
        sorted(
            (t.name, p.partition_index, p.leader_id, tuple(sorted(p.isr_nodes)))
            for t in m.topics
            for p in t.partitions
        )
    )
    return brokers, topics


def _compare(cluster: LocalCluster, zk_broker: int, kraft_broker: int, figures: Figures) -> bool:
    """Metadata through both brokers, until they agree (bounded); offline partitions
    counted on every answer."""
    deadline = time.monotonic() + WAIT_S
    while True:
        a, b = _shape(cluster, zk_broker), _shape(cluster, kraft_broker)
        figures.comparisons += 1
        for name, index, leader, _ in (*a[1], *b[1]):
            if leader < 0:
                figures.offline.add(f"{name}-{index}")
        if a == b:
            return True
        figures.disagreements += 1
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)


def copy_figures(quorum: LocalQuorum, figures: Figures) -> None:
    """The copy's records and duration, from the log line of the controller that made it."""
    for node in quorum.ids:
        found = re.search(r"(\d+) records were generated in (\d+) ms", quorum.output(node))
        if found:
            figures.copy_records, figures.copy_ms = int(found.group(1)), float(found.group(2))


def roll_to_kraft(cluster: LocalCluster, watch: Watch, figures: Figures) -> None:
    print("\nrolling restart of the brokers into KRaft mode (process.roles=broker, node.id)")
    ids = cluster.broker_ids
    for i, broker in enumerate(ids):
        cluster.set_mode(broker, Mode.KRAFT)
        cluster.restart(broker)
        cluster.wait_ready(WAIT_S, expected=ids)
        report = watch.poll()
        if report is not None:
            figures.max_lag = max(figures.max_lag, report["zk_write_behind_lag"])
        if i + 1 < len(ids):
            agreed = _compare(cluster, ids[-1], broker, figures)
            print(
                f"  broker {broker} in KRaft mode; Metadata through ZooKeeper-mode broker "
                f"{ids[-1]} and KRaft-mode broker {broker} "
                f"{'agree' if agreed else 'DISAGREE'}",
                flush=True,
            )
        else:
            print(f"  broker {broker} in KRaft mode", flush=True)
    watch.until(lambda r: r["state"] == "MigrationFinished")


def finalize(quorum: LocalQuorum, watch: Watch) -> dict[str, Any]:
    print(
        "\nfinalizing: controllers restarted one at a time with "
        "zookeeper.metadata.migration.enable=false and no zookeeper.connect"
    )
    for node in quorum.ids:
        quorum.reconfigure(
            node, **{"zookeeper.metadata.migration.enable": "false", "zookeeper.connect": None}
        )
        quorum.restart(node)
        print(f"  controller {node} restarted", flush=True)
        watch.until(lambda r: r["state"] in ("MigrationFinished", "KRaft"))
    return watch.until(lambda r: r["state"] == "KRaft")


def go_back(cluster: LocalCluster, quorum: LocalQuorum, client: ZkClient, watch: Watch) -> None:
    print("\nthe way back (--rollback): KRaft-mode brokers back to ZooKeeper mode first")
    for broker in cluster.broker_ids:
        cluster.set_mode(broker, Mode.MIGRATING)
        cluster.restart(broker)
        cluster.wait_ready(WAIT_S, expected=cluster.broker_ids)
        print(f"  broker {broker} back in ZooKeeper mode (migrating)", flush=True)
    watch.until(lambda r: r["state"] == "MigrationActive" and r["zk_brokers"] == cluster.broker_ids)
    watch.until(lambda r: r["zk_write_behind_lag"] == 0)
    print("stopping every controller; zk2kraft rollback --zk ... --log-dir ...")
    quorum.stop_all(signal.SIGTERM)
    assessment = assess(client, log_dirs=tuple(quorum.log_dir(n) for n in quorum.ids))
    for f in assessment.findings:
        print(f"  [{'ok' if f.ok else 'FAIL'}] {f.code}: {f.message}")
    for op in hand_back(client, assessment):
        print(f"  wrote: {op.kind.name.lower()} {op.path}")
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        owner = (
            parse_controller(paths.CONTROLLER, client.get(paths.CONTROLLER)[0])
            if (client.kazoo.exists(paths.CONTROLLER))
            else None
        )
        if owner is not None and not owner.is_kraft:
            print(f"  broker {owner.broker_id} won the ZooKeeper controller election")
            break
        time.sleep(0.1)
    print("taking the migration settings off the brokers (rolling restart)")
    for broker in cluster.broker_ids:
        cluster.set_mode(broker, Mode.ZOOKEEPER)
        cluster.restart(broker)
        cluster.wait_ready(WAIT_S)
    KafkaAdminClient(cluster.bootstrap).call(
        "CreateTopics",
        cpb.CreateTopicsRequest(
            topics=[
                cpb.CreatableTopic(name="after-rollback", num_partitions=3, replication_factor=3)
            ]
        ),
    )
    present = client.kazoo.exists(paths.topic("after-rollback")) is not None
    print(f"a topic created the ZooKeeper way after the rollback: in ZooKeeper: {present}")


def summary(figures: Figures, report: dict[str, Any]) -> None:
    print("\nzk2kraft migration status")
    print_status(report)
    print(
        "\nsummary: "
        f"metadata writes paused for the copy {figures.copy_ms:.0f} ms "
        f"({figures.copy_records:,} records in one transaction); "
        f"write-behind lag at most {figures.max_lag} records; "
        f"partitions offline: {len(figures.offline)}; "
        f"Metadata comparisons {figures.comparisons} "
        f"({figures.disagreements} still converging when sampled)"
    )
