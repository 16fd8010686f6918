"""CreateTopics, DeleteTopics, CreatePartitions, IncrementalAlterConfigs: Kafka's
validation, replica placement over unfenced brokers, and the records."""

from __future__ import annotations

from migration.common.kafka_errors import ErrorCode
from migration.common.limits import INT32_MAX
from migration.common.text import shown
from migration.controller.config_rules import validate_config
from migration.controller.context import WriteContext
from migration.controller.placement import place
from migration.image.model import MetadataImage
from migration.proto import controller_pb2 as cpb
from migration.proto import metadata_pb2 as mpb
from migration.records.codes import BROKER_RESOURCE, TOPIC_RESOURCE
from migration.records.names import topic_name_problem
from migration.records.uuids import new_uuid, uuid_text

SET, DELETE = 0, 1


def usable_brokers(image: MetadataImage) -> list[int]:
    return sorted(
        b for b, reg in image.brokers.items() if not reg.fenced and not reg.in_controlled_shutdown
    )


def _too_many(needed: int, ctx: WriteContext) -> str:
    return (
        f"this would write {needed} records; one request may write at most "
        f"{ctx.max_records} (room left in this request: {ctx.room})"
    )


def _partition_record(topic_id: bytes, index: int, replicas: list[int]) -> mpb.PartitionRecord:
    return mpb.PartitionRecord(
        partition_id=index,
        topic_id=topic_id,
        replicas=replicas,
        isr=replicas,
        leader=replicas[0],
        leader_epoch=0,
        partition_epoch=0,
    )


