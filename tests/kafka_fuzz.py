"""Hostile Kafka frames for a broker's listener, and the client that sends them.

The corpus: a valid request of every API and version a broker serves (every array two
entries long, every nullable field present, values drawn from a seeded random), encoded
with kio. Each frame's length fields (array counts, string and bytes lengths, tagged-field
counts and sizes, nullable-struct markers: :func:`migration.kafka.bounds.length_fields`
finds them) are then mutated one at a time: the largest value of the field's width, -1,
-2, zero, one more and one less than the real value, and for varints a 5-byte 2^32-1 and a
6-byte overflow. A broker must answer such a frame or close that connection, and go on
serving the others (:func:`fuzz`).
"""

from __future__ import annotations

import datetime
import io
import random
import secrets
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kio.index import load_request_schema
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v12.request import MetadataRequest
from kio.serial import entity_writer

from migration.common.ports import unused_port
from migration.common.properties import render_properties
from migration.common.tls import TlsSettings
from migration.kafka.bounds import length_fields, schema_fields
from migration.kafka.client import ClientSecurity, KafkaConnection
from migration.kafka.wire import SIZE, SUPPORTED
from migration.local.quorum import LocalQuorum
from tests.security_harness import Authority


def _scalar(kind: str | None, rng: random.Random) -> Any:
    if kind == "string":
        return rng.choice(["fuzz", "topic-a", "", "User:alice", "x" * 40])
    if kind in ("bytes", "records"):
        return rng.randbytes(rng.randrange(0, 24))
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "uuid":
        return uuid.UUID(int=rng.getrandbits(128))
    if kind == "float64":
        return rng.random()
    if kind in ("timedelta_i32", "timedelta_i64"):
        return datetime.timedelta(milliseconds=rng.randrange(0, 30_000))
    if kind == "error_code":
        return ErrorCode.none
    return rng.randrange(0, 64)  # an integer of any width


def sample(schema: type, rng: random.Random) -> Any:
    """A valid instance of a kio schema class: every field filled, arrays of two."""
    values = {}
    for f in schema_fields(schema):
        one: Callable[[], Any] = (
            (lambda e=f.entity: sample(e, rng))
            if f.entity is not None
            else (lambda k=f.kafka_type: _scalar(k, rng))
        )
        values[f.name] = tuple(one() for _ in range(2)) if f.is_tuple else one()
    # Admin requests that can only validate do (the rest may change the cluster's
    # metadata: the fuzz brokers are its own).
    if "validate_only" in values:
        values["validate_only"] = True
    return schema(**values)


def encode(api_key: int, version: int, body: Any, correlation_id: int = 1) -> tuple[bytes, int]:
    """Header and body of a request, without the size prefix, and where the body starts."""
    schema = type(body)
    header_schema = schema.__header_schema__
    out = io.BytesIO()
    entity_writer(header_schema)(
        out,
        header_schema(
            request_api_key=api_key,
            request_api_version=version,
            correlation_id=correlation_id,
            client_id="fuzz",
        ),
    )
    body_at = out.tell()
    entity_writer(schema)(out, body)
    return out.getvalue(), body_at


@dataclass(frozen=True)
class Seed:
    api_key: int
    version: int
    payload: bytes  # header + body, no size
    body_at: int  # where the body starts


def corpus(rng: random.Random, per_version: int = 1) -> list[Seed]:
    """``per_version`` valid requests of every served API and version."""
    out = []
    for api_key, (_, low, high) in sorted(SUPPORTED.items()):
        for version in range(low, high + 1):
            schema = load_request_schema(api_key, version)
            for _ in range(per_version):
                payload, body_at = encode(api_key, version, sample(schema, rng))
                out.append(Seed(api_key, version, payload, body_at))
    return out


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def mutations(seed: Seed) -> Iterator[tuple[str, bytes]]:
    """(what, size-prefixed frame) for each mutation of each length field of ``seed``."""
    schema = load_request_schema(seed.api_key, seed.version)
    fields = length_fields(schema.__header_schema__, seed.payload) + length_fields(
        schema, seed.payload, seed.body_at
    )
    for offset, width, kind in fields:
        old = seed.payload[offset : offset + width]
        if kind == "uvarint":
            current = _decode_uvarint(old)
            values = {
                "max": b"\xff\xff\xff\xff\x0f",
                "overflow": b"\xff\xff\xff\xff\xff\x01",
                "zero": b"\x00",
                "plus-one": _uvarint(current + 1),
                "minus-one": _uvarint(max(current - 1, 0)),
                "big": _uvarint(2**31 - 1),
            }
        else:
            bits = width * 8
            current = int.from_bytes(old, "big", signed=True)
            values = {
                name: (v % 2**bits).to_bytes(width, "big")
                for name, v in (
                    ("max", 2 ** (bits - 1) - 1),
                    ("minus-one-value", -1),
                    ("negative", -2),
                    ("zero", 0),
                    ("plus-one", current + 1),
                    ("minus-one", current - 1),
                )
            }
        for name, new in values.items():
            if new == old:
                continue
            payload = seed.payload[:offset] + new + seed.payload[offset + width :]
            yield (
                f"{SUPPORTED[seed.api_key][0]} v{seed.version} {kind}@{offset} {name}",
                SIZE.pack(len(payload)) + payload,
            )


def _decode_uvarint(raw: bytes) -> int:
    value = 0
    for i, byte in enumerate(raw):
        value |= (byte & 0x7F) << (7 * i)
    return value


@dataclass
class Tally:
    frames: int = 0
    answered: int = 0
    closed: int = 0
    failures: list[str] = field(default_factory=list)


