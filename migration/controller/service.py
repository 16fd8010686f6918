"""The Controller gRPC service (asyncio): thin; every call is answered by the
QuorumController on the event loop (writes after their records commit) while the call
waits as a pending future, holding no thread. A call that outlives ``request_timeout_s``
gets REQUEST_TIMED_OUT, which is retriable: its write may still commit, exactly as with
Kafka. While the migration driver finds ZooKeeper too far behind the log (the bounded
write-behind), admin writes are answered REQUEST_TIMED_OUT at once, with the reason it
set (``QuorumController.write_behind_refusal``); the brokers' own writes go on.
DescribeMigration is answered by the driver, ReportAudit by the process (it keeps the
last audit's summary for the migration page), both from any thread. A BrokerHeartbeat that
times out is counted (``QuorumController.timed_out_heartbeats``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from google.protobuf.message import Message

from migration.common.kafka_errors import ErrorCode
from migration.controller.errors import request_error
from migration.controller.handlers import ADMIN_WRITES, HANDLERS, READERS
from migration.controller.quorum_controller import QuorumController
from migration.proto import controller_pb2 as cpb
from migration.proto import controller_pb2_grpc
from migration.raft.aio_host import answer
from migration.raft.event_loop import EventLoop

_SERVICE = cpb.DESCRIPTOR.services_by_name["Controller"]


def response_type(method: str) -> type[Message]:
    """The response message of a Controller RPC the quorum answers (KeyError for another)."""
    rpc = HANDLERS.get(method) or READERS[method]
    return rpc.response


def as_response(method: str, result: Message) -> Message:
    """A handler's answer as ``method``'s response: a bare RequestError is wrapped."""
    if isinstance(result, cpb.RequestError):
        return response_type(method)(error=result)
    return result


def with_error(method: str, result: Message) -> Any:
    """:func:`as_response`, returned as Any for the brokers' callers: they dispatch by
    method name, each reading the fields its own method's response has."""
    return as_response(method, result)


class ControllerServicer(controller_pb2_grpc.ControllerServicer):  # type: ignore[misc]
    def __init__(
        self,
        loop: EventLoop,
        controller: QuorumController,
        request_timeout_s: float = 30.0,
        migration: Callable[[], cpb.DescribeMigrationResponse] | None = None,
        audit: Callable[[cpb.ReportAuditRequest], cpb.ReportAuditResponse] | None = None,
    ) -> None:
        self._loop = loop
        self._controller = controller
        self._timeout = request_timeout_s
        self._migration = migration
        self._audit = audit

    async def DescribeMigration(  # noqa: N802
        self, request: cpb.DescribeMigrationRequest, context: Any
    ) -> cpb.DescribeMigrationResponse:
        """This controller's view of the migration (any controller answers)."""
        if self._migration is None:
            return cpb.DescribeMigrationResponse(
                error=request_error(ErrorCode.UNSUPPORTED_VERSION, "no migration driver here")
            )
        return self._migration()

    async def ReportAudit(  # noqa: N802
        self, request: cpb.ReportAuditRequest, context: Any
    ) -> cpb.ReportAuditResponse:
        """An audit's summary, kept for the migration page (any controller keeps it)."""
        if self._audit is None:
            return cpb.ReportAuditResponse(
                error=request_error(ErrorCode.UNSUPPORTED_VERSION, "no migration page here")
            )
        return self._audit(request)

    async def _answer(
        self, method: str, act: Callable[[Callable[[Message], None]], None]
    ) -> Message:
        def timed_out() -> Message:
            if method == "BrokerHeartbeat":
                self._controller.timed_out_heartbeats.add()
            return request_error(
                ErrorCode.REQUEST_TIMED_OUT, f"no answer within {self._timeout:.0f} s"
            )

        result = await answer(
            self._loop,
            act,
            self._timeout,
            on_timeout=timed_out,
            on_stopped=lambda: request_error(
                ErrorCode.NOT_CONTROLLER, "the controller is shutting down"
            ),
            name=method,
        )
        return as_response(method, result)

    async def write(self, method: str, request: Message) -> Message:
        refusal = self._controller.write_behind_refusal
        if refusal is not None and method in ADMIN_WRITES:
            return as_response(method, request_error(ErrorCode.REQUEST_TIMED_OUT, refusal))
        return await self._answer(
            method, lambda reply: self._controller.handle(method, request, reply)
        )

    async def read(self, method: str, request: Message) -> Message:
        reader = READERS[method]
        return await self._answer(
            method, lambda reply: reply(self._controller.read(reader, request))
        )


def _writer(method: str) -> Callable[[ControllerServicer, Message, Any], Awaitable[Message]]:
    async def call(self: ControllerServicer, request: Message, context: Any) -> Message:
        return await self.write(method, request)

    call.__name__ = method
    return call


def _reader(method: str) -> Callable[[ControllerServicer, Message, Any], Awaitable[Message]]:
    async def call(self: ControllerServicer, request: Message, context: Any) -> Message:
        return await self.read(method, request)

    call.__name__ = method
    return call


for _method in _SERVICE.methods_by_name:
    if _method in ("DescribeMigration", "ReportAudit"):
        continue
    setattr(
        ControllerServicer,
        _method,
        _writer(_method) if _method in HANDLERS else _reader(_method),
    )
