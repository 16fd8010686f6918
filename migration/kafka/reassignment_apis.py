"""Kafka's partition reassignment APIs on a broker (KIP-455; see :mod:`apis`):
AlterPartitionReassignments (v0-1) and ListPartitionReassignments (v0), both answered by
the controller through the broker's backend, as Kafka's brokers forward both. Kafka's
authorization: ALTER on the cluster to start or cancel, DESCRIBE to list; a refusal (or
a request-level error) is the answer's error and each partition's."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from migration.kafka.api_context import Context, Handler, timeout_ms
from migration.kafka.authorizer import ALTER, DESCRIBE
from migration.kafka.security_apis import REFUSED, REFUSED_MESSAGE
from migration.proto import controller_pb2 as cpb

if TYPE_CHECKING:
    from migration.kafka.wire import Request


def alter_partition_reassignments(request: Request, ctx: Context) -> dict[str, Any]:
    body = request.body
    allow = getattr(body, "allow_replication_factor_change", True)
    out: dict[str, Any] = {"allow_replication_factor_change": allow}
    if not ctx.cluster_allowed(ALTER):
        return {**out, **_failed(body, REFUSED, REFUSED_MESSAGE)}
    req = cpb.AlterPartitionReassignmentsRequest(allow_replication_factor_change=allow)
    for t in body.topics:
        topic = req.topics.add(name=t.name)
        for p in t.partitions:
            topic.partitions.add(
                partition_index=p.partition_index,
                cancel=p.replicas is None,
                replicas=p.replicas or (),
            )
    answer = ctx.backend.write("AlterPartitionReassignments", req, False, timeout_ms(body.timeout))
    if answer.HasField("error") and answer.error.error_code:
        return {**out, **_failed(body, answer.error.error_code, answer.error.error_message)}
    return {
        **out,
        "error_code": 0,
        "error_message": None,
        "responses": [
            {
                "name": t.name,
                "partitions": [
                    {
                        "partition_index": p.partition_index,
                        "error_code": p.error_code,
                        "error_message": p.error_message or None,
                    }
                    for p in t.partitions
                ],
            }
            for t in answer.responses
        ],
    }


def _failed(body: Any, code: int, message: str | None) -> dict[str, Any]:
    return {
        "error_code": code,
        "error_message": message or None,
        "responses": [
            {
                "name": t.name,
                "partitions": [
                    {
                        "partition_index": p.partition_index,
                        "error_code": code,
                        "error_message": message or None,
                    }
                    for p in t.partitions
                ],
            }
            for t in body.topics
        ],
    }


def list_partition_reassignments(request: Request, ctx: Context) -> dict[str, Any]:
    body = request.body
    if not ctx.cluster_allowed(DESCRIBE):
        return {"error_code": REFUSED, "error_message": REFUSED_MESSAGE, "topics": []}
    req = cpb.ListPartitionReassignmentsRequest(all_topics=body.topics is None)
    for t in body.topics or ():
        req.topics.add(name=t.name, partition_indexes=t.partition_indexes)
    answer = ctx.backend.write("ListPartitionReassignments", req, False, timeout_ms(body.timeout))
    if answer.HasField("error") and answer.error.error_code:
        return {
            "error_code": answer.error.error_code,
            "error_message": answer.error.error_message or None,
            "topics": [],
        }
    return {
        "error_code": 0,
        "error_message": None,
        "topics": [
            {
                "name": t.name,
                "partitions": [
                    {
                        "partition_index": p.partition_index,
                        "replicas": list(p.replicas),
                        "adding_replicas": list(p.adding_replicas),
                        "removing_replicas": list(p.removing_replicas),
                    }
                    for p in t.partitions
                ],
            }
            for t in answer.topics
        ],
    }


HANDLERS: dict[int, Handler] = {
    45: alter_partition_reassignments,
    46: list_partition_reassignments,
}
