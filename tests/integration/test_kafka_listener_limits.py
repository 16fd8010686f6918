"""Kafka's socket limits on a live broker's listeners (max.connections,
max.connections.per.ip, connections.max.idle.ms, queued.max.request.bytes) and the SASL
login's order and failure delay (connection.failed.authentication.delay.ms): each bounds
what strangers can hold, and the broker keeps serving everyone else."""

from __future__ import annotations

import select
import socket
import struct
from collections.abc import Iterator

import pytest
from kio.schema.metadata.v12.request import MetadataRequest
from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest

from migration.common.ports import unused_port
from migration.kafka.client import ClientSecurity, KafkaConnection
from migration.local.cluster import LocalCluster
from migration.local.zookeeper import EmbeddedZooKeeper
from tests.broker_harness import eventually, running_cluster
from tests.kafka_fuzz import encode

PASSWORD = "limits-secret"
SASL_PORT = unused_port()
METADATA = MetadataRequest(
    topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False
)
LIMITS = {
    "max.connections": "6",
    "max.connections.per.ip": "4",
    "connections.max.idle.ms": "6000",
    "socket.request.max.bytes": "300000",
    "queued.max.request.bytes": "300000",
    "connection.failed.authentication.delay.ms": "5000",
    "sasl.enabled.mechanisms": "PLAIN",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": (
        f'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="{PASSWORD}";'
    ),
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT,"
    "SASL_PLAINTEXT:SASL_PLAINTEXT",
}


@pytest.fixture(scope="module")
def broker(
    zk_server: EmbeddedZooKeeper, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalCluster]:
    with running_cluster(zk_server, tmp_path_factory.mktemp("limits"), [1], **LIMITS) as (
        cluster,
        _,
    ):
        child = cluster.brokers[1]
        cluster.reconfigure(
            listeners=f"PLAINTEXT://127.0.0.1:{child.port},INTERNAL://127.0.0.1:"
            f"{child.internal_port},SASL_PLAINTEXT://127.0.0.1:{SASL_PORT}"
        )
        cluster.restart(1)
        cluster.wait_ready(90)
        yield cluster


def _connect(port: int, source: str = "127.0.0.1") -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=30, source_address=(source, 0))
    sock.settimeout(30)
    return sock


def _closed(sock: socket.socket) -> bool:
    """Whether the broker closed ``sock`` (waits for it: a hang guard)."""
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


def _frame(body: object, correlation_id: int = 1) -> bytes:
    schema = type(body)
    payload, _ = encode(schema.__api_key__, schema.__version__, body, correlation_id)  # type: ignore[attr-defined]
    return struct.pack(">i", len(payload)) + payload


def _answered(sock: socket.socket) -> bytes:
    size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
    return sock.recv(size, socket.MSG_WAITALL)


def _serves(cluster: LocalCluster) -> None:
    with KafkaConnection("127.0.0.1", cluster.brokers[1].port, 30) as conn:
        assert [b.node_id for b in conn.request(METADATA).brokers] == [1]


def test_connections_beyond_the_limits_are_closed_and_room_comes_back(
    broker: LocalCluster,
) -> None:
    port = broker.brokers[1].port
    held = [_connect(port) for _ in range(4)]
    for sock in held:  # each one is served (and so counted by the broker)
        sock.sendall(_frame(METADATA))
        _answered(sock)
    assert _closed(_connect(port))  # the fifth from 127.0.0.1: max.connections.per.ip=4
    other = [_connect(port, "127.0.0.2") for _ in range(2)]
    for sock in other:
        sock.sendall(_frame(METADATA))
        _answered(sock)
    assert _closed(_connect(port, "127.0.0.3"))  # the seventh in all: max.connections=6
    for sock in held + other:
        sock.close()
    eventually(lambda: _serves(broker) is None, 30, "a connection admitted again")
    log = broker.brokers[1].log.read_text()
    assert "max.connections.per.ip=4 reached" in log


