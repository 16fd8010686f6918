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
from tests.support import config_record


def values(log: MetadataLog) -> list[str]:
    return [r.config_record.value for _, _, r in log.records()]


def build(directory: Path, batches: int, segment_bytes: int = 16 << 20) -> list[int]:
    """A log of ``batches`` batches of 4 records; returns each batch's end position in
    the (last) segment file."""
    ends = []
    with MetadataLog(directory, segment_bytes=segment_bytes) as log:
        for b in range(batches):
            log.append([config_record(b * 4 + i) for i in range(4)], epoch=1)
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
            log.append([config_record(12)], epoch=1)  # and the log goes on from there
        with MetadataLog(work) as log:
            assert log.end_offset == 13 and log.recovered_bytes == 0
        shutil.rmtree(work)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(position=st.integers(min_value=0), bit=st.integers(min_value=0, max_value=7))
def test_a_flipped_bit_in_the_last_segment_is_corruption_never_a_shorter_log(
    pristine: tuple[Path, list[int]], tmp_path: Path, position: int, bit: int
) -> None:
    """A flipped bit in a whole batch is damage, not a torn write: the open refuses,
    naming file and byte, and changes nothing. The one look-alike of a torn write is a
    flip that makes the *last* batch's length run past the end of the file: cut."""
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
    batch_start = ends[damaged_batch - 1] if damaged_batch else 0
    length_grew_past_the_end = (
        damaged_batch == len(ends) - 1
        and position < batch_start + 4
        and int.from_bytes(data[batch_start : batch_start + 4], "big") + 4 > len(data) - batch_start
    )
    if length_grew_past_the_end:
        with MetadataLog(work) as log:
            assert values(log) == [str(i) for i in range(damaged_batch * 4)]
        return
    with pytest.raises(CorruptLogError, match=rf"{path.name} at byte {batch_start}\b"):
        MetadataLog(work)
    assert path.read_bytes() == bytes(data)  # nothing cut
    assert not check_log(work).ok


def test_a_corrupt_last_batch_is_cut_only_when_the_quorum_can_send_it_back(
    pristine: tuple[Path, list[int]], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    source, ends = pristine
    shutil.copytree(source, tmp_path / "w")
    path = segment_files(tmp_path / "w")[0]
    data = bytearray(path.read_bytes())
    data[ends[1] + 40] ^= 0x04  # inside the third batch's records
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptLogError, match=f"at byte {ends[1]}: CRC32C mismatch"):
        MetadataLog(tmp_path / "w")
    with caplog.at_level("ERROR"), MetadataLog(tmp_path / "w", repair_corrupt_tail=True) as log:
        assert values(log) == [str(i) for i in range(8)]
    assert any(
        r.levelname == "ERROR"
        and path.name in r.getMessage()
        and f"byte {ends[1]}" in r.getMessage()
        for r in caplog.records
    )


def test_valid_batches_after_a_bad_one_are_corruption_not_a_torn_tail(
    pristine: tuple[Path, list[int]], tmp_path: Path
) -> None:
    """The 1,934-byte case: a length field damaged so the batch seems to run past the
    end of the file, with whole batches after it -- those were written, so it is not a
    torn write."""
    source, ends = pristine
    shutil.copytree(source, tmp_path / "w")
    path = segment_files(tmp_path / "w")[0]
    data = bytearray(path.read_bytes())
    data[ends[0]] ^= 0x40  # the second batch's length, high byte
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptLogError, match=f"at byte {ends[0]}"):
        MetadataLog(tmp_path / "w")
    check = check_log(tmp_path / "w")
    assert not check.ok and f"at byte {ends[0]}" in check.errors[0]


def test_zero_fill_after_the_last_batch_is_a_torn_tail(
    pristine: tuple[Path, list[int]], tmp_path: Path
) -> None:
    source, ends = pristine
    shutil.copytree(source, tmp_path / "w")
    path = segment_files(tmp_path / "w")[0]
    with path.open("r+b") as f:
        f.truncate(ends[1])
        f.seek(ends[1])
        f.write(b"\0" * 4096)
    with MetadataLog(tmp_path / "w") as log:
        assert log.recovered_bytes == 4096 and log.end_offset == 8


def test_a_batch_with_a_valid_crc_but_undecodable_records_is_refused(tmp_path: Path) -> None:
    from migration.log.batch import encode_batch

    build(tmp_path, 2)
    path = segment_files(tmp_path)[0]
    with path.open("ab") as f:
        f.write(encode_batch(8, 1, 0, [b"\x0a\x05\xff\xff\xff\xff\xff"]))  # a record cut short
    with pytest.raises(CorruptLogError, match=r"at byte \d+: batch at offset 8 has a valid CRC"):
        MetadataLog(tmp_path)
    check = check_log(tmp_path)
    assert not check.ok and "offset 8" in check.errors[0]


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
