"""The RaftNode on the network: the outgoing gRPC transport and the incoming servicer.

Threading contract: outgoing calls are gRPC futures whose answers are posted to the
event loop (:mod:`.event_loop`); incoming calls are served on asyncio
(:mod:`.aio_host`): each waits for the node's answer as a pending future, never holding
a thread, so held fetches from many observers cannot starve elections. A handler that
raises answers UNKNOWN_SERVER_ERROR at once unless the error is a fault
(:func:`~migration.raft.faults.is_fatal`), which escapes to the loop and halts the node.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import grpc

from migration.common import rpc
from migration.common.kafka_errors import ErrorCode
from migration.proto import raft_pb2 as pb
from migration.proto import raft_pb2_grpc
from migration.raft.aio_host import answer
from migration.raft.config import Address
from migration.raft.event_loop import EventLoop, named
from migration.raft.faults import is_fatal
from migration.raft.node import RaftNode, Request, Response

log = logging.getLogger(__name__)

REQUEST_MARGIN_S = 1.5  # a call's deadline beyond the long-poll wait


_METHODS: dict[type, str] = {
    pb.VoteRequest: "Vote",
    pb.BeginQuorumEpochRequest: "BeginQuorumEpoch",
    pb.EndQuorumEpochRequest: "EndQuorumEpoch",
    pb.FetchRequest: "Fetch",
    pb.FetchSnapshotRequest: "FetchSnapshot",
    pb.DescribeQuorumRequest: "DescribeQuorum",
    pb.AddRaftVoterRequest: "AddRaftVoter",
    pb.RemoveRaftVoterRequest: "RemoveRaftVoter",
    pb.UpdateKRaftVersionRequest: "UpdateKRaftVersion",
}
VOTER_CHANGE_WAIT_S = 10.0  # an operator's voter change is answered once committed


class GrpcTransport:
    """Outgoing Raft calls: one channel per voter, answers posted to the loop."""

    def __init__(
        self, loop: EventLoop, voters: dict[int, Address], request_timeout_ms: int
    ) -> None:
        self._loop = loop
        self._timeout_s = request_timeout_ms / 1000.0
        self._channels = {v: rpc.channel(str(a)) for v, a in voters.items()}
        self._stubs = {v: raft_pb2_grpc.RaftStub(c) for v, c in self._channels.items()}
        self.node: RaftNode | None = None

    def send(self, destination: int, request: Request) -> None:
        stub = self._stubs.get(destination)
        if stub is None:
            return
        timeout = self._timeout_s
        if isinstance(request, pb.FetchRequest):
            timeout += request.max_wait_ms / 1000.0 + REQUEST_MARGIN_S
        method = _METHODS[type(request)]
        future = getattr(stub, method).future(request, timeout=timeout)

        def done(f: grpc.Future) -> None:
            response: Response | None
            try:
                response = f.result()
            except grpc.RpcError:
                response = None
            node = self.node
            if node is not None:
                self._loop.post(
                    named(
                        f"{method} response from {destination}",
                        lambda: node.handle_response(destination, request, response),
                    )
                )

        future.add_done_callback(done)

    def describe_quorum(self, voter: int, timeout_s: float) -> pb.DescribeQuorumResponse | None:
        """A blocking DescribeQuorum to ``voter`` (forwarding from a non-leader)."""
        return self.forward(voter, pb.DescribeQuorumRequest(), timeout_s)  # type: ignore[return-value]

    def forward(self, voter: int, request: Request, timeout_s: float) -> Response | None:
        """A blocking call of ``request`` to ``voter`` (None: no answer)."""
        stub = self._stubs.get(voter)
        if stub is None:
            return None
        try:
            return getattr(stub, _METHODS[type(request)])(request, timeout=timeout_s)  # type: ignore[no-any-return]
        except grpc.RpcError:
            return None

    def close(self) -> None:
        for channel in self._channels.values():
            channel.close()


class RaftServicer(raft_pb2_grpc.RaftServicer):  # type: ignore[misc]
    """Incoming Raft calls (asyncio), answered by the node on the loop thread; a held
    fetch is a pending future until the leader answers it."""

    def __init__(
        self, loop: EventLoop, node: RaftNode, transport: GrpcTransport | None = None
    ) -> None:
        self._loop = loop
        self._node = node
        self._transport = transport

    async def _handle(self, request: Request, kind: type[Any]) -> Any:
        def act(reply: Any) -> None:
            try:
                self._node.handle_request(request, reply)
            except Exception as exc:
                if is_fatal(exc):
                    raise
                log.exception("%s failed", type(request).__name__)
                reply(kind(error_code=ErrorCode.UNKNOWN_SERVER_ERROR, leader_id=-1))

        wait = 5.0 + (
            self._node.config.fetch_max_wait_ms / 1000.0
            if isinstance(request, pb.FetchRequest)
            else 0
        )
        if isinstance(
            request,
            pb.AddRaftVoterRequest | pb.RemoveRaftVoterRequest | pb.UpdateKRaftVersionRequest,
        ):
            wait = VOTER_CHANGE_WAIT_S
        return await answer(
            self._loop,
            act,
            wait,
            on_timeout=lambda: kind(error_code=ErrorCode.REQUEST_TIMED_OUT, leader_id=-1),
            on_stopped=lambda: kind(error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER, leader_id=-1),
            name=_METHODS[type(request)],
        )

    async def Vote(self, request: pb.VoteRequest, context: Any) -> pb.VoteResponse:
        return await self._handle(request, pb.VoteResponse)  # type: ignore[no-any-return]

    async def BeginQuorumEpoch(
        self, request: pb.BeginQuorumEpochRequest, context: Any
    ) -> pb.BeginQuorumEpochResponse:
        return await self._handle(request, pb.BeginQuorumEpochResponse)  # type: ignore[no-any-return]

    async def EndQuorumEpoch(
        self, request: pb.EndQuorumEpochRequest, context: Any
    ) -> pb.EndQuorumEpochResponse:
        return await self._handle(request, pb.EndQuorumEpochResponse)  # type: ignore[no-any-return]

    async def Fetch(self, request: pb.FetchRequest, context: Any) -> pb.FetchResponse:
        return await self._handle(request, pb.FetchResponse)  # type: ignore[no-any-return]

    async def FetchSnapshot(
        self, request: pb.FetchSnapshotRequest, context: Any
    ) -> pb.FetchSnapshotResponse:
        return await self._handle(request, pb.FetchSnapshotResponse)  # type: ignore[no-any-return]

    async def DescribeQuorum(
        self, request: pb.DescribeQuorumRequest, context: Any
    ) -> pb.DescribeQuorumResponse:
        """Answered by the leader; any other voter forwards it there."""
        return await self._forwarded(request, pb.DescribeQuorumResponse, 5.0)  # type: ignore[no-any-return]

    async def AddRaftVoter(
        self, request: pb.AddRaftVoterRequest, context: Any
    ) -> pb.RaftVoterChangeResponse:
        """KIP-853's AddRaftVoter: the leader's; any other voter forwards it there."""
        return await self._forwarded(  # type: ignore[no-any-return]
            request, pb.RaftVoterChangeResponse, VOTER_CHANGE_WAIT_S + 1
        )

    async def RemoveRaftVoter(
        self, request: pb.RemoveRaftVoterRequest, context: Any
    ) -> pb.RaftVoterChangeResponse:
        """KIP-853's RemoveRaftVoter: the leader's; any other voter forwards it there."""
        return await self._forwarded(  # type: ignore[no-any-return]
            request, pb.RaftVoterChangeResponse, VOTER_CHANGE_WAIT_S + 1
        )

    async def UpdateKRaftVersion(
        self, request: pb.UpdateKRaftVersionRequest, context: Any
    ) -> pb.RaftVoterChangeResponse:
        """``features upgrade --feature kraft.version=1``: the leader's; any other voter
        forwards it there."""
        return await self._forwarded(  # type: ignore[no-any-return]
            request, pb.RaftVoterChangeResponse, VOTER_CHANGE_WAIT_S + 1
        )

    async def _forwarded(self, request: Request, kind: type[Any], timeout_s: float) -> Any:
        """This node's answer, or the leader's when this node is not the leader."""
        response = await self._handle(request, kind)
        leader = response.leader_id
        transport = self._transport
        if (
            response.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
            and leader >= 0
            and leader != self._node.node_id
            and transport is not None
        ):
            forwarded = await asyncio.to_thread(transport.forward, leader, request, timeout_s)
            if forwarded is not None:
                return forwarded
        return response
