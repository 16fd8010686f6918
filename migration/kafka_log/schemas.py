"""Apache Kafka's published metadata record schemas, transcribed as data.

Every record type that Kafka 3.3 through 4.1 can write to ``__cluster_metadata`` (the
``"type": "metadata"`` schemas of ``metadata/src/main/resources/common/metadata/`` in
apache/kafka), in all the versions those releases know, declared with the types of
:mod:`.schema`. The KRaft control records live in :mod:`.schemas_control` and are
re-exported here.

What is transcribed: field names, wire order, types, version ranges, nullability, tags,
declared defaults and ``entityType`` -- facts, not Kafka's text. Sources read: the
apache/kafka JSON files (the newest stored copies are 4.1-era: ``PartitionRecord`` and
``BrokerRegistrationChangeRecord`` at commit 120e6887, ``RegisterBrokerRecord`` at
207f229b, ``RegisterControllerRecord`` at 2be4c8f5, ``ClearElrRecord`` at 9e1f0bb0),
checked against the classes Kafka generates from them (a 3.7/3.8-era build) and the
``MetadataRecordType`` id table. Where the stored apache copy of a small, unchanged
record was older than 4.1 its fields were confirmed from those generated classes.

Not included: api keys 6 (AccessControlRecord), 13 and 16 (RemoveFeatureLevelRecord),
removed before 3.0; ``UnregisterControllerRecord`` (29, MV 4.4-IV2) and version 4 of
``RegisterBrokerRecord`` (``CordonedLogDirs``, MV 4.3-IV0) and the like, which are newer
than 4.1.

"MV" below is the ``metadata.version`` feature level name from which Kafka writes a
version (``MetadataVersion``); Kafka 4.x accepts MV 3.3-IV3 and later only.
"""

from __future__ import annotations

from migration.kafka_log.schema import Field as F  # noqa: N817
from migration.kafka_log.schema import MessageSchema
from migration.kafka_log.schemas_control import CONTROL_RECORDS

__all__ = ["BY_API_KEY", "BY_CONTROL_TYPE", "CONTROL_RECORDS", "METADATA_RECORDS"]

# Listener endpoints and supported feature ranges, as RegisterBrokerRecord and
# RegisterControllerRecord declare them (each under its own struct name).
_ENDPOINT_FIELDS = (
    F("Name", "string", "0+"),
    F("Host", "string", "0+"),
    F("Port", "uint16", "0+"),
    F("SecurityProtocol", "int16", "0+"),
)
_FEATURE_FIELDS = (
    F("Name", "string", "0+"),
    F("MinSupportedVersion", "int16", "0+"),
    F("MaxSupportedVersion", "int16", "0+"),
)

