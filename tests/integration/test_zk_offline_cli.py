"""The read-only commands on ZooKeeper's own files (``--zk-data-dir``) answer as they do
on the live ensemble that wrote them, and write nothing under the directory."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from migration.bridge.sync import full_sync
from migration.bridge.writer import ZkWriter
from migration.image.log_check import check_log
from migration.local import seed
from migration.local.zookeeper import EmbeddedZooKeeper
from migration.zk.client import ZkClient
from migration.zk.fence import claim
from tests import kafka_written as kw
from tests.audit_drift import found, inject
from tests.support import EVERYTHING, zk2kraft
from tests.zk_files import dir_digest

SECRET = seed.SEED_PASSWORD_ENCODER_SECRET
TIMINGS = {"read_seconds", "write_seconds", "verify_seconds", "expected_copy_seconds"}


@pytest.fixture(scope="module")
def ensemble() -> Iterator[EmbeddedZooKeeper]:
    """A ZooKeeper of this module's own: its data directory holds only these trees."""
    with EmbeddedZooKeeper() as server:
        yield server


def without_timings(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {
            k: without_timings(v) for k, v in obj.items() if k not in TIMINGS | {"zk", "log_dir"}
        }
    if isinstance(obj, list):
        return [without_timings(v) for v in obj]
    return obj


def run_json(*args: str) -> tuple[int, Any]:
    result = zk2kraft(*args, "--json")
    assert result.returncode in (0, 1), result.stderr
    return result.returncode, without_timings(json.loads(result.stdout))


def test_every_read_command_answers_from_the_files_as_from_the_ensemble(
    ensemble: EmbeddedZooKeeper, tmp_path: Path
) -> None:
    connect = f"{ensemble.connect_string}/kafka"
    with ZkClient(connect) as client:
        client.ensure_chroot()
        kw.write(client, kw.kafka_35_tree())
        seeded = seed.generate(EVERYTHING)
        with ZkClient(f"{ensemble.connect_string}/seeded") as other:
            seed.write(other, seeded)  # a second cluster in the same ensemble
        secret_file = tmp_path / "secret"
        secret_file.write_text(SECRET)
        data_dir = ensemble.servers[0].data_dir
        secret = ["--password-encoder-secret-file", str(secret_file)]

        def answers(chroot: str, *where: str) -> list[tuple[int, Any]]:
            log_dir = tmp_path / f"log-{chroot.strip('/')}-{where[0].strip('-')}"
            return [
                run_json("preflight", *where),
                run_json("zk", "export-offsets", *where),
                run_json("migrate", "--dry-run", *where, "--log-dir", str(log_dir), *secret),
                run_json("zk", "diff", *where, "--log-dir", str(log_dir), *secret),
            ]

        chroots = ("/kafka", "/seeded")
        live = {c: answers(c, "--zk", f"{ensemble.connect_string}{c}") for c in chroots}
        before = dir_digest(data_dir)  # the live commands' sessions are in the log by now
        for chroot in chroots:
            files = answers(chroot, "--zk-data-dir", str(data_dir), "--zk-chroot", chroot)
            assert files == live[chroot]
        assert dir_digest(data_dir) == before  # read-only


def test_the_audit_reads_zookeepers_files(ensemble: EmbeddedZooKeeper, tmp_path: Path) -> None:
    """A copied, synced cluster drifts in ZooKeeper; the audit of the files finds exactly
    the drift, as the audit of the ensemble does."""
    connect = f"{ensemble.connect_string}/audited"
    with ZkClient(connect) as client:
        client.ensure_chroot()
        snap = seed.generate(seed.ClusterSpec(topics=6, partitions=24))
        seed.write(client, snap)
        log_dir, secret_file = tmp_path / "log", tmp_path / "secret"
        secret_file.write_text(SECRET)
        secret = ["--password-encoder-secret-file", str(secret_file)]
        copied = zk2kraft(
            "migrate", "--dry-run", "--zk", connect, "--log-dir", str(log_dir), *secret
        )
        assert copied.returncode == 0, copied.stderr
        image = check_log(log_dir).metadata
        full_sync(ZkWriter(client, secret=SECRET), claim(client, 3000, 1), image)
        drift = inject(client.kazoo, snap)
    files = ["--zk-data-dir", str(ensemble.servers[0].data_dir), "--zk-chroot", "/audited"]
    audited = zk2kraft(
        "audit", *files, "--log-dir", str(log_dir), *secret, "--json", "--samples", "100"
    )
    assert audited.returncode == 1, audited.stderr
    report = json.loads(audited.stdout)
    assert report["offset_source"] == "/migration"
    assert found(report) == drift


def test_a_directory_that_is_not_zookeepers_is_named(tmp_path: Path) -> None:
    result = zk2kraft("preflight", "--zk-data-dir", str(tmp_path))
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"error: {tmp_path}: not a ZooKeeper data directory "
        "(no version-2/ with snapshot.* or log.* files)"
    )
    both = zk2kraft("preflight", "--zk", "127.0.0.1:1", "--zk-data-dir", str(tmp_path))
    assert both.returncode == 2 and "not allowed with argument" in both.stderr


def test_a_small_tree_reports_the_znodes_it_holds_and_names_its_files_once(
    ensemble: EmbeddedZooKeeper, tmp_path: Path
) -> None:
    """Four znodes (/cluster, /cluster/id, /brokers, /brokers/topics) in ZooKeeper's own
    files: the preflight and the copy read the data of the one Kafka znode there that
    has data to read (/cluster/id; the parents are only listed, the znodes asked for
    but absent not counted), and ``zk diff`` names the files once."""
    with ZkClient(f"{ensemble.connect_string}/four") as client:
        client.ensure_chroot()
        kw.write(
            client,
            [
                kw.Znode("/cluster", None),
                kw.Znode("/cluster/id", kw.jackson({"version": "1", "id": kw.CLUSTER_ID})),
                kw.Znode("/brokers", None),
                kw.Znode("/brokers/topics", None),
            ],
        )
    data_dir = str(ensemble.servers[0].data_dir)
    files = ["--zk-data-dir", data_dir, "--zk-chroot", "/four"]
    checked = zk2kraft("preflight", *files, "--json")
    assert checked.returncode == 1, checked.stderr  # no broker registered: a live-state blocker
    assert json.loads(checked.stdout)["estimate"]["znodes_read"] == 1
    text = zk2kraft("preflight", *files).stdout
    assert "read the data of 1 Kafka znode(s)" in text
    log_dir = tmp_path / "log"
    copied = zk2kraft("migrate", "--dry-run", *files, "--log-dir", str(log_dir), "--json")
    assert copied.returncode == 0, copied.stderr
    assert json.loads(copied.stdout)["znodes_read"] == 1
    diff = zk2kraft("zk", "diff", *files, "--log-dir", str(log_dir))
    assert diff.stdout.startswith(f"ZooKeeper files in {data_dir} (chroot /four) vs log "), (
        diff.stdout + diff.stderr
    )
