"""The controller's own writes, in process on real files (a one-voter quorum): the abort
of a transaction left open is the first record of a new leader's epoch, even when the
transaction holds the log's only metadata.version; a refused internal write raises the
fault that halts the process (the halt itself, exit 70 and the reason on one log line,
in a child process: tests/integration/test_internal_writes.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from migration.bridge.translate import CopyError
from migration.common.kafka_errors import ErrorCode
from migration.controller.context import STEP_RECORDS
from migration.driver.controller_port import ControllerPort
from migration.driver.live_copy import start_copy
from migration.image.loader import MetadataLoader
from migration.local import seed
from migration.log.batch import frame_record
from migration.log.metadata_log import FlushPolicy, MetadataLog
from migration.proto import controller_pb2 as cpb
from migration.proto.metadata_pb2 import MetadataRecord
from migration.raft.event_loop import EventLoop
from migration.raft.faults import InternalWriteRefusedError
from migration.records import versions
from tests.lone_controller import lone_controller


def _record(kind: str, **fields: object) -> MetadataRecord:
    record = MetadataRecord()
    part = getattr(record, kind)
    part.SetInParent()
    for key, value in fields.items():
        setattr(part, key, value)
    return record


def _scram(user: str) -> MetadataRecord:
    return _record(
        "user_scram_credential_record",
        name=user,
        mechanism=1,
        salt=b"s" * 32,
        stored_key=b"k" * 32,
        server_key=b"v" * 32,
        iterations=4096,
    )


def _kinds(log: MetadataLog, start: int) -> list[str]:
    return [str(r.WhichOneof("record")) for _, _, r in log.records(start)]


def test_the_abort_comes_first_when_the_transaction_holds_the_only_metadata_version(
    tmp_path: Path,
) -> None:
    """A copy cut inside its transaction, the metadata.version inside it: the new leader
    writes the abort right after its leader-change record, then the bootstrap version."""
    begin = _record("begin_transaction_record", name="zk-to-kraft-migration")
    version = _record(
        "feature_level_record",
        name=versions.METADATA_VERSION,
        feature_level=versions.IBP_3_4_IV0,
    )
    topic = _record("topic_record", name="copied", topic_id=b"t" * 16)
    with MetadataLog(tmp_path, flush=FlushPolicy.never()) as log:
        log.append_framed([frame_record(r.SerializeToString()) for r in (begin, version)], 0)
        log.append_framed([frame_record(topic.SerializeToString())], 0)
        cut = log.end_offset

    lone = lone_controller(tmp_path)
    try:
        log = lone.controller.log
        kinds = _kinds(log, cut)
        assert kinds[:3] == [
            "leader_change_message",
            "abort_transaction_record",
            "feature_level_record",
        ], kinds
        assert lone.committed.open_transaction is None
        assert lone.image.features[versions.METADATA_VERSION] == versions.LATEST  # bootstrap's
        assert lone.image.topic("copied") is None  # the aborted copy's records are gone
        replayed = MetadataLoader()
        replayed.replay_all(log.records())
        assert replayed.open_transaction is None
    finally:
        lone.close()


def test_a_refused_internal_write_raises_the_halting_fault_and_queues_nothing(
    tmp_path: Path,
) -> None:
    lone = lone_controller(tmp_path, bootstrap_metadata_version=versions.IBP_3_4_IV0)
    try:
        end = lone.controller.log.end_offset
        answers: list[object] = []
        with pytest.raises(InternalWriteRefusedError) as refused:
            lone.controller.append_records([_scram("alice")], answers.append)
        message = str(refused.value)
        assert "UserScramCredentialRecord" in message
        assert "UNSUPPORTED_VERSION" in message and "3.5-IV2" in message
        assert not answers  # the caller is never told anything but the halt
        lone.commit()
        assert lone.controller.log.end_offset == end
    finally:
        lone.close()


def test_leadership_lost_is_not_a_refusal(tmp_path: Path) -> None:
    lone = lone_controller(tmp_path)
    try:
        lone.node.resign()
        answers: list[object] = []
        lone.controller.append_records([_record("no_op_record")], answers.append)
        (answer,) = answers
        assert isinstance(answer, cpb.RequestError)
        assert answer.error_code == ErrorCode.NOT_CONTROLLER
    finally:
        lone.close()


def test_a_copy_the_metadata_version_cannot_carry_is_refused_before_its_first_append(
    tmp_path: Path,
) -> None:
    """Delegation tokens under 3.6-IV1: the driver's copy stops with a CopyError naming
    them, and nothing reaches the controller (whose refusal would halt it)."""
    lone = lone_controller(tmp_path, bootstrap_metadata_version=versions.IBP_3_6_IV1)
    try:
        snap = seed.generate(seed.ClusterSpec(topics=2, partitions=4, delegation_tokens=2))
        port = ControllerPort(EventLoop(), lone.controller)  # never started: nothing runs
        end = lone.controller.log.end_offset
        with pytest.raises(CopyError, match=r"DelegationTokenRecord.*3\.6-IV2"):
            start_copy(
                snap,
                port,
                lone.node.epoch,
                secret=seed.SEED_PASSWORD_ENCODER_SECRET,
                metadata_version=versions.IBP_3_6_IV1,
            )
        lone.commit()
        assert lone.controller.log.end_offset == end
    finally:
        lone.close()


def test_the_copy_is_appended_min_batch_size_records_at_a_time_in_bounded_batches(
    tmp_path: Path,
) -> None:
    """Kafka's zookeeper.metadata.migration.min.batch.size: the copy's transaction goes to
    the controller that many records an append (the pre-copy's stream, then the commit's
    two records); the controller's batches hold whole appends and at most STEP_RECORDS
    records (a batch is the smallest step the controllers
    replay, so the copy never holds a loop for a megabyte of records)."""
    lone = lone_controller(tmp_path)
    loop = EventLoop()
    loop.on_idle(lone.controller.flush)
    loop.start(lone.node)
    try:
        snap = seed.generate(seed.ClusterSpec(topics=100, partitions=6_000))
        begin = lone.controller.log.end_offset
        result = start_copy(
            snap,
            ControllerPort(loop, lone.controller),
            lone.node.epoch,
            secret=seed.SEED_PASSWORD_ENCODER_SECRET,
            min_batch_size=50,
            metadata_version=versions.LATEST,
        ).commit()
    finally:
        loop.stop()
    sizes = [len(b.records) for b in lone.controller.log.read(begin)]
    lone.close()
    assert result.total_records == sum(sizes) > 3 * STEP_RECORDS
    # the pre-copy's stream (Begin and the tree), then the commit's own append (after the
    # catch-up: ZkMigrationState and End)
    assert result.batches == -(-(result.total_records - 2) // 50) + 1
    assert max(sizes) <= STEP_RECORDS and len(sizes) > 3
    # whole appends: the pre-copy's, its last one short, committed before the commit's two
    assert all(size % 50 == 0 for size in sizes[:-2]) and sizes[-1] == 2
