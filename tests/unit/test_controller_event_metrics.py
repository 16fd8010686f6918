"""Kafka's controller metrics where they are measured, on real components (the event
loop's thread, a metadata log on real files, a one-voter quorum): the event queue's
wait and processing times, the last applied record, metadata errors (a record that
fails to replay, a publisher that fails) and new active controllers (leader churn)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from migration.image.committed import CommittedMetadata
from migration.image.delta import RecordApplyError
from migration.image.publishing import ImageChange
from migration.log.metadata_log import FlushPolicy, MetadataLog
from migration.proto.metadata_pb2 import MetadataRecord
from migration.raft.event_loop import EventLoop
from migration.records import versions
from tests.lone_controller import LoneController, lone_controller


@pytest.fixture
def lone(tmp_path: Path) -> Iterator[LoneController]:
    controller = lone_controller(tmp_path / "lone")
    yield controller
    controller.close()


def test_an_event_behind_a_busy_one_waits_in_the_queue_at_least_its_hold(
    lone: LoneController,
) -> None:
    loop = EventLoop(name="test-loop", on_fatal=lambda reason, exc: None)
    loop.start(lone.node)
    try:
        held: list[float] = []
        done = threading.Event()
        go = threading.Event()

        def busy() -> None:
            go.wait(30)  # the second event is queued while this one holds the loop
            started = time.monotonic()
            time.sleep(0.05)
            held.append((time.monotonic() - started) * 1000)

        before_queue = loop.queue_time.summary().count
        before_processing = loop.processing_time.summary().count
        loop.post(busy)
        loop.post(done.set)
        go.set()
        assert done.wait(30)  # a hang guard
        queued = loop.queue_time.summary()
        processing = loop.processing_time.summary()
    finally:
        loop.stop()
    assert queued.count - before_queue == 2
    assert processing.count - before_processing >= 2
    assert processing.max_ms >= held[0]  # the busy event's own hold is in it
    assert queued.max_ms >= held[0]  # the one behind it waited that long at least


def test_the_last_applied_record_and_metadata_errors(tmp_path: Path) -> None:
    log = MetadataLog(tmp_path / "log", flush=FlushPolicy.never())
    committed = CommittedMetadata(log)
    try:
        assert committed.last_offset == -1 and committed.metadata_errors.value == 0
        good = MetadataRecord()
        good.feature_level_record.name = versions.METADATA_VERSION
        good.feature_level_record.feature_level = versions.LATEST
        appended_ms = int(time.time() * 1000) - 60_000  # appended a minute ago
        log.append([good], epoch=1, timestamp_ms=appended_ms)
        committed.on_commit(log.end_offset)
        assert committed.last_offset == 0
        assert committed.last_applied_timestamp_ms == appended_ms
        assert committed.last_applied_lag_ms >= 60_000  # applied now: lag from its append
        assert committed.metadata_errors.value == 0

        log.append([MetadataRecord()], epoch=1)  # an empty envelope replays nowhere
        with pytest.raises(RecordApplyError):
            committed.on_commit(log.end_offset)
        assert committed.metadata_errors.value == 1
        assert committed.last_offset == 0  # nothing of it applied

        class Failing:
            name = "failing"

            def publish(self, change: ImageChange) -> None:
                raise ValueError("cannot apply")

        committed.register(Failing())  # fails on the full image it is handed first
        committed.wait_published(30)
        assert committed.metadata_errors.value == 2
    finally:
        committed.close()
        log.close()


def test_each_new_leader_is_counted_once_per_epoch(lone: LoneController) -> None:
    controller, node = lone.controller, lone.node
    assert controller.new_active_controllers.value == 1  # its own first election
    controller.on_leader_change(node.leader_id, node.epoch)  # the same epoch again
    assert controller.new_active_controllers.value == 1
    node.resign()
    for _ in range(20):
        lone.now[0] += 1000
        node.tick()
    assert node.is_leader and node.epoch >= 2
    assert controller.new_active_controllers.value == 2
