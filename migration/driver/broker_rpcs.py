"""The KRaft controller speaking to ZooKeeper-mode brokers while it migrates them:
UpdateMetadata, LeaderAndIsr and StopReplica built from committed images, sent over the
same per-broker ordered channel the ZooKeeper controller uses.

Contract:

- Only unfenced brokers registered as migrating ZooKeeper brokers receive them (KRaft
  brokers read the log), at their ``inter.broker.listener.name`` endpoint.
- Every request says ``is_kraft_controller``, this node as controller, the ZooKeeper
  controller epoch this leader claimed, and the receiver's KRaft registration epoch.
- :meth:`ZkBrokerRpcs.full`: UpdateMetadata FULL (every partition, every live broker,
  ZooKeeper and KRaft, each marked) first, then LeaderAndIsr FULL to each broker for
  its replicas: a broker drops whatever it is not told about (stray topics by id).
- :meth:`ZkBrokerRpcs.publish`: one committed change. A broker newly reachable gets the
  full pair; the others get UpdateMetadata with the changed partitions (deleted topics
  with leader -2) and the live set, LeaderAndIsr for changed partitions to their
  replicas, StopReplica(delete) to replicas removed and to the replicas of deleted
  topics.

Threading: :class:`ZkBrokerRpcs` is called from one thread at a time; the channel sends
on its own per-broker threads. :class:`BrokerRpcWorker` is what the driver holds: it
builds and sends on a thread of its own, in the order it is given work, so the full pair
(seconds at a million partitions) is not built inside the controllers' write pause, and
a change published after it still reaches each broker after it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from migration.image.delta import MetadataDelta
from migration.image.model import BrokerImage, MetadataImage, PartitionImage, TopicImage
from migration.image.publishing import ImageChange
from migration.proto import broker_pb2 as bpb
from migration.records.codes import SECURITY_PROTOCOLS
from migration.zkcontroller.channel import ControllerChannel, rpc
from migration.zkcontroller.state_requests import LEADER_DURING_DELETE, StateRequests

log = logging.getLogger(__name__)
_PROTOCOL_NAMES = {code: name for name, code in SECURITY_PROTOCOLS.items()}

States = list[bpb.PartitionState]


def zk_broker_targets(image: MetadataImage, listener: str) -> dict[int, str]:
    """``id -> host:port`` of every unfenced migrating ZooKeeper broker's ``listener``."""
    out = {}
    for b in image.brokers.values():
        if b.is_migrating_zk_broker and not b.fenced:
            e = next((e for e in b.endpoints if e.name == listener), None)
            if e is not None:
                out[b.broker_id] = f"{e.host}:{e.port}"
    return out


def live_broker(b: BrokerImage) -> bpb.LiveBroker:
    live = bpb.LiveBroker(
        id=b.broker_id,
        kraft=not b.is_migrating_zk_broker,
        shutting_down=b.in_controlled_shutdown,
        endpoints=[
            bpb.Endpoint(
                listener=e.name,
                host=e.host,
                port=e.port,
                security_protocol=_PROTOCOL_NAMES.get(e.security_protocol, "PLAINTEXT"),
            )
            for e in b.endpoints
        ],
    )
    if b.rack is not None:
        live.rack = b.rack
    return live


