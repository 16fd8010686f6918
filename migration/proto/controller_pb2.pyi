from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class RequestError(_message.Message):
    __slots__ = ("error_code", "error_message", "controller_id", "controller_endpoint")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_ID_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    controller_id: int
    controller_endpoint: str
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., controller_id: _Optional[int] = ..., controller_endpoint: _Optional[str] = ...) -> None: ...

class ItemResult(_message.Message):
    __slots__ = ("name", "error_code", "error_message")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    name: str
    error_code: int
    error_message: str
    def __init__(self, name: _Optional[str] = ..., error_code: _Optional[int] = ..., error_message: _Optional[str] = ...) -> None: ...

class CreatableTopic(_message.Message):
    __slots__ = ("name", "num_partitions", "replication_factor", "configs")
    class ConfigsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    NUM_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    REPLICATION_FACTOR_FIELD_NUMBER: _ClassVar[int]
    CONFIGS_FIELD_NUMBER: _ClassVar[int]
    name: str
    num_partitions: int
    replication_factor: int
    configs: _containers.ScalarMap[str, str]
    def __init__(self, name: _Optional[str] = ..., num_partitions: _Optional[int] = ..., replication_factor: _Optional[int] = ..., configs: _Optional[_Mapping[str, str]] = ...) -> None: ...

class CreateTopicsRequest(_message.Message):
    __slots__ = ("topics", "validate_only")
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    VALIDATE_ONLY_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[CreatableTopic]
    validate_only: bool
    def __init__(self, topics: _Optional[_Iterable[_Union[CreatableTopic, _Mapping]]] = ..., validate_only: _Optional[bool] = ...) -> None: ...

class CreatableTopicResult(_message.Message):
    __slots__ = ("name", "topic_id", "error_code", "error_message", "num_partitions", "replication_factor")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    NUM_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    REPLICATION_FACTOR_FIELD_NUMBER: _ClassVar[int]
    name: str
    topic_id: str
    error_code: int
    error_message: str
    num_partitions: int
    replication_factor: int
    def __init__(self, name: _Optional[str] = ..., topic_id: _Optional[str] = ..., error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., num_partitions: _Optional[int] = ..., replication_factor: _Optional[int] = ...) -> None: ...

class CreateTopicsResponse(_message.Message):
    __slots__ = ("error", "topics")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    error: RequestError
    topics: _containers.RepeatedCompositeFieldContainer[CreatableTopicResult]
    def __init__(self, error: _Optional[_Union[RequestError, _Mapping]] = ..., topics: _Optional[_Iterable[_Union[CreatableTopicResult, _Mapping]]] = ...) -> None: ...

class DeleteTopicsRequest(_message.Message):
    __slots__ = ("topic_names",)
    TOPIC_NAMES_FIELD_NUMBER: _ClassVar[int]
    topic_names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, topic_names: _Optional[_Iterable[str]] = ...) -> None: ...

class CreatePartitionsTopic(_message.Message):
    __slots__ = ("name", "count")
    NAME_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    name: str
    count: int
    def __init__(self, name: _Optional[str] = ..., count: _Optional[int] = ...) -> None: ...

class CreatePartitionsRequest(_message.Message):
    __slots__ = ("topics",)
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[CreatePartitionsTopic]
    def __init__(self, topics: _Optional[_Iterable[_Union[CreatePartitionsTopic, _Mapping]]] = ...) -> None: ...

class ItemsResponse(_message.Message):
    __slots__ = ("error", "results")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    error: RequestError
    results: _containers.RepeatedCompositeFieldContainer[ItemResult]
    def __init__(self, error: _Optional[_Union[RequestError, _Mapping]] = ..., results: _Optional[_Iterable[_Union[ItemResult, _Mapping]]] = ...) -> None: ...

class AlterableConfig(_message.Message):
    __slots__ = ("name", "config_operation", "value")
    NAME_FIELD_NUMBER: _ClassVar[int]
    CONFIG_OPERATION_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    name: str
    config_operation: int
    value: str
    def __init__(self, name: _Optional[str] = ..., config_operation: _Optional[int] = ..., value: _Optional[str] = ...) -> None: ...

