"""The metadata records that both the copy (ZooKeeper's values) and a snapshot (an
image's values) write, each built in one place from its fields. Every field is set
explicitly (proto3 leaves a zero unset; the bytes are the same either way)."""

from __future__ import annotations

from collections.abc import Iterable

from migration.proto.metadata_pb2 import MetadataRecord


def feature_level(name: str, level: int) -> MetadataRecord:
    r = MetadataRecord()
    r.feature_level_record.name, r.feature_level_record.feature_level = name, level
    return r


def topic(name: str, topic_id: bytes) -> MetadataRecord:
    r = MetadataRecord()
    r.topic_record.name, r.topic_record.topic_id = name, topic_id
    return r


def config(resource_type: int, resource_name: str, name: str, value: str) -> MetadataRecord:
    r = MetadataRecord()
    c = r.config_record
    c.resource_type, c.resource_name, c.name, c.value = resource_type, resource_name, name, value
    return r


def client_quota(
    entity: Iterable[tuple[str, str | None]], key: str, value: float
) -> MetadataRecord:
    """A quota of one entity (its (type, name) parts; a None name is the type's default)."""
    r = MetadataRecord()
    q = r.client_quota_record
    for entity_type, entity_name in entity:
        part = q.entity.add(entity_type=entity_type)
        if entity_name is not None:
            part.entity_name = entity_name
    q.key, q.value = key, value
    return r


def scram_credential(
    name: str,
    mechanism: int,
    *,
    salt: bytes,
    stored_key: bytes,
    server_key: bytes,
    iterations: int,
) -> MetadataRecord:
    r = MetadataRecord()
    u = r.user_scram_credential_record
    u.name, u.mechanism, u.salt = name, mechanism, salt
    u.stored_key, u.server_key, u.iterations = stored_key, server_key, iterations
    return r


def producer_ids(broker_id: int, broker_epoch: int, next_producer_id: int) -> MetadataRecord:
    r = MetadataRecord()
    p = r.producer_ids_record
    p.broker_id, p.broker_epoch, p.next_producer_id = broker_id, broker_epoch, next_producer_id
    return r


def acl(
    acl_id: bytes,
    *,
    resource_type: int,
    resource_name: str,
    pattern_type: int,
    principal: str,
    host: str,
    operation: int,
    permission_type: int,
) -> MetadataRecord:
    r = MetadataRecord()
    a = r.access_control_entry_record
    a.id, a.resource_type, a.resource_name = acl_id, resource_type, resource_name
    a.pattern_type, a.principal, a.host = pattern_type, principal, host
    a.operation, a.permission_type = operation, permission_type
    return r


def delegation_token(
    token_id: str,
    *,
    owner: str,
    requester: str,
    renewers: Iterable[str],
    issue_timestamp: int,
    max_timestamp: int,
    expiration_timestamp: int,
) -> MetadataRecord:
    r = MetadataRecord()
    d = r.delegation_token_record
    d.token_id, d.owner, d.requester = token_id, owner, requester
    d.renewers.extend(renewers)
    d.issue_timestamp, d.max_timestamp = issue_timestamp, max_timestamp
    d.expiration_timestamp = expiration_timestamp
    return r
