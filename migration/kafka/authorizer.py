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
from typing import Any

from migration.common.text import shown
from migration.image.model import AclImage
from migration.records.codes import (
    ALLOW,
    DENY,
    OPERATIONS,
    PATTERN_LITERAL,
    PATTERN_PREFIXED,
    RESOURCE_TYPES,
)

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
CLUSTER_ACTION = OPERATIONS["ClusterAction"]  # what brokers and controllers do
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


class AclIndex:
    """The ACLs of one image by resource: literal names, the wildcard and prefixes, so
    a decision looks at the ACLs that apply and nothing else (a name's prefixes are
    looked up one length at a time)."""

    def __init__(self, acls: Iterable[AclImage]) -> None:
        self.literal: dict[tuple[int, str], list[AclImage]] = {}
        self.prefixed: dict[tuple[int, str], list[AclImage]] = {}
        self.longest_prefix = 0
        for a in acls:
            if a.pattern_type == PATTERN_LITERAL:
                self.literal.setdefault((a.resource_type, a.resource_name), []).append(a)
            elif a.pattern_type == PATTERN_PREFIXED:
                self.prefixed.setdefault((a.resource_type, a.resource_name), []).append(a)
                self.longest_prefix = max(self.longest_prefix, len(a.resource_name))

    def applying(self, resource_type: int, name: str) -> list[AclImage]:
        out = [
            *self.literal.get((resource_type, name), ()),
            *(self.literal.get((resource_type, WILDCARD), ()) if name != WILDCARD else ()),
        ]
        for length in range(1, min(len(name), self.longest_prefix) + 1):
            out += self.prefixed.get((resource_type, name[:length]), ())
        return out


class Authorizer:
    """Decides one (principal, host, operation, resource) at a time over the ACLs the
    caller passes (those of the image it answers from). Thread-safe: the index of the
    latest ACLs is replaced whole."""

    def __init__(self, settings: AuthorizerSettings) -> None:
        self.settings = settings
        self._indexed: tuple[Mapping[Any, AclImage], AclIndex] | None = None

    def index(self, acls: Mapping[Any, AclImage]) -> AclIndex:
        """The index of ``acls`` (an image's mapping; rebuilt when the image's changes)."""
        indexed = self._indexed
        if indexed is None or indexed[0] is not acls:
            indexed = (acls, AclIndex(acls.values()))
            self._indexed = indexed
        return indexed[1]

    def authorize(
        self,
        acls: Mapping[Any, AclImage],
        who: Principal,
        operation: int,
        resource_type: int,
        name: str,
    ) -> bool:
        principal, host = who.principal, who.host
        if principal in self.settings.super_users:
            return True
        applying = self.index(acls).applying(resource_type, name)
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
