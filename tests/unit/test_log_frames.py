"""Log files read a batch at a time (migration.log.frame_file): batches across the read
window's border, batches larger than the window, and damage found beyond the first
window are judged exactly as the recovery rules say (real files)."""

from __future__ import annotations

import os
import shutil
import struct
from pathlib import Path

import pytest

from migration.common.limits import MAX_BATCH_BYTES
from migration.image.log_check import check_log
from migration.log.batch import HEADER_SIZE
from migration.log.errors import CorruptLogError
from migration.log.frame_file import WINDOW_BYTES
from migration.log.metadata_log import MetadataLog
from migration.log.snapshots import SnapshotId, read_snapshot, write_snapshot
from migration.proto.metadata_pb2 import MetadataRecord
from tests.support import config_record


def big_record(i: int, size: int) -> MetadataRecord:
    record = config_record(i)
    record.config_record.value = str(i).ljust(size, "x")
    return record


def values(log: MetadataLog) -> list[str]:
    return [r.config_record.value.rstrip("x") for _, _, r in log.records()]


@pytest.fixture(scope="module")
def wide(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[int]]:
    """One segment several windows long: batches of every size, some across a window
    border, one of them larger than a window. Returns the directory and every batch's
    end position."""
    directory = tmp_path_factory.mktemp("wide")
    ends = []
    with MetadataLog(directory, segment_bytes=1 << 30) as log:
        offset = 0
        for b in range(60):
            size = 3 * WINDOW_BYTES // 2 if b == 20 else 300 * (b % 7 + 1) * (b + 1)
            records = [big_record(offset + i, size // 4) for i in range(4)]
            log.append(records, epoch=1)
            offset += len(records)
            ends.append(log._segments[-1].size)
    assert ends[-1] > 3 * WINDOW_BYTES
    return directory, ends


def only_segment(directory: Path) -> Path:
    (path,) = directory.glob("*.log")
    return path


def test_a_segment_of_many_windows_opens_whole(wide: tuple[Path, list[int]]) -> None:
    directory, _ends = wide
    with MetadataLog(directory, read_only=True) as log:
        assert not log.problems and log.torn_tail is None
        assert values(log) == [str(i) for i in range(240)]
    check = check_log(directory)
    assert check.ok and check.batches == 60 and check.records == 240


def test_a_torn_tail_after_many_windows_is_cut(
    wide: tuple[Path, list[int]], tmp_path: Path
) -> None:
    directory, ends = wide
    work = tmp_path / "w"
    shutil.copytree(directory, work)
    os.truncate(only_segment(work), ends[-2] + (ends[-1] - ends[-2]) // 2)
    with MetadataLog(work) as log:
        assert log.recovered_bytes == (ends[-1] - ends[-2]) // 2
        assert values(log) == [str(i) for i in range(236)]


def test_damage_before_whole_batches_beyond_the_window_is_corruption(
    wide: tuple[Path, list[int]], tmp_path: Path
) -> None:
    """A length made to run past the end of the file looks torn, but whole batches
    more than a window later were written: corruption, named at its byte."""
    directory, ends = wide
    work = tmp_path / "w"
    shutil.copytree(directory, work)
    path = only_segment(work)
    damaged = ends[5]
    assert ends[-1] - damaged > 2 * WINDOW_BYTES
    with path.open("r+b") as f:
        f.seek(damaged)
        f.write(struct.pack(">I", ends[-1]))  # runs past the end of the file
    with pytest.raises(CorruptLogError, match=rf"{path.name} at byte {damaged}: batch of"):
        MetadataLog(work)
    check = check_log(work)
    assert not check.ok and f"at byte {damaged}" in check.errors[0]


def test_a_flipped_bit_in_a_batch_larger_than_the_window_is_corruption(
    wide: tuple[Path, list[int]], tmp_path: Path
) -> None:
    directory, ends = wide
    work = tmp_path / "w"
    shutil.copytree(directory, work)
    path = only_segment(work)
    data = bytearray(path.read_bytes())
    data[ends[19] + WINDOW_BYTES + 17] ^= 0x08  # inside the big batch, a window in
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptLogError, match=rf"at byte {ends[19]}: CRC32C mismatch"):
        MetadataLog(work)


@pytest.mark.parametrize("length", [2**31 - 1, 2**32 - 1, MAX_BATCH_BYTES + 1])
def test_a_header_claiming_more_than_the_format_allows_is_a_torn_tail(
    tmp_path: Path, length: int
) -> None:
    """Never an allocation: the length is judged from the header alone."""
    with MetadataLog(tmp_path) as log:
        log.append([config_record(0)], epoch=1)
        end = log._segments[-1].size
    path = only_segment(tmp_path)
    with path.open("ab") as f:
        f.write(struct.pack(">I", length) + os.urandom(HEADER_SIZE - 4 + 100))
    check = check_log(tmp_path)
    assert check.ok
    assert f"at byte {end}: impossible batch length {length}" in check.warnings[0]
    with MetadataLog(tmp_path) as log:
        assert log.recovered_bytes == HEADER_SIZE + 100 and log.end_offset == 1


def test_a_snapshot_of_many_windows_reads_whole_and_its_damage_is_named(
    tmp_path: Path,
) -> None:
    snap = SnapshotId(4000, 3)
    records = [big_record(i, 900) for i in range(4000)]
    path = write_snapshot(tmp_path, snap, records, batch_bytes=3 * WINDOW_BYTES // 2)
    assert path.stat().st_size > 3 * WINDOW_BYTES
    assert [r.config_record.value for r in read_snapshot(path)] == [
        r.config_record.value for r in records
    ]
    data = bytearray(path.read_bytes())
    data[2 * WINDOW_BYTES] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptLogError, match=rf"{path.name} at byte \d+: CRC32C mismatch"):
        for _ in read_snapshot(path):
            pass
