"""``zk2kraft audit``: ZooKeeper against the metadata log on Spark (local[2]), from a
dry-run copy and from a live migration's quorum; drift written behind the project's back
with plain kazoo is found exactly, write-behind lag is not, secrets never show."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from migration.bridge.sync import full_sync
from migration.bridge.writer import ZkWriter
from migration.controller.client import ControllerClient
from migration.image.log_check import check_log
from migration.local import seed
from migration.local.zookeeper import EmbeddedZooKeeper
from migration.log.metadata_log import MetadataLog
from migration.proto import controller_pb2 as cpb
from migration.proto.metadata_pb2 import MetadataRecord
from migration.records.uuids import new_uuid, uuid_text
from migration.zk import paths
from migration.zk.client import ZkClient
from migration.zk.fence import claim, read_migration
from migration.zk.model import passwords
from migration.zk.tree_read import ZkSnapshot
from tests.audit_drift import found, inject
from tests.broker_harness import eventually
from tests.migration_harness import MigrationRig, migration_rig
from tests.page_checks import page_json
from tests.support import EVERYTHING, zk2kraft
from tests.tools import require_tool

SPARK = 300.0
"""The hang guard of an audit run: each starts Spark's JVM (over two minutes seen in a
loaded CI run)."""
pytestmark = pytest.mark.timeout(900)  # the tests that audit twice or more


@pytest.fixture(autouse=True)
def _spark() -> None:
    """Every audit here runs on Spark: without pyspark or Java, a skip saying so (a
    failure in CI)."""
    require_tool("spark")


SECRET = seed.SEED_PASSWORD_ENCODER_SECRET
SUBMIT = Path(__file__).parents[2] / "migration" / "cli" / "spark_submit.py"


def spark_submit(*args: str) -> subprocess.CompletedProcess[str]:
    """The virtualenv's ``spark-submit`` with ``args``, its driver on this Python."""
    venv_bin = Path(sys.executable).parent
    return subprocess.run(
        [str(venv_bin / "spark-submit"), *args],
        capture_output=True, text=True, timeout=240, check=False,
        env={**os.environ, "PYSPARK_PYTHON": sys.executable,
             "PATH": f"{venv_bin}:{os.environ['PATH']}"},
    )  # fmt: skip


def secrets_of(snap: ZkSnapshot) -> list[str]:
    """Every secret the seeded cluster holds, in the forms it could leak in."""
    out = [SECRET]
    for creds in snap.scram.values():
        for c in creds.values():
            for raw in (c.salt, c.stored_key, c.server_key):
                out += [base64.b64encode(raw).decode(), raw.hex()]
    for config in snap.broker_configs.values():
        for stored in config.values():
            if passwords.is_encoded(stored):
                out += [stored, passwords.decode(stored, SECRET)]
    return [s for s in out if len(s) >= 8]


def assert_no_secrets(snap: ZkSnapshot, *texts: str) -> None:
    secrets = secrets_of(snap)
    assert len(secrets) > 10
    for text in texts:
        leaked = [s for s in secrets if s in text]
        assert not leaked, f"{len(leaked)} secret(s) in the audit's output"


def parquet_text(directory: Path) -> str:
    return json.dumps(pq.read_table(directory).to_pylist())


def dry_run_copy(
    zk: ZkClient, zk_connect: str, tmp_path: Path, snap: ZkSnapshot | None = None
) -> Path:
    """``snap`` (default: a small seeded cluster) written to ZooKeeper and copied by
    ``migrate --dry-run``; the copy's log dir (the secret is in ``tmp_path/secret``)."""
    seed.write(zk, snap or seed.generate(seed.ClusterSpec(topics=2, partitions=4)))
    log_dir = tmp_path / "log"
    secret_file = tmp_path / "secret"
    secret_file.write_text(SECRET)
    copied = zk2kraft(
        "migrate", "--dry-run", "--zk", zk_connect, "--log-dir", str(log_dir),
        "--password-encoder-secret-file", str(secret_file),
    )  # fmt: skip
    assert copied.returncode == 0, copied.stderr
    return log_dir


