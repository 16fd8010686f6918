"""Length fields fuzzed on a live ZooKeeper-mode broker, on each listener type
(PLAINTEXT, SASL_PLAINTEXT, SSL, SASL_SSL; the SASL ones before and after a login): every
frame is answered or closes its connection, and the broker goes on serving. The frames
that killed brokers before (a 26-byte Metadata v9 request claiming 2^32-2 topics) among
them, verbatim. `make fuzz` runs the whole corpus, more seeds, on both broker modes."""

from __future__ import annotations

import random
import secrets
import socket
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kio.schema.metadata.v12.request import MetadataRequest

from migration.broker.kafka_client import ClientSecurity, KafkaConnection
from migration.broker.local_cluster import LocalCluster
from migration.ports import unused_port
from migration.tls import TlsSettings
from migration.zk.embedded import EmbeddedZooKeeper
from tests.broker_harness import running_cluster
from tests.kafka_fuzz import corpus, fuzz, send
from tests.security_harness import Authority

# The frame of issue 40, byte for byte: Metadata v9, client id "probe", topics claiming
# 2^32-2 entries (the compact-array varint ffffffff0f).
KILLER = bytes.fromhex("000000160003000900000003000570726f626500ffffffff0f00")
USER, LISTENERS = "fuzzer", ("PLAINTEXT", "SASL_PLAINTEXT", "SSL", "SASL_SSL")


class Listeners:
    """One broker's four client listeners and how to connect to each (logged in or not)."""

    def __init__(self, root: Path) -> None:
        self.ports = {name: unused_port() for name in LISTENERS}
        self.password = secrets.token_urlsafe(12)
        ca = Authority("fuzz CA")
        key, cert = ca.issue("broker")
        self.ca_pem = ca.pem
        (root / "broker.pem").write_text(key + cert)
        (root / "ca.pem").write_text(ca.pem)
        jaas = (
            "org.apache.kafka.common.security.plain.PlainLoginModule required "
            f'user_{USER}="{self.password}";'
        )
        self.props = {
            "listener.security.protocol.map": ",".join(f"{n}:{n}" for n in LISTENERS)
            + ",INTERNAL:PLAINTEXT",
            "sasl.enabled.mechanisms": "PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas,
            "listener.name.sasl_ssl.plain.sasl.jaas.config": jaas,
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(root / "broker.pem"),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(root / "ca.pem"),
        }

    def listeners_property(self, internal_port: int, plaintext_port: int) -> str:
        self.ports["PLAINTEXT"] = plaintext_port
        return ",".join(
            [f"{n}://127.0.0.1:{p}" for n, p in self.ports.items()]
            + [f"INTERNAL://127.0.0.1:{internal_port}"]
        )

    def security(self, listener: str, login: bool) -> ClientSecurity:
        tls = TlsSettings(trusted=self.ca_pem) if listener.endswith("SSL") else None
        if login and listener.startswith("SASL_"):
            return ClientSecurity(listener, tls, "PLAIN", USER, self.password)
        return ClientSecurity(listener, tls)

    def connect(self, listener: str, login: bool) -> Callable[[], socket.socket]:
        security = self.security(listener, login)
        port = self.ports[listener]
        return lambda: KafkaConnection("127.0.0.1", port, 30, security=security).sock


@pytest.fixture(scope="module")
def broker(
    zk_server: EmbeddedZooKeeper, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[LocalCluster, Listeners]]:
    root = tmp_path_factory.mktemp("fuzz")
    listeners = Listeners(root)
    with running_cluster(zk_server, root, [1], **listeners.props) as (cluster, _):
        child = cluster.brokers[1]
        cluster.reconfigure(listeners=listeners.listeners_property(child.internal_port, child.port))
        cluster.restart(1)
        cluster.wait_ready(90)
        yield cluster, listeners


def _serving(cluster: LocalCluster, listeners: Listeners) -> Callable[[], None]:
    def alive() -> None:
        assert cluster.running() == [1], "the broker process died"
        for name in LISTENERS:
            with KafkaConnection(
                "127.0.0.1", listeners.ports[name], 30, security=listeners.security(name, True)
            ) as conn:
                answer = conn.request(
                    MetadataRequest(
                        topics=None, allow_auto_topic_creation=False,
                        include_topic_authorized_operations=False,
                    )
                )  # fmt: skip
                assert [b.node_id for b in answer.brokers] == [1]

    return alive


@pytest.mark.parametrize("listener", LISTENERS)
def test_the_26_byte_frame_closes_its_connection_and_the_broker_serves_on(
    broker: tuple[LocalCluster, Listeners], listener: str
) -> None:
    cluster, listeners = broker
    for login in (False, True):
        assert send(listeners.connect(listener, login), KILLER) == "closed"
    _serving(cluster, listeners)()


# Each listener and login state gets its own share of the corpus's mutations (seeded),
# so that make test sends a few thousand frames in all; make fuzz sends every one.
PASSES = [(name, False) for name in LISTENERS] + [
    (name, True) for name in LISTENERS if name.startswith("SASL_")
]


@pytest.mark.parametrize(("listener", "login"), PASSES)
def test_fuzzed_length_fields_are_answered_or_closed(
    broker: tuple[LocalCluster, Listeners], listener: str, login: bool
) -> None:
    cluster, listeners = broker
    rng = random.Random(f"{listener}-{login}")
    seeds = corpus(rng)
    sample = rng.sample(seeds, 12) if listener != "PLAINTEXT" else seeds
    tally = fuzz(listeners.connect(listener, login), sample, _serving(cluster, listeners))
    print(f"{listener} login={login}: {tally.frames} frames, {tally.answered} answered, "
          f"{tally.closed} closed")  # fmt: skip
    assert not tally.failures, tally.failures[:5]
    assert tally.frames > 100
    log = cluster.brokers[1].log.read_text()
    assert "Traceback" not in log and "memory allocation" not in log
