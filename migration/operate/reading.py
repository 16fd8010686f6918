"""What a plan reads, read-only: the nodes' properties files and the cluster's ZooKeeper
(its tree, once, with zk2kraft's preflight over it)."""

from __future__ import annotations

from collections.abc import Sequence

from kazoo.exceptions import KazooException

from migration.bridge.preflight import run_preflight
from migration.common.properties import ConfigError, load_properties
from migration.observability.progress import Progress
from migration.operate.inventory import Broker, Controller, Inventory
from migration.operate.plan import ClusterFacts, Files
from migration.zk.client import ZkClient, ZkConnectError
from migration.zk.errors import ZnodeFormatError
from migration.zk.reader import read_snapshot
from migration.zk.security import zk_config_security


def read_files(inv: Inventory) -> Files:
    """Every file the plan starts from (:class:`ConfigError` naming each unreadable one)."""
    return Files(
        _texts(inv, inv.brokers, "broker"),
        _texts(inv, inv.controllers, "controller"),
        _client_text(inv),
    )


def _texts(inv: Inventory, nodes: Sequence[Broker | Controller], kind: str) -> dict[int, str]:
    """Each node's properties file; a controller's not written yet is empty.
    :class:`ConfigError` naming every file that cannot be read."""
    texts, problems = {}, []
    for node in nodes:
        path = node.properties
        if isinstance(node, Controller) and not path.exists() and not path.is_symlink():
            texts[node.id] = ""
            continue
        try:
            texts[node.id] = load_properties(path).text
        except ConfigError as exc:
            problems.append(f"{kind} {node.id}: {exc}")
    if problems:
        raise ConfigError(str(inv.path), problems)
    return texts


def _client_text(inv: Inventory) -> str:
    return load_properties(inv.zookeeper_client_config).text


def read_cluster(
    inv: Inventory, progress: Progress | None = None, timeout_s: float = 18.0
) -> ClusterFacts:
    """ZooKeeper's cluster id, registered brokers and preflight; an unreachable or
    unreadable ZooKeeper is ``error`` (a plan is still shown)."""
    try:
        security = zk_config_security(inv.zookeeper_client_config)
        with ZkClient(inv.zookeeper_connect, timeout_s=timeout_s, security=security) as client:
            snap = read_snapshot(client, progress)
    except (ZkConnectError, KazooException, ZnodeFormatError, ConfigError, OSError) as exc:
        return ClusterFacts(None, frozenset(), None, str(exc) or type(exc).__name__)
    return ClusterFacts(
        cluster_id=snap.cluster_id.id if snap.cluster_id is not None else None,
        registered=frozenset(snap.brokers),
        preflight=run_preflight(snap),
    )
