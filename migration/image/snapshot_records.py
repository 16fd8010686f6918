"""An image as the records that rebuild it: what a snapshot holds.

Replaying :func:`image_records` into an empty image gives an image equal to the one
written (topic and ACL ids, partition epochs, broker epochs all preserved).
"""

from __future__ import annotations

from collections.abc import Iterator

from migration.image.model import MetadataImage
from migration.proto import metadata_pb2 as mpb
from migration.proto.metadata_pb2 import MetadataRecord
from migration.records.acls import acl_values
from migration.records.quotas import quota_record
from migration.records.registration import add_features, endpoint_values
from migration.records.scram import credential_values
from migration.records.tokens import token_values


def image_records(image: MetadataImage) -> Iterator[MetadataRecord]:
    for name, level in sorted(image.features.items()):
        yield MetadataRecord(
            feature_level_record=mpb.FeatureLevelRecord(name=name, feature_level=level)
        )
    for b in image.brokers.values():
        r = MetadataRecord()
        rb = r.register_broker_record
        rb.broker_id, rb.incarnation_id, rb.broker_epoch = b.broker_id, b.incarnation_id, b.epoch
        rb.is_migrating_zk_broker, rb.fenced = b.is_migrating_zk_broker, b.fenced
        rb.in_controlled_shutdown = b.in_controlled_shutdown
        for e in b.endpoints:
            rb.end_points.add(**endpoint_values(e))
        add_features(rb.features, b.features)
        if b.rack is not None:
            rb.rack = b.rack
        yield r
    for t in image.topics.values():
        yield MetadataRecord(topic_record=mpb.TopicRecord(name=t.name, topic_id=t.topic_id))
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
            yield MetadataRecord(
                config_record=mpb.ConfigRecord(
                    resource_type=rtype, resource_name=rname, name=name, value=text
                )
            )
    for entity, values in image.quotas.items():
        for key, value in values.items():
            yield MetadataRecord(client_quota_record=quota_record(entity, key, value))
    for (user, mechanism), s in image.scram.items():
        credential = mpb.UserScramCredentialRecord(
            name=user, mechanism=mechanism, **credential_values(s)
        )
        yield MetadataRecord(user_scram_credential_record=credential)
    for acl_id, a in image.acls.items():
        acl = mpb.AccessControlEntryRecord(id=acl_id, **acl_values(a))
        yield MetadataRecord(access_control_entry_record=acl)
    for token_id, tok in image.delegation_tokens.items():
        token = mpb.DelegationTokenRecord(token_id=token_id, **token_values(tok))
        yield MetadataRecord(delegation_token_record=token)
    if (ids := image.producer_ids) is not None:
        producer_ids = mpb.ProducerIdsRecord(
            broker_id=ids.broker_id,
            broker_epoch=ids.broker_epoch,
            next_producer_id=ids.next_producer_id,
        )
        yield MetadataRecord(producer_ids_record=producer_ids)
    if image.zk_migration_state:
        r = MetadataRecord()
        r.zk_migration_state_record.zk_migration_state = image.zk_migration_state
        yield r
