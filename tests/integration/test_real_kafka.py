"""What real Apache Kafka leaves behind, as the fixtures of tests/real_kafka.py build it:
the shape each fixture promises, checked against Kafka's own tools and ZooKeeper."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from migration.local.kafka_release import KafkaRelease, kafka_release
from migration.zk.client import ZkClient
from migration.zkfiles.datadir import open_data_dir
from tests.real_kafka import BuiltMetadataLog, MetadataLogShape, ZkModeCluster, zk_files
from tests.support import zk2kraft
from tests.zk_files import walk

_TOPIC_NAME = re.compile(r'"name":"(topic-\d{3})"')


def _dump(release: KafkaRelease, built: BuiltMetadataLog, *names: str) -> str:
    files = ",".join(str(built.partition / name) for name in names)
    done = release.run_tool("dump-log", "--cluster-metadata-decoder", "--files", files,
                            work_dir=built.log_dir.parent / "tools")  # fmt: skip
    return done.stdout


@pytest.mark.parametrize("version", ["3.9.2", "4.1.2"])
def test_metadata_log_after_kafkas_own_retention(
    version: str, request: pytest.FixtureRequest
) -> None:
    fixture = "kafka39_metadata_log" if version == "3.9.2" else "kafka41_metadata_log"
    built: BuiltMetadataLog = request.getfixturevalue(fixture)
    shape = MetadataLogShape.of(built.partition)
    print(f"Kafka {version}: built in {built.seconds:.1f} s\n{shape.listing()}")
    assert (built.log_dir / "meta.properties").exists()
    assert not list(built.partition.glob("*.deleted"))
    assert built.deleted, "Kafka deleted nothing: no retention clean happened"
    # (i) snapshots, (ii) a segment older than the newest snapshot, (iii) the log start
    # moved: the leader-epoch checkpoint starts at the oldest snapshot kept
    assert len(shape.checkpoints) >= 2
    assert shape.segments and shape.segments[0] < shape.checkpoints[-1][0]
    (_, log_start), *_ = shape.leader_epochs
    assert log_start > 0
    assert shape.checkpoints[0][0] == log_start
    assert shape.segments[0] <= log_start
    assert "00000000000000000000.log.deleted" in built.deleted

    # Kafka's own decoder reads every file; the newest snapshot and the segments after
    # it name every live topic, and the snapshot none of the deleted ones
    release = kafka_release(version)
    names = [f"{offset:020d}-{epoch:010d}.checkpoint" for offset, epoch in shape.checkpoints]
    newest = names[-1]
    snapshot = _dump(release, built, newest)
    assert "SnapshotHeader" in snapshot and "SnapshotFooter" in snapshot
    segments = _dump(release, built, *(f"{base:020d}.log" for base in shape.segments))
    assert "baseOffset" in segments and "NO_OP_RECORD" in segments
    older = _dump(release, built, *names)
    assert older.count("SnapshotHeader") == len(shape.checkpoints)
    in_snapshot = set(_TOPIC_NAME.findall(snapshot))
    assert in_snapshot | set(_TOPIC_NAME.findall(segments)) >= set(built.topics)
    assert in_snapshot <= set(built.topics)


def _kafka_counts(dumped: str) -> dict[str, int]:
    """Records per file in Kafka's DumpLogSegments output, control records left out."""
    counts: dict[str, int] = {}
    name = ""
    for line in dumped.splitlines():
        if line.startswith("Dumping "):
            name = Path(line.removeprefix("Dumping ").strip()).name
            counts[name] = 0
        elif line.startswith("| offset:") and " payload: " in line:
            counts[name] += 1
    return counts


