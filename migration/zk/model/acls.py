"""ACLs: ``/kafka-acl/<ResourceType>/<name>`` (literal patterns),
``/kafka-acl-extended/prefixed/<ResourceType>/<name>`` (prefixed patterns) and their
change notifications. Codes are Kafka's (see the reference's numeric codes)."""

from __future__ import annotations

from dataclasses import dataclass

from migration.common.text import shown
from migration.records.codes import (
    OPERATION_NAMES,
    OPERATIONS,
    PATTERN_LITERAL,
    PATTERN_PREFIXED,
    PERMISSION_NAMES,
    PERMISSIONS,
    RESOURCE_TYPE_NAMES,
    RESOURCE_TYPES,
)
from migration.zk.errors import ZnodeFormatError
from migration.zk.model.jsonfields import Fields, decode_text, render_json


@dataclass(frozen=True, slots=True)
class AclEntry:
    principal: str
    host: str
    operation: int
    permission_type: int


@dataclass(frozen=True, slots=True)
class ResourceAcls:
    resource_type: int
    resource_name: str
    pattern_type: int
    entries: tuple[AclEntry, ...]


def parse_acls(
    path: str, raw: bytes | None, resource_type: str, name: str, prefixed: bool
) -> ResourceAcls:
    f = Fields.load(path, raw)
    f.version(range(1, 2))
    if resource_type not in RESOURCE_TYPES:
        f.fail(f"unknown resource type {shown(resource_type)}")
    entries = []
    for sub in f.objects("acls"):
        principal = sub.text("principal")
        if ":" not in principal:
            sub.fail(f"principal {shown(principal)} is not Type:name")
        operation, permission = sub.text("operation"), sub.text("permissionType")
        if operation not in OPERATIONS:
            sub.fail(f"unknown operation {shown(operation)}")
        if permission not in PERMISSIONS:
            sub.fail(f"unknown permissionType {shown(permission)}")
        entries.append(
            AclEntry(principal, sub.text("host"), OPERATIONS[operation], PERMISSIONS[permission])
        )
    return ResourceAcls(
        RESOURCE_TYPES[resource_type],
        name,
        PATTERN_PREFIXED if prefixed else PATTERN_LITERAL,
        tuple(entries),
    )


def render_acls(entries: tuple[AclEntry, ...]) -> bytes:
    return render_json(
        {
            "version": 1,
            "acls": [
                {
                    "principal": e.principal,
                    "permissionType": PERMISSION_NAMES[e.permission_type],
                    "operation": OPERATION_NAMES[e.operation],
                    "host": e.host,
                }
                for e in entries
            ],
        }
    )


def render_acl_change(resource_type: int, name: str, pattern_type: int) -> bytes:
    """The change notification: plain ``TYPE:name`` for literal patterns, JSON for
    others; the type as Kafka's ``ResourceType`` enum prints it (``TOPIC``,
    ``TRANSACTIONAL_ID``), as both its ZooKeeper-mode authorizer and its migration's
    dual-write write it."""
    type_name = _upper_snake(RESOURCE_TYPE_NAMES[resource_type])
    if pattern_type == PATTERN_LITERAL:
        return f"{type_name}:{name}".encode()
    return render_json(
        {
            "version": 1,
            "resourceType": type_name,
            "name": name,
            "patternType": "PREFIXED",
        }
    )


def parse_acl_change(path: str, raw: bytes | None, extended: bool) -> tuple[int, str, int]:
    """The resource a change notification names: (resource type code, name, pattern
    type). ``/kafka-acl-changes`` holds ``TYPE:name`` text (literal patterns),
    ``/kafka-acl-extended-changes`` the JSON :func:`render_acl_change` writes; a type
    is accepted in any case, as Kafka's ``ResourceType.fromString`` takes it (``Topic``,
    ``TOPIC``, ``TransactionalId``, ``TRANSACTIONAL_ID``). ZnodeFormatError otherwise."""
    if not extended:
        text = decode_text(path, raw)
        type_name, colon, name = text.partition(":")
        code = _type_code(type_name)
        if not colon or code is None:
            raise ZnodeFormatError(path, f"expected ResourceType:name, found {shown(text)}")
        return code, name, PATTERN_LITERAL
    f = Fields.load(path, raw)
    f.version(range(1, 2))
    type_name, pattern = f.text("resourceType"), f.text("patternType")
    code = _type_code(type_name)
    if code is None:
        f.fail(f"unknown resourceType {shown(type_name)}")
    if pattern not in ("LITERAL", "PREFIXED"):
        f.fail(f"patternType {shown(pattern)} is neither LITERAL nor PREFIXED")
    return (
        code,
        f.text("name"),
        PATTERN_PREFIXED if pattern == "PREFIXED" else PATTERN_LITERAL,
    )


def _upper_snake(camel: str) -> str:
    return "".join(("_" + c if c.isupper() and i else c) for i, c in enumerate(camel)).upper()


_TYPE_CODES = {name.upper(): code for name, code in RESOURCE_TYPES.items()}


def _type_code(name: str) -> int | None:
    """A resource type's code from its name in any case, with or without underscores."""
    return _TYPE_CODES.get(name.upper().replace("_", ""))
