"""A minimal blocking Kafka protocol connection over kio: send one request, read its
response. What zk2kraft's own tools need (readiness checks, the benchmark's Metadata
timings, the tests' hostile frames); operators' admin verbs use maintained clients."""

from __future__ import annotations

import io
import socket
from typing import Any

from kio.index import load_response_schema
from kio.serial import entity_reader, entity_writer

from migration.broker.kafka_wire import SIZE


class KafkaConnection:
    def __init__(self, host: str, port: int, timeout_s: float = 10.0, client_id: str = "zk2kraft"):
        self.sock = socket.create_connection((host, port), timeout=timeout_s)
        self.client_id = client_id
        self._correlation = 0

    def __enter__(self) -> KafkaConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.sock.close()

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_frame(self) -> bytes:
        """The next response frame (without its size); ConnectionError when closed."""
        size = SIZE.unpack(self._exactly(4))[0]
        return self._exactly(size)

    def _exactly(self, n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            out += chunk
        return bytes(out)

    def request(self, body: Any) -> Any:
        schema = type(body)
        self._correlation += 1
        header_schema = schema.__header_schema__
        out = io.BytesIO()
        entity_writer(header_schema)(
            out,
            header_schema(
                request_api_key=schema.__api_key__,
                request_api_version=schema.__version__,
                correlation_id=self._correlation,
                client_id=self.client_id,
            ),
        )
        entity_writer(schema)(out, body)
        payload = out.getvalue()
        self.send_raw(SIZE.pack(len(payload)) + payload)
        frame = self.read_frame()
        response_schema = load_response_schema(schema.__api_key__, schema.__version__)
        header, used = entity_reader(response_schema.__header_schema__)(frame, 0)
        if header.correlation_id != self._correlation:
            raise ConnectionError(
                f"response correlation id {header.correlation_id}, expected {self._correlation}"
            )
        return entity_reader(response_schema)(frame, used)[0]
