"""Kafka's DescribeQuorum (api key 55) over a KRaft controller listener, the request
``kafka-metadata-quorum --bootstrap-controller`` sends (KIP-919: Kafka 3.7 and later
serve it there). Only the quorum's leader answers it; the others answer
NOT_LEADER_OR_FOLLOWER, so each controller given is asked in turn until the leader
answers. The answer comes back as the project's own
:class:`~migration.proto.raft_pb2.DescribeQuorumResponse`, the message zk2kraft's
controllers answer, so both are shown by one formatter.

The version is the highest both ends know (ApiVersions first): v2 carries the replicas'
directory ids (Kafka 3.9 on), v1 the fetch times."""

from __future__ import annotations

from typing import Any

from kio.index import load_request_schema
from kio.schema.api_versions.v3.request import ApiVersionsRequest

from migration.common.kafka_errors import ErrorCode, KafkaError, error_name
from migration.kafka.client import KafkaConnection
from migration.kafka.wire import build
from migration.proto import raft_pb2 as rpb
from migration.records.uuids import uuid_text

DESCRIBE_QUORUM = 55
HIGHEST_VERSION = 2
METADATA_TOPIC = "__cluster_metadata"


def _version(conn: KafkaConnection) -> int:
    """The DescribeQuorum version to send; KafkaError when the listener serves none."""
    answer = conn.request(
        ApiVersionsRequest(client_software_name="zk2kraft", client_software_version="1")
    )
    if answer.error_code:
        raise KafkaError(ErrorCode(int(answer.error_code)), "ApiVersions refused")
    for api in answer.api_keys:
        if api.api_key == DESCRIBE_QUORUM:
            return min(HIGHEST_VERSION, int(api.max_version))
    raise KafkaError(
        ErrorCode.UNSUPPORTED_VERSION,
        "the listener does not serve DescribeQuorum (a broker's, or a controller before Kafka 3.7)",
    )


def _replica(r: Any) -> rpb.ReplicaState:
    directory = getattr(r, "replica_directory_id", None)  # v2; Kafka's zero uuid: unknown
    directory = directory if directory is not None and directory.int else None
    return rpb.ReplicaState(
        replica_id=int(r.replica_id),
        log_end_offset=int(r.log_end_offset),
        last_fetch_timestamp=int(getattr(r, "last_fetch_timestamp", -1)),
        last_caught_up_timestamp=int(getattr(r, "last_caught_up_timestamp", -1)),
        replica_directory_id=uuid_text(directory.bytes) if directory else "",
    )


def as_quorum_response(answer: Any) -> rpb.DescribeQuorumResponse:
    """Kafka's DescribeQuorum answer (any version, kio's form) as the project's message;
    KafkaError for a top-level or partition error (NOT_LEADER_OR_FOLLOWER from a
    controller that is not the leader)."""
    if answer.error_code:
        message = getattr(answer, "error_message", None)  # v2 on
        raise KafkaError(_code(answer.error_code), message or "DescribeQuorum")
    partitions = [p for t in answer.topics for p in t.partitions]
    if len(partitions) != 1:
        raise KafkaError(
            ErrorCode.UNKNOWN_SERVER_ERROR, f"{len(partitions)} partitions answered, not 1"
        )
    p = partitions[0]
    if p.error_code:
        message = getattr(p, "error_message", None)
        raise KafkaError(_code(p.error_code), message or error_name(int(p.error_code)))
    return rpb.DescribeQuorumResponse(
        leader_id=int(p.leader_id),
        leader_epoch=int(p.leader_epoch),
        high_watermark=int(p.high_watermark),
        current_voters=[_replica(v) for v in p.current_voters],
        observers=[_replica(o) for o in p.observers],
    )


def _code(code: Any) -> ErrorCode:
    try:
        return ErrorCode(int(code))
    except ValueError:
        return ErrorCode.UNKNOWN_SERVER_ERROR


def describe_quorum_at(host: str, port: int, timeout_s: float) -> rpb.DescribeQuorumResponse:
    """DescribeQuorum of one controller listener; KafkaError when it does not answer
    as the leader, OSError/ConnectionError when unreachable."""
    with KafkaConnection(host, port, timeout_s) as conn:
        version = _version(conn)
        request = build(
            load_request_schema(DESCRIBE_QUORUM, version),
            {"topics": [{"topic_name": METADATA_TOPIC, "partitions": [{"partition_index": 0}]}]},
        )
        return as_quorum_response(conn.request(request))


def describe_kafka_quorum(
    bootstrap: list[str], timeout_s: float = 5.0
) -> tuple[str, rpb.DescribeQuorumResponse]:
    """The leader's answer and the endpoint that gave it, from the first of
    ``bootstrap`` (``host:port`` of controller listeners) that answers as the leader.
    ConnectionError naming each endpoint's problem when none does."""
    problems = []
    for endpoint in bootstrap:
        host, _, port = endpoint.rpartition(":")
        try:
            return endpoint, describe_quorum_at(host.strip("[]"), int(port), timeout_s)
        except KafkaError as exc:
            problems.append(f"{endpoint}: {exc}")
        except (OSError, ValueError) as exc:  # ConnectionError is an OSError
            problems.append(f"{endpoint}: {exc or type(exc).__name__}")
    raise ConnectionError(
        "no controller answered DescribeQuorum as the leader: " + "; ".join(problems)
    )