class AlterConfigsResource(_message.Message):
    __slots__ = ("resource_type", "resource_name", "configs")
    RESOURCE_TYPE_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_NAME_FIELD_NUMBER: _ClassVar[int]
    CONFIGS_FIELD_NUMBER: _ClassVar[int]
    resource_type: int
    resource_name: str
    configs: _containers.RepeatedCompositeFieldContainer[AlterableConfig]
    def __init__(self, resource_type: _Optional[int] = ..., resource_name: _Optional[str] = ..., configs: _Optional[_Iterable[_Union[AlterableConfig, _Mapping]]] = ...) -> None: ...

class IncrementalAlterConfigsRequest(_message.Message):
    __slots__ = ("resources",)
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    resources: _containers.RepeatedCompositeFieldContainer[AlterConfigsResource]
    def __init__(self, resources: _Optional[_Iterable[_Union[AlterConfigsResource, _Mapping]]] = ...) -> None: ...

class DescribeConfigsRequest(_message.Message):
    __slots__ = ("resource_type", "resource_name")
    RESOURCE_TYPE_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_NAME_FIELD_NUMBER: _ClassVar[int]
    resource_type: int
    resource_name: str
    def __init__(self, resource_type: _Optional[int] = ..., resource_name: _Optional[str] = ...) -> None: ...

class DescribeConfigsResponse(_message.Message):
    __slots__ = ("error", "error_code", "error_message", "configs")
    class ConfigsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ERROR_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    CONFIGS_FIELD_NUMBER: _ClassVar[int]
    error: RequestError
    error_code: int
    error_message: str
    configs: _containers.ScalarMap[str, str]
    def __init__(self, error: _Optional[_Union[RequestError, _Mapping]] = ..., error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., configs: _Optional[_Mapping[str, str]] = ...) -> None: ...

class AclBinding(_message.Message):
    __slots__ = ("resource_type", "resource_name", "pattern_type", "principal", "host", "operation", "permission_type")
    RESOURCE_TYPE_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_NAME_FIELD_NUMBER: _ClassVar[int]
    PATTERN_TYPE_FIELD_NUMBER: _ClassVar[int]
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    PERMISSION_TYPE_FIELD_NUMBER: _ClassVar[int]
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int
    def __init__(self, resource_type: _Optional[int] = ..., resource_name: _Optional[str] = ..., pattern_type: _Optional[int] = ..., principal: _Optional[str] = ..., host: _Optional[str] = ..., operation: _Optional[int] = ..., permission_type: _Optional[int] = ...) -> None: ...

class CreateAclsRequest(_message.Message):
    __slots__ = ("creations",)
    CREATIONS_FIELD_NUMBER: _ClassVar[int]
    creations: _containers.RepeatedCompositeFieldContainer[AclBinding]
    def __init__(self, creations: _Optional[_Iterable[_Union[AclBinding, _Mapping]]] = ...) -> None: ...

class AclFilter(_message.Message):
    __slots__ = ("resource_type", "resource_name", "pattern_type", "principal", "host", "operation", "permission_type")
    RESOURCE_TYPE_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_NAME_FIELD_NUMBER: _ClassVar[int]
    PATTERN_TYPE_FIELD_NUMBER: _ClassVar[int]
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    PERMISSION_TYPE_FIELD_NUMBER: _ClassVar[int]
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int
    def __init__(self, resource_type: _Optional[int] = ..., resource_name: _Optional[str] = ..., pattern_type: _Optional[int] = ..., principal: _Optional[str] = ..., host: _Optional[str] = ..., operation: _Optional[int] = ..., permission_type: _Optional[int] = ...) -> None: ...

class DeleteAclsRequest(_message.Message):
    __slots__ = ("filters",)
    FILTERS_FIELD_NUMBER: _ClassVar[int]
    filters: _containers.RepeatedCompositeFieldContainer[AclFilter]
    def __init__(self, filters: _Optional[_Iterable[_Union[AclFilter, _Mapping]]] = ...) -> None: ...

