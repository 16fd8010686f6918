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


TOPIC = bytes(range(16))


def _i32(*values: int) -> bytes:
    return b"".join(struct.pack(">i", v) for v in values)


def test_records_laid_out_field_by_field_from_kafkas_schemas_read_as_kafka_means_them() -> None:
    """Bytes written by hand from the published schemas, not by this codec's writer."""
    from migration.kafka_log.mapping import to_proto

    partition = (
        b"\x01\x03\x01"  # frame 1, PartitionRecord (api key 3), version 1
        + _i32(7) + TOPIC  # PartitionId, TopicId
        + b"\x04" + _i32(1, 2, 3)  # Replicas: compact array of 3
        + b"\x03" + _i32(1, 2)  # Isr
        + b"\x01" + b"\x01"  # RemovingReplicas, AddingReplicas: empty
        + _i32(1, 5, 9)  # Leader, LeaderEpoch, PartitionEpoch
        + b"\x01"  # Directories (v1): empty
        + b"\x01" + b"\x00\x01\x01"  # one tagged field: tag 0 LeaderRecoveryState = 1
    )  # fmt: skip
    r = to_proto(decode_metadata(partition)).partition_record
    assert (r.partition_id, r.topic_id, list(r.replicas), list(r.isr)) == (
        7,
        TOPIC,
        [1, 2, 3],
        [1, 2],
    )
    assert (r.leader, r.leader_epoch, r.partition_epoch, r.leader_recovery_state) == (1, 5, 9, 1)
    assert encode_metadata(decode_metadata(partition)) == partition
    change = (
        b"\x01\x05\x00" + _i32(7) + TOPIC  # PartitionChangeRecord v0
        + b"\x02"  # two tagged fields
        + b"\x00\x09" + b"\x03" + _i32(1, 2)  # tag 0 Isr
        + b"\x01\x04" + _i32(2)  # tag 1 Leader
    )  # fmt: skip
    c = to_proto(decode_metadata(change)).partition_change_record
    assert list(c.isr.ids) == [1, 2] and c.leader == 2 and not c.HasField("replicas")
    with pytest.raises(RecordFormatError, match="past the end"):
        decode_metadata(change[:-2])


def test_kip_853_control_records_match_kio_and_read_as_kafka_means_them() -> None:
    """KRaftVersionRecord and VotersRecord (what a snapshot now starts with): the codec
    writes kio's bytes (kio is generated from Kafka's schemas), and kio's bytes read into
    the project's records with every field; a cut value is refused naming the byte."""
    import uuid

    from kio.schema.k_raft_version_record.v0.data import KRaftVersionRecord
    from kio.schema.voters_record.v0.data import Endpoint, KRaftVersionFeature, Voter, VotersRecord
    from kio.static.primitive import i16, i32, u16

    from migration.kafka_log.mapping import to_proto

    by_name = {s.name: s for s in CONTROL_RECORDS}
    version = KRaftVersionRecord(version=i16(0), k_raft_version=i16(1))
    ours = Struct({"Version": 0, "KRaftVersion": 1})
    assert encode_message(by_name["KRaftVersionRecord"], 0, ours) == _kio_bytes(version)
    directory = uuid.UUID(bytes=bytes(range(16)))
    feature = KRaftVersionFeature(min_supported_version=i16(0), max_supported_version=i16(1))
    voters = VotersRecord(
        version=i16(0),
        voters=(
            Voter(
                voter_id=i32(3000),
                voter_directory_id=directory,
                endpoints=(Endpoint(name="CONTROLLER", host="c0", port=u16(9093)),),
                k_raft_version_feature=feature,
            ),
        ),
    )
    raw = _kio_bytes(voters)
    schema = by_name["VotersRecord"]
    assert encode_message(schema, 0, decode_message(schema, 0, raw)) == raw
    record = to_proto(KafkaRecord(schema, 0, decode_message(schema, 0, raw))).voters_record
    (voter,) = record.voters
    assert (voter.voter_id, voter.voter_directory_id) == (3000, directory.bytes)
    assert [(e.name, e.host, e.port) for e in voter.endpoints] == [("CONTROLLER", "c0", 9093)]
    support = voter.k_raft_version_feature
    assert (support.min_supported_version, support.max_supported_version) == (0, 1)
    kraft = to_proto(KafkaRecord(by_name["KRaftVersionRecord"], 0, ours)).k_raft_version_record
    assert kraft.k_raft_version == 1
    with pytest.raises(RecordFormatError, match="byte"):
        decode_message(schema, 0, raw[: len(raw) - 3])
