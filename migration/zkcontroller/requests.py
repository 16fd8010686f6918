"""What the ZooKeeper controller tells brokers (UpdateMetadata, LeaderAndIsr,
StopReplica), built from its context and queued on its channel. Every request carries
the controller's id and epoch and the receiver's broker epoch; LeaderAndIsr and
StopReplica go only to the live replicas of the partitions named."""

from __future__ import annotations

from collections.abc import Iterable

from migration.proto import broker_pb2 as bpb
from migration.records.uuids import uuid_bytes
from migration.zk.model.topics import PartitionState
from migration.zkcontroller.channel import ControllerChannel, rpc
from migration.zkcontroller.context import ControllerContext, TopicPartition
from migration.zkcontroller.state_requests import LEADER_DURING_DELETE, StateRequests


class BrokerRequests:
    def __init__(
        self,
        ctx: ControllerContext,
        channel: ControllerChannel,
        controller_id: int,
        epoch: int,
        internal_listener: str,
    ) -> None:
        self.ctx = ctx
        self.channel = channel
        self.controller_id = controller_id
        self.epoch = epoch
        self.internal_listener = internal_listener

    def header(self, broker: int) -> bpb.ControllerHeader:
        return bpb.ControllerHeader(
            controller_id=self.controller_id,
            controller_epoch=self.epoch,
            broker_epoch=self.ctx.broker_epochs.get(broker, -1),
        )

    def state(self, key: TopicPartition, deleted: bool = False) -> bpb.PartitionState:
        t, p = key
        assignment = self.ctx.assignments[t]
        replicas = assignment.partitions.get(p, ())
        state, version = self.ctx.states.get(key, (PartitionState(-1, 0, self.epoch, ()), 0))
        return bpb.PartitionState(
            topic_name=t,
            topic_id=_uuid16(assignment.topic_id),
            partition_index=p,
            controller_epoch=state.controller_epoch,
            leader=LEADER_DURING_DELETE if deleted else state.leader,
            leader_epoch=state.leader_epoch,
            isr=state.isr,
            partition_epoch=version,
            replicas=replicas,
            offline_replicas=[r for r in replicas if r not in self.ctx.live],
            leader_recovery_state=state.leader_recovery_state,
        )

    def live_brokers(self) -> list[bpb.LiveBroker]:
        out = []
        for b in sorted(self.ctx.live.values(), key=lambda b: b.broker_id):
            live = bpb.LiveBroker(
                id=b.broker_id,
                shutting_down=b.broker_id in self.ctx.shutting_down,
                endpoints=[
                    bpb.Endpoint(
                        listener=e.listener,
                        host=e.host,
                        port=e.port,
                        security_protocol=e.security_protocol,
                    )
                    for e in b.endpoints
                ],
            )
            if b.rack is not None:
                live.rack = b.rack
            out.append(live)
        return out

    def update_metadata(
        self,
        brokers: Iterable[int],
        partitions: Iterable[TopicPartition],
        full: bool = False,
        deleted: bool = False,
    ) -> None:
        states = (self.state(k, deleted) for k in partitions)
        requests = StateRequests(states, self.live_brokers(), bpb.FULL if full else bpb.INCREMENTAL)
        for b in brokers:
            self.channel.send(b, "UpdateMetadata", requests.update_metadata(self.header(b)))

    def leader_and_isr(self, partitions: Iterable[TopicPartition]) -> None:
        """To each live broker holding a replica of ``partitions``, its own."""
        self._leader_and_isr(self._requests(partitions, False))

    def announce(self, changed: Iterable[TopicPartition], full: bool = False) -> None:
        """UpdateMetadata to every live broker, then LeaderAndIsr to the replicas of
        ``changed`` (metadata first: a broker must know the leaders' endpoints before it
        acts on its own replicas; docs/field-bugs.md#fb-12). ``full``: everything the controller
        holds, which the receivers take as complete."""
        requests = self._requests(changed, full)
        if requests.count or full:
            for b in requests.holders:
                self.channel.send(b, "UpdateMetadata", requests.update_metadata(self.header(b)))
            self._leader_and_isr(requests)

    def _requests(self, partitions: Iterable[TopicPartition], full: bool) -> StateRequests:
        return StateRequests(
            (self.state(k) for k in partitions),
            self.live_brokers(),
            bpb.FULL if full else bpb.INCREMENTAL,
            holders=sorted(self.ctx.live),
        )

    def _leader_and_isr(self, requests: StateRequests) -> None:
        for b in requests.holders:
            if requests.holds_any(b):
                request = requests.leader_and_isr(b, self.header(b), bpb.INCREMENTAL)
                self.channel.send(b, "LeaderAndIsr", request)

    def targets(self) -> dict[int, str]:
        out = {}
        for b in self.ctx.live.values():
            e = next((e for e in b.endpoints if e.listener == self.internal_listener), None)
            if e is not None:
                out[b.broker_id] = f"{e.host}:{e.port}"
        return out

    def stop_replicas(self, keys: list[TopicPartition]) -> None:
        for b, states in self._by_replica([self.state(k) for k in keys]).items():
            req = bpb.StopReplicaRequest(
                header=self.header(b), partitions=states, delete_partitions=True
            )
            self.channel.send(b, "StopReplica", rpc("StopReplica", req))

    def _by_replica(self, states: list[bpb.PartitionState]) -> dict[int, list[bpb.PartitionState]]:
        """Each live broker's share of ``states``: the partitions it is a replica of."""
        by_broker: dict[int, list[bpb.PartitionState]] = {}
        for message in states:
            for r in message.replicas:
                if r in self.ctx.live:
                    by_broker.setdefault(r, []).append(message)
        return by_broker


def _uuid16(topic_id: str | None) -> bytes:
    return uuid_bytes(topic_id) if topic_id else bytes(16)
