from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class OffsetAndEpoch(_message.Message):
    __slots__ = ("end_offset", "epoch")
    END_OFFSET_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    end_offset: int
    epoch: int
    def __init__(self, end_offset: _Optional[int] = ..., epoch: _Optional[int] = ...) -> None: ...

class VoteRequest(_message.Message):
    __slots__ = ("cluster_id", "candidate_id", "candidate_epoch", "last_offset_epoch", "last_offset", "pre_vote", "candidate_directory_id", "voter_directory_id")
    CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    CANDIDATE_ID_FIELD_NUMBER: _ClassVar[int]
    CANDIDATE_EPOCH_FIELD_NUMBER: _ClassVar[int]
    LAST_OFFSET_EPOCH_FIELD_NUMBER: _ClassVar[int]
    LAST_OFFSET_FIELD_NUMBER: _ClassVar[int]
    PRE_VOTE_FIELD_NUMBER: _ClassVar[int]
    CANDIDATE_DIRECTORY_ID_FIELD_NUMBER: _ClassVar[int]
    VOTER_DIRECTORY_ID_FIELD_NUMBER: _ClassVar[int]
    cluster_id: str
    candidate_id: int
    candidate_epoch: int
    last_offset_epoch: int
    last_offset: int
    pre_vote: bool
    candidate_directory_id: str
    voter_directory_id: str
    def __init__(self, cluster_id: _Optional[str] = ..., candidate_id: _Optional[int] = ..., candidate_epoch: _Optional[int] = ..., last_offset_epoch: _Optional[int] = ..., last_offset: _Optional[int] = ..., pre_vote: _Optional[bool] = ..., candidate_directory_id: _Optional[str] = ..., voter_directory_id: _Optional[str] = ...) -> None: ...

class VoteResponse(_message.Message):
    __slots__ = ("error_code", "leader_id", "leader_epoch", "vote_granted", "voter_directory_id")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    VOTE_GRANTED_FIELD_NUMBER: _ClassVar[int]
    VOTER_DIRECTORY_ID_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    leader_id: int
    leader_epoch: int
    vote_granted: bool
    voter_directory_id: str
    def __init__(self, error_code: _Optional[int] = ..., leader_id: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., vote_granted: _Optional[bool] = ..., voter_directory_id: _Optional[str] = ...) -> None: ...

class BeginQuorumEpochRequest(_message.Message):
    __slots__ = ("cluster_id", "leader_id", "leader_epoch")
    CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    cluster_id: str
    leader_id: int
    leader_epoch: int
    def __init__(self, cluster_id: _Optional[str] = ..., leader_id: _Optional[int] = ..., leader_epoch: _Optional[int] = ...) -> None: ...

class BeginQuorumEpochResponse(_message.Message):
    __slots__ = ("error_code", "leader_id", "leader_epoch")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    leader_id: int
    leader_epoch: int
    def __init__(self, error_code: _Optional[int] = ..., leader_id: _Optional[int] = ..., leader_epoch: _Optional[int] = ...) -> None: ...

class EndQuorumEpochRequest(_message.Message):
    __slots__ = ("cluster_id", "leader_id", "leader_epoch", "preferred_successors")
    CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    PREFERRED_SUCCESSORS_FIELD_NUMBER: _ClassVar[int]
    cluster_id: str
    leader_id: int
    leader_epoch: int
    preferred_successors: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, cluster_id: _Optional[str] = ..., leader_id: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., preferred_successors: _Optional[_Iterable[int]] = ...) -> None: ...

class EndQuorumEpochResponse(_message.Message):
    __slots__ = ("error_code", "leader_id", "leader_epoch")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    leader_id: int
    leader_epoch: int
    def __init__(self, error_code: _Optional[int] = ..., leader_id: _Optional[int] = ..., leader_epoch: _Optional[int] = ...) -> None: ...

