"""The Kafka protocol listener(s) of a broker (asyncio).

Per connection, one request at a time, in order (Kafka's guarantee): a 4-byte size,
the frame, the answer. What cannot be answered closes that connection only, with a
warning naming the client: a size below a header or above ``socket.request.max.bytes``,
an unknown api key or version (ApiVersions excepted: an unsupported ApiVersions version
gets Kafka's fallback, a v0 answer with UNSUPPORTED_VERSION and the versions served), a
truncated or malformed frame, a handler failure. Every other connection keeps being
served, and nothing is written anywhere for a request that was not understood.
"""

from __future__ import annotations

import asyncio
import logging
from functools import partial

from migration.broker.kafka_apis import HANDLERS, api_versions
from migration.broker.kafka_common import Backend, Context
from migration.broker.kafka_wire import (
    API_VERSIONS,
    HEAD,
    SIZE,
    Encoded,
    FrameError,
    Request,
    encode_response,
    parse_request,
    peek_header,
    response,
    served,
)
from migration.kafka_errors import ErrorCode
from migration.zk.model.brokers import Endpoint

log = logging.getLogger(__name__)


class KafkaServer:
    def __init__(
        self, backend: Backend, listeners: tuple[Endpoint, ...], max_request_bytes: int
    ) -> None:
        self.backend = backend
        self.listeners = listeners
        self.max_request_bytes = max_request_bytes
        self._servers: list[asyncio.Server] = []
        self.bound: dict[str, int] = {}  # listener name -> port actually bound

    async def start(self) -> None:
        for e in self.listeners:
            server = await asyncio.start_server(
                partial(self._serve, e.listener), e.host or "0.0.0.0", e.port
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
        try:
            while True:
                size = SIZE.unpack(await reader.readexactly(4))[0]
                if not HEAD.size <= size <= self.max_request_bytes:
                    log.warning(
                        "closing the connection from %s: a request of %d bytes (allowed: %d "
                        "to socket.request.max.bytes=%d)",
                        peer,
                        size,
                        HEAD.size,
                        self.max_request_bytes,
                    )
                    return
                answer = await self._answer(await reader.readexactly(size), listener, peer)
                if answer is None:
                    return
                writer.write(answer)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            return  # the client went away, or the broker is stopping
        finally:
            writer.close()

    async def _answer(self, frame: bytes, listener: str, peer: object) -> bytes | None:
        try:
            api_key, version, correlation_id = peek_header(frame)
            if api_key == API_VERSIONS and not served(api_key, version):
                values = api_versions(_FALLBACK, Context(self.backend, listener))
                values["error_code"] = ErrorCode.UNSUPPORTED_VERSION
                return encode_response(api_key, 0, correlation_id, response(api_key, 0, values))
            request = parse_request(frame)
        except FrameError as exc:
            log.warning("closing the connection from %s: %s", peer, exc)
            return None
        context = Context(self.backend, listener)
        try:
            answer = await asyncio.to_thread(HANDLERS[api_key], request, context)
            body = answer if isinstance(answer, Encoded) else response(api_key, version, answer)
            return encode_response(api_key, version, correlation_id, body)
        except Exception:
            log.exception(
                "closing the connection from %s: %s v%d failed", peer, request.api_name, version
            )
            return None


_FALLBACK = Request(API_VERSIONS, 0, 0, None, None)
