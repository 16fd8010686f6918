"""The controller's handlers and seams in process (a one-voter quorum on real files):
placement, topic defaults, admin writes before the copy, quotas, ACL matching,
metadata.version gating, transactions, atomic batches, publishers, snapshots and the
controller's own write path. A broker's session (heartbeats, fencing, AlterPartition,
controlled shutdown) is test_controller_broker_sessions.py."""

from __future__ import annotations

import itertools
import logging
import random
import re
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from migration.common.kafka_errors import ErrorCode
from migration.controller.placement import place, rack_alternated
from migration.image import committed as committed_module
from migration.image.publishing import ImageChange
from migration.image.snapshot_records import image_records
from migration.log.snapshots import SnapshotId, read_snapshot
from migration.proto import controller_pb2 as cpb
from migration.proto.metadata_pb2 import MetadataRecord
from migration.records import codes, versions
from migration.records.uuids import uuid_text
from tests.lone_controller import LoneController, lone_controller

# --- placement ----------------------------------------------------------------------------------


def test_more_partitions_than_brokers_never_repeat_a_replica() -> None:
    """The bug: place([0,1,2], ..., 6 partitions, rf 3) gave [0,2,0], [1,0,1], [2,1,2]."""
    for replicas in place([0, 1, 2], 6, 3, rng=random.Random(0)):
        assert len(set(replicas)) == 3


@settings(max_examples=200, deadline=None)
@given(
    n=st.integers(1, 12),
    rf=st.integers(1, 5),
    blocks=st.integers(1, 6),
    extra=st.integers(0, 11),
    seed=st.integers(0, 2**32),
)
def test_placement_is_distinct_and_even(
    n: int, rf: int, blocks: int, extra: int, seed: int
) -> None:
    rf = min(rf, n)
    brokers = list(range(100, 100 + n))
    count = blocks * n + extra % n
    placed = place(brokers, count, rf, rng=random.Random(seed))
    assert len(placed) == count
    assert all(len(set(r)) == rf and set(r) <= set(brokers) for r in placed)
    leaders = Counter(r[0] for r in placed)
    assert max(leaders.values()) - min(leaders.get(b, 0) for b in brokers) <= 1
    whole = place(brokers, blocks * n, rf, rng=random.Random(seed))  # whole rounds: exact
    assert set(Counter(b for r in whole for b in r).values()) == {blocks * rf}


@settings(max_examples=150, deadline=None)
@given(
    racks=st.lists(st.sampled_from("abcd"), min_size=2, max_size=12),
    rf=st.integers(1, 4),
    count=st.integers(1, 40),
    seed=st.integers(0, 2**32),
)
def test_rack_aware_placement_spreads_each_partition_over_racks(
    racks: list[str], rf: int, count: int, seed: int
) -> None:
    rack_of = {i: r for i, r in enumerate(racks)}
    rf = min(rf, len(racks))
    placed = place(list(rack_of), count, rf, racks=rack_of, rng=random.Random(seed))
    for replicas in placed:
        assert len(set(replicas)) == rf
        assert len({rack_of[b] for b in replicas}) == min(rf, len(set(racks)))


def test_racks_alternate() -> None:
    assert rack_alternated({1: "a", 2: "a", 3: "b", 4: "c", 5: "b"}) == [1, 3, 4, 2, 5]


# --- an in-process controller with brokers -------------------------------------------------


def test_create_topics_with_minus_one_uses_the_controllers_defaults(tmp_path: Path) -> None:
    c = lone_controller(tmp_path, num_partitions=3, default_replication_factor=2)
    try:
        c.up(1, 2, 3)
        result = c.create("defaults", -1, -1)
        assert (result.error_code, result.num_partitions, result.replication_factor) == (0, 3, 2)
        assert len(c.image.topic("defaults").partitions) == 3  # type: ignore[union-attr]
    finally:
        c.close()


