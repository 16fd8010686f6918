"""The controller's channel to each broker (Kafka's ControllerChannelManager): one
queue and one sender thread per live broker, so requests reach each broker in the
order the controller made them, and a slow broker delays no other.

A request that fails (the broker restarting, the network) is retried with a backoff
while the broker stays registered; removing a broker drops what was queued for it. The
channel never blocks the controller's event thread.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import grpc

from migration.common.kafka_errors import error_name
from migration.common.rpc import channel as grpc_channel
from migration.proto import broker_pb2 as bpb

log = logging.getLogger(__name__)

RPC_TIMEOUT_S = 30.0
RETRY_BACKOFF_S = 0.2
# Errors a retry cannot cure: the request is dropped, loudly.
PERMANENT = frozenset(
    {
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.UNIMPLEMENTED,
        grpc.StatusCode.INTERNAL,
    }
)

Send = Callable[[grpc.Channel], Any]
_SERVICE = bpb.DESCRIPTOR.services_by_name["BrokerControl"]
# A request this large (a full UpdateMetadata or LeaderAndIsr: ~60 MB at a million
# partitions) is joined and handed to gRPC by one sender at a time, process-wide: while
# in flight it costs its joined copy and gRPC's own, and three brokers' at once took the
# active controller's peak at a million from ~790 to ~1,140 MiB. The price: a broker
# that does not answer holds the others' large requests for up to RPC_TIMEOUT_S an
# attempt (only a full pair of ~140,000 partitions or more is this large).
LARGE_REQUEST_BYTES = 8 * 1024 * 1024
_large_requests = threading.Lock()


class _BrokerSender:
    def __init__(self, broker_id: int, target: str) -> None:
        self.broker_id = broker_id
        self.target = target
        self.queue: queue.Queue[tuple[str, Send] | None] = queue.Queue()
        self.closed = threading.Event()
        self.channel = grpc_channel(target)
        self.thread = threading.Thread(
            target=self._run, name=f"controller-to-broker-{broker_id}", daemon=True
        )
        self.thread.start()

    def _run(self) -> None:
        while not self.closed.is_set():
            item = self.queue.get()
            if item is None:
                break
            what, send = item
            while not self.closed.is_set():
                try:
                    response = send(self.channel)
                except grpc.RpcError as exc:
                    if exc.code() in PERMANENT:
                        log.error("%s to broker %d refused: %s", what, self.broker_id, exc)
                        break
                    log.info(
                        "%s to broker %d failed (%s); retrying", what, self.broker_id, exc.code()
                    )
                    self.closed.wait(RETRY_BACKOFF_S)
                    continue
                if getattr(response, "error_code", 0):
                    log.warning(
                        "broker %d refused %s: %s %s",
                        self.broker_id,
                        what,
                        error_name(response.error_code),
                        response.error_message,
                    )
                break
        self.channel.close()

    def close(self) -> None:
        self.closed.set()
        self.queue.put(None)


class ControllerChannel:
    """Thread-safe: the controller's event thread adds, removes and sends."""

    def __init__(self) -> None:
        self._senders: dict[int, _BrokerSender] = {}
        self._lock = threading.Lock()

    def set_brokers(self, targets: dict[int, str]) -> None:
        """Keep one sender per live broker (``id -> host:port`` of its internal
        listener); a broker whose endpoint changed gets a new sender."""
        with self._lock:
            for broker_id in list(self._senders):
                sender = self._senders[broker_id]
                if targets.get(broker_id) != sender.target:
                    sender.close()
                    del self._senders[broker_id]
            for broker_id, target in targets.items():
                if broker_id not in self._senders:
                    self._senders[broker_id] = _BrokerSender(broker_id, target)

    def send(self, broker_id: int, what: str, send: Send) -> None:
        with self._lock:
            sender = self._senders.get(broker_id)
        if sender is not None:
            sender.queue.put((what, send))

    def close(self) -> None:
        self.set_brokers({})


@dataclass(frozen=True)
class Rpc:
    """A queued BrokerControl call: ``method`` with its request already in protobuf's
    wire format, in ``parts`` joined only when sent (a large request's parts are shared
    between brokers; see :mod:`~migration.zkcontroller.state_requests`); bounded by
    RPC_TIMEOUT_S once sent. A request of :data:`LARGE_REQUEST_BYTES` or more waits
    for any other such request of this process to be answered first."""

    method: str
    parts: tuple[bytes | bytearray, ...]  # a bytearray is never changed once queued

    def __call__(self, channel: grpc.Channel) -> Any:
        spec = _SERVICE.methods_by_name[self.method]
        call = channel.unary_unary(
            f"/{_SERVICE.full_name}/{self.method}",
            request_serializer=None,  # sent as encoded
            response_deserializer=getattr(bpb, spec.output_type.name).FromString,
        )
        if sum(map(len, self.parts)) < LARGE_REQUEST_BYTES:
            return call(b"".join(self.parts), timeout=RPC_TIMEOUT_S)
        with _large_requests:
            return call(b"".join(self.parts), timeout=RPC_TIMEOUT_S)

    @property
    def request(self) -> Any:
        """The request decoded (for tests and logs)."""
        spec = _SERVICE.methods_by_name[self.method]
        return getattr(bpb, spec.input_type.name).FromString(b"".join(self.parts))


def rpc(method: str, request: Any) -> Rpc:
    return Rpc(method, (request.SerializeToString(),))