# make test-long (two Spark audits and three exports, about 100 s): make test audits a live
# migration (below), Kafka's own migration (test_kafka_own_migration.py) and ZooKeeper's
# files (test_zk_offline_cli.py), and finds drift on a standalone Spark cluster
@pytest.mark.long
def test_a_dry_run_copy_then_lag_then_drift(zk: ZkClient, zk_connect: str, tmp_path: Path) -> None:
    snap = seed.generate(EVERYTHING)
    seed.write(zk, snap)
    secret_file = tmp_path / "secret"
    secret_file.write_text(SECRET + "\n")
    log_dir = tmp_path / "log"
    secret = ["--password-encoder-secret-file", str(secret_file)]
    where = ["--zk", zk_connect, "--log-dir", str(log_dir)]
    copied = zk2kraft("migrate", "--dry-run", *where, *secret)
    assert copied.returncode == 0, copied.stderr

    # The copy written out in Kafka's own format, audited as a real Kafka migration is.
    kafka = tmp_path / "kafka-metadata"
    exported = zk2kraft(
        "log", "export", "--log-dir", str(log_dir), "--format", "kafka", "--out", str(kafka),
        "--cluster-id", uuid_text(new_uuid()),
    )  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    clean = zk2kraft("audit", "--zk", zk_connect, "--log-dir", str(kafka), *secret, timeout=SPARK)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert clean.stdout.startswith("CONSISTENT: ZooKeeper vs the metadata log at offset")
    assert "not compared: 2 topics pending deletion" in clean.stdout

    # ZooKeeper synced to the copy and /migration at its offset; then the log moves on:
    # committed in KRaft, not yet written behind (a new topic, an ISR shrunk).
    image = check_log(log_dir).metadata
    full_sync(ZkWriter(zk, secret=SECRET), claim(zk, 3000, 1), image)
    name, pid = sorted(image.topic_ids)[0], 0
    with MetadataLog(log_dir) as log:
        new_topic, isr = MetadataRecord(), MetadataRecord()
        new_topic.topic_record.name, new_topic.topic_record.topic_id = "not-yet-behind", new_uuid()
        isr.partition_change_record.topic_id = image.topic_ids[name]
        isr.partition_change_record.partition_id = pid
        topic = image.topic(name)
        assert topic is not None
        isr.partition_change_record.isr.ids[:] = topic.partitions[pid].isr[:1]
        log.append([new_topic, isr], epoch=max(image.epoch, 1))
        log_end = log.end_offset
    drift = inject(zk.kazoo, snap)
    # zk diff finds the same drift against Kafka's format, at /migration's offset.
    at_offset = tmp_path / "kafka-at-offset"
    zk2kraft(
        "log", "export", "--log-dir", str(log_dir), "--format", "kafka", "--out", str(at_offset),
        "--offset", str(image.offset), "--cluster-id", uuid_text(new_uuid()),
    )  # fmt: skip
    diffed = zk2kraft("zk", "diff", "--zk", zk_connect, "--log-dir", str(at_offset), "--json",
                      *secret)  # fmt: skip
    assert diffed.returncode == 1, diffed.stderr
    diff = json.loads(diffed.stdout)
    assert diff["image_offset"] == image.offset and not diff["in_sync"]
    changed = json.dumps(diff["changes"])
    assert all(
        entity.split("-")[0] in changed for kind, entity, _, _ in drift if kind == "partition"
    )

    out = tmp_path / "out"
    audited = zk2kraft(
        "audit", *where, *secret, "--json", "--samples", "1000", "--out", str(out), timeout=SPARK
    )
    assert audited.returncode == 1, audited.stderr
    report = json.loads(audited.stdout)
    migration = read_migration(zk)
    assert migration is not None
    assert report["offset"] == migration[0].kraft_metadata_offset == image.offset
    assert report["offset_source"] == "/migration" and report["log_end_offset"] == log_end
    assert report["consistent"] is False
    assert found(report) == drift  # exactly the drift: the lag is not reported
    assert sum(report["differences"].values()) == len(drift)
    assert report["by_difference"] == {
        k: sum(1 for d in drift if d[3] == k)
        for k in ("only_in_zookeeper", "only_in_kraft", "value_differs")
    }
    # --out: every difference as Parquet, the samples as JSON lines, the report.
    everything = pq.read_table(out / "differences.parquet").to_pylist()
    assert {(d["kind"], d["entity"], d["field"], d["difference"]) for d in everything} == drift
    samples = (out / "samples.jsonl").read_text().splitlines()
    assert len(samples) == len(drift)
    assert json.loads((out / "report.json").read_text())["differences"] == report["differences"]
    assert_no_secrets(
        snap,
        audited.stdout,
        audited.stderr,
        clean.stdout,
        (out / "samples.jsonl").read_text(),
        (out / "report.json").read_text(),
        parquet_text(out / "differences.parquet"),
    )

    # The same job under spark-submit, unchanged.
    submitted = spark_submit(
        "--master", "local[2]", str(SUBMIT), *where, *secret, "--json", "--samples", "1000"
    )  # fmt: skip
    assert submitted.returncode == 1, submitted.stderr[-2000:]
    assert found(json.loads(submitted.stdout)) == drift


