"""Broker registration, heartbeats, fencing, controlled shutdown, leader election,
AlterPartition and AllocateProducerIds.

Kafka's rules: a registration's broker epoch is the offset of its RegisterBrokerRecord;
a refused registration does not count as hearing from the broker; a broker starts
fenced and is unfenced by a heartbeat once it has caught up with the metadata log up
to its registration, and then leads again the leaderless partitions whose ISR it is
in; a broker whose heartbeats stop for ``broker.session.timeout.ms`` is fenced; a
fenced or shutting-down broker leaves every ISR and gives up leadership to the next
ISR member (none left: leader -1). A change record that names a leader bumps the
leader epoch; the controller names the unchanged leader to force that bump when it
shrinks an ISR while ZooKeeper-mode brokers may be listening (migration enabled, or a
metadata.version before 3.6-IV0), as they only act on a new leader epoch.

Fencing moves leadership and shrinks ISRs in steps of at most MOVES_PER_STEP
partitions, the broker fenced with the last step: requests are handled on the quorum's
event loop, and moving 100,000 leaderships in one handler held it past the followers'
fetch timeout, so the quorum kept electing new leaders (at 1,000,000 partitions, fencing
an expired broker in one go held it for 35 s, and every new leader did it again). A
controlled shutdown, or a broker asking to be fenced, takes a step per heartbeat (the
broker heartbeats until told, as Kafka's brokers do), handled in slices of
MOVES_PER_SLICE (:mod:`migration.controller.slices`); an expired session a step once the
one before has committed (:meth:`BrokerRegistry.expired` names the broker until it is
fenced), in slices likewise. A step goes on from where the broker's last one stopped:
it costs the partitions it passes, not a scan of all of them. An AlterPartition is
handled in slices of SLICE_RECORDS partitions likewise.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from migration.common.kafka_errors import ErrorCode
from migration.common.limits import INT16_MAX, PORT_MAX, STRING_MAX_BYTES
from migration.controller.context import (
    SLICE_RECORDS,
    STEP_RECORDS,
    ControllerView,
    WriteContext,
)
from migration.controller.errors import request_error
from migration.controller.partition_change import (
    NO_LEADER,
    after,
    bump_on_isr_shrink,
    partition_change,
    usable,
)
from migration.controller.registry import ScanKind
from migration.image.model import MetadataImage, PartitionImage, TopicImage
from migration.image.persistent import round_from
from migration.proto import controller_pb2 as cpb
from migration.proto import metadata_pb2 as mpb
from migration.records.registration import add_features, endpoint_values, feature_range
from migration.records.uuids import uuid_bytes, uuid_text

PRODUCER_ID_BLOCK = 1000
MOVES_PER_STEP = STEP_RECORDS  # partitions one step of fencing changes
MOVES_PER_SLICE = SLICE_RECORDS  # ... and one slice of a step
SCAN_BUDGET = 50 * SLICE_RECORDS  # partitions one slice of a scan examines at most
T = TypeVar("T")


def registration_problem(req: cpb.BrokerRegistrationRequest) -> str | None:
    """What of a registration Kafka's RegisterBrokerRecord cannot hold (None: nothing),
    so no value a peer sends can fail a later reader, the export, the page: a 16-byte
    incarnation id, strings within Kafka's int16 length, ports within uint16, security
    protocols and feature versions within int16."""
    if len(req.incarnation_id) != 16:  # a Kafka Uuid
        return f"incarnation_id has {len(req.incarnation_id)} bytes, not 16"
    strings = [("rack", req.rack)] if req.HasField("rack") else []
    for i, listener in enumerate(req.listeners):
        strings += [
            (f"listeners[{i}].name", listener.name),
            (f"listeners[{i}].host", listener.host),
        ]
        if not 0 <= listener.port <= PORT_MAX:
            return f"listeners[{i}].port {listener.port} is not within 0-{PORT_MAX}"
        if not 0 <= listener.security_protocol <= INT16_MAX:
            return f"listeners[{i}].security_protocol {listener.security_protocol} is out of range"
    for i, feature in enumerate(req.features):
        strings.append((f"features[{i}].name", feature.name))
        versions = (feature.min_supported_version, feature.max_supported_version)
        if not all(-INT16_MAX - 1 <= v <= INT16_MAX for v in versions):
            return f"features[{i}] versions {versions} are not int16"
    for field, text in strings:
        if len(text.encode()) > STRING_MAX_BYTES:
            return f"{field} is {len(text.encode()):,} bytes, more than {STRING_MAX_BYTES:,}"
    return None


def register(
    ctx: WriteContext, req: cpb.BrokerRegistrationRequest
) -> cpb.BrokerRegistrationResponse:
    cluster_id = ctx.settings.cluster_id
    if req.cluster_id and cluster_id and req.cluster_id != cluster_id:
        return cpb.BrokerRegistrationResponse(error_code=ErrorCode.INCONSISTENT_CLUSTER_ID)
    if req.broker_id < 0:
        return cpb.BrokerRegistrationResponse(error_code=ErrorCode.INVALID_REQUEST)
    problem = registration_problem(req)
    if problem is not None:
        return cpb.BrokerRegistrationResponse(
            error_code=ErrorCode.INVALID_REQUEST,
            error=request_error(ErrorCode.INVALID_REQUEST, problem),
        )
    existing = ctx.image.brokers.get(req.broker_id)
    if (
        existing is not None
        and existing.incarnation_id != req.incarnation_id
        and not existing.fenced
    ):
        return cpb.BrokerRegistrationResponse(error_code=ErrorCode.DUPLICATE_BROKER_REGISTRATION)
    epoch = ctx.offset_of_next
    record = mpb.RegisterBrokerRecord(
        broker_id=req.broker_id,
        is_migrating_zk_broker=req.is_migrating_zk_broker,
        incarnation_id=req.incarnation_id,
        broker_epoch=epoch,
        fenced=True,
    )
    for listener in req.listeners:
        record.end_points.add(**endpoint_values(listener))
    add_features(record.features, map(feature_range, req.features))
    if req.HasField("rack"):
        record.rack = req.rack
    ctx.add(register_broker_record=record)
    ctx.registry.heard_from(req.broker_id)
    ctx.registry.mark(req.broker_id, fenced=True)
    return cpb.BrokerRegistrationResponse(broker_epoch=epoch)


def heartbeat(ctx: WriteContext, req: cpb.BrokerHeartbeatRequest) -> cpb.BrokerHeartbeatResponse:
    broker = ctx.image.brokers.get(req.broker_id)
    if broker is None:
        return cpb.BrokerHeartbeatResponse(error_code=ErrorCode.BROKER_ID_NOT_REGISTERED)
    if broker.epoch != req.broker_epoch:
        return cpb.BrokerHeartbeatResponse(error_code=ErrorCode.STALE_BROKER_EPOCH)
    ctx.registry.heard_from(req.broker_id)
    # A migrating ZooKeeper broker has no metadata log: the controller's RPCs keep it
    # current, so it counts as caught up.
    caught_up = broker.is_migrating_zk_broker or req.current_metadata_offset >= broker.epoch
    if req.want_shut_down:
        done = _move_leadership(ctx, ctx.image, req.broker_id, MOVES_PER_SLICE)
        if not broker.in_controlled_shutdown or (done and not broker.fenced):
            change = mpb.BrokerRegistrationChangeRecord(
                broker_id=req.broker_id, broker_epoch=broker.epoch, in_controlled_shutdown=True
            )
            if done:
                change.fenced = True
            ctx.add(broker_registration_change_record=change)
        if done:
            ctx.registry.mark(req.broker_id, fenced=True)
        return cpb.BrokerHeartbeatResponse(
            is_caught_up=caught_up, is_fenced=broker.fenced or done, should_shut_down=done
        )
    fenced = broker.fenced
    if req.want_fence and not fenced:
        fenced = _fence(ctx, ctx.image, req.broker_id, broker.epoch, MOVES_PER_SLICE)
    elif fenced and caught_up and not req.want_fence and not broker.in_controlled_shutdown:
        ctx.add(unfence_broker_record=mpb.UnfenceBrokerRecord(id=req.broker_id, epoch=broker.epoch))
        ctx.registry.mark(req.broker_id, fenced=False)
        ctx.registry.scan_done(req.broker_id, ScanKind.LEAD_LEADERLESS)  # afresh
        _lead_leaderless(ctx, ctx.current(), req.broker_id)
        fenced = False
    elif not fenced and ctx.registry.scanning(
        req.broker_id, broker.epoch, ScanKind.LEAD_LEADERLESS
    ):
        _lead_leaderless(ctx, ctx.image, req.broker_id)
    return cpb.BrokerHeartbeatResponse(is_caught_up=caught_up, is_fenced=fenced)


def heartbeat_rest(
    ctx: WriteContext,
    req: cpb.BrokerHeartbeatRequest,
    answer: cpb.BrokerHeartbeatResponse,
    slices: int,
) -> cpb.BrokerHeartbeatRequest | None:
    """A heartbeat's step goes on in another slice while what it asks is not done (shut
    down, fenced, or its leaderless partitions taken up), up to MOVES_PER_STEP moves."""
    if answer.error_code or slices * MOVES_PER_SLICE >= MOVES_PER_STEP:
        return None
    unfinished = (
        (req.want_shut_down and not answer.should_shut_down)
        or (req.want_fence and not answer.is_fenced)
        or (
            not answer.is_fenced
            and ctx.registry.scanning(req.broker_id, req.broker_epoch, ScanKind.LEAD_LEADERLESS)
        )
    )
    return req if unfinished else None


def last_answer(answers: list[T]) -> T:
    """A sliced step's answer: its last slice's (what the step left)."""
    return answers[-1]


def fence_expired(ctx: WriteContext, broker_ids: list[int]) -> None:
    """A slice of a step of fencing the brokers whose sessions expired (the controller's
    own timer, not an RPC): at most MOVES_PER_SLICE partitions change in all; the step
    goes on in the next slice (:func:`fence_expired_rest`), and a broker not fenced by
    the step's end is named again by the registry, the next round going on."""
    for broker_id in broker_ids:
        image = ctx.current()  # after the brokers fenced before this one
        broker = image.brokers.get(broker_id)
        if broker is None or broker.fenced:
            ctx.registry.mark(broker_id, fenced=True)
        elif not _fence(ctx, image, broker_id, broker.epoch, MOVES_PER_SLICE - len(ctx.records)):
            return


