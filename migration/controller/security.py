"""CreateAcls, DeleteAcls, AlterClientQuotas, AlterUserScramCredentials (and the reads
that go with them). SCRAM material is derived here from the salted password the client
sends (RFC 5802); neither it nor the keys are ever logged or echoed."""

from __future__ import annotations

import hashlib
import hmac
import math

from migration.common.kafka_errors import ErrorCode
from migration.common.limits import INT32_MAX, INT64_MAX
from migration.common.text import shown
from migration.controller.context import ControllerView, WriteContext
from migration.image.model import AclImage, MetadataImage
from migration.proto import controller_pb2 as cpb
from migration.proto import metadata_pb2 as mpb
from migration.records.acls import acl_values
from migration.records.codes import (
    ALLOW,
    ANY,
    DENY,
    OPERATION_NAMES,
    PATTERN_LITERAL,
    PATTERN_MATCH,
    PATTERN_PREFIXED,
    QUOTA_KEYS_BY_ENTITY,
    QUOTA_TYPES,
    RESOURCE_TYPE_NAMES,
    SCRAM_MECHANISMS,
)
from migration.records.quotas import Entity, entity_of, quota_record
from migration.records.uuids import new_uuid

MATCH, LITERAL, PREFIXED = PATTERN_MATCH, PATTERN_LITERAL, PATTERN_PREFIXED
SCRAM_HASHES = {
    SCRAM_MECHANISMS["SCRAM-SHA-256"]: hashlib.sha256,
    SCRAM_MECHANISMS["SCRAM-SHA-512"]: hashlib.sha512,
}
MIN_ITERATIONS, MAX_ITERATIONS = 4096, 16384


def quota_value_problem(key: str, value: float) -> str | None:
    """Why ``value`` is not a valid value for quota ``key`` (None: it is)."""
    if not math.isfinite(value):
        return f"{key} must be a finite number, not {value}"
    if value <= 0:
        return f"{key} must be positive, not {value}"
    kind = QUOTA_TYPES.get(key, "double")
    limit = {"long": INT64_MAX, "int": INT32_MAX}.get(kind)
    if limit is not None and (value != int(value) or value > limit):
        return f"{key} takes whole numbers up to {limit} ({kind}), not {value}"
    return None


# --- ACLs ----------------------------------------------------------------------------------


def acl_problem(b: cpb.AclBinding) -> str | None:
    if b.resource_type not in RESOURCE_TYPE_NAMES:
        return f"resource type {b.resource_type} is not one of TOPIC 2 .. USER 7"
    if not b.resource_name:
        return "resource name is empty"
    if b.pattern_type not in (LITERAL, PREFIXED):
        return f"pattern type {b.pattern_type} is not LITERAL 3 or PREFIXED 4"
    if b.operation not in OPERATION_NAMES:
        return f"operation {b.operation} is not one of ALL 2 .. DESCRIBE_TOKENS 14"
    if b.permission_type not in (DENY, ALLOW):
        return f"permission type {b.permission_type} is not DENY 2 or ALLOW 3"
    kind, colon, name = b.principal.partition(":")
    if not (kind and colon and name):
        return f"principal {shown(b.principal)} is not TYPE:NAME (e.g. User:alice)"
    if not b.host:
        return "host is empty (use * for every host)"
    return None


def _binding(acl: AclImage) -> cpb.AclBinding:
    return cpb.AclBinding(**acl_values(acl))


def matches(f: cpb.AclFilter, acl: AclImage | cpb.AclBinding) -> bool:
    def code(want: int, have: int) -> bool:
        return want in (ANY, have)

    def text(field: str, have: str) -> bool:
        return not f.HasField(field) or getattr(f, field) == have

    if f.pattern_type == MATCH:
        name_ok = acl.resource_name in ("*", f.resource_name) or (
            acl.pattern_type == PREFIXED and f.resource_name.startswith(acl.resource_name)
        )
    else:
        name_ok = code(f.pattern_type, acl.pattern_type) and text(
            "resource_name", acl.resource_name
        )
    return (
        name_ok
        and code(f.resource_type, acl.resource_type)
        and code(f.operation, acl.operation)
        and code(f.permission_type, acl.permission_type)
        and text("principal", acl.principal)
        and text("host", acl.host)
    )


def create_acls(ctx: WriteContext, request: cpb.CreateAclsRequest) -> cpb.AclsResponse:
    response = cpb.AclsResponse()
    existing = {_binding(a).SerializeToString() for a in ctx.image.acls.values()}
    for b in request.creations:
        problem = acl_problem(b)
        if problem:
            response.results.add(error_code=ErrorCode.INVALID_REQUEST, error_message=problem)
            continue
        response.results.add()
        key = b.SerializeToString()
        if key in existing:
            continue  # Kafka: creating an existing ACL succeeds and changes nothing
        existing.add(key)
        ctx.add(
            access_control_entry_record=mpb.AccessControlEntryRecord(id=new_uuid(), **acl_values(b))
        )
    return response


def delete_acls(ctx: WriteContext, request: cpb.DeleteAclsRequest) -> cpb.AclsResponse:
    response = cpb.AclsResponse()
    removed: set[bytes] = set()
    for f in request.filters:
        response.results.add()
        for acl_id, acl in sorted(ctx.image.acls.items()):
            if acl_id not in removed and matches(f, acl):
                removed.add(acl_id)
                response.acls.append(_binding(acl))
                ctx.add(
                    remove_access_control_entry_record=mpb.RemoveAccessControlEntryRecord(id=acl_id)
                )
    return response