class DescribeAclsRequest(_message.Message):
    __slots__ = ("filter",)
    FILTER_FIELD_NUMBER: _ClassVar[int]
    filter: AclFilter
    def __init__(self, filter: _Optional[_Union[AclFilter, _Mapping]] = ...) -> None: ...

class AclsResponse(_message.Message):
    __slots__ = ("error", "results", "acls")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    ACLS_FIELD_NUMBER: _ClassVar[int]
    error: RequestError
    results: _containers.RepeatedCompositeFieldContainer[ItemResult]
    acls: _containers.RepeatedCompositeFieldContainer[AclBinding]
    def __init__(self, error: _Optional[_Union[RequestError, _Mapping]] = ..., results: _Optional[_Iterable[_Union[ItemResult, _Mapping]]] = ..., acls: _Optional[_Iterable[_Union[AclBinding, _Mapping]]] = ...) -> None: ...

class QuotaEntity(_message.Message):
    __slots__ = ("entity_type", "entity_name")
    ENTITY_TYPE_FIELD_NUMBER: _ClassVar[int]
    ENTITY_NAME_FIELD_NUMBER: _ClassVar[int]
    entity_type: str
    entity_name: str
    def __init__(self, entity_type: _Optional[str] = ..., entity_name: _Optional[str] = ...) -> None: ...

class QuotaOp(_message.Message):
    __slots__ = ("key", "value", "remove")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    REMOVE_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: float
    remove: bool
    def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ..., remove: _Optional[bool] = ...) -> None: ...

class QuotaEntry(_message.Message):
    __slots__ = ("entity", "ops")
    ENTITY_FIELD_NUMBER: _ClassVar[int]
    OPS_FIELD_NUMBER: _ClassVar[int]
    entity: _containers.RepeatedCompositeFieldContainer[QuotaEntity]
    ops: _containers.RepeatedCompositeFieldContainer[QuotaOp]
    def __init__(self, entity: _Optional[_Iterable[_Union[QuotaEntity, _Mapping]]] = ..., ops: _Optional[_Iterable[_Union[QuotaOp, _Mapping]]] = ...) -> None: ...

class AlterClientQuotasRequest(_message.Message):
    __slots__ = ("entries",)
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[QuotaEntry]
    def __init__(self, entries: _Optional[_Iterable[_Union[QuotaEntry, _Mapping]]] = ...) -> None: ...

class DescribeClientQuotasRequest(_message.Message):
    __slots__ = ("entity",)
    ENTITY_FIELD_NUMBER: _ClassVar[int]
    entity: _containers.RepeatedCompositeFieldContainer[QuotaEntity]
    def __init__(self, entity: _Optional[_Iterable[_Union[QuotaEntity, _Mapping]]] = ...) -> None: ...

class DescribeClientQuotasResponse(_message.Message):
    __slots__ = ("error", "quotas")
    class QuotasEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    ERROR_FIELD_NUMBER: _ClassVar[int]
    QUOTAS_FIELD_NUMBER: _ClassVar[int]
    error: RequestError
    quotas: _containers.ScalarMap[str, float]
    def __init__(self, error: _Optional[_Union[RequestError, _Mapping]] = ..., quotas: _Optional[_Mapping[str, float]] = ...) -> None: ...

class ScramDeletion(_message.Message):
    __slots__ = ("name", "mechanism")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MECHANISM_FIELD_NUMBER: _ClassVar[int]
    name: str
    mechanism: int
    def __init__(self, name: _Optional[str] = ..., mechanism: _Optional[int] = ...) -> None: ...