def fence_expired_rest(
    ctx: WriteContext, broker_ids: list[int], _answer: None, slices: int
) -> list[int] | None:
    """A fencing step goes on in another slice while a broker it names is still expired
    and not fenced (as the registry has it), up to MOVES_PER_STEP moves."""
    if slices * MOVES_PER_SLICE >= MOVES_PER_STEP:
        return None
    expired = ctx.registry.expired()
    left = [b for b in broker_ids if b in expired]
    return left or None


def _fence(ctx: WriteContext, image: MetadataImage, broker_id: int, epoch: int, limit: int) -> bool:
    """Move up to ``limit`` partitions off ``broker_id``; once none is left, fence it.
    True when fenced."""
    if not _move_leadership(ctx, image, broker_id, limit):
        return False
    ctx.add(fence_broker_record=mpb.FenceBrokerRecord(id=broker_id, epoch=epoch))
    ctx.registry.mark(broker_id, fenced=True)
    return True


def _move_leadership(ctx: WriteContext, image: MetadataImage, broker_id: int, limit: int) -> bool:
    """A step of taking ``broker_id`` out of every ISR and, where it led, electing the
    next ISR member; True once none is left (see :func:`_scan_step`)."""

    def change_for(
        topic: TopicImage, index: int, p: PartitionImage
    ) -> mpb.PartitionChangeRecord | None:
        if broker_id not in p.isr and p.leader != broker_id:
            return None
        # Kafka keeps the last replica in the ISR (ELR aside)
        isr = [r for r in p.isr if r != broker_id] or list(p.isr)
        change = mpb.PartitionChangeRecord(partition_id=index, topic_id=topic.topic_id)
        if tuple(isr) != p.isr:
            change.isr.ids.extend(isr)
        if p.leader == broker_id:
            alive = [r for r in isr if r != broker_id and usable(image, r)]
            change.leader = alive[0] if alive else NO_LEADER
        elif change.HasField("isr") and bump_on_isr_shrink(ctx, image):
            change.leader = p.leader
        return change if change.HasField("isr") or change.HasField("leader") else None

    return _scan_step(ctx, image, broker_id, ScanKind.MOVE_OFF, change_for, limit=limit)


