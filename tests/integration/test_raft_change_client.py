"""change_voter against real gRPC endpoints: while no leader commits the change it
retries every endpoint, and its timeout names what each one last answered -- not only
the last endpoint tried (a dead voter's UNAVAILABLE hid the live voters' answers)."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent import futures
from typing import Any

import grpc
import pytest

from migration.common.kafka_errors import ErrorCode, KafkaError
from migration.common.ports import unused_port
from migration.controller.client import change_voter
from migration.proto import raft_pb2 as rpb
from migration.proto import raft_pb2_grpc


class NoLeader(raft_pb2_grpc.RaftServicer):  # type: ignore[misc]
    def __init__(self) -> None:
        self.calls = 0

    def RemoveRaftVoter(self, request: Any, context: Any) -> rpb.RaftVoterChangeResponse:  # noqa: N802
        self.calls += 1
        return rpb.RaftVoterChangeResponse(
            error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER, error_message="no leader known"
        )


@pytest.fixture
def voter() -> Iterator[tuple[str, NoLeader]]:
    servicer = NoLeader()
    server = grpc.server(futures.ThreadPoolExecutor(2))
    raft_pb2_grpc.add_RaftServicer_to_server(servicer, server)
    endpoint = f"127.0.0.1:{server.add_insecure_port('127.0.0.1:0')}"
    server.start()
    yield endpoint, servicer
    server.stop(None)


def test_the_timeout_names_every_endpoints_last_answer(voter: tuple[str, NoLeader]) -> None:
    live, servicer = voter
    dead = f"127.0.0.1:{unused_port()}"
    with pytest.raises(KafkaError) as raised:
        change_voter([live, dead], 2, "AAAAAAAAAAAAAAAAAAAAAA", add=False, timeout_s=0.5)
    assert raised.value.code == ErrorCode.REQUEST_TIMED_OUT
    message = str(raised.value)
    assert f"{live}: NOT_LEADER_OR_FOLLOWER no leader known" in message
    assert f"{dead}: UNAVAILABLE" in message
    assert servicer.calls >= 1
