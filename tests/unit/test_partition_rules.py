"""The ZooKeeper controller's leader and ISR rules."""

from __future__ import annotations

from migration.zk.model.topics import PartitionState
from migration.zkcontroller import partition_rules as rules

S = PartitionState(leader=1, leader_epoch=4, controller_epoch=7, isr=(1, 2, 3))
REPLICAS = (1, 2, 3)


def test_a_new_partition_is_led_by_its_first_live_replica() -> None:
    assert rules.initial_state(REPLICAS, {2, 3}, 9) == PartitionState(2, 0, 9, (2, 3))
    assert rules.initial_state(REPLICAS, set(), 9).leader == rules.OFFLINE


def test_a_dead_leader_hands_over_to_the_next_live_isr_member() -> None:
    new = rules.without_broker(S, REPLICAS, 1, {2, 3}, 8)
    assert new == PartitionState(2, 5, 8, (2, 3))


def test_a_dead_follower_leaves_the_isr_and_bumps_the_epoch() -> None:
    assert rules.without_broker(S, REPLICAS, 3, {1, 2}, 8) == PartitionState(1, 5, 8, (1, 2))
    assert rules.without_broker(S._replace(isr=(1, 2)), REPLICAS, 3, {1, 2}, 8) is None


def test_the_last_isr_member_stays_and_the_partition_goes_offline() -> None:
    lone = S._replace(isr=(1,))
    new = rules.without_broker(lone, REPLICAS, 1, {2, 3}, 8)
    assert new is not None and new.leader == rules.OFFLINE and new.isr == (1,)
    unclean = rules.without_broker(lone, REPLICAS, 1, {3}, 8, unclean=True)
    assert unclean is not None and (unclean.leader, unclean.isr) == (3, (3,))
    assert rules.back_online(new, {1}, 9) == new._replace(
        leader=1, leader_epoch=6, controller_epoch=9
    )
    assert rules.back_online(new, {2}, 9) is None


def test_controlled_shutdown_moves_leadership_only_within_the_live_isr() -> None:
    moved = rules.shutting_down(S, 1, {2, 3}, 8)
    assert moved == PartitionState(2, 5, 8, (2, 3))
    assert rules.shutting_down(S._replace(isr=(1,)), 1, {2, 3}, 8) is None
    follower = rules.shutting_down(S, 3, {1, 2}, 8)
    assert follower == PartitionState(1, 5, 8, (1, 2))


def test_only_a_topics_partitions_are_left_to_the_controller() -> None:
    from migration.broker.zk_admin import _below_topic

    assert _below_topic("/brokers/topics/t/partitions/0/state")
    assert _below_topic("/brokers/topics/t/partitions")
    assert not _below_topic("/brokers/topics/t")
    assert not _below_topic("/config/topics/partitions-archive")


def test_alter_partition_is_checked_in_kafkas_order() -> None:
    ok = (4, 7, (1, 2))
    assert rules.isr_change_problem(S, 7, REPLICAS, 1, ok, usable={1, 2, 3}) == 0
    assert rules.isr_change_problem(S, 7, REPLICAS, 2, ok, usable={1, 2, 3}) == 6  # not the leader
    assert (
        rules.isr_change_problem(S, 7, REPLICAS, 1, (3, 7, (1, 2)), usable={1, 2}) == 74
    )  # fenced
    assert (
        rules.isr_change_problem(S, 7, REPLICAS, 1, (5, 7, (1, 2)), usable={1, 2}) == 75
    )  # unknown
    assert (
        rules.isr_change_problem(S, 7, REPLICAS, 1, (4, 6, (1, 2)), usable={1, 2}) == 95
    )  # version
    assert rules.isr_change_problem(S, 7, REPLICAS, 1, (4, 7, (2, 9)), usable={1, 2}) == 42
    assert rules.isr_change_problem(S, 7, REPLICAS, 1, (4, 7, (1, 3)), usable={1, 2}) == 107
