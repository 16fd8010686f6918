"""A minimal blocking Kafka protocol connection over kio: send one request, read its
response. What zk2kraft's own tools need (readiness checks, the benchmark's Metadata
timings, the tests' hostile frames); operators' admin verbs use maintained clients.

Secured listeners: :class:`ClientSecurity` (Kafka's client settings: ``security.protocol``,
``ssl.*`` stores, PEM or PKCS12, ``sasl.mechanism`` and a ``sasl.jaas.config`` with the
login) adds TLS and a SASL login (PLAIN or SCRAM, through ``scramp``) before the first
request.
``KafkaConnection.default_security`` is what connections use when given none (the CLI's
``--command-config``).
"""

from __future__ import annotations

import io
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kio.index import load_response_schema
from kio.schema.metadata.v12.request import MetadataRequest
from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest
from kio.serial import entity_writer
from scramp import ScramClient

from migration.common.jaas import JaasError, parse_jaas_config
from migration.common.kafka_errors import ErrorCode, KafkaError
from migration.common.tls import TlsSettings, tls_settings
from migration.kafka.bounds import decode
from migration.kafka.wire import SIZE
from migration.zk.model.brokers import SECURITY_PROTOCOLS


def _code(code: int) -> ErrorCode:
    try:
        return ErrorCode(code)
    except ValueError:
        return ErrorCode.UNKNOWN_SERVER_ERROR


@dataclass(frozen=True)
class ClientSecurity:
    """How a client reaches a listener: Kafka's ``security.protocol``, its TLS, and the
    SASL login (the password never shown)."""

    protocol: str = "PLAINTEXT"
    tls: TlsSettings | None = None
    mechanism: str | None = None
    username: str | None = None
    password: str | None = field(default=None, repr=False)

    @classmethod
    def from_properties(cls, props: Mapping[str, str], problems: list[str]) -> ClientSecurity:
        protocol = props.get("security.protocol", "PLAINTEXT").strip().upper()
        if protocol not in SECURITY_PROTOCOLS:
            problems.append(f"security.protocol={protocol} is not one of {SECURITY_PROTOCOLS}")
        tls = tls_settings(props, None, problems) if protocol.endswith("SSL") else None
        if not protocol.startswith("SASL_"):
            return cls(protocol, tls)
        mechanism = props.get("sasl.mechanism", "GSSAPI").strip().upper()
        if mechanism not in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
            problems.append(f"sasl.mechanism={mechanism}: PLAIN or SCRAM-SHA-256/512")
        try:
            options = parse_jaas_config(
                props.get("sasl.jaas.config", ""), "sasl.jaas.config"
            ).options
        except JaasError as exc:
            problems.append(str(exc))
            options = {}
        return cls(protocol, tls, mechanism, options.get("username"), options.get("password"))


class KafkaConnection:
    default_security = ClientSecurity()

    def __init__(
        self,
        host: str,
        port: int,
        timeout_s: float = 10.0,
        client_id: str = "zk2kraft",
        security: ClientSecurity | None = None,
    ):
        security = security or self.default_security
        sock = socket.create_connection((host, port), timeout=timeout_s)
        if security.tls is not None:
            sock = security.tls.client_context().wrap_socket(sock, server_hostname=host)
        self.sock = sock
        self.client_id = client_id
        self._correlation = 0
        if security.mechanism is not None:
            self._login(security)

    def _login(self, security: ClientSecurity) -> None:
        """SaslHandshake v1, then SaslAuthenticate tokens; KafkaError on a refusal."""
        mechanism = security.mechanism or ""
        user, password = security.username or "", security.password or ""
        hello = self.request(SaslHandshakeRequest(mechanism=mechanism))
        if hello.error_code:
            raise KafkaError(_code(hello.error_code), f"SASL mechanism {mechanism} refused")
        if mechanism == "PLAIN":
            self._authenticate(f"\0{user}\0{password}".encode())
            return
        client = ScramClient([mechanism], user, password)
        first = self._authenticate(client.get_client_first().encode())
        client.set_server_first(first.decode())
        final = self._authenticate(client.get_client_final().encode())
        client.set_server_final(final.decode())

    def _authenticate(self, token: bytes) -> bytes:
        answer = self.request(SaslAuthenticateRequest(auth_bytes=token))
        if answer.error_code:
            raise KafkaError(_code(answer.error_code), answer.error_message or "SASL login failed")
        return bytes(answer.auth_bytes)

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
        """``body`` sent, its response decoded."""
        frame = self.request_frame(body)
        response_schema = load_response_schema(body.__api_key__, body.__version__)
        header, used = decode(response_schema.__header_schema__, frame)
        if header.correlation_id != self._correlation:
            raise ConnectionError(
                f"response correlation id {header.correlation_id}, expected {self._correlation}"
            )
        return decode(response_schema, frame, used)[0]

    def request_frame(self, body: Any) -> bytes:
        """``body`` sent, and its whole response frame as the broker wrote it (header and
        body, not decoded: what a broker's answer costs without this client's decoding)."""
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
        return self.read_frame()

    def metadata(self) -> Any:
        """Metadata (v12) of every topic, as this broker answers it."""
        return self.request(ALL_TOPICS)

    def metadata_frame(self) -> bytes:
        """The same answer as it came over the wire, not decoded."""
        return self.request_frame(ALL_TOPICS)

    def cluster_metadata(self) -> Any:
        """Metadata (v12) asking for no topic: the brokers, the controller and the
        cluster id as this broker sees them, at a cost that does not grow with the
        partitions (an all-topics answer takes seconds to encode at a million)."""
        return self.request(NO_TOPICS)


ALL_TOPICS = MetadataRequest(
    topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False
)
NO_TOPICS = MetadataRequest(
    topics=(), allow_auto_topic_creation=False, include_topic_authorized_operations=False
)
