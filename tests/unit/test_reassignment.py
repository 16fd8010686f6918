"""Partition reassignment on a lone KRaft controller: the records Kafka's controller
writes to start, complete and cancel one (migration/controller/reassignment.py), and
its refusals."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from migration.common.kafka_errors import ErrorCode
from migration.controller.reassignment import list_partition_reassignments
from migration.proto import controller_pb2 as cpb
from migration.records.uuids import uuid_text
from tests.lone_controller import LoneController, lone_controller


def reassign(
    lone: LoneController, topic: str, targets: dict[int, list[int] | None], allow_rf: bool = True
) -> list[tuple[int, int, str]]:
    """Start (a target) or cancel (None) reassignments; each partition's (index, error
    code, message)."""
    request = cpb.AlterPartitionReassignmentsRequest(allow_replication_factor_change=allow_rf)
    t = request.topics.add(name=topic)
    for index, target in targets.items():
        t.partitions.add(partition_index=index, cancel=target is None, replicas=target or [])
    answer = lone.call("AlterPartitionReassignments", request)
    assert not answer.error.error_code, answer
    return [
        (p.partition_index, p.error_code, p.error_message) for p in answer.responses[0].partitions
    ]


def listed(lone: LoneController, **asked: list[int]) -> dict[str, dict[int, tuple[Any, ...]]]:
    request = cpb.ListPartitionReassignmentsRequest(all_topics=not asked)
    for name, indexes in asked.items():
        request.topics.add(name=name, partition_indexes=indexes)
    answer = lone.controller.read(list_partition_reassignments, request)
    assert isinstance(answer, cpb.ListPartitionReassignmentsResponse)
    return {
        t.name: {
            p.partition_index: (
                list(p.replicas),
                list(p.adding_replicas),
                list(p.removing_replicas),
            )
            for p in t.partitions
        }
        for t in answer.topics
    }


def grow_isr(lone: LoneController, topic: str, isr: list[int]) -> Any:
    """The partition's leader asks for ``isr`` (AlterPartition)."""
    p = lone.partition(topic)
    image = lone.image
    found = image.topic(topic)
    assert found is not None
    request = cpb.AlterPartitionRequest(
        broker_id=p.leader, broker_epoch=image.brokers[p.leader].epoch
    )
    request.topics.add(topic_id=uuid_text(found.topic_id)).partitions.add(
        partition_index=0, leader_epoch=p.leader_epoch, isr=isr, partition_epoch=p.partition_epoch
    )
    return lone.call("AlterPartition", request).topics[0].partitions[0]


def test_a_reassignment_adds_then_completes_once_the_target_is_in_the_isr(
    lone: LoneController,
) -> None:
    lone.up(1, 2, 3, 4, 5, 6)
    lone.create("t", 1, 3)
    before = lone.partition("t")
    old = list(before.replicas)
    target = [b for b in (6, 5, 4, 3, 2, 1) if b not in old]
    assert reassign(lone, "t", {0: target}) == [(0, 0, "")]
    moving = lone.partition("t")
    # the target in the order given, then the replicas leaving; the ISR and leader kept
    assert list(moving.replicas) == target + sorted(old)
    assert (list(moving.adding_replicas), list(moving.removing_replicas)) == (
        sorted(target),
        sorted(old),
    )
    assert (moving.isr, moving.leader, moving.leader_epoch) == (
        before.isr,
        before.leader,
        before.leader_epoch,
    )
    assert moving.partition_epoch == before.partition_epoch + 1
    assert listed(lone) == {"t": {0: (list(moving.replicas), sorted(target), sorted(old))}}
    assert listed(lone, t=[0, 7], absent=[0]) == listed(lone)

    state = grow_isr(lone, "t", [*before.isr, *target])
    assert state.error_code == ErrorCode.NEW_LEADER_ELECTED  # the asker leads no more
    done = lone.partition("t")
    assert list(done.replicas) == target
    assert set(done.isr) == set(target) and not (done.adding_replicas or done.removing_replicas)
    assert done.leader == target[0]  # the first target replica in the ISR
    assert done.leader_epoch == before.leader_epoch + 1
    assert (state.leader_id, state.leader_epoch) == (done.leader, done.leader_epoch)
    assert listed(lone) == {}


def test_a_reassignment_that_only_removes_completes_at_once(lone: LoneController) -> None:
    lone.up(1, 2, 3)
    lone.create("t", 1, 3)
    before = lone.partition("t")
    target = list(before.replicas[1:])  # the leader leaves
    assert reassign(lone, "t", {0: target}) == [(0, 0, "")]
    done = lone.partition("t")
    assert (list(done.replicas), list(done.isr)) == (target, target)
    assert (done.leader, done.leader_epoch) == (target[0], before.leader_epoch + 1)
    assert listed(lone) == {}


def test_the_same_replicas_write_nothing_and_a_new_order_no_leader_epoch(
    lone: LoneController,
) -> None:
    lone.up(1, 2, 3)
    lone.create("t", 1, 3)
    before = lone.partition("t")
    assert reassign(lone, "t", {0: list(before.replicas)}) == [(0, 0, "")]
    assert lone.partition("t") == before
    reordered = list(reversed(before.replicas))
    assert reassign(lone, "t", {0: reordered}) == [(0, 0, "")]
    after = lone.partition("t")
    assert list(after.replicas) == reordered
    assert (after.leader, after.leader_epoch) == (before.leader, before.leader_epoch)
    assert after.partition_epoch == before.partition_epoch + 1


