from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class BrokerEndpoint(_message.Message):
    __slots__ = ("name", "host", "port", "security_protocol")
    NAME_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    SECURITY_PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    name: str
    host: str
    port: int
    security_protocol: int
    def __init__(self, name: _Optional[str] = ..., host: _Optional[str] = ..., port: _Optional[int] = ..., security_protocol: _Optional[int] = ...) -> None: ...

class BrokerFeature(_message.Message):
    __slots__ = ("name", "min_supported_version", "max_supported_version")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MIN_SUPPORTED_VERSION_FIELD_NUMBER: _ClassVar[int]
    MAX_SUPPORTED_VERSION_FIELD_NUMBER: _ClassVar[int]
    name: str
    min_supported_version: int
    max_supported_version: int
    def __init__(self, name: _Optional[str] = ..., min_supported_version: _Optional[int] = ..., max_supported_version: _Optional[int] = ...) -> None: ...

class RegisterBrokerRecord(_message.Message):
    __slots__ = ("broker_id", "is_migrating_zk_broker", "incarnation_id", "broker_epoch", "end_points", "features", "rack", "fenced", "in_controlled_shutdown", "log_dirs")
    BROKER_ID_FIELD_NUMBER: _ClassVar[int]
    IS_MIGRATING_ZK_BROKER_FIELD_NUMBER: _ClassVar[int]
    INCARNATION_ID_FIELD_NUMBER: _ClassVar[int]
    BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    END_POINTS_FIELD_NUMBER: _ClassVar[int]
    FEATURES_FIELD_NUMBER: _ClassVar[int]
    RACK_FIELD_NUMBER: _ClassVar[int]
    FENCED_FIELD_NUMBER: _ClassVar[int]
    IN_CONTROLLED_SHUTDOWN_FIELD_NUMBER: _ClassVar[int]
    LOG_DIRS_FIELD_NUMBER: _ClassVar[int]
    broker_id: int
    is_migrating_zk_broker: bool
    incarnation_id: bytes
    broker_epoch: int
    end_points: _containers.RepeatedCompositeFieldContainer[BrokerEndpoint]
    features: _containers.RepeatedCompositeFieldContainer[BrokerFeature]
    rack: str
    fenced: bool
    in_controlled_shutdown: bool
    log_dirs: _containers.RepeatedScalarFieldContainer[bytes]
    def __init__(self, broker_id: _Optional[int] = ..., is_migrating_zk_broker: _Optional[bool] = ..., incarnation_id: _Optional[bytes] = ..., broker_epoch: _Optional[int] = ..., end_points: _Optional[_Iterable[_Union[BrokerEndpoint, _Mapping]]] = ..., features: _Optional[_Iterable[_Union[BrokerFeature, _Mapping]]] = ..., rack: _Optional[str] = ..., fenced: _Optional[bool] = ..., in_controlled_shutdown: _Optional[bool] = ..., log_dirs: _Optional[_Iterable[bytes]] = ...) -> None: ...

class RegisterControllerRecord(_message.Message):
    __slots__ = ("controller_id", "incarnation_id", "zk_migration_ready", "end_points", "features")
    CONTROLLER_ID_FIELD_NUMBER: _ClassVar[int]
    INCARNATION_ID_FIELD_NUMBER: _ClassVar[int]
    ZK_MIGRATION_READY_FIELD_NUMBER: _ClassVar[int]
    END_POINTS_FIELD_NUMBER: _ClassVar[int]
    FEATURES_FIELD_NUMBER: _ClassVar[int]
    controller_id: int
    incarnation_id: bytes
    zk_migration_ready: bool
    end_points: _containers.RepeatedCompositeFieldContainer[BrokerEndpoint]
    features: _containers.RepeatedCompositeFieldContainer[BrokerFeature]
    def __init__(self, controller_id: _Optional[int] = ..., incarnation_id: _Optional[bytes] = ..., zk_migration_ready: _Optional[bool] = ..., end_points: _Optional[_Iterable[_Union[BrokerEndpoint, _Mapping]]] = ..., features: _Optional[_Iterable[_Union[BrokerFeature, _Mapping]]] = ...) -> None: ...

class UnregisterBrokerRecord(_message.Message):
    __slots__ = ("broker_id", "broker_epoch")
    BROKER_ID_FIELD_NUMBER: _ClassVar[int]
    BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    broker_id: int
    broker_epoch: int
    def __init__(self, broker_id: _Optional[int] = ..., broker_epoch: _Optional[int] = ...) -> None: ...

