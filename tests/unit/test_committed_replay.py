"""CommittedMetadata's replay of a commit, on a metadata log on real files."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from migration.image.committed import CommittedMetadata
from migration.image.loader import MetadataLoader
from migration.image.snapshot_records import image_records
from migration.log.batch import LogBatch
from migration.log.metadata_log import FlushPolicy, MetadataLog
from tests.zk_timeline import topic_records


def test_a_commit_decodes_no_batch_past_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Three batches, committed one at a time: each commit decodes its own batch only,
    never the next one (appended, not committed yet: at a million partitions a leader
    decoded and dropped a 2,000-record batch at every commit step), and the image is
    the one a replay of all three in one go leaves."""
    metadata_log = MetadataLog(tmp_path / "log", flush=FlushPolicy.never())
    committed = CommittedMetadata(metadata_log)
    decoded: list[int] = []
    read = metadata_log.read

    def counted(from_offset: int | None = None) -> Iterator[LogBatch]:
        for batch in read(from_offset):
            decoded.append(batch.base_offset)
            yield batch

    monkeypatch.setattr(metadata_log, "read", counted)
    try:
        ends = [
            metadata_log.append(topic_records(name, [[1, 2, 3]] * 99), epoch=1).next_offset
            for name in ("a", "b", "c")
        ]
        for end in ends:
            committed.on_commit(end)
            assert committed.image.offset == end - 1
        assert decoded == [0, 100, 200]
        at_once = MetadataLoader()
        at_once.replay_all(metadata_log.records())
        assert list(image_records(committed.image)) == list(image_records(at_once.image))
    finally:
        committed.close()
        metadata_log.close()
