"""A client quota's entity, one rule for every form: as ``(entity type, entity name)``
pairs where a None name is the type's default (ZooKeeper's ``<default>``, the image's
QuotaKey, Kafka's wire), and as the repeated entity parts of the ClientQuotaRecord and
of the admin API's messages, where the default is an unset ``entity_name``; and an
alteration's fields (key, value, remove)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from migration.proto.metadata_pb2 import ClientQuotaRecord

Entity = tuple[tuple[str, str | None], ...]
OP_FIELDS = ("key", "value", "remove")


def op_values(op: object) -> dict[str, Any]:
    """An alteration's fields by name (the admin API's and the wire's)."""
    return {name: getattr(op, name) for name in OP_FIELDS}


def entity_of(parts: Iterable[Any]) -> Entity:
    """The pairs of a message's entity parts, in their order (an unset name: None)."""
    return tuple(
        (p.entity_type, p.entity_name if p.HasField("entity_name") else None) for p in parts
    )


def record_entity(parts: Iterable[Any]) -> Entity:
    """The pairs of a ClientQuotaRecord's entity parts: an unset name and ``""`` are both
    the default (Kafka 3.4-3.7.0 copied ZooKeeper's ``<default>`` entities with the name
    ``""``, fixed later to null; ZooKeeper cannot name an entity ``""``)."""
    return tuple((p.entity_type, p.entity_name or None) for p in parts)


def add_entity(parts: Any, entity: Iterable[tuple[str, str | None]]) -> None:
    """Append ``entity``'s pairs to a message's repeated entity parts, leaving a None
    name unset."""
    for entity_type, entity_name in entity:
        part = parts.add(entity_type=entity_type)
        if entity_name is not None:
            part.entity_name = entity_name


def quota_record(
    entity: Iterable[tuple[str, str | None]], key: str, value: float, remove: bool = False
) -> ClientQuotaRecord:
    """The record setting (or, ``remove``, clearing) quota ``key`` of ``entity``."""
    record = ClientQuotaRecord(key=key, value=value, remove=remove)
    add_entity(record.entity, entity)
    return record
