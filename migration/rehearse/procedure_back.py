"""The ways back to ZooKeeper, as runbooks/rollback.md has an operator run them on a local
cluster (the demo's ``--rollback`` and the rehearsal's drill share them).

Contracts:

- :func:`brokers_back_from_kraft` is section 2: KRaft-mode brokers restarted into
  ZooKeeper mode (migrating) one by one, until MigrationActive with every broker back.
- :func:`rollback_from_active` is sections 3 to 5 from MigrationActive: every
  controller stopped, the checked hand-back (:func:`migration.rollback.assess` then
  :func:`~migration.rollback.hand_back`, one version-checked multi), a ZooKeeper-mode
  broker elected controller, the migration settings taken off the brokers (each restart
  timed), the controllers' storage cleared, and a topic created the ZooKeeper way
  afterwards to show ZooKeeper is written again. It never raises for a failed check:
  the :class:`Drill` says what failed, and the drill stops at the first failed step (a
  refused hand-back leaves ZooKeeper as it was and the brokers as they were; with no
  ZooKeeper-mode broker elected controller, the brokers are not restarted).
"""

from __future__ import annotations

import shutil
import signal
import time
from dataclasses import dataclass, field

from migration.broker.modes import Mode
from migration.kafka.admin_client import KafkaAdminClient
from migration.local.cluster import LocalCluster
from migration.local.quorum import LocalQuorum
from migration.proto import controller_pb2 as cpb
from migration.rehearse.procedure import WAIT_S, PhaseWatch, Say, quiet
from migration.rehearse.report import DrillFinding, Restart
from migration.rollback import assess, hand_back
from migration.zk import paths
from migration.zk.client import ZkClient
from migration.zk.model.cluster import parse_controller

AFTER_ROLLBACK_TOPIC = "after-rollback"


@dataclass
class Drill:
    """What the way back from MigrationActive found and took."""

    findings: list[DrillFinding] = field(default_factory=list)
    written: list[str] = field(default_factory=list)  # the hand-back's ops, "delete /x"
    restarts: list[Restart] = field(default_factory=list)
    zk_controller: int | None = None  # the ZooKeeper-mode broker elected
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return bool(self.findings) and all(f.ok for f in self.findings)


def brokers_back_from_kraft(cluster: LocalCluster, watch: PhaseWatch, say: Say = quiet) -> None:
    """runbooks/rollback.md section 2: KRaft-mode brokers back to ZooKeeper mode first."""
    say("KRaft-mode brokers back to ZooKeeper mode first")
    for broker in cluster.broker_ids:
        cluster.set_mode(broker, Mode.MIGRATING)
        cluster.restart(broker)
        cluster.wait_ready(WAIT_S, expected=cluster.broker_ids)
        say(f"  broker {broker} back in ZooKeeper mode (migrating)")
    watch.until(lambda r: r["state"] == "MigrationActive" and r["zk_brokers"] == cluster.broker_ids)


def _zk_controller(client: ZkClient) -> int | None:
    """The ZooKeeper-mode broker /controller names (None: none, or a KRaft controller)."""
    if client.kazoo.exists(paths.CONTROLLER) is None:
        return None
    owner = parse_controller(paths.CONTROLLER, client.get(paths.CONTROLLER)[0])
    return None if owner.is_kraft else owner.broker_id


def rollback_from_active(
    cluster: LocalCluster,
    quorum: LocalQuorum,
    client: ZkClient,
    watch: PhaseWatch,
    say: Say = quiet,
) -> Drill:
    """runbooks/rollback.md sections 3-5 from MigrationActive (see the module's contract)."""
    drill = Drill()
    started = time.monotonic()
    watch.until(lambda r: r["zk_write_behind_lag"] == 0)
    say("stopping every controller; zk2kraft rollback --zk ... --log-dir ...")
    quorum.stop_all(signal.SIGTERM)
    assessment = assess(client, log_dirs=tuple(quorum.log_dir(n) for n in quorum.ids))
    for f in assessment.findings:
        say(f"  [{'ok' if f.ok else 'FAIL'}] {f.code}: {f.message}")
        drill.findings.append(DrillFinding(f.code, f.ok, f.message))
    if assessment.blocked:
        drill.seconds = time.monotonic() - started
        return drill
    for op in hand_back(client, assessment):
        say(f"  wrote: {op.kind.name.lower()} {op.path}")
        drill.written.append(f"{op.kind.name.lower()} {op.path}")
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline and drill.zk_controller is None:
        drill.zk_controller = _zk_controller(client)
        time.sleep(0.1)
    elected = drill.zk_controller is not None
    drill.findings.append(
        DrillFinding(
            "ZK_CONTROLLER_ELECTED",
            elected,
            f"broker {drill.zk_controller} won the ZooKeeper controller election"
            if elected
            else f"no ZooKeeper-mode broker took /controller within {WAIT_S:g}s",
        )
    )
    say(f"  {drill.findings[-1].message}")
    if not elected:  # ZooKeeper has no controller: the rest of the way back cannot follow
        drill.seconds = time.monotonic() - started
        return drill
    say("taking the migration settings off the brokers (rolling restart)")
    for broker in cluster.broker_ids:
        cluster.set_mode(broker, Mode.ZOOKEEPER)
        began = time.monotonic()
        cluster.restart(broker)
        cluster.wait_ready(WAIT_S)
        drill.restarts.append(Restart(broker, "zookeeper", time.monotonic() - began))
    say("clearing the controllers' storage")
    for node in quorum.ids:
        shutil.rmtree(quorum.log_dir(node), ignore_errors=True)
    admin = KafkaAdminClient(cluster.bootstrap)
    try:
        admin.call(
            "CreateTopics",
            cpb.CreateTopicsRequest(
                topics=[
                    cpb.CreatableTopic(
                        name=AFTER_ROLLBACK_TOPIC,
                        num_partitions=1,
                        replication_factor=min(3, len(cluster.broker_ids)),
                    )
                ]
            ),
        )
    finally:
        admin.close()
    present = client.kazoo.exists(paths.topic(AFTER_ROLLBACK_TOPIC)) is not None
    drill.findings.append(
        DrillFinding(
            "ZK_WRITTEN_AFTER_ROLLBACK",
            present,
            f"a topic created through the brokers after the rollback is in ZooKeeper: {present}",
        )
    )
    say(f"  {drill.findings[-1].message}")
    drill.seconds = time.monotonic() - started
    return drill
