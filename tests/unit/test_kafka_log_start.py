"""A Kafka metadata directory after its log start moved up to a snapshot: what `log
dump` and `log verify` make of it, whole and damaged.

Kafka moves the log start offset up to a snapshot's end, deletes the segments wholly
below it, keeps the segment that holds it (batches below the log start included) and
truncates its leader-epoch cache from the start -- its first entry then begins at the
log start. The directory is laid out so, byte for byte (tests/kafka_log_dir.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from migration.cli.main import main
from migration.image.at_offset import image_at
from migration.image.log_check import check_log
from migration.kafka_log.mapping import to_proto
from migration.kafka_log.side_files import format_leader_epochs
from migration.kafka_log.writer import write_snapshot
from migration.log.metadata_log import MetadataLog
from migration.log.snapshots import SnapshotId
from tests.kafka_log_dir import Batch, KafkaDir, batch_bytes, migration_batches, write_kafka_dir
from tests.support import config_record

SEGMENT_FROM = 5  # the first batch the segment still holds: the copy's transaction
LOG_START = 21  # the snapshot's end offset, where the log start moved up to


def offsets(batches: list[Batch]) -> list[int]:
    out, at = [], 0
    for b in batches:
        out.append(at)
        at += len(b.records)
    return out


def moved_up(root: Path, segment: bool = True) -> tuple[KafkaDir, Path, Path]:
    """The migration log with its log start moved up to 21: the snapshot
    ``...21-...02.checkpoint``, the segment from offset 5 (``segment=False``: an empty
    segment at 21, as when every batch is below the snapshot) and the epoch cache
    truncated from 21. Returns the directory, the segment and the snapshot."""
    batches = migration_batches()
    kd = write_kafka_dir(root, batches)
    starts = offsets(batches)
    first = starts.index(SEGMENT_FROM)
    covered = [to_proto(r) for b in batches if starts[batches.index(b)] < LOG_START
               for r in b.records if not b.control]  # fmt: skip
    snapshot = write_snapshot(
        kd.partition_dir, SnapshotId(LOG_START, 2), covered, last_contained_timestamp=0
    )
    kd.segment.unlink()
    if segment:
        path = kd.partition_dir / f"{SEGMENT_FROM:020d}.log"
        path.write_bytes(b"".join(batch_bytes(starts[i], b) for i, b in enumerate(batches)
                                  if i >= first))  # fmt: skip
    else:
        path = kd.partition_dir / f"{LOG_START:020d}.log"
        path.write_bytes(b"")
    # Kafka's epoch cache once truncated from offset 21: epoch 1 gone, epoch 2 from 21.
    (kd.partition_dir / "leader-epoch-checkpoint").write_text(format_leader_epochs([(2, 21)]))
    return kd, path, snapshot


def dump(log_dir: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> list[dict[str, object]]:
    assert main(["log", "dump", "--log-dir", str(log_dir), "--json", *extra]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_verify_reports_the_log_start_the_snapshot_and_every_record_of_the_segment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kd, segment, snapshot = moved_up(tmp_path / "kafka")
    check = check_log(kd.root)
    assert (check.ok, check.warnings) == (True, [])  # the truncated epoch cache is Kafka's own
    assert (check.log_start_offset, check.start_offset, check.end_offset) == (21, 5, 24)
    assert check.records == 24 - SEGMENT_FROM  # every record on disk, below the log start too
    assert check.segment_files == [
        {"file": segment.name, "first_offset": 5, "end_offset": 24, "batches": 7, "records": 19}
    ]
    [snap] = check.snapshot_files
    assert (snap["file"], snap["end_offset"], snap["epoch"], snap["ok"]) == (
        snapshot.name,
        21,
        2,
        True,
    )
    assert snap["records"] == 19  # the records below 21, control records left out
    whole = write_kafka_dir(tmp_path / "whole")
    assert check.metadata == image_at(whole.root, None).image

    assert main(["log", "verify", "--log-dir", str(kd.root)]) == 0
    text = capsys.readouterr().out
    assert "log start offset 21, end offset 24" in text
    assert f"snapshot {snapshot.name}: offsets below 21, epoch 2, 19 records" in text
    assert f"segment {segment.name}: offsets 5..23, 19 records in 7 batches" in text


def test_dump_starts_with_the_snapshot_then_the_segments_after_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kd, _, _ = moved_up(tmp_path / "kafka")
    lines = dump(kd.root, capsys)
    from_snapshot = [r for r in lines if r.get("snapshot")]
    assert from_snapshot[0]["type"] == "SnapshotHeaderRecord"
    assert from_snapshot[-1]["type"] == "SnapshotFooterRecord"
    assert all(r["snapshot"] == {"end_offset": 21, "epoch": 2} for r in from_snapshot)
    assert all(r["offset"] is None for r in from_snapshot)
    assert {"TopicRecord", "PartitionRecord", "RegisterBrokerRecord"} <= {
        str(r["type"]) for r in from_snapshot
    }
    assert [r["offset"] for r in lines if not r.get("snapshot")] == [21, 22, 23]
    # Inside the segments, below the log start: the records physically there.
    assert [r["offset"] for r in dump(kd.root, capsys, "--from", "17")] == list(range(17, 24))
    # Below what the segments hold: the snapshot that covers it, then the rest.
    assert dump(kd.root, capsys, "--from", "0") == lines
    assert main(["log", "dump", "--log-dir", str(kd.root), "--from", "99"]) == 2
    assert "outside the log" in capsys.readouterr().err


def test_a_directory_of_only_a_snapshot_dumps_and_verifies_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kd, _, _ = moved_up(tmp_path / "kafka", segment=False)
    check = check_log(kd.root)
    assert check.ok and check.warnings == []
    assert (check.log_start_offset, check.end_offset, check.records) == (21, 21, 0)
    assert check.snapshot_files[0]["records"] == 19
    lines = dump(kd.root, capsys, "--from", "0")
    assert len(lines) == 21 and all(r["snapshot"] for r in lines)  # header + 19 + footer


def test_damage_below_the_log_start_is_exit_1_naming_file_byte_and_region(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kd, segment, _ = moved_up(tmp_path / "kafka")
    data = bytearray(segment.read_bytes())
    data[100] ^= 0x01  # inside the first batch (the copy's transaction, offsets 5..17)
    segment.write_bytes(bytes(data))
    check = check_log(kd.root)
    assert not check.ok
    [problem] = check.problems
    assert problem["file"] == str(segment) and problem["byte"] == 0
    assert problem["region"] == "segments below the log start offset 21"
    assert f"{segment} at byte 0" in check.errors[0]
    assert check.records == 24 - 18  # the batches after the damage are still read
    assert check.metadata.topic("orders") is not None  # the image from the snapshot on stands

    assert main(["log", "verify", "--log-dir", str(kd.root)]) == 1
    assert f"{segment} at byte 0" in capsys.readouterr().out
    # dump: what it can show, then exit 1 naming the damage (never 0).
    assert main(["log", "dump", "--log-dir", str(kd.root), "--json"]) == 1
    captured = capsys.readouterr()
    assert [json.loads(x)["offset"] for x in captured.out.splitlines()][-3:] == [21, 22, 23]
    assert f"{segment} at byte 0" in captured.err


def test_damage_in_the_replayed_log_stops_the_dump_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kd, segment, _ = moved_up(tmp_path / "kafka")
    batches = migration_batches()
    starts = offsets(batches)
    at = sum(len(batch_bytes(starts[i], b)) for i, b in enumerate(batches)
             if SEGMENT_FROM <= starts[i] < 22)  # fmt: skip
    data = bytearray(segment.read_bytes())
    data[at + 30] ^= 0x01  # the batch at offset 22
    segment.write_bytes(bytes(data))
    check = check_log(kd.root)
    assert [p["region"] for p in check.problems] == ["the log"]
    assert check.problems[0]["byte"] == at
    assert main(["log", "dump", "--log-dir", str(kd.root), "--json", "--from", "19"]) == 1
    captured = capsys.readouterr()
    assert [json.loads(x)["offset"] for x in captured.out.splitlines()] == [19, 20, 21]
    assert f"{segment} at byte {at}" in captured.err


def test_damage_in_a_snapshot_is_named_with_the_snapshot(tmp_path: Path) -> None:
    kd, _, snapshot = moved_up(tmp_path / "kafka")
    data = bytearray(snapshot.read_bytes())
    data[-40] ^= 0x01
    snapshot.write_bytes(bytes(data))
    check = check_log(kd.root)
    assert not check.ok and check.snapshot_files[0]["ok"] is False
    assert check.problems[0]["region"] == f"snapshot {snapshot.name}"
    assert check.problems[0]["file"] == str(snapshot)


def test_the_projects_own_log_dumps_its_snapshot_first_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log_dir = tmp_path / "own"
    with MetadataLog(log_dir) as log:
        for b in range(3):
            log.append([config_record(b * 4 + i) for i in range(4)], epoch=1)
        log.write_snapshot(SnapshotId(8, 1), [config_record(i) for i in range(8)])
    lines = dump(log_dir, capsys)
    assert [r["offset"] for r in lines] == [None] * 8 + [8, 9, 10, 11]
    assert lines[0]["snapshot"] == {"end_offset": 8, "epoch": 1}
    assert [r["offset"] for r in dump(log_dir, capsys, "--from", "2")] == list(range(2, 12))
    check = check_log(log_dir)
    assert check.ok and check.records == 12 and check.snapshot_files[0]["records"] == 8


def test_damage_in_an_older_snapshot_fails_the_dump_that_does_not_show_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kd, _, _ = moved_up(tmp_path / "kafka")
    older = write_snapshot(kd.partition_dir, SnapshotId(19, 1), [], last_contained_timestamp=0)
    data = bytearray(older.read_bytes())
    data[30] ^= 0x01
    older.write_bytes(bytes(data))
    assert main(["log", "dump", "--log-dir", str(kd.root)]) == 1
    captured = capsys.readouterr()
    assert "<21" in captured.out and f"{older} at byte 0" in captured.err
    assert main(["log", "verify", "--log-dir", str(kd.root)]) == 1
    assert f"{older} at byte 0" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("meta", "quorum_state"),
    [
        (  # a ZooKeeper-mode broker's directory (v0) whose cluster id is a dashed UUID
            "#\n#Tue Mar 05 10:00:00 UTC 2024\nbroker.id=1\nversion=0\n"
            "cluster.id=5b4e8a3c-2f1d-4c8e-9a7b-0d6e5f4a3b2c\n",
            '{"clusterId":"","leaderId":3000,"leaderEpoch":2,"votedId":-1,"appliedOffset":0,'
            '"currentVoters":[{"voterId":3000}],"data_version":0}',
        ),
        (  # a dynamic quorum's controller (Kafka 3.9 and 4.x): quorum-state version 1
            "#\n#Tue Mar 05 10:00:00 UTC 2024\nnode.id=3000\n"
            "directory.id=b2ykbqbgTo2Fr6cYsahxqw\nversion=1\ncluster.id=MkU3OEVBNTcwNTJENDM2Qg\n",
            '{"leaderId":3000,"leaderEpoch":2,"votedId":-1,'
            '"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}',
        ),
    ],
)
def test_side_files_as_kafka_writes_them_are_no_warning(
    tmp_path: Path, meta: str, quorum_state: str
) -> None:
    kd, _, _ = moved_up(tmp_path / "kafka")
    (kd.root / "meta.properties").write_text(meta)
    (kd.partition_dir / "quorum-state").write_text(quorum_state)
    (kd.partition_dir / "partition.metadata").write_text(  # no newline at the end, as Kafka
        "version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ"
    )
    check = check_log(kd.root)
    assert check.ok and check.warnings == []
