"""UpdateMetadata and LeaderAndIsr for many brokers from one list of partition states,
each state encoded once: the one builder of both requests, for the ZooKeeper
controller and for the KRaft controller that migrates ZooKeeper brokers.

Why encoded: a full UpdateMetadata at 1,000,000 partitions is ~60 MB on the wire. Built
as a protobuf message per broker, with LeaderAndIsr beside it, the controller held
seven copies of every partition's state as message objects (~1.8 KB per partition at
its peak; measured at 100,000 partitions). Here each state is serialized once, straight
into one buffer of UpdateMetadata's ``partition_states`` fields; each request is its own
small part (header, type, live brokers) followed by that shared buffer (UpdateMetadata)
or by LeaderAndIsr's fields cut from it (the same bodies under LeaderAndIsr's one-byte
tag). A state then costs its encoding, 8 bytes of bookkeeping and 4 more for each of its
holders until the requests are built (a bytes object and a list slot each held ~2.5
times as much at a million).
Protobuf's wire format lets fields come in any order and merges repeated fields, so a
receiver parses exactly the message it would have been sent; the parts are joined on the
sender's thread right before the call (:class:`Rpc`), so at most one joined copy per
broker exists at a time.
"""

from __future__ import annotations

from array import array
from collections.abc import Collection, Iterable, Sequence

from migration.common.protowire import varint
from migration.proto import broker_pb2 as bpb
from migration.zkcontroller.channel import Rpc

# UpdateMetadata's leader of a partition whose topic is being deleted (Kafka's
# LeaderAndIsr.LeaderDuringDelete), sent by both controllers, read by every broker.
LEADER_DURING_DELETE = -2

_WIRE_LENGTH_DELIMITED = 2


def _tag(message: type[bpb.UpdateMetadataRequest | bpb.LeaderAndIsrRequest]) -> int:
    number = message.DESCRIPTOR.fields_by_name["partition_states"].number
    tag = varint(number << 3 | _WIRE_LENGTH_DELIMITED)
    assert len(tag) == 1, "a one-byte tag: LeaderAndIsr's fields are UpdateMetadata's retagged"
    return tag[0]


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
        fields = bytearray()  # UpdateMetadata's partition_states fields, one per state
        starts = array("Q")  # where each state's field starts in it, then its end
        self._mine: dict[int, array[int]] = {b: array("I") for b in holders}
        tag = bytes((_UPDATE_METADATA_STATE,))
        for index, state in enumerate(states):
            for r in state.replicas:
                mine = self._mine.get(r)
                if mine is not None:
                    mine.append(index)
            body = state.SerializeToString()
            starts.append(len(fields))
            fields += tag
            fields += varint(len(body))
            fields += body
        starts.append(len(fields))
        self._fields: bytearray = fields  # never changed once built: requests share it
        self._starts = starts
        self.count = len(starts) - 1  # states
        head = bpb.UpdateMetadataRequest(type=update_type, live_brokers=live)
        self._head = head.SerializeToString()
        self._every_replica: bytearray | None = None  # LeaderAndIsr's states when one holds all

    def update_metadata(self, header: bpb.ControllerHeader) -> Rpc:
        assert len(self._starts) == self.count + 1, "released before UpdateMetadata was built"
        prefix = bpb.UpdateMetadataRequest(header=header).SerializeToString()
        return Rpc("UpdateMetadata", (prefix, self._head, self._fields))

    def holds_any(self, broker: int) -> bool:
        return bool(self._mine.get(broker))

    def leader_and_isr(
        self, broker: int, header: bpb.ControllerHeader, update_type: bpb.UpdateType
    ) -> Rpc:
        """``broker``'s own replicas (one of ``holders``); with ``update_type`` FULL the
        receiver drops every partition not named."""
        mine = self._mine[broker]
        if len(mine) == self.count:  # e.g. three brokers, replication factor 3
            if self._every_replica is None:
                self._every_replica = self._retagged(range(self.count))
            states = self._every_replica
        else:
            states = self._retagged(mine)
        head = bpb.LeaderAndIsrRequest(header=header, type=update_type)
        return Rpc("LeaderAndIsr", (head.SerializeToString(), states))

    def release(self) -> None:
        """Drop the encodings once every request is built (the requests keep what they
        need)."""
        self._fields = bytearray()
        self._starts = array("Q")
        self._mine = {}
        self._every_replica = None

    def _retagged(self, indexes: Iterable[int]) -> bytearray:
        """The fields of the states at ``indexes``, under LeaderAndIsr's tag."""
        starts, fields = self._starts, memoryview(self._fields)
        out = bytearray()
        for i in indexes:
            out.append(_LEADER_AND_ISR_STATE)
            out += fields[starts[i] + 1 : starts[i + 1]]
        return out