class FenceBrokerRecord(_message.Message):
    __slots__ = ("id", "epoch")
    ID_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    id: int
    epoch: int
    def __init__(self, id: _Optional[int] = ..., epoch: _Optional[int] = ...) -> None: ...

class UnfenceBrokerRecord(_message.Message):
    __slots__ = ("id", "epoch")
    ID_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    id: int
    epoch: int
    def __init__(self, id: _Optional[int] = ..., epoch: _Optional[int] = ...) -> None: ...

class BrokerRegistrationChangeRecord(_message.Message):
    __slots__ = ("broker_id", "broker_epoch", "fenced", "in_controlled_shutdown", "log_dirs")
    BROKER_ID_FIELD_NUMBER: _ClassVar[int]
    BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    FENCED_FIELD_NUMBER: _ClassVar[int]
    IN_CONTROLLED_SHUTDOWN_FIELD_NUMBER: _ClassVar[int]
    LOG_DIRS_FIELD_NUMBER: _ClassVar[int]
    broker_id: int
    broker_epoch: int
    fenced: bool
    in_controlled_shutdown: bool
    log_dirs: _containers.RepeatedScalarFieldContainer[bytes]
    def __init__(self, broker_id: _Optional[int] = ..., broker_epoch: _Optional[int] = ..., fenced: _Optional[bool] = ..., in_controlled_shutdown: _Optional[bool] = ..., log_dirs: _Optional[_Iterable[bytes]] = ...) -> None: ...

class TopicRecord(_message.Message):
    __slots__ = ("name", "topic_id")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
    name: str
    topic_id: bytes
    def __init__(self, name: _Optional[str] = ..., topic_id: _Optional[bytes] = ...) -> None: ...

class PartitionRecord(_message.Message):
    __slots__ = ("partition_id", "topic_id", "replicas", "isr", "removing_replicas", "adding_replicas", "leader", "leader_recovery_state", "leader_epoch", "partition_epoch", "directories", "eligible_leader_replicas", "last_known_elr")
    PARTITION_ID_FIELD_NUMBER: _ClassVar[int]
    TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    ISR_FIELD_NUMBER: _ClassVar[int]
    REMOVING_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    ADDING_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    LEADER_FIELD_NUMBER: _ClassVar[int]
    LEADER_RECOVERY_STATE_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    PARTITION_EPOCH_FIELD_NUMBER: _ClassVar[int]
    DIRECTORIES_FIELD_NUMBER: _ClassVar[int]
    ELIGIBLE_LEADER_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    LAST_KNOWN_ELR_FIELD_NUMBER: _ClassVar[int]
    partition_id: int
    topic_id: bytes
    replicas: _containers.RepeatedScalarFieldContainer[int]
    isr: _containers.RepeatedScalarFieldContainer[int]
    removing_replicas: _containers.RepeatedScalarFieldContainer[int]
    adding_replicas: _containers.RepeatedScalarFieldContainer[int]
    leader: int
    leader_recovery_state: int
    leader_epoch: int
    partition_epoch: int
    directories: _containers.RepeatedScalarFieldContainer[bytes]
    eligible_leader_replicas: ReplicaList
    last_known_elr: ReplicaList
    def __init__(self, partition_id: _Optional[int] = ..., topic_id: _Optional[bytes] = ..., replicas: _Optional[_Iterable[int]] = ..., isr: _Optional[_Iterable[int]] = ..., removing_replicas: _Optional[_Iterable[int]] = ..., adding_replicas: _Optional[_Iterable[int]] = ..., leader: _Optional[int] = ..., leader_recovery_state: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., partition_epoch: _Optional[int] = ..., directories: _Optional[_Iterable[bytes]] = ..., eligible_leader_replicas: _Optional[_Union[ReplicaList, _Mapping]] = ..., last_known_elr: _Optional[_Union[ReplicaList, _Mapping]] = ...) -> None: ...

class ReplicaList(_message.Message):
    __slots__ = ("ids",)
    IDS_FIELD_NUMBER: _ClassVar[int]
    ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, ids: _Optional[_Iterable[int]] = ...) -> None: ...

