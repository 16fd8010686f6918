"""``zookeeper.set.acl`` on a cluster secured after the fact (znodes made open, as Kafka
leaves them without the setting): the full sync gives every znode it rewrites Kafka's
ACLs, creates carry them, and what it does not touch keeps its ACL. Digest auth (the
simple set-up) on the session's ZooKeeper."""

from __future__ import annotations

import json
from pathlib import Path

from migration.bridge.sync import full_sync
from migration.bridge.writer import ZkWriter
from migration.image.log_check import check_log
from migration.local import seed
from migration.local.seed import ClusterSpec
from migration.zk import paths
from migration.zk.client import ZkClient
from migration.zk.fence import claim
from migration.zk.security import zk_security
from tests.support import zk2kraft


def test_the_full_sync_repairs_acls_of_what_it_rewrites(
    zk: ZkClient, zk_connect: str, tmp_path: Path
) -> None:
    spec = ClusterSpec(topics=3, partitions=6, scram_users=2)
    snap = seed.generate(spec)
    seed.write(zk, snap)
    log_dir = tmp_path / "log"
    secret = tmp_path / "secret"
    secret.write_text(spec.password_encoder_secret + "\n")
    copied = zk2kraft(
        "migrate", "--dry-run", "--zk", zk_connect, "--log-dir", str(log_dir),
        "--password-encoder-secret-file", str(secret),
    )  # fmt: skip
    assert copied.returncode == 0, copied.stderr
    image = check_log(log_dir).metadata

    # drift behind the copy's back: one topic config changed, one removed
    first, second = sorted(snap.topic_configs)[:2]
    changed, removed = paths.config_entity("topics", first), paths.config_entity("topics", second)
    zk.kazoo.set(changed, json.dumps({"version": 1, "config": {"retention.ms": "1"}}).encode())
    zk.kazoo.delete(removed)
    untouched = paths.topic(sorted(snap.topics)[0])

    problems: list[str] = []
    security = zk_security(
        {"zookeeper.set.acl": "true", "zookeeper.auth.digest": "kafka:kafka-pw"}, problems
    )
    assert not problems
    with ZkClient(zk_connect, security=security) as secured:
        full_sync(
            ZkWriter(secured, secret=spec.password_encoder_secret), claim(secured, 3000, 1), image
        )

    for path in (changed, removed):  # ZooKeeper shows a digest id's user, not its hash
        acl = zk.kazoo.get_acls(path)[0]
        assert {(a.id.scheme, a.id.id.split(":")[0], a.perms) for a in acl} == {
            ("digest", "kafka", 31),
            ("world", "anyone", 1),
        }
    assert [(a.id.scheme, a.perms) for a in zk.kazoo.get_acls(untouched)[0]] == [("world", 31)]
