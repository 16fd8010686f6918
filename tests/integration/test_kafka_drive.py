"""``zk2kraft kafka plan|migrate`` on a real Apache Kafka 3.9.2 cluster (three
ZooKeeper-mode brokers managed by ``kafka-node``, see :mod:`tests.kafka_drive`): the plan
changes nothing; the migration, driven from the inventory with a producer and a consumer
group running throughout, is watched mid-roll on its live page (``--page``: the JSON, the
metrics, the HTML in Chromium), is SIGKILLed mid-roll and resumed, refuses to go on while
a partition reassignment is in flight, and ends finalized with every acknowledged message
still there and the group's offsets kept."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka.admin import KafkaAdminClient

from migration.common.properties import read_properties
from migration.local.kafka_cluster import BROKERS, CONTROLLERS
from migration.local.kafka_release import kafka_release
from migration.local.zookeeper import EmbeddedZooKeeper
from migration.observability import catalog
from migration.zk.client import ZkClient
from tests.browser import dump_dom
from tests.kafka_drive import (
    GROUP,
    MOVING,
    DrivenCluster,
    Traffic,
    driven_cluster,
    read_all,
    runbook,
)
from tests.support import zk2kraft

pytestmark = [pytest.mark.timeout(1200), pytest.mark.slow]


@pytest.fixture(scope="module")
def cluster(
    zk_server: EmbeddedZooKeeper, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DrivenCluster]:
    with driven_cluster(zk_server, tmp_path_factory.mktemp("driven")) as c:
        yield c


def migrate(c: DrivenCluster, *more: str) -> subprocess.CompletedProcess[str]:
    return zk2kraft("kafka", "migrate", "--inventory", str(c.inventory), "--gate-timeout", "300",
                    *more, timeout=900)  # fmt: skip


def kafka_status(c: DrivenCluster) -> dict[str, Any]:
    done = zk2kraft("kafka", "status", "--inventory", str(c.inventory), "--json")
    assert done.returncode == 0, done.stderr
    status: dict[str, Any] = json.loads(done.stdout)
    return status


def journal(c: DrivenCluster) -> dict[str, object]:
    path = c.inventory.with_name(c.inventory.name + ".run.json")
    return json.loads(path.read_text()) if path.exists() else {"done": [], "current": None}


def wait_for(what: str, check: object, timeout_s: float = 300.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"hang guard: {what}"
        time.sleep(0.2)


def test_the_plan_reads_the_cluster_and_changes_nothing(cluster: DrivenCluster) -> None:
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in cluster.brokers.values()}
    done = zk2kraft("kafka", "plan", "--inventory", str(cluster.inventory), "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    plan = json.loads(done.stdout)
    with ZkClient(cluster.connect) as zk:
        cluster_id = json.loads(zk.kazoo.get("/cluster/id")[0])["id"]
        assert zk.kazoo.exists("/migration") is None
    assert plan["ready"] and plan["cluster_id"] == cluster_id
    assert [b["registered"] for b in plan["brokers"]] == [True] * len(BROKERS)
    assert [p["name"] for p in plan["phases"]] == [
        "preflight", "controllers", "brokers-migration", "copy", "brokers-kraft", "finalize",
    ]  # fmt: skip
    formats = [s for p in plan["phases"] for s in p["steps"] if s["id"].endswith(".format")]
    assert all(f"--cluster-id={cluster_id}" in s["command"] for s in formats)
    shown = runbook(cluster, 2)  # the runbook's plan block
    assert shown.returncode == 0 and "Ready to start." in shown.stdout, shown.stdout
    assert {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in cluster.brokers.values()} == before
    assert not any(cluster.controller_properties(n).exists() for n in CONTROLLERS)


def test_a_driven_migration_with_traffic_killed_refused_and_resumed(
    cluster: DrivenCluster,
) -> None:
    c = cluster
    modes = {p: p.stat().st_mode for p in c.brokers.values()}
    originals = {p: p.read_text() for p in c.brokers.values()}
    traffic = Traffic(c.bootstrap).start()
    try:
        wait_for("traffic flowing", lambda: len(traffic.acked) > 50 and traffic.consumed)

        wait_for("the group's offsets committed", lambda: len(committed(c)) == 3)
        before = committed(c)

        # SIGKILLed while it rolls the brokers; the cluster goes on running.
        output = c.base / "killed-driver.log"
        with output.open("w") as out:
            driver = subprocess.Popen(
                [sys.executable, "-m", "migration.cli.main", "kafka", "migrate",
                 "--inventory", str(c.inventory), "--gate-timeout", "300",
                 "--page", "127.0.0.1:0"],
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip

        def rolled_one() -> bool:
            assert driver.poll() is None, output.read_text()
            return "brokers-migration.1.back" in journal(c)["done"]  # type: ignore[operator]

        try:
            wait_for("the driver rolling broker 2", rolled_one, timeout_s=600)
            seen_mid_roll(output)
        finally:
            with contextlib.suppress(ProcessLookupError):  # (a driver that stopped by itself)
                os.killpg(driver.pid, signal.SIGKILL)
            driver.wait()

        # Resumed up to the roll into KRaft: Kafka copied and dual-writes.
        resumed = migrate(c, "--until", "brokers-kraft")
        assert resumed.returncode == 0, resumed.stderr
        assert "resuming" in resumed.stderr
        status = zk2kraft("migration", "status", "--kafka", "--zk", c.connect,
                          "--log-dir", str(c.metadata_dir(CONTROLLERS[0])), "--json")  # fmt: skip
        assert json.loads(status.stdout)["zk_migration_state"] == "MIGRATION", status.stdout
        driven = kafka_status(c)
        assert driven["zk_migration_state"] == "MIGRATION" and driven["way_back"]
        assert {b["mode"] for b in driven["brokers"]} == {"migrating"}, driven
        assert driven["last_audit"]["verdict"] == "CONSISTENT", driven

        # A reassignment in flight: refused, naming it; cancelled, the run goes on.
        reassign = _reassign(c)
        refused = migrate(c, "--json")
        assert refused.returncode == 1, refused.stdout + refused.stderr
        outcome = json.loads(refused.stdout)
        assert outcome["outcome"] == "refused" and f"{MOVING}-0" in outcome["reason"]
        _cancel(c, reassign)

        for section in (4, 5):  # the runbook's own blocks: into KRaft mode, finalize
            done = runbook(c, section)
            assert done.returncode == 0, done.stderr
    finally:
        traffic.stop()

    # Nothing acknowledged is lost; the group's offsets are kept.
    assert traffic.acked and traffic.acked <= read_all(c.bootstrap)
    after = committed(c)
    assert all(after[tp] >= offset for tp, offset in before.items()), (before, after)
    assert sum(after.values()) >= len(traffic.consumed) > 0

    # Every file: in KRaft mode, its mode kept, the previous contents kept as .bak.
    for i, path in c.brokers.items():
        props = read_properties(path)
        assert props["process.roles"] == "broker" and props["node.id"] == str(i)
        assert not any(k.startswith("zookeeper.") for k in props) and "broker.id" not in props
        assert path.stat().st_mode == modes[path]
        assert (
            path.with_name(path.name + ".before-brokers-migration.bak").read_text()
            == (originals[path])
        )
    for n in CONTROLLERS:
        props = read_properties(c.controller_properties(n))
        assert props["process.roles"] == "controller"
        assert {k: v for k, v in props.items() if k.startswith("zookeeper.")} == {
            "zookeeper.metadata.migration.enable": "false"
        }
    status = zk2kraft("migration", "status", "--kafka", "--zk", c.connect,
                      "--log-dir", str(c.metadata_dir(CONTROLLERS[0])), "--json")  # fmt: skip
    assert json.loads(status.stdout)["zk_migration_state"] == "POST_MIGRATION", status.stdout
    driven = kafka_status(c)
    assert driven["zk_migration_state"] == "POST_MIGRATION" and driven["way_back"] is None
    assert {b["mode"] for b in driven["brokers"]} == {"kraft"}, driven
    again = migrate(c)  # idempotent: nothing left to do
    assert again.returncode == 0 and "done" in again.stderr


def fetch(url: str) -> tuple[int, dict[str, str], str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return answer.status, dict(answer.headers), answer.read().decode()
    except urllib.error.HTTPError as exc:  # 503 before the page's first reading
        return exc.code, dict(exc.headers), exc.read().decode()


def seen_mid_roll(output: Path) -> None:
    """The run's live page (``--page 127.0.0.1:0``, its address as printed) with broker
    1 rolled: the JSON, the metrics, the HTML as served and in Chromium."""
    found: list[str] = []

    def printed() -> bool:
        found[:] = re.findall(
            r"live page: (http://127\.0\.0\.1:\d+/migration) ", output.read_text()
        )
        return bool(found)

    wait_for("the page's address printed", printed, timeout_s=30)
    url = found[0]
    model: dict[str, Any] = {}

    def shows_broker_1_migrating() -> bool:
        code, _, body = fetch(url + ".json")
        model.update(json.loads(body))
        return code == 200 and any(b == {"id": 1, "mode": "migrating"} for b in model["brokers"])

    wait_for("the page shows broker 1 migrating", shows_broker_1_migrating, timeout_s=60)
    assert model["direction"] == "migrate" and model["phase"] == "brokers-migration", model
    phases = {p["name"]: p["state"] for p in model["phases"]}
    assert [phases[p] for p in ("preflight", "controllers", "brokers-migration", "copy")] == [
        "passed", "passed", "current", "ahead",
    ], phases  # fmt: skip
    assert sum(model["brokers_by_mode"].values()) == 3 and model["way_back"], model
    _, _, metrics = fetch(url.removesuffix("/migration") + "/metrics")
    assert f'{catalog.DRIVEN_PHASE.name}{{phase="brokers-migration"}} 1.0' in metrics
    assert f'{catalog.DRIVEN_BROKERS.name}{{mode="migrating"}}' in metrics
    assert catalog.MIGRATING_ZK_BROKER_COUNT.name in metrics
    code, headers, html = fetch(url)
    assert code == 200 and "script-src 'sha256-" in headers["Content-Security-Policy"]
    assert '<td class="current">brokers-migration</td>' in html
    dom = dump_dom(url, budget_ms=4500)  # past the page's own refresh, under its CSP
    assert 'data-broker="1" data-mode="migrating"' in dom and "<main" in dom, dom[-2000:]


def committed(c: DrivenCluster) -> dict[object, int]:
    """The consumer group's committed offset of each partition."""
    admin = KafkaAdminClient(bootstrap_servers=c.bootstrap)
    try:
        offsets = admin.list_group_offsets({GROUP: None})[GROUP]
    finally:
        admin.close()
    return {tp: o.offset for tp, o in offsets.items()}


def _reassign(c: DrivenCluster) -> Path:
    """Partition moving-0 moved from brokers 1, 2 to 2, 3, held in flight by a 1 B/s
    throttle (Kafka's own kafka-reassign-partitions)."""
    plan = c.base / "reassign.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": MOVING, "partition": 0, "replicas": [2, 3]},
    ]}))  # fmt: skip
    _tool(c, "--execute", "--reassignment-json-file", str(plan), "--throttle", "1")
    return plan


def _cancel(c: DrivenCluster, plan: Path) -> None:
    _tool(c, "--cancel", "--reassignment-json-file", str(plan))


def _tool(c: DrivenCluster, *args: str) -> None:
    kafka_release("3.9.2").run_tool(
        "reassign-partitions", "--bootstrap-server", c.bootstrap, *args, work_dir=c.base
    )
