"""A serving process's image is frozen out of the collector's full walks once built
whole (migration.common.gc_pause): loaded from a snapshot here, on real files; and a
large structure is freed a slice at a time, off its caller's thread."""

from __future__ import annotations

import dataclasses
import gc
import uuid
import weakref
from pathlib import Path

from migration.common.gc_pause import release_gradually
from migration.image.model import PartitionImage, TopicImage
from migration.image.snapshot_records import image_records
from migration.log.snapshots import SnapshotId
from tests.lone_controller import lone_controller


def test_an_image_loaded_from_a_snapshot_is_frozen_out_of_full_collections(
    tmp_path: Path,
) -> None:
    lone = lone_controller(tmp_path)
    try:
        tid = uuid.UUID(int=7).bytes
        partitions = {i: PartitionImage((1,), (1,), (), (), 1, 0, 0, 0) for i in range(50)}
        image = dataclasses.replace(
            lone.image, topics={tid: TopicImage("t", tid, partitions)}, topic_ids={"t": tid}
        )
        snapshot = SnapshotId(lone.controller.log.end_offset, lone.node.epoch)
        lone.controller.log.write_snapshot(snapshot, image_records(image))
        gc.unfreeze()  # whatever an earlier test froze
        lone.committed.on_snapshot_installed(snapshot)
        loaded = lone.image.topics[tid].partitions[0]
        assert loaded == partitions[0] and loaded is not partitions[0]
        later = PartitionImage((2,), (2,), (), (), 2, 0, 1, 1)
        walked = {id(o) for o in gc.get_objects()}  # every generation but the permanent
        assert gc.get_freeze_count() > 0 and id(loaded) not in walked
        assert id(later) in walked  # what comes after is collected as before
    finally:
        lone.close()


def test_a_large_structure_released_gradually_is_freed_on_its_own_thread() -> None:
    class Part:  # weakly referenceable, as a snapshot's objects are not: freed is seen
        pass

    parts = {f"t-{i}": [Part() for _ in range(3)] for i in range(2_000)}
    probe = weakref.ref(parts["t-1999"][2])
    thread = release_gradually(parts, "test")
    thread.join(60)  # hang guard
    assert not thread.is_alive() and thread.name == "release-test"
    assert parts == {} and probe() is None  # emptied, and what it held is freed
