"""``zk2kraft kafka-node start|stop|restart|status`` on a real Apache Kafka 3.9.2 KRaft
node (:mod:`migration.local.kafka_service`): idempotent as ``systemctl``, detached from
its caller, never signalling a process its pid file names by accident, and a node that
cannot start reported with its log's tail."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from migration.kafka.client import KafkaConnection
from migration.local import kafka_service
from migration.local.kafka import KafkaNode, port_open
from migration.local.kafka_release import kafka_release, random_cluster_id
from tests.support import zk2kraft

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaNode]:
    """A formatted single-node KRaft node (broker and controller); its server.properties
    is what the CLI is given. Stopped after the module, whatever a test left."""
    built = KafkaNode.kraft(kafka_release("3.9.2"), tmp_path_factory.mktemp("kafka-node"),
                            heap_mb=384)  # fmt: skip
    built.format(random_cluster_id())
    yield built
    kafka_service.stop(built.config_path)


def node_cli(command: str, props: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return zk2kraft("kafka-node", command, "--properties", str(props), *args, timeout=180)


def started_pid(command: str, props: Path, *args: str) -> int:
    done = node_cli(command, props, "--json", *args)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["running"] is True
    pid: int = answer["pid"]
    return pid


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, exited but not reaped, does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def command_line(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_text().split("\0")


def started_lines(node: KafkaNode) -> int:
    log = node.log_path
    return log.read_text().count("Kafka Server started") if log.exists() else 0


def serves(node: KafkaNode) -> bool:
    with socket.create_connection(("127.0.0.1", node.broker_port or 0), timeout=5):
        return True


def test_start_status_restart_stop(node: KafkaNode) -> None:
    props = node.config_path
    before, starts = props.read_bytes(), started_lines(node)
    try:
        pid = started_pid("start", props)
        assert serves(node)
        assert (node.base_dir / "kafka.pid").read_text().strip() == str(pid)
        assert started_pid("start", props) == pid  # idempotent: the running node
        status = node_cli("status", props, "--json")
        assert status.returncode == 0
        assert json.loads(status.stdout) == {"properties": str(props), "running": True, "pid": pid}

        assert f"-Xmx{kafka_service.HEAP_MB}m" in command_line(pid)
        with KafkaConnection("127.0.0.1", node.broker_port or 0, 30) as conn:
            bare = conn.cluster_metadata()  # Kafka's own answer to a no-topic Metadata v12
        assert len(bare.topics) == 0 and bare.cluster_id
        assert [b.node_id for b in bare.brokers] == [node.node_id]
        new = started_pid("restart", props, "--heap-mb", "320")
        assert new != pid and not alive(pid) and alive(new)
        assert "-Xmx320m" in command_line(new)
        assert serves(node)
        assert started_lines(node) == starts + 2
    finally:
        stopped = node_cli("stop", props)
    assert stopped.returncode == 0, stopped.stderr
    assert f"stopped pid {new}" in stopped.stdout
    assert not alive(new) and not (node.base_dir / "kafka.pid").exists()
    again = node_cli("stop", props)  # idempotent: nothing runs
    assert (again.returncode, again.stdout.strip()) == (0, f"Kafka node {props}: not running")
    status = node_cli("status", props)
    assert status.returncode == 1, status.stderr
    assert props.read_bytes() == before  # read, never written


def test_node_outlives_its_caller(node: KafkaNode) -> None:
    props, pid_file = node.config_path, node.base_dir / "kafka.pid"
    caller = subprocess.Popen(
        [sys.executable, "-m", "migration.cli.main", "kafka-node", "start", "--properties",
         str(props)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not pid_file.exists():  # the JVM launched; the caller waits for it to start
            assert caller.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        caller.kill()  # SIGKILL mid-start: nothing of the caller's runs after this
        caller.wait()
        pid = int(pid_file.read_text())
        time.sleep(1)
        assert alive(pid)
        assert started_pid("start", props) == pid  # the same node: not started again
        deadline = time.monotonic() + 60
        while not port_open(("127.0.0.1", node.broker_port or 0)):
            assert alive(pid) and time.monotonic() < deadline
            time.sleep(0.2)
    finally:
        caller.kill()
        caller.wait()
        assert node_cli("stop", props).returncode == 0
    assert not alive(pid)


def test_a_stale_pid_file_is_never_signalled(node: KafkaNode) -> None:
    props, pid_file = node.config_path, node.base_dir / "kafka.pid"
    bystander = subprocess.Popen(["sleep", "60"])
    try:
        pid_file.write_text(f"{bystander.pid}\n")  # a recycled pid: not the node's process
        assert node_cli("status", props).returncode == 1
        pid = started_pid("start", props)
        assert pid != bystander.pid and bystander.poll() is None
        assert pid_file.read_text().strip() == str(pid)
        assert node_cli("stop", props).returncode == 0
        assert not alive(pid) and bystander.poll() is None
        pid_file.write_text(f"{bystander.pid}\n")
        stop = node_cli("stop", props)  # nothing of this node runs: the file goes, sleep stays
        assert (stop.returncode, bystander.poll()) == (0, None), stop.stderr
        assert not pid_file.exists()
    finally:
        kafka_service.stop(props)
        bystander.kill()
        bystander.wait()


def test_a_node_that_cannot_start(node: KafkaNode, tmp_path: Path) -> None:
    props = tmp_path / "server.properties"
    text = node.config_path.read_text().replace("node.id=1", "node.id=x")
    props.write_text(text)
    try:
        done = node_cli("start", props)
        assert done.returncode == 2, done.stdout
        first, *details = done.stderr.splitlines()
        assert first.startswith(f"error: Kafka node {props} exited with 1; see {tmp_path}")
        assert any("Invalid value x for configuration" in line for line in details), done.stderr
        assert not (tmp_path / "kafka.pid").exists()
        as_json = json.loads(node_cli("start", props, "--json").stdout)["error"]
        assert as_json["exit_code"] == 2 and as_json["details"]
        assert node_cli("status", props).returncode == 1
    finally:
        kafka_service.stop(props)


def test_unreadable_listeners_name_the_file(tmp_path: Path) -> None:
    props = tmp_path / "server.properties"
    props.write_text("node.id=1\nlisteners=PLAINTEXT://127.0.0.1\n")
    done = node_cli("start", props)
    assert done.returncode == 2
    assert done.stderr.startswith(f"error: {props}: invalid configuration"), done.stderr
    assert "listeners" in done.stderr
    assert os.listdir(tmp_path) == ["server.properties"]  # nothing launched


def test_a_start_that_times_out_kills_its_process(node: KafkaNode) -> None:
    props = node.config_path
    try:
        done = node_cli("start", props, "--timeout", "0.5", "--json")
        assert done.returncode == 2
        failure = json.loads(done.stdout)["error"]
        assert failure["code"] == "TIMED_OUT", failure
        assert failure["message"].startswith(f"Kafka node {props} not ready after 0.5s")
        assert not (node.base_dir / "kafka.pid").exists()
        assert running_with(props) == []  # SIGKILLed, not left behind
    finally:
        kafka_service.stop(props)


def running_with(props: Path) -> list[int]:
    """The live processes whose arguments hold ``props``."""
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and alive(int(proc.name)):
            try:
                args = (proc / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if os.fsencode(props) in args:
                pids.append(int(proc.name))
    return pids
