"""A broker's session with the controller, in process (a one-voter quorum on real
files): registration, heartbeats, unfencing and the leaderless partitions a broker back
leads again, AlterPartition and the leader epochs ZooKeeper-mode brokers need, controlled
shutdown and expired sessions fenced in bounded steps, and the place a stepped scan keeps."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from migration.common.kafka_errors import ErrorCode
from migration.controller import brokers
from migration.controller.registry import BrokerRegistry, ScanKind
from migration.proto import controller_pb2 as cpb
from migration.records.uuids import uuid_text
from tests.lone_controller import LoneController, lone_controller


def test_a_refused_registration_does_not_keep_a_stale_session_alive(lone: LoneController) -> None:
    lone.up(1)
    for _ in range(3):  # an impostor keeps knocking, the real broker is silent
        lone.now[0] += 400
        refused = lone.register(1, incarnation=b"x" * 16)
        assert refused.error_code == ErrorCode.DUPLICATE_BROKER_REGISTRATION
        lone.commit()
    assert lone.image.brokers[1].fenced


def test_an_unfenced_broker_leads_its_leaderless_partitions_again(lone: LoneController) -> None:
    lone.up(1, 2)
    assert lone.create("t", 2, 2).error_code == 0
    lone.expire()  # both fenced: leaderless, each ISR keeps its last member
    for index in (0, 1):
        p = lone.partition("t", index)
        assert p.leader == -1 and len(p.isr) == 1
    last = lone.partition("t", 0).isr[0]
    assert not lone.heartbeat(last).is_fenced
    p = lone.partition("t", 0)
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
                c.copy_committed()
            c.up(1, 2, 3)
            c.create("t", 1, 3)
            before = c.partition("t")
            follower = before.replicas[-1]
            c.expire(*(b for b in (1, 2, 3) if b != follower))
            after = c.partition("t")
            assert follower not in after.isr and after.leader == before.leader
            assert after.leader_epoch == before.leader_epoch + bumped
        finally:
            c.close()


def test_alter_partition_shrinks_the_isr_for_the_leader(lone: LoneController) -> None:
    lone.up(1, 2, 3)
    created = lone.create("t", 1, 3)
    p = lone.partition("t")
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
        c.copy_committed()
        c.up(1, 2, 3)
        created = c.create("t", 1, 3)

        def ask(isr: list[int]) -> Any:
            p = c.partition("t")
            epoch = c.image.brokers[p.leader].epoch
            request = cpb.AlterPartitionRequest(broker_id=p.leader, broker_epoch=epoch)
            request.topics.add(topic_id=created.topic_id).partitions.add(
                partition_index=0,
                leader_epoch=p.leader_epoch,
                isr=isr,
                partition_epoch=p.partition_epoch,
            )
            return c.call("AlterPartition", request).topics[0].partitions[0]

        before = c.partition("t")
        shrunk = ask([before.leader, before.replicas[1]])
        assert shrunk.error_code == 0 and shrunk.leader_epoch == before.leader_epoch + 1
        assert c.partition("t").leader_epoch == before.leader_epoch + 1
        grown = ask(list(before.replicas))
        assert grown.error_code == 0 and grown.leader_epoch == before.leader_epoch + 1
        after = c.partition("t")
        assert after.isr == before.replicas and after.leader_epoch == before.leader_epoch + 1
        assert after.partition_epoch == before.partition_epoch + 2
    finally:
        c.close()


def test_a_controlled_shutdown_is_not_bounded_like_a_user_request(tmp_path: Path) -> None:
    """Only users' admin requests are bounded (max_records_per_op): moving a broker's
    every leadership may take more records than that, and must not be refused."""
    c = lone_controller(tmp_path, session_timeout_ms=1000, max_records_per_op=4)
    try:
        c.up(1, 2)
        for i in range(6):
            assert c.create(f"t{i}", 1, 2).error_code == 0  # 2 records each
        refused = c.create("wide", 5, 2)  # 6 records
        assert refused.error_code == ErrorCode.POLICY_VIOLATION
        # broker 1 is a replica of all six partitions: each needs a record (its leader
        # moved, or its ISR shrunk), six in all, past the bound of 4
        assert all(1 in c.partition(f"t{i}").isr for i in range(6))
        answer = c.heartbeat(1, want_shut_down=True)
        assert answer.error_code == 0 and answer.should_shut_down
        assert all(c.partition(f"t{i}").leader == 2 for i in range(6))
    finally:
        c.close()


def test_a_last_isr_member_fenced_leaves_its_partition_leaderless_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A broker that is the only ISR member of partitions: one record each (leader -1,
    the ISR kept, as Kafka keeps the last replica), not one more every step after."""
    monkeypatch.setattr(brokers, "MOVES_PER_STEP", 2)
    monkeypatch.setattr(brokers, "MOVES_PER_SLICE", 1)
    c = lone_controller(tmp_path, session_timeout_ms=60_000)
    try:
        c.up(1)
        for i in range(3):
            assert c.create(f"single{i}", 1, 1).error_code == 0
        end = c.controller.log.end_offset
        answers = [c.heartbeat(1, want_shut_down=True) for _ in range(3)]
        assert [a.should_shut_down for a in answers] == [False, True, True]
        changes = [
            r.partition_change_record
            for _, _, r in c.controller.log.records(end)
            if r.HasField("partition_change_record")
        ]
        assert len(changes) == 3 and all(ch.leader == -1 for ch in changes)
        assert all(c.partition(f"single{i}").isr == (1,) for i in range(3))
    finally:
        c.close()


