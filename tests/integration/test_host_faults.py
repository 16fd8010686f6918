"""The chaos suite's host faults (:mod:`tests.chaos.host_faults`) against real controller
processes: a failing fsync and a full metadata disk halt a controller (exit 70, one
``halting:`` line naming the errno) and lose nothing it acknowledged; wall-clock steps
forward and back cost the leader neither its leadership nor an acknowledged write. The
full disk mounts a tmpfs: it is skipped, saying so, when not root."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from migration.common.kafka_errors import KafkaError
from migration.controller.client import BrokerSession, ControllerClient
from migration.log.metadata_log import MetadataLog
from migration.proto import controller_pb2 as cpb
from tests.chaos.host_faults import (
    CLOCK_JUMP,
    DISK_FULL,
    FSYNC_EIO,
    fail_fsync,
    fill,
    grow,
    halted,
    host_tools,
    jump_clock,
    need_root,
)
from tests.migration_harness import replay_log
from tests.quorum_harness import Quorum

pytestmark = pytest.mark.timeout(240)


def broker(client: ControllerClient, broker_id: int) -> BrokerSession:
    """An unfenced broker, for the topics' one replica."""
    session = BrokerSession(client, broker_id).start()
    session.wait_unfenced()
    return session


def create(client: ControllerClient, name: str) -> None:
    request = cpb.CreateTopicsRequest()
    request.topics.add(name=name, num_partitions=1, replication_factor=1)
    assert client.call("CreateTopics", request).topics[0].error_code == 0


def until_refused(client: ControllerClient, prefix: str) -> list[str]:
    """Topics created until the halting controller acknowledges no more (a full page
    still takes a few): those it acknowledged."""
    acknowledged: list[str] = []
    for i in range(500):  # hang guard
        request = cpb.CreateTopicsRequest()
        request.topics.add(name=f"{prefix}{i}", num_partitions=1, replication_factor=1)
        try:
            assert client.call("CreateTopics", request, timeout_s=5).topics[0].error_code == 0
        except KafkaError:
            return acknowledged
        acknowledged.append(f"{prefix}{i}")
    raise AssertionError(f"{len(acknowledged)} writes acknowledged, none refused")


def topics(log_dir: Path) -> set[str]:
    return {t.name for t in replay_log(log_dir).topics.values()}


def test_a_controller_whose_fsync_fails_halts_naming_eio_and_keeps_what_it_acknowledged(
    tmp_path: Path,
) -> None:
    """Both preloads in one process (libfiu's and libfaketime's): they coexist."""
    q = Quorum(tmp_path, size=1)
    with host_tools(q, {FSYNC_EIO, CLOCK_JUMP}):
        q.start_all()
        try:
            q.wait_leader()
            client = q.client()
            session = broker(client, 1)
            create(client, "before")
            pid = q.children[1].pid
            assert pid is not None
            since = len(q.output(1))
            fail_fsync(q, pid)
            assert until_refused(client, "after") == []  # every append is fsynced
            reason = halted(q, 1, since, "Input/output error")
            assert "fsync" in reason
            session.stop()
        finally:
            q.stop_all()
    assert "before" in topics(q.log_dir(1))


@pytest.mark.skipif(
    need_root({DISK_FULL}) is not None,
    reason=f"not root: {need_root({DISK_FULL})}",
)
def test_a_controller_whose_metadata_disk_is_full_halts_and_comes_back_whole(
    tmp_path: Path,
) -> None:
    q = Quorum(tmp_path, size=1)
    with host_tools(q, {DISK_FULL}):
        q.start_all()
        try:
            q.wait_leader()
            client = q.client()
            session = broker(client, 1)
            create(client, "before")
            since = len(q.output(1))
            fill(q.log_dir(1))
            acknowledged = until_refused(client, "after")
            halted(q, 1, since, "No space left on device")
            session.stop()
            grow(q.log_dir(1))
            q.children[1].process = None
            q.start(1)  # a full disk is no damage: it starts again on what it wrote
            q.wait_leader()
            session = broker(client, 2)
            create(client, "again")
            session.stop()
        finally:
            q.stop_all()
    assert {"before", "again", *acknowledged} <= topics(q.log_dir(1))


def test_wall_clock_steps_cost_the_leader_neither_leadership_nor_acknowledged_writes(
    tmp_path: Path,
) -> None:
    """The steps reach the process: the leader stamps its batches with its wall clock."""
    q = Quorum(tmp_path)
    acknowledged: dict[str, int] = {}  # topic -> the wall clock's offset it was made at
    with host_tools(q, {CLOCK_JUMP}):
        q.start_all()
        try:
            leader = q.wait_leader()
            epoch = q.describe().leader_epoch
            client = q.client()
            session = broker(client, 1)
            for step, offset in enumerate((600, -600, 0)):
                jump_clock(q, leader, offset)
                time.sleep(3)  # the step is read within a second; fetches go on
                for i in range(3):
                    create(client, f"t{step}-{i}")
                    acknowledged[f"t{step}-{i}"] = offset
            d = q.describe()
            assert (d.leader_id, d.leader_epoch) == (leader, epoch)
            assert sorted(q.running()) == q.ids
            session.stop()
        finally:
            q.stop_all()
    assert set(acknowledged) <= topics(q.log_dir(leader))
    with MetadataLog(q.log_dir(leader), read_only=True) as log:
        stamped = {
            r.topic_record.name: batch.timestamp_ms / 1000 - time.time()
            for batch in log.read()
            for r in batch.records
            if r.WhichOneof("record") == "topic_record"
        }
    for name, offset in acknowledged.items():  # within the test's own minute
        assert offset - 60 < stamped[name] < offset + 1, (name, offset, stamped[name])
