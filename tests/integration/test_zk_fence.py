"""Fencing against a real ZooKeeper: the claim, two writers, stale versions, and the
pipelined multis after a refused one."""

from __future__ import annotations

import json

import pytest

from migration.bridge.plan import is_notification
from migration.bridge.sync import full_sync
from migration.bridge.writer import SyncNeededError, ZkWriter
from migration.image.model import MetadataImage
from migration.zk import paths
from migration.zk.client import ZkClient
from migration.zk.fence import FencedError, claim, read_migration
from migration.zk.model import cluster
from migration.zk.model.cluster import ControllerZnode
from migration.zk.multiwrite import CreateMode, create, set_data
from tests.zk_timeline import SECRET, Timeline, planned_ops, quota


def zk_controller_owns(zk: ZkClient, broker: int = 1, epoch: int = 41) -> None:
    """A ZooKeeper-mode cluster: broker ``broker`` is controller in ``epoch``."""
    me = ControllerZnode(broker, 1_700_000_000_000)
    zk.multi_write(
        [
            create(paths.CONTROLLER_EPOCH, cluster.render_controller_epoch(epoch)),
            create(paths.CONTROLLER, cluster.render_controller(me), CreateMode.EPHEMERAL),
        ]
    )


def test_the_claim_takes_zookeeper_from_its_controller_in_one_step(zk: ZkClient) -> None:
    zk_controller_owns(zk)
    fence = claim(zk, 3000, 9)
    raw, version = zk.get(paths.CONTROLLER_EPOCH)
    assert raw == b"42" and version == fence.controller_epoch_version == 1
    assert fence.zk_controller_epoch == 42
    controller = json.loads(zk.get(paths.CONTROLLER)[0])
    assert controller["version"] == 2 and controller["brokerid"] == 3000
    assert controller["kraftControllerEpoch"] == 9 and isinstance(controller["timestamp"], str)
    stat = zk.kazoo.exists(paths.CONTROLLER)
    assert stat is not None and stat.ephemeralOwner == 0  # persistent: no ZK broker runs for it
    found = read_migration(zk)
    assert found is not None
    migration, migration_version = found
    assert migration_version == fence.migration_version
    assert (migration.kraft_controller_id, migration.kraft_controller_epoch) == (3000, 9)
    assert migration.kraft_metadata_offset == -1


def test_a_claim_against_the_same_or_a_higher_kraft_epoch_is_refused(zk: ZkClient) -> None:
    claim(zk, 3001, 10)
    before = zk.get(paths.CONTROLLER_EPOCH)
    for epoch in (9, 10):
        with pytest.raises(FencedError, match="newer leader owns ZooKeeper"):
            claim(zk, 3000, epoch)
    assert zk.get(paths.CONTROLLER_EPOCH) == before
    assert claim(zk, 3000, 11).zk_controller_epoch == 2


def test_after_a_second_claim_the_first_writers_multis_fail_whole(zk: ZkClient) -> None:
    writer = ZkWriter(zk, secret=SECRET, max_multi_bytes=4096)
    first = full_sync(writer, claim(zk, 3000, 5), MetadataImage.EMPTY).fence
    assert first is not None
    second = claim(zk, 3001, 6)
    t = Timeline()
    with pytest.raises(FencedError, match="/controller_epoch"):
        writer.write_change(first, t.create_topic("late", [[1, 2]] * 100))
    assert zk.kazoo.exists(paths.topic("late")) is None  # no multi of it landed
    found = read_migration(zk)
    assert found is not None and found[1] == second.migration_version


def test_a_writer_whose_migration_version_is_stale_cannot_write(zk: ZkClient) -> None:
    writer = ZkWriter(zk, secret=SECRET)
    fence = full_sync(writer, claim(zk, 3000, 5), MetadataImage.EMPTY).fence
    assert fence is not None
    zk.multi_write([set_data(paths.MIGRATION, zk.get(paths.MIGRATION)[0])])  # someone else
    with pytest.raises(FencedError, match="/migration is not at version"):
        writer.write_change(fence, Timeline().create_topic("t", [[1]]))
    assert zk.kazoo.exists(paths.topic("t")) is None


def test_pipelined_multis_after_a_refused_one_all_fail(zk: ZkClient) -> None:
    """Multis go out 8 at a time. One in the middle is refused (a znode it creates
    exists already); every later one, already sent, fails on the /migration version it
    expects, so nothing after the gap lands and /migration keeps the old offset."""
    landed: list[int] = []
    writer = ZkWriter(zk, secret=SECRET, max_multi_bytes=4096, progress=landed.append)
    fence = full_sync(writer, claim(zk, 3000, 5), MetadataImage.EMPTY).fence
    assert fence is not None
    t = Timeline()
    change = t.commit(*(quota({"user": f"u{i:03}"}, "producer_byte_rate", 1.0) for i in range(300)))
    multis, _ = writer.multis(fence, planned_ops(writer, fence, change), t.offset, t.epoch)
    refused = 3
    assert len(multis) > refused + writer.depth // 2
    clash = next(op.path for op in multis[refused] if op.path.startswith("/config/users/u"))
    zk.multi_write([create(clash, b"")])
    before = read_migration(zk)
    landed.clear()
    with pytest.raises(SyncNeededError, match=f"create {clash}: node already exists") as error:
        writer.write_change(fence, change)
    assert len(landed) == refused
    after = read_migration(zk)
    assert before is not None and after is not None
    assert after[1] == before[1] + refused and after[0] == before[0]
    assert error.value.fence is not None  # what the full sync goes on with
    assert error.value.fence.migration_version == after[1]
    users = set(zk.kazoo.get_children("/config/users"))
    written = {
        op.path.rsplit("/", 1)[1]
        for m in multis[:refused]
        for op in m[1:-1]
        if not is_notification(op)
    }
    assert users == written | {clash.rsplit("/", 1)[1]}
    # The full sync goes on from the fence the error carries.
    assert full_sync(writer, error.value.fence, t.image).fence is not None
    assert set(zk.kazoo.get_children("/config/users")) == {f"u{i:03}" for i in range(300)}
