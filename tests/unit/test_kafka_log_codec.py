"""Every Kafka metadata and control record, every version: what is written reads back,
and what is read writes back to the same bytes (unknown tagged fields included).
Control records are checked against kio, whose codec is generated from Kafka's own
schema files."""

from __future__ import annotations

import io
import struct
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from migration.kafka_log.codec import (
    RecordFormatError,
    Struct,
    decode_message,
    encode_message,
)
from migration.kafka_log.records import (
    KafkaRecord,
    UnknownRecordError,
    decode_control,
    decode_metadata,
    encode_control,
    encode_metadata,
)
from migration.kafka_log.schema import MessageSchema, Versions
from migration.kafka_log.schemas import CONTROL_RECORDS, METADATA_RECORDS
from tests.kafka_records import value_of


def _cases() -> list[tuple[MessageSchema, int]]:
    out = []
    for schema in (*METADATA_RECORDS, *CONTROL_RECORDS):
        v = Versions.parse(schema.valid_versions)
        assert v.high is not None
        out.extend((schema, version) for version in range(v.low, v.high + 1))
    return out


CASES = _cases()


@pytest.mark.parametrize(("schema", "version"), CASES, ids=[f"{s.name}-v{v}" for s, v in CASES])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_record_version_round_trips_byte_for_byte(
    schema: MessageSchema, version: int, data: st.DataObject
) -> None:
    value = data.draw(value_of(schema, version))
    raw = encode_message(schema, version, value)
    decoded = decode_message(schema, version, raw)
    assert decoded == value
    assert encode_message(schema, version, decoded) == raw
    record = KafkaRecord(schema, version, decoded)
    if schema.api_key is not None:
        framed = encode_metadata(record)
        again = decode_metadata(framed)
    else:
        key, framed = encode_control(record)
        again = decode_control(key, framed)
    assert (again.name, again.version, again.value) == (schema.name, version, value)
    for cut in range(len(raw)):
        with pytest.raises(RecordFormatError):
            decode_message(schema, version, raw[:cut])


@settings(max_examples=40, deadline=None)
@given(tags=st.dictionaries(st.integers(1000, 5000), st.binary(max_size=8), min_size=1))
def test_unknown_tagged_fields_are_kept_and_written_back(tags: dict[int, bytes]) -> None:
    schema = next(s for s in METADATA_RECORDS if s.name == "TopicRecord")
    value = Struct({"Name": "orders", "TopicId": bytes(range(16))}, dict(tags))
    raw = encode_message(schema, 0, value)
    decoded = decode_message(schema, 0, raw)
    assert decoded.unknown_tags == tags
    assert encode_message(schema, 0, decoded) == raw


def test_unknown_types_and_versions_are_named() -> None:
    with pytest.raises(UnknownRecordError, match="api key 99"):
        decode_metadata(b"\x01\x63\x00")
    with pytest.raises(UnknownRecordError, match="TopicRecord version 9"):
        decode_metadata(b"\x01\x02\x09\x00")
    with pytest.raises(UnknownRecordError, match="frame version 2"):
        decode_metadata(b"\x02\x02\x00\x00")
    with pytest.raises(UnknownRecordError, match="control record type 42"):
        decode_control(struct.pack(">hh", 0, 42), b"\x00\x00")


def test_tags_out_of_order_are_refused() -> None:
    schema = next(s for s in METADATA_RECORDS if s.name == "NoOpRecord")
    raw = b"\x02" + b"\x05\x00" + b"\x03\x00"  # two tagged fields, 5 before 3
    with pytest.raises(RecordFormatError, match="after"):
        decode_message(schema, 0, raw)


def _kio_bytes(entity: Any) -> bytes:
    from kio.serial import entity_writer

    out = io.BytesIO()
    entity_writer(type(entity))(out, entity)
    return out.getvalue()


def test_control_records_match_kio_which_kafka_schemas_generate() -> None:
    from kio.schema.leader_change_message.v0.data import LeaderChangeMessage, Voter
    from kio.schema.snapshot_footer_record.v0.data import SnapshotFooterRecord
    from kio.schema.snapshot_header_record.v0.data import SnapshotHeaderRecord
    from kio.static.primitive import i16, i32, i64

    by_name = {s.name: s for s in CONTROL_RECORDS}
    lcm = LeaderChangeMessage(
        version=i16(0),
        leader_id=i32(3),
        voters=(Voter(voter_id=i32(1)), Voter(voter_id=i32(3))),
        granting_voters=(Voter(voter_id=i32(3)),),
    )
    ours = Struct(
        {
            "Version": 0,
            "LeaderId": 3,
            "Voters": [Struct({"VoterId": 1}), Struct({"VoterId": 3})],
            "GrantingVoters": [Struct({"VoterId": 3})],
        }
    )
    assert encode_message(by_name["LeaderChangeMessage"], 0, ours) == _kio_bytes(lcm)
    ms = 1_795_000_000_123
    header = SnapshotHeaderRecord(version=i16(0), last_contained_log_timestamp=i64(ms))
    ours = Struct({"Version": 0, "LastContainedLogTimestamp": ms})
    assert encode_message(by_name["SnapshotHeaderRecord"], 0, ours) == _kio_bytes(header)
    footer = SnapshotFooterRecord(version=i16(0))
    assert encode_message(by_name["SnapshotFooterRecord"], 0, Struct({"Version": 0})) == (
        _kio_bytes(footer)
    )
