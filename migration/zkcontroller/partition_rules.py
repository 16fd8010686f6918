"""The ZooKeeper controller's leader and ISR rules, as pure functions of one partition
(Kafka's partition state machine, ZooKeeper mode). Every change bumps the leader epoch;
the caller stamps its controller epoch and writes the state at its znode version.

- A new partition: the first live replica leads; the ISR is the live replicas in
  assignment order (no live replica: offline, leader -1, ISR all replicas).
- A broker gone: it leaves the ISR (unless it is the last member: Kafka keeps the last
  ISR member so a clean election can wait for it); if it led, the next live ISR member
  leads; none: offline (leader -1), or, when the topic allows unclean election, the
  first live replica leads alone.
- An offline partition whose ISR member came back: that member leads.
- AlterPartition (a leader changing its ISR): Kafka's checks, in Kafka's order.
- Controlled shutdown: a broker shutting down gives up leadership to another live ISR
  member and leaves the ISR; where no other member is live it keeps leading (reported
  as remaining).
"""

from __future__ import annotations

from collections.abc import Collection

from migration.common.kafka_errors import ErrorCode
from migration.zk.model.topics import PartitionState

OFFLINE = -1


def initial_state(replicas: tuple[int, ...], live: Collection[int], epoch: int) -> PartitionState:
    alive = tuple(r for r in replicas if r in live)
    if not alive:
        return PartitionState(OFFLINE, 0, epoch, replicas)
    return PartitionState(alive[0], 0, epoch, alive)


def _next(state: PartitionState, epoch: int, leader: int, isr: tuple[int, ...]) -> PartitionState:
    return state._replace(
        leader=leader, isr=isr, leader_epoch=state.leader_epoch + 1, controller_epoch=epoch
    )


def without_broker(
    state: PartitionState,
    replicas: tuple[int, ...],
    gone: int,
    live: Collection[int],
    epoch: int,
    *,
    unclean: bool = False,
) -> PartitionState | None:
    """The state once broker ``gone`` has failed (None: unchanged)."""
    if gone not in state.isr and state.leader != gone:
        return None
    isr = tuple(r for r in state.isr if r != gone) or state.isr
    if state.leader != gone:
        return _next(state, epoch, state.leader, isr)
    successor = next((r for r in isr if r in live and r != gone), None)
    if successor is not None:
        return _next(state, epoch, successor, isr)
    if unclean:
        alive = next((r for r in replicas if r in live and r != gone), None)
        if alive is not None:
            return _next(state, epoch, alive, (alive,))
    return _next(state, epoch, OFFLINE, isr)


def back_online(state: PartitionState, live: Collection[int], epoch: int) -> PartitionState | None:
    """An offline partition's new state when an ISR member is live again (None: still
    offline, or not offline)."""
    if state.leader != OFFLINE:
        return None
    leader = next((r for r in state.isr if r in live), None)
    return None if leader is None else _next(state, epoch, leader, state.isr)


def shutting_down(
    state: PartitionState, broker: int, live: Collection[int], epoch: int
) -> PartitionState | None:
    """The state once ``broker`` asked for a controlled shutdown (None: unchanged; a
    partition it still leads, with no other live ISR member, is unchanged too)."""
    if broker not in state.isr and state.leader != broker:
        return None
    others = tuple(r for r in state.isr if r != broker)
    if state.leader == broker:
        successor = next((r for r in others if r in live), None)
        return None if successor is None else _next(state, epoch, successor, others)
    return _next(state, epoch, state.leader, others) if others else None


def isr_change_problem(
    state: PartitionState,
    zk_version: int,
    replicas: tuple[int, ...],
    broker: int,
    asked: tuple[int, int, tuple[int, ...]],
    *,
    usable: Collection[int],
) -> int:
    """Kafka's error code for ``broker``'s AlterPartition of one partition, ``asked`` =
    (leader epoch, partition epoch, new ISR) as the leader knows them; 0: accepted."""
    leader_epoch, partition_epoch, new_isr = asked
    if state.leader != broker:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    if leader_epoch < state.leader_epoch:
        return ErrorCode.FENCED_LEADER_EPOCH
    if leader_epoch > state.leader_epoch:
        return ErrorCode.UNKNOWN_LEADER_EPOCH
    if partition_epoch != zk_version:
        return ErrorCode.INVALID_UPDATE_VERSION
    isr = set(new_isr)
    if broker not in isr or not isr <= set(replicas):
        return ErrorCode.INVALID_REQUEST
    if not isr <= {*usable, broker}:
        return ErrorCode.INELIGIBLE_REPLICA
    return 0
