"""The HTTP server behind ``/metrics``: a thread per connection, but bounded.

prometheus_client's own server keeps a thread per connection for as long as the client
keeps it open: a thousand clients that connect and never finish their request hold a
thousand threads for ever. This one serves the same WSGI app with two bounds:

- **Request timeout**: a client must send its request line and headers within
  :data:`REQUEST_TIMEOUT_S` of connecting (the whole of them, however it trickles them
  in), else it is dropped. Once the request is in, each send of the answer may block
  for :data:`SEND_TIMEOUT_S` at most (a client that stops reading is dropped).
- **Connections**: at most :data:`MAX_CONNECTIONS` at once, so at most that many
  handler threads. One more evicts the oldest connection still waiting for its request
  (a real scrape sends its request at once, so a flood of idle connections cannot keep
  Prometheus out); when every connection is busy answering, the new one is closed.

With an ``ssl.SSLContext`` (:func:`serve`'s ``tls``) the port speaks only TLS. The
accept loop never handshakes: each connection's handler thread does, within the same
request deadline (a client that opens a connection and sends nothing, or half a
handshake, holds one of the bounded connections until then and is dropped). A plain
HTTP request to it fails its handshake and is closed unanswered.

Handler errors (timeouts, resets, failed handshakes) are logged at DEBUG, never printed.
"""

from __future__ import annotations

import contextlib
import io
import logging
import socket
import ssl
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

log = logging.getLogger(__name__)

REQUEST_TIMEOUT_S = 5.0
SEND_TIMEOUT_S = 30.0
MAX_CONNECTIONS = 16


class _Deadline(io.RawIOBase):
    """A connection's bytes, each read given only what is left until ``deadline``."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        super().__init__()
        self._sock = sock
        self._deadline = deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"no whole request within {REQUEST_TIMEOUT_S:g} s")
        self._sock.settimeout(left)
        return self._sock.recv_into(buffer)


class _Handler(WSGIRequestHandler):
    """wsgiref's handler, reading its request under the deadline, logging nothing."""

    server: BoundedWSGIServer

    def setup(self) -> None:
        deadline = time.monotonic() + REQUEST_TIMEOUT_S
        if self.server.tls is not None:
            self.request = self._handshake(self.server.tls, deadline)
        super().setup()
        self.rfile.close()  # the base's reader, replaced by one under the deadline
        self.rfile = io.BufferedReader(_Deadline(self.connection, deadline))

    def _handshake(self, tls: ssl.SSLContext, deadline: float) -> ssl.SSLSocket:
        """The TLS connection over this one, its handshake done before ``deadline``
        (else an error: the connection is closed unanswered)."""
        raw = self.request
        wrapped = tls.wrap_socket(raw, server_side=True, do_handshake_on_connect=False)
        try:
            if not self.server.rekey(raw, wrapped):
                raise ConnectionAbortedError("evicted before its handshake")
            wrapped.settimeout(max(deadline - time.monotonic(), 0.001))
            wrapped.do_handshake()  # the timeout bounds the whole handshake (one deadline)
        except BaseException:
            self.server.forget(wrapped)
            wrapped.close()
            raise
        return wrapped

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            if isinstance(self.request, ssl.SSLSocket):  # socketserver closes the raw one
                self.server.forget(self.request)
                self.request.close()

    def get_environ(self) -> dict[str, Any]:
        environ: dict[str, Any] = super().get_environ()
        if self.server.tls is not None:
            environ["HTTPS"] = "on"  # wsgi.url_scheme: https
        return environ

    def parse_request(self) -> bool:
        """The request line and headers, then the answer's send timeout; False (no
        answer) for a connection evicted meanwhile, whatever it had sent."""
        parsed = super().parse_request()
        self.connection.settimeout(SEND_TIMEOUT_S)
        return self.server.answering(self.connection) and parsed

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def get_stderr(self) -> io.TextIOBase:
        """Where wsgiref's answer handler prints a failed send's traceback: DEBUG."""
        return _DebugLines()


class _DebugLines(io.TextIOBase):
    """A text stream whose writes become DEBUG lines of this module's log."""

    def write(self, text: str) -> int:
        if text.strip():
            log.debug("metrics answer: %s", text.rstrip())
        return len(text)


class BoundedWSGIServer(ThreadingMixIn, WSGIServer):
    """A WSGI server with the bounds of the module doc. ``close`` stops it and drops
    every connection still open."""

    daemon_threads = True
    request_queue_size = 64  # the listen backlog: a burst waits in the kernel, no thread

    def __init__(
        self,
        address: tuple[str, int],
        family: socket.AddressFamily,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.address_family = family
        self.tls = tls
        self._lock = threading.Lock()
        # Open connections, oldest first -> whether its request is in (it is answering).
        self._open: OrderedDict[socket.socket, bool] = OrderedDict()
        super().__init__(address, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._lock:
            if len(self._open) >= MAX_CONNECTIONS:
                waiting = next((c for c, busy in self._open.items() if not busy), None)
                if waiting is None:  # every one is answering: this one waits for no thread
                    self.shutdown_request(request)
                    return
                del self._open[waiting]
                _drop(waiting)  # its thread ends at once: its read sees the end
            self._open[request] = False
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.forget(request)
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.forget(request)

    def answering(self, connection: socket.socket) -> bool:
        """``connection``'s request is in: it is no longer one to evict. False when it
        was evicted already (it gets no answer)."""
        with self._lock:
            if connection not in self._open:
                return False
            self._open[connection] = True
            return True

    def rekey(self, raw: socket.socket, wrapped: socket.socket) -> bool:
        """``wrapped`` (TLS over ``raw``, which it took the descriptor of) is the open
        connection now; False when ``raw`` was evicted meanwhile."""
        with self._lock:
            if raw not in self._open:
                return False
            self._open[wrapped] = self._open.pop(raw)
            return True

    def forget(self, request: socket.socket) -> None:
        with self._lock:
            self._open.pop(request, None)

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.debug("metrics request from %s dropped", client_address, exc_info=True)

    def connections(self) -> int:
        """Connections open now (each has, or is about to have, its thread)."""
        with self._lock:
            return len(self._open)

    def close(self) -> None:
        self.shutdown()
        self.server_close()
        with self._lock:
            for connection in self._open:
                _drop(connection)
            self._open.clear()


def _drop(connection: socket.socket) -> None:
    """End ``connection`` from any thread: its owner's blocked read or send returns.
    (The socket's own shutdown, under TLS too: SSLSocket's would drop its TLS state under
    the thread using it.)"""
    with contextlib.suppress(OSError):  # already gone
        socket.socket.shutdown(connection, socket.SHUT_RDWR)


def serve(
    host: str, port: int, app: Callable[..., Any], tls: ssl.SSLContext | None = None
) -> tuple[BoundedWSGIServer, threading.Thread]:
    """``app`` served on ``host:port`` (IPv4 or IPv6, as the host resolves) by a
    :class:`BoundedWSGIServer` on a daemon thread, over TLS with ``tls``. OSError when
    it cannot listen."""
    family, _, _, _, sockaddr = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    server = BoundedWSGIServer((str(sockaddr[0]), port), family, tls)
    server.set_app(app)
    thread = threading.Thread(target=server.serve_forever, name="metrics-http", daemon=True)
    thread.start()
    return server, thread