class ScramUpsertion(_message.Message):
    __slots__ = ("name", "mechanism", "iterations", "salt", "salted_password")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MECHANISM_FIELD_NUMBER: _ClassVar[int]
    ITERATIONS_FIELD_NUMBER: _ClassVar[int]
    SALT_FIELD_NUMBER: _ClassVar[int]
    SALTED_PASSWORD_FIELD_NUMBER: _ClassVar[int]
    name: str
    mechanism: int
    iterations: int
    salt: bytes
    salted_password: bytes
    def __init__(self, name: _Optional[str] = ..., mechanism: _Optional[int] = ..., iterations: _Optional[int] = ..., salt: _Optional[bytes] = ..., salted_password: _Optional[bytes] = ...) -> None: ...

class AlterUserScramCredentialsRequest(_message.Message):
    __slots__ = ("deletions", "upsertions")
    DELETIONS_FIELD_NUMBER: _ClassVar[int]
    UPSERTIONS_FIELD_NUMBER: _ClassVar[int]
    deletions: _containers.RepeatedCompositeFieldContainer[ScramDeletion]
    upsertions: _containers.RepeatedCompositeFieldContainer[ScramUpsertion]
    def __init__(self, deletions: _Optional[_Iterable[_Union[ScramDeletion, _Mapping]]] = ..., upsertions: _Optional[_Iterable[_Union[ScramUpsertion, _Mapping]]] = ...) -> None: ...

class AllocateProducerIdsRequest(_message.Message):
    __slots__ = ("broker_id", "broker_epoch")
    BROKER_ID_FIELD_NUMBER: _ClassVar[int]
    BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    broker_id: int
    broker_epoch: int
    def __init__(self, broker_id: _Optional[int] = ..., broker_epoch: _Optional[int] = ...) -> None: ...

class AllocateProducerIdsResponse(_message.Message):
    __slots__ = ("error", "error_code", "producer_id_start", "producer_id_len")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_ID_START_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_ID_LEN_FIELD_NUMBER: _ClassVar[int]
    error: RequestError
    error_code: int
    producer_id_start: int
    producer_id_len: int
    def __init__(self, error: _Optional[_Union[RequestError, _Mapping]] = ..., error_code: _Optional[int] = ..., producer_id_start: _Optional[int] = ..., producer_id_len: _Optional[int] = ...) -> None: ...

class PartitionState(_message.Message):
    __slots__ = ("partition_index", "leader_id", "leader_epoch", "replicas", "isr", "partition_epoch", "leader_recovery_state", "error_code")
    PARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    ISR_FIELD_NUMBER: _ClassVar[int]
    PARTITION_EPOCH_FIELD_NUMBER: _ClassVar[int]
    LEADER_RECOVERY_STATE_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    partition_index: int
    leader_id: int
    leader_epoch: int
    replicas: _containers.RepeatedScalarFieldContainer[int]
    isr: _containers.RepeatedScalarFieldContainer[int]
    partition_epoch: int
    leader_recovery_state: int
    error_code: int
    def __init__(self, partition_index: _Optional[int] = ..., leader_id: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., replicas: _Optional[_Iterable[int]] = ..., isr: _Optional[_Iterable[int]] = ..., partition_epoch: _Optional[int] = ..., leader_recovery_state: _Optional[int] = ..., error_code: _Optional[int] = ...) -> None: ...

class AlterPartitionTopic(_message.Message):
    __slots__ = ("topic_id", "partitions")
    TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    topic_id: str
    partitions: _containers.RepeatedCompositeFieldContainer[PartitionState]
    def __init__(self, topic_id: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[PartitionState, _Mapping]]] = ...) -> None: ...

class AlterPartitionRequest(_message.Message):
    __slots__ = ("broker_id", "broker_epoch", "topics")
    BROKER_ID_FIELD_NUMBER: _ClassVar[int]
    BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    broker_id: int
    broker_epoch: int
    topics: _containers.RepeatedCompositeFieldContainer[AlterPartitionTopic]
    def __init__(self, broker_id: _Optional[int] = ..., broker_epoch: _Optional[int] = ..., topics: _Optional[_Iterable[_Union[AlterPartitionTopic, _Mapping]]] = ...) -> None: ...

