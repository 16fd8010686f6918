"""The RaftNode in a process: one event-loop thread, gRPC in and out.

Threading contract: the RaftNode and everything layered on it (the quorum controller)
are touched only by the loop thread. gRPC server threads hand requests to the loop with
:meth:`EventLoop.call` and wait for the answer; answers to outgoing calls arrive on
gRPC's threads and are posted to the loop. ``on_idle`` hooks run after each round of
events, before the node's timers and flush (the controller turns the requests it
gathered into one batch there).

Faults: an exception that escapes an event (a failed fsync, a broken invariant, a record
that cannot be applied) ends the loop and goes to ``on_fatal``, which by default halts
the process (:func:`migration.raft.faults.halt`). Request handlers catch their own
non-fatal errors and answer UNKNOWN_SERVER_ERROR at once, so only real faults get here.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import grpc

from migration.kafka_errors import ErrorCode
from migration.proto import raft_pb2 as pb
from migration.proto import raft_pb2_grpc
from migration.raft.config import Address
from migration.raft.faults import halt, is_fatal
from migration.raft.node import RaftNode, Request, Response

log = logging.getLogger(__name__)

T = TypeVar("T")
REQUEST_MARGIN_S = 1.5  # a call's deadline beyond the long-poll wait


def monotonic_ms() -> float:
    return time.monotonic() * 1000.0


class LoopStoppedError(Exception):
    pass


class EventLoop:
    """A single thread running posted callables in order, between the node's timers."""

    def __init__(
        self,
        name: str = "raft-loop",
        on_fatal: Callable[[str, BaseException], None] = halt,
    ) -> None:
        self._queue: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._node: RaftNode | None = None
        self._idle_hooks: list[Callable[[], None]] = []
        self._running = False
        self._on_fatal = on_fatal
        self.fault: BaseException | None = None  # what stopped the loop, if anything

    def start(self, node: RaftNode) -> None:
        self._node = node
        self._running = True
        self._thread.start()

    def on_idle(self, hook: Callable[[], None]) -> None:
        self._idle_hooks.append(hook)

    def post(self, action: Callable[[], None]) -> None:
        self._queue.put(action)

    def call(self, action: Callable[[], T], timeout: float) -> T:
        """Run ``action`` on the loop and return its result (raising what it raised)."""
        if not self._running:
            raise LoopStoppedError("the controller is shutting down")
        done = threading.Event()
        box: list[Any] = []

        def run() -> None:
            try:
                box.append((True, action()))
            except BaseException as exc:  # handed back to the calling thread
                box.append((False, exc))
            done.set()

        self.post(run)
        if not done.wait(timeout):
            raise TimeoutError(f"the event loop did not answer within {timeout:.1f} s")
        ok, value = box[0]
        if not ok:
            raise value
        return value  # type: ignore[no-any-return]

    def stop(self) -> None:
        self._running = False
        self._queue.put(None)
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        try:
            self._rounds()
        except BaseException as exc:  # a fault: stop, never limp on
            self._running = False
            self.fault = exc
            self._on_fatal(f"event loop: {type(exc).__name__}: {exc}", exc)

    def _rounds(self) -> None:
        node = self._node
        assert node is not None
        while self._running:
            wait = max(0.0, (node.next_deadline() - monotonic_ms()) / 1000.0)
            try:
                item = self._queue.get(timeout=min(wait, 0.5))
            except queue.Empty:
                item = None
            for _ in range(10000):  # a round: what is queued now, then the timers
                if item is not None:
                    item()
                elif not self._running:
                    return
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
            for hook in self._idle_hooks:
                hook()
            if node.next_deadline() <= monotonic_ms():
                node.tick()


_METHODS: dict[type, str] = {
    pb.VoteRequest: "Vote",
    pb.BeginQuorumEpochRequest: "BeginQuorumEpoch",
    pb.EndQuorumEpochRequest: "EndQuorumEpoch",
    pb.FetchRequest: "Fetch",
    pb.FetchSnapshotRequest: "FetchSnapshot",
    pb.DescribeQuorumRequest: "DescribeQuorum",
}