def test_admin_writes_wait_for_the_migrations_copy_and_brokers_do_not(tmp_path: Path) -> None:
    """In PRE_MIGRATION an admin change would be overwritten by the copy (what ZooKeeper
    held when it was read): refused, retriable; a broker's registration is not."""
    c = lone_controller(tmp_path, zk_migration_enabled=True, session_timeout_ms=1000)
    try:
        c.up(1, 2, 3)  # brokers register before the copy, as they must
        request = cpb.CreateTopicsRequest()
        request.topics.add(name="early", num_partitions=1, replication_factor=3)
        refused = c.call("CreateTopics", request)
        assert refused.error_code == ErrorCode.NOT_CONTROLLER  # the bare RequestError
        assert "PRE_MIGRATION" in refused.error_message
        assert c.image.topic("early") is None
        c.copy_committed()
        assert c.create("early", 1, 3).error_code == 0
    finally:
        c.close()


def test_quota_values_and_acl_matching(lone: LoneController) -> None:
    def quota(key: str, value: float) -> int:
        entry = cpb.QuotaEntry()
        entry.entity.add(entity_type="user", entity_name="alice")
        entry.ops.add(key=key, value=value)
        request = cpb.AlterClientQuotasRequest(entries=[entry])
        return int(lone.call("AlterClientQuotas", request).results[0].error_code)

    assert quota("producer_byte_rate", 1.5) == ErrorCode.INVALID_REQUEST  # a LONG
    assert quota("producer_byte_rate", float("nan")) == ErrorCode.INVALID_REQUEST
    assert quota("request_percentage", 12.5) == 0  # a DOUBLE
    binding = cpb.AclBinding(
        resource_type=codes.RESOURCE_TYPES["Topic"],
        resource_name="orders-",
        pattern_type=codes.PATTERN_PREFIXED,
        principal="User:alice",
        host="*",
        operation=codes.OPERATIONS["Read"],
        permission_type=codes.ALLOW,
    )
    assert (
        lone.call("CreateAcls", cpb.CreateAclsRequest(creations=[binding])).results[0].error_code
        == 0
    )

    def matching(name: str) -> int:
        acl_filter = cpb.AclFilter(
            resource_type=codes.RESOURCE_TYPES["Topic"],
            resource_name=name,
            pattern_type=codes.PATTERN_MATCH,
            operation=codes.ANY,
            permission_type=codes.ANY,
        )
        answer = lone.controller.read(
            _reader("DescribeAcls"), cpb.DescribeAclsRequest(filter=acl_filter)
        )
        return len(answer.acls)  # type: ignore[attr-defined]

    assert matching("orders-eu") == 1
    assert matching("payments") == 0


def _reader(method: str) -> Any:
    from migration.controller.handlers import READERS

    return READERS[method]


# --- metadata.version ----------------------------------------------------------------------------


def scram_request(user: str) -> cpb.AlterUserScramCredentialsRequest:
    request = cpb.AlterUserScramCredentialsRequest()
    request.upsertions.add(
        name=user, mechanism=1, iterations=4096, salt=b"s" * 32, salted_password=b"p" * 32
    )
    return request


def test_records_the_metadata_version_cannot_carry_are_refused(tmp_path: Path) -> None:
    c = lone_controller(tmp_path, bootstrap_metadata_version=versions.IBP_3_4_IV0)
    try:
        refused = c.call("AlterUserScramCredentials", scram_request("alice"))
        assert isinstance(refused, cpb.RequestError)
        assert refused.error_code == ErrorCode.UNSUPPORTED_VERSION
        assert "3.5-IV2" in refused.error_message
        assert not c.image.scram
        upgrade = MetadataRecord()
        upgrade.feature_level_record.name = versions.METADATA_VERSION
        upgrade.feature_level_record.feature_level = versions.IBP_3_5_IV2
        done: list[object] = []
        c.controller.append_records([upgrade], done.append)
        c.commit()
        assert done and isinstance(done[0], int)
        assert (
            c.call("AlterUserScramCredentials", scram_request("alice")).results[0].error_code == 0
        )
    finally:
        c.close()


# --- transactions and batches --------------------------------------------------------------------


def _marker(kind: str) -> MetadataRecord:
    record = MetadataRecord()
    getattr(record, kind).SetInParent()
    return record


