"""CommittedMetadata replays a commit step a slice at a time, on a metadata log on real
files: ``on_commit`` is through with a step only after ``REPLAY_SLICE_RECORDS`` records
a call, publishes once at the step's end, decodes each batch once, and leaves the image
a replay in one go would."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from migration.image.committed import REPLAY_SLICE_RECORDS, CommittedMetadata
from migration.image.delta import RecordApplyError
from migration.image.loader import MetadataLoader
from migration.image.publishing import ImageChange
from migration.image.snapshot_records import image_records
from migration.log.batch import LogBatch
from migration.log.metadata_log import FlushPolicy, MetadataLog
from tests.zk_timeline import topic_records


class Changes:
    name = "changes"

    def __init__(self) -> None:
        self.changes: list[ImageChange] = []

    def publish(self, change: ImageChange) -> None:
        self.changes.append(change)


@pytest.fixture
def metadata_log(tmp_path: Path) -> Iterator[MetadataLog]:
    log = MetadataLog(tmp_path / "log", flush=FlushPolicy.never())
    yield log
    log.close()


def test_a_step_is_replayed_a_slice_a_call_and_published_once(
    metadata_log: MetadataLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two batches (a topic of 1,199 partitions, then one of 299) committed as one step
    of 1,500 records: three calls of 500, the first two not through and publishing
    nothing, the third publishing the whole step as one change; each batch decoded once."""
    assert REPLAY_SLICE_RECORDS == 500
    big = topic_records("big", [[1, 2, 3]] * 1199)
    small = topic_records("small", [[2, 3, 1]] * 299)
    metadata_log.append(big, epoch=1)
    metadata_log.append(small, epoch=1)
    decoded: list[int] = []
    read = metadata_log.read

    def counted(from_offset: int | None = None) -> Iterator[LogBatch]:
        for batch in read(from_offset):
            decoded.append(batch.base_offset)
            yield batch

    monkeypatch.setattr(metadata_log, "read", counted)
    committed = CommittedMetadata(metadata_log)
    changes = Changes()
    committed.register(changes)
    try:
        assert committed.wait_published(30)
        changes.changes.clear()  # the empty image a publisher is handed first
        end = metadata_log.end_offset
        assert end == 1500
        assert committed.on_commit(end) is False
        assert committed.last_offset == 499 and committed.image.offset == -1
        assert committed.on_commit(end) is False
        assert committed.last_offset == 999 and committed.image.offset == -1
        assert committed.wait_published(30) and changes.changes == []
        assert committed.on_commit(end) is True
        assert committed.image.offset == end - 1
        assert committed.on_commit(end) is True  # through: nothing more to do
        assert committed.wait_published(30)
        assert len(changes.changes) == 1 and changes.changes[0].manifest.last_offset == end - 1
        assert decoded == [0, 1200]  # each batch once, the first kept across slices
    finally:
        committed.close()
    at_once = MetadataLoader()
    at_once.replay_all(metadata_log.records())
    assert list(image_records(committed.image)) == list(image_records(at_once.image))
    assert len(committed.image.topics) == 2


def test_a_short_step_is_replayed_in_one_call(metadata_log: MetadataLog) -> None:
    metadata_log.append(topic_records("t", [[1]] * (REPLAY_SLICE_RECORDS - 1)), epoch=1)
    committed = CommittedMetadata(metadata_log)
    try:
        assert committed.on_commit(metadata_log.end_offset) is True
        assert committed.image.offset == REPLAY_SLICE_RECORDS - 1
    finally:
        committed.close()


def test_a_record_that_fails_in_a_later_slice_is_counted_and_raised(
    metadata_log: MetadataLog,
) -> None:
    """Bad data past the first slice still halts the replay (raised to the loop, which
    stops the process) with nothing of the step published."""
    records = topic_records("t", [[1]] * 700)
    records[600].partition_record.topic_id = b"\x00" * 16  # a partition of no topic
    metadata_log.append(records, epoch=1)
    committed = CommittedMetadata(metadata_log)
    try:
        assert committed.on_commit(metadata_log.end_offset) is False
        with pytest.raises(RecordApplyError):
            committed.on_commit(metadata_log.end_offset)
        assert committed.metadata_errors.value == 1
        assert committed.image.offset == -1
    finally:
        committed.close()
