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

from migration.broker.local_cluster import LocalCluster
from migration.zk.client import ZkClient
from migration.zk.embedded import EmbeddedZooKeeper

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
        except (AssertionError, OSError, KeyError) as exc:
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