def test_a_transaction_left_open_is_aborted_when_a_controller_activates(tmp_path: Path) -> None:
    c = lone_controller(tmp_path)
    c.up(1)
    begin = _marker("begin_transaction_record")
    begin.begin_transaction_record.name = "copy"
    c.controller.append_records([begin], lambda _: None)
    c.commit()
    assert c.create("inside", 1, 1).error_code == 0  # served while the transaction is open
    assert c.register(2).error_code == 0  # and so are registrations and heartbeats
    assert c.heartbeat(2).error_code == 0
    assert c.image.topic("inside") is None  # ...but hidden inside it
    assert c.committed.open_transaction is not None
    c.close()  # the controller dies mid-copy

    again = lone_controller(tmp_path)
    try:
        assert again.committed.open_transaction is None
        kinds = [r.WhichOneof("record") for _, _, r in again.controller.log.records()]
        assert kinds.count("abort_transaction_record") == 1
        assert again.create("after", 1, 1).error_code == 0  # registrations were aborted too
    except AssertionError:
        raise
    finally:
        again.close()


def test_a_request_never_straddles_two_batches(tmp_path: Path) -> None:
    c = lone_controller(tmp_path, max_batch_bytes=600)
    try:
        c.up(1, 2, 3)
        start = c.controller.log.end_offset
        answers: list[Any] = []
        groups = []
        for i in range(4):  # four requests in one loop round
            request = cpb.CreateTopicsRequest()
            request.topics.add(name=f"t{i}", num_partitions=5, replication_factor=3)
            first = c.controller._next_offset
            c.controller.write(_handler("CreateTopics"), request, answers.append)
            groups.append((first, c.controller._next_offset))
        c.commit()
        assert all(a.topics[0].error_code == 0 for a in answers)
        boundaries = {b.base_offset for b in c.controller.log.read(start)}
        for first, end in groups:
            inside = {o for o in boundaries if first < o < end}
            assert not inside, f"a request {first}..{end} was cut at {inside}"
        assert len(boundaries) > 1  # bounded by bytes: more than one batch
    finally:
        c.close()


def _handler(method: str) -> Any:
    from migration.controller.handlers import HANDLERS

    return HANDLERS[method]


def test_the_controllers_own_writes_answer_not_controller_when_leadership_goes(
    lone: LoneController,
) -> None:
    answers: list[object] = []
    lone.controller.append_records([_marker("no_op_record")], answers.append)
    lone.node.resign()
    assert len(answers) == 1 and isinstance(answers[0], cpb.RequestError)
    assert answers[0].error_code == ErrorCode.NOT_CONTROLLER


# --- publishers ----------------------------------------------------------------------------------


class Recorder:
    name = "recorder"

    def __init__(self) -> None:
        self.changes: list[ImageChange] = []
        self.threads: set[str] = set()

    def publish(self, change: ImageChange) -> None:
        self.changes.append(change)
        self.threads.add(threading.current_thread().name)


def test_publishers_get_every_committed_change_off_the_raft_thread(lone: LoneController) -> None:
    recorder = Recorder()
    lone.committed.register(recorder)
    lone.up(1)
    lone.create("published", 2, 1)
    assert lone.committed.wait_published(30)  # a hang guard
    first, *rest = recorder.changes
    assert first.delta is None and first.manifest.from_snapshot  # the image so far, whole
    assert rest and all(c.delta is not None for c in rest)
    assert rest[-1].image.topic("published") is not None
    offsets = [(c.manifest.first_offset, c.manifest.last_offset) for c in rest]
    assert all(a <= b for a, b in offsets)
    assert all(prev[1] < nxt[0] for prev, nxt in itertools.pairwise(offsets))
    assert recorder.threads == {"publisher-recorder"}


def test_uuid_text_of_created_topics_is_kafkas(lone: LoneController) -> None:
    lone.up(1)
    result = lone.create("ids", 1, 1)
    topic = lone.image.topic("ids")
    assert topic is not None and result.topic_id == uuid_text(topic.topic_id)