def test_a_controlled_shutdown_moves_leaderships_a_step_per_heartbeat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each heartbeat moves at most MOVES_PER_STEP partitions (a handler runs on the
    quorum's event loop: 100,000 moves in one held it past the followers' fetch timeout),
    MOVES_PER_SLICE in each event of the loop; the broker stays unfenced, in controlled
    shutdown, until the last step fences it."""
    monkeypatch.setattr(brokers, "MOVES_PER_STEP", 2)
    monkeypatch.setattr(brokers, "MOVES_PER_SLICE", 1)
    c = lone_controller(tmp_path, session_timeout_ms=60_000)
    events: list[object] = []
    c.controller.post = lambda action: (events.append(action), action())[1]
    try:
        c.up(1, 2)
        for i in range(5):
            assert c.create(f"t{i}", 1, 2).error_code == 0
        answers = []
        while not (answers and answers[-1].should_shut_down):
            answers.append(c.heartbeat(1, want_shut_down=True))
            assert answers[-1].error_code == 0 and len(answers) <= 5
        assert len(events) == 2  # two slices each of the first two heartbeats
        assert [a.should_shut_down for a in answers] == [False, False, True]
        assert [a.is_fenced for a in answers] == [False, False, True]
        registration = c.controller._pending.brokers[1]  # type: ignore[union-attr]
        assert registration.fenced and registration.in_controlled_shutdown
        assert all(c.partition(f"t{i}").leader == 2 for i in range(5))
        assert all(c.partition(f"t{i}").isr == (2,) for i in range(5))
    finally:
        c.close()


def test_a_step_of_a_controlled_shutdown_examines_a_bounded_number_of_partitions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A slice passes at most SCAN_BUDGET partitions, whatever it finds to change (the
    last step of a shutdown came round the whole cluster in one go: a million
    partitions held the loop for seconds); the next (here: the next heartbeat, a step
    of one slice) goes on from there."""
    monkeypatch.setattr(brokers, "SCAN_BUDGET", 3)
    monkeypatch.setattr(brokers, "MOVES_PER_STEP", brokers.MOVES_PER_SLICE)
    c = lone_controller(tmp_path, session_timeout_ms=60_000)
    try:
        c.up(2)
        for i in range(9):  # broker 1 is in none of these
            assert c.create(f"t{i}", 1, 1).error_code == 0
        c.up(1)
        assert c.create("last", 1, 2).error_code == 0
        answers = []
        while not (answers and answers[-1].should_shut_down):
            answers.append(c.heartbeat(1, want_shut_down=True))
            assert len(answers) <= 10
        assert [a.should_shut_down for a in answers] == [False, False, False, True]
        assert c.partition("last").leader == 2 and c.partition("last").isr == (2,)
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
        c.up(1)
        assert c.create("t", 5, 1).error_code == 0
        c.expire()
        assert [c.partition("t", i).leader for i in range(5)] == [-1] * 5
        monkeypatch.setattr(brokers, "MOVES_PER_STEP", 2)
        monkeypatch.setattr(brokers, "MOVES_PER_SLICE", 1)
        led = []
        for _ in range(3):  # the unfencing heartbeat, then two more
            c.heartbeat(1)
            led.append(sum(c.partition("t", i).leader == 1 for i in range(5)))
        assert led == [2, 4, 5]
        epoch = c.image.brokers[1].epoch
        assert not c.controller.registry.scanning(1, epoch, ScanKind.LEAD_LEADERLESS)
        c.controller.registry.reset(c.image)  # a newly active controller looks again
        assert c.controller.registry.scanning(1, epoch, ScanKind.LEAD_LEADERLESS)
        c.heartbeat(1)  # nothing is left to lead: the scan ends
        assert not c.controller.registry.scanning(1, epoch, ScanKind.LEAD_LEADERLESS)
    finally:
        c.close()


