"""The segmented metadata log on real files: offsets, rolling, reads, truncation,
reopening, flushing, the directory lock, snapshots and segment retention."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from migration.log.batch import frame_record
from migration.log.errors import CorruptLogError, LogDirLockedError, OffsetOutOfRangeError
from migration.log.metadata_log import FlushPolicy, MetadataLog
from migration.log.snapshots import SnapshotId, list_snapshots, read_snapshot
from migration.proto.metadata_pb2 import MetadataRecord


def topic(i: int) -> MetadataRecord:
    r = MetadataRecord()
    r.topic_record.name = f"topic-{i}"
    r.topic_record.topic_id = i.to_bytes(16, "big")
    return r


def names(log: MetadataLog, start: int | None = None) -> list[str]:
    return [r.topic_record.name for _, _, r in log.records(start)]


def fill(log: MetadataLog, batches: int, per_batch: int = 3, epoch: int = 1) -> None:
    for b in range(batches):
        log.append([topic(b * per_batch + i) for i in range(per_batch)], epoch)


def test_append_returns_contiguous_offsets_and_reads_back(tmp_path: Path) -> None:
    with MetadataLog(tmp_path) as log:
        first = log.append([topic(0), topic(1)], epoch=1)
        second = log.append([topic(2)], epoch=2)
        assert (first.base_offset, first.last_offset) == (0, 1)
        assert (second.base_offset, second.last_offset) == (2, 2)
        assert (log.start_offset, log.end_offset, log.last_epoch) == (0, 3, 2)
        assert [(o, e) for o, e, _ in log.records()] == [(0, 1), (1, 1), (2, 2)]
        assert names(log) == ["topic-0", "topic-1", "topic-2"]


def test_segments_roll_by_size_and_are_named_by_base_offset(tmp_path: Path) -> None:
    with MetadataLog(tmp_path, segment_bytes=1024) as log:
        fill(log, 40)
        paths = log.segment_paths
        assert len(paths) > 3
        bases = [int(p.name.removesuffix(".log")) for p in paths]
        assert all(len(p.name) == len("00000000000000000000.log") for p in paths)
        assert bases[0] == 0 and bases == sorted(bases)
        assert all(p.stat().st_size <= 1024 for p in paths[:-1])
        assert names(log) == [f"topic-{i}" for i in range(120)]


def test_reads_from_any_offset_start_at_the_batch_holding_it(tmp_path: Path) -> None:
    with MetadataLog(tmp_path, segment_bytes=1024) as log:
        fill(log, 40)
        for start in (0, 1, 2, 3, 59, 60, 61, 119, 120):
            assert names(log, start) == [f"topic-{i}" for i in range(start, 120)]
            batches = list(log.read(start))
            if start < 120:
                assert batches[0].base_offset <= start <= batches[0].last_offset
        with pytest.raises(OffsetOutOfRangeError):
            list(log.read(121))


def test_reopen_rebuilds_the_index(tmp_path: Path) -> None:
    with MetadataLog(tmp_path, segment_bytes=1024) as log:
        fill(log, 30, epoch=4)
    with MetadataLog(tmp_path, segment_bytes=1024) as log:
        assert (log.start_offset, log.end_offset, log.last_epoch) == (0, 90, 4)
        assert names(log, 45)[0] == "topic-45"
        log.append([topic(90)], epoch=5)
        assert log.end_offset == 91


def test_truncate_to_a_batch_boundary_across_segments(tmp_path: Path) -> None:
    with MetadataLog(tmp_path, segment_bytes=1024) as log:
        fill(log, 40)
        segments_before = len(log.segment_paths)
        log.truncate_to(30)
        assert log.end_offset == 30
        assert len(log.segment_paths) < segments_before
        assert names(log) == [f"topic-{i}" for i in range(30)]
        with pytest.raises(ValueError, match="inside a batch"):
            log.truncate_to(10)
        with pytest.raises(OffsetOutOfRangeError):
            log.truncate_to(31)
        log.append([topic(999)], epoch=2)
        assert names(log, 30) == ["topic-999"]
    with MetadataLog(tmp_path) as log:
        assert log.end_offset == 31


def test_epochs_never_go_back(tmp_path: Path) -> None:
    with MetadataLog(tmp_path) as log:
        log.append([topic(0)], epoch=3)
        with pytest.raises(ValueError, match="older"):
            log.append([topic(1)], epoch=2)


def test_flush_policy_every_n_batches(tmp_path: Path) -> None:
    synced: list[int] = []
    with MetadataLog(tmp_path, flush=FlushPolicy(every_batches=3)) as log:
        real = log._segments[-1].flush
        log._segments[-1].flush = lambda: (synced.append(log.end_offset), real())[1]  # type: ignore[method-assign]
        fill(log, 7, per_batch=1)
        assert synced == [3, 6]


def test_flush_policy_by_time(tmp_path: Path) -> None:
    now = [0.0]
    with MetadataLog(
        tmp_path, flush=FlushPolicy(every_batches=0, every_seconds=5), clock=lambda: now[0]
    ) as log:
        log.append([topic(0)], epoch=1)
        assert log._durability.unflushed == 1
        now[0] = 6.0
        log.append([topic(1)], epoch=1)
        assert log._durability.unflushed == 0


def test_a_second_writer_is_refused(tmp_path: Path) -> None:
    with MetadataLog(tmp_path):
        with pytest.raises(LogDirLockedError, match=str(os.getpid())):
            MetadataLog(tmp_path)
        with MetadataLog(tmp_path, read_only=True) as reader:  # readers take no lock
            assert reader.end_offset == 0
    with MetadataLog(tmp_path):  # released on close
        pass


def test_read_only_open_refuses_writes(tmp_path: Path) -> None:
    with MetadataLog(tmp_path) as log:
        fill(log, 2)
    with MetadataLog(tmp_path, read_only=True) as log:
        with pytest.raises(PermissionError):
            log.append([topic(9)], epoch=1)
        with pytest.raises(PermissionError):
            log.truncate_to(0)


def test_snapshot_write_read_and_retention(tmp_path: Path) -> None:
    with MetadataLog(tmp_path, segment_bytes=1024) as log:
        fill(log, 40)
        snap_id = SnapshotId(end_offset=60, epoch=1)
        path = log.write_snapshot(snap_id, (topic(i) for i in range(5000)))
        assert path.name == "00000000000000000060-0000000001.checkpoint"
        assert list_snapshots(tmp_path) == [snap_id]
        assert [r.topic_record.name for r in read_snapshot(path)] == [
            f"topic-{i}" for i in range(5000)
        ]
        deleted = log.delete_segments_below(60)
        assert deleted > 0
        assert 0 < log.start_offset <= 60
        assert names(log, 60)[0] == "topic-60"
        with pytest.raises(OffsetOutOfRangeError):
            list(log.read(0))
        with pytest.raises(ValueError, match="no snapshot"):
            log.delete_segments_below(100)
    with MetadataLog(tmp_path) as log:  # the log start survives a reopen
        assert log.start_offset > 0 and log.end_offset == 120


def test_snapshot_beyond_the_log_end_is_refused(tmp_path: Path) -> None:
    with MetadataLog(tmp_path) as log, pytest.raises(OffsetOutOfRangeError):
        log.write_snapshot(SnapshotId(5, 1), [])


def test_a_cut_short_snapshot_is_detected(tmp_path: Path) -> None:
    with MetadataLog(tmp_path) as log:
        fill(log, 1)
        path = log.write_snapshot(SnapshotId(3, 1), [topic(i) for i in range(3)])
    data = path.read_bytes()
    # Drop the last batch (which holds the footer) by rewriting the file as its first batch.
    from migration.log.batch import encode_batch

    only_header_and_records = encode_batch(
        0, 1, 0, [frame_record(r.SerializeToString()) for r in _with_header([topic(0)])]
    )
    path.write_bytes(only_header_and_records)
    with pytest.raises(CorruptLogError, match="no footer"):
        list(read_snapshot(path))
    path.write_bytes(data[:-3])
    with pytest.raises(CorruptLogError):
        list(read_snapshot(path))


def _with_header(records: list[MetadataRecord]) -> list[MetadataRecord]:
    header = MetadataRecord()
    header.snapshot_header_record.last_contained_log_timestamp = 1
    return [header, *records]


def test_a_crash_while_writing_a_snapshot_leaves_no_snapshot(tmp_path: Path) -> None:
    def boom() -> list[MetadataRecord]:
        raise RuntimeError("crash")

    with MetadataLog(tmp_path) as log:
        fill(log, 1)

        def records() -> object:
            yield topic(0)
            boom()

        with pytest.raises(RuntimeError):
            log.write_snapshot(SnapshotId(3, 1), records())  # type: ignore[arg-type]
        assert list_snapshots(tmp_path) == []
        assert not list(tmp_path.glob("*.part"))
    (tmp_path / "00000000000000000003-0000000001.checkpoint.part").write_bytes(b"junk")
    with MetadataLog(tmp_path):  # left-over partial snapshots are removed on open
        assert not list(tmp_path.glob("*.part"))


def test_small_segments_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="segment size"):
        MetadataLog(tmp_path, segment_bytes=10)
