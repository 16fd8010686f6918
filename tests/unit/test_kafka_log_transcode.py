"""The transcoder against an independent reference: for any record of every schema and
version, Kafka's bytes transcoded and parsed by protobuf equal the protobuf record built
here, field by field, from what the codec decodes of the same bytes; and every cut of
those bytes is a RecordFormatError for both."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf.message import Message
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from migration.kafka_log.codec import RecordFormatError, Struct, decode_message, encode_message
from migration.kafka_log.records import CONTROL_KEY, CONTROL_KEY_VERSION, FRAME_VERSION
from migration.kafka_log.schema import PRIMITIVES, Field, MessageSchema, Versions
from migration.kafka_log.schemas import CONTROL_RECORDS, METADATA_RECORDS
from migration.kafka_log.transcode import add_control, add_metadata, parse_payload
from migration.kafka_log.transcode_plan import TRI_STATE, proto_name
from migration.proto.metadata_pb2 import MetadataRecord
from migration.records.kinds import BY_TYPE_NAME
from tests.kafka_records import value_of

CASES = [
    (schema, version)
    for schema in (*METADATA_RECORDS, *CONTROL_RECORDS)
    for version in range(
        Versions.parse(schema.valid_versions).low,
        (Versions.parse(schema.valid_versions).high or 0) + 1,
    )
]


def _reference(msg: Message, record: str, fields: tuple[Field, ...], value: Struct) -> None:
    """The mapping as :mod:`migration.kafka_log.transcode`'s docstring states it, from
    a decoded struct: same names, nulls and absent tagged fields unset, nullable arrays
    in their wrapper message, tri-states as optional bools."""
    msg.SetInParent()
    for f in fields:
        if f.name not in value.values or value.values[f.name] is None:
            continue
        v, name = value.values[f.name], proto_name(f.name)
        fd = msg.DESCRIPTOR.fields_by_name[name]
        if (tri := TRI_STATE.get((record, f.name))) is not None:
            if tri.get(v) is not None:
                setattr(msg, name, tri[v])
        elif f.type.startswith("[]"):
            target: Any = getattr(msg, name)
            if fd.message_type is not None and [g.name for g in fd.message_type.fields] == ["ids"]:
                target.SetInParent()
                target = target.ids
            if f.type[2:] in PRIMITIVES:
                target.extend(v)
            else:
                for element in v:
                    _reference(target.add(), record, f.fields, element)
        elif f.type in PRIMITIVES:
            setattr(msg, name, v)
        else:
            _reference(getattr(msg, name), record, f.fields, v)


def _transcoded(schema: MessageSchema, version: int, raw: bytes) -> MetadataRecord:
    payload = bytearray()
    if schema.control_type is None:
        assert schema.api_key is not None and schema.api_key < 0x80 and version < 0x80
        add_metadata(payload, bytes((FRAME_VERSION, schema.api_key, version)) + raw)
    else:
        add_control(payload, CONTROL_KEY.pack(CONTROL_KEY_VERSION, schema.control_type), raw)
    [record] = parse_payload(payload)
    return record


@pytest.mark.parametrize(("schema", "version"), CASES, ids=[f"{s.name}-v{v}" for s, v in CASES])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_transcoding_matches_the_codec_field_by_field(
    schema: MessageSchema, version: int, data: st.DataObject
) -> None:
    value = data.draw(value_of(schema, version))
    raw = encode_message(schema, version, value)
    expected = MetadataRecord()
    inner = getattr(expected, BY_TYPE_NAME[schema.name].field)
    _reference(inner, schema.name, schema.fields, decode_message(schema, version, raw))
    assert _transcoded(schema, version, raw) == expected
    for cut in range(len(raw)):
        with pytest.raises(RecordFormatError):
            decode_message(schema, version, raw[:cut])
        with pytest.raises(RecordFormatError):
            _transcoded(schema, version, raw[:cut])