def test_a_live_migration_audited_from_the_quorum_and_from_a_log_dir(
    zk_server: EmbeddedZooKeeper, tmp_path: Path
) -> None:
    spec = seed.ClusterSpec(
        topics=6, partitions=24, delegation_tokens=2, scram_users=3, acl_resources=6,
        quota_entities=4,
    )  # fmt: skip
    with migration_rig(zk_server, tmp_path, spec, metrics=True) as rig:
        status = rig.wait_phase("DUAL_WRITE")
        eventually(lambda: rig.status()["zk_write_behind_lag"] == 0, what="ZooKeeper caught up")
        quorum = ["--zk", rig.zk_connect, "--bootstrap-controller", ",".join(rig.quorum.bootstrap)]
        # Audited while admin changes keep landing: committed in KRaft, written behind
        # meanwhile, never reported as drift.
        with config_changes(rig) as changed:
            clean = zk2kraft("--log-level", "INFO", "audit", *quorum, "--json", timeout=SPARK)
        assert clean.returncode == 0, clean.stdout + clean.stderr
        assert changed[0] > 0
        # Spark's JVM is forked before the fetch opens a gRPC channel: gRPC and fork
        # do not mix (the child may die in gRPC's fork handlers, JAVA_GATEWAY_EXITED).
        lines = clean.stderr.splitlines()
        launched = next(i for i, line in enumerate(lines) if "Spark's JVM launched" in line)
        fetching = next(i for i, line in enumerate(lines) if "fetching the log from" in line)
        assert launched < fetching, clean.stderr[-3000:]
        report = json.loads(clean.stdout)
        first, last = report["offset_window"]
        assert first <= last == report["offset"] < report["log_end_offset"]
        eventually(lambda: rig.status()["zk_write_behind_lag"] == 0, what="ZooKeeper caught up")
        migration = read_migration(rig.zk)
        assert migration is not None
        assert report["offset"] <= migration[0].kraft_metadata_offset
        assert report["offset_source"] == "/migration"
        assert report["rows"]["zookeeper"] == report["rows"]["kraft"] > 0
        assert report["not_compared"]["broker_registrations"]["count"] == len(rig.cluster.brokers)
        # the summary went to the controllers read from: the live page shows it
        seen = page_json(rig, status["active_controller"])["audit"]
        assert seen["consistent"] is True and seen["differences"] == 0
        assert (seen["offset"], seen["log_end_offset"]) == (
            report["offset"],
            report["log_end_offset"],
        )
        assert "audit's summary did not reach" not in clean.stderr
        # The leader did not count the audit's fetches as an observer's.
        described = json.loads(
            zk2kraft("quorum", "describe", "--bootstrap-controller",
                     rig.quorum.bootstrap[0], "--json").stdout
        )  # fmt: skip
        assert all(o["replica_id"] >= 0 for o in described.get("observers", []))

        drift = inject(rig.zk.kazoo, rig.seeded)
        active = status["active_controller"]
        log_dir = rig.quorum.root / f"log{active}"
        audited = zk2kraft(
            "audit", "--zk", rig.zk_connect, "--log-dir", str(log_dir), "--json",
            "--samples", "1000", timeout=SPARK,
        )  # fmt: skip
        assert audited.returncode == 1, audited.stderr
        found_now: dict[str, Any] = json.loads(audited.stdout)
        assert found(found_now) == drift


