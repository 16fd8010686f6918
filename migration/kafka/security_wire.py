"""The admin API's ACL and client-quota messages in Kafka's wire spelling (kio's field
names), both ways: what :mod:`.admin_client` sends a broker and what a broker's
:mod:`.security_apis` reads from a client. The fields themselves are
:mod:`migration.records.acls`' and :mod:`migration.records.quotas`'; here only the
names and defaults the wire gives them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from migration.proto import controller_pb2 as cpb
from migration.records.acls import ACL_FIELDS
from migration.records.codes import PATTERN_LITERAL
from migration.records.quotas import Entity

FILTER_WIRE = {
    "resource_type": "resource_type_filter",
    "resource_name": "resource_name_filter",
    "pattern_type": "pattern_type_filter",
    "principal": "principal_filter",
    "host": "host_filter",
    "operation": "operation",
    "permission_type": "permission_type",
}
"""An AclFilter's fields -> DescribeAcls' and DeleteAcls' filter fields."""

_UNSET_IS_ANY = ("resource_name", "principal", "host")  # unset (null on the wire): any
CREATION_WIRE = {name: name for name in ACL_FIELDS} | {"pattern_type": "resource_pattern_type"}
"""An AclBinding's fields -> CreateAcls' creation fields."""

MATCH_EXACT, MATCH_DEFAULT = 0, 1
"""DescribeClientQuotas' match types read here: a component matches one name, or the
default (2, any, is what an absent component means: nothing to match)."""


def filter_to_wire(f: cpb.AclFilter) -> dict[str, Any]:
    """The wire filter of ``f`` (its unset texts null)."""
    return {
        wire: None if name in _UNSET_IS_ANY and not f.HasField(name) else getattr(f, name)
        for name, wire in FILTER_WIRE.items()
    }


def filter_from_wire(wire_filter: Any) -> cpb.AclFilter:
    """The AclFilter of a wire filter: a null text is unset; a request version without
    a pattern type filters LITERAL patterns (Kafka's default)."""
    out = cpb.AclFilter(pattern_type=getattr(wire_filter, "pattern_type_filter", PATTERN_LITERAL))
    for name, wire in FILTER_WIRE.items():
        if name != "pattern_type" and (value := getattr(wire_filter, wire)) is not None:
            setattr(out, name, value)
    return out


def creation_to_wire(binding: cpb.AclBinding) -> dict[str, Any]:
    """CreateAcls' creation of ``binding``."""
    return {wire: getattr(binding, name) for name, wire in CREATION_WIRE.items()}


def creation_from_wire(creation: Any) -> dict[str, Any]:
    """The AclBinding fields of a CreateAcls creation (a request version without a
    pattern type creates LITERAL patterns)."""
    pattern_type = getattr(creation, "resource_pattern_type", PATTERN_LITERAL)
    wire_names = CREATION_WIRE.items()
    values = {name: getattr(creation, wire) for name, wire in wire_names if name != "pattern_type"}
    return values | {"pattern_type": pattern_type}


def entity_to_wire(entity: Entity) -> list[dict[str, Any]]:
    """A quota entity's wire parts (a default's name null)."""
    return [{"entity_type": t, "entity_name": n} for t, n in entity]


def entity_from_wire(parts: Iterable[Any]) -> Entity:
    """A quota entity from its wire parts."""
    return tuple((p.entity_type, p.entity_name) for p in parts)


def entity_components(entity: Entity) -> list[dict[str, Any]]:
    """DescribeClientQuotas' components matching exactly ``entity``: each part's name,
    or its default."""
    return [
        {
            "entity_type": t,
            "match_type": MATCH_DEFAULT if n is None else MATCH_EXACT,
            "match": n,
        }
        for t, n in entity
    ]
