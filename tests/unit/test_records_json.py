"""The JSON form of records (the contract of `log dump --json`) and record kinds."""

from __future__ import annotations

import base64
import json

import pytest

from migration.proto.metadata_pb2 import MetadataRecord
from migration.records.json_form import record_json
from migration.records.kinds import BY_TYPE_NAME, KINDS, kind_of, wrap
from migration.records.uuids import canonical_uuid, new_uuid, uuid_bytes, uuid_text


def test_kinds_carry_kafkas_api_keys() -> None:
    keys = {k.type_name: k.api_key for k in KINDS.values()}
    assert keys["RegisterBrokerRecord"] == 0
    assert keys["TopicRecord"] == 2
    assert keys["PartitionRecord"] == 3
    assert keys["ConfigRecord"] == 4
    assert keys["RemoveTopicRecord"] == 9
    assert keys["DelegationTokenRecord"] == 10
    assert keys["UserScramCredentialRecord"] == 11
    assert keys["FeatureLevelRecord"] == 12
    assert keys["ClientQuotaRecord"] == 14
    assert keys["ProducerIdsRecord"] == 15
    assert keys["AccessControlEntryRecord"] == 18
    assert keys["ZkMigrationStateRecord"] == 21
    assert (keys["BeginTransactionRecord"], keys["EndTransactionRecord"]) == (23, 24)
    assert keys["AbortTransactionRecord"] == 25
    assert BY_TYPE_NAME["LeaderChangeMessage"].is_control
    with pytest.raises(ValueError, match="no record"):
        kind_of(MetadataRecord())


def test_uuids_are_22_characters_of_url_safe_base64() -> None:
    raw = new_uuid()
    text = uuid_text(raw)
    assert len(text) == 22 and "=" not in text and not text.startswith("-")
    assert uuid_bytes(text) == raw
    assert uuid_text(uuid_bytes("K16VvIw3TLmaYnQ6XjK4PQ")) == "K16VvIw3TLmaYnQ6XjK4PQ"
    bad = ("short", "K16VvIw3TLmaYnQ6XjK4P!", "K16VvIw3TLmaYnQ6XjK4PQ=", "K16VvIw3TLmaYnQ6XjK4PQx")
    for text in (*bad, "K16VvIw3TLmaYnQ6XjK4P+", "K16VvIw3TLmaYnQ6XjK4P", " K16VvIw3TLmaYnQ6XjK4P"):
        with pytest.raises(ValueError, match="is not a Kafka uuid"):
            uuid_bytes(text)


def test_a_uuid_is_read_as_kafka_reads_it_and_printed_canonically() -> None:
    """Kafka's Uuid.fromString decodes with Java's URL-safe decoder, which drops the 4
    bits past the 128th and takes ``==`` padding (checked against Java 17's decoder):
    the same 16 bytes, printed in the one form Kafka prints."""
    canonical = uuid_bytes("K16VvIw3TLmaYnQ6XjK4Pw")
    assert uuid_bytes("K16VvIw3TLmaYnQ6XjK4P2") == canonical  # trailing bits 0110 dropped
    assert canonical_uuid("K16VvIw3TLmaYnQ6XjK4P2") == "K16VvIw3TLmaYnQ6XjK4Pw"
    assert canonical_uuid("K16VvIw3TLmaYnQ6XjK4PQ==") == "K16VvIw3TLmaYnQ6XjK4PQ"
    assert uuid_bytes("K16VvIw3TLmaYnQ6XjK4PR") == uuid_bytes("K16VvIw3TLmaYnQ6XjK4PQ")


def test_partition_record_fields_numbers_and_uuid() -> None:
    r = MetadataRecord()
    p = r.partition_record
    p.partition_id, p.topic_id = 7, uuid_bytes("K16VvIw3TLmaYnQ6XjK4PQ")
    p.replicas.extend([1, 2, 3])
    p.isr.extend([1, 2])
    p.leader, p.leader_epoch, p.partition_epoch = -1, 6, 2
    obj = record_json(r, offset=12, epoch=3)
    assert obj == {
        "offset": 12,
        "epoch": 3,
        "type": "PartitionRecord",
        "partition_id": 7,
        "topic_id": "K16VvIw3TLmaYnQ6XjK4PQ",
        "replicas": [1, 2, 3],
        "isr": [1, 2],
        "removing_replicas": [],
        "adding_replicas": [],
        "leader": -1,
        "leader_recovery_state": 0,
        "leader_epoch": 6,
        "partition_epoch": 2,
        "directories": [],
        "eligible_leader_replicas": None,
        "last_known_elr": None,
    }
    ids = MetadataRecord()
    ids.producer_ids_record.next_producer_id = 2**40
    text = json.dumps(record_json(ids, 0, 0))
    assert '"next_producer_id": 1099511627776' in text  # int64: a number, not a string


def test_optional_fields_are_null_and_replica_lists_flat() -> None:
    r = MetadataRecord()
    q = r.client_quota_record
    q.entity.add(entity_type="user")
    q.entity.add(entity_type="client-id", entity_name="app")
    q.key, q.value = "producer_byte_rate", 1024.5
    assert record_json(r, 0, 0)["entity"] == [
        {"entity_type": "user", "entity_name": None},
        {"entity_type": "client-id", "entity_name": "app"},
    ]
    c = MetadataRecord()
    c.partition_change_record.isr.ids.extend([1, 2])
    obj = record_json(c, 0, 0)
    assert (obj["isr"], obj["replicas"], obj["leader"]) == ([1, 2], None, None)


def test_secrets_are_redacted_unless_asked_for() -> None:
    r = MetadataRecord()
    u = r.user_scram_credential_record
    u.name, u.mechanism, u.salt, u.stored_key, u.server_key, u.iterations = (
        "alice",
        2,
        b"salty",
        b"stored",
        b"server",
        8192,
    )
    hidden = record_json(r, 0, 0)
    assert hidden["salt"] == hidden["stored_key"] == hidden["server_key"] == "<redacted>"
    assert hidden["iterations"] == 8192 and hidden["mechanism"] == 2
    shown = record_json(r, 0, 0, show_secrets=True)
    assert base64.b64decode(shown["salt"]) == b"salty"

    for name, secret in [
        ("listener.name.ssl.ssl.key.password", True),
        ("sasl.jaas.config", True),
        ("listener.name.sasl.plain.sasl.jaas.config", True),
        ("retention.ms", False),
    ]:
        c = MetadataRecord()
        c.config_record.resource_type, c.config_record.name, c.config_record.value = 4, name, "v"
        assert (record_json(c, 0, 0)["value"] == "<redacted>") is secret, name
        assert record_json(c, 0, 0, show_secrets=True)["value"] == "v"


def test_wrap_puts_a_record_in_an_envelope() -> None:
    r = MetadataRecord()
    r.topic_record.name = "x"
    assert wrap(r.topic_record) == r
