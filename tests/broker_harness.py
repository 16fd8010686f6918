"""A running ZooKeeper-mode cluster for tests: real broker processes on a real
ZooKeeper (a chroot of their own), and helpers that wait for what the cluster
converges to (tests never time anything; the waits are hang guards)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from kazoo.exceptions import ConnectionLoss, NoNodeError, SessionExpiredError

from migration.local.cluster import LocalCluster
from migration.local.zookeeper import EmbeddedZooKeeper
from migration.zk import paths
from migration.zk.client import ZkClient
from migration.zk.model.cluster import parse_controller
from tests.support import zk2kraft

T = TypeVar("T")
SESSION_TIMEOUT_MS = 6000  # short, so a SIGKILLed broker's registration goes quickly


def eventually(check: Callable[[], T], timeout_s: float = 60.0, what: str = "") -> T:
    """``check()``'s first truthy result; its last exception or a TimeoutError after
    ``timeout_s`` (a hang guard, not a timing assertion)."""
    deadline = time.monotonic() + timeout_s
    last: BaseException | None = None
    while True:
        try:
            result = check()
            if result:
                return result
        except (AssertionError, OSError, KeyError, NoNodeError) as exc:
            # NoNodeError: a znode read between its deletion and its re-creation (an
            # ephemeral /controller between elections)
            last = exc
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what or check} did not happen: {last}") from last
        time.sleep(0.1)


@contextmanager
def running_cluster(
    zk_server: EmbeddedZooKeeper, tmp: Path, ids: list[int], **props: str
) -> Iterator[tuple[LocalCluster, ZkClient]]:
    connect = f"{zk_server.connect_string}/clusters/{uuid.uuid4().hex[:10]}"
    cluster = LocalCluster(
        connect,
        ids,
        tmp,
        properties={"zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS), **props},
    )
    client = ZkClient(connect)
    client.ensure_chroot()
    cluster.start()
    try:
        cluster.wait_ready(90)
        yield cluster, client
    finally:
        cluster.stop()
        client.close()


def leaders(cluster: LocalCluster, broker: int, topic: str) -> dict[int, tuple[int, list[int]]]:
    """partition -> (leader, isr) as ``broker`` answers Metadata."""
    m: Any = cluster.metadata(broker)
    for t in m.topics:
        if t.name == topic:
            return {p.partition_index: (p.leader_id, list(p.isr_nodes)) for p in t.partitions}
    return {}


def controller_of(zk: ZkClient) -> tuple[int, int]:
    """(the ZooKeeper controller's broker id, /controller_epoch), as ZooKeeper has them;
    NoNodeError between elections."""
    owner = parse_controller(paths.CONTROLLER, zk.get(paths.CONTROLLER)[0])
    return owner.broker_id, int(zk.get(paths.CONTROLLER_EPOCH)[0])


def create_topic(cluster: LocalCluster, name: str, partitions: int, rf: int) -> None:
    """CreateTopics through the cluster's brokers (Kafka's protocol, `zk2kraft admin`)."""
    out = zk2kraft(
        "admin", "--bootstrap-server", cluster.bootstrap, "create-topic", name,
        "--partitions", str(partitions), "--replication-factor", str(rf),
    )  # fmt: skip
    assert out.returncode == 0, out.stderr


def zk_answering(zk: ZkClient, timeout_s: float = 60.0) -> None:
    """Until ZooKeeper answers ``zk`` again: a session that expired while the server was
    gone (a slow restart on a loaded machine) is replaced by kazoo with a new one."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            zk.kazoo.sync("/")
            return
        except (SessionExpiredError, ConnectionLoss):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
