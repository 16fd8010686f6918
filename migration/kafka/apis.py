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
from migration.kafka import config_apis, sasl_apis, security_apis
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
from migration.kafka.wire import SUPPORTED, Encoded, Request, encode_body, response
from migration.proto import controller_pb2 as cpb
from migration.records import versions
from migration.records.uuids import uuid_bytes

UNKNOWN_AUTHORIZED_OPERATIONS = -(2**31)
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


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


def _topic_metadata(image: MetadataImage, name: str) -> dict[str, Any]:
    topic = image.topic(name)
    if topic is None:
        return {"name": name, "error_code": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    live = {b for b, reg in image.brokers.items() if not reg.fenced}
    partitions = []
    for pid in sorted(topic.partitions):
        p = topic.partitions[pid]
        partitions.append(
            {
                "error_code": 0 if p.leader in live else ErrorCode.LEADER_NOT_AVAILABLE,
                "partition_index": pid,
                "leader_id": p.leader if p.leader in live else -1,
                "leader_epoch": p.leader_epoch,
                "replica_nodes": p.replicas,
                "isr_nodes": p.isr,
                "offline_replicas": [r for r in p.replicas if r not in live],
            }
        )
    return {
        "error_code": 0,
        "name": name,
        "topic_id": topic.topic_id,
        "is_internal": name in INTERNAL_TOPICS,
        "partitions": partitions,
        "topic_authorized_operations": UNKNOWN_AUTHORIZED_OPERATIONS,
    }


class _EveryTopic:
    """Recent all-topics Metadata answers, encoded: clients ask for it again and again
    (librdkafka every few minutes, tools on every start) and it only changes with the
    image, or with who may see which topics. A few entries (one per set of visible
    topics) for the current image; the table is replaced whole, so threads share it
    without a lock."""

    ENTRIES = 8
    table: tuple[MetadataImage | None, dict[tuple[Any, ...], Encoded]] = (None, {})

    @classmethod
    def answer(cls, ctx: Context, image: MetadataImage, version: int, names: list[str]) -> Encoded:
        # Without an authorizer every client sees every topic: the image alone decides.
        visible = names if ctx.authorizer is not None else ("*",)
        key = (ctx.listener, version, ctx.backend.controller_id(), ctx.backend.cluster_id, *visible)
        cached_image, answers = cls.table
        if cached_image is not image:
            answers = {}
        found = answers.get(key)
        if found is None:
            found = encode_body(response(3, version, _metadata(ctx, image, names, checked=True)))
            kept = list(answers.items())[-(cls.ENTRIES - 1) :]
            cls.table = (image, dict([*kept, (key, found)]))
        return found


def metadata(request: Request, ctx: Context) -> dict[str, Any] | Encoded:
    image = ctx.backend.image()
    wanted = request.body.topics
    if wanted is None or (request.api_version == 0 and not wanted):
        names = sorted(image.topic_ids)
        if ctx.authorizer is not None:  # only what the principal may describe is listed
            names = [n for n in names if ctx.allowed(DESCRIBE, TOPIC, n)]
        return _EveryTopic.answer(ctx, image, request.api_version, names)
    asked = []
    by_id = {tid: t.name for tid, t in image.topics.items()}
    for t in wanted:
        name = t.name
        if name is None and getattr(t, "topic_id", None) is not None:
            name = by_id.get(t.topic_id.bytes, "")
        asked.append(name or "")
    return _metadata(ctx, image, asked)


def _metadata(
    ctx: Context, image: MetadataImage, names: Iterable[str], *, checked: bool = False
) -> dict[str, Any]:
    """The answer for ``names``; a topic the principal may not describe is refused
    (TOPIC_AUTHORIZATION_FAILED) unless the caller ``checked`` them all already."""
    return {
        "brokers": _brokers(image, ctx.listener),
        "cluster_id": ctx.backend.cluster_id,
        "controller_id": ctx.backend.controller_id(),
        "topics": [
            _topic_metadata(image, n)
            if checked or ctx.allowed(DESCRIBE, TOPIC, n)
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
            refused[t.name] = {
                "name": t.name,
                "error_code": ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                "error_message": "manual replica assignments are not supported; give "
                "num_partitions and replication_factor",
            }
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


def _uuid_bytes(text: str) -> bytes:
    return uuid_bytes(text) if text else bytes(16)


def delete_topics(request: Request, ctx: Context) -> dict[str, Any]:
    body = request.body
    image = ctx.backend.image()
    by_id = {tid: t.name for tid, t in image.topics.items()}
    names: list[tuple[str | None, bytes | None]] = []
    responses: list[dict[str, Any]] = []
    if getattr(body, "topics", None):
        for t in body.topics:
            tid = t.topic_id.bytes if t.topic_id is not None and t.topic_id.int else None
            names.append((t.name if t.name is not None else by_id.get(tid or b""), tid))
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
    for t in body.topics:
        if t.name not in refused:
            req.topics.add(name=t.name, count=t.count)
    answer = ctx.backend.write(
        "CreatePartitions", req, body.validate_only, timeout_ms(body.timeout)
    )
    results = _items(answer, [t.name for t in body.topics], "name")
    return {
        "results": [
            _topic_refused("name", r["name"]) if r["name"] in refused else r for r in results
        ]
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
    **sasl_apis.HANDLERS,
}

assert set(HANDLERS) == set(SUPPORTED), "every served API has a handler"
