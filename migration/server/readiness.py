"""What "ready" means for each process, answered on its metrics port (the HTTP side,
paths and body: :mod:`migration.observability.health`).

- **A controller** is ready when it is a voter, knows the current leader, and is caught
  up: the leader once it is the active controller (its epoch's first record committed);
  a follower once its image is no more than :data:`CAUGHT_UP_RECORDS` behind the high
  watermark its leader last sent it, and that high watermark is past 0 (on a fresh log,
  0 means the first leader's epoch is not committed: the quorum has not formed). A lone
  voter of a larger quorum knows no leader, and says so.
- **A KRaft-mode broker** is ready in Kafka's RUNNING state: registered with the KRaft
  controller, unfenced by it (the controller unfences a broker once its metadata offset
  reaches its registration: caught up), its client listeners open, and not shutting
  down; and, while it knows its leader's high watermark, its image no more than
  :data:`CAUGHT_UP_RECORDS` behind it. A leader it cannot reach for a while (a
  failover) does not make it unready: it serves its image meanwhile, as Kafka's brokers do.
- **A ZooKeeper-mode broker** is ready once it has registered in ``/brokers/ids``
  and opened its client listeners, until it begins shutting down; a migrating one
  (``zookeeper.metadata.migration.enable``) also once registered with the KRaft
  controller, which the migration waits for. A ZooKeeper or quorum outage later does
  not make it unready (the body shows ``zookeeper_connected``): a Kafka broker goes on
  serving its clients from what it knows, and a probe that emptied the cluster's
  Service for it would turn an outage of the metadata layer into one of every client.

Liveness is the process's loops running (:func:`migration.observability.health.running`).

Threading: every check runs on the HTTP handler thread and reads single attributes the
owning threads replace whole (as the collectors do), so each fact is one the process held.
"""

from __future__ import annotations

from collections.abc import Callable

from migration.broker.kraft_broker import KraftBroker
from migration.broker.zk_broker import ZkBroker
from migration.observability.health import Fact, Health
from migration.raft.node import RaftNode

# How far (in offsets) an image may trail its leader's high watermark and still count as
# caught up: a few fetches' worth. Further behind, the node is still replaying (a restart
# after a long stop, a snapshot being fetched, a large transaction landing).
CAUGHT_UP_RECORDS = 10_000


def _raft_facts(raft: RaftNode, applied: int) -> dict[str, Fact]:
    return {
        "node_id": raft.node_id,
        "state": raft.role.value if raft.is_voter else "Observer",
        "epoch": raft.epoch,
        "leader_id": raft.leader_id,
        "high_watermark": raft.leader_high_watermark,
        "applied_offset": applied,
    }


def _lag(raft: RaftNode, applied: int) -> int | None:
    """Offsets committed by the leader (as last heard) that the image at ``applied`` (the
    last offset in it) lacks; None when no leader's high watermark is known."""
    high_watermark = raft.leader_high_watermark
    return None if high_watermark is None else max(0, high_watermark - (applied + 1))


def controller_readiness(raft: RaftNode, active: Callable[[], bool], applied: int) -> Health:
    """A controller's readiness (module doc): ``active`` whether its quorum controller is
    the active one, ``applied`` the last offset of its published image (-1: none)."""
    facts = _raft_facts(raft, applied)
    if not raft.is_voter:
        return Health(
            False,
            f"node {raft.node_id} (directory {raft.config.directory_id or 'none'}) is not in "
            "the voter set: an observer (a replaced disk waits for `zk2kraft quorum "
            "add-controller`)",
            facts,
        )
    leader = raft.leader_id
    if leader is None:
        return Health(False, f"no leader known in epoch {raft.epoch} ({raft.role.value})", facts)
    if leader == raft.node_id:
        if active():
            return Health(True, "the leader and active controller", facts)
        return Health(False, "the leader, waiting for its epoch to commit", facts)
    lag = _lag(raft, applied)
    if lag is None:
        return Health(False, f"following {leader}, no high watermark from it yet", facts)
    if raft.leader_high_watermark == 0:  # a fresh log: its first leader's epoch not committed
        return Health(False, f"following {leader}, nothing committed yet", facts)
    facts["lag"] = lag
    if lag > CAUGHT_UP_RECORDS:
        return Health(False, f"following {leader}, {lag} offsets behind it", facts)
    return Health(True, f"following {leader}, caught up", facts)


def kraft_broker_readiness(broker: KraftBroker, serving: bool, stopping: bool) -> Health:
    """A KRaft-mode broker's readiness (module doc); ``serving``: its client listeners
    are open; ``stopping``: its shutdown began."""
    raft, session = broker.quorum.raft, broker.session
    applied = broker.image().offset
    facts = _raft_facts(raft, applied)
    facts.update(broker_id=broker.broker_id, broker_epoch=session.epoch, fenced=session.fenced)
    lag = _lag(raft, applied)
    if lag is not None:
        facts["lag"] = lag
    if stopping:
        return Health(False, "shutting down", facts)
    if session.epoch < 0:
        return Health(False, "not registered with the KRaft controller", facts)
    if session.fenced:
        return Health(False, f"fenced (metadata offset {applied}: catching up with the log)", facts)
    if not serving:
        return Health(False, "client listeners not open yet", facts)
    if lag is not None and lag > CAUGHT_UP_RECORDS:
        return Health(False, f"{lag} offsets behind the leader's high watermark", facts)
    return Health(True, "registered, unfenced and serving", facts)


def zk_broker_readiness(broker: ZkBroker, serving: bool, stopping: bool) -> Health:
    """A ZooKeeper-mode broker's readiness (module doc); ``serving`` and ``stopping`` as
    for :func:`kraft_broker_readiness`."""
    kraft = broker.kraft
    facts: dict[str, Fact] = {
        "broker_id": broker.broker_id,
        "broker_epoch": broker.cache.broker_epoch,
        "migrating": broker.config.migration_enabled,
        "kraft_broker_epoch": None if kraft is None else kraft.epoch,
        "zookeeper_connected": broker.client.kazoo.connected,
    }
    if stopping:
        return Health(False, "shutting down", facts)
    if broker.cache.broker_epoch < 0:
        return Health(False, "not registered in /brokers/ids", facts)
    if broker.config.migration_enabled and (kraft is None or kraft.epoch < 0):
        return Health(False, "migrating, not registered with the KRaft controller yet", facts)
    if not serving:
        return Health(False, "client listeners not open yet", facts)
    return Health(True, "registered and serving", facts)