class AlterPartitionResponse(_message.Message):
    __slots__ = ("error", "topics")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    error: RequestError
    topics: _containers.RepeatedCompositeFieldContainer[AlterPartitionTopic]
    def __init__(self, error: _Optional[_Union[RequestError, _Mapping]] = ..., topics: _Optional[_Iterable[_Union[AlterPartitionTopic, _Mapping]]] = ...) -> None: ...

class ReassignablePartition(_message.Message):
    __slots__ = ("partition_index", "cancel", "replicas")
    PARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
    CANCEL_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    partition_index: int
    cancel: bool
    replicas: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, partition_index: _Optional[int] = ..., cancel: _Optional[bool] = ..., replicas: _Optional[_Iterable[int]] = ...) -> None: ...

class ReassignableTopic(_message.Message):
    __slots__ = ("name", "partitions")
    NAME_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    name: str
    partitions: _containers.RepeatedCompositeFieldContainer[ReassignablePartition]
    def __init__(self, name: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[ReassignablePartition, _Mapping]]] = ...) -> None: ...

class AlterPartitionReassignmentsRequest(_message.Message):
    __slots__ = ("topics", "allow_replication_factor_change")
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    ALLOW_REPLICATION_FACTOR_CHANGE_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[ReassignableTopic]
    allow_replication_factor_change: bool
    def __init__(self, topics: _Optional[_Iterable[_Union[ReassignableTopic, _Mapping]]] = ..., allow_replication_factor_change: _Optional[bool] = ...) -> None: ...

class ReassignablePartitionResult(_message.Message):
    __slots__ = ("partition_index", "error_code", "error_message")
    PARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    partition_index: int
    error_code: int
    error_message: str
    def __init__(self, partition_index: _Optional[int] = ..., error_code: _Optional[int] = ..., error_message: _Optional[str] = ...) -> None: ...

class ReassignableTopicResult(_message.Message):
    __slots__ = ("name", "partitions")
    NAME_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    name: str
    partitions: _containers.RepeatedCompositeFieldContainer[ReassignablePartitionResult]
    def __init__(self, name: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[ReassignablePartitionResult, _Mapping]]] = ...) -> None: ...

class AlterPartitionReassignmentsResponse(_message.Message):
    __slots__ = ("error", "responses")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    RESPONSES_FIELD_NUMBER: _ClassVar[int]
    error: RequestError
    responses: _containers.RepeatedCompositeFieldContainer[ReassignableTopicResult]
    def __init__(self, error: _Optional[_Union[RequestError, _Mapping]] = ..., responses: _Optional[_Iterable[_Union[ReassignableTopicResult, _Mapping]]] = ...) -> None: ...

class ListPartitionReassignmentsTopic(_message.Message):
    __slots__ = ("name", "partition_indexes")
    NAME_FIELD_NUMBER: _ClassVar[int]
    PARTITION_INDEXES_FIELD_NUMBER: _ClassVar[int]
    name: str
    partition_indexes: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, name: _Optional[str] = ..., partition_indexes: _Optional[_Iterable[int]] = ...) -> None: ...

class ListPartitionReassignmentsRequest(_message.Message):
    __slots__ = ("all_topics", "topics")
    ALL_TOPICS_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    all_topics: bool
    topics: _containers.RepeatedCompositeFieldContainer[ListPartitionReassignmentsTopic]
    def __init__(self, all_topics: _Optional[bool] = ..., topics: _Optional[_Iterable[_Union[ListPartitionReassignmentsTopic, _Mapping]]] = ...) -> None: ...

class OngoingPartitionReassignment(_message.Message):
    __slots__ = ("partition_index", "replicas", "adding_replicas", "removing_replicas")
    PARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    ADDING_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    REMOVING_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    partition_index: int
    replicas: _containers.RepeatedScalarFieldContainer[int]
    adding_replicas: _containers.RepeatedScalarFieldContainer[int]
    removing_replicas: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, partition_index: _Optional[int] = ..., replicas: _Optional[_Iterable[int]] = ..., adding_replicas: _Optional[_Iterable[int]] = ..., removing_replicas: _Optional[_Iterable[int]] = ...) -> None: ...

