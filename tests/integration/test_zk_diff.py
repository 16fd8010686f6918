"""``zk2kraft zk diff``: a seeded ZooKeeper against the log of a dry-run copy of it."""

from __future__ import annotations

import json
from pathlib import Path

from migration.bridge.sync import full_sync
from migration.bridge.writer import ZkWriter
from migration.image.log_check import check_log
from migration.local import seed
from migration.zk import paths
from migration.zk.client import ZkClient
from migration.zk.fence import claim
from migration.zk.model import cluster
from migration.zk.model.cluster import MigrationZnode
from migration.zk.multiwrite import create
from tests.support import EVERYTHING, zk2kraft


def test_diff_names_what_a_sync_would_change_and_then_nothing(
    zk: ZkClient, zk_connect: str, tmp_path: Path
) -> None:
    snap = seed.generate(EVERYTHING)
    seed.write(zk, snap)
    secret_file = tmp_path / "secret"
    secret_file.write_text(seed.SEED_PASSWORD_ENCODER_SECRET + "\n")
    log_dir = tmp_path / "log"
    secret = ["--password-encoder-secret-file", str(secret_file)]
    where = ["--zk", zk_connect, "--log-dir", str(log_dir)]
    copied = zk2kraft("migrate", "--dry-run", *where, *secret)
    assert copied.returncode == 0, copied.stderr
    topic = sorted(t for t in snap.topics if t not in snap.pending_deletions)[0]
    zk.kazoo.delete(paths.partition_state(topic, 0))  # drift

    result = zk2kraft("zk", "diff", *where, "--json", *secret)
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    assert report["in_sync"] is False and report["sync_refused"] is None
    changes = report["changes"]
    assert changes["partitions"] == {"create": [f"{topic}-0"]}
    assert sorted(changes["pending_deletions"]["delete"]) == sorted(snap.pending_deletions)
    # the copy's next producer id is where ZooKeeper's next block starts: nothing to set
    assert set(changes) == {"partitions", "pending_deletions", "topics", "configs"}
    text = zk2kraft("zk", "diff", *where, *secret)
    assert text.returncode == 1 and f"partitions         create        1: {topic}-0" in text.stdout
    assert zk.kazoo.exists(paths.partition_state(topic, 0)) is None  # nothing written

    image = check_log(log_dir).metadata
    full_sync(ZkWriter(zk, secret=seed.SEED_PASSWORD_ENCODER_SECRET), claim(zk, 3000, 1), image)
    after = zk2kraft("zk", "diff", *where, *secret)
    assert after.returncode == 0 and "in sync" in after.stdout, after.stdout + after.stderr


def test_diff_without_the_secret_compares_password_configs_by_presence(
    zk: ZkClient, zk_connect: str, tmp_path: Path
) -> None:
    seed.write(zk, seed.generate(EVERYTHING))
    secret_file = tmp_path / "secret"
    secret_file.write_text(seed.SEED_PASSWORD_ENCODER_SECRET)
    log_dir = tmp_path / "log"
    where = ["--zk", zk_connect, "--log-dir", str(log_dir)]
    zk2kraft("migrate", "--dry-run", *where, "--password-encoder-secret-file", str(secret_file))
    report = json.loads(zk2kraft("zk", "diff", *where, "--json").stdout)
    configs = report["changes"].get("configs", {})
    assert not [p for keys in configs.values() for p in keys if p.startswith("/config/brokers")]
    assert report["sync_refused"] is None
    # A /migration left by an earlier attempt, ahead of this log: a sync would refuse.
    left = MigrationZnode(3000, 4, 1_000_000, 4)
    zk.multi_write([create(paths.MIGRATION, cluster.render_migration(left))])
    again = json.loads(zk2kraft("zk", "diff", *where, "--json").stdout)
    assert "offset 1000000" in again["sync_refused"]


def test_diff_of_a_directory_that_is_not_a_log_is_one_clear_error(
    zk_connect: str, tmp_path: Path
) -> None:
    result = zk2kraft("zk", "diff", "--zk", zk_connect, "--log-dir", str(tmp_path))
    assert result.returncode == 2
    assert "not a readable metadata log" in result.stderr and len(result.stderr.splitlines()) == 1