METADATA_RECORDS: tuple[MessageSchema, ...] = (
    MessageSchema(
        name="RegisterBrokerRecord", api_key=0, valid_versions="0-3", flexible_versions="0+",
        fields=(
            F("BrokerId", "int32", "0+", entity_type="brokerId"),
            F("IsMigratingZkBroker", "bool", "2+", default=False),
            F("IncarnationId", "uuid", "0+"),
            F("BrokerEpoch", "int64", "0+"),
            F("EndPoints", "[]BrokerEndpoint", "0+", fields=_ENDPOINT_FIELDS),
            F("Features", "[]BrokerFeature", "0+", fields=_FEATURE_FIELDS),
            F("Rack", "string", "0+", nullable_versions="0+"),
            F("Fenced", "bool", "0+", default=True),
            F("InControlledShutdown", "bool", "1+", default=False),
            F("LogDirs", "[]uuid", "3+", tag=0, tagged_versions="3+"),
        ),
        notes="A broker's registration. v1 (3.3, MV 3.3-IV3): InControlledShutdown; "
        "v2 (3.4, MV 3.4-IV0): IsMigratingZkBroker (second on the wire); "
        "v3 (3.7, MV 3.7-IV2, KIP-858): tagged LogDirs. (v4, CordonedLogDirs, is 4.3.)",
    ),
    MessageSchema(
        name="UnregisterBrokerRecord", api_key=1, valid_versions="0", flexible_versions="0+",
        fields=(
            F("BrokerId", "int32", "0+", entity_type="brokerId"),
            F("BrokerEpoch", "int64", "0+"),
        ),
        notes="A broker removed from the cluster. v0 only.",
    ),
    MessageSchema(
        name="TopicRecord", api_key=2, valid_versions="0", flexible_versions="0+",
        fields=(
            F("Name", "string", "0+", entity_type="topicName"),
            F("TopicId", "uuid", "0+"),
        ),
        notes="A topic's name and id. v0 only.",
    ),
    MessageSchema(
        name="PartitionRecord", api_key=3, valid_versions="0-2", flexible_versions="0+",
        fields=(
            F("PartitionId", "int32", "0+", default=-1),
            F("TopicId", "uuid", "0+"),
            F("Replicas", "[]int32", "0+", entity_type="brokerId"),
            F("Isr", "[]int32", "0+"),
            F("RemovingReplicas", "[]int32", "0+", entity_type="brokerId"),
            F("AddingReplicas", "[]int32", "0+", entity_type="brokerId"),
            F("Leader", "int32", "0+", default=-1, entity_type="brokerId"),
            F("LeaderRecoveryState", "int8", "0+", tag=0, tagged_versions="0+", default=0),
            F("LeaderEpoch", "int32", "0+", default=-1),
            F("PartitionEpoch", "int32", "0+", default=-1),
            F("Directories", "[]uuid", "1+"),
            F("EligibleLeaderReplicas", "[]int32", "2+", nullable_versions="2+",
              tag=1, tagged_versions="2+", default="null", entity_type="brokerId"),
            F("LastKnownElr", "[]int32", "2+", nullable_versions="2+",
              tag=2, tagged_versions="2+", default="null", entity_type="brokerId"),
        ),
        notes="A partition's full state. Tagged LeaderRecoveryState since 3.2 (KIP-704, "
        "still v0); v1 (3.7, MV 3.7-IV2, KIP-858): Directories; v2 (KIP-966 ELR, written "
        "from MV 4.0-IV1): tagged EligibleLeaderReplicas and LastKnownElr.",
    ),
    MessageSchema(
        name="ConfigRecord", api_key=4, valid_versions="0", flexible_versions="0+",
        fields=(
            F("ResourceType", "int8", "0+"),
            F("ResourceName", "string", "0+"),
            F("Name", "string", "0+"),
            F("Value", "string", "0+", nullable_versions="0+"),
        ),
        notes="A dynamic config set (a null Value deletes it). v0 only.",
    ),
    MessageSchema(
        name="PartitionChangeRecord", api_key=5, valid_versions="0-2", flexible_versions="0+",
        fields=(
            F("PartitionId", "int32", "0+", default=-1),
            F("TopicId", "uuid", "0+"),
            F("Isr", "[]int32", "0+", nullable_versions="0+",
              tag=0, tagged_versions="0+", default="null", entity_type="brokerId"),
            F("Leader", "int32", "0+",
              tag=1, tagged_versions="0+", default=-2, entity_type="brokerId"),
            F("Replicas", "[]int32", "0+", nullable_versions="0+",
              tag=2, tagged_versions="0+", default="null", entity_type="brokerId"),
            F("RemovingReplicas", "[]int32", "0+", nullable_versions="0+",
              tag=3, tagged_versions="0+", default="null", entity_type="brokerId"),
            F("AddingReplicas", "[]int32", "0+", nullable_versions="0+",
              tag=4, tagged_versions="0+", default="null", entity_type="brokerId"),
            F("LeaderRecoveryState", "int8", "0+", tag=5, tagged_versions="0+", default=-1),
            F("Directories", "[]uuid", "1+", nullable_versions="1+",
              tag=8, tagged_versions="1+", default="null"),
            F("EligibleLeaderReplicas", "[]int32", "2+", nullable_versions="2+",
              tag=6, tagged_versions="2+", default="null", entity_type="brokerId"),
            F("LastKnownElr", "[]int32", "2+", nullable_versions="2+",
              tag=7, tagged_versions="2+", default="null", entity_type="brokerId"),
        ),
        notes="A delta to a partition: every field but the ids is tagged; absent means "
        "unchanged (Leader -2, LeaderRecoveryState -1, arrays null). Tag 5 since 3.2; "
        "v1 (3.7, MV 3.7-IV2): Directories (tag 8); v2 (ELR, MV 4.0-IV1): tags 6 and 7.",
    ),
    MessageSchema(
        name="FenceBrokerRecord", api_key=7, valid_versions="0", flexible_versions="0+",
        fields=(
            F("Id", "int32", "0+", entity_type="brokerId"),
            F("Epoch", "int64", "0+"),
        ),
        notes="Fences a broker. Written only below MV 3.3-IV2 (then "
        "BrokerRegistrationChangeRecord); 4.x only replays it.",
    ),
    MessageSchema(
        name="UnfenceBrokerRecord", api_key=8, valid_versions="0", flexible_versions="0+",
        fields=(
            F("Id", "int32", "0+", entity_type="brokerId"),
            F("Epoch", "int64", "0+"),
        ),
        notes="Unfences a broker. Written only below MV 3.3-IV2, like FenceBrokerRecord.",
    ),
    MessageSchema(
        name="RemoveTopicRecord", api_key=9, valid_versions="0", flexible_versions="0+",
        fields=(F("TopicId", "uuid", "0+"),),
        notes="Deletes a topic and its partitions. v0 only.",
    ),
    MessageSchema(
        name="DelegationTokenRecord", api_key=10, valid_versions="0", flexible_versions="0+",
        fields=(
            F("Owner", "string", "0+"),
            F("Requester", "string", "0+"),
            F("Renewers", "[]string", "0+"),
            F("IssueTimestamp", "int64", "0+"),
            F("MaxTimestamp", "int64", "0+"),
            F("ExpirationTimestamp", "int64", "0+"),
            F("TokenId", "string", "0+"),
        ),
        notes="A delegation token. v0, written from MV 3.6-IV2 (KIP-900).",
    ),
    MessageSchema(
        name="UserScramCredentialRecord", api_key=11, valid_versions="0",
        flexible_versions="0+",
        fields=(
            F("Name", "string", "0+"),
            F("Mechanism", "int8", "0+"),
            F("Salt", "bytes", "0+"),
            F("StoredKey", "bytes", "0+"),
            F("ServerKey", "bytes", "0+"),
            F("Iterations", "int32", "0+"),
        ),
        notes="A user's SCRAM credential for one mechanism. v0, written from MV 3.5-IV2.",
    ),
    MessageSchema(
        name="FeatureLevelRecord", api_key=12, valid_versions="0", flexible_versions="0+",
        fields=(
            F("Name", "string", "0+"),
            F("FeatureLevel", "int16", "0+"),
        ),
        notes="A finalized feature level (metadata.version from MV 3.3-IV0, and the "
        "other features; level 0 removes). Kafka keeps this record at v0 for good.",
    ),
    MessageSchema(
        name="ClientQuotaRecord", api_key=14, valid_versions="0", flexible_versions="0+",
        fields=(
            F("Entity", "[]EntityData", "0+", fields=(
                F("EntityType", "string", "0+"),
                F("EntityName", "string", "0+", nullable_versions="0+"),
            )),
            F("Key", "string", "0+"),
            F("Value", "float64", "0+"),
            F("Remove", "bool", "0+"),
        ),
        notes="Sets or removes one client quota value. v0 only.",
    ),
    MessageSchema(
        name="ProducerIdsRecord", api_key=15, valid_versions="0", flexible_versions="0+",
        fields=(
            F("BrokerId", "int32", "0+", entity_type="brokerId"),
            F("BrokerEpoch", "int64", "0+", default=-1),
            F("NextProducerId", "int64", "0+"),
        ),
        notes="The start of the next producer id block to hand out. v0 only.",
    ),
    MessageSchema(
        name="BrokerRegistrationChangeRecord", api_key=17, valid_versions="0-2",
        flexible_versions="0+",
        fields=(
            F("BrokerId", "int32", "0+", entity_type="brokerId"),
            F("BrokerEpoch", "int64", "0+"),
            F("Fenced", "int8", "0+", tag=0, tagged_versions="0+"),
            F("InControlledShutdown", "int8", "1+", tag=1, tagged_versions="1+"),
            F("LogDirs", "[]uuid", "2+", tag=2, tagged_versions="2+"),
        ),
        notes="A change to a registration (Fenced: -1 unfenced, 0 unchanged, 1 fenced). "
        "v0 (3.3, MV 3.3-IV2); v1 (MV 3.3-IV3): InControlledShutdown; "
        "v2 (3.7, MV 3.7-IV2): tagged LogDirs. (v3, CordonedLogDirs, is 4.3.)",
    ),
    MessageSchema(
        name="AccessControlEntryRecord", api_key=18, valid_versions="0",
        flexible_versions="0+",
        fields=(
            F("Id", "uuid", "0+"),
            F("ResourceType", "int8", "0+"),
            F("ResourceName", "string", "0+"),
            F("PatternType", "int8", "0+"),
            F("Principal", "string", "0+"),
            F("Host", "string", "0+"),
            F("Operation", "int8", "0+"),
            F("PermissionType", "int8", "0+"),
        ),
        notes="One ACL, keyed by its id. v0 only in 3.3-4.1.",
    ),
    MessageSchema(
        name="RemoveAccessControlEntryRecord", api_key=19, valid_versions="0",
        flexible_versions="0+",
        fields=(F("Id", "uuid", "0+"),),
        notes="Deletes the ACL with that id. v0 only.",
    ),
    MessageSchema(
        name="NoOpRecord", api_key=20, valid_versions="0", flexible_versions="0+",
        fields=(),
        notes="Empty; the active controller writes it periodically from MV 3.3-IV1 "
        "(KIP-835).",
    ),
    MessageSchema(
        name="ZkMigrationStateRecord", api_key=21, valid_versions="0",
        flexible_versions="0+",
        fields=(F("ZkMigrationState", "int8", "0+"),),
        notes="ZK migration state, from MV 3.4-IV0 (KIP-866). Values in 3.5+: 0 none, "
        "1 migration, 2 pre-migration, 3 post-migration (3.4 had 1 and 2 swapped). The "
        "file is ZkMigrationRecord.json.",
    ),
    MessageSchema(
        name="RemoveUserScramCredentialRecord", api_key=22, valid_versions="0",
        flexible_versions="0+",
        fields=(
            F("Name", "string", "0+"),
            F("Mechanism", "int8", "0+"),
        ),
        notes="Deletes a user's SCRAM credential for one mechanism. From MV 3.5-IV2.",
    ),
    MessageSchema(
        name="BeginTransactionRecord", api_key=23, valid_versions="0",
        flexible_versions="0+",
        fields=(
            F("Name", "string", "0+", nullable_versions="0+",
              tag=0, tagged_versions="0+", default="null"),
        ),
        notes="Opens a metadata transaction (KIP-868), from MV 3.6-IV1.",
    ),
    MessageSchema(
        name="EndTransactionRecord", api_key=24, valid_versions="0", flexible_versions="0+",
        fields=(),
        notes="Commits a metadata transaction, from MV 3.6-IV1.",
    ),
    MessageSchema(
        name="AbortTransactionRecord", api_key=25, valid_versions="0",
        flexible_versions="0+",
        fields=(
            F("Reason", "string", "0+", nullable_versions="0+",
              tag=0, tagged_versions="0+", default="null"),
        ),
        notes="Aborts a metadata transaction, from MV 3.6-IV1.",
    ),
    MessageSchema(
        name="RemoveDelegationTokenRecord", api_key=26, valid_versions="0",
        flexible_versions="0+",
        fields=(F("TokenId", "string", "0+"),),
        notes="Deletes a delegation token, from MV 3.6-IV2.",
    ),
    MessageSchema(
        name="RegisterControllerRecord", api_key=27, valid_versions="0",
        flexible_versions="0+",
        fields=(
            F("ControllerId", "int32", "0+"),
            F("IncarnationId", "uuid", "0+"),
            F("ZkMigrationReady", "bool", "0+"),
            F("EndPoints", "[]ControllerEndpoint", "0+", fields=_ENDPOINT_FIELDS),
            F("Features", "[]ControllerFeature", "0+", fields=_FEATURE_FIELDS),
        ),
        notes="A controller's registration (KIP-919), written from MV 3.7-IV0 "
        "(3.6 code tied it to MV 3.6-IV2).",
    ),
    MessageSchema(
        name="ClearElrRecord", api_key=28, valid_versions="0", flexible_versions="0+",
        fields=(F("TopicName", "string", "0+", entity_type="topicName"),),
        notes="Clears the ELR of one topic, or of all topics when TopicName is empty "
        "(KIP-966 follow-up, 4.0+).",
    ),
)  # fmt: skip

BY_API_KEY: dict[int, MessageSchema] = {
    s.api_key: s for s in METADATA_RECORDS if s.api_key is not None
}
BY_CONTROL_TYPE: dict[int, MessageSchema] = {
    s.control_type: s for s in CONTROL_RECORDS if s.control_type is not None
}