def _scan_step(
    ctx: WriteContext,
    image: MetadataImage,
    broker_id: int,
    kind: ScanKind,
    change_for: Callable[[TopicImage, int, PartitionImage], mpb.PartitionChangeRecord | None],
    *,
    limit: int,
) -> bool:
    """One step of a scan of every partition on ``broker_id``'s behalf, going on from the
    topic where its last step of ``kind`` stopped (the registry keeps the place):
    ``change_for`` gives a partition's PartitionChangeRecord, or None. A step ends at
    ``limit`` changes or once it has examined ``SCAN_BUDGET`` partitions, so no step
    costs a cluster's worth (a million partitions: about a second on the loop). True
    once every topic has been passed whole since the scan last stopped at its limit
    (nothing is left to change); the scan is then forgotten."""
    registration = image.brokers.get(broker_id)
    place = ctx.registry.scan(broker_id, -1 if registration is None else registration.epoch, kind)
    count = len(image.topics)
    moved = examined = 0
    for topic_id in round_from(image.topics, place.resume):
        if place.passed >= count:
            break
        if examined >= SCAN_BUDGET:
            place.resume = topic_id
            return False
        topic = image.topics[topic_id]
        for index, p in sorted(topic.partitions.items()):
            change = change_for(topic, index, p)
            if change is None:
                continue
            if moved >= limit:
                place.resume, place.passed = topic_id, 0
                return False
            ctx.add(partition_change_record=change)
            moved += 1
        examined += len(topic.partitions)
        place.passed += 1
    ctx.registry.scan_done(broker_id, kind)
    return True


