"""Kafka's records onto the project's own (same names, same fields) and back.

The forward rule (Kafka field ``PartitionId`` -> protobuf ``partition_id`` of the message
of the same name, nullable arrays as wrapper messages, nulls as unset ``optional``
fields, the int8 tri-states of :data:`~migration.kafka_log.transcode_plan.TRI_STATE` as
``optional bool``) is implemented once, in :mod:`.transcode`; :func:`to_proto` goes
through it. :func:`from_proto` is its inverse.

Contract:

- :func:`to_proto` carries every field a version has (``tests/unit/
  test_kafka_log_mapping.py`` checks that every field of every schema has a home);
  tagged fields the version does not know stay with the :class:`KafkaRecord` (they are
  shown by ``log dump``; the image has no use for them).
- :func:`from_proto` writes a record at a chosen version: a tagged field is written
  when the protobuf field is set (or, without presence, differs from Kafka's default),
  as Kafka's writers do; so ``from_proto(to_proto(r), r.version)`` encodes to ``r``'s
  bytes for every record without unknown tags.
"""

from __future__ import annotations

from typing import Any

from google.protobuf.message import Message

from migration.kafka_log.codec import Struct, default_of
from migration.kafka_log.records import KafkaRecord, encode_control, encode_metadata
from migration.kafka_log.schema import Field, MessageSchema, Versions
from migration.kafka_log.schemas import BY_API_KEY, BY_CONTROL_TYPE
from migration.kafka_log.transcode import add_control, add_metadata, parse_payload
from migration.kafka_log.transcode_plan import TRI_STATE, proto_name
from migration.proto.metadata_pb2 import MetadataRecord
from migration.records.kinds import BY_TYPE_NAME, kind_of, payload

BY_NAME: dict[str, MessageSchema] = {
    s.name: s for s in (*BY_API_KEY.values(), *BY_CONTROL_TYPE.values())
}


def _is_wrapper(d: Any) -> bool:  # a Descriptor (upb's or python's)
    """A message standing for a nullable array: one repeated field, ``ids``."""
    return [f.name for f in d.fields] == ["ids"]


def to_proto(record: KafkaRecord) -> MetadataRecord:
    """``record`` as the project's record (through :mod:`.transcode`, the one mapping)."""
    payload = bytearray()
    if record.schema.control_type is not None:
        add_control(payload, *encode_control(record))
    else:
        add_metadata(payload, encode_metadata(record))
    return parse_payload(payload)[0]


def _value(msg: Message, record: str, f: Field, version: int, tagged: bool) -> tuple[bool, Any]:
    """(written?, Kafka value) of field ``f`` of ``msg``."""
    name = proto_name(f.name)
    fd = msg.DESCRIPTOR.fields_by_name[name]
    tri = TRI_STATE.get((record, f.name))
    has_presence = fd.has_presence and not fd.is_repeated
    if has_presence and not msg.HasField(name):
        if tagged:
            return False, None
        return True, None if version in Versions.parse(f.nullable_versions) else default_of(f)
    v = getattr(msg, name)
    if tri is not None:
        v = next(k for k, b in tri.items() if b == v)
    elif fd.message_type is not None:
        if fd.is_repeated:
            v = [_struct(element, record, f.fields, version) for element in v]
        elif _is_wrapper(fd.message_type):
            v = list(v.ids)
        else:
            v = _struct(v, record, f.fields, version)
    elif fd.is_repeated:
        v = list(v)
    if tagged and not has_presence and v == default_of(f):
        return False, None
    return True, v


def _struct(msg: Message, record: str, fields: tuple[Field, ...], version: int) -> Struct:
    values: dict[str, Any] = {}
    for f in fields:
        if version not in Versions.parse(f.versions):
            continue
        tagged = f.tag is not None and version in Versions.parse(f.tagged_versions)
        written, v = _value(msg, record, f, version, tagged)
        if written:
            values[f.name] = v
    return Struct(values)


def from_proto(record: MetadataRecord, version: int | None = None) -> KafkaRecord:
    """``record`` as Kafka's record at ``version`` (default: :func:`lowest_version`)."""
    schema = BY_NAME[kind_of(record).type_name]
    inner = payload(record)
    if version is None:
        version = lowest_version(schema, inner)
    return KafkaRecord(schema, version, _struct(inner, schema.name, schema.fields, version))


def lowest_version(schema: MessageSchema, msg: Message) -> int:
    """The lowest version of ``schema`` that carries every field ``msg`` sets (a field
    is set when it is present, non-empty or not Kafka's default): the version every
    Kafka release since the record's introduction reads, as Kafka's own writers choose
    by metadata.version."""
    need = Versions.parse(schema.valid_versions).low
    for f in schema.fields:
        since = Versions.parse(f.versions).low
        if since <= need:
            continue
        fd = msg.DESCRIPTOR.fields_by_name[proto_name(f.name)]
        value = getattr(msg, fd.name)
        if fd.is_repeated:
            carried = len(value) > 0
        elif fd.has_presence:
            carried = msg.HasField(fd.name)
        else:
            carried = value != default_of(f)
        if carried:
            need = since
    return need


def proto_field_problems() -> list[str]:
    """Kafka fields without a protobuf home (what the mapping test asserts is empty)."""
    problems: list[str] = []

    def walk(record: str, d: Any, fields: tuple[Field, ...], where: str) -> None:
        for f in fields:
            fd = d.fields_by_name.get(proto_name(f.name))
            if fd is None:
                problems.append(f"{where}.{f.name}: no field {proto_name(f.name)!r} in {d.name}")
            elif f.fields and fd.message_type is not None:
                walk(record, fd.message_type, f.fields, f"{where}.{f.name}")
            elif f.fields:
                problems.append(f"{where}.{f.name}: a struct, but {fd.name} is not a message")

    for schema in BY_NAME.values():
        kind = BY_TYPE_NAME.get(schema.name)
        if kind is None:
            problems.append(f"{schema.name}: no such record in metadata.proto")
            continue
        d = MetadataRecord.DESCRIPTOR.fields_by_name[kind.field].message_type
        walk(schema.name, d, schema.fields, schema.name)
    return problems
