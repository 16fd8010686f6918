"""Corrupt and torn logs on disk: recovery cuts a torn tail of the last segment back to
the last valid batch and never returns corrupt data; damage anywhere else is reported
(naming file and byte), never skipped, and the files are left untouched."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from migration.image.log_check import check_log
from migration.log.errors import CorruptLogError
from migration.log.metadata_log import MetadataLog
from migration.proto.metadata_pb2 import MetadataRecord


def record(i: int) -> MetadataRecord:
    r = MetadataRecord()
    r.config_record.resource_type = 2
    r.config_record.resource_name = f"topic-{i}"
    r.config_record.name = "retention.ms"
    r.config_record.value = str(i)
    return r


def values(log: MetadataLog) -> list[str]:
    return [r.config_record.value for _, _, r in log.records()]


def build(directory: Path, batches: int, segment_bytes: int = 16 << 20) -> list[int]:
    """A log of ``batches`` batches of 4 records; returns each batch's end position in
    the (last) segment file."""
    ends = []
    with MetadataLog(directory, segment_bytes=segment_bytes) as log:
        for b in range(batches):
            log.append([record(b * 4 + i) for i in range(4)], epoch=1)
            ends.append(log._segments[-1].size)
    return ends


def segment_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.log"))


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[int]]:
    directory = tmp_path_factory.mktemp("pristine")
    return directory, build(directory, 3)


def test_a_torn_last_batch_is_cut_at_every_byte(
    pristine: tuple[Path, list[int]], tmp_path: Path
) -> None:
    source, ends = pristine
    for cut in range(ends[1], ends[2]):
        work = tmp_path / f"cut-{cut}"
        shutil.copytree(source, work)
        os.truncate(segment_files(work)[0], cut)
        with MetadataLog(work) as log:
            assert log.end_offset == 8, cut
            assert log.recovered_bytes == cut - ends[1]
            assert values(log) == [str(i) for i in range(8)]
        assert segment_files(work)[0].stat().st_size == ends[1]
        shutil.rmtree(work)


def test_garbage_after_the_last_batch_is_cut(
    pristine: tuple[Path, list[int]], tmp_path: Path
) -> None:
    source, _ends = pristine
    for garbage in (os.urandom(1), os.urandom(40), os.urandom(5000), b"\x00" * 300):
        work = tmp_path / "w"
        shutil.copytree(source, work)
        with segment_files(work)[0].open("ab") as f:
            f.write(garbage)
        with MetadataLog(work) as log:
            assert log.end_offset == 12
            assert log.recovered_bytes == len(garbage)
            assert values(log) == [str(i) for i in range(12)]
            log.append([record(12)], epoch=1)  # and the log goes on from there
        with MetadataLog(work) as log:
            assert log.end_offset == 13 and log.recovered_bytes == 0
        shutil.rmtree(work)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(position=st.integers(min_value=0), bit=st.integers(min_value=0, max_value=7))
def test_a_flipped_bit_in_the_last_segment_never_reaches_a_reader(
    pristine: tuple[Path, list[int]], tmp_path: Path, position: int, bit: int
) -> None:
    source, ends = pristine
    work = tmp_path / "flip"
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(source, work)
    path = segment_files(work)[0]
    data = bytearray(path.read_bytes())
    position %= len(data)
    data[position] ^= 1 << bit
    path.write_bytes(bytes(data))
    damaged_batch = next(i for i, end in enumerate(ends) if position < end)
    with MetadataLog(work) as log:
        assert log.end_offset == damaged_batch * 4
        assert values(log) == [str(i) for i in range(damaged_batch * 4)]


def test_a_sealed_segment_with_its_tail_deleted_is_reported(tmp_path: Path) -> None:
    build(tmp_path, 30, segment_bytes=1024)
    first = segment_files(tmp_path)[0]
    os.truncate(first, first.stat().st_size - 10)
    before = {p.name: p.read_bytes() for p in segment_files(tmp_path)}
    with pytest.raises(CorruptLogError, match=first.name):
        MetadataLog(tmp_path)
    assert {p.name: p.read_bytes() for p in segment_files(tmp_path)} == before  # untouched
    check = check_log(tmp_path)
    assert not check.ok and any(first.name in e for e in check.errors)


def test_a_corrupt_batch_in_the_middle_of_a_sealed_segment_is_reported(tmp_path: Path) -> None:
    build(tmp_path, 30, segment_bytes=1024)
    first = segment_files(tmp_path)[0]
    data = bytearray(first.read_bytes())
    data[len(data) // 2] ^= 0x10
    first.write_bytes(bytes(data))
    with pytest.raises(CorruptLogError, match=rf"{first.name} at byte \d+"):
        MetadataLog(tmp_path)
    assert first.read_bytes() == bytes(data)
    with MetadataLog(tmp_path, read_only=True) as log:
        assert log.problems and first.name in str(log.problems[0])
    assert not check_log(tmp_path).ok


def test_a_missing_segment_is_a_gap_not_a_shorter_log(tmp_path: Path) -> None:
    build(tmp_path, 30, segment_bytes=1024)
    files = segment_files(tmp_path)
    files[1].unlink()
    with pytest.raises(CorruptLogError, match="records are missing"):
        MetadataLog(tmp_path)


def test_bytes_that_rot_after_the_open_are_caught_on_read(tmp_path: Path) -> None:
    build(tmp_path, 3)
    with MetadataLog(tmp_path) as log:
        path = segment_files(tmp_path)[0]
        data = bytearray(path.read_bytes())
        data[-5] ^= 0xFF
        path.write_bytes(bytes(data))
        with pytest.raises(CorruptLogError, match="CRC32C mismatch"):
            values(log)


def test_verify_reports_a_torn_tail_as_a_warning(
    pristine: tuple[Path, list[int]], tmp_path: Path
) -> None:
    source, ends = pristine
    work = tmp_path / "w"
    shutil.copytree(source, work)
    os.truncate(segment_files(work)[0], ends[2] - 3)
    check = check_log(work)
    assert check.ok and check.records == 8
    assert check.warnings and "truncates it" in check.warnings[0]
    assert segment_files(work)[0].stat().st_size == ends[2] - 3  # verify changes nothing
