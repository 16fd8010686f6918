"""The log's durability rules on real files: a failed fsync is never retried as if it
could succeed (fsyncgate); what a crash during a snapshot install leaves is reconciled
at open; byte budgets count every byte. A full disk and ``log verify`` / ``log dump``
in child processes: tests/integration/test_log_durability.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from migration.image.log_check import check_log
from migration.log.batch import (
    HEADER_SIZE,
    batched_by_bytes,
    encode_batch,
    frame_record,
    framed_size,
    grouped_unframed,
)
from migration.log.errors import LogFlushError
from migration.log.metadata_log import FlushPolicy, MetadataLog
from migration.log.segment import segment_name
from migration.log.snapshots import SnapshotId, write_snapshot
from migration.zk import multiwrite
from tests.support import config_record


def build(directory: Path, batches: int, epoch: int = 1, segment_bytes: int = 16 << 20) -> None:
    with MetadataLog(directory, segment_bytes=segment_bytes) as log:
        for b in range(batches):
            log.append([config_record(b * 4 + i) for i in range(4)], epoch=epoch)


# --- fsyncgate ------------------------------------------------------------------------------


def test_after_a_failed_fsync_nothing_counts_as_flushed_again(tmp_path: Path) -> None:
    log = MetadataLog(tmp_path / "log", flush=FlushPolicy.never())
    try:
        log.append([config_record(0)], epoch=1)  # not flushed yet
        active = log._segments[-1]
        saved = os.dup(active.fd)
        read_end, write_end = os.pipe()
        os.dup2(write_end, active.fd)  # fsync of a pipe fails for real (EINVAL)
        with pytest.raises(LogFlushError, match="fsync failed"):
            log.flush()
        os.dup2(saved, active.fd)  # the file is back: a retried fsync would "succeed"
        with pytest.raises(LogFlushError, match="an earlier fsync failed"):
            log.flush()
        with pytest.raises(LogFlushError):
            log.append([config_record(1)], epoch=1)
    finally:
        with pytest.raises(LogFlushError):  # closing flushes: refused too, files closed
            log.close()
        for fd in (saved, read_end, write_end):
            os.close(fd)


# --- snapshots and segments after a crash ---------------------------------------------------------


def test_segments_a_crashed_snapshot_install_left_behind_are_dropped(tmp_path: Path) -> None:
    """The install wrote the leader's snapshot (beyond this log's end), created the new
    segment at its end, and died while deleting the old segments: gaps a plain open
    would refuse."""
    build(tmp_path, 30, segment_bytes=1024)
    with MetadataLog(tmp_path) as log:
        end = log.end_offset
        olds = log.segment_paths
    fetched = SnapshotId(end + 80, 2)
    write_snapshot(tmp_path, fetched, [config_record(1)])
    (tmp_path / segment_name(fetched.end_offset)).touch()  # the install's new segment
    olds[1].unlink()  # one old segment already deleted
    assert not check_log(tmp_path).errors  # verify sees what an open will do
    with MetadataLog(tmp_path) as log:
        assert log.start_offset == fetched.end_offset == log.end_offset
        log.append([config_record(99)], epoch=2)
    assert not any(p.exists() for p in olds)
    assert check_log(tmp_path).ok


def test_segments_below_a_snapshot_without_a_gap_are_kept(tmp_path: Path) -> None:
    """Retention deletes them after a snapshot is written; an open does not (the
    snapshot has not been verified there)."""
    build(tmp_path, 30, segment_bytes=1024)
    with MetadataLog(tmp_path) as log:
        log.write_snapshot(SnapshotId(60, 1), [config_record(1)])
        segments = log.segment_paths
    with MetadataLog(tmp_path) as log:
        assert log.segment_paths == segments and log.start_offset == 0


def test_a_log_that_ends_below_its_latest_snapshot_restarts_at_it(tmp_path: Path) -> None:
    build(tmp_path, 2)  # offsets 0..7
    with MetadataLog(tmp_path) as log:
        log.write_snapshot(SnapshotId(8, 1), [config_record(1)])
    snapshot = tmp_path / SnapshotId(8, 1).file_name
    os.rename(snapshot, tmp_path / SnapshotId(100, 3).file_name)  # fetched from a leader
    with MetadataLog(tmp_path, read_only=True) as log:
        assert log.reconciled and "restarts at offset 100" in log.reconciled[0]
    check = check_log(tmp_path)
    assert any("restarts at offset 100" in w for w in check.warnings)
    with MetadataLog(tmp_path) as log:
        assert log.start_offset == 100 and log.end_offset == 100 and log.last_epoch == 3
        log.append([config_record(100)], epoch=3)


# --- byte budgets ---------------------------------------------------------------------------


def test_a_batch_budget_counts_the_batch_header() -> None:
    encoded = [config_record(i).SerializeToString() for i in range(200)]
    budget = 1000
    for batch in batched_by_bytes(encoded, budget):
        assert len(encode_batch(0, 1, 0, batch)) <= budget or len(batch) == 1
    assert len(encode_batch(0, 1, 0, [b"\x0a\x00"])) - 2 == HEADER_SIZE


@pytest.mark.parametrize("max_records", [None, 7])
def test_records_grouped_unframed_fall_as_their_frames_do(max_records: int | None) -> None:
    """The live copy groups serialized records without framing them: the same batches."""
    encoded = [config_record(i).SerializeToString() * (1 + i % 90) for i in range(300)]
    assert any(framed_size(len(e)) > 0x80 for e in encoded)
    framed = list(batched_by_bytes(encoded, 1000, max_records))
    unframed = list(grouped_unframed(encoded, 1000, max_records))
    assert [len(b) for b in framed] == [len(b) for b in unframed]
    assert [[frame_record(e) for e in b] for b in unframed] == framed
    assert all(framed_size(len(e)) == len(frame_record(e)) for e in encoded)


@pytest.mark.parametrize("chroot", ["", "/kafka/a-rather-long-chroot-prefix"])
def test_a_multi_budget_counts_the_chroot_and_the_request_header(chroot: str) -> None:
    ops = [
        multiwrite.create(f"/brokers/topics/t{i}", b"x" * (i % 50)) for i in range(300)
    ] + [multiwrite.set_data("/x", b"y", 3), multiwrite.check("/migration", 7),
         multiwrite.delete("/old", 1)]  # fmt: skip
    budget = 4096
    for op in ops:
        assert op.size(chroot) == len(op.encode(chroot))
    for batch in multiwrite.batches(ops, budget, chroot):
        request = multiwrite.MultiWrite(batch, chroot).serialize()
        assert len(request) + multiwrite.REQUEST_OVERHEAD - len(multiwrite.MULTI_END) <= budget


def test_a_large_snapshot_is_synced_as_it_is_written_not_only_at_its_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[int] = []  # the file's size at each fdatasync (the real one still runs)
    real = os.fdatasync

    def counted(fd: int) -> None:
        synced.append(os.fstat(fd).st_size)
        real(fd)

    monkeypatch.setattr(os, "fdatasync", counted)
    monkeypatch.setattr("migration.log.snapshots.SYNC_EVERY_BYTES", 64 << 10)
    records = (config_record(i) for i in range(20_000))
    path = write_snapshot(tmp_path, SnapshotId(20_000, 1), records, batch_bytes=16 << 10)
    assert path.stat().st_size > 8 * (64 << 10) and len(synced) >= 8
    # never more than the threshold and one batch written between two syncs
    assert all(
        b - a <= (64 << 10) + (16 << 10) for a, b in zip([0, *synced[:-1]], synced, strict=True)
    )
