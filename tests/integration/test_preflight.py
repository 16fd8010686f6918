"""Preflight against a real ZooKeeper: a clean cluster is ready; each blocker is found."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace

import pytest

from migration.bridge.preflight import (
    BROKER_MIGRATION_NOT_ENABLED,
    BROKER_MIGRATION_SETTINGS,
    fix_of,
)
from migration.cli.preflight_command import preflight
from migration.local import seed
from migration.records.versions import METADATA_VERSION
from migration.zk import paths
from migration.zk.client import ZkClient
from migration.zk.model.brokers import FeatureRange, parse_broker, render_broker
from migration.zk.model.cluster import MigrationZnode, render_migration
from migration.zk.multiwrite import create, delete, set_data
from tests.support import zk2kraft


def test_clean_cluster_is_ready(zk: ZkClient, zk_connect: str) -> None:
    seed.write(zk, seed.generate(seed.PROFILES["small"]))
    result = zk2kraft("preflight", "--zk", zk_connect, "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["ready"] is True and report["blockers"] == []
    est = report["estimate"]
    assert est["records"]["PartitionRecord"] == 200
    assert est["records"]["TopicRecord"] == 20
    assert isinstance(est["total_records"], int) and est["expected_copy_seconds"] > 0


def _remove_broker(zk: ZkClient) -> None:
    zk.multi_write([delete(paths.broker(2))])


def _corrupt_state(zk: ZkClient) -> None:
    topic = sorted(read_topics(zk))[0]
    zk.multi_write([set_data(paths.partition_state(topic, 0), b'{"version":1}')])


def _deep_topic(zk: ZkClient) -> None:
    """A topic znode whose JSON nests 10,000 deep (past the interpreter's recursion limit)."""
    deep = b'{"version":3,"partitions":' + b"[" * 10_000 + b"]" * 10_000 + b"}"
    zk.multi_write([create(paths.topic("deep"), deep)])


def _ibp_below_3_4(zk: ZkClient) -> None:
    """Broker 2 re-registered supporting metadata.version up to 3.3-IV3 (level 7)."""
    raw, _ = zk.get(paths.broker(2))
    old = replace(
        parse_broker(paths.broker(2), raw, 2), features={METADATA_VERSION: FeatureRange(1, 7)}
    )
    zk.multi_write([delete(paths.broker(2)), create(paths.broker(2), render_broker(old))])


def _stale_migration(zk: ZkClient) -> None:
    zk.multi_write([create(paths.MIGRATION, render_migration(MigrationZnode(3000, 5, 1234, 5)))])


def _reassignment_znode(zk: ZkClient) -> None:
    topic = sorted(read_topics(zk))[0]
    body = f'{{"version":1,"partitions":[{{"topic":"{topic}","partition":0,"replicas":[1,2,3]}}]}}'
    zk.multi_write([create(paths.REASSIGN_PARTITIONS, body.encode())])


def read_topics(zk: ZkClient) -> list[str]:
    return list(zk.kazoo.get_children(paths.TOPICS))


BLOCKERS: list[tuple[str, seed.ClusterSpec, Callable[[ZkClient], None] | None, str, str]] = [
    (
        "unregistered-broker",
        seed.PROFILES["small"],
        _remove_broker,
        "UNREGISTERED_BROKER",
        "/brokers/ids/2",
    ),
    (
        "offline-partition",
        seed.ClusterSpec(offline_partitions=2),
        None,
        "OFFLINE_PARTITION",
        "/state",
    ),
    ("malformed", seed.PROFILES["small"], _corrupt_state, "MALFORMED_ZNODE", "/partitions/0/state"),
    ("deep-json", seed.PROFILES["small"], _deep_topic, "MALFORMED_ZNODE", "/brokers/topics/deep"),
    (
        "not-migration-capable",
        seed.ClusterSpec(brokers=4, legacy_brokers=1),
        None,
        "BROKER_NOT_MIGRATION_CAPABLE",
        "/brokers/ids/4",
    ),
    (
        "ibp-below-3.4",
        seed.PROFILES["small"],
        _ibp_below_3_4,
        "BROKER_NOT_MIGRATION_CAPABLE",
        "/brokers/ids/2",
    ),
    (
        "generated-ids",
        seed.ClusterSpec(generated_broker_ids=True),
        None,
        "GENERATED_BROKER_ID",
        "/brokers/ids/1001",
    ),
    (
        "reassignment-in-topic",
        seed.ClusterSpec(brokers=4, reassignment=True),
        None,
        "REASSIGNMENT_IN_PROGRESS",
        "/brokers/topics/",
    ),
    (
        "reassignment-znode",
        seed.PROFILES["small"],
        _reassignment_znode,
        "REASSIGNMENT_IN_PROGRESS",
        paths.REASSIGN_PARTITIONS,
    ),
    (
        "stale-migration",
        seed.PROFILES["small"],
        _stale_migration,
        "STALE_MIGRATION_ZNODE",
        paths.MIGRATION,
    ),
]


@pytest.mark.parametrize(
    ("spec", "damage", "code", "path"), [b[1:] for b in BLOCKERS], ids=[b[0] for b in BLOCKERS]
)
def test_each_blocker_is_found(
    zk: ZkClient,
    spec: seed.ClusterSpec,
    damage: Callable[[ZkClient], None] | None,
    code: str,
    path: str,
) -> None:
    seed.write(zk, seed.generate(spec))
    if damage:
        damage(zk)
    report = preflight(zk, show_progress=False)
    assert not report.ready
    found = [f for f in report.blockers if f.code == code]
    assert found, [f.code for f in report.blockers]
    assert any(path in (f.path or "") for f in found)
    assert all(f.message for f in report.blockers)


def test_cli_exit_code_and_text_for_blockers(zk: ZkClient, zk_connect: str) -> None:
    seed.write(zk, seed.generate(seed.ClusterSpec(offline_partitions=1)))
    result = zk2kraft("preflight", "--zk", zk_connect)
    assert result.returncode == 1
    assert "NOT READY" in result.stdout and "OFFLINE_PARTITION" in result.stdout


def test_warnings_do_not_block(zk: ZkClient) -> None:
    seed.write(zk, seed.generate(seed.ClusterSpec(pending_deletions=2, legacy_consumer_groups=2)))
    report = preflight(zk, show_progress=False)
    assert report.ready
    codes = [w.code for w in report.warnings]
    assert codes.count("PENDING_TOPIC_DELETION") == 2
    assert codes.count("LEGACY_CONSUMER_OFFSETS") == 2
    assert report.estimate["records"]["TopicRecord"] == 8


def test_empty_chroot_is_not_a_cluster(zk: ZkClient) -> None:
    report = preflight(zk, show_progress=False)
    assert [f.code for f in report.blockers] == ["NO_KAFKA_CLUSTER"]


def test_brokers_without_the_migration_flag_are_step_3_not_a_blocker(zk: ZkClient) -> None:
    """Registrations as Kafka's ZooKeeper-mode brokers write them before step 3 (v5,
    ``"features":{}``): ready, one warning per broker naming its znode, and the fix is
    step 3's settings."""
    seed.write(zk, seed.generate(seed.PROFILES["small"]))
    for bid in sorted(int(b) for b in zk.kazoo.get_children(paths.BROKER_IDS)):
        raw, _ = zk.get(paths.broker(bid))
        unflagged = replace(parse_broker(paths.broker(bid), raw, bid), features={})
        zk.multi_write([set_data(paths.broker(bid), render_broker(unflagged))])
    report = preflight(zk, show_progress=False)
    assert report.ready, report.blockers
    found = [f for f in report.warnings if f.code == BROKER_MIGRATION_NOT_ENABLED]
    assert [f.path for f in found] == [paths.broker(b) for b in (1, 2, 3)]
    fix = fix_of(found[0])
    for name, _ in BROKER_MIGRATION_SETTINGS:
        assert name in fix
    assert "zookeeper.metadata.migration.enable=true" in fix and "step 3" in fix
