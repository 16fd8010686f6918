"""Faults during a driven migration of a real Apache Kafka 3.9.2 cluster
(:mod:`tests.kafka_drive`), in ``make test-long``: the driver SIGKILLed as each step
begins, every step, and resumed each time; the active Kafka controller SIGKILLed while
Kafka copies ZooKeeper's metadata. Each migration ends finalized with every acknowledged
message kept."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from migration.local import kafka_service
from migration.local.kafka_cluster import CONTROLLERS
from migration.local.zookeeper import EmbeddedZooKeeper
from migration.zk.client import ZkClient
from tests.kafka_drive import DrivenCluster, Traffic, driven_cluster, read_all
from tests.support import zk2kraft

pytestmark = [pytest.mark.timeout(3600), pytest.mark.long]


@pytest.fixture
def cluster(zk_server: EmbeddedZooKeeper, tmp_path: Path) -> Iterator[DrivenCluster]:
    with driven_cluster(zk_server, tmp_path) as c:
        yield c


def done_steps(c: DrivenCluster) -> list[str]:
    path = c.inventory.with_name(c.inventory.name + ".run.json")
    return list(json.loads(path.read_text())["done"]) if path.exists() else []


def driver(c: DrivenCluster, log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "migration.cli.main", "kafka", "migrate",
             "--inventory", str(c.inventory), "--gate-timeout", "300"],
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip


def finalized(c: DrivenCluster) -> bool:
    status = zk2kraft("kafka", "status", "--inventory", str(c.inventory), "--json")
    return bool(json.loads(status.stdout)["zk_migration_state"] == "POST_MIGRATION")


def test_the_driver_killed_as_every_step_begins(cluster: DrivenCluster) -> None:
    """Each run is SIGKILLed once the journal shows the next step under way (after
    whatever part of it the run got to); the next run resumes it."""
    c, log = cluster, cluster.base / "drivers.log"
    traffic = Traffic(c.bootstrap).start()
    kills = 0
    try:
        while True:
            before = len(done_steps(c))
            run = driver(c, log)
            deadline = time.monotonic() + 600  # a hang guard: one step
            while run.poll() is None and len(done_steps(c)) == before:
                assert time.monotonic() < deadline, log.read_text()[-3000:]
                time.sleep(0.05)
            if run.poll() is not None:  # nothing left to take
                assert run.returncode == 0, log.read_text()[-3000:]
                break
            time.sleep(kills % 3 * 0.5)  # into the next step, by a varying amount
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
            kills += 1
    finally:
        traffic.stop()
    assert kills >= 20 and finalized(c)
    assert traffic.acked and traffic.acked <= read_all(c.bootstrap)


def test_the_active_kafka_controller_killed_during_the_copy(cluster: DrivenCluster) -> None:
    c = cluster
    """Up to the last broker's roll (the controllers wait for every broker before they
    copy), then the driver resumed and the controller SIGKILLed the moment it claims
    ZooKeeper, which is where Kafka's copy starts: another controller takes over, copies
    again (Kafka's copy is one transaction, aborted on failover), and the run goes on."""
    up = zk2kraft("kafka", "migrate", "--inventory", str(c.inventory), "--until",
                  "brokers-migration.3.restart", timeout=900)  # fmt: skip
    assert up.returncode == 0, up.stderr
    traffic = Traffic(c.bootstrap).start()
    try:
        log = c.base / "driver.log"
        run = driver(c, log)
        deadline = time.monotonic() + 300
        while not _claimed(c):  # the active controller has started the copy
            assert time.monotonic() < deadline and run.poll() is None, log.read_text()
            time.sleep(0.05)
        with ZkClient(c.connect) as zk:
            active = json.loads(zk.kazoo.get("/controller")[0])["brokerid"]
        pid = kafka_service.status(c.controller_properties(active))
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        restarted = zk2kraft("kafka-node", "start", "--properties",
                             str(c.controller_properties(active)), timeout=300)  # fmt: skip
        assert restarted.returncode == 0, restarted.stderr
        assert run.wait(timeout=1200) == 0, log.read_text()[-3000:]
    finally:
        traffic.stop()
    assert finalized(c)
    assert traffic.acked and traffic.acked <= read_all(c.bootstrap)
    assert active in CONTROLLERS


def _claimed(c: DrivenCluster) -> bool:
    with ZkClient(c.connect) as zk:
        raw = zk.kazoo.exists("/controller") and zk.kazoo.get("/controller")[0]
    return (
        bool(raw)
        and "kraftControllerEpoch" in json.loads(raw)
        and (json.loads(raw)["kraftControllerEpoch"] >= 0)
    )