class OngoingTopicReassignment(_message.Message):
    __slots__ = ("name", "partitions")
    NAME_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    name: str
    partitions: _containers.RepeatedCompositeFieldContainer[OngoingPartitionReassignment]
    def __init__(self, name: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[OngoingPartitionReassignment, _Mapping]]] = ...) -> None: ...

class ListPartitionReassignmentsResponse(_message.Message):
    __slots__ = ("error", "topics")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    error: RequestError
    topics: _containers.RepeatedCompositeFieldContainer[OngoingTopicReassignment]
    def __init__(self, error: _Optional[_Union[RequestError, _Mapping]] = ..., topics: _Optional[_Iterable[_Union[OngoingTopicReassignment, _Mapping]]] = ...) -> None: ...

class Listener(_message.Message):
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

class SupportedFeature(_message.Message):
    __slots__ = ("name", "min_supported_version", "max_supported_version")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MIN_SUPPORTED_VERSION_FIELD_NUMBER: _ClassVar[int]
    MAX_SUPPORTED_VERSION_FIELD_NUMBER: _ClassVar[int]
    name: str
    min_supported_version: int
    max_supported_version: int
    def __init__(self, name: _Optional[str] = ..., min_supported_version: _Optional[int] = ..., max_supported_version: _Optional[int] = ...) -> None: ...

class BrokerRegistrationRequest(_message.Message):
    __slots__ = ("broker_id", "cluster_id", "incarnation_id", "listeners", "features", "rack", "is_migrating_zk_broker")
    BROKER_ID_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    INCARNATION_ID_FIELD_NUMBER: _ClassVar[int]
    LISTENERS_FIELD_NUMBER: _ClassVar[int]
    FEATURES_FIELD_NUMBER: _ClassVar[int]
    RACK_FIELD_NUMBER: _ClassVar[int]
    IS_MIGRATING_ZK_BROKER_FIELD_NUMBER: _ClassVar[int]
    broker_id: int
    cluster_id: str
    incarnation_id: bytes
    listeners: _containers.RepeatedCompositeFieldContainer[Listener]
    features: _containers.RepeatedCompositeFieldContainer[SupportedFeature]
    rack: str
    is_migrating_zk_broker: bool
    def __init__(self, broker_id: _Optional[int] = ..., cluster_id: _Optional[str] = ..., incarnation_id: _Optional[bytes] = ..., listeners: _Optional[_Iterable[_Union[Listener, _Mapping]]] = ..., features: _Optional[_Iterable[_Union[SupportedFeature, _Mapping]]] = ..., rack: _Optional[str] = ..., is_migrating_zk_broker: _Optional[bool] = ...) -> None: ...

class BrokerRegistrationResponse(_message.Message):
    __slots__ = ("error", "error_code", "broker_epoch")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    error: RequestError
    error_code: int
    broker_epoch: int
    def __init__(self, error: _Optional[_Union[RequestError, _Mapping]] = ..., error_code: _Optional[int] = ..., broker_epoch: _Optional[int] = ...) -> None: ...

class BrokerHeartbeatRequest(_message.Message):
    __slots__ = ("broker_id", "broker_epoch", "current_metadata_offset", "want_fence", "want_shut_down")
    BROKER_ID_FIELD_NUMBER: _ClassVar[int]
    BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    CURRENT_METADATA_OFFSET_FIELD_NUMBER: _ClassVar[int]
    WANT_FENCE_FIELD_NUMBER: _ClassVar[int]
    WANT_SHUT_DOWN_FIELD_NUMBER: _ClassVar[int]
    broker_id: int
    broker_epoch: int
    current_metadata_offset: int
    want_fence: bool
    want_shut_down: bool
    def __init__(self, broker_id: _Optional[int] = ..., broker_epoch: _Optional[int] = ..., current_metadata_offset: _Optional[int] = ..., want_fence: _Optional[bool] = ..., want_shut_down: _Optional[bool] = ...) -> None: ...

