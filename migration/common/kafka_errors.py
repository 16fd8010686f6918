"""Kafka's protocol error codes: the numbers every RPC here answers with, and which of
them a client may retry (after a backoff, possibly against another controller)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from enum import IntEnum


class ErrorCode(IntEnum):
    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    OFFSET_OUT_OF_RANGE = 1
    UNKNOWN_TOPIC_OR_PARTITION = 3
    LEADER_NOT_AVAILABLE = 5
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    BROKER_NOT_AVAILABLE = 8
    STALE_CONTROLLER_EPOCH = 11
    INVALID_TOPIC_EXCEPTION = 17
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    CLUSTER_AUTHORIZATION_FAILED = 31
    UNSUPPORTED_SASL_MECHANISM = 33
    ILLEGAL_SASL_STATE = 34
    UNSUPPORTED_VERSION = 35
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    INVALID_REPLICA_ASSIGNMENT = 39
    INVALID_CONFIG = 40
    NOT_CONTROLLER = 41
    INVALID_REQUEST = 42
    POLICY_VIOLATION = 44
    SASL_AUTHENTICATION_FAILED = 58
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    STALE_BROKER_EPOCH = 77
    NO_REASSIGNMENT_IN_PROGRESS = 85
    RESOURCE_NOT_FOUND = 91
    DUPLICATE_RESOURCE = 92
    UNACCEPTABLE_CREDENTIAL = 93
    INCONSISTENT_VOTER_SET = 94
    INVALID_UPDATE_VERSION = 95
    SNAPSHOT_NOT_FOUND = 98
    POSITION_OUT_OF_RANGE = 99
    UNKNOWN_TOPIC_ID = 100
    DUPLICATE_BROKER_REGISTRATION = 101
    BROKER_ID_NOT_REGISTERED = 102
    INCONSISTENT_CLUSTER_ID = 104
    INELIGIBLE_REPLICA = 107
    NEW_LEADER_ELECTED = 108
    DUPLICATE_VOTER = 126  # KIP-853
    VOTER_NOT_FOUND = 127  # KIP-853


RETRIABLE = frozenset(
    {
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.REQUEST_TIMED_OUT,
        ErrorCode.BROKER_NOT_AVAILABLE,
        ErrorCode.NOT_CONTROLLER,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
    }
)


def error_name(code: int) -> str:
    """Kafka's name for ``code`` (``UNKNOWN(<n>)`` for a number this table lacks)."""
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"UNKNOWN({code})"


def error_counts(codes: Iterable[int]) -> str:
    """``codes`` counted by name, most first, for a log line: ``(INELIGIBLE_REPLICA 1990,
    FENCED_LEADER_EPOCH 10)``."""
    counted = Counter(error_name(code) for code in codes)
    return "(" + ", ".join(f"{name} {n}" for name, n in counted.most_common()) + ")"


class KafkaError(Exception):
    """A request refused with a Kafka error code; ``message`` is for the operator."""

    def __init__(self, code: ErrorCode, message: str = "") -> None:
        super().__init__(f"{code.name}: {message}" if message else code.name)
        self.code = code
        self.message = message

    @property
    def retriable(self) -> bool:
        return self.code in RETRIABLE
