"""What a broker's Kafka listeners accept from clients, in total: Kafka's socket settings.

- ``socket.request.max.bytes`` (104857600, Kafka's): one request frame.
- ``queued.max.request.bytes`` (``socket.request.max.bytes``; Kafka's -1, no bound, is
  taken too): the bytes of large requests (over :data:`POOLED_FROM`, 64 KiB) read and not
  yet answered, over every connection. Such a frame takes its size from the pool before
  it is read and waits, in arrival order, until answers free room (Kafka's memory pool).
  Smaller frames (Metadata, logins, almost every admin request) never wait: a client
  that announces a large frame and sends it slowly holds the pool until
  ``connections.max.idle.ms``, as in Kafka, but it cannot hold up anyone's small requests,
  and those cost at most ``max.connections`` x 64 KiB.
- ``max.connections`` (1000; Kafka has no bound): open client connections on all
  listeners. One more is closed at once (Kafka stops accepting until one closes; closing
  costs less than a backlog).
- ``max.connections.per.ip`` (no bound, Kafka's): open connections from one address.
- ``connections.max.idle.ms`` (600000, Kafka's): a connection with no request for that
  long is closed, and so is one whose frame has not arrived whole that long after its size.
- ``connection.failed.authentication.delay.ms`` (100, Kafka's): how long a failed SASL
  login's answer is held before the connection closes (others are served meanwhile).

Two defaults are bounded where Kafka's are not: a metadata-only broker has no produce
traffic to size them for, and unbounded defaults let three clients hold 250 MB and
three thousand idle connections stay open.
"""

from __future__ import annotations

import asyncio
import collections
from dataclasses import dataclass

from migration.common.limits import INT32_MAX
from migration.common.properties import TypedProperties

SOCKET_REQUEST_MAX_BYTES = 100 * 1024 * 1024  # Kafka's socket.request.max.bytes default
POOLED_FROM = 64 * 1024  # frames larger than this take their bytes from the pool
UNBOUNDED = -1  # Kafka's queued.max.request.bytes for no bound

KEYS = {
    "socket.request.max.bytes", "queued.max.request.bytes", "max.connections",
    "max.connections.per.ip", "connections.max.idle.ms",
    "connection.failed.authentication.delay.ms",
}  # fmt: skip


@dataclass(frozen=True)
class SocketLimits:
    request_max_bytes: int = SOCKET_REQUEST_MAX_BYTES
    queued_max_request_bytes: int = SOCKET_REQUEST_MAX_BYTES  # UNBOUNDED: no pool
    max_connections: int = 1000
    max_connections_per_ip: int = INT32_MAX
    connections_max_idle_ms: int = 600_000
    failed_authentication_delay_ms: int = 100


def socket_limits(typed: TypedProperties) -> SocketLimits:
    """The listeners' limits from Kafka's properties; a problem is added to ``typed``'s
    list (``queued.max.request.bytes`` smaller than one request could never admit it)."""
    request = typed.integer("socket.request.max.bytes", SOCKET_REQUEST_MAX_BYTES, 1024)
    queued = typed.integer("queued.max.request.bytes", request, UNBOUNDED)
    if queued != UNBOUNDED and queued < request:
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
        """``capacity``: queued.max.request.bytes (:data:`UNBOUNDED`: frames never wait)."""
        self.capacity = capacity if capacity != UNBOUNDED else float("inf")
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
                self.give(0)  # those behind it may fit now
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
