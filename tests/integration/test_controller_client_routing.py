"""Where ControllerClient goes after NOT_CONTROLLER, against real gRPC servers: to its
own address for the named controller when it has one (as Kafka's brokers do), to the
answer's endpoint otherwise."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent import futures
from typing import Any

import grpc
import pytest

from migration.common.kafka_errors import ErrorCode, KafkaError
from migration.controller.client import ControllerClient
from migration.controller.errors import request_error
from migration.proto import controller_pb2 as cpb
from migration.proto import controller_pb2_grpc

UNREACHABLE = "127.0.0.1:1"  # where the answering controller says the leader is


class Answering(controller_pb2_grpc.ControllerServicer):  # type: ignore[misc]
    def __init__(self, leader: int | None) -> None:
        self.leader = leader  # None: this one leads
        self.calls = 0

    def DescribeCluster(self, request: Any, context: Any) -> cpb.DescribeClusterResponse:  # noqa: N802
        self.calls += 1
        if self.leader is None:
            return cpb.DescribeClusterResponse(cluster_id="answered")
        error = request_error(ErrorCode.NOT_CONTROLLER, "not me", self.leader, UNREACHABLE)
        return cpb.DescribeClusterResponse(error=error)


@pytest.fixture
def servers() -> Iterator[tuple[list[str], Answering]]:
    follower, leader = Answering(leader=2), Answering(leader=None)
    running, endpoints = [], []
    for servicer in (follower, leader):
        server = grpc.server(futures.ThreadPoolExecutor(2))
        controller_pb2_grpc.add_ControllerServicer_to_server(servicer, server)
        endpoints.append(f"127.0.0.1:{server.add_insecure_port('127.0.0.1:0')}")
        server.start()
        running.append(server)
    yield endpoints, leader
    for server in running:
        server.stop(None)


def test_not_controller_is_followed_to_the_callers_own_address_for_the_leader(
    servers: tuple[list[str], Answering],
) -> None:
    (follower, leader), leading = servers
    client = ControllerClient([follower], 10.0, voters={1: follower, 2: leader})
    try:
        answer = client.call("DescribeCluster", cpb.DescribeClusterRequest())
    finally:
        client.close()
    assert answer.cluster_id == "answered" and leading.calls == 1


def test_without_an_address_for_the_leader_the_answers_endpoint_is_followed(
    servers: tuple[list[str], Answering],
) -> None:
    (follower, _), leading = servers
    client = ControllerClient([follower], 1.0)
    try:
        with pytest.raises(KafkaError, match=r"UNAVAILABLE|NOT_CONTROLLER"):
            client.call("DescribeCluster", cpb.DescribeClusterRequest())
    finally:
        client.close()
    assert leading.calls == 0  # it went to the unreachable endpoint it was told of
