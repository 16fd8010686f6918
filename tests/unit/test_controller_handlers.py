"""The controller's handlers and seams in process (a one-voter quorum on real files):
placement, registration, heartbeats and unfencing, leader epochs, AlterPartition,
quotas, ACL matching, metadata.version gating, transactions, atomic batches,
publishers and the controller's own write path."""

from __future__ import annotations

import itertools
import random
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from migration.common.kafka_errors import ErrorCode
from migration.controller import brokers
from migration.controller.placement import place, rack_alternated
from migration.controller.registry import BrokerRegistry, ScanKind
from migration.image import committed as committed_module
from migration.image.publishing import ImageChange
from migration.image.snapshot_records import image_records
from migration.log.snapshots import SnapshotId
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


@pytest.fixture
def lone(tmp_path: Path) -> Iterator[LoneController]:
    c = lone_controller(tmp_path, session_timeout_ms=1000)
    yield c
    c.close()


def register(c: LoneController, broker: int, incarnation: bytes | None = None) -> Any:
    return c.call(
        "BrokerRegistration",
        cpb.BrokerRegistrationRequest(
            broker_id=broker, cluster_id="c", incarnation_id=incarnation or bytes([broker]) * 16
        ),
    )


def heartbeat(c: LoneController, broker: int, **flags: Any) -> Any:
    epoch = c.controller._pending.brokers[broker].epoch  # type: ignore[union-attr]
    return c.call(
        "BrokerHeartbeat",
        cpb.BrokerHeartbeatRequest(
            broker_id=broker, broker_epoch=epoch, current_metadata_offset=10**9, **flags
        ),
    )


def up(c: LoneController, *brokers: int) -> None:
    for b in brokers:
        assert register(c, b).error_code == 0
        assert not heartbeat(c, b).is_fenced


def create(c: LoneController, name: str, partitions: int, rf: int) -> Any:
    request = cpb.CreateTopicsRequest()
    request.topics.add(name=name, num_partitions=partitions, replication_factor=rf)
    return c.call("CreateTopics", request).topics[0]


def partition(c: LoneController, topic: str, index: int = 0) -> Any:
    image = c.image.topic(topic)
    assert image is not None
    return image.partitions[index]


def expire(c: LoneController, *keep: int) -> None:
    """Let every session but ``keep``'s run out, and the controller fence them."""
    c.now[0] += 600  # session timeout 1000 ms
    for b in keep:
        heartbeat(c, b)
    c.now[0] += 600
    c.commit()  # fences the silent ones
    c.commit()


def test_create_topics_with_minus_one_uses_the_controllers_defaults(tmp_path: Path) -> None:
    c = lone_controller(tmp_path, num_partitions=3, default_replication_factor=2)
    try:
        up(c, 1, 2, 3)
        result = create(c, "defaults", -1, -1)
        assert (result.error_code, result.num_partitions, result.replication_factor) == (0, 3, 2)
        assert len(c.image.topic("defaults").partitions) == 3  # type: ignore[union-attr]
    finally:
        c.close()


def test_a_refused_registration_does_not_keep_a_stale_session_alive(lone: LoneController) -> None:
    up(lone, 1)
    for _ in range(3):  # an impostor keeps knocking, the real broker is silent
        lone.now[0] += 400
        refused = register(lone, 1, incarnation=b"x" * 16)
        assert refused.error_code == ErrorCode.DUPLICATE_BROKER_REGISTRATION
        lone.commit()
    assert lone.image.brokers[1].fenced


def test_an_unfenced_broker_leads_its_leaderless_partitions_again(lone: LoneController) -> None:
    up(lone, 1, 2)
    assert create(lone, "t", 2, 2).error_code == 0
    expire(lone)  # both fenced: leaderless, each ISR keeps its last member
    for index in (0, 1):
        p = partition(lone, "t", index)
        assert p.leader == -1 and len(p.isr) == 1
    last = partition(lone, "t", 0).isr[0]
    assert not heartbeat(lone, last).is_fenced
    p = partition(lone, "t", 0)
    assert p.leader == last


