"""Hypothesis strategies for Kafka's metadata and control records, built from
:mod:`migration.kafka_log.schemas` field by field."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from migration.kafka_log.codec import Struct, default_of
from migration.kafka_log.schema import PRIMITIVES, Field, MessageSchema, Versions

# int8 fields Kafka uses as enumerations (value -> meaning): only those values occur.
_STATES = {"Fenced": [1, -1], "InControlledShutdown": [1]}


_INTS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}


def _scalar(t: str, nullable: bool) -> st.SearchStrategy[Any]:
    if t in _INTS:
        bits = _INTS[t]
        s: st.SearchStrategy[Any] = st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    elif t == "uint16":
        s = st.integers(0, 65535)
    elif t == "bool":
        s = st.booleans()
    elif t == "float64":
        s = st.floats(allow_nan=False)
    elif t == "string":
        s = st.text(max_size=12)
    elif t == "bytes":
        s = st.binary(max_size=12)
    else:
        assert t == "uuid"
        s = st.binary(min_size=16, max_size=16)
    return st.one_of(st.none(), s) if nullable and t in ("string", "bytes") else s


def _field(f: Field, version: int, as_kafka_writes: bool) -> st.SearchStrategy[Any]:
    nullable = version in Versions.parse(f.nullable_versions)
    if f.type.startswith("[]"):
        element = f.type[2:]
        item = (
            _scalar(element, False)
            if element in PRIMITIVES
            else struct_of(f.fields, version, as_kafka_writes)
        )
        s = st.lists(item, max_size=3)
        return st.one_of(st.none(), s) if nullable else s
    if f.type in PRIMITIVES:
        return _scalar(f.type, nullable)
    return struct_of(f.fields, version, as_kafka_writes)


def struct_of(
    fields: tuple[Field, ...], version: int, as_kafka_writes: bool = False
) -> st.SearchStrategy[Struct]:
    """Any struct of ``fields`` at ``version``; ``as_kafka_writes``: only what Kafka's
    writers produce (a tagged field is left out rather than written with its default,
    an int8 tri-state holds one of its states)."""
    present = [f for f in fields if version in Versions.parse(f.versions)]
    untagged = {
        f.name: _field(f, version, as_kafka_writes)
        for f in present
        if f.tag is None or version not in Versions.parse(f.tagged_versions)
    }
    tagged = {
        f.name: _tagged(f, version, as_kafka_writes)
        for f in present
        if f.tag is not None and version in Versions.parse(f.tagged_versions)
    }
    return st.builds(
        lambda u, t: Struct({**u, **t}),
        st.fixed_dictionaries(untagged),
        st.fixed_dictionaries({}, optional=tagged),
    )


def _tagged(f: Field, version: int, as_kafka_writes: bool) -> st.SearchStrategy[Any]:
    s = _field(f, version, as_kafka_writes)
    if not as_kafka_writes:
        return s
    if f.name in _STATES and f.type == "int8":
        return st.sampled_from(_STATES[f.name])
    default = default_of(f)
    return s.filter(lambda v: v != default)


def value_of(
    schema: MessageSchema, version: int, as_kafka_writes: bool = False
) -> st.SearchStrategy[Struct]:
    """A record of ``schema`` at ``version``; a control record's own ``Version`` field
    says that version (its reader trusts it)."""
    values = struct_of(schema.fields, version, as_kafka_writes)
    if schema.control_type is None:
        return values
    return values.map(lambda s: Struct({**s.values, "Version": version}, s.unknown_tags))