Connect = Callable[[], socket.socket]


def send(connect: Connect, frame: bytes, timeout_s: float = 30.0) -> str:
    """Send one frame on a fresh connection: ``answered`` (a response frame came back) or
    ``closed``; anything else (the broker silent past ``timeout_s``) raises."""
    sock = connect()
    try:
        sock.settimeout(timeout_s)
        sock.sendall(frame)
        try:
            head = sock.recv(4)
        except ConnectionResetError:
            return "closed"
        return "answered" if len(head) == 4 else "closed"
    finally:
        sock.close()


def fuzz(
    connect: Connect, seeds: list[Seed], alive: Callable[[], None], check_every: int = 200
) -> Tally:
    """Every mutation of every seed, each on its own connection; ``alive()`` (which
    raises when the broker stops serving) is called every ``check_every`` frames and at
    the end."""
    tally = Tally()
    for seed in seeds:
        for what, frame in mutations(seed):
            try:
                outcome = send(connect, frame)
            except OSError as exc:
                tally.failures.append(f"{what}: {exc}")
                continue
            tally.frames += 1
            if outcome == "answered":
                tally.answered += 1
            else:
                tally.closed += 1
            if tally.frames % check_every == 0:
                alive()
    alive()
    return tally


# --- the brokers it is sent to ----------------------------------------------------------

FUZZ_USER, LISTENERS = "fuzzer", ("PLAINTEXT", "SASL_PLAINTEXT", "SSL", "SASL_SSL")
# Each listener and login state the corpus is sent on (SASL ones before and after a login).
PASSES = [(name, False) for name in LISTENERS] + [
    (name, True) for name in LISTENERS if name.startswith("SASL_")
]
METADATA = MetadataRequest(
    topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False
)


class Listeners:
    """One broker's four client listeners and how to connect to each (logged in or not)."""

    def __init__(self, root: Path) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.ports = {name: unused_port() for name in LISTENERS}
        self.password = secrets.token_urlsafe(12)
        ca = Authority("fuzz CA")
        key, cert = ca.issue("broker")
        self.ca_pem = ca.pem
        (root / "broker.pem").write_text(key + cert)
        (root / "ca.pem").write_text(ca.pem)
        jaas = (
            "org.apache.kafka.common.security.plain.PlainLoginModule required "
            f'user_{FUZZ_USER}="{self.password}";'
        )
        self.props = {
            "listener.security.protocol.map": ",".join(f"{n}:{n}" for n in LISTENERS)
            + ",INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "sasl.enabled.mechanisms": "PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas,
            "listener.name.sasl_ssl.plain.sasl.jaas.config": jaas,
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(root / "broker.pem"),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(root / "ca.pem"),
        }

    def listeners_property(self, internal_port: int, plaintext_port: int | None = None) -> str:
        """Kafka's ``listeners``: the four client listeners (PLAINTEXT on
        ``plaintext_port`` when given) and the inter-broker one."""
        if plaintext_port is not None:
            self.ports["PLAINTEXT"] = plaintext_port
        return ",".join(
            [f"{n}://127.0.0.1:{p}" for n, p in self.ports.items()]
            + [f"INTERNAL://127.0.0.1:{internal_port}"]
        )

    def security(self, listener: str, login: bool) -> ClientSecurity:
        tls = TlsSettings(trusted=self.ca_pem) if listener.endswith("SSL") else None
        if login and listener.startswith("SASL_"):
            return ClientSecurity(listener, tls, "PLAIN", FUZZ_USER, self.password)
        return ClientSecurity(listener, tls)

    def connect(self, listener: str, login: bool) -> Callable[[], socket.socket]:
        security = self.security(listener, login)
        port = self.ports[listener]
        return lambda: KafkaConnection("127.0.0.1", port, 30, security=security).sock

    def serving(self, alive: Callable[[], bool]) -> Callable[[], None]:
        """A check that raises unless the broker (``alive()``: its process runs) answers
        Metadata on every listener."""

        def check() -> None:
            assert alive(), "the broker process died"
            for name in LISTENERS:
                security = self.security(name, True)
                with KafkaConnection("127.0.0.1", self.ports[name], 30, security=security) as c:
                    assert c.request(METADATA).brokers

        return check


@contextmanager
def kraft_broker(
    root: Path, props: Mapping[str, str]
) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    """A KRaft-mode broker (node 1) of a fresh one-controller quorum, with ``props`` on
    top of its server.properties (its listeners among them); yields the process and its
    log once it serves."""
    cluster_id = "fuzzcluster" + uuid.uuid4().hex[:11]
    quorum = LocalQuorum(root / "quorum", size=1, first_id=3000, cluster_id=cluster_id)
    data = root / "broker" / "data"
    data.mkdir(parents=True)
    (data / "meta.properties").write_text(f"version=1\nnode.id=1\ncluster.id={cluster_id}\n")
    config = root / "broker" / "server.properties"
    config.write_text(
        render_properties(
            {
                "process.roles": "broker",
                "node.id": "1",
                "controller.quorum.voters": quorum.voters,
                "controller.listener.names": "CONTROLLER",
                "inter.broker.listener.name": "INTERNAL",
                "log.dirs": str(data),
                **props,
            }
        )
    )
    log = root / "broker.log"
    quorum.start_all()
    with log.open("ab") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "migration.cli.main", "broker", "--config", str(config)],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 90
        while "serving Kafka clients" not in log.read_text():
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the KRaft-mode broker did not start:\n{log.read_text()}")
            time.sleep(0.2)
        yield process, log
    finally:
        process.kill()
        process.wait()
        quorum.stop_all()
