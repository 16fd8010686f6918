"""Kafka's ACL authorizer, with Kafka's semantics, over the ACLs in the broker's
metadata (ZooKeeper's ``/kafka-acl*`` in ZooKeeper mode, the image's records in KRaft
mode: the same ACLs, migrated).

``authorizer.class.name`` takes Kafka's names: ``kafka.security.authorizer.AclAuthorizer``
(ZooKeeper mode) and ``org.apache.kafka.metadata.authorizer.StandardAuthorizer`` (KRaft
mode); unset, every request is allowed (Kafka's default). The rules, in order:

1. a principal in ``super.users`` (``User:a;User:b``) may do anything;
2. the ACLs that apply to a resource are its literal ones, the wildcard ``*`` ones and
   the prefixed ones whose prefix starts its name; when there are none,
   ``allow.everyone.if.no.acl.found`` (default false) decides;
3. a DENY for the principal (or ``User:*``), the host (or ``*``) and the operation (or
   ``All``) refuses, whatever allows;
4. else an ALLOW for the principal, host and the operation, ``All``, or an operation that
   implies it (``Read``/``Write``/``Delete``/``Alter`` imply ``Describe``;
   ``AlterConfigs`` implies ``DescribeConfigs``) allows; nothing else does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from migration.image.model import AclImage
from migration.records.codes import (
    ALLOW,
    DENY,
    OPERATIONS,
    PATTERN_LITERAL,
    PATTERN_PREFIXED,
    RESOURCE_TYPES,
)
from migration.text import shown

ACL_AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
KEYS = {"authorizer.class.name", "super.users", "allow.everyone.if.no.acl.found"}
CLUSTER_NAME = "kafka-cluster"
WILDCARD = "*"
ANONYMOUS = "User:ANONYMOUS"

TOPIC, GROUP, CLUSTER = RESOURCE_TYPES["Topic"], RESOURCE_TYPES["Group"], RESOURCE_TYPES["Cluster"]
ALL = OPERATIONS["All"]
READ, WRITE, CREATE, DELETE = (OPERATIONS[n] for n in ("Read", "Write", "Create", "Delete"))
ALTER, DESCRIBE = OPERATIONS["Alter"], OPERATIONS["Describe"]
DESCRIBE_CONFIGS, ALTER_CONFIGS = OPERATIONS["DescribeConfigs"], OPERATIONS["AlterConfigs"]
_IMPLIED_BY = {
    DESCRIBE: frozenset({DESCRIBE, READ, WRITE, DELETE, ALTER}),
    DESCRIBE_CONFIGS: frozenset({DESCRIBE_CONFIGS, ALTER_CONFIGS}),
}


@dataclass(frozen=True, slots=True)
class Principal:
    """Who sent a request: ``User:<name>`` (``User:ANONYMOUS`` before or without a
    login) and the client's address."""

    principal: str
    host: str


@dataclass(frozen=True)
class AuthorizerSettings:
    class_name: str
    super_users: frozenset[str]
    allow_if_no_acl: bool


def authorizer_settings(
    props: Mapping[str, str], kraft: bool, problems: list[str]
) -> AuthorizerSettings | None:
    """``authorizer.class.name`` and its settings; None when unset (no authorization)."""
    name = props.get("authorizer.class.name", "").strip()
    if not name:
        return None
    expected = STANDARD_AUTHORIZER if kraft else ACL_AUTHORIZER
    if name != expected:
        problems.append(
            f"authorizer.class.name={shown(name)}: a {'KRaft' if kraft else 'ZooKeeper'}-mode "
            f"broker uses {expected}"
        )
    supers = frozenset(u.strip() for u in props.get("super.users", "").split(";") if u.strip())
    for user in supers:
        if ":" not in user:
            problems.append(f"super.users: {shown(user)} is not a principal (User:name)")
    allow = props.get("allow.everyone.if.no.acl.found", "false").strip().lower()
    if allow not in ("true", "false"):
        problems.append(f"allow.everyone.if.no.acl.found={shown(allow)} is not true or false")
    return AuthorizerSettings(name, supers, allow == "true")


class Authorizer:
    """Decides one (principal, host, operation, resource) at a time over ``acls``.
    Stateless: the caller passes the ACLs of the metadata it answers from."""

    def __init__(self, settings: AuthorizerSettings) -> None:
        self.settings = settings

    def authorize(
        self,
        acls: Iterable[AclImage],
        who: Principal,
        operation: int,
        resource_type: int,
        name: str,
    ) -> bool:
        principal, host = who.principal, who.host
        if principal in self.settings.super_users:
            return True
        applying = [a for a in acls if a.resource_type == resource_type and _covers(a, name)]
        if not applying:
            return self.settings.allow_if_no_acl

        def matches(a: AclImage) -> bool:
            return a.principal in (principal, "User:*") and a.host in (host, WILDCARD)

        if any(
            a.permission_type == DENY and matches(a) and a.operation in (operation, ALL)
            for a in applying
        ):
            return False
        allowing = _IMPLIED_BY.get(operation, frozenset({operation})) | {ALL}
        return any(
            a.permission_type == ALLOW and matches(a) and a.operation in allowing for a in applying
        )


def _covers(acl: AclImage, name: str) -> bool:
    if acl.pattern_type == PATTERN_LITERAL:
        return acl.resource_name in (name, WILDCARD)
    if acl.pattern_type == PATTERN_PREFIXED:
        return name.startswith(acl.resource_name)
    return False
