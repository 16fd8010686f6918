"""Kafka's config APIs on a broker (see :mod:`apis`): DescribeConfigs answered from the
broker's view with each value's source, IncrementalAlterConfigs and the legacy
AlterConfigs (which replaces a resource's whole set) carried out by the broker's
:class:`Backend` with the controller's validation. Topic configs are the topic's to
authorize; broker configs the cluster's."""

from __future__ import annotations

from typing import Any

from migration.common.kafka_errors import ErrorCode
from migration.controller.config_rules import TOPIC_DEFAULTS
from migration.controller.handlers import configs_of
from migration.controller.topics import broker_resource_id
from migration.kafka.api_context import (
    ADMIN_TIMEOUT_MS,
    AUTHORIZATION_FAILED,
    Context,
    Handler,
    outcome,
)
from migration.kafka.api_context import nth as _nth
from migration.kafka.authorizer import (
    ALTER_CONFIGS,
    DESCRIBE_CONFIGS,
    TOPIC,
)
from migration.kafka.wire import Request
from migration.proto import controller_pb2 as cpb
from migration.records.codes import (
    BROKER_RESOURCE,
    DEFAULT_CONFIG,
    DYNAMIC_BROKER_CONFIG,
    DYNAMIC_DEFAULT_BROKER_CONFIG,
    TOPIC_CONFIG,
    TOPIC_RESOURCE,
)
from migration.records.secrets import REDACTED

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def _config_refusal(ctx: Context, resource_type: int, name: str, operation: int) -> int:
    """0, or the error refusing ``operation`` on a config resource (a topic's configs are
    the topic's; brokers' are the cluster's)."""
    if resource_type == TOPIC_RESOURCE:
        return 0 if ctx.allowed(operation, TOPIC, name) else ErrorCode.TOPIC_AUTHORIZATION_FAILED
    return 0 if ctx.cluster_allowed(operation) else ErrorCode.CLUSTER_AUTHORIZATION_FAILED


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
            answer = configs_of(
                image,
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
    32: describe_configs,
    44: incremental_alter_configs,
    33: alter_configs,
}
