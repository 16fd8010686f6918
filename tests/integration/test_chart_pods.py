"""What the chart's pods run, run here for real: each rendered init script (its
ConfigMap's files and its shell, with the pod's mount paths moved under a temporary
directory) against a real ZooKeeper, then the real process on the file it produced — a
controller formats its storage from ZooKeeper's /cluster/id, leads its one-voter quorum
and reports PRE_MIGRATION on its metrics endpoint; a broker registers in ZooKeeper, or
becomes a KRaft-mode broker config, as the phase says. The pods' readiness and liveness
probes, asked of the live processes as the kubelet would (the rendered path, on the
rendered port), answer 200 once the controller leads and the broker is registered."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from migration.common.ports import unused_port
from migration.common.properties import read_properties
from migration.controller.storage import read_storage
from migration.local import seed
from migration.local.seed import ClusterSpec
from migration.zk import paths
from migration.zk.client import ZkClient
from tests.broker_harness import eventually
from tests.tools import CHART, ROOT, run

MOUNTS = ("/etc/zk2kraft", "/var/run/zk2kraft", "/var/lib/zk2kraft")


class Pod:
    """One pod of a rendered StatefulSet, its mounts under ``root``."""

    def __init__(self, docs: list[dict[str, Any]], component: str, root: Path) -> None:
        kinds = {(d["kind"], d["metadata"]["name"]): d for d in docs}
        self.sts = kinds["StatefulSet", f"kafka-zk2kraft-{component}"]
        self.config = kinds["ConfigMap", f"kafka-zk2kraft-{component}"]["data"]
        self.hostname = f"kafka-zk2kraft-{component}-1"
        self.root = root
        self.dirs = {m: root / m.strip("/").replace("/", "_") for m in MOUNTS}
        for d in self.dirs.values():
            d.mkdir(parents=True, exist_ok=True)
        for name, text in self.config.items():
            (self.dirs["/etc/zk2kraft"] / name).write_text(self.localized(text))

    def localized(self, text: str) -> str:
        for mount, here in self.dirs.items():
            text = text.replace(mount, str(here))
        return text

    def init(self) -> subprocess.CompletedProcess[str]:
        (init,) = self.sts["spec"]["template"]["spec"]["initContainers"]
        env = {e["name"]: e["value"] for e in init["env"]}
        script = self.localized(init["args"][0])
        return subprocess.run(
            ["sh", "-c", script],
            env={
                **os.environ,
                **env,
                "HOSTNAME": self.hostname,
                "PATH": f"{ROOT / '.venv/bin'}:{os.environ['PATH']}",
            },
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    def rendered(self, name: str) -> dict[str, str]:
        return read_properties(self.dirs["/var/run/zk2kraft"] / name)

    def start(self) -> subprocess.Popen[bytes]:
        (container,) = self.sts["spec"]["template"]["spec"]["containers"]
        log = (self.root / "process.log").open("wb")
        return subprocess.Popen(
            [sys.executable, "-m", "migration.cli.main", *map(self.localized, container["args"])],
            stdout=log,
            stderr=subprocess.STDOUT,
        )


def render(phase: str, zk_connect: str, **values: str) -> list[dict[str, Any]]:
    sets = {
        "migration.phase": phase,
        "zookeeper.connect": zk_connect,
        "controllers.replicas": "2",
        "controllers.port": str(unused_port()),
        "brokers.port": str(unused_port()),
        "brokers.internalPort": str(unused_port()),
        "metrics.port": str(unused_port()),
        **values,
    }
    done = run(
        "helm", "template", "kafka", str(CHART), "-n", "streaming",
        *(f"--set={k}={v}" for k, v in sets.items()),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def metrics(port: str) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
        text: str = answer.read().decode()
    return text


def probe(pod: Pod, kind: str) -> tuple[int, dict[str, Any]]:
    """The pod's ``readinessProbe`` or ``livenessProbe`` (an httpGet on a named port)
    sent to its process here: the status and the JSON body."""
    (container,) = pod.sts["spec"]["template"]["spec"]["containers"]
    get = container[kind]["httpGet"]
    port = {p["name"]: p["containerPort"] for p in container["ports"]}[get["port"]]
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{get['path']}", timeout=5) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def stop(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@pytest.fixture
def seeded(zk: ZkClient, zk_connect: str) -> Iterator[str]:
    snap = seed.generate(ClusterSpec(brokers=3, topics=2, partitions=4))
    seed.write(zk, seed.without_registrations(snap))
    yield zk_connect


def test_a_controller_pod_formats_from_zookeeper_and_waits_for_brokers(
    seeded: str, zk: ZkClient, tmp_path: Path
) -> None:
    pod = Pod(render("controllers", seeded), "controller", tmp_path)
    first = pod.init()
    assert first.returncode == 0, first.stdout + first.stderr
    props = pod.rendered("controller.properties")
    assert props["node.id"] == "3001"  # ordinal 1 + idOffset 3000
    assert props["zookeeper.metadata.migration.enable"] == "true"
    raw, _ = zk.get(paths.CLUSTER_ID)
    storage = read_storage(Path(props["metadata.log.dir"]))
    assert storage is not None and storage.node_id == 3001
    assert storage.cluster_id in raw.decode()
    again = pod.init()  # a restarted pod formats again: harmless
    assert again.returncode == 0 and "already formatted" in again.stdout, again.stderr
    # a one-voter quorum of this pod, so it can lead alone (the rendered voters name two)
    port = props["listeners"].rsplit(":", 1)[1]
    conf = pod.dirs["/var/run/zk2kraft"] / "controller.properties"
    conf.write_text(
        conf.read_text().replace(props["controller.quorum.voters"], f"3001@127.0.0.1:{port}")
    )
    controller = pod.start()
    try:
        text = eventually(
            lambda: 'phase="WAIT_FOR_BROKERS"} 1.0' in (t := metrics(props["metrics.port"])) and t,
            90,
            "controller waiting for brokers",
        )
        assert "kafka_controller_kafkacontroller_zkmigrationstate 2.0" in text
        assert "kafka_controller_kafkacontroller_migrationstate 2.0" in text  # Eligible
        ready = eventually(lambda: (a := probe(pod, "readinessProbe"))[0] == 200 and a, 30, "ready")
        assert ready[1]["reason"] == "the leader and active controller", ready
        assert probe(pod, "livenessProbe")[0] == 200
    finally:
        stop(controller)


def test_finalizing_renders_controllers_without_zookeeper(seeded: str, tmp_path: Path) -> None:
    pod = Pod(render("kraft", seeded, clusterId="AAAAAAAAAAAAAAAAAAAAAA"), "controller", tmp_path)
    done = pod.init()
    assert done.returncode == 0, done.stdout + done.stderr
    props = pod.rendered("controller.properties")
    assert props["zookeeper.metadata.migration.enable"] == "false"
    assert "zookeeper.connect" not in props


def test_a_zookeeper_mode_broker_pod_registers(seeded: str, zk: ZkClient, tmp_path: Path) -> None:
    pod = Pod(render("controllers", seeded), "broker", tmp_path)
    done = pod.init()
    assert done.returncode == 0, done.stdout + done.stderr
    props = pod.rendered("server.properties")
    assert props["broker.id"] == "1" and "zookeeper.metadata.migration.enable" not in props
    assert "kafka-zk2kraft-broker-1.kafka-zk2kraft-broker-headless" in props["advertised.listeners"]
    broker = pod.start()
    try:
        eventually(lambda: zk.kazoo.exists(paths.broker(1)), 90, "broker 1 registered")
        text = eventually(lambda: metrics(props["metrics.port"]), 30, "broker metrics")
        assert "kafka_server_kafkaserver_metadatatype 1.0" in text
        ready = eventually(lambda: (a := probe(pod, "readinessProbe"))[0] == 200 and a, 30, "ready")
        assert ready[1]["reason"] == "registered and serving" and ready[1]["broker_id"] == 1
        assert probe(pod, "livenessProbe")[0] == 200
    finally:
        stop(broker)


@pytest.mark.parametrize(
    ("phase", "expected"),
    [
        ("migration", {"broker.id": "1", "zookeeper.metadata.migration.enable": "true"}),
        ("kraft-brokers", {"node.id": "1", "process.roles": "broker"}),
    ],
)
def test_broker_pods_rewrite_their_config_for_the_phase(
    seeded: str, tmp_path: Path, phase: str, expected: dict[str, str]
) -> None:
    pod = Pod(render(phase, seeded), "broker", tmp_path)
    done = pod.init()
    assert done.returncode == 0, done.stdout + done.stderr
    props = pod.rendered("server.properties")
    assert expected.items() <= props.items()
    assert props["controller.quorum.voters"] == pod.config["controller.quorum.voters"]
    assert props["controller.listener.names"] == "CONTROLLER"
    if phase == "kraft-brokers":
        assert "zookeeper.connect" not in props and "broker.id" not in props