def test_an_idle_connection_and_a_half_sent_frame_are_closed(broker: LocalCluster) -> None:
    port = broker.brokers[1].port
    idle = _connect(port)
    half = _connect(port)
    half.sendall(struct.pack(">i", 100) + b"\x00\x03\x00\x0c")  # 8 of 104 bytes, then silence
    assert _closed(idle) and _closed(half)
    log = broker.brokers[1].log.read_text()
    assert "idle for connections.max.idle.ms=6000" in log
    assert "a 100-byte request did not arrive whole within connections.max.idle.ms" in log
    _serves(broker)


def test_large_request_bytes_in_flight_are_bounded_and_small_ones_never_wait(
    broker: LocalCluster,
) -> None:
    """queued.max.request.bytes=300000: a large frame that does not fit beside one being
    read waits until that one is done, then is answered; a small one is answered at once."""
    port = broker.brokers[1].port
    hog = _connect(port)
    hog.sendall(struct.pack(">i", 280_000) + b"\x00\x03")  # holds 280,000 bytes of room
    waiting = _connect(port)
    metadata = _frame(METADATA)[4:]  # padded to 100,000 bytes (trailing bytes are not read)
    waiting.sendall(struct.pack(">i", 100_000) + metadata + b"\0" * (100_000 - len(metadata)))
    small = _connect(port)
    small.sendall(_frame(METADATA))
    assert _answered(small)  # while the large one waits behind the hog
    # The hog's frame is closed at connections.max.idle.ms (6 s after its size) at the
    # earliest: by then the waiting frame would long have been answered without the pool.
    assert select.select([waiting], [], [], 0.5)[0] == [], "answered while the room was held"
    hog.sendall(b"\xff" * (280_000 - 2))  # the hog's frame completes (garbage: it is closed)
    assert _closed(hog)
    assert _answered(waiting)  # then the waiting one is read and answered
    waiting.close()
    small.close()


def test_sasl_requests_out_of_order_close_the_connection_unanswered(
    broker: LocalCluster,
) -> None:
    authenticate_first = _connect(SASL_PORT)
    authenticate_first.sendall(_frame(SaslAuthenticateRequest(auth_bytes=b"\0alice\0x")))
    assert _closed(authenticate_first)

    twice = _connect(SASL_PORT)
    twice.sendall(_frame(SaslHandshakeRequest(mechanism="PLAIN")))
    assert _answered(twice)
    twice.sendall(_frame(SaslHandshakeRequest(mechanism="PLAIN"), 2))
    assert _closed(twice)

    metadata_first = _connect(SASL_PORT)
    metadata_first.sendall(_frame(METADATA))
    assert _closed(metadata_first)
    log = broker.brokers[1].log.read_text()
    assert "SaslAuthenticate during the SASL login (expected SaslHandshake or ApiVersions)" in log
    assert "SaslHandshake during the SASL login (expected SaslAuthenticate)" in log


def test_a_failed_login_is_answered_late_without_holding_anyone_else(
    broker: LocalCluster,
) -> None:
    failing = _connect(SASL_PORT)
    failing.sendall(_frame(SaslHandshakeRequest(mechanism="PLAIN")))
    assert _answered(failing)
    failing.sendall(_frame(SaslAuthenticateRequest(auth_bytes=b"\0alice\0wrong"), 2))
    # While its answer is held (connection.failed.authentication.delay.ms=5000), another
    # client logs in and is served (in milliseconds: the margin is the delay)...
    good = ClientSecurity("SASL_PLAINTEXT", None, "PLAIN", "alice", PASSWORD)
    with KafkaConnection("127.0.0.1", SASL_PORT, 30, security=good) as conn:
        assert conn.request(METADATA).brokers
    # ...and only then is the failure answered, and the connection closed.
    assert select.select([failing], [], [], 0)[0] == [], "the failure was answered at once"
    answer = _answered(failing)
    assert struct.unpack(">h", answer[5:7])[0] == 58  # SASL_AUTHENTICATION_FAILED
    assert _closed(failing)
