"""Partition reassignment (KIP-455) as Kafka's KRaft controller runs it:
AlterPartitionReassignments starts or cancels one, ListPartitionReassignments lists
those in flight; :mod:`.partition_change` builds the records (and completes a
reassignment, in whichever change lets it).

The rules, over a partition with replicas R, ISR I and a target T:

- Starting: ``removing`` = R - T and ``adding`` = T - R (each ascending), ``replicas`` =
  T in the order given, then ``removing``; the ISR is unchanged. T = R writes nothing.
  While one is in flight R is its whole replica list, so a new target replaces the old.
- Completing: as soon as the ISR holds every target replica (at once when T only
  removes replicas), in the same record (:mod:`.partition_change`).
- Cancelling (Kafka's null target): ``replicas`` and the ISR without ``adding``; an ISR
  left empty takes the first replica, only where unclean leader election is allowed
  (the topic's config, else the cluster default; else INVALID_REPLICA_ASSIGNMENT). The
  leader is then elected as always (:mod:`.partition_change`): where no ISR member is
  usable the partition is left leaderless, where Kafka would elect any usable replica.

Every check answers per partition, Kafka's codes: an unknown topic or partition
UNKNOWN_TOPIC_OR_PARTITION; an empty target, a broker named twice or never registered
(fenced brokers count as registered) INVALID_REPLICA_ASSIGNMENT; a changed replication
factor where the request forbids it (Kafka 4.1's v1) INVALID_REPLICATION_FACTOR;
cancelling where nothing is in flight NO_REASSIGNMENT_IN_PROGRESS; a partition named twice
in one request INVALID_REQUEST (Kafka judges each against the state before the request,
which two changes of one partition would corrupt).
"""

from __future__ import annotations

from migration.common.kafka_errors import ErrorCode
from migration.common.text import shown
from migration.controller.context import ControllerView, WriteContext
from migration.controller.partition_change import Ids, partition_change
from migration.image.model import MetadataImage, PartitionImage
from migration.proto import controller_pb2 as cpb
from migration.records.codes import BROKER_RESOURCE, TOPIC_RESOURCE

UNCLEAN = "unclean.leader.election.enable"

Asked = tuple[Ids, Ids, Ids, Ids]
"""The replicas, adding and removing replicas, and ISR a start or a cancel asks for."""


class _RefusedError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


def alter_partition_reassignments(
    ctx: WriteContext, request: cpb.AlterPartitionReassignmentsRequest
) -> cpb.AlterPartitionReassignmentsResponse:
    response = cpb.AlterPartitionReassignmentsResponse()
    named: set[tuple[str, int]] = set()
    for t in request.topics:
        out = response.responses.add(name=t.name)
        topic = ctx.image.topic(t.name)
        for asked in t.partitions:
            index = asked.partition_index
            result = out.partitions.add(partition_index=index)
            try:
                if (t.name, index) in named:
                    raise _RefusedError(
                        ErrorCode.INVALID_REQUEST,
                        f"partition {t.name}-{index} is named more than once in the request",
                    )
                named.add((t.name, index))
                if topic is None:
                    raise _RefusedError(
                        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                        f"there is no topic named {shown(t.name)}",
                    )
                p = topic.partitions.get(index)
                if p is None:
                    raise _RefusedError(
                        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                        f"topic {t.name} has no partition {index}",
                    )
                replicas, adding, removing, isr = (
                    _reverted(ctx.image, t.name, p)
                    if asked.cancel
                    else _started(ctx.image, p, tuple(asked.replicas), request)
                )
            except _RefusedError as refused:
                result.error_code, result.error_message = refused.code, refused.message
                continue
            change = partition_change(
                ctx, topic.topic_id, index, p, isr=isr, moving=(replicas, adding, removing)
            )
            if change is not None:
                ctx.add(partition_change_record=change)
    return response


def _started(
    image: MetadataImage,
    p: PartitionImage,
    target: Ids,
    request: cpb.AlterPartitionReassignmentsRequest,
) -> Asked:
    bad = ErrorCode.INVALID_REPLICA_ASSIGNMENT
    if not target:
        raise _RefusedError(bad, "the target replica list is empty")
    seen: set[int] = set()
    for broker in sorted(target):
        if broker in seen:
            raise _RefusedError(bad, f"the target names broker {broker} more than once")
        seen.add(broker)
        if broker not in image.brokers:
            raise _RefusedError(bad, f"the target names broker {broker}, which is not registered")
    heading = len(p.replicas) - len(p.removing_replicas)  # where it goes (or is)
    if not request.allow_replication_factor_change and len(target) != heading:
        raise _RefusedError(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"the target has {len(target)} replicas where the partition has {heading}, "
            "and the request does not allow the replication factor to change",
        )
    removing = tuple(sorted(set(p.replicas) - seen))
    adding = tuple(sorted(seen - set(p.replicas)))
    return target + removing, adding, removing, p.isr


def _reverted(image: MetadataImage, topic: str, p: PartitionImage) -> Asked:
    if not (p.adding_replicas or p.removing_replicas):
        raise _RefusedError(
            ErrorCode.NO_REASSIGNMENT_IN_PROGRESS,
            f"no reassignment of {topic} is in progress to cancel",
        )
    replicas = tuple(r for r in p.replicas if r not in p.adding_replicas)
    isr = tuple(r for r in p.isr if r not in p.adding_replicas)
    if not isr:
        if not _unclean_allowed(image, topic):
            raise _RefusedError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"cancelling the reassignment of {topic} would leave no replica of its "
                "original assignment in the ISR: an unclean leader election, which the "
                f"topic does not allow ({UNCLEAN})",
            )
        isr = replicas[:1]
    return replicas, (), (), isr


def _unclean_allowed(image: MetadataImage, topic: str) -> bool:
    """The topic's ``unclean.leader.election.enable``, else the cluster default broker
    config's, else Kafka's default (false)."""
    value = image.config(TOPIC_RESOURCE, topic).get(UNCLEAN)
    if value is None:
        value = image.config(BROKER_RESOURCE, "").get(UNCLEAN, "false")
    return value.strip().lower() == "true"


def list_partition_reassignments(
    image: MetadataImage, _: ControllerView, request: cpb.ListPartitionReassignmentsRequest
) -> cpb.ListPartitionReassignmentsResponse:
    """The reassignments in flight, of every topic (``all_topics``) or of the
    partitions asked for; unknown topics and partitions not moving are left out."""
    response = cpb.ListPartitionReassignmentsResponse()
    asked: dict[str, set[int]] = {}
    if request.all_topics:
        asked = {t.name: set(t.partitions) for t in image.topics.values()}
    for t in request.topics:
        asked.setdefault(t.name, set()).update(t.partition_indexes)
    for name, indexes in sorted(asked.items()):
        topic = image.topic(name)
        moving = [
            (i, p)
            for i in sorted(indexes)
            if topic is not None
            and (p := topic.partitions.get(i)) is not None
            and (p.adding_replicas or p.removing_replicas)
        ]
        if moving:
            out = response.topics.add(name=name)
            for i, p in moving:
                out.partitions.add(
                    partition_index=i,
                    replicas=p.replicas,
                    adding_replicas=p.adding_replicas,
                    removing_replicas=p.removing_replicas,
                )
    return response
