"""The producer-id block in a plan: the full sync moves ZooKeeper's block only when its
next id is below KRaft's (the audit's rule; Kafka's writer leaves it alone when they
are equal, as they are right after the copy); a delta moves it whenever KRaft's next id
does."""

from __future__ import annotations

import pytest

from migration.bridge.mirror import ImageView, SnapshotView
from migration.bridge.plan import EVERYTHING, Scope, plan
from migration.image.loader import MetadataLoader
from migration.image.model import MetadataImage
from migration.proto.metadata_pb2 import MetadataRecord
from migration.zk.model.cluster import ProducerIdBlock
from migration.zk.tree_read import ZkSnapshot


def _image(next_producer_id: int) -> MetadataImage:
    loader = MetadataLoader()
    r = MetadataRecord()
    r.producer_ids_record.next_producer_id = next_producer_id
    loader.replay_all([(0, 1, r)])
    return loader.image


def _sets_block(old: SnapshotView | ImageView, image: MetadataImage) -> bool:
    done = plan(old, ImageView(image, 1, None), EVERYTHING)
    return done.nonempty_changes().get("producer_ids") == {"set": ["/latest_producer_id_block"]}


@pytest.mark.parametrize(
    ("block", "sets"),
    [
        (None, True),  # ZooKeeper never handed out a block
        ((0, 999), False),  # the block the copy took KRaft's next id (1000) from
        ((500, 1499), False),  # ZooKeeper's next id above KRaft's
        ((1000, 1999), False),  # the block the writer itself set
        ((0, 998), True),  # ZooKeeper's next id below KRaft's
    ],
)
def test_the_full_sync_moves_zookeepers_block_only_below_krafts_next_id(
    block: tuple[int, int] | None, sets: bool
) -> None:
    held = ProducerIdBlock(2, *block) if block else None
    zk = SnapshotView(ZkSnapshot(producer_id_block=held), None)
    assert _sets_block(zk, _image(1000)) is sets


def test_a_delta_moves_the_block_whenever_krafts_next_id_moves() -> None:
    before, after = _image(1000), _image(2000)
    scope = Scope()
    done = plan(ImageView(before, 1, None), ImageView(after, 1, None), scope)
    assert done.nonempty_changes()["producer_ids"] == {"set": ["/latest_producer_id_block"]}
    same = plan(ImageView(before, 1, None), ImageView(_image(1000), 1, None), scope)
    assert "producer_ids" not in same.nonempty_changes()
