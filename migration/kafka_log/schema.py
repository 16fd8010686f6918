"""The shape of Kafka's metadata and control records, as data.

Kafka publishes one JSON schema per record (``metadata/src/main/resources/common/
metadata/*.json`` and the raft module's control records); :mod:`.schemas` declares the
same facts with these types, and :mod:`.codec` reads and writes any of them.

A version range is Kafka's spelling: ``"0+"`` (from 0 on), ``"1-3"`` (1 to 3),
``"2"`` (only 2) or ``"none"``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Any

PRIMITIVES = frozenset(
    {"bool", "int8", "int16", "uint16", "int32", "int64", "float64", "string", "bytes", "uuid"}
)


@dataclass(frozen=True, slots=True)
class Versions:
    """A range of versions (``high`` None: no upper bound; ``low`` > ``high``: none)."""

    low: int
    high: int | None

    @classmethod
    @cache
    def parse(cls, text: str) -> Versions:
        text = text.strip()
        if text == "none":
            return cls(1, 0)
        if text.endswith("+"):
            return cls(int(text[:-1]), None)
        if "-" in text:
            low, high = text.split("-")
            return cls(int(low), int(high))
        return cls(int(text), int(text))

    def __contains__(self, version: int) -> bool:
        return self.low <= version and (self.high is None or version <= self.high)


@dataclass(frozen=True, slots=True)
class Field:
    """One field of a record or struct.

    ``type`` is a primitive (:data:`PRIMITIVES`), ``"[]T"`` for an array of a primitive
    or of a struct (``fields`` then holds the struct's fields; ``T`` is its name), or a
    struct name alone for a nested struct (again with ``fields``). ``default`` is
    Kafka's declared default (None: the type's zero; the string ``"null"`` for a
    nullable field whose default is null)."""

    name: str
    type: str
    versions: str
    nullable_versions: str = "none"
    tag: int | None = None
    tagged_versions: str = "none"
    default: Any = None
    fields: tuple[Field, ...] = ()
    entity_type: str | None = None  # Kafka's "entityType" (brokerId, topicName, ...), docs only


@dataclass(frozen=True, slots=True)
class MessageSchema:
    """A record: ``api_key`` is Kafka's metadata record type (None for a control
    record, whose type is ``control_type``)."""

    name: str
    api_key: int | None
    valid_versions: str
    flexible_versions: str
    fields: tuple[Field, ...]
    control_type: int | None = None
    notes: str = field(default="", compare=False)
