"""What a plan reads, read-only: the nodes' properties files and the cluster's ZooKeeper
(its tree, once, with zk2kraft's preflight over it)."""

from __future__ import annotations

from kazoo.exceptions import KazooException

from migration.bridge.preflight import run_preflight
from migration.common.properties import ConfigError, load_properties
from migration.observability.progress import Progress
from migration.operate.inventory import Inventory
from migration.operate.plan import ClusterFacts, Files
from migration.zk.client import ZkClient, ZkConnectError
from migration.zk.errors import ZnodeFormatError
from migration.zk.reader import read_snapshot
from migration.zk.security import zk_config_security


def read_files(inv: Inventory) -> Files:
    """Every file the plan starts from (:class:`ConfigError` naming each unreadable one)."""
    return Files(_broker_texts(inv), _controller_texts(inv), _client_text(inv))


def _broker_texts(inv: Inventory) -> dict[int, str]:
    """Each broker's ``server.properties``; :class:`ConfigError` naming every file that
    cannot be read."""
    texts, problems = {}, []
    for broker in inv.brokers:
        try:
            texts[broker.id] = load_properties(broker.properties).text
        except ConfigError as exc:
            problems.append(f"broker {broker.id}: {exc}")
    if problems:
        raise ConfigError(str(inv.path), problems)
    return texts


def _controller_texts(inv: Inventory) -> dict[int, str]:
    """Each controller's properties file, empty for one not written yet."""
    texts, problems = {}, []
    for controller in inv.controllers:
        if not controller.properties.exists() and not controller.properties.is_symlink():
            texts[controller.id] = ""
            continue
        try:
            texts[controller.id] = load_properties(controller.properties).text
        except ConfigError as exc:
            problems.append(f"controller {controller.id}: {exc}")
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
