"""Hostile znodes stop nothing (issue 40): JSON nested 10,000 deep, garbage notifications,
a controller that fails. Real ZooKeeper, real broker processes, the real CLI.

- The tools name the bad znode and refuse (rollback, the copy; preflight's blocker is in
  test_preflight.py) instead of an internal RecursionError.
- The ZooKeeper controller skips what it cannot parse, says so at ERROR once, and goes
  on creating and leading every other topic, also after a failover.
- A controller that resigns with its session alive (an event or its start-up failed)
  releases /controller so another broker is elected; one whose session expired never
  deletes the /controller of the broker elected after it.
- A change notification that cannot be parsed is logged at WARNING once and skipped.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType
from kazoo.exceptions import NoNodeError
from kazoo.security import OPEN_ACL_UNSAFE, make_acl

from migration.local import seed
from migration.local.cluster import LocalCluster
from migration.local.zookeeper import EmbeddedZooKeeper, expire_session
from migration.records.uuids import new_uuid, uuid_text
from migration.zk import paths
from migration.zk.client import ZkClient
from migration.zk.model.cluster import ControllerZnode, render_controller
from migration.zk.model.configs import render_config_change, render_entity_config
from migration.zk.model.topics import (
    PartitionState,
    TopicAssignment,
    render_partition_state,
    render_topic,
)
from migration.zk.multiwrite import CreateMode, create, set_data
from migration.zkcontroller.controller import ZkController
from tests.broker_harness import controller_of, create_topic, eventually, leaders, running_cluster
from tests.support import zk2kraft

DEEP = b"[" * 10_000 + b"]" * 10_000  # what the probe wrote
DEEP_TOPIC = b'{"version":3,"partitions":' + DEEP + b"}"
NESTED = "JSON nested more than 64 levels deep"


def _elected_since(zk: ZkClient, epoch: int, elections: int = 1) -> tuple[int, int] | None:
    """``controller_of(zk)`` once ``elections`` more have happened since ``epoch``; None
    while there are fewer, or while no broker holds /controller (between elections)."""
    try:
        owner, now = controller_of(zk)
    except NoNodeError:
        return None
    return (owner, now) if now >= epoch + elections else None


def _create(cluster: LocalCluster, name: str, partitions: int, rf: int) -> None:
    """CreateTopics through a broker (Kafka's protocol), then every partition led."""
    create_topic(cluster, name, partitions, rf)
    some = cluster.running()[0]
    eventually(
        lambda: (
            len(leaders(cluster, some, name)) == partitions
            and all(leader >= 0 for leader, _ in leaders(cluster, some, name).values())
        ),
        what=f"{name} created and led",
    )


def _lines(log: Path, *needles: str) -> list[str]:
    return [line for line in log.read_text().splitlines() if all(n in line for n in needles)]


# --- the tools ----------------------------------------------------------------------------


def test_rollback_dry_run_names_a_deep_migration_znode(zk: ZkClient, zk_connect: str) -> None:
    seed.write(zk, seed.generate(seed.PROFILES["tiny"]))
    zk.multi_write([create(paths.MIGRATION, b'{"version":0,"x":' + DEEP + b"}")])
    result = zk2kraft("rollback", "--zk", zk_connect, "--dry-run", "--settle-s", "0")
    assert result.returncode == 2
    assert result.stderr.strip() == f"error: malformed znode /migration: {NESTED}"


def test_the_copy_refuses_a_deep_topic_znode_naming_it(
    zk: ZkClient, zk_connect: str, tmp_path: Path
) -> None:
    seed.write(zk, seed.generate(seed.PROFILES["tiny"]))
    zk.multi_write([create(paths.topic("deep"), DEEP_TOPIC)])
    log_dir = tmp_path / "log"
    result = zk2kraft("migrate", "--dry-run", "--zk", zk_connect, "--log-dir", str(log_dir))
    assert result.returncode == 2
    assert f"error: /brokers/topics/deep: MALFORMED_ZNODE: {NESTED}" in result.stderr
    assert not log_dir.exists()


# --- releasing /controller: only one's own ------------------------------------------------


def _elected(client: ZkClient, broker: int, epoch_version: int | None) -> ZkController:
    """What a broker's election does: the ephemeral /controller and the epoch bump in one
    multi; the controller object that won (not activated)."""
    znode = render_controller(ControllerZnode(broker, 0))
    bump = (
        create(paths.CONTROLLER_EPOCH, b"1")
        if epoch_version is None
        else set_data(paths.CONTROLLER_EPOCH, b"%d" % (epoch_version + 2), epoch_version)
    )
    client.multi_write([create(paths.CONTROLLER, znode, CreateMode.EPHEMERAL), bump])
    version = 0 if epoch_version is None else epoch_version + 1
    return ZkController(
        client, broker, epoch=version + 1, epoch_version=version, internal_listener="I"
    )


def test_a_controller_whose_session_expired_never_releases_its_successors_znode(
    zk: ZkClient, zk_connect: str
) -> None:
    with ZkClient(zk_connect) as first, ZkClient(zk_connect) as second:
        old = _elected(first, 1, None)
        expire_session(first)  # its ephemeral /controller goes with the session
        assert zk.kazoo.exists(paths.CONTROLLER) is None
        eventually(lambda: first.kazoo.connected, what="a new session")
        assert not old.release()  # nothing of its own left (and no one elected yet)
        new = _elected(second, 2, 0)
        assert not old.release()  # the epoch moved on: broker 2's /controller stays
        assert controller_of(zk) == (2, 2)
        assert new.release()  # its own, still current: released
        assert zk.kazoo.exists(paths.CONTROLLER) is None


# --- the ZooKeeper controller with real brokers -------------------------------------------


@pytest.mark.slow
def test_a_deep_topic_znode_stops_nothing_and_is_reported_once(
    zk_server: EmbeddedZooKeeper, tmp_path: Path
) -> None:
    with running_cluster(zk_server, tmp_path, [1, 2, 3]) as (cluster, zk):
        _create(cluster, "before", 2, 2)
        controller, epoch = controller_of(zk)
        zk.multi_write([create(paths.topic("deep"), DEEP_TOPIC)])
        log = cluster.brokers[controller].log
        eventually(lambda: _lines(log, "ERROR", "/brokers/topics/deep"), what="deep reported")
        for name in ("after-1", "after-2"):  # each a topic change the controller handles
            _create(cluster, name, 2, 2)
        assert controller_of(zk) == (controller, epoch)  # it never resigned
        assert len(_lines(log, "ERROR", "/brokers/topics/deep")) == 1
        assert NESTED in _lines(log, "ERROR", "/brokers/topics/deep")[0]

        # a failover: the next controller reads both bad znodes at its start-up
        state = paths.partition_state("before", 0)
        zk.multi_write([set_data(state, b'{"version":1,"isr":' + DEEP + b"}")])
        cluster.kill(controller)
        successor, new_epoch = eventually(
            lambda: _elected_since(zk, epoch), what="another controller"
        )
        _create(cluster, "after-failover", 2, 2)
        survivor_log = cluster.brokers[successor].log
        for path in (paths.topic("deep"), state):
            assert len(_lines(survivor_log, "ERROR", f"malformed znode {path}")) == 1, path
        other_partition = leaders(cluster, successor, "before")[1]
        assert other_partition[0] in (1, 2, 3) and other_partition[0] != controller

        # repaired: the topic znode is read again and its existing state adopted as is
        survivors = tuple(sorted(b for b in (1, 2, 3) if b != controller))
        kept = render_partition_state(PartitionState(successor, 7, new_epoch, survivors))
        zk.multi_write(
            [
                create(paths.topic_partitions("deep")),
                create(paths.partition("deep", 0)),
                create(paths.partition_state("deep", 0), kept),
            ]
        )
        repaired = TopicAssignment("deep", {0: survivors}, uuid_text(new_uuid()))
        zk.multi_write([set_data(paths.topic("deep"), render_topic(repaired))])
        eventually(
            lambda: leaders(cluster, successor, "deep").get(0, (-1, []))[0] == successor,
            what="the repaired topic served",
        )
        assert zk.get(paths.partition_state("deep", 0))[0] == kept  # adopted, not created
        assert controller_of(zk) == (successor, new_epoch)  # it never resigned
        assert not any(_lines(cluster.brokers[b].log, "RecursionError") for b in (1, 2, 3))


@pytest.mark.slow
def test_a_controller_that_fails_releases_controller_and_another_is_elected(
    zk_server: EmbeddedZooKeeper, tmp_path: Path
) -> None:
    """A topic deletion the controller cannot write (NoAuth below the topic) fails its
    event, then the start-up of every controller after it: each resigns with its
    session alive, releases /controller, and another broker is elected. Once the cause
    is gone, the next controller starts and the deletion completes."""
    with running_cluster(zk_server, tmp_path, [1, 2]) as (cluster, zk):
        _create(cluster, "doomed", 1, 2)
        _, epoch = controller_of(zk)
        partition = paths.partition("doomed", 0)  # no DELETE: its state cannot be deleted
        locked = [make_acl("world", "anyone", read=True, write=True, create=True, admin=True)]
        zk.kazoo.set_acls(partition, locked)
        zk.kazoo.create(paths.delete_topic("doomed"))
        # Each failed controller holds /controller for milliseconds: the epoch, which
        # every election bumps and nothing takes back, counts the elections.
        eventually(
            lambda: int(zk.get(paths.CONTROLLER_EPOCH)[0]) >= epoch + 2,
            what="controllers elected after failed ones released /controller",
        )
        for b in (1, 2):  # one line each time, naming the cause; no traceback after it
            lines = cluster.brokers[b].log.read_text().splitlines()
            for i, line in enumerate(lines):
                if "its start-up failed" in line:
                    assert " ERROR " in line and "ZkWriteError" in line and "NoAuth" in line
                    assert i + 1 == len(lines) or not lines[i + 1].startswith("Traceback")
        assert any(_lines(cluster.brokers[b].log, "its start-up failed") for b in (1, 2))
        zk.kazoo.set_acls(partition, OPEN_ACL_UNSAFE)
        eventually(lambda: zk.kazoo.exists(paths.topic("doomed")) is None, what="deleted")
        _create(cluster, "alive", 2, 2)


@pytest.mark.slow
def test_garbage_change_notifications_are_logged_once_and_skipped(
    zk_server: EmbeddedZooKeeper, tmp_path: Path
) -> None:
    with running_cluster(zk_server, tmp_path, [1]) as (cluster, zk):
        _create(cluster, "configured", 1, 1)
        log = cluster.brokers[1].log
        garbage = [
            zk.kazoo.create(f"{paths.CONFIG_CHANGES}/config_change_", DEEP, sequence=True),
            zk.kazoo.create(f"{paths.ACL_CHANGES}/acl_changes_", b"no-colon", sequence=True),
        ]
        bad_config = paths.config_entity("topics", "deep")  # read by every re-read
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})

        def retention_ms() -> str:
            (described,) = admin.describe_configs(
                [ConfigResource(ResourceType.TOPIC, "configured")]
            ).values()
            return str(described.result(timeout=30)["retention.ms"].value)

        zk.multi_write([create(bad_config, b'{"version":1,"config":' + DEEP + b"}")])
        for retention in ("1000", "2000"):  # valid notifications: each one re-read
            config = render_entity_config({"retention.ms": retention})
            zk.multi_write(
                [
                    set_data(paths.config_entity("topics", "configured"), config),
                    create(
                        f"{paths.CONFIG_CHANGES}/config_change_",
                        render_config_change("topics/configured"),
                        CreateMode.PERSISTENT_SEQUENTIAL,
                    ),
                ]
            )
            eventually(
                lambda r=retention: retention_ms() == r, what=f"retention.ms {retention} served"
            )
        chroot = zk.chroot
        for path in garbage:
            relative = path.removeprefix(chroot)
            warned = _lines(log, "WARNING", f"ignoring the change notification {relative}")
            assert len(warned) == 1, relative
        assert NESTED in _lines(log, "WARNING", "config_change_")[0]
        assert "ResourceType:name" in _lines(log, "WARNING", "acl_changes_")[0]
        assert len(_lines(log, "ERROR", f"malformed znode {bad_config}")) == 1
        assert cluster.running() == [1]
