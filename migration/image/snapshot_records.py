"""An image as the records that rebuild it: what a snapshot holds.

Replaying :func:`image_records` into an empty image gives an image equal to the one
written (topic and ACL ids, partition epochs, broker epochs all preserved).
"""

from __future__ import annotations

from collections.abc import Iterator

from migration.image.model import MetadataImage
from migration.proto.metadata_pb2 import MetadataRecord


def image_records(image: MetadataImage) -> Iterator[MetadataRecord]:
    for name, level in sorted(image.features.items()):
        r = MetadataRecord()
        r.feature_level_record.name, r.feature_level_record.feature_level = name, level
        yield r
    for b in image.brokers.values():
        r = MetadataRecord()
        rb = r.register_broker_record
        rb.broker_id, rb.incarnation_id, rb.broker_epoch = b.broker_id, b.incarnation_id, b.epoch
        rb.is_migrating_zk_broker, rb.fenced = b.is_migrating_zk_broker, b.fenced
        rb.in_controlled_shutdown = b.in_controlled_shutdown
        for e in b.endpoints:
            rb.end_points.add(
                name=e.name, host=e.host, port=e.port, security_protocol=e.security_protocol
            )
        for name, lo, hi in b.features:
            rb.features.add(name=name, min_supported_version=lo, max_supported_version=hi)
        if b.rack is not None:
            rb.rack = b.rack
        yield r
    for t in image.topics.values():
        r = MetadataRecord()
        r.topic_record.name, r.topic_record.topic_id = t.name, t.topic_id
        yield r
        for pid, p in t.partitions.items():
            r = MetadataRecord()
            pr = r.partition_record
            pr.partition_id, pr.topic_id = pid, t.topic_id
            pr.replicas.extend(p.replicas)
            pr.isr.extend(p.isr)
            pr.removing_replicas.extend(p.removing_replicas)
            pr.adding_replicas.extend(p.adding_replicas)
            pr.leader, pr.leader_recovery_state = p.leader, p.leader_recovery_state
            pr.leader_epoch, pr.partition_epoch = p.leader_epoch, p.partition_epoch
            yield r
    for (rtype, rname), config in image.configs.items():
        for name, text in config.items():
            r = MetadataRecord()
            c = r.config_record
            c.resource_type, c.resource_name, c.name, c.value = rtype, rname, name, text
            yield r
    for entity, values in image.quotas.items():
        for key, value in values.items():
            r = MetadataRecord()
            q = r.client_quota_record
            for etype, ename in entity:
                entity_data = q.entity.add(entity_type=etype)
                if ename is not None:
                    entity_data.entity_name = ename
            q.key, q.value = key, value
            yield r
    for (user, mechanism), s in image.scram.items():
        r = MetadataRecord()
        u = r.user_scram_credential_record
        u.name, u.mechanism, u.salt = user, mechanism, s.salt
        u.stored_key, u.server_key, u.iterations = s.stored_key, s.server_key, s.iterations
        yield r
    for acl_id, a in image.acls.items():
        r = MetadataRecord()
        ace = r.access_control_entry_record
        ace.id, ace.resource_type, ace.resource_name = acl_id, a.resource_type, a.resource_name
        ace.pattern_type, ace.principal, ace.host = a.pattern_type, a.principal, a.host
        ace.operation, ace.permission_type = a.operation, a.permission_type
        yield r
    for token_id, tok in image.delegation_tokens.items():
        r = MetadataRecord()
        d = r.delegation_token_record
        d.token_id, d.owner, d.requester = token_id, tok.owner, tok.requester
        d.renewers.extend(tok.renewers)
        d.issue_timestamp, d.max_timestamp = tok.issue_timestamp, tok.max_timestamp
        d.expiration_timestamp = tok.expiration_timestamp
        yield r
    if image.producer_ids is not None:
        r = MetadataRecord()
        p_ids = r.producer_ids_record
        p_ids.broker_id, p_ids.broker_epoch = (
            image.producer_ids.broker_id,
            image.producer_ids.broker_epoch,
        )
        p_ids.next_producer_id = image.producer_ids.next_producer_id
        yield r
    if image.zk_migration_state:
        r = MetadataRecord()
        r.zk_migration_state_record.zk_migration_state = image.zk_migration_state
        yield r
