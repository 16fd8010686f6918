"""What a ZooKeeper-mode broker learns from its controller: the metadata cache
(UpdateMetadata: live brokers, every partition's leader and ISR), its own replicas'
leadership (LeaderAndIsr) and the replicas it drops (StopReplica).

Kafka's checks: a request from a controller epoch older than the newest seen is refused
with STALE_CONTROLLER_EPOCH; a request naming an older broker epoch than this broker's
registration gets STALE_BROKER_EPOCH; a LeaderAndIsr partition state with a leader epoch
not above the current one gets STALE_CONTROLLER_EPOCH for that partition (an equal one
is accepted from a KRaft controller, which re-sends states while it migrates).

Threading: UpdateMetadata is applied under a lock of its own, the replica state
(LeaderAndIsr, StopReplica, this leader's AlterPartition answers) under another, and
the epoch checks under a third, held only to compare and note. Readers take none of
them: each UpdateMetadata, once applied, publishes immutable :meth:`topics` and
:meth:`brokers` snapshots, and :meth:`wait` waits on a condition of its own. So a full
LeaderAndIsr of a million partitions (seconds to apply) holds no UpdateMetadata, no
Metadata answer and no forwarded write waiting for its topic to show.
"""

from __future__ import annotations

import heapq
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from migration.broker.short_isrs import ShortIsrs
from migration.common.kafka_errors import ErrorCode
from migration.common.shared_ids import shared_ids
from migration.image.model import (
    BrokerImage,
    EndpointImage,
    PartitionImage,
    TopicImage,
)
from migration.proto import broker_pb2 as bpb
from migration.records.codes import SECURITY_PROTOCOLS
from migration.zkcontroller.state_requests import LEADER_DURING_DELETE


