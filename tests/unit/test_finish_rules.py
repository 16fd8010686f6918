"""The finishing rules, pure: a KRaft broker's storage taken over from ZooKeeper mode, the
ISR expansion a KRaft-mode leader asks for, the rollback's one multi and its rows."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from migration.broker.kraft_broker import (
    PROMISE_S,
    Promises,
    follow,
    isr_to_expand,
    live_brokers,
)
from migration.broker.short_isrs import ShortIsrs
from migration.cli.rollback_command import steps
from migration.common.kafka_errors import ErrorCode
from migration.controller.storage import StorageError, broker_cluster_id, read_storage
from migration.image.model import BrokerImage, MetadataImage, PartitionImage, TopicImage
from migration.image.publishing import ImageChange, LoadManifest
from migration.proto import controller_pb2 as cpb
from migration.records.uuids import uuid_text
from migration.rollback import Assessment, Phase
from migration.zk import paths
from migration.zk.model.cluster import ControllerZnode, MigrationZnode
from migration.zk.multiwrite import WriteOp
from tests.lone_controller import LoneController

TOPIC_ID = bytes(range(1, 17))
_MANIFEST = LoadManifest(0, 0, 0, from_snapshot=True)


def test_a_kraft_broker_takes_over_its_zookeeper_mode_meta_properties(tmp_path: Path) -> None:
    with pytest.raises(StorageError, match=r"meta\.properties is missing"):
        broker_cluster_id(tmp_path, 2)
    (tmp_path / "meta.properties").write_text("version=0\nbroker.id=2\ncluster.id=abcDEF-_1\n")
    with pytest.raises(StorageError, match=r"names broker\.id 2, but the config says 3"):
        broker_cluster_id(tmp_path, 3)
    assert broker_cluster_id(tmp_path, 2) == "abcDEF-_1"
    storage = read_storage(tmp_path)  # rewritten as version 1, as Kafka does
    assert storage is not None and (storage.node_id, storage.cluster_id) == (2, "abcDEF-_1")
    assert broker_cluster_id(tmp_path, 2) == "abcDEF-_1"  # and read back as such
    (tmp_path / "meta.properties").write_text("version=1\nnode.id=2\ncluster.id=not a id\n")
    with pytest.raises(StorageError, match="not Kafka's form"):
        broker_cluster_id(tmp_path, 2)


def _broker(b: int, fenced: bool = False, shutting: bool = False) -> BrokerImage:
    return BrokerImage(b, b"", 10 + b, (), (), None, fenced, shutting, False)


def _partition(leader: int, replicas: tuple[int, ...], isr: tuple[int, ...]) -> PartitionImage:
    return PartitionImage(replicas, isr, (), (), leader, 0, 5, 7)


def test_a_kraft_leader_asks_to_add_back_only_live_replicas_of_what_it_leads() -> None:
    image = dataclasses.replace(
        MetadataImage.EMPTY,
        brokers={
            1: _broker(1),
            2: _broker(2),
            3: _broker(3, fenced=True),
            4: _broker(4, shutting=True),
        },
        topics={
            TOPIC_ID: TopicImage(
                "t",
                TOPIC_ID,
                {
                    0: _partition(1, (1, 2, 3), (1,)),  # 2 is live: added; 3 fenced: not
                    1: _partition(1, (1, 2), (1, 2)),  # nothing missing
                    2: _partition(2, (2, 1), (2,)),  # led elsewhere
                    3: _partition(1, (1, 4), (1,)),  # 4 shutting down
                },
            )
        },
    )
    request = isr_to_expand(image, 1)
    assert request is not None and request.broker_id == 1
    (topic,) = request.topics
    assert topic.topic_id == uuid_text(TOPIC_ID)
    assert [(p.partition_index, list(p.isr), p.leader_epoch, p.partition_epoch)
            for p in topic.partitions] == [(0, [1, 2], 5, 7)]  # fmt: skip
    assert isr_to_expand(image, 3) is None
    leaving = dataclasses.replace(image, brokers={**image.brokers, 1: _broker(1, shutting=True)})
    assert isr_to_expand(leaving, 1) is None  # shutting down itself: asks for nothing


def test_a_kraft_leader_asks_for_a_bounded_step_at_a_time() -> None:
    short = {i: _partition(1, (1, 2), (1,)) for i in range(5)}
    image = dataclasses.replace(
        MetadataImage.EMPTY,
        brokers={1: _broker(1), 2: _broker(2)},
        topics={TOPIC_ID: TopicImage("t", TOPIC_ID, short)},
    )
    request = isr_to_expand(image, 1, limit=2)
    assert request is not None
    assert [p.partition_index for t in request.topics for p in t.partitions] == [0, 1]


class _Following:
    """A publisher keeping each broker's short ISRs by following the images' deltas."""

    name = "short-isrs"

    def __init__(self, brokers: tuple[int, ...]) -> None:
        self.short = {b: ShortIsrs[tuple[bytes, int]](b) for b in brokers}
        self.image = MetadataImage.EMPTY
        self.deltas = 0

    def publish(self, change: ImageChange) -> None:
        for short in self.short.values():
            follow(short, change)
        self.image = change.image
        self.deltas += change.delta is not None


def test_a_kraft_leader_follows_its_short_isrs_through_the_deltas(lone: LoneController) -> None:
    """The index a KRaft broker keeps from each image's delta (not a walk of every
    partition) asks for what a walk of the whole image would, through ISR shrinks, a
    broker fenced, a topic created and one deleted."""
    brokers = (1, 2, 3)
    following = _Following(brokers)
    lone.committed.register(following)

    def same_as_a_walk() -> None:
        assert lone.committed.wait_published(10)
        image = following.image
        assert image.offset == lone.image.offset
        for b, short in following.short.items():
            whole: ShortIsrs[tuple[bytes, int]] = ShortIsrs(b)
            follow(whole, ImageChange(MetadataImage.EMPTY, image, None, _MANIFEST))
            assert {m: k for m, k in short.by_missing.items() if k} == {
                m: k for m, k in whole.by_missing.items() if k
            }
            assert isr_to_expand(image, b, short=short.of(live_brokers(image))) == (
                isr_to_expand(image, b)
            )

    lone.up(*brokers)
    lone.create("t", 4, 3)
    lone.create("u", 2, 2)
    same_as_a_walk()
    for index in range(4):  # each leader drops one follower from its ISR
        p = lone.partition("t", index)
        request = cpb.AlterPartitionRequest(
            broker_id=p.leader, broker_epoch=lone.image.brokers[p.leader].epoch
        )
        request.topics.add(topic_id=uuid_text(lone.image.topic_ids["t"])).partitions.add(
            partition_index=index,
            leader_epoch=p.leader_epoch,
            partition_epoch=p.partition_epoch,
            isr=[r for r in p.isr if r != p.replicas[-1]],
        )
        assert lone.call("AlterPartition", request).topics[0].partitions[0].error_code == 0
    same_as_a_walk()
    assert any(isr_to_expand(following.image, b) for b in brokers)  # something to ask for
    lone.expire(1, 3)  # 2 fenced: out of every ISR, and not live
    same_as_a_walk()
    lone.call("DeleteTopics", cpb.DeleteTopicsRequest(topic_names=["u"]))
    lone.create("v", 2, 3)
    same_as_a_walk()
    assert following.deltas > 0  # the index followed deltas, not only whole images


def test_a_kraft_leader_waits_for_the_epoch_an_answer_promised(lone: LoneController) -> None:
    """Asked again from an image that has not caught up with the answer, the controller
    could only refuse (INVALID_UPDATE_VERSION); the broker waits for the image instead."""
    lone.up(1, 2)
    lone.create("t", 1, 2)
    leader = lone.partition("t").leader
    assert isr_to_expand(lone.image, leader) is None  # both in sync: nothing to ask
    p = lone.partition("t")
    topic_id = lone.image.topic_ids["t"]
    request = cpb.AlterPartitionRequest(
        broker_id=leader, broker_epoch=lone.image.brokers[leader].epoch
    )
    request.topics.add(topic_id=uuid_text(topic_id)).partitions.add(
        partition_index=0,
        leader_epoch=p.leader_epoch,
        partition_epoch=p.partition_epoch,
        isr=[leader],
    )
    assert lone.call("AlterPartition", request).topics[0].partitions[0].error_code == 0
    stale = lone.image  # the leader's image: ISR [leader], the other replica live
    expand = isr_to_expand(stale, leader)
    assert expand is not None
    expand.broker_epoch = request.broker_epoch
    granted = lone.call("AlterPartition", expand)
    assert granted.topics[0].partitions[0].error_code == 0
    again = isr_to_expand(stale, leader)  # without promises: the same ask, refused
    assert again is not None
    again.broker_epoch = request.broker_epoch
    refused = lone.call("AlterPartition", again).topics[0].partitions[0]
    assert refused.error_code == ErrorCode.INVALID_UPDATE_VERSION
    promises = Promises()
    promises.note(stale, granted, now=0.0)
    assert isr_to_expand(stale, leader, promises=promises) is None
    promises.settle(stale, now=PROMISE_S + 1)  # never committed: asked again after all
    assert isr_to_expand(stale, leader, promises=promises) is not None
    promises.note(stale, granted, now=0.0)
    promises.settle(lone.image, now=1.0)  # the image has it: nothing left to wait for
    assert not promises.awaited(topic_id, 0, stale.topics[topic_id].partitions[0].partition_epoch)
    assert isr_to_expand(lone.image, leader, promises=promises) is None


def _assessment(phase: Phase, state_epoch: int = 4) -> Assessment:
    return Assessment(
        phase=phase,
        controller=(ControllerZnode(3000, 0, kraft_controller_epoch=2), 0),
        migration=(MigrationZnode(3000, 2, 120, 2), 17),
        controller_epoch=(9, 3),
        max_state_epoch=state_epoch,
    )


def test_the_hand_back_is_one_version_checked_multi() -> None:
    ops = _assessment(Phase.MIGRATION_ACTIVE).ops()
    assert [(op.kind, op.path, op.version) for op in ops] == [
        (WriteOp.CHECK, paths.CONTROLLER_EPOCH, 3),
        (WriteOp.DELETE, paths.CONTROLLER, 0),
        (WriteOp.DELETE, paths.MIGRATION, 17),
    ]
    raised = _assessment(Phase.MIGRATION_ACTIVE, state_epoch=977).ops()[0]
    assert (raised.kind, raised.data, raised.version) == (WriteOp.SET_DATA, b"977", 3)
    assert _assessment(Phase.FINALIZED).ops() == []
    assert _assessment(Phase.ZOOKEEPER).ops() == []
    zk_owned = dataclasses.replace(
        _assessment(Phase.MIGRATION_ACTIVE), controller=(ControllerZnode(2, 0), 5)
    )
    assert paths.CONTROLLER not in [op.path for op in zk_owned.ops()]  # a broker's: kept


def test_each_phase_has_its_rollback_row() -> None:
    kraft = steps(_assessment(Phase.KRAFT_BROKERS), "zk:2181/k", "c:9093")
    assert kraft[0].startswith("Roll the KRaft-mode brokers back to ZooKeeper mode")
    assert "--to migrating --zk zk:2181/k" in kraft[0]
    active = steps(_assessment(Phase.MIGRATION_ACTIVE), "zk:2181/k", "c:9093")
    assert active == kraft[1:]
    assert any("zk2kraft rollback --zk zk:2181/k" in s for s in active)
    assert "Nothing was copied" in steps(_assessment(Phase.ZOOKEEPER), "z", None)[0]
    assert "cannot go back" in steps(_assessment(Phase.FINALIZED), "z", None)[0]