def test_an_isr_shrink_bumps_the_leader_epoch_only_while_zookeeper_brokers_listen(
    tmp_path: Path,
) -> None:
    for migrating, bumped in ((True, 1), (False, 0)):
        c = lone_controller(
            tmp_path / str(migrating), zk_migration_enabled=migrating, session_timeout_ms=1000
        )
        try:
            if migrating:
                copy_committed(c)
            up(c, 1, 2, 3)
            create(c, "t", 1, 3)
            before = partition(c, "t")
            follower = before.replicas[-1]
            expire(c, *(b for b in (1, 2, 3) if b != follower))
            after = partition(c, "t")
            assert follower not in after.isr and after.leader == before.leader
            assert after.leader_epoch == before.leader_epoch + bumped
        finally:
            c.close()


def copy_committed(c: LoneController) -> None:
    """What the migration's copy leaves: ZkMigrationState MIGRATION (1) committed."""
    record = MetadataRecord()
    record.zk_migration_state_record.zk_migration_state = 1
    answers: list[Any] = []
    c.controller.append_records([record], answers.append)
    c.commit()
    assert c.image.zk_migration_state == 1, answers


def test_admin_writes_wait_for_the_migrations_copy_and_brokers_do_not(tmp_path: Path) -> None:
    """In PRE_MIGRATION an admin change would be overwritten by the copy (what ZooKeeper
    held when it was read): refused, retriable; a broker's registration is not."""
    c = lone_controller(tmp_path, zk_migration_enabled=True, session_timeout_ms=1000)
    try:
        up(c, 1, 2, 3)  # brokers register before the copy, as they must
        request = cpb.CreateTopicsRequest()
        request.topics.add(name="early", num_partitions=1, replication_factor=3)
        refused = c.call("CreateTopics", request)
        assert refused.error_code == ErrorCode.NOT_CONTROLLER  # the bare RequestError
        assert "PRE_MIGRATION" in refused.error_message
        assert c.image.topic("early") is None
        copy_committed(c)
        assert create(c, "early", 1, 3).error_code == 0
    finally:
        c.close()


def test_alter_partition_shrinks_the_isr_for_the_leader(lone: LoneController) -> None:
    up(lone, 1, 2, 3)
    created = create(lone, "t", 1, 3)
    p = partition(lone, "t")
    epoch = lone.image.brokers[p.leader].epoch
    request = cpb.AlterPartitionRequest(broker_id=p.leader, broker_epoch=epoch)
    topic = request.topics.add(topic_id=created.topic_id)
    topic.partitions.add(
        partition_index=0,
        leader_epoch=p.leader_epoch,
        isr=[p.leader, p.replicas[1]],
        partition_epoch=p.partition_epoch,
    )
    answer = lone.call("AlterPartition", request)
    state = answer.topics[0].partitions[0]
    assert state.error_code == 0 and list(state.isr) == [p.leader, p.replicas[1]]
    stale = lone.call("AlterPartition", request)  # the same partition epoch again
    assert stale.topics[0].partitions[0].error_code == ErrorCode.INVALID_UPDATE_VERSION


