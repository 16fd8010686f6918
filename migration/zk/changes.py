"""Which of the migration's entities a changed znode belongs to: the reads a catch-up
makes after a watch (:mod:`migration.zk.tree_watch`) named the paths that changed.

Contract: :func:`targets_of` maps every path the copy reads to the smallest entity
whose re-read covers it -- a partition's state znode to that partition alone; a topic's
assignment, its config or its pending deletion (and the znodes below them) to the whole
topic; a config entity (a user's ``clients/...`` included) to that entity; an ACL
resource, a delegation token, the producer-id block to themselves. Paths the copy does
not read (registrations, ``/controller``, ``/migration``, notifications, legacy
consumers, ``/feature``: a running quorum's metadata.version is its own) map to nothing.
A partition whose topic is re-read whole is not listed again.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from migration.zk import paths

_ACL_PREFIXED = paths.ACL_PREFIXED.strip("/").split("/")


@dataclass(frozen=True)
class Targets:
    """What to read again: whole ``topics`` (assignment, partition states, config,
    pending deletion); single ``partitions`` (topic, partition id); config entities
    ``configs`` (entity type, sanitized name: brokers, users with their clients,
    clients, ips); ACL resources ``acls`` (prefixed, resource type, name); delegation
    ``tokens``; the ``producer_id_block``."""

    topics: frozenset[str] = frozenset()
    partitions: frozenset[tuple[str, int]] = frozenset()
    configs: frozenset[tuple[str, str]] = frozenset()
    acls: frozenset[tuple[bool, str, str]] = frozenset()
    tokens: frozenset[str] = frozenset()
    producer_id_block: bool = False

    def __bool__(self) -> bool:
        return bool(
            self.topics
            or self.partitions
            or self.configs
            or self.acls
            or self.tokens
            or self.producer_id_block
        )

    def count(self) -> int:
        """How many entities the targets name (for logs)."""
        return (
            len(self.topics)
            + len(self.partitions)
            + len(self.configs)
            + len(self.acls)
            + len(self.tokens)
            + self.producer_id_block
        )


def targets_of(changed: Iterable[str]) -> Targets:
    """The :class:`Targets` covering ``changed`` (paths inside the chroot; module doc)."""
    topics: set[str] = set()
    partitions: set[tuple[str, int]] = set()
    configs: set[tuple[str, str]] = set()
    acls: set[tuple[bool, str, str]] = set()
    tokens: set[str] = set()
    producer_ids = False
    for path in changed:
        parts = path.split("/")[1:]
        match parts:
            case ["brokers", "topics", name, "partitions", pid, "state"] if pid.isdecimal():
                partitions.add((name, int(pid)))
            case ["brokers", "topics", name, *_]:
                topics.add(name)
            case ["admin", "delete_topics", name] | ["config", "topics", name]:
                topics.add(name)
            case ["config", "brokers" | "users" | "clients" | "ips" as kind, name, *_]:
                configs.add((kind, name))
            case ["kafka-acl", resource_type, name]:
                acls.add((False, resource_type, name))
            case [root, prefixed, resource_type, name] if [root, prefixed] == _ACL_PREFIXED:
                acls.add((True, resource_type, name))
            case ["delegation_token", "tokens", token_id]:
                tokens.add(token_id)
            case _ if path == paths.PRODUCER_ID_BLOCK:
                producer_ids = True
    return Targets(
        topics=frozenset(topics),
        partitions=frozenset(p for p in partitions if p[0] not in topics),
        configs=frozenset(configs),
        acls=frozenset(acls),
        tokens=frozenset(tokens),
        producer_id_block=producer_ids,
    )
