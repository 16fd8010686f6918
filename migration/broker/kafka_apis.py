"""Kafka's client APIs on a broker: each turns a kio request into plain response values.

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

from migration.broker import kafka_sasl, kafka_security
from migration.broker.authorizer import (
    ALTER,
    ALTER_CONFIGS,
    CREATE,
    DESCRIBE,
    DESCRIBE_CONFIGS,
    TOPIC,
)
from migration.broker.authorizer import DELETE as DELETE_OPERATION
from migration.broker.kafka_common import (
    ADMIN_TIMEOUT_MS,
    Context,
    Handler,
    outcome,
    timeout_ms,
)
from migration.broker.kafka_common import (
    nth as _nth,
)
from migration.broker.kafka_wire import SUPPORTED, Encoded, Request, encode_body, response
from migration.controller.config_rules import TOPIC_DEFAULTS
from migration.controller.handlers import READERS
from migration.controller.topics import broker_resource_id
from migration.image.model import MetadataImage
from migration.kafka_errors import ErrorCode
from migration.proto import controller_pb2 as cpb
from migration.records import versions
from migration.records.codes import BROKER_RESOURCE, TOPIC_RESOURCE
from migration.records.secrets import REDACTED
from migration.records.uuids import uuid_bytes

UNKNOWN_AUTHORIZED_OPERATIONS = -(2**31)
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})
# DescribeConfigs config_source: where a value comes from.
TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, DEFAULT_CONFIG = 1, 2, 4, 5
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
AUTHORIZATION_FAILED: str | None = "Authorization failed."


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


def _config_refusal(ctx: Context, resource_type: int, name: str, operation: int) -> int:
    """0, or the error refusing ``operation`` on a config resource (a topic's configs are
    the topic's; brokers' are the cluster's)."""
    if resource_type == TOPIC_RESOURCE:
        return 0 if ctx.allowed(operation, TOPIC, name) else ErrorCode.TOPIC_AUTHORIZATION_FAILED
    return 0 if ctx.cluster_allowed(operation) else ErrorCode.CLUSTER_AUTHORIZATION_FAILED


def _items(answer: Any, names: list[str], key: str) -> list[dict[str, Any]]:
    by_name = {r.name: r for r in answer.results}
    out = []
    for name in names:
        code, message = outcome(answer, by_name.get(name))
        out.append({key: name, "error_code": code, "error_message": message})
    return out


# --- configs -----------------------------------------------------------------------------


def describe_configs(request: Request, ctx: Context) -> dict[str, Any]:
    image = ctx.backend.image()
    results = []
    for r in request.body.resources:
        refusal = _config_refusal(ctx, r.resource_type, r.resource_name, DESCRIBE_CONFIGS)
        if refusal:
            results.append(
                {
                    "error_code": refusal,
                    "error_message": AUTHORIZATION_FAILED,
                    "resource_type": r.resource_type,
                    "resource_name": r.resource_name,
                    "configs": [],
                }
            )
            continue
        answer = _another_broker(ctx, r.resource_type, r.resource_name)
        if answer is None:
            answer = READERS["DescribeConfigs"](
                image,
                None,
                cpb.DescribeConfigsRequest(
                    resource_type=r.resource_type, resource_name=r.resource_name
                ),
            )
        keys = set(r.configuration_keys) if r.configuration_keys else None  # none: all
        source = (
            TOPIC_CONFIG
            if r.resource_type == TOPIC_RESOURCE
            else DYNAMIC_BROKER_CONFIG
            if r.resource_name
            else DYNAMIC_DEFAULT_BROKER_CONFIG
        )
        entries = {k: (v, source) for k, v in answer.configs.items()}
        if r.resource_type == TOPIC_RESOURCE:  # as Kafka: every topic config, defaults too
            for k, v in TOPIC_DEFAULTS.items():
                entries.setdefault(k, (v, DEFAULT_CONFIG))
        configs = [
            {
                "name": k,
                "value": None if v == REDACTED else v,
                "read_only": False,
                "config_source": src,
                "is_sensitive": v == REDACTED,
                "is_default": src == DEFAULT_CONFIG,
                "config_type": 0,
            }
            for k, (v, src) in sorted(entries.items())
            if keys is None or k in keys
        ]
        results.append(
            {
                "error_code": answer.error_code,
                "error_message": answer.error_message or None,
                "resource_type": r.resource_type,
                "resource_name": r.resource_name,
                "configs": configs if not answer.error_code else [],
            }
        )
    return {"results": results}


def _another_broker(
    ctx: Context, resource_type: int, name: str
) -> cpb.DescribeConfigsResponse | None:
    """INVALID_REQUEST for a BROKER resource naming another broker's id, as Kafka's
    brokers answer it (ConfigHelper): a broker describes its own configs (its id) and
    the cluster-wide defaults (the empty name) only; Kafka's admin clients send a
    broker's resource to that broker. None otherwise (a name that is not a broker id
    is the controller's rule to answer)."""
    named = broker_resource_id(name) if resource_type == BROKER_RESOURCE else None
    mine = ctx.backend.broker_id
    if named is None or named == mine:
        return None
    return cpb.DescribeConfigsResponse(
        error_code=ErrorCode.INVALID_REQUEST,
        error_message=f"Unexpected broker id, expected {mine} or empty string, but "
        f"received {name}",  # at most 10 digits
    )


def _alter(
    ctx: Context,
    resources: list[tuple[int, str, list[tuple[str, int, str | None]]]],
    validate_only: bool,
) -> list[dict[str, Any]]:
    """IncrementalAlterConfigs semantics for both alter APIs; APPEND and SUBTRACT (list
    configs) become SET against the broker's current view."""
    image = ctx.backend.image()
    req = cpb.IncrementalAlterConfigsRequest()
    refusals = [_config_refusal(ctx, rtype, name, ALTER_CONFIGS) for rtype, name, _ in resources]
    allowed = [r for r, refusal in zip(resources, refusals, strict=True) if not refusal]
    for rtype, name, ops in allowed:
        resource = req.resources.add(resource_type=rtype, resource_name=name)
        current = image.config(rtype, name)
        for key, requested, given in ops:
            op, value = requested, given
            if op in (APPEND, SUBTRACT):
                have = [v for v in current.get(key, "").split(",") if v]
                items = [v.strip() for v in (value or "").split(",") if v.strip()]
                merged = (
                    have + [v for v in items if v not in have]
                    if op == APPEND
                    else [v for v in have if v not in items]
                )
                op, value = SET, ",".join(merged)
            resource.configs.add(name=key, config_operation=op, value=value or "")
    answer = ctx.backend.write("IncrementalAlterConfigs", req, validate_only, ADMIN_TIMEOUT_MS)
    out = []
    i = 0
    for (rtype, name, _), refusal in zip(resources, refusals, strict=True):
        code, message = refusal, AUTHORIZATION_FAILED
        if not refusal:
            code, message = outcome(answer, _nth(answer.results, i))
            i += 1
        out.append(
            {
                "error_code": code,
                "error_message": message,
                "resource_type": rtype,
                "resource_name": name,
            }
        )
    return out


def incremental_alter_configs(request: Request, ctx: Context) -> dict[str, Any]:
    body = request.body
    resources = [
        (
            r.resource_type,
            r.resource_name,
            [(c.name, c.config_operation, c.value) for c in r.configs],
        )
        for r in body.resources
    ]
    return {"responses": _alter(ctx, resources, body.validate_only)}


def alter_configs(request: Request, ctx: Context) -> dict[str, Any]:
    """The legacy API replaces a resource's whole set: what it does not name is deleted."""
    body = request.body
    image = ctx.backend.image()
    resources = []
    for r in body.resources:
        given = {c.name: c.value for c in r.configs}
        ops = [(k, SET if v is not None else DELETE, v) for k, v in given.items()]
        ops += [(k, DELETE, None) for k in image.config(r.resource_type, r.resource_name)]
        ops = [op for op in ops if not (op[1] == DELETE and given.get(op[0]) is not None)]
        resources.append((r.resource_type, r.resource_name, ops))
    return {"responses": _alter(ctx, resources, body.validate_only)}


HANDLERS: dict[int, Handler] = {
    18: api_versions,
    3: metadata,
    60: describe_cluster,
    19: create_topics,
    20: delete_topics,
    37: create_partitions,
    32: describe_configs,
    44: incremental_alter_configs,
    33: alter_configs,
    **kafka_security.HANDLERS,
    **kafka_sasl.HANDLERS,
}

assert set(HANDLERS) == set(SUPPORTED), "every served API has a handler"
