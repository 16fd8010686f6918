from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Finding(_message.Message):
    __slots__ = ("code", "message", "path")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    code: str
    message: str
    path: str
    def __init__(self, code: _Optional[str] = ..., message: _Optional[str] = ..., path: _Optional[str] = ...) -> None: ...

class Estimate(_message.Message):
    __slots__ = ("records", "total_records", "znodes_read", "read_seconds", "expected_copy_seconds")
    class RecordsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_RECORDS_FIELD_NUMBER: _ClassVar[int]
    ZNODES_READ_FIELD_NUMBER: _ClassVar[int]
    READ_SECONDS_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_COPY_SECONDS_FIELD_NUMBER: _ClassVar[int]
    records: _containers.ScalarMap[str, int]
    total_records: int
    znodes_read: int
    read_seconds: float
    expected_copy_seconds: float
    def __init__(self, records: _Optional[_Mapping[str, int]] = ..., total_records: _Optional[int] = ..., znodes_read: _Optional[int] = ..., read_seconds: _Optional[float] = ..., expected_copy_seconds: _Optional[float] = ...) -> None: ...

class PreflightReport(_message.Message):
    __slots__ = ("ready", "blockers", "warnings", "estimate")
    READY_FIELD_NUMBER: _ClassVar[int]
    BLOCKERS_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    ESTIMATE_FIELD_NUMBER: _ClassVar[int]
    ready: bool
    blockers: _containers.RepeatedCompositeFieldContainer[Finding]
    warnings: _containers.RepeatedCompositeFieldContainer[Finding]
    estimate: Estimate
    def __init__(self, ready: _Optional[bool] = ..., blockers: _Optional[_Iterable[_Union[Finding, _Mapping]]] = ..., warnings: _Optional[_Iterable[_Union[Finding, _Mapping]]] = ..., estimate: _Optional[_Union[Estimate, _Mapping]] = ...) -> None: ...