@pytest.mark.parametrize("version", ["3.9.2", "4.1.2"])
def test_zk2kraft_reads_kafkas_metadata_log_from_its_log_start(
    version: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """The directory Kafka's own retention left (segments below the log start, only the
    newest snapshots kept, the epoch cache truncated): verify counts what Kafka's own
    decoder counts, with no warning; dump starts with the newest snapshot."""
    fixture = "kafka39_metadata_log" if version == "3.9.2" else "kafka41_metadata_log"
    built: BuiltMetadataLog = request.getfixturevalue(fixture)
    shape = MetadataLogShape.of(built.partition)
    release = kafka_release(version)
    segments = [f"{base:020d}.log" for base in shape.segments]
    snapshots = [f"{end:020d}-{epoch:010d}.checkpoint" for end, epoch in shape.checkpoints]
    kafka_says = _kafka_counts(_dump(release, built, *segments)) | _kafka_counts(
        _dump(release, built, *snapshots)
    )

    done = zk2kraft("log", "verify", "--log-dir", str(built.log_dir), "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    check = json.loads(done.stdout)
    assert (check["ok"], check["errors"], check["warnings"]) == (True, [], [])
    assert check["log_start_offset"] == shape.checkpoints[0][0] == shape.leader_epochs[0][1]
    assert check["start_offset"] == shape.segments[0] < check["log_start_offset"]
    assert {s["file"]: s["records"] for s in check["segment_files"]} == {
        name: kafka_says[name] for name in segments
    }
    assert {s["file"]: s["records"] for s in check["snapshot_files"]} == {
        name: kafka_says[name] for name in snapshots
    }
    assert check["records"] == sum(kafka_says[name] for name in segments)

    dumped = zk2kraft("log", "dump", "--log-dir", str(built.log_dir), "--json")
    assert dumped.returncode == 0, dumped.stderr
    records = [json.loads(line) for line in dumped.stdout.splitlines()]
    newest_end, newest_epoch = shape.checkpoints[-1]
    from_snapshot = [r for r in records if r.get("snapshot")]
    assert from_snapshot and all(
        r["snapshot"] == {"end_offset": newest_end, "epoch": newest_epoch} for r in from_snapshot
    )
    in_snapshot = {r["name"] for r in from_snapshot if r["type"] == "TopicRecord"}
    assert in_snapshot == set(_TOPIC_NAME.findall(_dump(release, built, snapshots[-1])))
    after = [r["offset"] for r in records if not r.get("snapshot")]
    assert after == list(range(newest_end, check["end_offset"]))
    again = zk2kraft("log", "dump", "--log-dir", str(built.log_dir), "--json", "--from", "0")
    assert again.stdout == dumped.stdout
    below = zk2kraft("log", "dump", "--log-dir", str(built.log_dir), "--json",
                     "--from", str(shape.segments[0]))  # fmt: skip
    first = json.loads(below.stdout.splitlines()[0])
    assert first["offset"] == shape.segments[0] and first["type"] == "NoOpRecord"

    # A byte flipped in the first batch, below the log start: exit 1, file and byte named.
    segment = built.partition / segments[0]
    data = bytearray(segment.read_bytes())
    data[40] ^= 0x01
    segment.write_bytes(bytes(data))
    bad = zk2kraft("log", "verify", "--log-dir", str(built.log_dir), "--json")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    [problem] = json.loads(bad.stdout)["problems"]
    assert (problem["file"], problem["byte"]) == (str(segment), 0)
    assert problem["region"] == f"segments below the log start offset {check['log_start_offset']}"
    bad_dump = zk2kraft("log", "dump", "--log-dir", str(built.log_dir))
    assert bad_dump.returncode == 1 and f"{segment} at byte 0" in bad_dump.stderr


@pytest.mark.parametrize("version", ["3.9.2", "4.1.2"])
def test_kafka_reads_zk2kraft_s_export_of_its_own_log(
    version: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """The export of a Kafka-written log, read back by Kafka's own decoder: the same
    topics as Kafka's newest snapshot and the segments after it."""
    fixture = "kafka39_metadata_log" if version == "3.9.2" else "kafka41_metadata_log"
    built: BuiltMetadataLog = request.getfixturevalue(fixture)
    out = tmp_path / "export"
    done = zk2kraft("log", "export", "--log-dir", str(built.log_dir), "--format", "kafka",
                    "--out", str(out), "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    exported = json.loads(done.stdout)
    cluster = (built.log_dir / "meta.properties").read_text()
    assert f"cluster.id={exported['cluster_id']}" in cluster
    release = kafka_release(version)
    theirs = release.run_tool(
        "dump-log", "--cluster-metadata-decoder", "--files", exported["snapshot"],
        work_dir=tmp_path / "tools",
    ).stdout  # fmt: skip
    assert "SnapshotHeader" in theirs and "SnapshotFooter" in theirs
    assert set(_TOPIC_NAME.findall(theirs)) == set(built.topics)


def test_zookeeper_mode_cluster_as_kafka_wrote_it(zk_mode_cluster: ZkModeCluster) -> None:
    cluster = zk_mode_cluster
    print(f"{len(cluster.brokers)} brokers and their topics in {cluster.seconds:.1f} s")
    with ZkClient(cluster.connect) as zk:
        kazoo = zk.kazoo
        assert sorted(kazoo.get_children("/brokers/ids")) == ["1", "2"]
        for broker in cluster.brokers:
            raw, _ = kazoo.get(f"/brokers/ids/{broker.node_id}")
            registration = json.loads(raw)
            assert registration["endpoints"] == [f"PLAINTEXT://{broker.bootstrap}"]
            assert "migration" not in raw.decode().lower()
            assert "kraftControllerId" not in registration
        for name, partitions in cluster.topics.items():
            topic = json.loads(kazoo.get(f"/brokers/topics/{name}")[0])
            assert len(topic["topic_id"]) == 22
            assert sorted(topic["partitions"], key=int) == [str(p) for p in range(partitions)]
        orders = json.loads(kazoo.get("/config/topics/orders")[0])["config"]
        assert orders == {"retention.ms": "86400000", "cleanup.policy": "compact"}
        events = json.loads(kazoo.get("/config/topics/events")[0])["config"]
        assert events == {"max.message.bytes": "2000000"}
        acls = json.loads(kazoo.get("/kafka-acl/Topic/orders")[0])["acls"]
        assert [a["principal"] for a in acls] == ["User:reader"]
        assert kazoo.exists("/controller") is not None
        assert kazoo.exists("/migration") is None


def test_zookeepers_own_files_hold_the_cluster(
    zk_mode_cluster: ZkModeCluster, zk_data_dir_copy: Path
) -> None:
    data_dir = zk_data_dir_copy
    names = [name for name, _ in zk_files(data_dir)]
    print(*zk_files(data_dir), sep="\n")
    assert any(n.startswith("snapshot.") for n in names)
    assert any(n.startswith("log.") for n in names)
    offline = open_data_dir([data_dir], zk_mode_cluster.chroot)
    tree = walk(offline, "/brokers/topics")
    assert {"/brokers/topics/orders", "/brokers/topics/events"} <= set(tree)


def test_preflight_and_the_dry_run_agree_on_a_cluster_before_step_3(
    zk_mode_cluster: ZkModeCluster, tmp_path: Path
) -> None:
    """Kafka's brokers before step 3 carry no migration flag: preflight says what step 3
    must change, as a warning, and is ready; the dry run copies the same tree."""
    cluster = zk_mode_cluster
    done = zk2kraft("preflight", "--zk", cluster.connect, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["ready"] is True and report["blockers"] == []
    warnings = {(w["code"], w["path"]) for w in report["warnings"]}
    assert {("BROKER_MIGRATION_NOT_ENABLED", f"/brokers/ids/{b.node_id}")
            for b in cluster.brokers} <= warnings  # fmt: skip
    copied = zk2kraft("migrate", "--dry-run", "--zk", cluster.connect,
                      "--log-dir", str(tmp_path / "log"), "--json")  # fmt: skip
    assert copied.returncode == 0, copied.stderr
    manifest = json.loads(copied.stdout)
    assert manifest["records"]["TopicRecord"] == len(cluster.topics)
    assert manifest["records"]["PartitionRecord"] == sum(cluster.topics.values())
    assert manifest["zk_brokers"] == sorted(b.node_id for b in cluster.brokers)


@pytest.mark.long
@pytest.mark.timeout(900)
def test_a_rehearsal_of_the_clusters_own_zookeeper_files_runs_to_kraft(
    zk_mode_cluster: ZkModeCluster, zk_data_dir_copy: Path, tmp_path: Path
) -> None:
    """ZooKeeper's own files, as a running ensemble with Kafka's brokers up leaves them
    (their registrations and /controller ephemeral): the rehearsal leaves that live
    state out, its own brokers play Kafka's, and it runs through to KRaft."""
    cluster = zk_mode_cluster
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "migration.cli.main", "rehearse", "--zk-data-dir",
         str(zk_data_dir_copy), "--zk-chroot", cluster.chroot, "--out", str(out), "--json",
         "--workload-seconds", "3", "--engine", "zk2kraft"],
        capture_output=True, text=True, timeout=880, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["ok"] is True and report["problems"] == []
    assert report["source"]["broker_ids"] == [1, 2]
    step3 = report["enable_migration"]
    assert step3["restart"] == [1, 2] and step3["flagged"] == []
    assert report["copy"]["records_by_type"]["TopicRecord"] == len(cluster.topics)
    assert report["audit"]["ok"] and report["audit"]["differences"] == 0
    assert report["finalized"]["ok"] is True and report["finalized"]["state"] == "KRaft"
    assert "What step 3 will change" in (out / "report.html").read_text()


def test_zookeeper_mode_brokers_stop(zk_mode_cluster: ZkModeCluster) -> None:
    zk_mode_cluster.stop_brokers()
    assert all(not broker.running for broker in zk_mode_cluster.brokers)
    with ZkClient(zk_mode_cluster.connect) as zk:
        assert zk.kazoo.get_children("/brokers/ids") == []