def describe_acls(
    image: MetadataImage, _: ControllerView, request: cpb.DescribeAclsRequest
) -> cpb.AclsResponse:
    response = cpb.AclsResponse()
    f = (
        request.filter
        if request.HasField("filter")
        else cpb.AclFilter(resource_type=ANY, pattern_type=ANY, operation=ANY, permission_type=ANY)
    )
    acls = sorted(
        (a for a in image.acls.values() if matches(f, a)),
        key=lambda a: (a.resource_type, a.resource_name, a.principal, a.operation),
    )
    response.acls.extend(_binding(a) for a in acls)
    return response


# --- quotas --------------------------------------------------------------------------------


def _entity_label(entity: Entity) -> str:
    return ",".join(f"{t}={'<default>' if n is None else n}" for t, n in entity)


def alter_client_quotas(
    ctx: WriteContext, request: cpb.AlterClientQuotasRequest
) -> cpb.ItemsResponse:
    response = cpb.ItemsResponse()
    for entry in request.entries:
        entity = entity_of(entry.entity)
        result = response.results.add(name=_entity_label(entity))
        types = [t for t, _ in entity]
        problem = None
        if (
            not types
            or len(set(types)) != len(types)
            or not set(types) <= QUOTA_KEYS_BY_ENTITY.keys()
        ):
            problem = (
                f"entity {shown(result.name)}: types must be distinct among user, client-id, ip"
            )
        elif "ip" in types and len(types) > 1:
            problem = "an ip quota cannot be combined with user or client-id"
        else:
            allowed = frozenset.intersection(*(QUOTA_KEYS_BY_ENTITY[t] for t in types))
            for op in entry.ops:
                if op.key not in allowed:
                    problem = f"{shown(op.key)} is not a quota for {'/'.join(types)}"
                elif not op.remove and (why := quota_value_problem(op.key, op.value)):
                    problem = why
        if problem:
            result.error_code, result.error_message = ErrorCode.INVALID_REQUEST, problem
            continue
        for op in entry.ops:
            ctx.add(client_quota_record=quota_record(entity, op.key, op.value, op.remove))
    return response


def describe_client_quotas(
    image: MetadataImage, _: ControllerView, request: cpb.DescribeClientQuotasRequest
) -> cpb.DescribeClientQuotasResponse:
    key = tuple(sorted(entity_of(request.entity)))
    values = image.quotas.get(key, {})
    return cpb.DescribeClientQuotasResponse(
        quotas={k: v for k, v in values.items() if v is not None}
    )


# --- SCRAM ---------------------------------------------------------------------------------


def scram_keys(mechanism: int, salted_password: bytes) -> tuple[bytes, bytes]:
    """(stored key, server key) from a salted password (RFC 5802)."""
    digest = SCRAM_HASHES[mechanism]
    client_key = hmac.new(salted_password, b"Client Key", digest).digest()
    server_key = hmac.new(salted_password, b"Server Key", digest).digest()
    return digest(client_key).digest(), server_key


def _scram_problem(name: str, mechanism: int, duplicated: set[str]) -> tuple[int, str] | None:
    """What deletions and upsertions are both refused for: a user named twice in one
    request, a mechanism that is not SCRAM-SHA-256 or SCRAM-SHA-512."""
    if name in duplicated:
        return ErrorCode.DUPLICATE_RESOURCE, f"user {shown(name)} appears twice"
    if mechanism not in SCRAM_HASHES:
        return (
            ErrorCode.UNSUPPORTED_SASL_MECHANISM,
            f"mechanism {mechanism} is not SCRAM-SHA-256 (1) or SCRAM-SHA-512 (2)",
        )
    return None


def _upsertion_problem(u: cpb.ScramUpsertion) -> str | None:
    if not u.name:
        return "user name is empty"
    if not MIN_ITERATIONS <= u.iterations <= MAX_ITERATIONS:
        return f"iterations {u.iterations} outside [{MIN_ITERATIONS}, {MAX_ITERATIONS}]"
    if not u.salt or len(u.salted_password) != SCRAM_HASHES[u.mechanism]().digest_size:
        return "salt is empty or the salted password has the wrong length"
    return None


def alter_scram(
    ctx: WriteContext, request: cpb.AlterUserScramCredentialsRequest
) -> cpb.ItemsResponse:
    response = cpb.ItemsResponse()
    users = [d.name for d in request.deletions] + [u.name for u in request.upsertions]
    duplicated = {u for u in users if users.count(u) > 1}
    for d in request.deletions:
        result = response.results.add(name=d.name)
        if refused := _scram_problem(d.name, d.mechanism, duplicated):
            result.error_code, result.error_message = refused
        elif (d.name, d.mechanism) not in ctx.image.scram:
            result.error_code = ErrorCode.RESOURCE_NOT_FOUND
            result.error_message = (
                f"user {shown(d.name)} has no credential for mechanism {d.mechanism}"
            )
        else:
            ctx.add(
                remove_user_scram_credential_record=mpb.RemoveUserScramCredentialRecord(
                    name=d.name, mechanism=d.mechanism
                )
            )
    for u in request.upsertions:
        result = response.results.add(name=u.name)
        if refused := _scram_problem(u.name, u.mechanism, duplicated):
            result.error_code, result.error_message = refused
        elif problem := _upsertion_problem(u):
            result.error_code, result.error_message = ErrorCode.UNACCEPTABLE_CREDENTIAL, problem
        else:
            stored, server = scram_keys(u.mechanism, u.salted_password)
            ctx.add(
                user_scram_credential_record=mpb.UserScramCredentialRecord(
                    name=u.name,
                    mechanism=u.mechanism,
                    salt=u.salt,
                    stored_key=stored,
                    server_key=server,
                    iterations=u.iterations,
                )
            )
    return response