class GrpcTransport:
    """Outgoing Raft calls: one channel per voter, answers posted to the loop."""

    def __init__(
        self, loop: EventLoop, voters: dict[int, Address], request_timeout_ms: int
    ) -> None:
        self._loop = loop
        self._timeout_s = request_timeout_ms / 1000.0
        self._channels = {v: grpc.insecure_channel(str(a)) for v, a in voters.items()}
        self._stubs = {v: raft_pb2_grpc.RaftStub(c) for v, c in self._channels.items()}
        self.node: RaftNode | None = None

    def send(self, destination: int, request: Request) -> None:
        stub = self._stubs.get(destination)
        if stub is None:
            return
        timeout = self._timeout_s
        if isinstance(request, pb.FetchRequest):
            timeout += request.max_wait_ms / 1000.0 + REQUEST_MARGIN_S
        future = getattr(stub, _METHODS[type(request)]).future(request, timeout=timeout)

        def done(f: grpc.Future) -> None:
            response: Response | None
            try:
                response = f.result()
            except grpc.RpcError:
                response = None
            node = self.node
            if node is not None:
                self._loop.post(lambda: node.handle_response(destination, request, response))

        future.add_done_callback(done)

    def describe_quorum(self, voter: int, timeout_s: float) -> pb.DescribeQuorumResponse | None:
        """A blocking DescribeQuorum to ``voter`` (forwarding from a non-leader)."""
        stub = self._stubs.get(voter)
        if stub is None:
            return None
        try:
            return stub.DescribeQuorum(pb.DescribeQuorumRequest(), timeout=timeout_s)  # type: ignore[no-any-return]
        except grpc.RpcError:
            return None

    def close(self) -> None:
        for channel in self._channels.values():
            channel.close()


class RaftServicer(raft_pb2_grpc.RaftServicer):  # type: ignore[misc]
    """Incoming Raft calls, answered by the node on the loop thread (a held fetch keeps
    its gRPC thread waiting until the leader answers it)."""

    def __init__(
        self, loop: EventLoop, node: RaftNode, transport: GrpcTransport | None = None
    ) -> None:
        self._loop = loop
        self._node = node
        self._transport = transport

    def _handle(self, request: Request, context: grpc.ServicerContext, kind: type[Any]) -> Any:
        answered = threading.Event()
        box: list[Response] = []

        def reply(response: Response) -> None:
            box.append(response)
            answered.set()

        def run() -> None:
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
        self._loop.post(run)
        if not answered.wait(wait):
            return kind(error_code=ErrorCode.REQUEST_TIMED_OUT, leader_id=-1)
        return box[0]

    def Vote(self, request: pb.VoteRequest, context: grpc.ServicerContext) -> pb.VoteResponse:
        return self._handle(request, context, pb.VoteResponse)  # type: ignore[no-any-return]

    def BeginQuorumEpoch(
        self, request: pb.BeginQuorumEpochRequest, context: grpc.ServicerContext
    ) -> pb.BeginQuorumEpochResponse:
        return self._handle(request, context, pb.BeginQuorumEpochResponse)  # type: ignore[no-any-return]

    def EndQuorumEpoch(
        self, request: pb.EndQuorumEpochRequest, context: grpc.ServicerContext
    ) -> pb.EndQuorumEpochResponse:
        return self._handle(request, context, pb.EndQuorumEpochResponse)  # type: ignore[no-any-return]

    def Fetch(self, request: pb.FetchRequest, context: grpc.ServicerContext) -> pb.FetchResponse:
        return self._handle(request, context, pb.FetchResponse)  # type: ignore[no-any-return]

    def FetchSnapshot(
        self, request: pb.FetchSnapshotRequest, context: grpc.ServicerContext
    ) -> pb.FetchSnapshotResponse:
        return self._handle(request, context, pb.FetchSnapshotResponse)  # type: ignore[no-any-return]

    def DescribeQuorum(
        self, request: pb.DescribeQuorumRequest, context: grpc.ServicerContext
    ) -> pb.DescribeQuorumResponse:
        """Answered by the leader; any other voter forwards it there."""
        response: pb.DescribeQuorumResponse = self._handle(
            request, context, pb.DescribeQuorumResponse
        )
        leader = response.leader_id
        if (
            response.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
            and leader >= 0
            and leader != self._node.node_id
            and self._transport is not None
        ):
            forwarded = self._transport.describe_quorum(leader, timeout_s=5.0)
            if forwarded is not None:
                return forwarded
        return response
