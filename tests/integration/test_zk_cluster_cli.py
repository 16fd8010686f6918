"""The one-line local cluster (``zk seed --no-registrations`` then ``cluster start``;
Metadata asking for no topic, what its readiness asks), and a broker facing a cluster a
KRaft controller owns."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from migration.kafka.client import KafkaConnection
from migration.local.cluster import LocalCluster
from migration.local.zookeeper import EmbeddedZooKeeper
from migration.zk import paths
from migration.zk.client import ZkClient
from migration.zk.model.cluster import ControllerZnode, render_controller
from tests.broker_harness import eventually, leaders
from tests.support import zk2kraft


def test_seed_without_registrations_then_cluster_start(
    zk_server: EmbeddedZooKeeper, tmp_path: Path
) -> None:
    connect = f"{zk_server.connect_string}/cli-{tmp_path.name}"
    seeded = zk2kraft("zk", "seed", "--zk", connect, "--profile", "tiny", "--no-registrations",
                      "--json")  # fmt: skip
    assert seeded.returncode == 0, seeded.stderr
    ids = json.loads(seeded.stdout)["broker_ids"]
    with ZkClient(connect) as zk:
        assert zk.kazoo.get_children(paths.BROKER_IDS) == []
        assert zk.kazoo.exists(paths.CONTROLLER) is None
    child = subprocess.Popen(
        [sys.executable, "-m", "migration.cli.main", "cluster", "start", "--zk", connect,
         "--broker-ids", ",".join(map(str, ids)), "--dir", str(tmp_path / "c"), "--json",
         "--property", "zookeeper.session.timeout.ms=6000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert child.stdout is not None
        ready = json.loads(child.stdout.readline())  # printed once every broker answers
        bootstrap = ready["bootstrap_servers"]
        listed = zk2kraft("admin", "--bootstrap-server", bootstrap, "list-topics", "--json")
        assert listed.returncode == 0, listed.stderr
        assert len(json.loads(listed.stdout)) == 3
        host, port = bootstrap.split(",")[0].rsplit(":", 1)
        with KafkaConnection(host, int(port), 30) as conn:  # what wait_ready asks
            bare, whole = conn.cluster_metadata(), conn.metadata()
        assert len(bare.topics) == 0 and len(whole.topics) == 3
        assert (bare.brokers, bare.controller_id, bare.cluster_id) == (
            whole.brokers, whole.controller_id, whole.cluster_id
        )  # fmt: skip
        with ZkClient(connect) as zk:
            assert sorted(map(int, zk.kazoo.get_children(paths.BROKER_IDS))) == sorted(ids)
    finally:
        child.send_signal(signal.SIGINT)
        assert child.wait(120) == 0


def test_a_broker_never_elects_itself_while_a_kraft_controller_owns_the_cluster(
    zk_server: EmbeddedZooKeeper, tmp_path: Path
) -> None:
    connect = f"{zk_server.connect_string}/kraft-owned-{tmp_path.name}"
    with ZkClient(connect) as zk:
        zk.ensure_chroot()
        zk.kazoo.create(paths.CONTROLLER_EPOCH, b"7")
        owner = render_controller(ControllerZnode(3000, 1700000000000, kraft_controller_epoch=4))
        zk.kazoo.create(paths.CONTROLLER, owner)  # persistent, as the migration claims it
        cluster = LocalCluster(connect, [1], tmp_path)
        cluster.start()
        try:  # no ZooKeeper controller sends it metadata: it answers, knowing no broker
            answer = eventually(lambda: cluster.metadata(1), what="the broker answers")
            assert answer.controller_id == 1  # type: ignore[attr-defined]
            assert zk.kazoo.get_children(paths.BROKER_IDS) == ["1"]
            assert zk.get(paths.CONTROLLER)[0] == owner
            assert zk.get(paths.CONTROLLER_EPOCH)[0] == b"7"
            refused = zk2kraft("admin", "--bootstrap-server", cluster.bootstrap, "--timeout",
                               "3", "create-topic", "t", "--partitions", "1",
                               "--replication-factor", "1")  # fmt: skip
            assert refused.returncode == 1 and "NOT_CONTROLLER" in refused.stderr
            assert zk.kazoo.exists(paths.topic("t")) is None
            assert leaders(cluster, 1, "t") == {}
        finally:
            cluster.stop()