def test_an_installed_snapshot_is_published_as_a_full_image_change(
    lone: LoneController, caplog: pytest.LogCaptureFixture
) -> None:
    """... and logged with its load's time (a restart's step the scale bench times)."""
    caplog.set_level(logging.INFO, logger="migration.image.committed")
    lone.up(1)
    lone.create("before-snapshot", 1, 1)
    recorder = Recorder()
    lone.committed.register(recorder)
    image = lone.image
    snapshot = SnapshotId(image.offset + 1, image.epoch)
    lone.controller.log.write_snapshot(snapshot, image_records(image))
    lone.committed.on_snapshot_installed(snapshot)  # as after a download from the leader
    assert lone.committed.wait_published(30)
    change = recorder.changes[-1]
    assert change.delta is None and change.manifest.from_snapshot
    assert change.image.topic("before-snapshot") is not None
    assert change.manifest.last_offset == snapshot.end_offset - 1
    loaded = [r.getMessage() for r in caplog.records if "image loaded" in r.getMessage()]
    assert len(loaded) == 1 and re.fullmatch(
        rf"metadata image loaded from the snapshot at offset {snapshot.end_offset} "
        rf"\(epoch {snapshot.epoch}\) in \d+\.\d\d s \(1 topics\)",
        loaded[0],
    ), loaded


class Stuck(Recorder):
    """A publisher stuck in ZooKeeper until released."""

    name = "stuck"

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def publish(self, change: ImageChange) -> None:
        self.release.wait(60)
        super().publish(change)


def test_a_stuck_publisher_never_holds_up_commits(lone: LoneController) -> None:
    stuck = Stuck()
    lone.committed.register(stuck)
    lone.up(1)
    for i in range(5):  # each answered after its commit, while the publisher is stuck
        assert lone.create(f"while-stuck-{i}", 1, 1).error_code == 0
    assert not stuck.changes
    stuck.release.set()
    assert lone.committed.wait_published(30)
    assert all(stuck.changes[-1].image.topic(f"while-stuck-{i}") for i in range(5))


def test_snapshots_are_written_off_the_loop_and_retained_on_it(
    lone: LoneController, monkeypatch: pytest.MonkeyPatch
) -> None:
    lone.up(1)
    lone.committed.snapshot_bytes = 1  # a snapshot after every commit
    started, release = threading.Event(), threading.Event()
    write = committed_module.write_snapshot

    def slow(*args: Any) -> Any:
        started.set()
        release.wait(30)
        return write(*args)

    monkeypatch.setattr(committed_module, "write_snapshot", slow)
    lone.create("first", 1, 1)
    assert started.wait(30)
    # the loop goes on committing while the snapshot is written; one at a time
    lone.create("second", 1, 1)
    assert lone.controller.log.latest_snapshot() is None
    release.set()
    assert lone.committed.wait_snapshot_written(30)
    lone.create("third", 1, 1)  # the loop's next commit: retention
    latest = lone.controller.log.latest_snapshot()
    assert latest is not None and latest.end_offset > 0
    assert lone.controller.log.start_offset <= latest.end_offset


def test_a_snapshot_writer_rests_as_long_as_it_works(
    lone: LoneController, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It shares the GIL with the loop: after each step of records it sleeps as long as
    the step took, and the snapshot still holds every record."""
    lone.up(1)
    lone.create("t", 40, 1)
    rests: list[float] = []
    monkeypatch.setattr(committed_module, "SNAPSHOT_STEP_RECORDS", 8)
    monkeypatch.setattr(committed_module, "_rest", rests.append)
    lone.committed.snapshot_bytes = 1
    lone.create("u", 1, 1)
    assert lone.committed.wait_snapshot_written(30)
    lone.create("v", 1, 1)  # retention, on the loop's next commit
    latest = lone.controller.log.latest_snapshot()
    assert latest is not None
    loaded = read_snapshot(lone.controller.log.snapshot_path(latest))
    assert sum(1 for r in loaded if r.HasField("partition_record")) >= 41
    assert len(rests) >= 41 // 8 and all(r >= 0 for r in rests)


def test_a_failed_snapshot_write_is_raised_on_the_loop(
    lone: LoneController, monkeypatch: pytest.MonkeyPatch
) -> None:
    lone.up(1)
    lone.committed.snapshot_bytes = 1

    def broken(*args: Any) -> Any:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(committed_module, "write_snapshot", broken)
    lone.create("first", 1, 1)
    assert lone.committed.wait_snapshot_written(30)
    with pytest.raises(OSError, match="No space left"):
        lone.call("CreateTopics", cpb.CreateTopicsRequest(
            topics=[cpb.CreatableTopic(name="second", num_partitions=1, replication_factor=1)]
        ))  # fmt: skip
    assert lone.controller.log.latest_snapshot() is None
