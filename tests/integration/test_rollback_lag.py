"""The rollback's write-behind check on real log files and a real ZooKeeper (no
controller runs): a LeaderChange past ``/migration`` — the controllers stopped one by
one, as the runbook's loop does, and the last ones elected a leader on the way — is not
lag; a metadata record past it is (chaos seed 380020)."""

from __future__ import annotations

from pathlib import Path

from migration.log.metadata_log import MetadataLog
from migration.proto.metadata_pb2 import MetadataRecord
from migration.records import versions
from migration.rollback import Phase, assess, owed_to_zookeeper
from migration.zk import paths
from migration.zk.client import ZkClient
from migration.zk.model.cluster import (
    ControllerZnode,
    MigrationZnode,
    render_controller,
    render_controller_epoch,
    render_migration,
)


def _topic(name: str, n: int) -> MetadataRecord:
    record = MetadataRecord()
    record.topic_record.name = name
    record.topic_record.topic_id = bytes([n] * 16)
    return record


def _leader_change(leader: int, granted: tuple[int, ...]) -> MetadataRecord:
    record = MetadataRecord()
    message = record.leader_change_message
    message.leader_id = leader
    for voter in (3000, 3001, 3002):
        message.voters.add().voter_id = voter
    for voter in granted:
        message.granting_voters.add().voter_id = voter
    return record


def _log(directory: Path) -> MetadataLog:
    """Offsets 0-3 in epoch 1 (the last one what /migration holds), then the LeaderChange
    of epoch 2 at offset 4 and a NoOpRecord at 5, on this log only."""
    log = MetadataLog(directory)
    mv = MetadataRecord()
    mv.feature_level_record.name = versions.METADATA_VERSION
    mv.feature_level_record.feature_level = versions.LATEST
    log.append([_leader_change(3001, (3000, 3001, 3002))], 1)
    log.append([mv, _topic("a", 1), _topic("b", 2)], 1)
    noop = MetadataRecord()
    noop.no_op_record.SetInParent()  # Kafka's active controller appends them when idle
    log.append([_leader_change(3002, (3001, 3002)), noop], 2)
    log.flush()
    return log


def _findings(zk: ZkClient, log_dir: Path) -> dict[str, tuple[bool, str]]:
    assessment = assess(zk, log_dirs=(log_dir,), settle_s=0)
    assert assessment.phase == Phase.MIGRATION_ACTIVE
    return {f.code: (f.ok, f.message) for f in assessment.findings}


def test_a_leader_change_past_migration_is_not_lag_but_a_metadata_record_is(
    zk: ZkClient, tmp_path: Path
) -> None:
    zk.kazoo.create(paths.CONTROLLER, render_controller(ControllerZnode(3001, 1, 1)))
    zk.kazoo.create(paths.CONTROLLER_EPOCH, render_controller_epoch(9))
    zk.kazoo.create(paths.MIGRATION, render_migration(MigrationZnode(3001, 1, 3, 1)))
    log = _log(tmp_path / "log")
    try:
        assert owed_to_zookeeper(tmp_path / "log", 3, 5) == 0
        assert owed_to_zookeeper(tmp_path / "log", 1, 5) == 2  # the two topics
        ok, message = _findings(zk, tmp_path / "log")["write-behind-lag"]
        assert ok, message
        assert "ends at offset 5: lag 0 (the 2 records after it are control or no-op records" in (
            message
        )

        log.append([_topic("c", 3)], 2)  # the new leader wrote a change before it stopped
        log.flush()
        ok, message = _findings(zk, tmp_path / "log")["write-behind-lag"]
        assert not ok
        assert "ends at offset 6: 1 metadata records were never written" in message
    finally:
        log.close()