class BrokerHeartbeatResponse(_message.Message):
    __slots__ = ("error", "error_code", "is_caught_up", "is_fenced", "should_shut_down")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    IS_CAUGHT_UP_FIELD_NUMBER: _ClassVar[int]
    IS_FENCED_FIELD_NUMBER: _ClassVar[int]
    SHOULD_SHUT_DOWN_FIELD_NUMBER: _ClassVar[int]
    error: RequestError
    error_code: int
    is_caught_up: bool
    is_fenced: bool
    should_shut_down: bool
    def __init__(self, error: _Optional[_Union[RequestError, _Mapping]] = ..., error_code: _Optional[int] = ..., is_caught_up: _Optional[bool] = ..., is_fenced: _Optional[bool] = ..., should_shut_down: _Optional[bool] = ...) -> None: ...

class DescribeClusterRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class BrokerDescription(_message.Message):
    __slots__ = ("broker_id", "host", "port", "rack", "fenced", "in_controlled_shutdown", "broker_epoch")
    BROKER_ID_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    RACK_FIELD_NUMBER: _ClassVar[int]
    FENCED_FIELD_NUMBER: _ClassVar[int]
    IN_CONTROLLED_SHUTDOWN_FIELD_NUMBER: _ClassVar[int]
    BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    broker_id: int
    host: str
    port: int
    rack: str
    fenced: bool
    in_controlled_shutdown: bool
    broker_epoch: int
    def __init__(self, broker_id: _Optional[int] = ..., host: _Optional[str] = ..., port: _Optional[int] = ..., rack: _Optional[str] = ..., fenced: _Optional[bool] = ..., in_controlled_shutdown: _Optional[bool] = ..., broker_epoch: _Optional[int] = ...) -> None: ...

class DescribeClusterResponse(_message.Message):
    __slots__ = ("error", "cluster_id", "controller_id", "brokers", "metadata_offset")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_ID_FIELD_NUMBER: _ClassVar[int]
    BROKERS_FIELD_NUMBER: _ClassVar[int]
    METADATA_OFFSET_FIELD_NUMBER: _ClassVar[int]
    error: RequestError
    cluster_id: str
    controller_id: int
    brokers: _containers.RepeatedCompositeFieldContainer[BrokerDescription]
    metadata_offset: int
    def __init__(self, error: _Optional[_Union[RequestError, _Mapping]] = ..., cluster_id: _Optional[str] = ..., controller_id: _Optional[int] = ..., brokers: _Optional[_Iterable[_Union[BrokerDescription, _Mapping]]] = ..., metadata_offset: _Optional[int] = ...) -> None: ...

class MetadataRequest(_message.Message):
    __slots__ = ("topics",)
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, topics: _Optional[_Iterable[str]] = ...) -> None: ...

class TopicMetadata(_message.Message):
    __slots__ = ("name", "topic_id", "error_code", "partitions")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    name: str
    topic_id: str
    error_code: int
    partitions: _containers.RepeatedCompositeFieldContainer[PartitionState]
    def __init__(self, name: _Optional[str] = ..., topic_id: _Optional[str] = ..., error_code: _Optional[int] = ..., partitions: _Optional[_Iterable[_Union[PartitionState, _Mapping]]] = ...) -> None: ...

class MetadataResponse(_message.Message):
    __slots__ = ("error", "topics")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    error: RequestError
    topics: _containers.RepeatedCompositeFieldContainer[TopicMetadata]
    def __init__(self, error: _Optional[_Union[RequestError, _Mapping]] = ..., topics: _Optional[_Iterable[_Union[TopicMetadata, _Mapping]]] = ...) -> None: ...

class DescribeMigrationRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class DescribeMigrationResponse(_message.Message):
    __slots__ = ("error", "node_id", "active_controller", "is_active", "kraft_epoch", "state_code", "zk_migration_state_code", "driver_phase", "outcome", "zk_controller_epoch", "migration_znode_json", "high_watermark", "zk_write_behind_lag", "zk_brokers", "kraft_brokers", "metadata_version", "zk_migration_enabled", "cluster_id", "metrics_endpoint")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_CONTROLLER_FIELD_NUMBER: _ClassVar[int]
    IS_ACTIVE_FIELD_NUMBER: _ClassVar[int]
    KRAFT_EPOCH_FIELD_NUMBER: _ClassVar[int]
    STATE_CODE_FIELD_NUMBER: _ClassVar[int]
    ZK_MIGRATION_STATE_CODE_FIELD_NUMBER: _ClassVar[int]
    DRIVER_PHASE_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    ZK_CONTROLLER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    MIGRATION_ZNODE_JSON_FIELD_NUMBER: _ClassVar[int]
    HIGH_WATERMARK_FIELD_NUMBER: _ClassVar[int]
    ZK_WRITE_BEHIND_LAG_FIELD_NUMBER: _ClassVar[int]
    ZK_BROKERS_FIELD_NUMBER: _ClassVar[int]
    KRAFT_BROKERS_FIELD_NUMBER: _ClassVar[int]
    METADATA_VERSION_FIELD_NUMBER: _ClassVar[int]
    ZK_MIGRATION_ENABLED_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    METRICS_ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    error: RequestError
    node_id: int
    active_controller: int
    is_active: bool
    kraft_epoch: int
    state_code: int
    zk_migration_state_code: int
    driver_phase: str
    outcome: str
    zk_controller_epoch: int
    migration_znode_json: str
    high_watermark: int
    zk_write_behind_lag: int
    zk_brokers: _containers.RepeatedScalarFieldContainer[int]
    kraft_brokers: _containers.RepeatedScalarFieldContainer[int]
    metadata_version: int
    zk_migration_enabled: bool
    cluster_id: str
    metrics_endpoint: str
    def __init__(self, error: _Optional[_Union[RequestError, _Mapping]] = ..., node_id: _Optional[int] = ..., active_controller: _Optional[int] = ..., is_active: _Optional[bool] = ..., kraft_epoch: _Optional[int] = ..., state_code: _Optional[int] = ..., zk_migration_state_code: _Optional[int] = ..., driver_phase: _Optional[str] = ..., outcome: _Optional[str] = ..., zk_controller_epoch: _Optional[int] = ..., migration_znode_json: _Optional[str] = ..., high_watermark: _Optional[int] = ..., zk_write_behind_lag: _Optional[int] = ..., zk_brokers: _Optional[_Iterable[int]] = ..., kraft_brokers: _Optional[_Iterable[int]] = ..., metadata_version: _Optional[int] = ..., zk_migration_enabled: _Optional[bool] = ..., cluster_id: _Optional[str] = ..., metrics_endpoint: _Optional[str] = ...) -> None: ...

class ReportAuditRequest(_message.Message):
    __slots__ = ("consistent", "differences", "offset", "log_end_offset", "finished_ms", "seconds")
    CONSISTENT_FIELD_NUMBER: _ClassVar[int]
    DIFFERENCES_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    LOG_END_OFFSET_FIELD_NUMBER: _ClassVar[int]
    FINISHED_MS_FIELD_NUMBER: _ClassVar[int]
    SECONDS_FIELD_NUMBER: _ClassVar[int]
    consistent: bool
    differences: int
    offset: int
    log_end_offset: int
    finished_ms: int
    seconds: float
    def __init__(self, consistent: _Optional[bool] = ..., differences: _Optional[int] = ..., offset: _Optional[int] = ..., log_end_offset: _Optional[int] = ..., finished_ms: _Optional[int] = ..., seconds: _Optional[float] = ...) -> None: ...

class ReportAuditResponse(_message.Message):
    __slots__ = ("error", "node_id", "is_active")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    IS_ACTIVE_FIELD_NUMBER: _ClassVar[int]
    error: RequestError
    node_id: int
    is_active: bool
    def __init__(self, error: _Optional[_Union[RequestError, _Mapping]] = ..., node_id: _Optional[int] = ..., is_active: _Optional[bool] = ...) -> None: ...
