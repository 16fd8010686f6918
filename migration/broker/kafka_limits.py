"""What a broker's Kafka listeners accept from clients, in total: Kafka's socket settings.

- ``socket.request.max.bytes`` (104857600, Kafka's): one request frame.
- ``queued.max.request.bytes`` (104857600; Kafka's -1 has no bound): the request bytes
  read and not yet answered, over every connection. A frame that does not fit waits until
  answers free room (Kafka's memory pool).
- ``max.connections`` (1000; Kafka has no bound): open client connections on all
  listeners; one more is closed at once.
- ``max.connections.per.ip`` (no bound, Kafka's): open connections from one address.
- ``connections.max.idle.ms`` (600000, Kafka's): a connection with no request for that
  long is closed, and so is one whose frame has not arrived whole that long after its size.
- ``connection.failed.authentication.delay.ms`` (100, Kafka's): how long a failed SASL
  login's answer is held before the connection closes (others are served meanwhile).

Two defaults are bounded where Kafka's are not: a metadata-only broker has no produce
traffic to size them for, and an unbounded default let three clients hold 250 MB and
three thousand idle connections stay open.
"""

from __future__ import annotations

import asyncio
import collections
from dataclasses import dataclass

from migration.limits import INT32_MAX
from migration.properties import TypedProperties

SOCKET_REQUEST_MAX_BYTES = 100 * 1024 * 1024  # Kafka's socket.request.max.bytes default

KEYS = {
    "socket.request.max.bytes", "queued.max.request.bytes", "max.connections",
    "max.connections.per.ip", "connections.max.idle.ms",
    "connection.failed.authentication.delay.ms",
}  # fmt: skip


@dataclass(frozen=True)
class SocketLimits:
    request_max_bytes: int = SOCKET_REQUEST_MAX_BYTES
    queued_max_request_bytes: int = SOCKET_REQUEST_MAX_BYTES
    max_connections: int = 1000
    max_connections_per_ip: int = INT32_MAX
    connections_max_idle_ms: int = 600_000
    failed_authentication_delay_ms: int = 100


def socket_limits(typed: TypedProperties) -> SocketLimits:
    """The listeners' limits from Kafka's properties; a problem is added to ``typed``'s
    list (``queued.max.request.bytes`` smaller than one request could never admit it)."""
    request = typed.integer("socket.request.max.bytes", SOCKET_REQUEST_MAX_BYTES, 1024)
    queued = typed.integer("queued.max.request.bytes", SOCKET_REQUEST_MAX_BYTES, 1024)
    if queued < request:
        typed.problems.append(
            f"queued.max.request.bytes={queued} is smaller than socket.request.max.bytes="
            f"{request}: a request of that size could never be read"
        )
    return SocketLimits(
        request_max_bytes=request,
        queued_max_request_bytes=queued,
        max_connections=typed.integer("max.connections", 1000, 1),
        max_connections_per_ip=typed.integer("max.connections.per.ip", INT32_MAX, 1),
        connections_max_idle_ms=typed.integer("connections.max.idle.ms", 600_000, 100),
        failed_authentication_delay_ms=typed.integer(
            "connection.failed.authentication.delay.ms", 100, 0
        ),
    )


class RequestMemory:
    """``queued.max.request.bytes`` over every connection of a listener set: a frame's
    bytes are taken before it is read and given back once it is answered. Frames wait in
    arrival order (a big one is not starved by small ones). Asyncio only (one event
    loop); :meth:`give` is synchronous, so a ``finally`` always returns what was taken."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.used = 0
        self._waiting: collections.deque[tuple[int, asyncio.Future[None]]] = collections.deque()

    async def take(self, n: int) -> None:
        if not self._waiting and self.used + n <= self.capacity:
            self.used += n
            return
        granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (n, granted)
        self._waiting.append(entry)
        try:
            await granted
        except asyncio.CancelledError:
            if entry in self._waiting:
                self._waiting.remove(entry)
            elif not granted.cancelled():
                self.give(n)  # granted just as it was cancelled: hand it on
            raise

    def give(self, n: int) -> None:
        self.used -= n
        while self._waiting and self.used + self._waiting[0][0] <= self.capacity:
            size, granted = self._waiting.popleft()
            if not granted.cancelled():  # its taker is going away: nothing to grant
                self.used += size
                granted.set_result(None)


class Connections:
    """Open connections, in total and per address, against ``max.connections`` and
    ``max.connections.per.ip``."""

    def __init__(self, limits: SocketLimits) -> None:
        self.limits = limits
        self.total = 0
        self.per_ip: dict[str, int] = {}

    def admit(self, ip: str) -> str | None:
        """Count a new connection from ``ip``; the limit it would break (it is then not
        counted), or None."""
        if self.total >= self.limits.max_connections:
            return f"max.connections={self.limits.max_connections}"
        if self.per_ip.get(ip, 0) >= self.limits.max_connections_per_ip:
            return f"max.connections.per.ip={self.limits.max_connections_per_ip}"
        self.total += 1
        self.per_ip[ip] = self.per_ip.get(ip, 0) + 1
        return None

    def release(self, ip: str) -> None:
        self.total -= 1
        left = self.per_ip[ip] - 1
        if left:
            self.per_ip[ip] = left
        else:
            del self.per_ip[ip]
