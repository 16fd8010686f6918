"""Metadata and control records as a Kafka batch's record carries them.

- A metadata record has no key; its value is an unsigned varint frame version (1), an
  unsigned varint api key (the record type), an unsigned varint record version, then
  the record in that version's encoding.
- A control record (in a batch with the control flag) has a key of int16 version (0)
  and int16 control type, and the record as its value; every control record's first
  field is its own int16 ``Version``, which says how to read the rest.

:func:`decode_metadata` / :func:`decode_control` name what is unknown (an api key, a
version, a control type) with :class:`UnknownRecordError`, and anything else wrong with
:class:`RecordFormatError`; :func:`encode_metadata` / :func:`encode_control` write them
back byte for byte.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from migration.kafka_log.codec import (
    Buf,
    RecordFormatError,
    Struct,
    decode_message,
    encode_message,
    read_uvarint,
    write_uvarint,
)
from migration.kafka_log.schema import MessageSchema, Versions
from migration.kafka_log.schemas import BY_API_KEY, BY_CONTROL_TYPE

FRAME_VERSION = 1
CONTROL_KEY = struct.Struct(">hh")
CONTROL_KEY_VERSION = 0
_INT16 = struct.Struct(">h")


class UnknownRecordError(RecordFormatError):
    """A record type, version or control type this reader does not know."""


@dataclass(slots=True)
class KafkaRecord:
    """A decoded record: its schema, the version it was written at, and its fields."""

    schema: MessageSchema
    version: int
    value: Struct

    @property
    def name(self) -> str:
        return self.schema.name


def _check_version(schema: MessageSchema, version: int) -> None:
    if version not in Versions.parse(schema.valid_versions):
        raise UnknownRecordError(
            f"{schema.name} version {version} is not one Kafka writes "
            f"(versions {schema.valid_versions})"
        )


def metadata_header(value: Buf | None) -> tuple[MessageSchema, int, int]:
    """(schema, version, where the record starts) of a metadata record's value."""
    if value is None:
        raise RecordFormatError("a metadata record with a null value")
    try:
        frame, pos = read_uvarint(value, 0)
        api_key, pos = read_uvarint(value, pos)
        version, pos = read_uvarint(value, pos)
    except IndexError:
        raise RecordFormatError("a metadata record cut short in its header") from None
    if frame != FRAME_VERSION:
        raise UnknownRecordError(f"metadata record frame version {frame}, not {FRAME_VERSION}")
    schema = BY_API_KEY.get(api_key)
    if schema is None:
        raise UnknownRecordError(f"unknown metadata record type (api key {api_key})")
    _check_version(schema, version)
    return schema, version, pos


def decode_metadata(value: Buf | None) -> KafkaRecord:
    schema, version, pos = metadata_header(value)
    assert value is not None
    return KafkaRecord(schema, version, decode_message(schema, version, value, pos))


def encode_metadata(record: KafkaRecord) -> bytes:
    out = bytearray()
    write_uvarint(out, FRAME_VERSION)
    assert record.schema.api_key is not None, "a control record is not a metadata record"
    write_uvarint(out, record.schema.api_key)
    write_uvarint(out, record.version)
    return bytes(out) + encode_message(record.schema, record.version, record.value)


def control_header(key: Buf | None, value: Buf | None) -> tuple[MessageSchema, int]:
    """(schema, version) of a control record; its value starts with the record."""
    if key is None or len(key) != CONTROL_KEY.size:
        raise RecordFormatError(f"a control record key of {0 if key is None else len(key)} bytes")
    key_version, control_type = CONTROL_KEY.unpack_from(key)
    if key_version != CONTROL_KEY_VERSION:
        raise UnknownRecordError(f"control record key version {key_version}")
    schema = BY_CONTROL_TYPE.get(control_type)
    if schema is None:
        raise UnknownRecordError(f"unknown control record type {control_type}")
    if value is None or len(value) < 2:
        raise RecordFormatError(f"{schema.name}: no version in the control record value")
    version = _INT16.unpack_from(value)[0]  # the record's own Version field
    _check_version(schema, version)
    return schema, version


def decode_control(key: Buf | None, value: Buf | None) -> KafkaRecord:
    schema, version = control_header(key, value)
    assert value is not None
    return KafkaRecord(schema, version, decode_message(schema, version, value))


def encode_control(record: KafkaRecord) -> tuple[bytes, bytes]:
    """(key, value) of a control record."""
    assert record.schema.control_type is not None, "a metadata record is not a control record"
    key = CONTROL_KEY.pack(CONTROL_KEY_VERSION, record.schema.control_type)
    return key, encode_message(record.schema, record.version, record.value)
