from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class UpdateType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    INCREMENTAL: _ClassVar[UpdateType]
    FULL: _ClassVar[UpdateType]
INCREMENTAL: UpdateType
FULL: UpdateType

class ControllerHeader(_message.Message):
    __slots__ = ("controller_id", "controller_epoch", "broker_epoch", "is_kraft_controller")
    CONTROLLER_ID_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    IS_KRAFT_CONTROLLER_FIELD_NUMBER: _ClassVar[int]
    controller_id: int
    controller_epoch: int
    broker_epoch: int
    is_kraft_controller: bool
    def __init__(self, controller_id: _Optional[int] = ..., controller_epoch: _Optional[int] = ..., broker_epoch: _Optional[int] = ..., is_kraft_controller: _Optional[bool] = ...) -> None: ...

class Endpoint(_message.Message):
    __slots__ = ("listener", "host", "port", "security_protocol")
    LISTENER_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    SECURITY_PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    listener: str
    host: str
    port: int
    security_protocol: str
    def __init__(self, listener: _Optional[str] = ..., host: _Optional[str] = ..., port: _Optional[int] = ..., security_protocol: _Optional[str] = ...) -> None: ...

class LiveBroker(_message.Message):
    __slots__ = ("id", "endpoints", "rack", "kraft", "shutting_down")
    ID_FIELD_NUMBER: _ClassVar[int]
    ENDPOINTS_FIELD_NUMBER: _ClassVar[int]
    RACK_FIELD_NUMBER: _ClassVar[int]
    KRAFT_FIELD_NUMBER: _ClassVar[int]
    SHUTTING_DOWN_FIELD_NUMBER: _ClassVar[int]
    id: int
    endpoints: _containers.RepeatedCompositeFieldContainer[Endpoint]
    rack: str
    kraft: bool
    shutting_down: bool
    def __init__(self, id: _Optional[int] = ..., endpoints: _Optional[_Iterable[_Union[Endpoint, _Mapping]]] = ..., rack: _Optional[str] = ..., kraft: _Optional[bool] = ..., shutting_down: _Optional[bool] = ...) -> None: ...

class PartitionState(_message.Message):
    __slots__ = ("topic_name", "topic_id", "partition_index", "controller_epoch", "leader", "leader_epoch", "isr", "partition_epoch", "replicas", "offline_replicas", "leader_recovery_state")
    TOPIC_NAME_FIELD_NUMBER: _ClassVar[int]
    TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
    PARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    LEADER_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    ISR_FIELD_NUMBER: _ClassVar[int]
    PARTITION_EPOCH_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    OFFLINE_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    LEADER_RECOVERY_STATE_FIELD_NUMBER: _ClassVar[int]
    topic_name: str
    topic_id: bytes
    partition_index: int
    controller_epoch: int
    leader: int
    leader_epoch: int
    isr: _containers.RepeatedScalarFieldContainer[int]
    partition_epoch: int
    replicas: _containers.RepeatedScalarFieldContainer[int]
    offline_replicas: _containers.RepeatedScalarFieldContainer[int]
    leader_recovery_state: int
    def __init__(self, topic_name: _Optional[str] = ..., topic_id: _Optional[bytes] = ..., partition_index: _Optional[int] = ..., controller_epoch: _Optional[int] = ..., leader: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., isr: _Optional[_Iterable[int]] = ..., partition_epoch: _Optional[int] = ..., replicas: _Optional[_Iterable[int]] = ..., offline_replicas: _Optional[_Iterable[int]] = ..., leader_recovery_state: _Optional[int] = ...) -> None: ...

class UpdateMetadataRequest(_message.Message):
    __slots__ = ("header", "type", "live_brokers", "partition_states")
    HEADER_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    LIVE_BROKERS_FIELD_NUMBER: _ClassVar[int]
    PARTITION_STATES_FIELD_NUMBER: _ClassVar[int]
    header: ControllerHeader
    type: UpdateType
    live_brokers: _containers.RepeatedCompositeFieldContainer[LiveBroker]
    partition_states: _containers.RepeatedCompositeFieldContainer[PartitionState]
    def __init__(self, header: _Optional[_Union[ControllerHeader, _Mapping]] = ..., type: _Optional[_Union[UpdateType, str]] = ..., live_brokers: _Optional[_Iterable[_Union[LiveBroker, _Mapping]]] = ..., partition_states: _Optional[_Iterable[_Union[PartitionState, _Mapping]]] = ...) -> None: ...

