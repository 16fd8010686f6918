"""Clients of the controller quorum: admin calls that follow NOT_CONTROLLER to the active
controller and retry retriable errors with exponential backoff, DescribeQuorum, and a
KRaft broker's registration + heartbeat session (used by tests and the broker)."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Literal, overload

import grpc
from google.protobuf.message import Message

from migration.common import rpc
from migration.common.kafka_errors import RETRIABLE, ErrorCode, KafkaError, error_name
from migration.common.ports import host_problem
from migration.common.text import shown
from migration.proto import controller_pb2 as cpb
from migration.proto import controller_pb2_grpc, raft_pb2_grpc
from migration.proto import raft_pb2 as rpb
from migration.records.uuids import new_uuid

log = logging.getLogger(__name__)

RETRY_BACKOFF_MS = 100  # Kafka's retry.backoff.ms
RETRY_BACKOFF_MAX_MS = 1000  # Kafka's retry.backoff.max.ms


def parse_bootstrap(text: str) -> list[str]:
    """``host:port[,host:port...]``; ValueError names the bad entry."""
    out = []
    for entry in (e.strip() for e in text.split(",")):
        host, colon, port = entry.rpartition(":")
        if not (host and colon and port.isdigit()):
            raise ValueError(f"--bootstrap-controller: {shown(entry)} is not host:port")
        if not 0 < int(port) < 65536:
            raise ValueError(
                f"--bootstrap-controller: port {shown(port)} in {shown(entry)} is out of "
                "range (1-65535)"
            )
        problem = host_problem(host.removeprefix("[").removesuffix("]"))
        if problem:
            raise ValueError(f"--bootstrap-controller: {problem}")
        out.append(entry)
    return out


class ControllerClient:
    """Sends a request to the active controller, wherever it is. Raises KafkaError with
    the last retriable error when ``timeout_s`` runs out (the write may or may not have
    committed, as with Kafka's admin client).

    ``voters``: the caller's own ``controller.quorum.voters`` (id -> host:port), as a
    broker has them. A NOT_CONTROLLER naming one of them is followed to the caller's
    address for it, as Kafka's brokers find the active controller (by id, in their own
    configuration): the address the answering controller has for it is the one that
    controller reaches it at, not necessarily one the caller can. The answer's
    endpoint is followed only for a controller the caller has no address for.
    """

    def __init__(
        self, bootstrap: list[str], timeout_s: float = 30.0, voters: dict[int, str] | None = None
    ) -> None:
        self._bootstrap = list(bootstrap)
        self._voters = dict(voters or {})
        self._timeout = timeout_s
        self._channels: dict[str, grpc.Channel] = {}
        self._target = self._bootstrap[0]
        self._lock = threading.Lock()

    def _stub(self, endpoint: str) -> controller_pb2_grpc.ControllerStub:
        with self._lock:  # calls may come from several threads
            if endpoint not in self._channels:
                self._channels[endpoint] = rpc.channel(endpoint)
            return controller_pb2_grpc.ControllerStub(self._channels[endpoint])

    # One overload per Controller RPC: a call naming its method by a literal gets the
    # method's response type (tests/unit/test_controller_dispatch.py keeps them whole);
    # a method named by a variable gets Any.
    @overload
    def call(
        self,
        method: Literal["CreateTopics"],
        request: cpb.CreateTopicsRequest,
        timeout_s: float | None = None,
    ) -> cpb.CreateTopicsResponse: ...

    @overload
    def call(
        self,
        method: Literal["DeleteTopics"],
        request: cpb.DeleteTopicsRequest,
        timeout_s: float | None = None,
    ) -> cpb.ItemsResponse: ...

    @overload
    def call(
        self,
        method: Literal["CreatePartitions"],
        request: cpb.CreatePartitionsRequest,
        timeout_s: float | None = None,
    ) -> cpb.ItemsResponse: ...

    @overload
    def call(
        self,
        method: Literal["IncrementalAlterConfigs"],
        request: cpb.IncrementalAlterConfigsRequest,
        timeout_s: float | None = None,
    ) -> cpb.ItemsResponse: ...

    @overload
    def call(
        self,
        method: Literal["DescribeConfigs"],
        request: cpb.DescribeConfigsRequest,
        timeout_s: float | None = None,
    ) -> cpb.DescribeConfigsResponse: ...

    @overload
    def call(
        self,
        method: Literal["CreateAcls"],
        request: cpb.CreateAclsRequest,
        timeout_s: float | None = None,
    ) -> cpb.AclsResponse: ...

    @overload
    def call(
        self,
        method: Literal["DeleteAcls"],
        request: cpb.DeleteAclsRequest,
        timeout_s: float | None = None,
    ) -> cpb.AclsResponse: ...

    @overload
    def call(
        self,
        method: Literal["DescribeAcls"],
        request: cpb.DescribeAclsRequest,
        timeout_s: float | None = None,
    ) -> cpb.AclsResponse: ...

    @overload
    def call(
        self,
        method: Literal["AlterClientQuotas"],
        request: cpb.AlterClientQuotasRequest,
        timeout_s: float | None = None,
    ) -> cpb.ItemsResponse: ...

    @overload
    def call(
        self,
        method: Literal["DescribeClientQuotas"],
        request: cpb.DescribeClientQuotasRequest,
        timeout_s: float | None = None,
    ) -> cpb.DescribeClientQuotasResponse: ...

    @overload
    def call(
        self,
        method: Literal["AlterUserScramCredentials"],
        request: cpb.AlterUserScramCredentialsRequest,
        timeout_s: float | None = None,
    ) -> cpb.ItemsResponse: ...

    @overload
    def call(
        self,
        method: Literal["AllocateProducerIds"],
        request: cpb.AllocateProducerIdsRequest,
        timeout_s: float | None = None,
    ) -> cpb.AllocateProducerIdsResponse: ...

    @overload
    def call(
        self,
        method: Literal["AlterPartition"],
        request: cpb.AlterPartitionRequest,
        timeout_s: float | None = None,
    ) -> cpb.AlterPartitionResponse: ...

    @overload
    def call(
        self,
        method: Literal["AlterPartitionReassignments"],
        request: cpb.AlterPartitionReassignmentsRequest,
        timeout_s: float | None = None,
    ) -> cpb.AlterPartitionReassignmentsResponse: ...

    @overload
    def call(
        self,
        method: Literal["ListPartitionReassignments"],
        request: cpb.ListPartitionReassignmentsRequest,
        timeout_s: float | None = None,
    ) -> cpb.ListPartitionReassignmentsResponse: ...

    @overload
    def call(
        self,
        method: Literal["BrokerRegistration"],
        request: cpb.BrokerRegistrationRequest,
        timeout_s: float | None = None,
    ) -> cpb.BrokerRegistrationResponse: ...

    @overload
    def call(
        self,
        method: Literal["BrokerHeartbeat"],
        request: cpb.BrokerHeartbeatRequest,
        timeout_s: float | None = None,
    ) -> cpb.BrokerHeartbeatResponse: ...

    @overload
    def call(
        self,
        method: Literal["DescribeCluster"],
        request: cpb.DescribeClusterRequest,
        timeout_s: float | None = None,
    ) -> cpb.DescribeClusterResponse: ...

    @overload
    def call(
        self,
        method: Literal["Metadata"],
        request: cpb.MetadataRequest,
        timeout_s: float | None = None,
    ) -> cpb.MetadataResponse: ...

    @overload
    def call(
        self,
        method: Literal["DescribeMigration"],
        request: cpb.DescribeMigrationRequest,
        timeout_s: float | None = None,
    ) -> cpb.DescribeMigrationResponse: ...

    @overload
    def call(
        self,
        method: Literal["ReportAudit"],
        request: cpb.ReportAuditRequest,
        timeout_s: float | None = None,
    ) -> cpb.ReportAuditResponse: ...

    @overload
    def call(self, method: str, request: Message, timeout_s: float | None = None) -> Any: ...

    def call(self, method: str, request: Message, timeout_s: float | None = None) -> Any:
        """``method``'s response to ``request`` (the Controller RPC by its gRPC name);
        ``timeout_s``: this call's bound instead of the client's. Typed by the overloads
        above when ``method`` is a literal."""
        deadline = time.monotonic() + (self._timeout if timeout_s is None else timeout_s)
        backoff = RETRY_BACKOFF_MS / 1000
        rotation = 0
        last = "no controller answered"
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise KafkaError(ErrorCode.REQUEST_TIMED_OUT, f"{method}: {last}")
            try:
                response = getattr(self._stub(self._target), method)(
                    request, timeout=min(left, 35.0)
                )
            except grpc.RpcError as exc:
                last = f"{self._target}: {exc.code().name}"
                rotation += 1
                self._target = self._bootstrap[rotation % len(self._bootstrap)]
            else:
                error = response.error
                if error.error_code == ErrorCode.NONE:
                    return response
                last = f"{error_name(error.error_code)}: {error.error_message}"
                if error.error_code not in RETRIABLE:
                    raise KafkaError(ErrorCode(error.error_code), error.error_message)
                leader = self._voters.get(error.controller_id, error.controller_endpoint)
                if error.error_code == ErrorCode.NOT_CONTROLLER and leader:
                    self._target = leader
                    if leader not in self._bootstrap:
                        self._bootstrap.append(leader)
                else:
                    rotation += 1
                    self._target = self._bootstrap[rotation % len(self._bootstrap)]
            time.sleep(min(backoff, max(0.0, deadline - time.monotonic())))
            backoff = min(backoff * 2, RETRY_BACKOFF_MAX_MS / 1000)

    def close(self) -> None:
        for channel in self._channels.values():
            channel.close()


def describe_quorum(bootstrap: list[str], timeout_s: float = 10.0) -> rpb.DescribeQuorumResponse:
    """DescribeQuorum from the first controller that answers (non-leaders forward)."""
    last = "no controller answered"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for endpoint in bootstrap:
            with rpc.channel(endpoint, []) as channel:
                try:
                    response = raft_pb2_grpc.RaftStub(channel).DescribeQuorum(
                        rpb.DescribeQuorumRequest(), timeout=5
                    )
                except grpc.RpcError as exc:
                    last = f"{endpoint}: {exc.code().name}"
                    continue
            if response.error_code == ErrorCode.NONE:
                return response  # type: ignore[no-any-return]
            last = f"{endpoint}: {error_name(response.error_code)} (no leader yet?)"
        time.sleep(RETRY_BACKOFF_MS / 1000)
    raise KafkaError(ErrorCode.REQUEST_TIMED_OUT, f"DescribeQuorum: {last}")


def change_voter(
    bootstrap: list[str],
    voter_id: int,
    directory_id: str,
    *,
    add: bool,
    timeout_s: float = 60.0,
) -> rpb.RaftVoterChangeResponse:
    """KIP-853's AddRaftVoter (``add``) or RemoveRaftVoter to the quorum's leader (any
    voter forwards it), retried while no leader answers or the change must wait (the
    previous one not committed yet, the replica not caught up yet). Returns the answer
    once the change is committed; KafkaError with the leader's reason when it is
    refused, REQUEST_TIMED_OUT after ``timeout_s``."""
    kind = rpb.AddRaftVoterRequest if add else rpb.RemoveRaftVoterRequest
    method = "AddRaftVoter" if add else "RemoveRaftVoter"
    request = kind(voter_id=voter_id, voter_directory_id=directory_id)
    return _raft_change(bootstrap, method, request, timeout_s)


def upgrade_kraft_version(
    bootstrap: list[str], level: int, *, timeout_s: float = 60.0
) -> rpb.RaftVoterChangeResponse:
    """``features upgrade --feature kraft.version=LEVEL`` to the quorum's leader (any
    voter forwards it): the voter set pinned with every voter's directory id, answered
    once committed; KafkaError with the leader's reason when refused (a voter not heard
    yet: named)."""
    request = rpb.UpdateKRaftVersionRequest(kraft_version=level)
    return _raft_change(bootstrap, "UpdateKRaftVersion", request, timeout_s)


def _raft_change(
    bootstrap: list[str], method: str, request: Message, timeout_s: float
) -> rpb.RaftVoterChangeResponse:
    answers: dict[str, str] = {}  # each endpoint's latest answer: the timeout names them all
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for endpoint in bootstrap:
            with rpc.channel(endpoint, []) as channel:
                try:
                    response = getattr(raft_pb2_grpc.RaftStub(channel), method)(request, timeout=15)
                except grpc.RpcError as exc:
                    answers[endpoint] = exc.code().name
                    continue
            if response.error_code == ErrorCode.NONE:
                return response  # type: ignore[no-any-return]
            answers[endpoint] = f"{error_name(response.error_code)} {response.error_message}"
            if response.error_code not in RETRIABLE:
                last = f"{endpoint}: {answers[endpoint]}"
                raise KafkaError(ErrorCode(response.error_code), f"{method}: {last}")
        time.sleep(RETRY_BACKOFF_MAX_MS / 1000)
    said = "; ".join(f"{e}: {a.strip()}" for e, a in answers.items()) or "no controller answered"
    raise KafkaError(ErrorCode.REQUEST_TIMED_OUT, f"{method}: {said}")


class BrokerSession:
    """A KRaft broker's session with the quorum: register, then heartbeat every
    ``interval_s`` (Kafka's broker.heartbeat.interval.ms, 2000 by default) on a thread,
    reporting ``metadata_offset`` as caught up. ``shutdown`` asks for a controlled
    shutdown; ``stop`` just stops heartbeating (the controller fences it later)."""

    def __init__(
        self,
        client: ControllerClient,
        broker_id: int,
        *,
        host: str = "localhost",
        port: int = 9092,
        interval_s: float = 0.5,
        rack: str | None = None,
    ) -> None:
        self.client = client
        self.broker_id = broker_id
        self.interval_s = interval_s
        self.metadata_offset = 1 << 62  # tests' brokers say they are caught up
        request = cpb.BrokerRegistrationRequest(broker_id=broker_id, incarnation_id=new_uuid())
        request.listeners.add(name="PLAINTEXT", host=host, port=port, security_protocol=0)
        request.features.add(
            name="metadata.version", min_supported_version=1, max_supported_version=20
        )
        if rack is not None:
            request.rack = rack
        response = client.call("BrokerRegistration", request)
        if response.error_code:
            raise KafkaError(ErrorCode(response.error_code), f"registering broker {broker_id}")
        self.broker_epoch: int = response.broker_epoch
        self.fenced = True
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"broker-{broker_id}", daemon=True)

    def heartbeat(self, want_shut_down: bool = False) -> cpb.BrokerHeartbeatResponse:
        response: cpb.BrokerHeartbeatResponse = self.client.call(
            "BrokerHeartbeat",
            cpb.BrokerHeartbeatRequest(
                broker_id=self.broker_id,
                broker_epoch=self.broker_epoch,
                current_metadata_offset=self.metadata_offset,
                want_shut_down=want_shut_down,
            ),
        )
        self.fenced = response.is_fenced
        return response

    def start(self) -> BrokerSession:
        self.heartbeat()
        self._thread.start()
        return self

    def wait_unfenced(self, timeout_s: float = 10.0) -> None:
        deadline = time.monotonic() + timeout_s
        while self.heartbeat().is_fenced:
            if time.monotonic() > deadline:
                raise TimeoutError(f"broker {self.broker_id} is still fenced")
            time.sleep(0.05)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.heartbeat()
            except KafkaError as exc:
                log.warning("broker %d heartbeat: %s", self.broker_id, exc)

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def shutdown(self) -> cpb.BrokerHeartbeatResponse:
        self.stop()
        return self.heartbeat(want_shut_down=True)
