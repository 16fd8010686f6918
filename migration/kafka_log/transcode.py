"""Kafka's record bytes straight to the project's protobuf bytes: the one implementation
of Kafka -> project records (:func:`~migration.kafka_log.mapping.to_proto` goes through
it too).

A Kafka field ``PartitionId`` becomes the protobuf field ``partition_id`` of the message
of the same name (:func:`~migration.kafka_log.transcode_plan.proto_name`): integers and bools as
varints, float64 as a double, strings, bytes and uuids as length-delimited fields,
arrays of numbers packed, arrays of structs as repeated messages, a nullable array as
its wrapper message (``ReplicaList``, ``UuidList``; written even when empty, so the
field is set), a null or absent tagged value as no field at all (an unset ``optional``),
and the int8 tri-states of :data:`~migration.kafka_log.transcode_plan.TRI_STATE` as an
``optional bool``. Tagged fields the version does not know are skipped.

Why bytes to bytes: a batch's records are transcoded into one ``RecordBatchPayload`` and
parsed by protobuf in a single call, as the project's own log is read -- building
messages field by field from Python costs several times more.

How: each record version's schema is interpreted once into a plan of typed steps
(:mod:`.transcode_plan`; no code is generated) that read with :mod:`.codec`'s own wire
rules, so the codec's decode and this differ only in what they make of the values (a
Struct, protobuf bytes).

Bad bytes raise :class:`~migration.kafka_log.codec.RecordFormatError` exactly where the
codec's reader would (lengths past the end, nulls where the version has none, tags out
of order); invalid UTF-8 is found by protobuf's parse of the batch.
``tests/unit/test_kafka_log_transcode.py`` checks both against a reference built from
the codec's decode, for random records of every schema and version.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from google.protobuf.message import DecodeError

from migration.common.protowire import varint
from migration.kafka_log.codec import Buf, RecordFormatError
from migration.kafka_log.records import control_header, metadata_header
from migration.kafka_log.schema import MessageSchema, Versions
from migration.kafka_log.transcode_plan import Step, field_key, fill_length, struct_step
from migration.proto.metadata_pb2 import MetadataRecord, RecordBatchPayload
from migration.records.kinds import BY_TYPE_NAME


@dataclass(frozen=True, slots=True)
class _Envelope:
    """How one record type and version becomes a MetadataRecord envelope."""

    name: str
    version: int
    body: Step  # the record's fields into its message's fields
    head: bytes  # RecordBatchPayload.records, the record type's MetadataRecord field,
    # each followed by a byte kept for its length


_ENVELOPES: dict[tuple[str, int], _Envelope] = {}
_BY_HEAD: dict[bytes, tuple[_Envelope, int]] = {}
"""A metadata record value's first three bytes (frame, api key and version, each a
one-byte varint) -> its envelope and where its body starts: one lookup per record."""


def _envelope_of(schema: MessageSchema, version: int) -> _Envelope:
    found = _ENVELOPES.get((schema.name, version))
    if found is None:
        kind = BY_TYPE_NAME[schema.name]
        fd = MetadataRecord.DESCRIPTOR.fields_by_name[kind.field]
        flexible = version in Versions.parse(schema.flexible_versions)
        body = struct_step(schema.name, schema.fields, version, flexible, fd.message_type)
        head = b"\x0a\x00" + field_key(fd.number, 2) + b"\x00"
        found = _Envelope(schema.name, version, body, head)
        _ENVELOPES[schema.name, version] = found
    return found


def _append(payload: bytearray, env: _Envelope, value: Buf, pos: int) -> None:
    """The record in ``value`` from ``pos`` on, as a RecordBatchPayload element (field
    1, a MetadataRecord holding it in its record type's field), written in place with
    a byte kept for each length; ``payload`` is left as it was when the bytes are not
    a record."""
    start = len(payload)
    payload += env.head  # records = 1, length, the record type's key, length
    try:
        end = env.body(value, pos, payload)
        if end != len(value):
            raise RecordFormatError(
                f"{env.name} v{env.version}: {len(value) - end} bytes left over"
            )
    except (IndexError, struct.error) as exc:
        del payload[start:]
        raise RecordFormatError(
            f"{env.name} v{env.version}: cut short: a field runs past its byte "
            f"{len(value) - pos} ({exc})"
        ) from None
    except RecordFormatError:
        del payload[start:]
        raise
    fill_length(payload, start + len(env.head) - 1)  # the record's, then the element's
    fill_length(payload, start + 1)


def add_metadata(payload: bytearray, value: Buf | None) -> None:
    """Append a metadata record's value to ``payload`` as a MetadataRecord (a
    RecordBatchPayload element). UnknownRecordError / RecordFormatError when it is
    not one; ``payload`` is then unchanged."""
    hit = _BY_HEAD.get(bytes(value[:3])) if value is not None else None
    if hit is None:
        schema, version, pos = metadata_header(value)
        hit = (_envelope_of(schema, version), pos)
        if pos == 3:
            _BY_HEAD[bytes(value[:3])] = hit  # type: ignore[index]
    assert value is not None
    _append(payload, hit[0], value, hit[1])


def add_control(payload: bytearray, key: Buf | None, value: Buf | None) -> None:
    """Append a control record to ``payload`` as a MetadataRecord."""
    schema, version = control_header(key, value)
    assert value is not None
    _append(payload, _envelope_of(schema, version), value, 0)


_NO_OP = field_key(MetadataRecord.DESCRIPTOR.fields_by_name["no_op_record"].number, 2) + b"\x00"


def add_no_op(payload: bytearray) -> None:
    """Append a NoOpRecord (where a skipped record stood: it changes nothing)."""
    payload += b"\x0a" + varint(len(_NO_OP)) + _NO_OP


def parse_payload(payload: bytes | bytearray) -> list[MetadataRecord]:
    """The records of a RecordBatchPayload, parsed in one call."""
    try:
        return list(RecordBatchPayload.FromString(bytes(payload)).records)
    except DecodeError as exc:  # e.g. a string that is not UTF-8
        raise RecordFormatError(f"records that are not valid: {exc}") from None
