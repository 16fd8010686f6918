"""What kind of record a :class:`MetadataRecord` envelope carries.

The envelope is a protobuf ``oneof``; a record's *type name* is its message's name
(``TopicRecord``), its *api key* is Kafka's (envelope field number - 1), and control
records (leader changes, snapshot header and footer) have no api key and never change
the image.
"""

from __future__ import annotations

from dataclasses import dataclass

from google.protobuf.message import Message

from migration.proto.metadata_pb2 import MetadataRecord

CONTROL_FIELD_BASE = 100  # envelope field numbers from here on are control records
# Kafka's apiKey where it is not the envelope field number - 1 (numbered before the
# mistake was noticed; the number is on disk, so it stays).
_API_KEY_EXCEPTIONS = {"remove_delegation_token_record": 26}


@dataclass(frozen=True, slots=True)
class RecordKind:
    field: str  # the envelope's oneof field, e.g. "topic_record"
    type_name: str  # the message name, e.g. "TopicRecord"
    api_key: int | None  # Kafka's metadata record apiKey; None for control records

    @property
    def is_control(self) -> bool:
        return self.api_key is None

    @property
    def changes_nothing(self) -> bool:
        """No state to carry anywhere: a control record, or the NoOpRecord Kafka's
        active controller appends when idle (every ``metadata.max.idle.interval.ms``)."""
        return self.is_control or self.type_name == "NoOpRecord"


def _kinds() -> dict[str, RecordKind]:
    oneof = MetadataRecord.DESCRIPTOR.oneofs_by_name["record"]
    out = {}
    for f in oneof.fields:
        api_key = f.number - 1 if f.number < CONTROL_FIELD_BASE else None
        api_key = _API_KEY_EXCEPTIONS.get(f.name, api_key)
        assert f.message_type is not None  # every oneof member is a message
        out[f.name] = RecordKind(f.name, f.message_type.name, api_key)
    return out


KINDS: dict[str, RecordKind] = _kinds()
BY_TYPE_NAME: dict[str, RecordKind] = {k.type_name: k for k in KINDS.values()}


def kind_of(record: MetadataRecord) -> RecordKind:
    """The kind of ``record``; ValueError for an empty envelope (corrupt or foreign data)."""
    which = record.WhichOneof("record")
    if which is None:
        raise ValueError("metadata record envelope carries no record")
    return KINDS[which]


def payload(record: MetadataRecord) -> Message:
    """The record inside the envelope (a TopicRecord, a PartitionRecord, ...)."""
    which = record.WhichOneof("record")
    if which is None:
        raise ValueError("metadata record envelope carries no record")
    inner: Message = getattr(record, which)
    return inner


def wrap(inner: Message) -> MetadataRecord:
    """An envelope around ``inner`` (copies it)."""
    kind = BY_TYPE_NAME[inner.DESCRIPTOR.name]
    record = MetadataRecord()
    getattr(record, kind.field).CopyFrom(inner)
    return record