class FetchRequest(_message.Message):
    __slots__ = ("cluster_id", "replica_id", "current_leader_epoch", "fetch_offset", "last_fetched_epoch", "max_wait_ms", "max_bytes", "replica_directory_id", "observer")
    CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    REPLICA_ID_FIELD_NUMBER: _ClassVar[int]
    CURRENT_LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    FETCH_OFFSET_FIELD_NUMBER: _ClassVar[int]
    LAST_FETCHED_EPOCH_FIELD_NUMBER: _ClassVar[int]
    MAX_WAIT_MS_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    REPLICA_DIRECTORY_ID_FIELD_NUMBER: _ClassVar[int]
    OBSERVER_FIELD_NUMBER: _ClassVar[int]
    cluster_id: str
    replica_id: int
    current_leader_epoch: int
    fetch_offset: int
    last_fetched_epoch: int
    max_wait_ms: int
    max_bytes: int
    replica_directory_id: str
    observer: bool
    def __init__(self, cluster_id: _Optional[str] = ..., replica_id: _Optional[int] = ..., current_leader_epoch: _Optional[int] = ..., fetch_offset: _Optional[int] = ..., last_fetched_epoch: _Optional[int] = ..., max_wait_ms: _Optional[int] = ..., max_bytes: _Optional[int] = ..., replica_directory_id: _Optional[str] = ..., observer: _Optional[bool] = ...) -> None: ...

class FetchResponse(_message.Message):
    __slots__ = ("error_code", "leader_id", "leader_epoch", "high_watermark", "log_start_offset", "diverging_epoch", "snapshot_id", "records")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    HIGH_WATERMARK_FIELD_NUMBER: _ClassVar[int]
    LOG_START_OFFSET_FIELD_NUMBER: _ClassVar[int]
    DIVERGING_EPOCH_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_ID_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    leader_id: int
    leader_epoch: int
    high_watermark: int
    log_start_offset: int
    diverging_epoch: OffsetAndEpoch
    snapshot_id: OffsetAndEpoch
    records: bytes
    def __init__(self, error_code: _Optional[int] = ..., leader_id: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., high_watermark: _Optional[int] = ..., log_start_offset: _Optional[int] = ..., diverging_epoch: _Optional[_Union[OffsetAndEpoch, _Mapping]] = ..., snapshot_id: _Optional[_Union[OffsetAndEpoch, _Mapping]] = ..., records: _Optional[bytes] = ...) -> None: ...

class FetchSnapshotRequest(_message.Message):
    __slots__ = ("cluster_id", "replica_id", "current_leader_epoch", "snapshot_id", "position", "max_bytes", "replica_directory_id", "observer")
    CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    REPLICA_ID_FIELD_NUMBER: _ClassVar[int]
    CURRENT_LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_ID_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    REPLICA_DIRECTORY_ID_FIELD_NUMBER: _ClassVar[int]
    OBSERVER_FIELD_NUMBER: _ClassVar[int]
    cluster_id: str
    replica_id: int
    current_leader_epoch: int
    snapshot_id: OffsetAndEpoch
    position: int
    max_bytes: int
    replica_directory_id: str
    observer: bool
    def __init__(self, cluster_id: _Optional[str] = ..., replica_id: _Optional[int] = ..., current_leader_epoch: _Optional[int] = ..., snapshot_id: _Optional[_Union[OffsetAndEpoch, _Mapping]] = ..., position: _Optional[int] = ..., max_bytes: _Optional[int] = ..., replica_directory_id: _Optional[str] = ..., observer: _Optional[bool] = ...) -> None: ...

class FetchSnapshotResponse(_message.Message):
    __slots__ = ("error_code", "leader_id", "leader_epoch", "snapshot_id", "size", "position", "unaligned_records")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_ID_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    UNALIGNED_RECORDS_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    leader_id: int
    leader_epoch: int
    snapshot_id: OffsetAndEpoch
    size: int
    position: int
    unaligned_records: bytes
    def __init__(self, error_code: _Optional[int] = ..., leader_id: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., snapshot_id: _Optional[_Union[OffsetAndEpoch, _Mapping]] = ..., size: _Optional[int] = ..., position: _Optional[int] = ..., unaligned_records: _Optional[bytes] = ...) -> None: ...

class DescribeQuorumRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class AddRaftVoterRequest(_message.Message):
    __slots__ = ("cluster_id", "voter_id", "voter_directory_id")
    CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    VOTER_ID_FIELD_NUMBER: _ClassVar[int]
    VOTER_DIRECTORY_ID_FIELD_NUMBER: _ClassVar[int]
    cluster_id: str
    voter_id: int
    voter_directory_id: str
    def __init__(self, cluster_id: _Optional[str] = ..., voter_id: _Optional[int] = ..., voter_directory_id: _Optional[str] = ...) -> None: ...

class RemoveRaftVoterRequest(_message.Message):
    __slots__ = ("cluster_id", "voter_id", "voter_directory_id")
    CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    VOTER_ID_FIELD_NUMBER: _ClassVar[int]
    VOTER_DIRECTORY_ID_FIELD_NUMBER: _ClassVar[int]
    cluster_id: str
    voter_id: int
    voter_directory_id: str
    def __init__(self, cluster_id: _Optional[str] = ..., voter_id: _Optional[int] = ..., voter_directory_id: _Optional[str] = ...) -> None: ...

class UpdateKRaftVersionRequest(_message.Message):
    __slots__ = ("cluster_id", "kraft_version")
    CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    KRAFT_VERSION_FIELD_NUMBER: _ClassVar[int]
    cluster_id: str
    kraft_version: int
    def __init__(self, cluster_id: _Optional[str] = ..., kraft_version: _Optional[int] = ...) -> None: ...

class RaftVoterChangeResponse(_message.Message):
    __slots__ = ("error_code", "leader_id", "leader_epoch", "error_message")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    leader_id: int
    leader_epoch: int
    error_message: str
    def __init__(self, error_code: _Optional[int] = ..., leader_id: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., error_message: _Optional[str] = ...) -> None: ...

class ReplicaState(_message.Message):
    __slots__ = ("replica_id", "log_end_offset", "last_fetch_timestamp", "last_caught_up_timestamp", "replica_directory_id")
    REPLICA_ID_FIELD_NUMBER: _ClassVar[int]
    LOG_END_OFFSET_FIELD_NUMBER: _ClassVar[int]
    LAST_FETCH_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    LAST_CAUGHT_UP_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    REPLICA_DIRECTORY_ID_FIELD_NUMBER: _ClassVar[int]
    replica_id: int
    log_end_offset: int
    last_fetch_timestamp: int
    last_caught_up_timestamp: int
    replica_directory_id: str
    def __init__(self, replica_id: _Optional[int] = ..., log_end_offset: _Optional[int] = ..., last_fetch_timestamp: _Optional[int] = ..., last_caught_up_timestamp: _Optional[int] = ..., replica_directory_id: _Optional[str] = ...) -> None: ...

class DescribeQuorumResponse(_message.Message):
    __slots__ = ("error_code", "leader_id", "leader_epoch", "high_watermark", "current_voters", "observers")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    HIGH_WATERMARK_FIELD_NUMBER: _ClassVar[int]
    CURRENT_VOTERS_FIELD_NUMBER: _ClassVar[int]
    OBSERVERS_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    leader_id: int
    leader_epoch: int
    high_watermark: int
    current_voters: _containers.RepeatedCompositeFieldContainer[ReplicaState]
    observers: _containers.RepeatedCompositeFieldContainer[ReplicaState]
    def __init__(self, error_code: _Optional[int] = ..., leader_id: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., high_watermark: _Optional[int] = ..., current_voters: _Optional[_Iterable[_Union[ReplicaState, _Mapping]]] = ..., observers: _Optional[_Iterable[_Union[ReplicaState, _Mapping]]] = ...) -> None: ...
