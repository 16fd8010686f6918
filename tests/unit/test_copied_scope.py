"""copied_scope: the sync right after a copy compares only what the copy can leave
different, and plans exactly what a comparison of everything plans -- on trees with each
of the quirks a copy does not carry over as it stands."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest

from migration.bridge.mirror import ImageView, SnapshotView
from migration.bridge.plan import EVERYTHING, plan
from migration.bridge.sync import copied_scope
from migration.bridge.translate import TranslateReport, translate
from migration.image.delta import MetadataDelta
from migration.image.model import MetadataImage
from migration.local import seed
from migration.proto.metadata_pb2 import MetadataRecord
from migration.zk import paths
from migration.zk.tree_read import PartitionSnapshot, TopicSnapshot, ZkSnapshot

SECRET = seed.SEED_PASSWORD_ENCODER_SECRET
ZK_CONTROLLER_EPOCH = 8  # the claim's: one above the seeded tree's /controller_epoch (7)


def _without_state(s: ZkSnapshot) -> ZkSnapshot:
    name = sorted(n for n in s.topics if n not in s.pending_deletions)[0]
    t = s.topics[name]
    partitions = {**t.partitions, 0: PartitionSnapshot(None, -1)}
    return replace(s, topics={**s.topics, name: TopicSnapshot(t.assignment, partitions)})


def _without_listing(s: ZkSnapshot) -> ZkSnapshot:
    name = sorted(n for n in s.topics if n not in s.pending_deletions)[-1]
    t = s.topics[name]
    partitions = {p: v for p, v in t.partitions.items() if p != 0}
    return replace(s, topics={**s.topics, name: TopicSnapshot(t.assignment, partitions)})


def _orphan_config(s: ZkSnapshot) -> ZkSnapshot:
    return replace(s, topic_configs={**s.topic_configs, "gone": {"retention.ms": "1"}})


def _without_config(s: ZkSnapshot) -> ZkSnapshot:
    name = sorted(n for n in s.topics if n not in s.pending_deletions)[1]
    path = paths.TOPIC_CONFIGS + name
    configs = {n: c for n, c in s.topic_configs.items() if n != name}
    return replace(s, topic_configs=configs, config_znodes=s.config_znodes - {path})


QUIRKS: dict[str, Callable[[ZkSnapshot], ZkSnapshot]] = {
    "none": lambda s: s,
    "a partition without its state znode": _without_state,
    "a partition the snapshot does not list": _without_listing,
    "a topic config without its topic": _orphan_config,
    "a topic without its config znode": _without_config,
}


def _copied(snap: ZkSnapshot) -> MetadataImage:
    delta = MetadataDelta(MetadataImage.EMPTY)
    offset = -1
    for offset, raw in enumerate(translate(snap, TranslateReport(), SECRET)):
        delta.replay(MetadataRecord.FromString(raw), offset, 1)
    return replace(delta.apply(), offset=offset, epoch=1)


@pytest.mark.parametrize("quirk", sorted(QUIRKS))
def test_the_sync_after_a_copy_plans_within_the_scope_what_it_plans_over_everything(
    quirk: str,
) -> None:
    spec = seed.ClusterSpec(topics=20, partitions=300, pending_deletions=2, reassignment=True)
    snap = QUIRKS[quirk](seed.generate(spec))
    image = _copied(snap)
    desired = ImageView(image, ZK_CONTROLLER_EPOCH, SECRET)

    everything = plan(SnapshotView(snap, SECRET), desired, EVERYTHING, SECRET)
    scope = copied_scope(snap)
    scoped = plan(SnapshotView(snap, SECRET), desired, scope, SECRET)

    assert scoped.ops == everything.ops
    assert everything.ops  # the pending deletions at least
    assert scope.topics is not None and len(scope.topics) <= 4  # 2 pending, 1-2 quirks
    # no topic config is compared but an odd topic's, an orphan's or a missing one's
    assert scope.configs is not None
    topic_configs = {p for p in scope.configs if p.startswith(paths.TOPIC_CONFIGS)}
    assert len(topic_configs) <= 4 and len(snap.topics) == 20