def test_while_migrating_an_isr_expansion_keeps_the_leader_epoch_and_a_shrink_bumps_it(
    tmp_path: Path,
) -> None:
    """Kafka's rule: only a shrink bumps the leader epoch while ZooKeeper brokers may be
    listening; an expansion's leader asked for it and takes the answer (bumping it there
    made every ZooKeeper-mode leader's next expansion a refused one)."""
    c = lone_controller(tmp_path, zk_migration_enabled=True, session_timeout_ms=1000)
    try:
        copy_committed(c)
        up(c, 1, 2, 3)
        created = create(c, "t", 1, 3)

        def ask(isr: list[int]) -> Any:
            p = partition(c, "t")
            epoch = c.image.brokers[p.leader].epoch
            request = cpb.AlterPartitionRequest(broker_id=p.leader, broker_epoch=epoch)
            request.topics.add(topic_id=created.topic_id).partitions.add(
                partition_index=0,
                leader_epoch=p.leader_epoch,
                isr=isr,
                partition_epoch=p.partition_epoch,
            )
            return c.call("AlterPartition", request).topics[0].partitions[0]

        before = partition(c, "t")
        shrunk = ask([before.leader, before.replicas[1]])
        assert shrunk.error_code == 0 and shrunk.leader_epoch == before.leader_epoch + 1
        assert partition(c, "t").leader_epoch == before.leader_epoch + 1
        grown = ask(list(before.replicas))
        assert grown.error_code == 0 and grown.leader_epoch == before.leader_epoch + 1
        after = partition(c, "t")
        assert after.isr == before.replicas and after.leader_epoch == before.leader_epoch + 1
        assert after.partition_epoch == before.partition_epoch + 2
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
    up(c, 1)
    begin = _marker("begin_transaction_record")
    begin.begin_transaction_record.name = "copy"
    c.controller.append_records([begin], lambda _: None)
    c.commit()
    assert create(c, "inside", 1, 1).error_code == 0  # served while the transaction is open
    assert register(c, 2).error_code == 0  # and so are registrations and heartbeats
    assert heartbeat(c, 2).error_code == 0
    assert c.image.topic("inside") is None  # ...but hidden inside it
    assert c.committed.open_transaction is not None
    c.close()  # the controller dies mid-copy

    again = lone_controller(tmp_path)
    try:
        assert again.committed.open_transaction is None
        kinds = [r.WhichOneof("record") for _, _, r in again.controller.log.records()]
        assert kinds.count("abort_transaction_record") == 1
        assert create(again, "after", 1, 1).error_code == 0  # registrations were aborted too
    except AssertionError:
        raise
    finally:
        again.close()


def test_a_request_never_straddles_two_batches(tmp_path: Path) -> None:
    c = lone_controller(tmp_path, max_batch_bytes=600)
    try:
        up(c, 1, 2, 3)
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
    up(lone, 1)
    create(lone, "published", 2, 1)
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
    up(lone, 1)
    result = create(lone, "ids", 1, 1)
    topic = lone.image.topic("ids")
    assert topic is not None and result.topic_id == uuid_text(topic.topic_id)


def test_an_installed_snapshot_is_published_as_a_full_image_change(lone: LoneController) -> None:
    up(lone, 1)
    create(lone, "before-snapshot", 1, 1)
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
    up(lone, 1)
    for i in range(5):  # each answered after its commit, while the publisher is stuck
        assert create(lone, f"while-stuck-{i}", 1, 1).error_code == 0
    assert not stuck.changes
    stuck.release.set()
    assert lone.committed.wait_published(30)
    assert all(stuck.changes[-1].image.topic(f"while-stuck-{i}") for i in range(5))


def test_a_controlled_shutdown_is_not_bounded_like_a_user_request(tmp_path: Path) -> None:
    """Only users' admin requests are bounded (max_records_per_op): moving a broker's
    every leadership may take more records than that, and must not be refused."""
    c = lone_controller(tmp_path, session_timeout_ms=1000, max_records_per_op=4)
    try:
        up(c, 1, 2)
        for i in range(6):
            assert create(c, f"t{i}", 1, 2).error_code == 0  # 2 records each
        refused = create(c, "wide", 5, 2)  # 6 records
        assert refused.error_code == ErrorCode.POLICY_VIOLATION
        # broker 1 is a replica of all six partitions: each needs a record (its leader
        # moved, or its ISR shrunk), six in all, past the bound of 4
        assert all(1 in partition(c, f"t{i}").isr for i in range(6))
        answer = heartbeat(c, 1, want_shut_down=True)
        assert answer.error_code == 0 and answer.should_shut_down
        assert all(partition(c, f"t{i}").leader == 2 for i in range(6))
    finally:
        c.close()


