"""An image as the records that rebuild it: what a snapshot holds.

Replaying :func:`image_records` into an empty image gives an image equal to the one
written (topic and ACL ids, partition epochs, broker epochs all preserved).
"""

from __future__ import annotations

from collections.abc import Iterator

from migration.image.model import MetadataImage
from migration.proto.metadata_pb2 import MetadataRecord
from migration.records import builders as build


def image_records(image: MetadataImage) -> Iterator[MetadataRecord]:
    for name, level in sorted(image.features.items()):
        yield build.feature_level(name, level)
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
        yield build.topic(t.name, t.topic_id)
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
            yield build.config(rtype, rname, name, text)
    for entity, values in image.quotas.items():
        for key, value in values.items():
            yield build.client_quota(entity, key, value)
    for (user, mechanism), s in image.scram.items():
        yield build.scram_credential(
            user,
            mechanism,
            salt=s.salt,
            stored_key=s.stored_key,
            server_key=s.server_key,
            iterations=s.iterations,
        )
    for acl_id, a in image.acls.items():
        yield build.acl(
            acl_id,
            resource_type=a.resource_type,
            resource_name=a.resource_name,
            pattern_type=a.pattern_type,
            principal=a.principal,
            host=a.host,
            operation=a.operation,
            permission_type=a.permission_type,
        )
    for token_id, tok in image.delegation_tokens.items():
        yield build.delegation_token(
            token_id,
            owner=tok.owner,
            requester=tok.requester,
            renewers=tok.renewers,
            issue_timestamp=tok.issue_timestamp,
            max_timestamp=tok.max_timestamp,
            expiration_timestamp=tok.expiration_timestamp,
        )
    if (ids := image.producer_ids) is not None:
        yield build.producer_ids(ids.broker_id, ids.broker_epoch, ids.next_producer_id)
    if image.zk_migration_state:
        r = MetadataRecord()
        r.zk_migration_state_record.zk_migration_state = image.zk_migration_state
        yield r