def test_a_cancelled_reassignment_reverts_to_the_replicas_before_it(lone: LoneController) -> None:
    lone.up(1, 2, 3, 4)
    lone.create("t", 1, 3)
    before = lone.partition("t")
    (spare,) = {1, 2, 3, 4} - set(before.replicas)
    target = [*before.replicas[:2], spare]
    assert reassign(lone, "t", {0: target}) == [(0, 0, "")]
    assert reassign(lone, "t", {0: None}) == [(0, 0, "")]
    reverted = lone.partition("t")
    assert reverted.replicas == before.replicas  # the adding replica taken out, in order
    assert not (reverted.adding_replicas or reverted.removing_replicas)
    assert reverted.isr == before.isr and reverted.leader == before.leader
    # the start kept every replica; the cancel removed one: Kafka bumps the epoch then
    assert reverted.leader_epoch == before.leader_epoch + 1
    assert listed(lone) == {}
    again = reassign(lone, "t", {0: None})
    assert again[0][1] == ErrorCode.NO_REASSIGNMENT_IN_PROGRESS


def test_each_bad_target_is_refused_per_partition_and_nothing_is_written(
    lone: LoneController,
) -> None:
    lone.up(1, 2, 3)
    lone.create("t", 2, 2)
    before = lone.image.topic("t")
    bad = ErrorCode.INVALID_REPLICA_ASSIGNMENT
    answers = reassign(lone, "t", {0: [], 1: [1, 1], 5: [1, 2]})
    assert [(i, code) for i, code, _ in answers] == [
        (0, bad),
        (1, bad),
        (5, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    ]
    assert "more than once" in answers[1][2]
    unregistered = reassign(lone, "t", {0: [1, 9]})
    assert unregistered[0][1] == bad and "broker 9" in unregistered[0][2]
    answers = reassign(lone, "t", {0: [1, 2, 3]}, allow_rf=False)
    assert answers[0][1] == ErrorCode.INVALID_REPLICATION_FACTOR
    assert reassign(lone, "absent", {0: [1]})[0][1] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert lone.image.topic("t") == before


def test_a_new_target_replaces_the_one_in_flight(lone: LoneController) -> None:
    lone.up(1, 2, 3, 4, 5, 6)
    lone.create("t", 1, 3)
    placed = list(lone.partition("t").replicas)
    spare = sorted({1, 2, 3, 4, 5, 6} - set(placed))
    assert reassign(lone, "t", {0: spare}) == [(0, 0, "")]
    # the whole in-flight list is what the new target is judged against (Kafka's rule)
    target = [placed[0], placed[1], spare[0]]
    assert reassign(lone, "t", {0: target}) == [(0, 0, "")]
    moving = lone.partition("t")
    removing = sorted({placed[2], *spare[1:]})
    assert list(moving.replicas) == target + removing
    assert (list(moving.adding_replicas), list(moving.removing_replicas)) == ([], removing)
    assert listed(lone) == {"t": {0: (target + removing, [], removing)}}
    grow_isr(lone, "t", [*moving.isr, spare[0]])
    done = lone.partition("t")
    assert (list(done.replicas), sorted(done.isr)) == (target, sorted(target))


def test_a_cancel_that_would_need_an_unclean_election_waits_for_the_topic_to_allow_it(
    tmp_path: Path,
) -> None:
    lone = lone_controller(tmp_path, session_timeout_ms=1000)
    try:
        lone.up(1, 2, 3)
        lone.create("t", 1, 1)
        (old,) = lone.partition("t").replicas
        new = sorted({1, 2, 3} - {old})
        assert reassign(lone, "t", {0: new}) == [(0, 0, "")]
        grow_isr(lone, "t", [old, new[0]])  # one of two joined: not done
        lone.expire(*new)  # the old replica fenced: the ISR holds only a new one
        assert lone.partition("t").isr == (new[0],)
        refused = reassign(lone, "t", {0: None})
        assert refused[0][1] == ErrorCode.INVALID_REPLICA_ASSIGNMENT
        assert "unclean" in refused[0][2]
        allow = cpb.IncrementalAlterConfigsRequest()
        allow.resources.add(resource_type=2, resource_name="t").configs.add(
            name="unclean.leader.election.enable", config_operation=0, value="true"
        )
        assert not lone.call("IncrementalAlterConfigs", allow).error.error_code
        assert reassign(lone, "t", {0: None}) == [(0, 0, "")]
        reverted = lone.partition("t")
        assert (reverted.replicas, reverted.isr) == ((old,), (old,))
        assert reverted.leader == -1  # its only replica is fenced
    finally:
        lone.close()


def test_a_partition_named_twice_in_one_request_is_refused_the_second_time(
    lone: LoneController,
) -> None:
    lone.up(1, 2, 3)
    lone.create("t", 1, 3)
    before = lone.partition("t")
    request = cpb.AlterPartitionReassignmentsRequest(allow_replication_factor_change=True)
    t = request.topics.add(name="t")
    t.partitions.add(partition_index=0, replicas=list(before.replicas[1:]))
    t.partitions.add(partition_index=0, replicas=[1, 2, 3])
    answer = lone.call("AlterPartitionReassignments", request).responses[0].partitions
    assert [p.error_code for p in answer] == [0, ErrorCode.INVALID_REQUEST]
    assert list(lone.partition("t").replicas) == list(before.replicas[1:])