def test_a_last_isr_member_fenced_leaves_its_partition_leaderless_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A broker that is the only ISR member of partitions: one record each (leader -1,
    the ISR kept, as Kafka keeps the last replica), not one more every step after."""
    monkeypatch.setattr(brokers, "MOVES_PER_STEP", 2)
    c = lone_controller(tmp_path, session_timeout_ms=60_000)
    try:
        up(c, 1)
        for i in range(3):
            assert create(c, f"single{i}", 1, 1).error_code == 0
        end = c.controller.log.end_offset
        answers = [heartbeat(c, 1, want_shut_down=True) for _ in range(3)]
        assert [a.should_shut_down for a in answers] == [False, True, True]
        changes = [
            r.partition_change_record
            for _, _, r in c.controller.log.records(end)
            if r.HasField("partition_change_record")
        ]
        assert len(changes) == 3 and all(ch.leader == -1 for ch in changes)
        assert all(partition(c, f"single{i}").isr == (1,) for i in range(3))
    finally:
        c.close()


def test_a_controlled_shutdown_moves_leaderships_a_step_per_heartbeat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each heartbeat moves at most MOVES_PER_STEP partitions (a handler runs on the
    quorum's event loop: 100,000 moves in one held it past the followers' fetch timeout);
    the broker stays unfenced, in controlled shutdown, until the last step fences it."""
    monkeypatch.setattr(brokers, "MOVES_PER_STEP", 2)
    c = lone_controller(tmp_path, session_timeout_ms=60_000)
    try:
        up(c, 1, 2)
        for i in range(5):
            assert create(c, f"t{i}", 1, 2).error_code == 0
        answers = []
        while not (answers and answers[-1].should_shut_down):
            answers.append(heartbeat(c, 1, want_shut_down=True))
            assert answers[-1].error_code == 0 and len(answers) <= 5
        assert [a.should_shut_down for a in answers] == [False, False, True]
        assert [a.is_fenced for a in answers] == [False, False, True]
        registration = c.controller._pending.brokers[1]  # type: ignore[union-attr]
        assert registration.fenced and registration.in_controlled_shutdown
        assert all(partition(c, f"t{i}").leader == 2 for i in range(5))
        assert all(partition(c, f"t{i}").isr == (2,) for i in range(5))
    finally:
        c.close()


