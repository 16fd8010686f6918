"""TCP proxies on loopback that the chaos runs put on every link they break: one proxy
per directed link (a client process's connections to one server), so a link can be
broken one way only -- one way by who opens the connection, not by the direction of
bytes: breaking (i->j) breaks the connections i opens to j, both ways (i's requests
and j's answers to them), and leaves j's own connections to i whole (j's requests to i
are still answered). No mode drops one direction of bytes on a connection while the
other flows.

A :class:`TcpProxy` forwards ``127.0.0.1:port`` to ``127.0.0.1:upstream_port``, in one
of three modes (:attr:`TcpProxy.mode`), with an optional delay:

* ``open``: bytes pass, each chunk either way after ``delay_s`` (order kept): with a
  delay, a slow network.
* ``cut`` (:meth:`TcpProxy.cut`): every open connection is reset (aborted: RST) and new
  ones are reset as soon as they are accepted: the client sees its connections fail at
  once, as when a host is unreachable and says so. Longer than a ZooKeeper session
  timeout, it expires the session of the client behind the proxy while that process
  keeps running.
* ``blackhole`` (:meth:`TcpProxy.blackhole`): connections stay open and new ones are
  accepted, but nothing passes either way: the proxy stops reading, so what the client
  sends waits in the sockets' buffers (and a full buffer blocks the sender), and no
  answer comes. The client sees timeouts, never a reset: a network that silently drops
  packets. :meth:`TcpProxy.heal` lets the held bytes through, in order, as TCP's
  retransmissions would once the network is back; a connection accepted meanwhile
  reaches the server only then.

:meth:`TcpProxy.heal` puts a proxy back to ``open`` (its delay kept). ``upstream_port``
may be set after the proxy starts (a client configured before its server's port is
known); until then the proxy resets every connection, as a closed port would.

:class:`Links` is a run's set of proxies between its processes, by directed link.

Every proxy runs on one asyncio loop on a daemon thread shared by the process's proxies;
the controls are thread-safe.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import threading
import time
from collections.abc import Coroutine, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from migration.common.ports import unused_port

CHUNK = 64 * 1024
Mode = Literal["open", "cut", "blackhole"]


class _Loop:
    """The asyncio loop every proxy of the process runs on (started on first use)."""

    _lock = threading.Lock()
    _loop: asyncio.AbstractEventLoop | None = None

    @classmethod
    def get(cls) -> asyncio.AbstractEventLoop:
        with cls._lock:
            if cls._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="tcp-proxies", daemon=True)
                thread.start()
                cls._loop = loop
            return cls._loop


class TcpProxy:
    """Forwards ``127.0.0.1:port`` to ``127.0.0.1:upstream_port`` (see the module doc)."""

    def __init__(self, upstream_port: int | None = None, name: str = "") -> None:
        self.upstream_port = upstream_port
        self.name = name
        self.delay_s = 0.0
        self._cut_until = 0.0  # monotonic; math.inf: until healed
        self._closed = False
        self._loop = _Loop.get()
        self._gate = asyncio.Event()  # set: bytes pass (not blackholed)
        self._writers: set[asyncio.StreamWriter] = set()
        self._server: asyncio.Server | None = None
        self.port = 0
        for _ in range(5):  # another process may take the port between the pick and the bind
            port = unused_port()
            try:
                self._call(self._start(port))
            except OSError:
                continue
            self.port = port
            break
        if not self.port:
            raise RuntimeError(f"the proxy {name or '(unnamed)'} found no port to listen on")

    def __repr__(self) -> str:
        return f"TcpProxy({self.name or '?'} :{self.port} -> :{self.upstream_port}, {self.mode})"

    def _call(self, coro: Coroutine[Any, Any, None]) -> None:
        asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout=10)

    async def _start(self, port: int) -> None:
        self._gate.set()
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", port)

    # --- controls (any thread) ---------------------------------------------------------

    @property
    def mode(self) -> Mode:
        if time.monotonic() < self._cut_until:
            return "cut"
        return "open" if self._gate.is_set() else "blackhole"

    def cut(self, seconds: float = math.inf) -> None:
        """Reset every connection through the proxy and every new one, for ``seconds``
        (by default until :meth:`heal`)."""
        self._cut_until = time.monotonic() + seconds
        self._loop.call_soon_threadsafe(self._abort_all)

    def blackhole(self) -> None:
        """Hold every byte either way, on open and new connections, until :meth:`heal`."""
        self._loop.call_soon_threadsafe(self._gate.clear)

    def heal(self) -> None:
        """Back to ``open``: new connections pass, held bytes flow (the delay is kept)."""
        self._cut_until = 0.0
        self._loop.call_soon_threadsafe(self._gate.set)

    def close(self) -> None:
        """Stop listening and reset every connection."""

        async def stop() -> None:
            self._closed = True
            if self._server is not None:
                self._server.close()
            self._abort_all()
            self._gate.set()  # held pipes see their transports closing and end

        with contextlib.suppress(RuntimeError, TimeoutError):
            self._call(stop())

    # --- the loop's side ---------------------------------------------------------------

    def _abort_all(self) -> None:
        for writer in list(self._writers):
            writer.transport.abort()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            await self._gate.wait()  # a blackhole: accepted, the server not reached yet
            if self._closed or self.mode == "cut" or self.upstream_port is None:
                return
            try:
                up_reader, up_writer = await asyncio.open_connection(
                    "127.0.0.1", self.upstream_port
                )
            except OSError:
                return
            self._writers.add(up_writer)
            try:
                await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))
            finally:
                self._writers.discard(up_writer)
                up_writer.transport.abort()
        finally:
            self._writers.discard(writer)
            writer.transport.abort()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while chunk := await reader.read(CHUNK):
                if self.delay_s:
                    await asyncio.sleep(self.delay_s)
                await self._gate.wait()  # blackholed: held here, and nothing more is read
                if self.mode == "cut" or writer.transport.is_closing():
                    break
                writer.write(chunk)
                await writer.drain()
        writer.transport.abort()


@dataclass
class Links:
    """A run's proxies by directed link: ``controllers[(i, j)]`` carries controller
    ``i``'s connections to controller ``j`` (its Raft calls, its forwarded requests),
    both directions of their bytes; ``brokers[(b, j)]`` broker ``b``'s connections to
    controller ``j``. "i cannot reach j" is ``controllers[(i, j)]`` broken alone: i's
    calls to j fail, j's calls to i (over ``controllers[(j, i)]``) are still answered;
    a symmetric partition breaks both."""

    controllers: dict[tuple[int, int], TcpProxy] = field(default_factory=dict)
    brokers: dict[tuple[int, int], TcpProxy] = field(default_factory=dict)

    def all(self) -> Iterator[TcpProxy]:
        yield from self.controllers.values()
        yield from self.brokers.values()

    def between(self, a: int, b: int) -> list[TcpProxy]:
        """Both directions of the link between controllers ``a`` and ``b``."""
        return [self.controllers[(a, b)], self.controllers[(b, a)]]

    def around(self, node: int) -> list[TcpProxy]:
        """Every link between controller ``node`` and the other controllers, both ways."""
        return [p for (i, j), p in self.controllers.items() if node in (i, j)]

    def from_broker(self, broker: int) -> list[TcpProxy]:
        return [p for (b, _), p in self.brokers.items() if b == broker]

    def heal(self, proxies: Iterable[TcpProxy] | None = None) -> None:
        for proxy in self.all() if proxies is None else proxies:
            proxy.heal()

    def close(self) -> None:
        for proxy in self.all():
            proxy.close()