class LeaderAndIsrRequest(_message.Message):
    __slots__ = ("header", "type", "partition_states")
    HEADER_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    PARTITION_STATES_FIELD_NUMBER: _ClassVar[int]
    header: ControllerHeader
    type: UpdateType
    partition_states: _containers.RepeatedCompositeFieldContainer[PartitionState]
    def __init__(self, header: _Optional[_Union[ControllerHeader, _Mapping]] = ..., type: _Optional[_Union[UpdateType, str]] = ..., partition_states: _Optional[_Iterable[_Union[PartitionState, _Mapping]]] = ...) -> None: ...

class PartitionError(_message.Message):
    __slots__ = ("topic_name", "partition_index", "error_code")
    TOPIC_NAME_FIELD_NUMBER: _ClassVar[int]
    PARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    topic_name: str
    partition_index: int
    error_code: int
    def __init__(self, topic_name: _Optional[str] = ..., partition_index: _Optional[int] = ..., error_code: _Optional[int] = ...) -> None: ...

class StopReplicaRequest(_message.Message):
    __slots__ = ("header", "partitions", "delete_partitions")
    HEADER_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    DELETE_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    header: ControllerHeader
    partitions: _containers.RepeatedCompositeFieldContainer[PartitionState]
    delete_partitions: bool
    def __init__(self, header: _Optional[_Union[ControllerHeader, _Mapping]] = ..., partitions: _Optional[_Iterable[_Union[PartitionState, _Mapping]]] = ..., delete_partitions: _Optional[bool] = ...) -> None: ...

class BrokerResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "partition_errors")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    PARTITION_ERRORS_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    partition_errors: _containers.RepeatedCompositeFieldContainer[PartitionError]
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., partition_errors: _Optional[_Iterable[_Union[PartitionError, _Mapping]]] = ...) -> None: ...

class AlterPartitionRequest(_message.Message):
    __slots__ = ("broker_id", "broker_epoch", "partitions")
    BROKER_ID_FIELD_NUMBER: _ClassVar[int]
    BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    broker_id: int
    broker_epoch: int
    partitions: _containers.RepeatedCompositeFieldContainer[PartitionState]
    def __init__(self, broker_id: _Optional[int] = ..., broker_epoch: _Optional[int] = ..., partitions: _Optional[_Iterable[_Union[PartitionState, _Mapping]]] = ...) -> None: ...

class AlterPartitionResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "partitions", "partition_errors")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    PARTITION_ERRORS_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    partitions: _containers.RepeatedCompositeFieldContainer[PartitionState]
    partition_errors: _containers.RepeatedCompositeFieldContainer[PartitionError]
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[PartitionState, _Mapping]]] = ..., partition_errors: _Optional[_Iterable[_Union[PartitionError, _Mapping]]] = ...) -> None: ...

class ControlledShutdownRequest(_message.Message):
    __slots__ = ("broker_id", "broker_epoch")
    BROKER_ID_FIELD_NUMBER: _ClassVar[int]
    BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    broker_id: int
    broker_epoch: int
    def __init__(self, broker_id: _Optional[int] = ..., broker_epoch: _Optional[int] = ...) -> None: ...

class ControlledShutdownResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "remaining")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    REMAINING_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    remaining: _containers.RepeatedCompositeFieldContainer[PartitionState]
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., remaining: _Optional[_Iterable[_Union[PartitionState, _Mapping]]] = ...) -> None: ...

class MigrationCheckRequest(_message.Message):
    __slots__ = ("controller_id",)
    CONTROLLER_ID_FIELD_NUMBER: _ClassVar[int]
    controller_id: int
    def __init__(self, controller_id: _Optional[int] = ...) -> None: ...

class MigrationCheckResponse(_message.Message):
    __slots__ = ("broker_id", "cluster_id", "config_enabled", "metadata_version")
    BROKER_ID_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    CONFIG_ENABLED_FIELD_NUMBER: _ClassVar[int]
    METADATA_VERSION_FIELD_NUMBER: _ClassVar[int]
    broker_id: int
    cluster_id: str
    config_enabled: bool
    metadata_version: int
    def __init__(self, broker_id: _Optional[int] = ..., cluster_id: _Optional[str] = ..., config_enabled: _Optional[bool] = ..., metadata_version: _Optional[int] = ...) -> None: ...
