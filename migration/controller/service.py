"""The Controller gRPC service: thin; every call is answered by the QuorumController on
the event loop (writes after their records commit). A call that outlives
``request_timeout_s`` gets REQUEST_TIMED_OUT, which is retriable: its write may still
commit, exactly as with Kafka."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import grpc

from migration.controller.errors import request_error
from migration.controller.handlers import HANDLERS, READERS
from migration.controller.quorum_controller import QuorumController
from migration.kafka_errors import ErrorCode
from migration.proto import controller_pb2 as cpb
from migration.proto import controller_pb2_grpc
from migration.raft.runtime import EventLoop, LoopStoppedError

_SERVICE = cpb.DESCRIPTOR.services_by_name["Controller"]


def _response_type(method: str) -> type[Any]:
    return getattr(cpb, _SERVICE.methods_by_name[method].output_type.name)  # type: ignore[no-any-return]


def _wrap(response_type: type[Any], result: Any) -> Any:
    if isinstance(result, cpb.RequestError):
        return response_type(error=result)
    return result


class ControllerServicer(controller_pb2_grpc.ControllerServicer):  # type: ignore[misc]
    def __init__(
        self, loop: EventLoop, controller: QuorumController, request_timeout_s: float = 30.0
    ) -> None:
        self._loop = loop
        self._controller = controller
        self._timeout = request_timeout_s

    def _timed_out(self, response_type: type[Any]) -> Any:
        return response_type(
            error=request_error(
                ErrorCode.REQUEST_TIMED_OUT, f"no answer within {self._timeout:.0f} s"
            )
        )

    def write(self, method: str, request: Any) -> Any:
        response_type = _response_type(method)
        handler = HANDLERS[method]
        answered = threading.Event()
        box: list[Any] = []

        def reply(result: Any) -> None:
            box.append(result)
            answered.set()

        self._loop.post(lambda: self._controller.write(handler, request, reply))
        if not answered.wait(self._timeout):
            return self._timed_out(response_type)
        return _wrap(response_type, box[0])

    def read(self, method: str, request: Any) -> Any:
        response_type = _response_type(method)
        reader = READERS[method]
        try:
            result = self._loop.call(lambda: self._controller.read(reader, request), self._timeout)
        except TimeoutError:
            return self._timed_out(response_type)
        except LoopStoppedError as exc:
            return response_type(error=request_error(ErrorCode.NOT_CONTROLLER, str(exc)))
        return _wrap(response_type, result)


def _writer(method: str) -> Callable[[ControllerServicer, Any, grpc.ServicerContext], Any]:
    def call(self: ControllerServicer, request: Any, context: grpc.ServicerContext) -> Any:
        return self.write(method, request)

    call.__name__ = method
    return call


def _reader(method: str) -> Callable[[ControllerServicer, Any, grpc.ServicerContext], Any]:
    def call(self: ControllerServicer, request: Any, context: grpc.ServicerContext) -> Any:
        return self.read(method, request)

    call.__name__ = method
    return call


for _method in _SERVICE.methods_by_name:
    setattr(
        ControllerServicer,
        _method,
        _writer(_method) if _method in HANDLERS else _reader(_method),
    )
