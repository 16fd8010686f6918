"""A TCP proxy on loopback that the chaos runs put between one controller and one
ZooKeeper server, to make that controller's network to ZooKeeper slow or cut it off.

* ``delay_s``: every chunk, either way, waits that long before it is passed on (order
  kept): a slow network.
* :meth:`cut` for ``seconds``: every open connection is closed and new ones are closed
  as soon as they are accepted until the time is up. Longer than the session timeout,
  ZooKeeper expires the session of the client behind the proxy while that process
  keeps running: the session expiry a long network partition causes.

The proxy runs an asyncio loop on a daemon thread; the controls are thread-safe.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time

from migration.common.ports import unused_port

CHUNK = 64 * 1024


class ZkProxy:
    """Forwards ``127.0.0.1:port`` to ``127.0.0.1:upstream_port``."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.port = unused_port()
        self.delay_s = 0.0
        self._cut_until = 0.0
        self._writers: set[asyncio.StreamWriter] = set()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"zk-proxy-{self.port}", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError(f"the proxy on port {self.port} did not start")

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(
            asyncio.start_server(self._serve, "127.0.0.1", self.port)
        )
        self._ready.set()
        try:
            self._loop.run_forever()
        finally:
            server.close()
            self._loop.close()

    @property
    def cut_off(self) -> bool:
        return time.monotonic() < self._cut_until

    def cut(self, seconds: float) -> None:
        """Close every connection through the proxy and refuse new ones for ``seconds``."""
        self._cut_until = time.monotonic() + seconds
        self._loop.call_soon_threadsafe(self._close_all)

    def _close_all(self) -> None:
        for writer in list(self._writers):
            writer.transport.abort()

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self._close_all)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.cut_off:
            writer.transport.abort()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        except OSError:
            writer.transport.abort()
            return
        self._writers |= {writer, up_writer}
        try:
            await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))
        finally:
            for w in (writer, up_writer):
                self._writers.discard(w)
                w.transport.abort()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while chunk := await reader.read(CHUNK):
                if self.delay_s:
                    await asyncio.sleep(self.delay_s)
                if self.cut_off or writer.transport.is_closing():
                    break
                writer.write(chunk)
                await writer.drain()
        writer.transport.abort()
