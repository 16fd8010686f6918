"""A Kafka controller's metadata log directory: dumped, verified, replayed, written back.

The directories are laid out as Kafka leaves them (tests/kafka_log_dir.py); the same
records written into the project's own log replay to the same image."""

from __future__ import annotations

import json
from pathlib import Path

import google_crc32c
import pytest

from migration.cli.main import main
from migration.image.at_offset import image_at
from migration.image.kafka_export import export_kafka
from migration.image.log_check import check_log
from migration.kafka_log.batch import CRC_FROM, parse_header
from migration.kafka_log.directory import read_kafka_snapshot
from migration.kafka_log.formats import detect_format
from migration.kafka_log.mapping import to_proto
from migration.kafka_log.records import encode_metadata
from migration.kafka_log.writer import write_snapshot
from migration.log.metadata_log import MetadataLog
from migration.log.snapshots import SnapshotId
from tests.kafka_log_dir import Batch, batch_bytes, migration_batches, rec, write_kafka_dir


def own_log(directory: Path, batches: list[Batch]) -> Path:
    """The same records in the project's own log, batch for batch."""
    with MetadataLog(directory) as log:
        for b in batches:
            log.append([to_proto(r) for r in b.records], b.epoch)
    return directory


def dump(log_dir: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> list[dict[str, object]]:
    assert main(["log", "dump", "--log-dir", str(log_dir), "--json", *extra]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_a_kafka_directory_dumps_verifies_and_replays_as_the_own_log_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kd = write_kafka_dir(tmp_path / "kafka")
    assert detect_format(kd.root) == detect_format(kd.partition_dir) == "kafka"
    records = dump(kd.root, capsys)
    assert [r["offset"] for r in records] == list(range(24))
    assert records[0]["type"] == "LeaderChangeMessage" and records[0]["leader_id"] == 3000
    assert {r["type"] for r in records} >= {
        "RegisterControllerRecord", "RegisterBrokerRecord", "PartitionRecord", "ClearElrRecord",
        "BeginTransactionRecord", "EndTransactionRecord", "NoOpRecord", "PartitionChangeRecord",
    }  # fmt: skip
    partition = next(r for r in records if r["type"] == "PartitionRecord")
    assert partition["version"] == 1 and partition["directories"] == ["b2ykbqbgTo2Fr6cYsahxqw"] * 3

    check = check_log(kd.partition_dir)
    assert (check.ok, check.format, check.warnings) == (True, "kafka", [])
    assert (check.batches, check.records, check.end_offset) == (12, 24, 24)

    own = own_log(tmp_path / "own", kd.batches)
    assert detect_format(own) == "zk2kraft"
    ours, theirs = image_at(own, None).image, image_at(kd.root, None).image
    assert ours == theirs and (theirs.offset, theirs.epoch) == (23, 2)
    assert theirs.topic("orders") is not None
    assert theirs.topic("orders").partitions[0].isr == (1, 2)  # type: ignore[union-attr]
    assert theirs.brokers[1].in_controlled_shutdown and theirs.zk_migration_state == 1


def test_every_flipped_byte_of_a_segment_is_reported(tmp_path: Path) -> None:
    kd = write_kafka_dir(tmp_path / "kafka")
    good = kd.segment.read_bytes()
    last_batch = len(good) - len(batch_bytes(23, kd.batches[-1]))
    for i in range(len(good)):
        bad = bytearray(good)
        bad[i] ^= 0x10
        kd.segment.write_bytes(bytes(bad))
        check = check_log(kd.root)
        assert check.errors or check.warnings, f"a flip at byte {i} went unseen"
        if check.errors:
            assert str(kd.segment) in check.errors[0]
        else:  # only a longer length or a newer epoch in the last batch can look benign
            assert i >= last_batch, f"byte {i}: {check.warnings}"
    kd.segment.write_bytes(good)
    assert check_log(kd.root).ok


def test_a_torn_tail_is_a_warning_and_the_batches_before_it_stand(tmp_path: Path) -> None:
    kd = write_kafka_dir(tmp_path / "kafka")
    good = kd.segment.read_bytes()
    last_batch = len(good) - len(batch_bytes(23, kd.batches[-1]))
    for cut in range(last_batch + 1, len(good)):
        kd.segment.write_bytes(good[:cut])
        check = check_log(kd.root)
        assert check.ok and check.end_offset == 23, cut
        assert any("torn tail" in w for w in check.warnings)


def test_an_unknown_record_is_a_named_error_unless_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kd = write_kafka_dir(tmp_path / "kafka")
    unknown = batch_bytes(24, Batch(2, [rec("NoOpRecord", 0)]))
    body = bytearray(unknown)
    body[-4] = 99  # the value is 01 14 00 00 (frame, api key 20, version 0, no tags)
    body[17:21] = google_crc32c.value(bytes(body[CRC_FROM:])).to_bytes(4, "big")
    kd.segment.write_bytes(kd.segment.read_bytes() + bytes(body))
    check = check_log(kd.root)
    assert not check.ok
    assert f"{kd.segment} at byte" in check.errors[0] and "offset 24" in check.errors[0]
    assert "api key 99" in check.errors[0]
    assert main(["log", "verify", "--log-dir", str(kd.root)]) == 1
    capsys.readouterr()
    skipped = check_log(kd.root, skip_unknown=True)
    assert skipped.ok and any("api key 99" in w for w in skipped.warnings)
    lines = dump(kd.root, capsys, "--skip-unknown")
    assert lines[-1]["type"] == "Unknown" and "api key 99" in str(lines[-1]["problem"])


def test_a_snapshot_then_segments_replays_to_the_same_image(tmp_path: Path) -> None:
    batches = migration_batches()
    whole = write_kafka_dir(tmp_path / "whole", batches)
    split = write_kafka_dir(tmp_path / "split", batches[7:])  # offsets renumbered below
    # The first 19 offsets as a snapshot, the rest as a segment starting at 19.
    head = [to_proto(r) for b in batches[:7] for r in b.records if not b.control]
    snap = write_snapshot(split.partition_dir, SnapshotId(19, 1), head, last_contained_timestamp=0)
    segment, offset = bytearray(), 19
    for b in batches[7:]:
        segment += batch_bytes(offset, b)
        offset += len(b.records)
    split.segment.unlink()
    (split.partition_dir / f"{19:020d}.log").write_bytes(bytes(segment))
    (split.partition_dir / "leader-epoch-checkpoint").write_text("0\n1\n2 19\n")
    assert check_log(split.root).ok, check_log(split.root).errors
    assert image_at(split.root, None).image == image_at(whole.root, None).image
    assert len(list(read_kafka_snapshot(snap))) == len(head)


def test_export_writes_kafkas_directory_that_reads_back_to_the_same_image(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kd = write_kafka_dir(tmp_path / "kafka")
    own = own_log(tmp_path / "own", kd.batches)
    (own / "meta.properties").write_text((kd.root / "meta.properties").read_text())
    for source in (own, kd.root):
        out = tmp_path / f"export-{source.name}"
        args = ["log", "export", "--log-dir", str(source), "--format", "kafka", "--out", str(out)]
        assert main([*args, "--json"]) == 0
        done = json.loads(capsys.readouterr().out)
        assert done["end_offset"] == 24 and done["cluster_id"] == "MkU3OEVBNTcwNTJENDM2Qg"
        assert detect_format(out) == "kafka"
        check = check_log(out)
        assert check.ok and check.snapshots == 1, check.errors
        assert check.metadata == image_at(kd.root, None).image
        bootstrap = list(read_kafka_snapshot(out / "bootstrap.checkpoint"))
        assert [r.feature_level_record.name for r in bootstrap] == ["metadata.version"]
        assert "cluster.id=MkU3OEVBNTcwNTJENDM2Qg" in (out / "meta.properties").read_text()
    half = export_kafka(kd.root, tmp_path / "at-18", offset=18)
    assert half.end_offset == 19
    assert check_log(tmp_path / "at-18").metadata == image_at(kd.root, 18).image
    with pytest.raises(ValueError, match="not empty"):
        export_kafka(kd.root, tmp_path / "at-18")


def test_side_files_that_disagree_with_the_log_are_warnings(tmp_path: Path) -> None:
    kd = write_kafka_dir(tmp_path / "kafka")
    (kd.partition_dir / "leader-epoch-checkpoint").write_text("0\n1\n1 0\n")
    (kd.partition_dir / "partition.metadata").write_text("version: 0\ntopic_id: nope\n")
    (kd.root / "meta.properties").write_text("version=7\n")
    bootstrap = kd.root / "bootstrap.checkpoint"
    bootstrap.write_bytes(bootstrap.read_bytes()[:-10])  # the footer cut off
    check = check_log(kd.root)
    assert check.ok
    assert any("no such epoch" in w for w in check.warnings)
    assert any("partition.metadata" in w for w in check.warnings)
    assert any("meta.properties" in w for w in check.warnings)
    assert any(w.startswith("bootstrap.checkpoint:") for w in check.warnings)


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_compressed_batches_read_as_kafka_clients_write_them(tmp_path: Path, codec: str) -> None:
    from tests.unit.test_kafka_log_batch import CODECS, client_batch

    kd = write_kafka_dir(tmp_path / "kafka")
    copy = next(b for b in kd.batches if len(b.records) > 5)
    start = 0
    for b in kd.batches:
        if b is copy:
            break
        start += len(b.records)
    plain = batch_bytes(start, copy)
    values = [encode_metadata(r) for r in copy.records]
    squeezed = client_batch(CODECS[codec], values, start, copy.epoch)
    assert parse_header(squeezed, 0).compression == codec  # it did compress
    segment = kd.segment.read_bytes()
    kd.segment.write_bytes(segment.replace(plain, squeezed))
    check = check_log(kd.root)
    assert check.ok and check.records == 24, check.errors
    assert check.metadata == image_at(own_log(tmp_path / "own", kd.batches), None).image


def test_a_large_file_is_transcoded_by_a_second_process_with_the_same_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from migration.kafka_log import prefetch

    kd = write_kafka_dir(tmp_path / "kafka")
    serial = check_log(kd.root)
    monkeypatch.setattr(prefetch, "PARALLEL_BYTES", 0)  # every file counts as large
    monkeypatch.setattr(prefetch, "CHUNK_BYTES", 200)  # a few batches per chunk
    parallel = check_log(kd.root)
    assert parallel.ok and parallel.metadata == serial.metadata
    assert parallel.records == serial.records == 24
    # An error in the worker stops the read where the serial read stops, as the same error.
    unknown = bytearray(batch_bytes(24, Batch(2, [rec("NoOpRecord", 0)])))
    unknown[-4] = 99
    unknown[17:21] = google_crc32c.value(bytes(unknown[CRC_FROM:])).to_bytes(4, "big")
    kd.segment.write_bytes(kd.segment.read_bytes() + bytes(unknown))
    failed = check_log(kd.root)
    assert failed.errors and f"{kd.segment} at byte" in failed.errors[0]
    assert "offset 24" in failed.errors[0] and "api key 99" in failed.errors[0]


def test_what_kafka_leaves_mid_write_is_passed_over_and_epochs_never_go_back(
    tmp_path: Path,
) -> None:
    kd = write_kafka_dir(tmp_path / "kafka")
    for left_over in ("00000000000000000019-0000000002.checkpoint.part", "quorum-state.tmp",
                      "00000000000000000000.snapshot"):  # fmt: skip
        (kd.partition_dir / left_over).write_bytes(b"\x00" * 8)
    assert check_log(kd.root).errors == []
    # A second segment whose first batch has an older epoch than the first segment's last.
    older = batch_bytes(24, Batch(1, [rec("NoOpRecord", 0)]))
    (kd.partition_dir / f"{24:020d}.log").write_bytes(older)
    check = check_log(kd.root)
    assert check.errors and "leader epoch 1 after epoch 2" in check.errors[0]
