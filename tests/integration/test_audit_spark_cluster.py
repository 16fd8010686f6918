"""``zk2kraft audit`` on a real standalone Spark cluster: a master and two workers, each
its own JVM started with pyspark's own launcher, the audit's executors on the workers
reading the rows the driver handed them through a shared ``--work-dir`` (one machine:
a plain directory stands for the volume every node mounts)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from migration.common.ports import unused_port
from migration.local import seed
from migration.zk.client import ZkClient
from tests.audit_drift import found, inject
from tests.broker_harness import eventually
from tests.integration.test_audit import SUBMIT, dry_run_copy, spark_submit
from tests.support import zk2kraft
from tests.tools import require_tool

SPEC = seed.ClusterSpec(topics=6, partitions=12, delegation_tokens=1, scram_users=2)
"""Small, but with every kind inject() drifts (four topics, ACLs, quotas, SCRAM)."""


SPARK_DEFAULTS = """\
spark.executor.memory 512m
spark.executor.extraJavaOptions -XX:TieredStopAtLevel=1 -XX:+UseSerialGC
spark.driver.extraJavaOptions -XX:TieredStopAtLevel=1 -XX:+UseSerialGC
spark.sql.shuffle.partitions 2
spark.locality.wait 0
"""
"""The drivers' settings, as an operator's ``spark-defaults.conf`` gives them: executors
that fit the workers, and JVMs and stages sized for a small test machine (a quick JIT,
a shuffle partition per core, no waiting for a cached block's executor)."""
DAEMON_JAVA_OPTS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


@dataclass
class SparkCluster:
    master: str
    """``spark://127.0.0.1:P``."""
    web: str
    """The master's web UI (its ``/json`` state)."""
    worker_dirs: list[Path]

    def state(self) -> dict[str, Any]:
        """The master's state; OSError while its web UI is not (yet) answering whole."""
        with urllib.request.urlopen(f"{self.web}/json", timeout=10) as answer:
            body = answer.read()
        try:
            state: dict[str, Any] = json.loads(body)
        except ValueError as exc:
            raise ConnectionError(f"the master's /json is not JSON yet: {body[:200]!r}") from exc
        return state


@pytest.fixture(scope="module")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkCluster]:
    """A standalone master and two workers (1 core, 512 MiB each); Spark's settings for
    the drivers the tests start (executors of 512 MiB, to fit the workers) come from
    ``SPARK_CONF_DIR``, as an operator's would."""
    spark_home = Path(require_tool("spark"))  # pyspark's launcher and jars
    root = tmp_path_factory.mktemp("spark-cluster")
    conf = root / "conf"
    conf.mkdir()
    (conf / "spark-defaults.conf").write_text(SPARK_DEFAULTS)
    port, web_port = unused_port(), unused_port()
    master, web = f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{web_port}"
    env = {
        "SPARK_HOME": str(spark_home),
        "SPARK_CONF_DIR": str(conf),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_DAEMON_MEMORY": "256m",
        "SPARK_DAEMON_JAVA_OPTS": DAEMON_JAVA_OPTS,
    }
    spark_class = str(spark_home / "bin" / "spark-class")
    commands = [
        [spark_class, "org.apache.spark.deploy.master.Master",
         "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(web_port)],
    ]  # fmt: skip
    worker_dirs = [root / f"worker{i}" for i in range(2)]
    for work in worker_dirs:
        commands.append(
            [spark_class, "org.apache.spark.deploy.worker.Worker", master, "--host", "127.0.0.1",
             "--cores", "1", "--memory", "512m", "--webui-port", str(unused_port()),
             "--work-dir", str(work)]
        )  # fmt: skip
    procs: list[subprocess.Popen[bytes]] = []
    cluster = SparkCluster(master, web, worker_dirs)

    def launch(command: list[str]) -> None:
        with open(root / f"jvm{len(procs)}.log", "wb") as out:
            procs.append(
                subprocess.Popen(
                    command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
                )
            )

    def state() -> dict[str, Any]:
        for i, proc in enumerate(procs):
            if proc.poll() is not None:  # not retried by eventually(): it will not come back
                said = (root / f"jvm{i}.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"{commands[i][1]} exited: {said}")
        return cluster.state()

    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)  # the audits' drivers (children of this process) too
        try:
            # The master first: a worker that finds no master retries only seconds later.
            launch(commands[0])
            eventually(lambda: state()["status"] == "ALIVE", 120, "the Spark master up")
            for command in commands[1:]:
                launch(command)
            eventually(
                lambda: [w["state"] for w in state()["workers"]].count("ALIVE") == 2,
                120,
                "two Spark workers registered",
            )
            yield cluster
        finally:
            for proc in procs:
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGKILL)  # the JVM and its executors
                proc.wait(timeout=30)


def finished_audits(cluster: SparkCluster, count: int) -> list[dict[str, Any]]:
    """The master's completed ``zk2kraft-audit`` applications, once ``count`` are."""
    done: list[dict[str, Any]] = []

    def completed() -> bool:
        done[:] = [a for a in cluster.state()["completedapps"] if a["name"] == "zk2kraft-audit"]
        return len(done) == count

    eventually(completed, timeout_s=60, what=f"{count} audits completed on the master")
    return done


def test_the_audit_runs_on_a_standalone_cluster_and_finds_drift(
    spark_cluster: SparkCluster, zk: ZkClient, zk_connect: str, tmp_path: Path
) -> None:
    snap = seed.generate(SPEC)
    log_dir = dry_run_copy(zk, zk_connect, tmp_path, snap)
    shared = tmp_path / "shared"  # every worker reads it: the mount a real cluster shares
    where = ["--zk", zk_connect, "--log-dir", str(log_dir), "--work-dir", str(shared),
             "--password-encoder-secret-file", str(tmp_path / "secret")]  # fmt: skip

    clean = zk2kraft("audit", *where, "--spark-master", spark_cluster.master, "--json")
    assert clean.returncode == 0, clean.stdout + clean.stderr[-2000:]
    report = json.loads(clean.stdout)
    assert report["consistent"] is True
    assert report["rows"]["zookeeper"] == report["rows"]["kraft"] > 0

    # The same cluster under spark-submit (the chart's way): the drift is found exactly.
    drift = inject(zk.kazoo, snap)
    out = tmp_path / "out"  # the executors write differences.parquet: shared as well
    submitted = spark_submit(
        "--master", spark_cluster.master, str(SUBMIT), *where, "--json", "--samples", "1000",
        "--out", str(out),
    )  # fmt: skip
    assert submitted.returncode == 1, submitted.stdout + submitted.stderr[-3000:]
    assert found(json.loads(submitted.stdout)) == drift
    everything = pq.read_table(out / "differences.parquet").to_pylist()
    assert {(d["kind"], d["entity"], d["field"], d["difference"]) for d in everything} == drift
    assert not any(shared.iterdir()), "the hand-off files outlived the audit"

    # Both audits ran on the cluster: each application had an executor on each worker,
    # and its tasks there read the hand-off from the shared directory (their own logs).
    apps = finished_audits(spark_cluster, 2)
    for app in apps:
        assert app["state"] == "FINISHED" and app["cores"] == 2, app
        per_worker = [sorted((w / app["id"]).iterdir()) for w in spark_cluster.worker_dirs]
        assert all(per_worker), per_worker  # an executor (its own directory) on each
        executor_dirs = [d for dirs in per_worker for d in dirs]
        logs = "".join((d / "stderr").read_text(errors="replace") for d in executor_dirs)
        assert f"Reading File path: {shared.as_uri()}/zk2kraft-audit-" in logs, logs[-2000:]
