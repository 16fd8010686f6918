"""The log's durability rules on real files: a failed fsync is never retried as if it
could succeed (fsyncgate); what a crash during a snapshot install leaves is reconciled
at open; byte budgets count every byte; and ``log verify`` names every problem."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
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
from migration.log.errors import CorruptLogError, LogFlushError
from migration.log.metadata_log import FlushPolicy, MetadataLog
from migration.log.segment import segment_name
from migration.log.snapshots import SnapshotId, write_snapshot
from migration.raft.quorum_state_store import ElectionState, FileQuorumStateStore
from migration.zk import multiwrite
from tests.support import config_record, zk2kraft


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


_FILLS_UP = """
import resource, signal, sys
from pathlib import Path
from migration.log.metadata_log import MetadataLog
from tests.support import config_record

log = MetadataLog(Path(sys.argv[1]))
log.append([config_record(0)], epoch=1)
segment = log.segment_paths[-1]
size = segment.stat().st_size
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # over the limit: EFBIG, as a full disk ENOSPC
resource.setrlimit(resource.RLIMIT_FSIZE, (size + 10, resource.RLIM_INFINITY))
try:
    log.append([config_record(i) for i in range(1, 50)], epoch=1)
except OSError as exc:
    print(exc.errno, exc.filename, segment.stat().st_size - size)
"""


def test_an_append_the_disk_cannot_hold_names_why_and_leaves_no_partial_batch(
    tmp_path: Path,
) -> None:
    """The kernel writes what fits and says why it stopped only on the next write: the
    error names the errno and the file (a full disk reads as one), and the segment is
    cut back to its last whole batch. A real limit, in a process of its own."""
    done = subprocess.run(
        [sys.executable, "-c", _FILLS_UP, str(tmp_path / "log")],
        check=False, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    code, path, grown = done.stdout.split()
    assert (int(code), Path(path).parent, int(grown)) == (errno.EFBIG, tmp_path / "log", 0)
    with MetadataLog(tmp_path / "log", read_only=True) as log:
        assert log.end_offset == 1 and not log.problems


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


# --- log verify names every problem ---------------------------------------------------------------


def verify(directory: Path) -> tuple[int, str]:
    result = zk2kraft("log", "verify", "--log-dir", str(directory))
    assert "Traceback" not in result.stderr
    return result.returncode, result.stdout + result.stderr


def test_verify_refuses_an_empty_directory(tmp_path: Path) -> None:
    code, out = verify(tmp_path)
    assert code == 1 and "not a metadata log" in out


def test_verify_names_files_a_log_directory_does_not_hold(tmp_path: Path) -> None:
    build(tmp_path, 2)
    (tmp_path / "notes.txt").write_text("hello")
    (tmp_path / "0000000000000000001.log").write_bytes(b"")  # 19 digits: misnamed
    code, out = verify(tmp_path)
    assert code == 1 and "notes.txt" in out and "0000000000000000001.log" in out
    with pytest.raises(CorruptLogError, match="named like a segment"):
        MetadataLog(tmp_path)


def test_verify_refuses_epochs_that_go_back(tmp_path: Path) -> None:
    build(tmp_path, 2, epoch=5)
    with (tmp_path / segment_name(0)).open("ab") as f:  # a whole, valid batch of epoch 1
        f.write(encode_batch(8, 1, 0, [frame_record(config_record(8).SerializeToString())]))
    code, out = verify(tmp_path)
    assert code == 1 and "has epoch 1, older than the epoch 5" in out, out
    with pytest.raises(CorruptLogError, match="older than the epoch 5"):
        MetadataLog(tmp_path)


def test_verify_does_not_hang_on_a_fifo_named_like_a_segment(tmp_path: Path) -> None:
    build(tmp_path, 2)
    os.mkfifo(tmp_path / segment_name(10_000))
    code, out = verify(tmp_path)
    assert code == 1 and "not a regular file" in out


def test_dump_names_an_undecodable_batch_without_a_traceback(tmp_path: Path) -> None:
    build(tmp_path, 1)
    with (tmp_path / segment_name(0)).open("ab") as f:
        f.write(encode_batch(4, 1, 0, [b"\x0a\x05\xff\xff\xff\xff\xff"]))
    result = zk2kraft("log", "dump", "--log-dir", str(tmp_path))
    assert "Traceback" not in result.stderr
    assert segment_name(0) in result.stderr and "offset 4" in result.stderr


_STATE_CUT_SHORT = """
import resource, signal, sys
from pathlib import Path
from migration.raft.quorum_state_store import ElectionState, FileQuorumStateStore

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (20, resource.RLIM_INFINITY))  # the kernel: 20 bytes
try:
    FileQuorumStateStore(Path(sys.argv[1])).write(ElectionState(7, leader_id=2, voted_id=2))
except OSError as exc:
    print(exc.errno)
"""


def test_a_quorum_state_the_disk_cannot_hold_whole_is_an_error_never_a_cut_file(
    tmp_path: Path,
) -> None:
    """A short write of ``quorum-state`` raises (the node halts) and the file in place is
    the previous one: a state cut short would stop the node from starting again."""
    store = FileQuorumStateStore(tmp_path)
    store.write(ElectionState(6, leader_id=1, voted_id=1))
    done = subprocess.run(
        [sys.executable, "-c", _STATE_CUT_SHORT, str(tmp_path)],
        check=False, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert (done.returncode, done.stdout.strip()) == (0, str(errno.EFBIG)), done.stderr
    assert store.read() == ElectionState(6, leader_id=1, voted_id=1)
