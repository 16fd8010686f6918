"""Kafka's client APIs on a broker: each turns a kio request into plain response values.
Cluster metadata and topics here; configs, security and SASL in their own modules
(:mod:`config_apis`, :mod:`security_apis`, :mod:`sasl_apis`).

Reads are answered from the broker's metadata view (a :class:`MetadataImage`); admin
writes become the controller's own requests (``controller.proto``) and go to the
broker's :class:`Backend`, which carries them out with the controller's validation,
placement and error codes (one implementation): through ZooKeeper for a ZooKeeper-mode
broker. Threading: handlers are blocking and run off the network loop; one connection's
requests are handled one at a time, in order (as Kafka does).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from migration.common.kafka_errors import ErrorCode
from migration.image.model import MetadataImage
from migration.kafka import config_apis, reassignment_apis, sasl_apis, security_apis
from migration.kafka.api_context import (
    AUTHORIZATION_FAILED,
    Context,
    Handler,
    outcome,
    timeout_ms,
)
from migration.kafka.authorizer import (
    ALTER,
    CREATE,
    DESCRIBE,
    TOPIC,
)
from migration.kafka.authorizer import DELETE as DELETE_OPERATION
from migration.kafka.metadata_answer import (
    UNKNOWN_AUTHORIZED_OPERATIONS,
    EveryTopic,
    live_brokers,
    topic_metadata,
)
from migration.kafka.wire import SUPPORTED, Encoded, Request
from migration.proto import controller_pb2 as cpb
from migration.records import versions
from migration.records.uuids import uuid_bytes

_EVERY_TOPIC = EveryTopic()


# --- cluster metadata ------------------------------------------------------------------


def api_versions(request: Request, ctx: Context) -> dict[str, Any]:
    return {
        "error_code": 0,
        "api_keys": [
            {"api_key": k, "min_version": lo, "max_version": hi}
            for k, (_, lo, hi) in sorted(SUPPORTED.items())
        ],
        "supported_features": [
            {
                "name": versions.METADATA_VERSION,
                "min_version": versions.MIN_SUPPORTED_LEVEL,
                "max_version": ctx.backend.metadata_version_max,
            }
        ],
        "finalized_features_epoch": -1,
    }


def _brokers(image: MetadataImage, listener: str) -> list[dict[str, Any]]:
    out = []
    for broker in sorted(image.brokers.values(), key=lambda b: b.broker_id):
        endpoint = next((e for e in broker.endpoints if e.name == listener), None)
        if endpoint is not None and not broker.fenced:
            out.append(
                {
                    "node_id": broker.broker_id,
                    "broker_id": broker.broker_id,
                    "host": endpoint.host,
                    "port": endpoint.port,
                    "rack": broker.rack,
                    "is_fenced": broker.fenced,
                }
            )
    return out


def metadata(request: Request, ctx: Context) -> dict[str, Any] | Encoded:
    image = ctx.backend.image()
    wanted = request.body.topics
    if wanted is None or (request.api_version == 0 and not wanted):
        names = sorted(image.topic_ids)
        if ctx.authorizer is not None:  # only what the principal may describe is listed
            names = [n for n in names if ctx.allowed(DESCRIBE, TOPIC, n)]
        # Without an authorizer every client sees every topic: the image alone decides.
        visible = names if ctx.authorizer is not None else ("*",)
        backend = ctx.backend
        key = (
            ctx.listener,
            request.api_version,
            backend.controller_id(),
            backend.cluster_id,
            *visible,
        )
        shell = _metadata(ctx, image, ())
        return _EVERY_TOPIC.answer(key, image, request.api_version, shell, names)
    asked = []
    for t in wanted:
        name = t.name
        if name is None and getattr(t, "topic_id", None) is not None:
            name = _name_of(image, t.topic_id.bytes)
        asked.append(name or "")
    return _metadata(ctx, image, asked)


def _metadata(ctx: Context, image: MetadataImage, names: Iterable[str]) -> dict[str, Any]:
    """The answer for ``names``; a topic the principal may not describe is refused
    (TOPIC_AUTHORIZATION_FAILED)."""
    live = live_brokers(image)
    return {
        "brokers": _brokers(image, ctx.listener),
        "cluster_id": ctx.backend.cluster_id,
        "controller_id": ctx.backend.controller_id(),
        "topics": [
            topic_metadata(image, n, live)
            if ctx.allowed(DESCRIBE, TOPIC, n)
            else {"name": n, "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED}
            for n in names
        ],
        "cluster_authorized_operations": UNKNOWN_AUTHORIZED_OPERATIONS,
    }


def describe_cluster(request: Request, ctx: Context) -> dict[str, Any]:
    if not ctx.cluster_allowed(DESCRIBE):
        return {
            "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            "error_message": "Cluster authorization failed.",
            "cluster_id": "",
            "controller_id": -1,
            "brokers": [],
        }
    return {
        "error_code": 0,
        "endpoint_type": 1,  # brokers
        "cluster_id": ctx.backend.cluster_id,
        "controller_id": ctx.backend.controller_id(),
        "brokers": _brokers(ctx.backend.image(), ctx.listener),
        "cluster_authorized_operations": UNKNOWN_AUTHORIZED_OPERATIONS,
    }


# --- topics ------------------------------------------------------------------------------

MANUAL_ASSIGNMENT_REFUSED = (
    "manual replica assignments are not supported; the controller places the replicas"
)


def create_topics(request: Request, ctx: Context) -> dict[str, Any]:
    body = request.body
    req = cpb.CreateTopicsRequest()
    refused: dict[str, dict[str, Any]] = {}
    any_topic = ctx.cluster_allowed(CREATE)
    for t in body.topics:
        if not (any_topic or ctx.allowed(CREATE, TOPIC, t.name)):
            refused[t.name] = _topic_refused("name", t.name)
            continue
        if t.assignments:
            refused[t.name] = _assignment_refused(t.name)
            continue
        req.topics.add(
            name=t.name,
            num_partitions=t.num_partitions,
            replication_factor=t.replication_factor,
            configs={c.name: c.value for c in t.configs if c.value is not None},
        )
    answer = ctx.backend.write("CreateTopics", req, body.validate_only, timeout_ms(body.timeout))
    results = []
    by_name = {r.name: r for r in answer.topics}
    for t in body.topics:
        if t.name in refused:
            results.append(refused[t.name])
            continue
        r = by_name.get(t.name)
        code, message = outcome(answer, r)
        item: dict[str, Any] = {"name": t.name, "error_code": code, "error_message": message}
        if r is not None and not code:
            item.update(
                topic_id=_uuid_bytes(r.topic_id),
                num_partitions=r.num_partitions,
                replication_factor=r.replication_factor,
            )
        else:
            item.update(num_partitions=-1, replication_factor=-1)
        results.append(item)
    return {"topics": [{"num_partitions": -1, "replication_factor": -1, **r} for r in results]}


def _name_of(image: MetadataImage, topic_id: bytes) -> str | None:
    """The name of the topic ``topic_id`` names, if the image has it (a lookup, not a
    map of every topic id built for each request)."""
    topic = image.topics.get(topic_id)
    return topic.name if topic is not None else None


def _uuid_bytes(text: str) -> bytes:
    return uuid_bytes(text) if text else bytes(16)


def delete_topics(request: Request, ctx: Context) -> dict[str, Any]:
    body = request.body
    image = ctx.backend.image()
    names: list[tuple[str | None, bytes | None]] = []
    responses: list[dict[str, Any]] = []
    if getattr(body, "topics", None):
        for t in body.topics:
            tid = t.topic_id.bytes if t.topic_id is not None and t.topic_id.int else None
            names.append((t.name if t.name is not None else _name_of(image, tid or b""), tid))
    else:
        names = [(n, None) for n in getattr(body, "topic_names", ())]
    refused = {n for n, _ in names if n and not ctx.allowed(DELETE_OPERATION, TOPIC, n)}
    req = cpb.DeleteTopicsRequest(topic_names=[n for n, _ in names if n and n not in refused])
    answer = ctx.backend.write("DeleteTopics", req, False, timeout_ms(body.timeout))
    by_name = {r.name: r for r in answer.results}
    for name, tid in names:
        if name is None:
            responses.append(
                {"name": None, "topic_id": tid, "error_code": ErrorCode.UNKNOWN_TOPIC_ID}
            )
            continue
        if name in refused:
            responses.append({**_topic_refused("name", name), "topic_id": tid or bytes(16)})
            continue
        code, message = outcome(answer, by_name.get(name))
        topic = image.topic(name)
        responses.append(
            {
                "name": name,
                "topic_id": topic.topic_id if topic else bytes(16),
                "error_code": code,
                "error_message": message,
            }
        )
    return {"responses": responses}


def create_partitions(request: Request, ctx: Context) -> dict[str, Any]:
    body = request.body
    req = cpb.CreatePartitionsRequest()
    refused = {t.name for t in body.topics if not ctx.allowed(ALTER, TOPIC, t.name)}
    # the controller places every partition: a manual assignment is refused, as
    # CreateTopics refuses one, never silently replaced by the controller's placement
    assigned = {t.name for t in body.topics if t.assignments and t.name not in refused}
    for t in body.topics:
        if t.name not in refused and t.name not in assigned:
            req.topics.add(name=t.name, count=t.count)
    answer = ctx.backend.write(
        "CreatePartitions", req, body.validate_only, timeout_ms(body.timeout)
    )
    results = _items(answer, [t.name for t in body.topics], "name")
    return {
        "results": [
            _topic_refused("name", r["name"]) if r["name"] in refused
            else _assignment_refused(r["name"]) if r["name"] in assigned
            else r
            for r in results
        ]
    }  # fmt: skip


def _assignment_refused(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "error_code": ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        "error_message": MANUAL_ASSIGNMENT_REFUSED,
    }


def _topic_refused(key: str, name: str) -> dict[str, Any]:
    return {
        key: name,
        "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        "error_message": AUTHORIZATION_FAILED,
    }


def _items(answer: Any, names: list[str], key: str) -> list[dict[str, Any]]:
    by_name = {r.name: r for r in answer.results}
    out = []
    for name in names:
        code, message = outcome(answer, by_name.get(name))
        out.append({key: name, "error_code": code, "error_message": message})
    return out


HANDLERS: dict[int, Handler] = {
    18: api_versions,
    3: metadata,
    60: describe_cluster,
    19: create_topics,
    20: delete_topics,
    37: create_partitions,
    **config_apis.HANDLERS,
    **security_apis.HANDLERS,
    **reassignment_apis.HANDLERS,
    **sasl_apis.HANDLERS,
}

assert set(HANDLERS) == set(SUPPORTED), "every served API has a handler"
