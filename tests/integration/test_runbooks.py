"""The runbooks, executed: their ``sh`` blocks run in order by bash against a local cluster
(a real ZooKeeper, broker and controller processes managed through pid files, as a
service manager would), with the environment ``runbooks/README.md`` documents. A block
that fails fails the test with the runbook's output."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from migration.local import seed
from migration.local.cluster import INTERNAL_LISTENER, LocalCluster
from migration.local.quorum import LocalQuorum, controller_migration_properties
from migration.local.seed import ClusterSpec
from migration.local.zookeeper import EmbeddedZooKeeper
from migration.zk import paths
from migration.zk.client import ZkClient
from migration.zk.model.cluster import parse_controller
from tests.broker_harness import SESSION_TIMEOUT_MS, eventually, leaders
from tests.runbook_host import ROOT, blocks


@dataclass
class Site:
    zk: ZkClient
    cluster: LocalCluster
    quorum: LocalQuorum
    env: dict[str, str]
    log: Path

    def run(self, *scripts: str) -> str:
        script = "set -euo pipefail\n" + "\n".join(scripts)
        done = subprocess.run(
            ["bash", "-c", script], cwd=ROOT, env=self.env, capture_output=True, text=True,
            timeout=1200, check=False,
        )  # fmt: skip
        self.log.write_text(done.stdout + done.stderr)
        assert done.returncode == 0, f"runbook failed ({self.log}):\n{done.stderr[-4000:]}"
        return done.stdout

    def hosts(self, each: list[tuple[str, ...]]) -> None:
        """``tests.runbook_host`` once for each argument list, all at once."""
        command = [sys.executable, "-m", "tests.runbook_host", "--brokers",
                   str(self.cluster.directory), "--quorum", str(self.quorum.root)]  # fmt: skip
        running = [subprocess.Popen([*command, *args], cwd=ROOT, env=self.env) for args in each]
        codes = [p.wait(timeout=300) for p in running]
        assert codes == [0] * len(codes), f"runbook_host {each}: {codes}"


@pytest.fixture
def site(zk_server: EmbeddedZooKeeper, tmp_path: Path) -> Iterator[Site]:
    """A seeded ZooKeeper-mode cluster running (brokers 1..3), three controllers'
    configs written (not started), and the runbooks' environment."""
    connect = f"{zk_server.connect_string}/runbooks/{uuid.uuid4().hex[:10]}"
    client = ZkClient(connect)
    client.ensure_chroot()
    spec = ClusterSpec(topics=3, partitions=9)
    seed.write(client, seed.without_registrations(seed.generate(spec)))
    secret = spec.password_encoder_secret
    quorum = LocalQuorum(
        tmp_path / "quorum",
        first_id=3000,
        cluster_id=None,
        extra={
            **controller_migration_properties(connect, INTERNAL_LISTENER, secret),
            "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
        },
    )
    cluster = LocalCluster(
        connect,
        [1, 2, 3],
        tmp_path / "brokers",
        properties={
            "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
            "password.encoder.secret": secret or "",
        },
    )
    host = (
        f"{sys.executable} -m tests.runbook_host --brokers {cluster.directory} "
        f"--quorum {quorum.root}"
    )
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "PYTHONPATH": str(ROOT),
        "ZK": connect,
        "BROKER_IDS": "1 2 3",
        "BROKER_CONFIG": str(cluster.directory / "broker-%s" / "server.properties"),
        "CONTROLLER_IDS": " ".join(str(i) for i in quorum.ids),
        "CONTROLLER_CONFIG": str(quorum.root / "controller%s.properties"),
        "CONTROLLER_LOG_DIR": str(quorum.root / "log%s"),
        "CONTROLLER_QUORUM_VOTERS": quorum.voters,
        "BOOTSTRAP_CONTROLLER": ",".join(quorum.bootstrap),
        "RESTART_BROKER": f"{host} restart broker",
        "START_CONTROLLER": f"{host} start controller",
        "STOP_CONTROLLER": f"{host} stop controller",
        "RESTART_CONTROLLER": f"{host} restart controller",
    }
    here = Site(client, cluster, quorum, env, tmp_path / "runbook.out")
    try:
        here.hosts([("start", "broker", str(b)) for b in (1, 2, 3)])
        yield here
    finally:  # each stop is graceful and bounded (runbook_host), so they run side by side
        here.hosts([("stop", "broker", str(b)) for b in (1, 2, 3)])
        here.hosts([("stop", "controller", str(node)) for node in quorum.ids])
        client.close()


def _status(site: Site) -> str:
    return site.run('zk2kraft migration status --bootstrap-controller "$BOOTSTRAP_CONTROLLER"')


def test_the_migration_and_finalize_runbooks_take_the_cluster_to_kraft(site: Site) -> None:
    site.run(*blocks("migration.md"), *blocks("finalize.md"))
    status = _status(site)
    assert re.search(r"^State:\s+KRaft$", status, re.M), status
    assert re.search(r"^Zk migration state:\s+POST_MIGRATION$", status, re.M), status
    for b in (1, 2, 3):
        assert "process.roles=broker" in site.cluster.brokers[b].config.read_text()
        assert "zookeeper.connect" not in site.cluster.brokers[b].config.read_text()
    admin = AdminClient({"bootstrap.servers": site.cluster.bootstrap})
    admin.create_topics([NewTopic("after-runbook", 3, 3)])["after-runbook"].result(60)
    eventually(lambda: len(leaders(site.cluster, 2, "after-runbook")) == 3, 60, "leaders")


# make test-long: rollback itself is drilled by make test (test_rollback_drills.py, every
# state it is allowed from); this walks the runbook's text end to end (about 2 minutes)
@pytest.mark.long
def test_the_migration_then_rollback_runbooks_bring_zookeeper_back(site: Site) -> None:
    site.run(*blocks("migration.md"))
    assert re.search(r"^State:\s+MigrationFinished$", _status(site), re.M)
    out = site.run(*blocks("rollback.md", (1, 2, 3, 4, 5)))
    assert "ZooKeeper is handed back" in out
    owner = parse_controller(paths.CONTROLLER, site.zk.get(paths.CONTROLLER)[0])
    assert not owner.is_kraft and owner.broker_id in (1, 2, 3)
    assert site.zk.kazoo.exists(paths.MIGRATION) is None
    for b in (1, 2, 3):
        text = site.cluster.brokers[b].config.read_text()
        assert "broker.id=" in text and "zookeeper.metadata.migration.enable" not in text
    assert not any(site.quorum.log_dir(n).exists() for n in site.quorum.ids)
    admin = AdminClient({"bootstrap.servers": site.cluster.bootstrap})
    admin.create_topics([NewTopic("after-rollback", 3, 3)])["after-rollback"].result(60)
    eventually(lambda: len(leaders(site.cluster, 3, "after-rollback")) == 3, 60, "leaders")
