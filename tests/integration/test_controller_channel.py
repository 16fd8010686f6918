"""The controller's channel to brokers over real gRPC: a large request (a full
UpdateMetadata or LeaderAndIsr) is in flight to one broker at a time, process-wide;
smaller ones go to every broker at once."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent import futures
from typing import Any

import grpc
import pytest

from migration.proto import broker_pb2 as bpb
from migration.proto import broker_pb2_grpc
from migration.zkcontroller import channel as channel_module
from migration.zkcontroller.channel import ControllerChannel
from migration.zkcontroller.state_requests import StateRequests
from tests.broker_harness import eventually

BROKERS = (1, 2, 3)
HOLD_S = 0.3  # how long a broker keeps a large request before answering


class Broker(broker_pb2_grpc.BrokerControlServicer):  # type: ignore[misc]
    """Counts the UpdateMetadata requests in flight to every broker of the test."""

    def __init__(self, shared: Flights) -> None:
        self.shared = shared
        self.received: list[int] = []

    def UpdateMetadata(self, request: bpb.UpdateMetadataRequest, context: Any) -> Any:  # noqa: N802
        self.shared.enter()
        try:
            if len(request.partition_states) < 10:  # small: wait until all three are here
                self.shared.together.wait()
            else:
                threading.Event().wait(HOLD_S)
            self.received.append(len(request.partition_states))
        finally:
            self.shared.leave()
        return bpb.BrokerResponse()


class Flights:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = self.most = 0
        self.together = threading.Barrier(len(BROKERS), timeout=30)

    def enter(self) -> None:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)

    def leave(self) -> None:
        with self.lock:
            self.now -= 1


@pytest.fixture
def brokers() -> Iterator[tuple[dict[int, str], dict[int, Broker], Flights]]:
    flights = Flights()
    servers, targets, servicers = [], {}, {}
    for b in BROKERS:
        server = grpc.server(futures.ThreadPoolExecutor(2))
        servicers[b] = Broker(flights)
        broker_pb2_grpc.add_BrokerControlServicer_to_server(servicers[b], server)
        targets[b] = f"127.0.0.1:{server.add_insecure_port('127.0.0.1:0')}"
        server.start()
        servers.append(server)
    yield targets, servicers, flights
    for server in servers:
        server.stop(None)


def _update_metadata(partitions: int) -> Any:
    states = (
        bpb.PartitionState(topic_name=f"t{i}", topic_id=bytes(16), partition_index=i,
                           leader=1, isr=[1, 2, 3], replicas=[1, 2, 3])
        for i in range(partitions)
    )  # fmt: skip
    header = bpb.ControllerHeader(controller_id=3000, controller_epoch=1, is_kraft_controller=True)
    return StateRequests(states, [], bpb.FULL).update_metadata(header)


def _send_to_all(targets: dict[int, str], request: Any) -> ControllerChannel:
    channel = ControllerChannel()
    channel.set_brokers(targets)
    for b in targets:
        channel.send(b, "UpdateMetadata", request)
    return channel


def test_large_requests_go_to_one_broker_at_a_time(
    brokers: tuple[dict[int, str], dict[int, Broker], Flights], monkeypatch: pytest.MonkeyPatch
) -> None:
    targets, servicers, flights = brokers
    request = _update_metadata(200)
    assert 1000 < sum(map(len, request.parts)) < channel_module.LARGE_REQUEST_BYTES
    monkeypatch.setattr(channel_module, "LARGE_REQUEST_BYTES", 1000)  # this one is large
    channel = _send_to_all(targets, request)
    try:
        eventually(lambda: all(s.received == [200] for s in servicers.values()), 60,
                   "every broker answered")  # fmt: skip
    finally:
        channel.close()
    assert flights.most == 1


def test_small_requests_go_to_every_broker_at_once(
    brokers: tuple[dict[int, str], dict[int, Broker], Flights],
) -> None:
    targets, servicers, flights = brokers
    channel = _send_to_all(targets, _update_metadata(3))
    try:
        # each broker answers only once all three hold the request (a barrier)
        eventually(lambda: all(s.received == [3] for s in servicers.values()), 60,
                   "every broker answered")  # fmt: skip
    finally:
        channel.close()
    assert flights.most == len(BROKERS)
