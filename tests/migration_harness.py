"""A live migration rig for tests and benchmarks: a seeded ZooKeeper-mode cluster of real
broker processes configured for the migration, and a quorum of three real controller
processes (ids 3000..3002, storage formatted with ZooKeeper's cluster id) that takes it
over. Waits are hang guards, never timings."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient

from migration.driver.describe import describe_migration, status_json
from migration.image.at_offset import image_at
from migration.image.model import MetadataImage
from migration.kafka.client import ClientSecurity
from migration.local import seed
from migration.local.cluster import CLIENT_LISTENER, INTERNAL_LISTENER, PROTOCOLS, LocalCluster
from migration.local.quorum import broker_migration_properties, controller_migration_properties
from migration.local.seed import ClusterSpec
from migration.local.zookeeper import EmbeddedZooKeeper
from migration.zk import paths
from migration.zk.client import ZkClient
from migration.zk.model.cluster import ControllerZnode, parse_controller
from migration.zk.security import OPEN, ZkSecurity
from migration.zk.tree_read import ZkSnapshot
from tests.broker_harness import SESSION_TIMEOUT_MS, eventually
from tests.quorum_harness import Quorum

CONTROLLER_IDS_FROM = 3000


@dataclass
class MigrationRig:
    zk_connect: str
    zk: ZkClient
    seeded: ZkSnapshot
    cluster: LocalCluster
    quorum: Quorum

    @property
    def cluster_id(self) -> str:
        assert self.seeded.cluster_id is not None
        return self.seeded.cluster_id.id

    def status(self, node: int | None = None) -> dict[str, Any]:
        """``migration status --json`` from the quorum (or as controller ``node`` sees it)."""
        via = self.quorum.bootstrap if node is None else [self.quorum.endpoint(node)]
        return status_json(describe_migration(via))

    def wait_phase(self, phase: str, timeout_s: float = 120.0) -> dict[str, Any]:
        def reached() -> dict[str, Any] | None:
            s = self.status()
            return s if s["driver_phase"] == phase and s["active_controller"] >= 0 else None

        try:
            return eventually(reached, timeout_s, f"driver phase {phase}")
        except TimeoutError as exc:
            raise TimeoutError(f"{exc}; last status {self._last_status()}") from None

    def _last_status(self) -> object:
        try:
            return self.status()
        except Exception as exc:
            return exc


def admin_via(rig: MigrationRig, broker: int | None = None) -> AdminClient:
    """confluent-kafka's AdminClient bootstrapped on one broker (or all of them). Keep it
    referenced until its futures are done: a collected client cancels them."""
    servers = (
        rig.cluster.bootstrap if broker is None else f"127.0.0.1:{rig.cluster.brokers[broker].port}"
    )
    return AdminClient({"bootstrap.servers": servers})


def restart_controllers(rig: MigrationRig, **changes: str | None) -> None:
    """Every controller, one at a time, with ``changes`` to its config; the quorum
    answering again before the next."""
    for node in rig.quorum.ids:
        rig.quorum.reconfigure(node, **changes)
        rig.quorum.restart(node)
        eventually(lambda: rig.status()["active_controller"] >= 0, 60, "an active controller")


def zk_controller_elected(rig: MigrationRig, timeout_s: float = 60.0) -> ControllerZnode:
    """Hang guard until ``/controller`` names a ZooKeeper-mode broker (after a rollback
    hands ZooKeeper back)."""
    return eventually(
        lambda: (
            (o := parse_controller(paths.CONTROLLER, rig.zk.get(paths.CONTROLLER)[0]))
            and not o.is_kraft
            and o
        ),
        timeout_s,
        "a ZooKeeper controller elected",
    )


def results_of(futures: dict[Any, Any]) -> dict[Any, Any]:
    """Every future's result (hang guard: 60 s each)."""
    return {k: f.result(timeout=60) for k, f in futures.items()}


def replay_log(log_dir: Path) -> MetadataImage:
    """The committed image a controller's log replays to, from its latest snapshot
    (read-only, beside the running process; an open transaction's records are not in
    it)."""
    return image_at(log_dir, None).image


def format_storage(
    quorum: Quorum, node: int, cluster_id: str, *options: str
) -> subprocess.CompletedProcess[str]:
    """``zk2kraft storage format`` for controller ``node`` (a fresh directory)."""
    for name in ("meta.properties", "bootstrap.checkpoint"):
        (quorum.root / f"log{node}" / name).unlink(missing_ok=True)
    return subprocess.run(
        [sys.executable, "-m", "migration.cli.main", "storage", "format",
         "--config", str(quorum.config(node)), "--cluster-id", cluster_id, *options],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


@contextmanager
def migration_rig(
    zk_server: EmbeddedZooKeeper,
    tmp: Path,
    spec: ClusterSpec | None = None,
    *,
    broker_ids: list[int] | None = None,
    broker_props: dict[str, str] | None = None,
    broker_properties: dict[int, dict[str, str]] | None = None,
    controller_props: dict[str, str] | None = None,
    start_quorum: bool = True,
    ready_timeout_s: float = 90.0,
    metrics: bool = False,
    zk_security: ZkSecurity = OPEN,
    client_listener: str = CLIENT_LISTENER,
    client_security: ClientSecurity | None = None,
) -> Iterator[MigrationRig]:
    """Seed ``spec`` (no registrations), start its brokers with the migration flag and
    the quorum's voters, format and (``start_quorum``) start the three controllers;
    ``metrics``: every process with a metrics endpoint; ``broker_properties``: more
    for one broker (after ``broker_props``), by broker id. A secured cluster: the rig's
    ZooKeeper client logs in with ``zk_security``, the brokers' client listener is
    ``client_listener`` and readiness checks log in with ``client_security``."""
    spec = spec or ClusterSpec(topics=4, partitions=12, delegation_tokens=1)
    connect = f"{zk_server.connect_string}/clusters/{uuid.uuid4().hex[:10]}"
    client = ZkClient(connect, security=zk_security)
    client.ensure_chroot()
    seeded = seed.generate(spec)
    seed.write(client, seed.without_registrations(seeded))
    assert seeded.cluster_id is not None
    secret = spec.password_encoder_secret
    quorum = Quorum(
        tmp / "quorum",
        size=3,
        first_id=CONTROLLER_IDS_FROM,
        cluster_id=None,  # from storage format
        metrics=metrics,
        extra={
            **controller_migration_properties(connect, INTERNAL_LISTENER, secret),
            "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
            **(controller_props or {}),
        },
    )
    cluster = LocalCluster(
        connect,
        broker_ids or sorted(seeded.brokers),
        tmp / "brokers",
        metrics=metrics,
        client_listener=client_listener,
        client_security=client_security,
        properties={
            "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
            **broker_migration_properties(quorum, PROTOCOLS),
            "password.encoder.secret": secret,
            **(broker_props or {}),
        },
        broker_properties=broker_properties or {},
    )
    for node in quorum.ids:
        formatted = format_storage(quorum, node, seeded.cluster_id.id)
        assert formatted.returncode == 0, formatted.stderr
    cluster.start()
    try:
        cluster.wait_ready(ready_timeout_s)
        if start_quorum:
            quorum.start_all()
        yield MigrationRig(connect, client, seeded, cluster, quorum)
    finally:  # brokers first, as operators stop them: their controlled shutdown needs it
        cluster.stop()
        quorum.stop_all()
        client.close()