class UuidList(_message.Message):
    __slots__ = ("ids",)
    IDS_FIELD_NUMBER: _ClassVar[int]
    ids: _containers.RepeatedScalarFieldContainer[bytes]
    def __init__(self, ids: _Optional[_Iterable[bytes]] = ...) -> None: ...

class PartitionChangeRecord(_message.Message):
    __slots__ = ("partition_id", "topic_id", "isr", "leader", "replicas", "removing_replicas", "adding_replicas", "leader_recovery_state", "directories", "eligible_leader_replicas", "last_known_elr")
    PARTITION_ID_FIELD_NUMBER: _ClassVar[int]
    TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
    ISR_FIELD_NUMBER: _ClassVar[int]
    LEADER_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    REMOVING_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    ADDING_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    LEADER_RECOVERY_STATE_FIELD_NUMBER: _ClassVar[int]
    DIRECTORIES_FIELD_NUMBER: _ClassVar[int]
    ELIGIBLE_LEADER_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    LAST_KNOWN_ELR_FIELD_NUMBER: _ClassVar[int]
    partition_id: int
    topic_id: bytes
    isr: ReplicaList
    leader: int
    replicas: ReplicaList
    removing_replicas: ReplicaList
    adding_replicas: ReplicaList
    leader_recovery_state: int
    directories: UuidList
    eligible_leader_replicas: ReplicaList
    last_known_elr: ReplicaList
    def __init__(self, partition_id: _Optional[int] = ..., topic_id: _Optional[bytes] = ..., isr: _Optional[_Union[ReplicaList, _Mapping]] = ..., leader: _Optional[int] = ..., replicas: _Optional[_Union[ReplicaList, _Mapping]] = ..., removing_replicas: _Optional[_Union[ReplicaList, _Mapping]] = ..., adding_replicas: _Optional[_Union[ReplicaList, _Mapping]] = ..., leader_recovery_state: _Optional[int] = ..., directories: _Optional[_Union[UuidList, _Mapping]] = ..., eligible_leader_replicas: _Optional[_Union[ReplicaList, _Mapping]] = ..., last_known_elr: _Optional[_Union[ReplicaList, _Mapping]] = ...) -> None: ...

class ClearElrRecord(_message.Message):
    __slots__ = ("topic_name",)
    TOPIC_NAME_FIELD_NUMBER: _ClassVar[int]
    topic_name: str
    def __init__(self, topic_name: _Optional[str] = ...) -> None: ...

class RemoveTopicRecord(_message.Message):
    __slots__ = ("topic_id",)
    TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
    topic_id: bytes
    def __init__(self, topic_id: _Optional[bytes] = ...) -> None: ...