def create_topics(ctx: WriteContext, request: cpb.CreateTopicsRequest) -> cpb.CreateTopicsResponse:
    response = cpb.CreateTopicsResponse()
    seen: set[str] = set()
    brokers = usable_brokers(ctx.image)
    racks = {b: ctx.image.brokers[b].rack for b in brokers}
    for topic in request.topics:
        result = response.topics.add(name=topic.name)
        # KIP-464: -1 asks for the controller's num.partitions / default.replication.factor
        partitions = (
            ctx.settings.num_partitions if topic.num_partitions == -1 else topic.num_partitions
        )
        rf = (
            ctx.settings.default_replication_factor
            if topic.replication_factor == -1
            else topic.replication_factor
        )

        def fail(code: ErrorCode, message: str, result: cpb.CreatableTopicResult = result) -> None:
            result.error_code, result.error_message = code, message

        problem = topic_name_problem(topic.name)
        if problem:
            fail(ErrorCode.INVALID_TOPIC_EXCEPTION, problem)
        elif topic.name in seen:
            fail(
                ErrorCode.INVALID_REQUEST,
                f"topic {shown(topic.name)} is listed twice in the request",
            )
        elif ctx.image.topic(topic.name) is not None:
            fail(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {shown(topic.name)} already exists")
        elif partitions <= 0:
            fail(
                ErrorCode.INVALID_PARTITIONS,
                f"number of partitions must be positive, not {partitions}",
            )
        elif rf <= 0:
            fail(
                ErrorCode.INVALID_REPLICATION_FACTOR,
                f"replication factor must be positive, not {rf}",
            )
        elif rf > len(brokers):
            fail(
                ErrorCode.INVALID_REPLICATION_FACTOR,
                f"replication factor {rf} is larger than the {len(brokers)} available broker(s)",
            )
        elif (needed := 1 + partitions + len(topic.configs)) > ctx.room:
            fail(ErrorCode.POLICY_VIOLATION, _too_many(needed, ctx))
        else:
            bad = [
                f"{k}={shown(v)}: {why}"
                for k, v in sorted(topic.configs.items())
                if (why := validate_config(TOPIC_RESOURCE, k, v))
            ]
            if bad:
                fail(ErrorCode.INVALID_CONFIG, "; ".join(bad))
        seen.add(topic.name)
        if result.error_code:
            continue
        result.num_partitions = partitions
        result.replication_factor = rf
        if request.validate_only:
            continue
        topic_id = new_uuid()
        result.topic_id = uuid_text(topic_id)
        ctx.add(topic_record=mpb.TopicRecord(name=topic.name, topic_id=topic_id))
        for index, replicas in enumerate(place(brokers, partitions, rf, racks=racks)):
            ctx.add(partition_record=_partition_record(topic_id, index, replicas))
        for key, value in sorted(topic.configs.items()):
            ctx.add(
                config_record=mpb.ConfigRecord(
                    resource_type=TOPIC_RESOURCE, resource_name=topic.name, name=key, value=value
                )
            )
    return response


def delete_topics(ctx: WriteContext, request: cpb.DeleteTopicsRequest) -> cpb.ItemsResponse:
    response = cpb.ItemsResponse()
    deleted: set[str] = set()
    for name in request.topic_names:
        topic = ctx.image.topic(name)
        if topic is None or name in deleted:
            response.results.add(
                name=name,
                error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                error_message=f"topic {shown(name)} does not exist",
            )
            continue
        deleted.add(name)
        ctx.add(remove_topic_record=mpb.RemoveTopicRecord(topic_id=topic.topic_id))
        response.results.add(name=name)
    return response


def create_partitions(ctx: WriteContext, request: cpb.CreatePartitionsRequest) -> cpb.ItemsResponse:
    response = cpb.ItemsResponse()
    brokers = usable_brokers(ctx.image)
    racks = {b: ctx.image.brokers[b].rack for b in brokers}
    for item in request.topics:
        result = response.results.add(name=item.name)
        topic = ctx.image.topic(item.name)
        if topic is None:
            result.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            result.error_message = f"topic {shown(item.name)} does not exist"
            continue
        current = len(topic.partitions)
        rf = len(topic.partitions[0].replicas) if topic.partitions else 1
        if item.count <= current:
            result.error_code = ErrorCode.INVALID_PARTITIONS
            result.error_message = (
                f"topic {shown(item.name)} has {current} partitions; the new count must be larger, "
                f"not {item.count}"
            )
            continue
        if rf > len(brokers):
            result.error_code = ErrorCode.INVALID_REPLICATION_FACTOR
            result.error_message = (
                f"replication factor {rf} exceeds {len(brokers)} available broker(s)"
            )
            continue
        if item.count - current > ctx.room:
            result.error_code = ErrorCode.POLICY_VIOLATION
            result.error_message = _too_many(item.count - current, ctx)
            continue
        new = place(brokers, item.count - current, rf, first_partition=current, racks=racks)
        for offset, replicas in enumerate(new):
            ctx.add(partition_record=_partition_record(topic.topic_id, current + offset, replicas))
    return response


def alter_configs(
    ctx: WriteContext, request: cpb.IncrementalAlterConfigsRequest
) -> cpb.ItemsResponse:
    response = cpb.ItemsResponse()
    for resource in request.resources:
        kind = "topic" if resource.resource_type == TOPIC_RESOURCE else "broker"
        label = f"{kind} {shown(resource.resource_name)}"
        result = response.results.add(name=resource.resource_name)
        problem = resource_problem(ctx.image, resource.resource_type, resource.resource_name)
        if problem:
            result.error_code, result.error_message = problem
            continue
        bad = []
        for op in resource.configs:
            if op.config_operation not in (SET, DELETE):
                bad.append(f"{op.name}: only SET (0) and DELETE (1) are supported")
            elif why := validate_config(
                resource.resource_type, op.name, op.value if op.config_operation == SET else None
            ):
                bad.append(f"{op.name}={op.value}: {why}" if op.config_operation == SET else why)
        if bad:
            result.error_code = ErrorCode.INVALID_CONFIG
            result.error_message = f"{label}: " + "; ".join(bad)
            continue
        for op in resource.configs:
            record = mpb.ConfigRecord(
                resource_type=resource.resource_type,
                resource_name=resource.resource_name,
                name=op.name,
            )
            if op.config_operation == SET:
                record.value = op.value
            ctx.add(config_record=record)
    return response


def broker_resource_id(name: str) -> int | None:
    """The broker id a BROKER config resource's name gives (decimal, an int32 as Kafka
    parses it); None for the empty name (the cluster-wide default) and a name that is
    not a broker id."""
    if not (name.isascii() and name.isdigit() and len(name) <= 10):
        return None
    value = int(name)
    return value if value <= INT32_MAX else None


def resource_problem(image: MetadataImage, rtype: int, name: str) -> tuple[ErrorCode, str] | None:
    if rtype == TOPIC_RESOURCE:
        if image.topic(name) is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {shown(name)} does not exist"
        return None
    if rtype == BROKER_RESOURCE:
        if name and broker_resource_id(name) is None:
            return (
                ErrorCode.INVALID_REQUEST,
                f"broker resource name {shown(name)} is not a broker id",
            )
        return None
    return (
        ErrorCode.INVALID_REQUEST,
        f"resource type {rtype} has no configs here (TOPIC 2, BROKER 4)",
    )