class ZkBrokerRpcs:
    def __init__(
        self,
        controller_id: int,
        zk_controller_epoch: int,
        listener: str,
        channel: ControllerChannel,
    ) -> None:
        self.controller_id = controller_id
        self.zk_controller_epoch = zk_controller_epoch
        self.listener = listener
        self.channel = channel
        self.targets: dict[int, str] = {}

    # --- building ------------------------------------------------------------------------

    def _header(self, image: MetadataImage, broker: int) -> bpb.ControllerHeader:
        reg = image.brokers.get(broker)
        return bpb.ControllerHeader(
            controller_id=self.controller_id,
            controller_epoch=self.zk_controller_epoch,
            broker_epoch=reg.epoch if reg is not None else -1,
            is_kraft_controller=True,
        )

    def _state(
        self, alive: set[int], topic: TopicImage, index: int, p: PartitionImage, leader: int
    ) -> bpb.PartitionState:
        """One partition's state; replicas not in ``alive`` are offline."""
        state = bpb.PartitionState(
            topic_name=topic.name,
            topic_id=topic.topic_id,
            partition_index=index,
            controller_epoch=self.zk_controller_epoch,
            leader=leader,
            leader_epoch=p.leader_epoch,
            partition_epoch=p.partition_epoch,
            leader_recovery_state=p.leader_recovery_state,
            isr=p.isr,
            replicas=p.replicas,
        )
        if not alive.issuperset(p.replicas):
            state.offline_replicas.extend(r for r in p.replicas if r not in alive)
        return state

    def _live(self, image: MetadataImage) -> list[bpb.LiveBroker]:
        """The live brokers UpdateMetadata names: every unfenced one, those in controlled
        shutdown too (as Kafka's controllers send live-or-shutting-down brokers): such a
        broker still leads the partitions its later steps move, and a ZooKeeper-mode
        broker shows a partition whose leader is not live as offline."""
        return [live_broker(b) for _, b in sorted(image.brokers.items()) if not b.fenced]

    # --- sending -------------------------------------------------------------------------

    def full(self, image: MetadataImage, brokers: Iterable[int] | None = None) -> int:
        """The full pair to ``brokers`` (default: every target). Returns how many got it."""
        self._retarget(image)
        chosen = sorted(self.targets if brokers is None else set(brokers) & set(self.targets))
        alive = _alive(image)
        requests = StateRequests(
            (
                self._state(alive, t, i, p, p.leader)
                for t in image.topics.values()
                for i, p in sorted(t.partitions.items())
            ),
            self._live(image),
            bpb.FULL,
            holders=chosen,
        )
        for b in chosen:
            self.channel.send(b, "UpdateMetadata", requests.update_metadata(self._header(image, b)))
        leader_and_isr = [
            (b, requests.leader_and_isr(b, self._header(image, b), bpb.FULL)) for b in chosen
        ]
        requests.release()
        for b, request in leader_and_isr:
            self.channel.send(b, "LeaderAndIsr", request)
        return len(chosen)

    def publish(self, change: ImageChange) -> None:
        """Tell the ZooKeeper brokers what ``change`` changed (see the module doc)."""
        image, delta = change.image, change.delta
        if delta is None:
            self.full(image)
            return
        before = set(self.targets)
        self._retarget(image)
        newcomers = set(self.targets) - before
        if newcomers:
            self.full(image, newcomers)
        others = sorted(set(self.targets) - newcomers)
        changed, removed, deleted = self._partition_changes(change.previous, image, delta)
        if not (changed or deleted or delta.brokers):
            return
        live = self._live(image)
        updates = StateRequests(changed + deleted, live, bpb.INCREMENTAL)
        for b in others:
            self.channel.send(b, "UpdateMetadata", updates.update_metadata(self._header(image, b)))
        replicas = StateRequests(changed, live, bpb.INCREMENTAL, holders=others)
        for b in others:
            if replicas.holds_any(b):
                request = replicas.leader_and_isr(b, self._header(image, b), bpb.INCREMENTAL)
                self.channel.send(b, "LeaderAndIsr", request)
        for b, mine in _by_replica(deleted, removed).items():
            if b in self.targets:
                self._send(
                    b,
                    "StopReplica",
                    bpb.StopReplicaRequest(
                        header=self._header(image, b), partitions=mine, delete_partitions=True
                    ),
                )

    def close(self) -> None:
        self.channel.close()
        self.targets = {}

    def _retarget(self, image: MetadataImage) -> None:
        self.targets = zk_broker_targets(image, self.listener)
        self.channel.set_brokers(self.targets)

    def _partition_changes(
        self, previous: MetadataImage, image: MetadataImage, delta: MetadataDelta
    ) -> tuple[
        list[bpb.PartitionState], dict[int, list[bpb.PartitionState]], list[bpb.PartitionState]
    ]:
        """Changed partitions' states; per broker, the replicas it no longer holds; the
        deleted topics' partitions (leader -2)."""
        changed: list[bpb.PartitionState] = []
        removed: dict[int, list[bpb.PartitionState]] = {}
        alive, alive_before = _alive(image), _alive(previous)
        for topic_id, t in delta.topics.items():
            topic = image.topics.get(topic_id)
            if topic is None:
                continue
            old_topic = previous.topics.get(topic_id)
            for index in sorted(t.partitions):
                p = topic.partitions[index]
                state = self._state(alive, topic, index, p, p.leader)
                changed.append(state)
                old = old_topic.partitions.get(index) if old_topic is not None else None
                for r in set(old.replicas if old is not None else ()) - set(p.replicas):
                    removed.setdefault(r, []).append(state)
        deleted = [
            self._state(alive_before, topic, index, p, LEADER_DURING_DELETE)
            for topic_id in delta.deleted_topics
            if (topic := previous.topics.get(topic_id)) is not None
            for index, p in sorted(topic.partitions.items())
        ]
        return changed, removed, deleted

    def _send(self, broker: int, method: str, request: Any) -> None:
        self.channel.send(broker, method, rpc(method, request))


class BrokerRpcWorker:
    """:class:`ZkBrokerRpcs` on a thread of its own (the module doc): :meth:`full` and
    :meth:`publish` return at once; the work runs in the order given. A task that fails
    is logged whole and the next change goes out as the full pair, so no broker is left
    behind a change it missed."""

    def __init__(self, rpcs: ZkBrokerRpcs) -> None:
        self.rpcs = rpcs
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="zk-broker-rpcs")
        self._failed = False  # the worker's own

    def full(self, image: MetadataImage) -> int:
        """Queue the full pair to every target; how many brokers it goes to."""
        self._run(lambda: self.rpcs.full(image))
        return len(zk_broker_targets(image, self.rpcs.listener))

    def publish(self, change: ImageChange) -> None:
        """Queue what ``change`` changed (the full pair after a failed task)."""

        def task() -> None:
            if self._failed:
                self.rpcs.full(change.image)
            else:
                self.rpcs.publish(change)

        self._run(task)

    def _run(self, task: Callable[[], object]) -> None:
        def guarded() -> None:
            try:
                task()
                self._failed = False
            except Exception:
                log.exception("telling the ZooKeeper brokers failed; the next change is sent whole")
                self._failed = True

        self._worker.submit(guarded)

    def settle(self) -> None:
        """Wait until the work queued so far is done (a caller that must know the brokers
        were told)."""
        self._worker.submit(lambda: None).result()

    def close(self) -> None:
        """Drop the work not started (a leadership's requests, stale under the next),
        wait for the one running, close the channel."""
        self._worker.shutdown(wait=True, cancel_futures=True)
        self.rpcs.close()


def _alive(image: MetadataImage) -> set[int]:
    return {b for b, reg in image.brokers.items() if not reg.fenced}


def _by_replica(
    states: list[bpb.PartitionState], extra: dict[int, list[bpb.PartitionState]] | None = None
) -> dict[int, list[bpb.PartitionState]]:
    out: dict[int, list[bpb.PartitionState]] = {}
    for s in states:
        for r in s.replicas:
            out.setdefault(r, []).append(s)
    for b, more in (extra or {}).items():
        out.setdefault(b, []).extend(more)
    return out
