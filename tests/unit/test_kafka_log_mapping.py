"""Kafka's records onto the project's and back: every field has a home, and a record
as Kafka writes it survives the trip through the protobuf records byte for byte."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from migration.kafka_log.codec import Struct, encode_message
from migration.kafka_log.mapping import from_proto, proto_field_problems, to_proto
from migration.kafka_log.records import KafkaRecord
from migration.kafka_log.schema import MessageSchema, Versions
from migration.kafka_log.schemas import CONTROL_RECORDS, METADATA_RECORDS
from migration.proto.metadata_pb2 import MetadataRecord
from migration.records.kinds import BY_TYPE_NAME
from tests.kafka_records import value_of


def test_every_kafka_field_has_a_protobuf_home() -> None:
    assert proto_field_problems() == []


def test_the_envelope_knows_kafkas_api_key_of_every_record() -> None:
    for schema in METADATA_RECORDS:
        assert BY_TYPE_NAME[schema.name].api_key == schema.api_key, schema.name
    for schema in CONTROL_RECORDS:
        assert BY_TYPE_NAME[schema.name].is_control, schema.name


CASES = [
    (schema, version)
    for schema in (*METADATA_RECORDS, *CONTROL_RECORDS)
    for version in range(
        Versions.parse(schema.valid_versions).low,
        (Versions.parse(schema.valid_versions).high or 0) + 1,
    )
]


@pytest.mark.parametrize(("schema", "version"), CASES, ids=[f"{s.name}-v{v}" for s, v in CASES])
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_record_as_kafka_writes_it_survives_the_protobuf_records(
    schema: MessageSchema, version: int, data: st.DataObject
) -> None:
    value = data.draw(value_of(schema, version, as_kafka_writes=True))
    raw = encode_message(schema, version, value)
    proto = to_proto(KafkaRecord(schema, version, value))
    stored = MetadataRecord.FromString(proto.SerializeToString())  # as the own log keeps it
    back = from_proto(stored, version)
    assert encode_message(schema, version, back.value) == raw


def test_a_broker_registration_change_keeps_its_three_states() -> None:
    schema = next(s for s in METADATA_RECORDS if s.name == "BrokerRegistrationChangeRecord")
    for fenced, expected in ((1, True), (-1, False)):
        value = Struct({"BrokerId": 1, "BrokerEpoch": 5, "Fenced": fenced})
        proto = to_proto(KafkaRecord(schema, 0, value)).broker_registration_change_record
        assert proto.HasField("fenced") and proto.fenced is expected


def test_export_writes_each_record_at_the_lowest_version_that_carries_it() -> None:
    r = MetadataRecord()
    p = r.partition_record
    p.partition_id, p.topic_id, p.leader = 0, bytes(16), 1
    p.replicas.extend([1, 2])
    assert from_proto(r).version == 0  # readable by every Kafka with KRaft
    p.directories.extend([bytes(16), bytes(16)])
    assert from_proto(r).version == 1
    p.eligible_leader_replicas.SetInParent()
    assert from_proto(r).version == 2
    b = MetadataRecord()
    b.register_broker_record.broker_id = 1
    assert from_proto(b).version == 0
    b.register_broker_record.is_migrating_zk_broker = True
    assert from_proto(b).version == 2