class ConfigRecord(_message.Message):
    __slots__ = ("resource_type", "resource_name", "name", "value")
    RESOURCE_TYPE_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_NAME_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    resource_type: int
    resource_name: str
    name: str
    value: str
    def __init__(self, resource_type: _Optional[int] = ..., resource_name: _Optional[str] = ..., name: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...

class QuotaEntityData(_message.Message):
    __slots__ = ("entity_type", "entity_name")
    ENTITY_TYPE_FIELD_NUMBER: _ClassVar[int]
    ENTITY_NAME_FIELD_NUMBER: _ClassVar[int]
    entity_type: str
    entity_name: str
    def __init__(self, entity_type: _Optional[str] = ..., entity_name: _Optional[str] = ...) -> None: ...

class ClientQuotaRecord(_message.Message):
    __slots__ = ("entity", "key", "value", "remove")
    ENTITY_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    REMOVE_FIELD_NUMBER: _ClassVar[int]
    entity: _containers.RepeatedCompositeFieldContainer[QuotaEntityData]
    key: str
    value: float
    remove: bool
    def __init__(self, entity: _Optional[_Iterable[_Union[QuotaEntityData, _Mapping]]] = ..., key: _Optional[str] = ..., value: _Optional[float] = ..., remove: _Optional[bool] = ...) -> None: ...

class UserScramCredentialRecord(_message.Message):
    __slots__ = ("name", "mechanism", "salt", "stored_key", "server_key", "iterations")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MECHANISM_FIELD_NUMBER: _ClassVar[int]
    SALT_FIELD_NUMBER: _ClassVar[int]
    STORED_KEY_FIELD_NUMBER: _ClassVar[int]
    SERVER_KEY_FIELD_NUMBER: _ClassVar[int]
    ITERATIONS_FIELD_NUMBER: _ClassVar[int]
    name: str
    mechanism: int
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int
    def __init__(self, name: _Optional[str] = ..., mechanism: _Optional[int] = ..., salt: _Optional[bytes] = ..., stored_key: _Optional[bytes] = ..., server_key: _Optional[bytes] = ..., iterations: _Optional[int] = ...) -> None: ...

class RemoveUserScramCredentialRecord(_message.Message):
    __slots__ = ("name", "mechanism")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MECHANISM_FIELD_NUMBER: _ClassVar[int]
    name: str
    mechanism: int
    def __init__(self, name: _Optional[str] = ..., mechanism: _Optional[int] = ...) -> None: ...

class DelegationTokenRecord(_message.Message):
    __slots__ = ("owner", "requester", "renewers", "issue_timestamp", "max_timestamp", "expiration_timestamp", "token_id")
    OWNER_FIELD_NUMBER: _ClassVar[int]
    REQUESTER_FIELD_NUMBER: _ClassVar[int]
    RENEWERS_FIELD_NUMBER: _ClassVar[int]
    ISSUE_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    MAX_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    EXPIRATION_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    TOKEN_ID_FIELD_NUMBER: _ClassVar[int]
    owner: str
    requester: str
    renewers: _containers.RepeatedScalarFieldContainer[str]
    issue_timestamp: int
    max_timestamp: int
    expiration_timestamp: int
    token_id: str
    def __init__(self, owner: _Optional[str] = ..., requester: _Optional[str] = ..., renewers: _Optional[_Iterable[str]] = ..., issue_timestamp: _Optional[int] = ..., max_timestamp: _Optional[int] = ..., expiration_timestamp: _Optional[int] = ..., token_id: _Optional[str] = ...) -> None: ...

class RemoveDelegationTokenRecord(_message.Message):
    __slots__ = ("token_id",)
    TOKEN_ID_FIELD_NUMBER: _ClassVar[int]
    token_id: str
    def __init__(self, token_id: _Optional[str] = ...) -> None: ...

class AccessControlEntryRecord(_message.Message):
    __slots__ = ("id", "resource_type", "resource_name", "pattern_type", "principal", "host", "operation", "permission_type")
    ID_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_TYPE_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_NAME_FIELD_NUMBER: _ClassVar[int]
    PATTERN_TYPE_FIELD_NUMBER: _ClassVar[int]
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    PERMISSION_TYPE_FIELD_NUMBER: _ClassVar[int]
    id: bytes
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int
    def __init__(self, id: _Optional[bytes] = ..., resource_type: _Optional[int] = ..., resource_name: _Optional[str] = ..., pattern_type: _Optional[int] = ..., principal: _Optional[str] = ..., host: _Optional[str] = ..., operation: _Optional[int] = ..., permission_type: _Optional[int] = ...) -> None: ...

class RemoveAccessControlEntryRecord(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: bytes
    def __init__(self, id: _Optional[bytes] = ...) -> None: ...

class FeatureLevelRecord(_message.Message):
    __slots__ = ("name", "feature_level")
    NAME_FIELD_NUMBER: _ClassVar[int]
    FEATURE_LEVEL_FIELD_NUMBER: _ClassVar[int]
    name: str
    feature_level: int
    def __init__(self, name: _Optional[str] = ..., feature_level: _Optional[int] = ...) -> None: ...

class ProducerIdsRecord(_message.Message):
    __slots__ = ("broker_id", "broker_epoch", "next_producer_id")
    BROKER_ID_FIELD_NUMBER: _ClassVar[int]
    BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    NEXT_PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
    broker_id: int
    broker_epoch: int
    next_producer_id: int
    def __init__(self, broker_id: _Optional[int] = ..., broker_epoch: _Optional[int] = ..., next_producer_id: _Optional[int] = ...) -> None: ...

class ZkMigrationStateRecord(_message.Message):
    __slots__ = ("zk_migration_state",)
    ZK_MIGRATION_STATE_FIELD_NUMBER: _ClassVar[int]
    zk_migration_state: int
    def __init__(self, zk_migration_state: _Optional[int] = ...) -> None: ...

class NoOpRecord(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class BeginTransactionRecord(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class EndTransactionRecord(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class AbortTransactionRecord(_message.Message):
    __slots__ = ("reason",)
    REASON_FIELD_NUMBER: _ClassVar[int]
    reason: str
    def __init__(self, reason: _Optional[str] = ...) -> None: ...

class Voter(_message.Message):
    __slots__ = ("voter_id", "voter_directory_id")
    VOTER_ID_FIELD_NUMBER: _ClassVar[int]
    VOTER_DIRECTORY_ID_FIELD_NUMBER: _ClassVar[int]
    voter_id: int
    voter_directory_id: bytes
    def __init__(self, voter_id: _Optional[int] = ..., voter_directory_id: _Optional[bytes] = ...) -> None: ...

class LeaderChangeMessage(_message.Message):
    __slots__ = ("leader_id", "voters", "granting_voters", "version")
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    VOTERS_FIELD_NUMBER: _ClassVar[int]
    GRANTING_VOTERS_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    leader_id: int
    voters: _containers.RepeatedCompositeFieldContainer[Voter]
    granting_voters: _containers.RepeatedCompositeFieldContainer[Voter]
    version: int
    def __init__(self, leader_id: _Optional[int] = ..., voters: _Optional[_Iterable[_Union[Voter, _Mapping]]] = ..., granting_voters: _Optional[_Iterable[_Union[Voter, _Mapping]]] = ..., version: _Optional[int] = ...) -> None: ...

class SnapshotHeaderRecord(_message.Message):
    __slots__ = ("last_contained_log_timestamp", "version")
    LAST_CONTAINED_LOG_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    last_contained_log_timestamp: int
    version: int
    def __init__(self, last_contained_log_timestamp: _Optional[int] = ..., version: _Optional[int] = ...) -> None: ...

class SnapshotFooterRecord(_message.Message):
    __slots__ = ("version",)
    VERSION_FIELD_NUMBER: _ClassVar[int]
    version: int
    def __init__(self, version: _Optional[int] = ...) -> None: ...

class KRaftVersionRecord(_message.Message):
    __slots__ = ("version", "k_raft_version")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    K_RAFT_VERSION_FIELD_NUMBER: _ClassVar[int]
    version: int
    k_raft_version: int
    def __init__(self, version: _Optional[int] = ..., k_raft_version: _Optional[int] = ...) -> None: ...

class VoterEndpoint(_message.Message):
    __slots__ = ("name", "host", "port")
    NAME_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    name: str
    host: str
    port: int
    def __init__(self, name: _Optional[str] = ..., host: _Optional[str] = ..., port: _Optional[int] = ...) -> None: ...

class KRaftVersionFeature(_message.Message):
    __slots__ = ("min_supported_version", "max_supported_version")
    MIN_SUPPORTED_VERSION_FIELD_NUMBER: _ClassVar[int]
    MAX_SUPPORTED_VERSION_FIELD_NUMBER: _ClassVar[int]
    min_supported_version: int
    max_supported_version: int
    def __init__(self, min_supported_version: _Optional[int] = ..., max_supported_version: _Optional[int] = ...) -> None: ...

class VotersRecordVoter(_message.Message):
    __slots__ = ("voter_id", "voter_directory_id", "endpoints", "k_raft_version_feature")
    VOTER_ID_FIELD_NUMBER: _ClassVar[int]
    VOTER_DIRECTORY_ID_FIELD_NUMBER: _ClassVar[int]
    ENDPOINTS_FIELD_NUMBER: _ClassVar[int]
    K_RAFT_VERSION_FEATURE_FIELD_NUMBER: _ClassVar[int]
    voter_id: int
    voter_directory_id: bytes
    endpoints: _containers.RepeatedCompositeFieldContainer[VoterEndpoint]
    k_raft_version_feature: KRaftVersionFeature
    def __init__(self, voter_id: _Optional[int] = ..., voter_directory_id: _Optional[bytes] = ..., endpoints: _Optional[_Iterable[_Union[VoterEndpoint, _Mapping]]] = ..., k_raft_version_feature: _Optional[_Union[KRaftVersionFeature, _Mapping]] = ...) -> None: ...

class VotersRecord(_message.Message):
    __slots__ = ("version", "voters")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    VOTERS_FIELD_NUMBER: _ClassVar[int]
    version: int
    voters: _containers.RepeatedCompositeFieldContainer[VotersRecordVoter]
    def __init__(self, version: _Optional[int] = ..., voters: _Optional[_Iterable[_Union[VotersRecordVoter, _Mapping]]] = ...) -> None: ...

class MetadataRecord(_message.Message):
    __slots__ = ("register_broker_record", "unregister_broker_record", "topic_record", "partition_record", "config_record", "partition_change_record", "fence_broker_record", "unfence_broker_record", "remove_topic_record", "delegation_token_record", "user_scram_credential_record", "feature_level_record", "client_quota_record", "producer_ids_record", "remove_delegation_token_record", "broker_registration_change_record", "access_control_entry_record", "remove_access_control_entry_record", "no_op_record", "zk_migration_state_record", "remove_user_scram_credential_record", "begin_transaction_record", "end_transaction_record", "abort_transaction_record", "register_controller_record", "clear_elr_record", "leader_change_message", "snapshot_header_record", "snapshot_footer_record", "k_raft_version_record", "voters_record")
    REGISTER_BROKER_RECORD_FIELD_NUMBER: _ClassVar[int]
    UNREGISTER_BROKER_RECORD_FIELD_NUMBER: _ClassVar[int]
    TOPIC_RECORD_FIELD_NUMBER: _ClassVar[int]
    PARTITION_RECORD_FIELD_NUMBER: _ClassVar[int]
    CONFIG_RECORD_FIELD_NUMBER: _ClassVar[int]
    PARTITION_CHANGE_RECORD_FIELD_NUMBER: _ClassVar[int]
    FENCE_BROKER_RECORD_FIELD_NUMBER: _ClassVar[int]
    UNFENCE_BROKER_RECORD_FIELD_NUMBER: _ClassVar[int]
    REMOVE_TOPIC_RECORD_FIELD_NUMBER: _ClassVar[int]
    DELEGATION_TOKEN_RECORD_FIELD_NUMBER: _ClassVar[int]
    USER_SCRAM_CREDENTIAL_RECORD_FIELD_NUMBER: _ClassVar[int]
    FEATURE_LEVEL_RECORD_FIELD_NUMBER: _ClassVar[int]
    CLIENT_QUOTA_RECORD_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_IDS_RECORD_FIELD_NUMBER: _ClassVar[int]
    REMOVE_DELEGATION_TOKEN_RECORD_FIELD_NUMBER: _ClassVar[int]
    BROKER_REGISTRATION_CHANGE_RECORD_FIELD_NUMBER: _ClassVar[int]
    ACCESS_CONTROL_ENTRY_RECORD_FIELD_NUMBER: _ClassVar[int]
    REMOVE_ACCESS_CONTROL_ENTRY_RECORD_FIELD_NUMBER: _ClassVar[int]
    NO_OP_RECORD_FIELD_NUMBER: _ClassVar[int]
    ZK_MIGRATION_STATE_RECORD_FIELD_NUMBER: _ClassVar[int]
    REMOVE_USER_SCRAM_CREDENTIAL_RECORD_FIELD_NUMBER: _ClassVar[int]
    BEGIN_TRANSACTION_RECORD_FIELD_NUMBER: _ClassVar[int]
    END_TRANSACTION_RECORD_FIELD_NUMBER: _ClassVar[int]
    ABORT_TRANSACTION_RECORD_FIELD_NUMBER: _ClassVar[int]
    REGISTER_CONTROLLER_RECORD_FIELD_NUMBER: _ClassVar[int]
    CLEAR_ELR_RECORD_FIELD_NUMBER: _ClassVar[int]
    LEADER_CHANGE_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_HEADER_RECORD_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_FOOTER_RECORD_FIELD_NUMBER: _ClassVar[int]
    K_RAFT_VERSION_RECORD_FIELD_NUMBER: _ClassVar[int]
    VOTERS_RECORD_FIELD_NUMBER: _ClassVar[int]
    register_broker_record: RegisterBrokerRecord
    unregister_broker_record: UnregisterBrokerRecord
    topic_record: TopicRecord
    partition_record: PartitionRecord
    config_record: ConfigRecord
    partition_change_record: PartitionChangeRecord
    fence_broker_record: FenceBrokerRecord
    unfence_broker_record: UnfenceBrokerRecord
    remove_topic_record: RemoveTopicRecord
    delegation_token_record: DelegationTokenRecord
    user_scram_credential_record: UserScramCredentialRecord
    feature_level_record: FeatureLevelRecord
    client_quota_record: ClientQuotaRecord
    producer_ids_record: ProducerIdsRecord
    remove_delegation_token_record: RemoveDelegationTokenRecord
    broker_registration_change_record: BrokerRegistrationChangeRecord
    access_control_entry_record: AccessControlEntryRecord
    remove_access_control_entry_record: RemoveAccessControlEntryRecord
    no_op_record: NoOpRecord
    zk_migration_state_record: ZkMigrationStateRecord
    remove_user_scram_credential_record: RemoveUserScramCredentialRecord
    begin_transaction_record: BeginTransactionRecord
    end_transaction_record: EndTransactionRecord
    abort_transaction_record: AbortTransactionRecord
    register_controller_record: RegisterControllerRecord
    clear_elr_record: ClearElrRecord
    leader_change_message: LeaderChangeMessage
    snapshot_header_record: SnapshotHeaderRecord
    snapshot_footer_record: SnapshotFooterRecord
    k_raft_version_record: KRaftVersionRecord
    voters_record: VotersRecord
    def __init__(self, register_broker_record: _Optional[_Union[RegisterBrokerRecord, _Mapping]] = ..., unregister_broker_record: _Optional[_Union[UnregisterBrokerRecord, _Mapping]] = ..., topic_record: _Optional[_Union[TopicRecord, _Mapping]] = ..., partition_record: _Optional[_Union[PartitionRecord, _Mapping]] = ..., config_record: _Optional[_Union[ConfigRecord, _Mapping]] = ..., partition_change_record: _Optional[_Union[PartitionChangeRecord, _Mapping]] = ..., fence_broker_record: _Optional[_Union[FenceBrokerRecord, _Mapping]] = ..., unfence_broker_record: _Optional[_Union[UnfenceBrokerRecord, _Mapping]] = ..., remove_topic_record: _Optional[_Union[RemoveTopicRecord, _Mapping]] = ..., delegation_token_record: _Optional[_Union[DelegationTokenRecord, _Mapping]] = ..., user_scram_credential_record: _Optional[_Union[UserScramCredentialRecord, _Mapping]] = ..., feature_level_record: _Optional[_Union[FeatureLevelRecord, _Mapping]] = ..., client_quota_record: _Optional[_Union[ClientQuotaRecord, _Mapping]] = ..., producer_ids_record: _Optional[_Union[ProducerIdsRecord, _Mapping]] = ..., remove_delegation_token_record: _Optional[_Union[RemoveDelegationTokenRecord, _Mapping]] = ..., broker_registration_change_record: _Optional[_Union[BrokerRegistrationChangeRecord, _Mapping]] = ..., access_control_entry_record: _Optional[_Union[AccessControlEntryRecord, _Mapping]] = ..., remove_access_control_entry_record: _Optional[_Union[RemoveAccessControlEntryRecord, _Mapping]] = ..., no_op_record: _Optional[_Union[NoOpRecord, _Mapping]] = ..., zk_migration_state_record: _Optional[_Union[ZkMigrationStateRecord, _Mapping]] = ..., remove_user_scram_credential_record: _Optional[_Union[RemoveUserScramCredentialRecord, _Mapping]] = ..., begin_transaction_record: _Optional[_Union[BeginTransactionRecord, _Mapping]] = ..., end_transaction_record: _Optional[_Union[EndTransactionRecord, _Mapping]] = ..., abort_transaction_record: _Optional[_Union[AbortTransactionRecord, _Mapping]] = ..., register_controller_record: _Optional[_Union[RegisterControllerRecord, _Mapping]] = ..., clear_elr_record: _Optional[_Union[ClearElrRecord, _Mapping]] = ..., leader_change_message: _Optional[_Union[LeaderChangeMessage, _Mapping]] = ..., snapshot_header_record: _Optional[_Union[SnapshotHeaderRecord, _Mapping]] = ..., snapshot_footer_record: _Optional[_Union[SnapshotFooterRecord, _Mapping]] = ..., k_raft_version_record: _Optional[_Union[KRaftVersionRecord, _Mapping]] = ..., voters_record: _Optional[_Union[VotersRecord, _Mapping]] = ...) -> None: ...

class RecordBatchPayload(_message.Message):
    __slots__ = ("records",)
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    records: _containers.RepeatedCompositeFieldContainer[MetadataRecord]
    def __init__(self, records: _Optional[_Iterable[_Union[MetadataRecord, _Mapping]]] = ...) -> None: ...
