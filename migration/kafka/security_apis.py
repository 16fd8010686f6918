"""Kafka's ACL, client-quota and SCRAM APIs on a broker (see :mod:`apis`): reads
from the broker's view with the controller's matching rules, writes through the
broker's backend as the controller's own requests."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from migration.common.kafka_errors import ErrorCode
from migration.controller.security import matches
from migration.image.model import MetadataImage
from migration.kafka.api_context import ADMIN_TIMEOUT_MS, Context, Handler, nth, outcome
from migration.kafka.authorizer import ALTER, ALTER_CONFIGS, DESCRIBE, DESCRIBE_CONFIGS
from migration.kafka.security_wire import (
    MATCH_DEFAULT,
    MATCH_EXACT,
    creation_from_wire,
    entity_from_wire,
    entity_to_wire,
    filter_from_wire,
)
from migration.proto import controller_pb2 as cpb
from migration.records.acls import PATTERN_FIELDS, acl_values, entry_values, pattern_values
from migration.records.quotas import add_entity, op_values
from migration.records.scram import deletion_values, upsertion_values

if TYPE_CHECKING:
    from migration.kafka.wire import Request

REFUSED = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
REFUSED_MESSAGE = "Cluster authorization failed."


def _refused() -> dict[str, Any]:
    return {"error_code": REFUSED, "error_message": REFUSED_MESSAGE}


def describe_acls(request: Request, ctx: Context) -> dict[str, Any]:
    if not ctx.cluster_allowed(DESCRIBE):
        return {"error_code": REFUSED, "error_message": REFUSED_MESSAGE, "resources": []}
    f = filter_from_wire(request.body)
    found = [a for a in ctx.backend.image().acls.values() if matches(f, a)]
    resources: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for a in sorted(found, key=lambda a: (a.resource_type, a.resource_name, a.principal)):
        pattern = tuple(pattern_values(a).values())
        resources.setdefault(pattern, []).append(entry_values(a))
    return {
        "error_code": 0,
        "resources": [
            {**dict(zip(PATTERN_FIELDS, pattern, strict=True)), "acls": acls}
            for pattern, acls in resources.items()
        ],
    }


def create_acls(request: Request, ctx: Context) -> dict[str, Any]:
    if not ctx.cluster_allowed(ALTER):
        return {"results": [_refused() for _ in request.body.creations]}
    req = cpb.CreateAclsRequest()
    for c in request.body.creations:
        req.creations.add(**creation_from_wire(c))
    answer = ctx.backend.write("CreateAcls", req, False, ADMIN_TIMEOUT_MS)
    results = []
    for i in range(len(request.body.creations)):
        code, message = outcome(answer, nth(answer.results, i))
        results.append({"error_code": code, "error_message": message})
    return {"results": results}


def delete_acls(request: Request, ctx: Context) -> dict[str, Any]:
    if not ctx.cluster_allowed(ALTER):
        refused = [{**_refused(), "matching_acls": []} for _ in request.body.filters]
        return {"filter_results": refused}
    filters = [filter_from_wire(f) for f in request.body.filters]
    answer = ctx.backend.write(
        "DeleteAcls", cpb.DeleteAclsRequest(filters=filters), False, ADMIN_TIMEOUT_MS
    )
    results = []
    for i, f in enumerate(filters):
        code, message = outcome(answer, nth(answer.results, i))
        # What the controller deleted, not what this broker's view held: a view that has
        # not caught up with an ACL made through another broker would answer "nothing
        # deleted" for an ACL that is gone (the chaos runs found it).
        matching = [{"error_code": 0, **acl_values(a)} for a in answer.acls if matches(f, a)]
        results.append(
            {"error_code": code, "error_message": message, "matching_acls": matching * (not code)}
        )
    return {"filter_results": results}


# --- client quotas --------------------------------------------------------------------------


def _quota_matches(components: list[Any], strict: bool, key: tuple[Any, ...]) -> bool:
    entity = dict(key)
    for c in components:
        if c.entity_type not in entity:
            return False
        have = entity[c.entity_type]
        if c.match_type == MATCH_EXACT and have != c.match:
            return False
        if c.match_type == MATCH_DEFAULT and have is not None:
            return False
    return not strict or len(entity) == len(components)


def describe_client_quotas(request: Request, ctx: Context) -> dict[str, Any]:
    if not ctx.cluster_allowed(DESCRIBE_CONFIGS):
        return {"error_code": REFUSED, "error_message": REFUSED_MESSAGE, "entries": None}
    image: MetadataImage = ctx.backend.image()
    components = list(request.body.components)
    entries = [
        {
            "entity": entity_to_wire(key),
            "values": [{"key": k, "value": float(v)} for k, v in sorted(values.items())],
        }
        for key, values in sorted(image.quotas.items(), key=lambda kv: str(kv[0]))
        if values and _quota_matches(components, request.body.strict, key)
    ]
    return {"error_code": 0, "entries": entries}


def alter_client_quotas(request: Request, ctx: Context) -> dict[str, Any]:
    if not ctx.cluster_allowed(ALTER_CONFIGS):
        return {
            "entries": [
                {
                    **_refused(),
                    "entity": entity_to_wire(entity_from_wire(e.entity)),
                }
                for e in request.body.entries
            ]
        }
    req = cpb.AlterClientQuotasRequest()
    for e in request.body.entries:
        entry = req.entries.add()
        add_entity(entry.entity, entity_from_wire(e.entity))
        for op in e.ops:
            entry.ops.add(**op_values(op))
    answer = ctx.backend.write(
        "AlterClientQuotas", req, request.body.validate_only, ADMIN_TIMEOUT_MS
    )
    out = []
    for i, e in enumerate(request.body.entries):
        code, message = outcome(answer, nth(answer.results, i))
        out.append(
            {
                "error_code": code,
                "error_message": message,
                "entity": entity_to_wire(entity_from_wire(e.entity)),
            }
        )
    return {"entries": out}


# --- SCRAM ------------------------------------------------------------------------------------


def describe_user_scram_credentials(request: Request, ctx: Context) -> dict[str, Any]:
    """Mechanisms and iterations only: the salt and keys never leave the broker."""
    if not ctx.cluster_allowed(DESCRIBE):
        return {"error_code": REFUSED, "error_message": REFUSED_MESSAGE, "results": []}
    by_user: dict[str, list[dict[str, int]]] = {}
    for (user, mechanism), cred in sorted(ctx.backend.image().scram.items()):
        by_user.setdefault(user, []).append({"mechanism": mechanism, "iterations": cred.iterations})
    wanted = request.body.users
    users = sorted(by_user) if not wanted else [u.name for u in wanted]
    results = []
    for user in users:
        infos = by_user.get(user)
        results.append(
            {
                "user": user,
                "error_code": 0 if infos else ErrorCode.RESOURCE_NOT_FOUND,
                "error_message": None
                if infos
                else f"attempt to describe a user credential that does not exist: {user}",
                "credential_infos": infos or [],
            }
        )
    return {"error_code": 0, "results": results}


def alter_user_scram_credentials(request: Request, ctx: Context) -> dict[str, Any]:
    body = request.body
    if not ctx.cluster_allowed(ALTER):
        names = dict.fromkeys([d.name for d in body.deletions] + [u.name for u in body.upsertions])
        return {"results": [{"user": user, **_refused()} for user in names]}
    req = cpb.AlterUserScramCredentialsRequest()
    for d in body.deletions:
        req.deletions.add(**deletion_values(d))
    for u in body.upsertions:
        req.upsertions.add(**upsertion_values(u))
    answer = ctx.backend.write("AlterUserScramCredentials", req, False, ADMIN_TIMEOUT_MS)
    users = list(
        dict.fromkeys([d.name for d in body.deletions] + [u.name for u in body.upsertions])
    )
    by_name = {r.name: r for r in answer.results}
    results = []
    for user in users:
        code, message = outcome(answer, by_name.get(user))
        results.append({"user": user, "error_code": code, "error_message": message})
    return {"results": results}


HANDLERS: dict[int, Handler] = {
    29: describe_acls,
    30: create_acls,
    31: delete_acls,
    48: describe_client_quotas,
    49: alter_client_quotas,
    50: describe_user_scram_credentials,
    51: alter_user_scram_credentials,
}
