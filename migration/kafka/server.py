"""The Kafka protocol listener(s) of a broker (asyncio).

Per connection, one request at a time, in order (Kafka's guarantee): a 4-byte size,
the frame, the answer. What cannot be answered closes that connection only, with a
warning naming the client: a size below a header or above ``socket.request.max.bytes``,
an unknown api key or version (ApiVersions excepted: an unsupported ApiVersions version
gets Kafka's fallback, a v0 answer with UNSUPPORTED_VERSION and the versions served), a
truncated or malformed frame, a handler failure. Every other connection keeps being
served, and nothing is written anywhere for a request that was not understood.

Security, per listener (``listener.security.protocol.map``): ``SSL`` and ``SASL_SSL``
listeners speak TLS (:mod:`migration.common.tls`); on ``SASL_*`` listeners a connection logs in
first (:mod:`migration.kafka.sasl`): before that only ApiVersions, SaslHandshake and
SaslAuthenticate are served, each at most ``sasl.server.max.receive.size`` (512 KiB), and a
failed login is answered and the connection closed.
Requests then carry the connection's principal (``User:<name>``; a TLS client's
certificate subject on an ``SSL`` listener with ``ssl.client.auth``; else
``User:ANONYMOUS``) to the authorizer.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
from functools import partial
from typing import Any

from migration.common.kafka_errors import ErrorCode
from migration.kafka.api_context import Backend, Context
from migration.kafka.apis import HANDLERS, api_versions
from migration.kafka.authorizer import ANONYMOUS, Authorizer, Principal
from migration.kafka.bounds import FrameError
from migration.kafka.listeners import ListenerSettings
from migration.kafka.sasl import SaslSession
from migration.kafka.socket_limits import POOLED_FROM, Connections, RequestMemory
from migration.kafka.wire import (
    API_VERSIONS,
    HEAD,
    SIZE,
    Encoded,
    Request,
    api_name,
    encode_response,
    parse_request,
    peek_header,
    response,
    served,
)

log = logging.getLogger(__name__)


class KafkaServer:
    def __init__(self, backend: Backend, settings: ListenerSettings) -> None:
        self.backend = backend
        self.listeners = settings.listeners
        self.limits = settings.limits
        self.security = settings.security
        self.authorizer = Authorizer(settings.authorizer) if settings.authorizer else None
        self.memory = RequestMemory(settings.limits.queued_max_request_bytes)
        self.connections = Connections(settings.limits)
        self._servers: list[asyncio.Server] = []
        self._refusals = _Refusals()
        self.bound: dict[str, int] = {}  # listener name -> port actually bound

    async def start(self) -> None:
        for e in self.listeners:
            security = self.security.get(e.listener)
            tls = security.tls if security else None
            server = await asyncio.start_server(
                partial(self._serve, e.listener),
                e.host or "0.0.0.0",
                e.port,
                ssl=tls.server_context() if tls else None,
            )
            self._servers.append(server)
            self.bound[e.listener] = server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        for server in self._servers:
            server.close()
        for server in self._servers:
            await server.wait_closed()

    async def _serve(
        self, listener: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        peer = writer.get_extra_info("peername")
        ip = peer[0] if peer else ""
        refused = self.connections.admit(ip)
        if refused is not None:
            self._refusals.note(peer, refused)
            writer.close()
            return
        try:
            await self._session(listener, reader, writer, peer)
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError, ssl.SSLError):
            return  # the client went away, or the broker is stopping
        finally:
            self.connections.release(ip)
            writer.close()

    async def _session(
        self,
        listener: str,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        peer: Any,
    ) -> None:
        security = self.security.get(listener)
        sasl = (
            SaslSession(security.sasl, lambda: self.backend.image().scram)
            if security and security.sasl
            else None
        )
        who = Principal(_certificate_principal(writer) or ANONYMOUS, peer[0] if peer else "")
        idle_s = self.limits.connections_max_idle_ms / 1000
        while True:
            try:
                size = SIZE.unpack(await asyncio.wait_for(reader.readexactly(4), idle_s))[0]
            except TimeoutError:
                log.info(
                    "closing the connection from %s: idle for connections.max.idle.ms=%d",
                    peer,
                    self.limits.connections_max_idle_ms,
                )
                return
            anonymous = sasl is not None and sasl.principal is None
            limit = self.limits.request_max_bytes
            if anonymous:
                limit = min(limit, SASL_MAX_RECEIVE_BYTES)
            if not HEAD.size <= size <= limit:
                log.warning(
                    "closing the connection from %s: a request of %d bytes (allowed: %d to %s=%d)",
                    peer,
                    size,
                    HEAD.size,
                    "sasl.server.max.receive.size" if anonymous else "socket.request.max.bytes",
                    limit,
                )
                return
            if sasl is not None and sasl.principal is not None:
                who = Principal(sasl.principal, who.host)
            context = Context(self.backend, listener, who, self.authorizer, sasl)
            pooled = size if size > POOLED_FROM else 0  # small frames never wait
            if pooled:
                await self.memory.take(pooled)
            try:
                try:
                    frame = await asyncio.wait_for(reader.readexactly(size), idle_s)
                except TimeoutError:
                    log.warning(
                        "closing the connection from %s: a %d-byte request did not arrive "
                        "whole within connections.max.idle.ms=%d",
                        peer,
                        size,
                        self.limits.connections_max_idle_ms,
                    )
                    return
                answer = await self._answer(frame, context, peer)
                del frame
            finally:
                self.memory.give(pooled)
            if answer is None:
                return
            if sasl is not None and sasl.failed:
                # Kafka holds a failed login's answer (connection.failed.authentication.
                # delay.ms) so that guessing passwords costs the guesser, not the broker.
                await asyncio.sleep(self.limits.failed_authentication_delay_ms / 1000)
            writer.write(answer)
            await writer.drain()
            if sasl is not None and sasl.failed:
                log.info("closing the connection from %s: SASL login failed", peer)
                return

    async def _answer(self, frame: bytes, context: Context, peer: object) -> bytes | None:
        try:
            api_key, version, correlation_id = peek_header(frame)
            sasl = context.sasl
            if sasl is not None and sasl.principal is None and not sasl.expects(api_key):
                # Not even decoded: before a login only the login's own requests are read.
                log.warning(
                    "closing the connection from %s: %s during the SASL login (expected %s)",
                    peer,
                    api_name(api_key),
                    " or ".join(api_name(k) for k in sorted(sasl.expected())),
                )
                return None
            if api_key == API_VERSIONS and not served(api_key, version):
                values = api_versions(_FALLBACK, context)
                values["error_code"] = ErrorCode.UNSUPPORTED_VERSION
                return encode_response(api_key, 0, correlation_id, response(api_key, 0, values))
            # Off the loop: the length check walks the frame in Python, a big one for a while.
            request = await asyncio.to_thread(parse_request, frame)
        except FrameError as exc:
            log.warning("closing the connection from %s: %s", peer, exc)
            return None
        began = time.monotonic()
        try:
            answer = await asyncio.to_thread(HANDLERS[api_key], request, context)
            body = answer if isinstance(answer, Encoded) else response(api_key, version, answer)
            return encode_response(api_key, version, correlation_id, body)
        except Exception:
            log.exception(
                "closing the connection from %s: %s v%d failed", peer, request.api_name, version
            )
            return None
        finally:
            took = time.monotonic() - began
            if took > SLOW_REQUEST_S:
                log.info("%s v%d from %s took %.1f s", request.api_name, version, peer, took)


class _Refusals:
    """Connections refused by a limit, logged at most once per interval with a count
    (a flood of them must not become a flood of log lines)."""

    INTERVAL_S = 10.0

    def __init__(self) -> None:
        self.count = 0
        self.logged = -self.INTERVAL_S

    def note(self, peer: object, limit: str) -> None:
        self.count += 1
        now = time.monotonic()
        if now - self.logged >= self.INTERVAL_S:
            log.warning(
                "refused the connection from %s: %s reached (%d refused since the last such line)",
                peer,
                limit,
                self.count,
            )
            self.logged, self.count = now, 0


_FALLBACK = Request(API_VERSIONS, 0, 0, None, None)
SLOW_REQUEST_S = 5.0  # a request answered later than this is logged (INFO)
SASL_MAX_RECEIVE_BYTES = 512 * 1024  # Kafka's sasl.server.max.receive.size: before a login


# RFC 2253's short attribute names, for Python's long ones.
_RDN_NAMES = {
    "commonName": "CN", "organizationName": "O", "organizationalUnitName": "OU",
    "countryName": "C", "localityName": "L", "stateOrProvinceName": "ST",
    "streetAddress": "STREET", "domainComponent": "DC", "userId": "UID",
}  # fmt: skip


def _certificate_principal(writer: asyncio.StreamWriter) -> str | None:
    return certificate_principal(writer.get_extra_info("peercert"))


def certificate_principal(cert: dict[str, Any] | None) -> str | None:
    """``User:<subject>`` of a verified client certificate (``ssl.getpeercert()``), in
    RFC 2253 form, most specific first, as Kafka's default principal builder names it
    (``User:CN=alice,OU=ops,O=example``); None without one."""
    if not cert or not cert.get("subject"):
        return None
    parts = [f"{_RDN_NAMES.get(k, k)}={v}" for rdn in reversed(cert["subject"]) for k, v in rdn]
    return "User:" + ",".join(parts)