def _lead_leaderless(ctx: WriteContext, image: MetadataImage, broker_id: int) -> None:
    """A step of a broker back from fencing taking the leadership of the leaderless
    partitions whose ISR holds it (a clean election: the ISR keeps its last member while
    a partition is offline); the broker's next heartbeats take the steps after it."""

    def change_for(
        topic: TopicImage, index: int, p: PartitionImage
    ) -> mpb.PartitionChangeRecord | None:
        if p.leader != NO_LEADER or broker_id not in p.isr:
            return None
        return mpb.PartitionChangeRecord(
            partition_id=index, topic_id=topic.topic_id, leader=broker_id
        )

    _scan_step(ctx, image, broker_id, ScanKind.LEAD_LEADERLESS, change_for, limit=MOVES_PER_SLICE)


def alter_partition(
    ctx: WriteContext, req: cpb.AlterPartitionRequest
) -> cpb.AlterPartitionResponse:
    response = cpb.AlterPartitionResponse()
    broker = ctx.image.brokers.get(req.broker_id)
    stale = broker is None or broker.epoch != req.broker_epoch
    for t, asked_here in _first(req, SLICE_RECORDS):
        out = response.topics.add(topic_id=t.topic_id)
        try:
            topic = ctx.image.topics.get(uuid_bytes(t.topic_id))
        except ValueError:
            topic = None
        for asked in asked_here:
            state = out.partitions.add(partition_index=asked.partition_index)
            if stale:
                state.error_code = ErrorCode.STALE_BROKER_EPOCH
                continue
            if topic is None:
                state.error_code = ErrorCode.UNKNOWN_TOPIC_ID
                continue
            p = topic.partitions.get(asked.partition_index)
            if p is None:
                state.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            isr = list(asked.isr)
            if p.leader != req.broker_id:
                state.error_code = ErrorCode.NOT_LEADER_OR_FOLLOWER
            elif asked.leader_epoch != p.leader_epoch:
                state.error_code = ErrorCode.FENCED_LEADER_EPOCH
            elif asked.partition_epoch != p.partition_epoch:
                state.error_code = ErrorCode.INVALID_UPDATE_VERSION
            elif (
                not isr
                or req.broker_id not in isr
                or len(set(isr)) != len(isr)
                or not set(isr) <= set(p.replicas)
                or not all(usable(ctx.image, r) for r in isr)
            ):
                state.error_code = ErrorCode.INELIGIBLE_REPLICA
            if state.error_code:
                _describe(state, p)
                continue
            # an expansion keeps the leader epoch (its leader asked for it and takes the
            # answer); a shrink may bump it; a reassignment completes once it may, and
            # where that elects another leader the asker is told so (Kafka's
            # NEW_LEADER_ELECTED), the state it now has described as with any refusal
            change = partition_change(ctx, topic.topic_id, asked.partition_index, p, isr=tuple(isr))
            if change is not None:
                ctx.add(partition_change_record=change)
                if change.HasField("leader") and change.leader != req.broker_id:
                    state.error_code = ErrorCode.NEW_LEADER_ELECTED
            _describe(state, after(p, change))
    return response