@contextmanager
def config_changes(rig: MigrationRig) -> Iterator[list[int]]:
    """A topic config altered through the quorum, a change every 0.2 s (back to back they
    kept the two cores busy with the dual-write and the brokers' notifications, starving
    the audit's Spark), until the block ends; yields [changes acknowledged]."""
    topic = sorted(t for t in rig.seeded.topics if t not in rig.seeded.pending_deletions)[0]
    done, stop = [0], threading.Event()

    def alter() -> None:
        client = ControllerClient(rig.quorum.bootstrap)
        try:
            while not stop.is_set():
                request = cpb.IncrementalAlterConfigsRequest()
                resource = request.resources.add(resource_type=2, resource_name=topic)
                resource.configs.add(
                    name="retention.ms", config_operation=0, value=str(60_000 + done[0])
                )
                client.call("IncrementalAlterConfigs", request)
                done[0] += 1
                stop.wait(0.2)
        finally:
            client.close()

    worker = threading.Thread(target=alter, daemon=True)
    worker.start()
    try:
        yield done
    finally:
        stop.set()
        worker.join(timeout=60)


def test_an_audit_that_cannot_compare_says_why_in_one_line(
    zk: ZkClient, zk_connect: str, tmp_path: Path
) -> None:
    not_a_log = zk2kraft("audit", "--zk", zk_connect, "--log-dir", str(tmp_path))
    assert not_a_log.returncode == 2
    assert len(not_a_log.stderr.strip().splitlines()) == 1, not_a_log.stderr
    log_dir = dry_run_copy(zk, zk_connect, tmp_path)
    # /migration claims more of the log than this one holds.
    claim(zk, 3000, 1)
    zk.kazoo.set(
        paths.MIGRATION,
        json.dumps({"version": 0, "kraft_controller_id": 3000, "kraft_controller_epoch": 1,
                    "kraft_metadata_offset": 10_000_000, "kraft_metadata_epoch": 1}).encode(),
    )  # fmt: skip
    ahead = zk2kraft("audit", "--zk", zk_connect, "--log-dir", str(log_dir))
    assert ahead.returncode == 2
    assert "before offset 10000000" in ahead.stderr and len(ahead.stderr.strip().splitlines()) == 1


def test_an_audit_whose_spark_does_not_start_quotes_its_jvm(
    zk: ZkClient, zk_connect: str, tmp_path: Path
) -> None:
    """Spark's JVM that exits before it starts (here JAVA_HOME names no Java) is named in
    the audit's one-line error in the JVM's own words (its log is in a temporary
    directory the audit removes)."""
    log_dir = dry_run_copy(zk, zk_connect, tmp_path)
    no_java = tmp_path / "no-java"
    done = subprocess.run(
        [sys.executable, "-m", "migration.cli.main", "audit", "--zk", zk_connect,
         "--log-dir", str(log_dir)],
        env={**os.environ, "JAVA_HOME": str(no_java)},
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "Spark did not start" in done.stderr, done.stderr
    assert f"{no_java}/bin/java: No such file or directory" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_a_cluster_master_without_a_shared_work_dir_is_refused(tmp_path: Path) -> None:
    """On a master whose executors may run on other hosts the rows must go where they
    all read: without --work-dir (the driver's temporary directory) the audit refuses
    before it reads anything, naming the option and the storage that serves; a
    --work-dir no Arrow filesystem writes is refused as early, its credentials unshown."""
    where = ["--zk", "127.0.0.1:1", "--log-dir", str(tmp_path)]  # neither is reached
    refused = zk2kraft("audit", *where, "--spark-master", "spark://spark-master:7077")
    assert refused.returncode == 2, refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert "spark://spark-master:7077" in refused.stderr and "--work-dir" in refused.stderr
    assert "mounted at the same path on every Spark node" in refused.stderr
    assert "hdfs://" in refused.stderr and "s3://" in refused.stderr

    # Under spark-submit, its --master is held to the same rule before anything is read
    # (no SparkContext starts: nothing listens at that master).
    submitted = spark_submit("--master", "spark://127.0.0.1:1", str(SUBMIT), *where)
    assert submitted.returncode == 2, submitted.stdout + submitted.stderr
    # spark-submit's PythonRunner merges the driver's stderr into its stdout
    assert "error: Spark's master spark://127.0.0.1:1 runs executors" in submitted.stdout
    assert "give --work-dir DIR" in submitted.stdout

    s3a = "s3a://AKIAEXAMPLE:not-a-real-secret@bucket/zk2kraft"
    unwritable = zk2kraft("audit", *where, "--spark-master", "yarn", "--work-dir", s3a)
    assert unwritable.returncode == 2, unwritable.stderr
    assert "--work-dir s3a://<redacted>@bucket/zk2kraft" in unwritable.stderr
    assert "Arrow knows s3://" in unwritable.stderr
    assert "not-a-real-secret" not in unwritable.stderr and "AKIA" not in unwritable.stderr