def test_an_expired_broker_is_fenced_a_step_per_round(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A broker whose session expired loses at most MOVES_PER_STEP partitions a step, a
    step once the one before has committed, and is fenced with the last (fencing one
    leading a million partitions in one go held the loop 35 s; each new leader did it
    again); each step MOVES_PER_SLICE a slice, each slice its own event of the loop."""
    monkeypatch.setattr(brokers, "MOVES_PER_STEP", 2)
    monkeypatch.setattr(brokers, "MOVES_PER_SLICE", 1)
    c = lone_controller(tmp_path, session_timeout_ms=1000)
    events: list[object] = []
    c.controller.post = lambda action: (events.append(action), action())[1]
    try:
        c.up(1, 2)
        for i in range(5):
            assert c.create(f"t{i}", 1, 2).error_code == 0
        c.now[0] += 600
        c.heartbeat(2)
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
        assert len(events) == 2  # the second slice of each of the first two steps
        assert c.image.brokers[1].fenced
        assert all(c.partition(f"t{i}").isr == (2,) for i in range(5))
        assert c.controller.registry.expired() == []
        assert not c.controller.registry.scanning(1, c.image.brokers[1].epoch, ScanKind.MOVE_OFF)
    finally:
        c.close()


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"incarnation_id": b"short"}, "incarnation_id"),
        ({"listeners": [cpb.Listener(name="PLAINTEXT", host="h", port=65536)]}, "port"),
        ({"listeners": [cpb.Listener(name="PLAINTEXT", host="h", port=-1)]}, "port"),
        ({"listeners": [cpb.Listener(name="PLAINTEXT", host="h" * 40_000, port=9092)]}, "host"),
        (
            {"listeners": [cpb.Listener(name="P", host="h", port=1, security_protocol=-1)]},
            "security",
        ),
        ({"rack": "r" * 40_000}, "rack"),
        ({"features": [cpb.SupportedFeature(name="f", max_supported_version=2**15)]}, "features"),
    ],
)
def test_a_registration_kafkas_record_cannot_hold_is_refused_naming_the_field(
    lone: LoneController, change: dict[str, Any], named: str
) -> None:
    request = cpb.BrokerRegistrationRequest(broker_id=7, cluster_id="c", incarnation_id=b"i" * 16)
    for field, value in change.items():
        if isinstance(value, list):
            getattr(request, field).extend(value)
        else:
            setattr(request, field, value)
    answer = lone.call("BrokerRegistration", request)
    assert answer.error_code == ErrorCode.INVALID_REQUEST
    assert named in answer.error.error_message
    assert 7 not in lone.image.brokers


def _ask_to_expand(c: LoneController, leader: int, topic: str, count: int) -> Any:
    """``leader``'s AlterPartition adding every replica back to the first ``count``
    partitions of ``topic``."""
    image = c.image.topic(topic)
    assert image is not None
    request = cpb.AlterPartitionRequest(
        broker_id=leader, broker_epoch=c.image.brokers[leader].epoch
    )
    asked = request.topics.add(topic_id=uuid_text(image.topic_id))
    for index in range(count):
        p = image.partitions[index]
        asked.partitions.add(
            partition_index=index,
            leader_epoch=p.leader_epoch,
            partition_epoch=p.partition_epoch,
            isr=list(p.replicas),
        )
    return request


def _leader_back_from_a_shutdown(c: LoneController, partitions: int) -> int:
    """Topic "t" of ``partitions`` on brokers 1 and 2, broker 2 shut down (out of every
    ISR) and registered again, unfenced: the leader, whose ISRs lack broker 2."""
    c.up(1, 2)
    assert c.create("t", partitions, 2).error_code == 0
    assert c.heartbeat(2, want_shut_down=True).should_shut_down  # out of every ISR
    c.register(2, incarnation=bytes([9]) * 16)
    assert not c.heartbeat(2).is_fenced
    leader: int = c.partition("t", 0).leader
    return leader


def test_an_alter_partition_is_handled_a_slice_per_event_and_answered_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A leader's AlterPartition of many partitions: SLICE_RECORDS of them in each event
    of the loop (the next slice posted behind what is queued), each against the image
    the slices before it left; one answer, every partition in the request's order, once
    the last slice's records commit."""
    monkeypatch.setattr(brokers, "SLICE_RECORDS", 2)
    c = lone_controller(tmp_path, session_timeout_ms=60_000)
    queued: list[Callable[[], None]] = []
    try:
        leader = _leader_back_from_a_shutdown(c, 5)
        assert all(c.partition("t", i).isr == (leader,) for i in range(5))
        request = _ask_to_expand(c, leader, "t", 5)
        request.topics[0].partitions[3].partition_epoch += 7  # refused, the rest granted
        c.controller.post = queued.append
        answers: list[Any] = []
        c.controller.handle("AlterPartition", request, answers.append)
        slices = 1
        while queued:  # the loop runs each posted slice as its own event
            queued.pop(0)()
            slices += 1
            assert not answers  # nothing answered before the last slice
        c.commit()
        assert slices == 3
        (answer,) = answers
        (topic,) = answer.topics
        assert [p.partition_index for p in topic.partitions] == [0, 1, 2, 3, 4]
        errors = [p.error_code for p in topic.partitions]
        assert errors == [0, 0, 0, ErrorCode.INVALID_UPDATE_VERSION, 0]
        isrs = [set(c.partition("t", i).isr) for i in range(5)]
        assert isrs == [{1, 2}] * 3 + [{leader}] + [{1, 2}]
    finally:
        c.close()


def test_a_slice_refused_refuses_the_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Leadership lost between two slices: the slices not yet run write nothing, and
    the request is answered NOT_CONTROLLER (the broker asks again)."""
    monkeypatch.setattr(brokers, "SLICE_RECORDS", 2)
    c = lone_controller(tmp_path, session_timeout_ms=60_000)
    queued: list[Callable[[], None]] = []
    try:
        leader = _leader_back_from_a_shutdown(c, 4)
        c.controller.post = queued.append
        answers: list[Any] = []
        c.controller.handle("AlterPartition", _ask_to_expand(c, leader, "t", 4), answers.append)
        c.controller.renounce("a test: leadership lost between two slices")
        while queued:
            queued.pop(0)()
        (answer,) = answers
        assert answer.error_code == ErrorCode.NOT_CONTROLLER
        assert c.controller._batch == []
    finally:
        c.close()


def test_a_request_split_into_slices_is_answered_as_one() -> None:
    """What is left of an AlterPartition after a slice, and the slices' answers put
    together: a topic split between two slices is one topic in the answer."""
    request = cpb.AlterPartitionRequest(broker_id=1, broker_epoch=5)
    for name, count in (("a", 3), ("b", 2)):
        t = request.topics.add(topic_id=name)
        for i in range(count):
            t.partitions.add(partition_index=i)
    first = cpb.AlterPartitionResponse()
    first.topics.add(topic_id="a").partitions.add(partition_index=0)
    first.topics[0].partitions.add(partition_index=1)
    rest = brokers.alter_partition_rest(None, request, first, 1)  # type: ignore[arg-type]
    assert rest is not None and (rest.broker_id, rest.broker_epoch) == (1, 5)
    assert [(t.topic_id, [p.partition_index for p in t.partitions]) for t in rest.topics] == [
        ("a", [2]),
        ("b", [0, 1]),
    ]
    second = cpb.AlterPartitionResponse(topics=rest.topics)
    assert brokers.alter_partition_rest(None, rest, second, 2) is None  # type: ignore[arg-type]
    whole = brokers.alter_partition_whole([first, second])
    assert [(t.topic_id, [p.partition_index for p in t.partitions]) for t in whole.topics] == [
        ("a", [0, 1, 2]),
        ("b", [0, 1]),
    ]