def _first(
    req: cpb.AlterPartitionRequest, count: int
) -> list[tuple[cpb.AlterPartitionTopic, list[cpb.PartitionState]]]:
    """The first ``count`` partitions ``req`` asks about, by topic, in its order."""
    out: list[tuple[cpb.AlterPartitionTopic, list[cpb.PartitionState]]] = []
    for t in req.topics:
        if count <= 0:
            break
        asked = list(t.partitions[:count])
        out.append((t, asked))
        count -= len(asked)
    return out


def alter_partition_rest(
    ctx: WriteContext,
    req: cpb.AlterPartitionRequest,
    answer: cpb.AlterPartitionResponse,
    slices: int,
) -> cpb.AlterPartitionRequest | None:
    """What of ``req`` its next slice handles: the partitions after those ``answer``
    has (None: all of them were)."""
    skip = sum(len(t.partitions) for t in answer.topics)
    rest = cpb.AlterPartitionRequest(broker_id=req.broker_id, broker_epoch=req.broker_epoch)
    for t in req.topics:
        if skip >= len(t.partitions):
            skip -= len(t.partitions)
            continue
        rest.topics.add(topic_id=t.topic_id).partitions.extend(t.partitions[skip:])
        skip = 0
    return rest if rest.topics else None


def alter_partition_whole(
    answers: list[cpb.AlterPartitionResponse],
) -> cpb.AlterPartitionResponse:
    """An AlterPartition's answer from its slices': their topics in order, a topic split
    between two slices answered as one."""
    whole = cpb.AlterPartitionResponse()
    for answer in answers:
        for t in answer.topics:
            if whole.topics and whole.topics[-1].topic_id == t.topic_id:
                whole.topics[-1].partitions.extend(t.partitions)
            else:
                whole.topics.add().CopyFrom(t)
    return whole


def _describe(state: cpb.PartitionState, p: PartitionImage) -> None:
    state.leader_id, state.leader_epoch = p.leader, p.leader_epoch
    state.partition_epoch, state.leader_recovery_state = p.partition_epoch, p.leader_recovery_state
    state.replicas[:] = p.replicas
    state.isr[:] = p.isr


def allocate_producer_ids(
    ctx: WriteContext, req: cpb.AllocateProducerIdsRequest
) -> cpb.AllocateProducerIdsResponse:
    broker = ctx.image.brokers.get(req.broker_id)
    if broker is None:
        return cpb.AllocateProducerIdsResponse(error_code=ErrorCode.BROKER_ID_NOT_REGISTERED)
    if broker.epoch != req.broker_epoch:
        return cpb.AllocateProducerIdsResponse(error_code=ErrorCode.STALE_BROKER_EPOCH)
    start = ctx.image.producer_ids.next_producer_id if ctx.image.producer_ids else 0
    ctx.add(
        producer_ids_record=mpb.ProducerIdsRecord(
            broker_id=req.broker_id,
            broker_epoch=req.broker_epoch,
            next_producer_id=start + PRODUCER_ID_BLOCK,
        )
    )
    return cpb.AllocateProducerIdsResponse(
        producer_id_start=start, producer_id_len=PRODUCER_ID_BLOCK
    )


# --- reads ---------------------------------------------------------------------------------


def describe_cluster(
    image: MetadataImage, controller: ControllerView, _: cpb.DescribeClusterRequest
) -> cpb.DescribeClusterResponse:
    response = cpb.DescribeClusterResponse(
        cluster_id=controller.cluster_id,
        controller_id=controller.node_id,
        metadata_offset=image.offset,
    )
    for broker_id, reg in sorted(image.brokers.items()):
        endpoint = reg.endpoints[0] if reg.endpoints else None
        desc = response.brokers.add(
            broker_id=broker_id,
            host=endpoint.host if endpoint else "",
            port=endpoint.port if endpoint else 0,
            fenced=reg.fenced,
            in_controlled_shutdown=reg.in_controlled_shutdown,
            broker_epoch=reg.epoch,
        )
        if reg.rack is not None:
            desc.rack = reg.rack
    return response


def metadata(
    image: MetadataImage, _: ControllerView, req: cpb.MetadataRequest
) -> cpb.MetadataResponse:
    response = cpb.MetadataResponse()
    names = list(req.topics) or sorted(image.topic_ids)
    for name in names:
        topic = image.topic(name)
        out = response.topics.add(name=name)
        if topic is None:
            out.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            continue
        out.topic_id = uuid_text(topic.topic_id)
        for index, p in sorted(topic.partitions.items()):
            state = out.partitions.add(
                partition_index=index, leader_recovery_state=p.leader_recovery_state
            )
            _describe(state, p)
    return response
