"""A ZooKeeper broker's own admin writes are fenced on ``/controller_epoch``: one that
races the KRaft controller's claim (the broker has not seen the new ``/controller``
yet) is refused with NOT_CONTROLLER instead of landing in ZooKeeper after the copy read
it, where nothing would ever bring it into the log."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from migration.broker.zk_admin import AdminSettings, ZkAdmin
from migration.broker.zk_view import ZkEntityWatcher
from migration.common.kafka_errors import ErrorCode
from migration.local import seed
from migration.local.seed import ClusterSpec
from migration.proto import controller_pb2 as cpb
from migration.zk import paths
from migration.zk.client import ZkClient
from migration.zk.fence import claim
from tests.zk_timeline import read_back

TOPIC, LITERAL, READ, ALLOW = 2, 3, 3, 3


@pytest.fixture
def stale_admin(zk: ZkClient) -> Iterator[ZkAdmin]:
    """A ZooKeeper broker's admin path whose view of ``/controller`` never moves."""
    spec = ClusterSpec(topics=2, partitions=2)
    seed.write(zk, seed.without_registrations(seed.generate(spec)))
    image = read_back(zk, spec.password_encoder_secret)
    watcher = ZkEntityWatcher(zk, spec.password_encoder_secret)
    watcher.start()
    try:
        yield ZkAdmin(
            client=zk,
            entities=watcher,
            view=lambda: image,
            wait=lambda predicate, timeout_s: True,
            owner=lambda: None,  # the claim is not seen: the race, held open
            settings=AdminSettings(),
            secret=spec.password_encoder_secret,
            controller_epoch=lambda: seed.CONTROLLER_EPOCH,
        )
    finally:
        watcher.stop()


def _acl(topic: str) -> cpb.CreateAclsRequest:
    binding = cpb.AclBinding(
        resource_type=TOPIC, resource_name=topic, pattern_type=LITERAL,
        principal="User:racer", host="*", operation=READ, permission_type=ALLOW,
    )  # fmt: skip
    return cpb.CreateAclsRequest(creations=[binding])


def test_a_write_racing_the_claim_is_refused_and_zookeeper_left_as_the_copy_read_it(
    zk: ZkClient, stale_admin: ZkAdmin
) -> None:
    before = stale_admin.write("CreateAcls", _acl("before-claim"), False, 30_000)
    assert not before.error.error_code
    assert zk.kazoo.exists(f"{paths.ACL_LITERAL}/Topic/before-claim") is not None

    claim(zk, controller_id=3000, kraft_epoch=1)
    after = stale_admin.write("CreateAcls", _acl("after-claim"), False, 30_000)
    assert after.error.error_code == ErrorCode.NOT_CONTROLLER
    assert "KRaft controller (id 3000)" in after.error.error_message
    assert zk.kazoo.exists(f"{paths.ACL_LITERAL}/Topic/after-claim") is None

    doomed = next(iter(stale_admin._view().topic_ids))
    request = cpb.DeleteTopicsRequest(topic_names=[doomed])
    deleted = stale_admin.write("DeleteTopics", request, False, 1)
    assert deleted.error.error_code == ErrorCode.NOT_CONTROLLER
    assert zk.kazoo.exists(paths.delete_topic(doomed)) is None