@dataclass(frozen=True, slots=True)
class ReplicaState:
    """This broker's view of one of its replicas, from LeaderAndIsr."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    partition_epoch: int
    replicas: tuple[int, ...] = ()


def partition_image(s: bpb.PartitionState) -> PartitionImage:
    return PartitionImage(
        replicas=shared_ids(s.replicas),
        isr=shared_ids(s.isr),
        removing_replicas=(),
        adding_replicas=(),
        leader=s.leader,
        leader_recovery_state=s.leader_recovery_state,
        leader_epoch=s.leader_epoch,
        partition_epoch=s.partition_epoch,
    )


def broker_image(b: bpb.LiveBroker) -> BrokerImage:
    return BrokerImage(
        broker_id=b.id,
        incarnation_id=b"",
        epoch=-1,
        endpoints=tuple(
            EndpointImage(
                e.listener, e.host, e.port, SECURITY_PROTOCOLS.get(e.security_protocol, 0)
            )
            for e in b.endpoints
        ),
        features=(),
        rack=b.rack if b.HasField("rack") else None,
        fenced=False,
        in_controlled_shutdown=b.shutting_down,
        is_migrating_zk_broker=True,
    )


def _eligible(brokers: Iterable[BrokerImage]) -> frozenset[int]:
    """The live brokers an ISR may take: not those in controlled shutdown (the
    controller refuses them: INELIGIBLE_REPLICA)."""
    return frozenset(b.broker_id for b in brokers if not b.in_controlled_shutdown)


REFUSED_UNTIL_A_CHANGE = frozenset({
    ErrorCode.INELIGIBLE_REPLICA,  # a replica fenced or shutting down at the controller
    ErrorCode.FENCED_LEADER_EPOCH,  # this cache's state is behind the controller's
    ErrorCode.INVALID_UPDATE_VERSION,
    ErrorCode.NOT_LEADER_OR_FOLLOWER,
})  # fmt: skip
"""AlterPartition refusals the same ask draws again until the partition's state or the
live brokers change (not, say, STALE_BROKER_EPOCH: a new registration mends that)."""


class MetadataCache:
    def __init__(self, broker_id: int) -> None:
        self.broker_id = broker_id
        self.broker_epoch = -1  # set once registered (the registration's czxid)
        self.kraft_broker_epoch = -1  # while migrating: the KRaft registration's epoch
        self.controller_epoch = -1
        self.controller_id = -1
        self.replicas: dict[tuple[str, int], ReplicaState] = {}
        # led here, ISR short of the replicas: an ISR expansion looks only at what the
        # live brokers are missing from
        self._lacking: ShortIsrs[tuple[str, int]] = ShortIsrs(broker_id)
        # led here, an answer promised this newer leader epoch: not asked again until a
        # LeaderAndIsr brings it (asked with the old one, it could only be refused)
        self._promised: dict[tuple[str, int], int] = {}
        # led here, an ask the controller refused: (leader epoch, partition epoch, ISR
        # asked for); the same ask from the same state is not made again while the live
        # brokers stay the same (a broker in controlled shutdown is live to this cache
        # but ineligible to the controller)
        self._refused: dict[tuple[str, int], tuple[int, int, tuple[int, ...]]] = {}
        self._lock = threading.RLock()  # the replica state: replicas and the sets below
        self._metadata = threading.Lock()  # UpdateMetadata, applied one at a time
        self._epochs = threading.Lock()  # the controller and broker epochs (stale())
        self._changed = threading.Condition()  # a new snapshot published (readers' own)
        self._brokers: Mapping[int, BrokerImage] = MappingProxyType({})
        self._topics: dict[bytes, TopicImage] = {}
        self._ids: dict[str, bytes] = {}
        self._published: tuple[Mapping[bytes, TopicImage], Mapping[str, bytes]] = (
            MappingProxyType({}),
            MappingProxyType({}),
        )
        self.version = 0  # bumped on every applied UpdateMetadata

    # --- readers -------------------------------------------------------------------------

    def brokers(self) -> Mapping[int, BrokerImage]:
        return self._brokers

    def topics(self) -> tuple[Mapping[bytes, TopicImage], Mapping[str, bytes]]:
        return self._published

    def wait(self, predicate: object, timeout_s: float) -> bool:
        """Block until ``predicate()`` holds after an UpdateMetadata (or now)."""
        with self._changed:
            return self._changed.wait_for(predicate, timeout_s)  # type: ignore[arg-type]

    # --- the controller's requests --------------------------------------------------------

    def stale(self, header: bpb.ControllerHeader) -> bpb.BrokerResponse | None:
        """The refusal of a request from an older controller epoch or naming an older
        broker epoch; else None, and the header's controller is noted as the newest."""
        with self._epochs:
            if header.controller_epoch < self.controller_epoch:
                return bpb.BrokerResponse(
                    error_code=ErrorCode.STALE_CONTROLLER_EPOCH,
                    error_message=f"controller epoch {header.controller_epoch} is older than "
                    f"{self.controller_epoch}",
                )
            # A KRaft controller knows this broker by its KRaft registration's epoch.
            mine = self.kraft_broker_epoch if header.is_kraft_controller else self.broker_epoch
            if 0 <= header.broker_epoch < mine:
                return bpb.BrokerResponse(
                    error_code=ErrorCode.STALE_BROKER_EPOCH,
                    error_message=f"broker epoch {header.broker_epoch} is older than {mine}",
                )
            self.controller_epoch = header.controller_epoch
            self.controller_id = header.controller_id
            return None

    def update_metadata(self, req: bpb.UpdateMetadataRequest) -> bpb.BrokerResponse:
        with self._metadata:
            refused = self.stale(req.header)
            if refused is not None:
                return refused
            brokers = MappingProxyType({b.id: broker_image(b) for b in req.live_brokers})
            if _eligible(brokers.values()) != _eligible(self._brokers.values()):
                # what was ineligible may not be any more (one dict operation: the
                # replica lock, which a full LeaderAndIsr holds for seconds, is not taken)
                self._refused.clear()
            before: Mapping[bytes, TopicImage] = {}
            if req.type == bpb.FULL:
                before, self._topics, self._ids = self._topics, {}, {}
            changed: dict[str, dict[int, PartitionImage | None]] = {}
            ids: dict[str, bytes] = {}
            for s in req.partition_states:
                ids[s.topic_name] = s.topic_id
                changed.setdefault(s.topic_name, {})[s.partition_index] = (
                    None if s.leader == LEADER_DURING_DELETE else partition_image(s)
                )
            for name, parts in changed.items():
                self._apply_topic(name, ids[name], parts, before)
            published = (MappingProxyType(dict(self._topics)), MappingProxyType(dict(self._ids)))
            with self._changed:
                self._brokers, self._published = brokers, published
                self.version += 1  # after the snapshot: a reader of the new version sees it
                self._changed.notify_all()
            return bpb.BrokerResponse()

    def _apply_topic(
        self,
        name: str,
        topic_id: bytes,
        parts: dict[int, PartitionImage | None],
        before: Mapping[bytes, TopicImage],
    ) -> None:
        """Applies one topic's partition states. A topic left as it was (here or in
        ``before``, the topics a full request replaces) keeps its :class:`TopicImage`
        object: what is kept per topic object (the all-topics Metadata answer's encoded
        entries) stays valid through a full UpdateMetadata that changes nothing."""
        old_id = self._ids.get(name)
        old = self._topics.get(old_id) if old_id is not None else None
        if old is not None and old_id != topic_id:  # a re-created topic: drop the old one
            del self._topics[old_id]  # type: ignore[arg-type]
            old = None
        partitions = dict(old.partitions) if old is not None else {}
        for pid, p in parts.items():
            if p is None:
                partitions.pop(pid, None)
            else:
                partitions[pid] = p
        if not partitions:
            self._topics.pop(topic_id, None)
            self._ids.pop(name, None)
            return
        topic = old if old is not None else before.get(topic_id)
        if topic is None or topic.name != name or topic.partitions != partitions:
            topic = TopicImage(name, topic_id, partitions)
        self._topics[topic_id] = topic
        self._ids[name] = topic_id

    def leader_and_isr(self, req: bpb.LeaderAndIsrRequest) -> bpb.BrokerResponse:
        with self._lock:
            refused = self.stale(req.header)
            if refused is not None:
                return refused
            response = bpb.BrokerResponse()
            named = set()
            for s in req.partition_states:
                key = (s.topic_name, s.partition_index)
                named.add(key)
                if self.broker_id not in s.replicas:
                    continue
                current = self.replicas.get(key)
                newer = current is None or s.leader_epoch > current.leader_epoch
                equal_from_kraft = (
                    current is not None
                    and s.leader_epoch == current.leader_epoch
                    and req.header.is_kraft_controller
                )
                if newer or equal_from_kraft:
                    self._set(
                        key,
                        ReplicaState(
                            s.leader, s.leader_epoch, shared_ids(s.isr), s.partition_epoch,
                            shared_ids(s.replicas),
                        ),
                    )  # fmt: skip
                else:
                    response.partition_errors.add(
                        topic_name=s.topic_name,
                        partition_index=s.partition_index,
                        error_code=ErrorCode.STALE_CONTROLLER_EPOCH,
                    )
            if req.type == bpb.FULL:  # stray replicas: what a full request does not name
                for key in set(self.replicas) - named:
                    self._set(key, None)
            return response

    def stop_replica(self, req: bpb.StopReplicaRequest) -> bpb.BrokerResponse:
        with self._lock:
            refused = self.stale(req.header)
            if refused is not None:
                return refused
            for s in req.partitions:
                self._set((s.topic_name, s.partition_index), None)
            return bpb.BrokerResponse()

    def isr_to_expand(self, limit: int | None = None) -> list[bpb.PartitionState]:
        """AlterPartition entries for the partitions led here whose ISR lacks a live
        replica not in controlled shutdown, the first ``limit`` of them in order (None:
        all); none while this broker is in controlled shutdown itself (the controller
        refuses an ISR holding it). A metadata-only follower has no data to catch up on:
        it is in sync as soon as it is alive, and its leader asks to add it back, as
        Kafka's leaders do once a follower catches up."""
        live = _eligible(self._brokers.values())
        if self.broker_id not in live:  # shutting down itself: its ISRs are the next leader's
            return []
        out: list[bpb.PartitionState] = []
        with self._lock:
            short = self._lacking.of(live) - self._promised.keys()
            # in order, a step's worth and each refusal that may be skipped: not every
            # short ISR's entry (a third of a million at a million partitions, each time)
            first = (
                sorted(short)
                if limit is None
                else heapq.nsmallest(limit + len(self._refused), short)
            )
            for topic, pid in first:
                if len(out) == limit:
                    break
                r = self.replicas[(topic, pid)]
                isr = [x for x in r.replicas if x in r.isr or x in live]
                refused = self._refused.get((topic, pid))
                if refused == (r.leader_epoch, r.partition_epoch, tuple(isr)):
                    continue
                if set(isr) != set(r.isr):
                    out.append(
                        bpb.PartitionState(
                            topic_name=topic, partition_index=pid, leader_epoch=r.leader_epoch,
                            partition_epoch=r.partition_epoch, isr=isr,
                        )
                    )  # fmt: skip
        return out

    def altered(self, states: list[bpb.PartitionState]) -> None:
        """The controller's answer to this leader's AlterPartition: taken when it keeps
        the leader epoch; a newer one waits for its LeaderAndIsr (Kafka's leaders do not
        take a new leader epoch from an answer), and until then the partition is not
        asked for again."""
        with self._lock:
            for s in states:
                key = (s.topic_name, s.partition_index)
                current = self.replicas.get(key)
                if current is not None and s.leader_epoch > current.leader_epoch:
                    self._promised[key] = s.leader_epoch
                elif current is not None and current.leader_epoch == s.leader_epoch:
                    self._set(
                        key,
                        ReplicaState(
                            s.leader, s.leader_epoch, shared_ids(s.isr), s.partition_epoch,
                            current.replicas,
                        ),
                    )  # fmt: skip

    def refused(self, asked: list[bpb.PartitionState], errors: list[bpb.PartitionError]) -> None:
        """The partitions of this leader's AlterPartition (``asked``) the controller
        refused for what only a new state or a change of the live brokers can mend
        (:data:`REFUSED_UNTIL_A_CHANGE`): not asked for the same ISR again until then
        (asked again, they could only be refused again)."""
        by_key = {(s.topic_name, s.partition_index): s for s in asked}
        with self._lock:
            for e in errors:
                key = (e.topic_name, e.partition_index)
                s = by_key.get(key)
                if s is not None and e.error_code in REFUSED_UNTIL_A_CHANGE:
                    self._refused[key] = (s.leader_epoch, s.partition_epoch, tuple(s.isr))

    def _set(self, key: tuple[str, int], state: ReplicaState | None) -> None:
        self._refused.pop(key, None)
        promised = self._promised.get(key)
        if promised is not None and (state is None or state.leader_epoch >= promised):
            del self._promised[key]
        self._lacking.put(key, state)
        if state is None:
            self.replicas.pop(key, None)
        else:
            self.replicas[key] = state

    def led(self) -> list[tuple[str, int]]:
        """The partitions this broker leads (by LeaderAndIsr)."""
        with self._lock:
            return sorted(k for k, r in self.replicas.items() if r.leader == self.broker_id)