def test_a_step_of_a_controlled_shutdown_examines_a_bounded_number_of_partitions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A step passes at most SCAN_BUDGET partitions, whatever it finds to change (the
    last step of a shutdown came round the whole cluster in one go: a million
    partitions held the loop for seconds); the next heartbeat goes on from there."""
    monkeypatch.setattr(brokers, "SCAN_BUDGET", 3)
    c = lone_controller(tmp_path, session_timeout_ms=60_000)
    try:
        up(c, 2)
        for i in range(9):  # broker 1 is in none of these
            assert create(c, f"t{i}", 1, 1).error_code == 0
        up(c, 1)
        assert create(c, "last", 1, 2).error_code == 0
        answers = []
        while not (answers and answers[-1].should_shut_down):
            answers.append(heartbeat(c, 1, want_shut_down=True))
            assert len(answers) <= 10
        assert [a.should_shut_down for a in answers] == [False, False, False, True]
        assert partition(c, "last").leader == 2 and partition(c, "last").isr == (2,)
    finally:
        c.close()


def test_a_scan_left_half_way_starts_afresh_for_a_new_registration() -> None:
    """A broker that registers again (a new epoch: it may have rejoined ISRs a scan had
    passed) never inherits the place of a scan its old registration left half-way."""
    registry = BrokerRegistry(1000, lambda: 0.0)
    place = registry.scan(1, 5, ScanKind.MOVE_OFF)
    place.resume, place.passed = b"t" * 16, 3
    assert registry.scan(1, 5, ScanKind.MOVE_OFF) is place
    assert registry.scanning(1, 5, ScanKind.MOVE_OFF)
    assert not registry.scanning(1, 6, ScanKind.MOVE_OFF)
    fresh = registry.scan(1, 6, ScanKind.MOVE_OFF)
    assert (fresh.resume, fresh.passed) == (None, 0)


def test_a_broker_back_leads_its_leaderless_partitions_a_step_per_heartbeat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    c = lone_controller(tmp_path, session_timeout_ms=1000)
    try:
        up(c, 1)
        assert create(c, "t", 5, 1).error_code == 0
        expire(c)
        assert [partition(c, "t", i).leader for i in range(5)] == [-1] * 5
        monkeypatch.setattr(brokers, "MOVES_PER_STEP", 2)
        led = []
        for _ in range(3):  # the unfencing heartbeat, then two more
            heartbeat(c, 1)
            led.append(sum(partition(c, "t", i).leader == 1 for i in range(5)))
        assert led == [2, 4, 5]
        epoch = c.image.brokers[1].epoch
        assert not c.controller.registry.scanning(1, epoch, ScanKind.LEAD_LEADERLESS)
        c.controller.registry.reset(c.image)  # a newly active controller looks again
        assert c.controller.registry.scanning(1, epoch, ScanKind.LEAD_LEADERLESS)
        heartbeat(c, 1)  # nothing is left to lead: the scan ends
        assert not c.controller.registry.scanning(1, epoch, ScanKind.LEAD_LEADERLESS)
    finally:
        c.close()


def test_an_expired_broker_is_fenced_a_step_per_round(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A broker whose session expired loses at most MOVES_PER_STEP partitions a step, a
    step once the one before has committed, and is fenced with the last (fencing one
    leading a million partitions in one go held the loop 35 s; each new leader did it
    again)."""
    monkeypatch.setattr(brokers, "MOVES_PER_STEP", 2)
    c = lone_controller(tmp_path, session_timeout_ms=1000)
    try:
        up(c, 1, 2)
        for i in range(5):
            assert create(c, f"t{i}", 1, 2).error_code == 0
        c.now[0] += 600
        heartbeat(c, 2)
        c.now[0] += 600  # broker 1's session is over

        def left(image: Any) -> list[int]:
            return [i for i in range(5) if 1 in image.topic(f"t{i}").partitions[0].isr]

        seen: list[list[int]] = []
        for _ in range(10):
            c.commit()  # a round: a step once the one before committed, going on from it
            pending = c.controller._pending
            assert pending is not None
            assert len(left(c.image)) - len(left(pending)) <= 2  # one step in flight
            assert pending.brokers[1].fenced == (not left(pending))
            if not seen or seen[-1] != left(pending):
                seen.append(left(pending))
        assert seen == [[2, 3, 4], [4], []]
        assert c.image.brokers[1].fenced
        assert all(partition(c, f"t{i}").isr == (2,) for i in range(5))
        assert c.controller.registry.expired() == []
        assert not c.controller.registry.scanning(1, c.image.brokers[1].epoch, ScanKind.MOVE_OFF)
    finally:
        c.close()


def test_snapshots_are_written_off_the_loop_and_retained_on_it(
    lone: LoneController, monkeypatch: pytest.MonkeyPatch
) -> None:
    up(lone, 1)
    lone.committed.snapshot_bytes = 1  # a snapshot after every commit
    started, release = threading.Event(), threading.Event()
    write = committed_module.write_snapshot

    def slow(*args: Any) -> Any:
        started.set()
        release.wait(30)
        return write(*args)

    monkeypatch.setattr(committed_module, "write_snapshot", slow)
    create(lone, "first", 1, 1)
    assert started.wait(30)
    # the loop goes on committing while the snapshot is written; one at a time
    create(lone, "second", 1, 1)
    assert lone.controller.log.latest_snapshot() is None
    release.set()
    assert lone.committed.wait_snapshot_written(30)
    create(lone, "third", 1, 1)  # the loop's next commit: retention
    latest = lone.controller.log.latest_snapshot()
    assert latest is not None and latest.end_offset > 0
    assert lone.controller.log.start_offset <= latest.end_offset


def test_a_failed_snapshot_write_is_raised_on_the_loop(
    lone: LoneController, monkeypatch: pytest.MonkeyPatch
) -> None:
    up(lone, 1)
    lone.committed.snapshot_bytes = 1

    def broken(*args: Any) -> Any:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(committed_module, "write_snapshot", broken)
    create(lone, "first", 1, 1)
    assert lone.committed.wait_snapshot_written(30)
    with pytest.raises(OSError, match="No space left"):
        lone.call("CreateTopics", cpb.CreateTopicsRequest(
            topics=[cpb.CreatableTopic(name="second", num_partitions=1, replication_factor=1)]
        ))  # fmt: skip
    assert lone.controller.log.latest_snapshot() is None
