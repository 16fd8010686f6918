"""UpdateMetadata and LeaderAndIsr for many brokers from one list of partition states,
each state encoded once: the one builder of both requests, for the ZooKeeper
controller and for the KRaft controller that migrates ZooKeeper brokers.

Why encoded: a full UpdateMetadata at 1,000,000 partitions is ~60 MB on the wire. Built
as a protobuf message per broker, with LeaderAndIsr beside it, the controller held
seven copies of every partition's state as message objects (~1.8 KB per partition at
its peak; measured at 100,000 partitions). Here each state is serialized once and
dropped; each request is its own small part (header, type, live brokers) followed by
shared encoded states. Protobuf's wire format lets fields come in any order and merges
repeated fields, so a receiver parses exactly the message it would have been sent; the
parts are joined on the sender's thread right before the call (:class:`Rpc`), so at
most one joined copy per broker exists at a time.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

from migration.common.protowire import varint
from migration.proto import broker_pb2 as bpb
from migration.zkcontroller.channel import Rpc

# UpdateMetadata's leader of a partition whose topic is being deleted (Kafka's
# LeaderAndIsr.LeaderDuringDelete), sent by both controllers, read by every broker.
LEADER_DURING_DELETE = -2

_WIRE_LENGTH_DELIMITED = 2


def _tag(message: type[bpb.UpdateMetadataRequest | bpb.LeaderAndIsrRequest]) -> bytes:
    number = message.DESCRIPTOR.fields_by_name["partition_states"].number
    return varint(number << 3 | _WIRE_LENGTH_DELIMITED)


_UPDATE_METADATA_STATE = _tag(bpb.UpdateMetadataRequest)
_LEADER_AND_ISR_STATE = _tag(bpb.LeaderAndIsrRequest)


class StateRequests:
    """The requests about ``states`` (consumed once, each serialized as it comes):
    UpdateMetadata with all of them and the ``live`` brokers for any broker, and
    LeaderAndIsr with each of ``holders``' own replicas. Not thread-safe; the
    :class:`Rpc` it returns may be sent from any thread."""

    def __init__(
        self,
        states: Iterable[bpb.PartitionState],
        live: Sequence[bpb.LiveBroker],
        update_type: bpb.UpdateType,
        holders: Collection[int] = (),
    ) -> None:
        self.holders = tuple(holders)
        bodies: list[bytes] = []
        self._mine: dict[int, list[int]] = {b: [] for b in holders}
        for state in states:
            for r in state.replicas:
                mine = self._mine.get(r)
                if mine is not None:
                    mine.append(len(bodies))
            bodies.append(state.SerializeToString())
        self._bodies = bodies
        self.count = len(bodies)  # states
        self._live = live
        self._update_type = update_type
        self._update_metadata: bytes | None = None  # built on first use
        self._every_replica: bytes | None = None  # LeaderAndIsr's states when one holds all

    def update_metadata(self, header: bpb.ControllerHeader) -> Rpc:
        if self._update_metadata is None:
            assert self.count == len(self._bodies), "released before UpdateMetadata was built"
            head = bpb.UpdateMetadataRequest(type=self._update_type, live_brokers=self._live)
            self._update_metadata = head.SerializeToString() + _fields(
                _UPDATE_METADATA_STATE, self._bodies
            )
        prefix = bpb.UpdateMetadataRequest(header=header).SerializeToString()
        return Rpc("UpdateMetadata", (prefix, self._update_metadata))

    def holds_any(self, broker: int) -> bool:
        return bool(self._mine.get(broker))

    def leader_and_isr(
        self, broker: int, header: bpb.ControllerHeader, update_type: bpb.UpdateType
    ) -> Rpc:
        """``broker``'s own replicas (one of ``holders``); with ``update_type`` FULL the
        receiver drops every partition not named."""
        mine = self._mine[broker]
        if len(mine) == len(self._bodies):  # e.g. three brokers, replication factor 3
            if self._every_replica is None:
                self._every_replica = _fields(_LEADER_AND_ISR_STATE, self._bodies)
            states = self._every_replica
        else:
            states = _fields(_LEADER_AND_ISR_STATE, (self._bodies[i] for i in mine))
        head = bpb.LeaderAndIsrRequest(header=header, type=update_type)
        return Rpc("LeaderAndIsr", (head.SerializeToString(), states))

    def release(self) -> None:
        """Drop the per-state encodings once every LeaderAndIsr is built (the requests
        keep what they need)."""
        self._bodies = []
        self._mine = {}
        self._every_replica = None


def _fields(tag: bytes, bodies: Iterable[bytes]) -> bytes:
    return b"".join(tag + varint(len(body)) + body for body in bodies)
