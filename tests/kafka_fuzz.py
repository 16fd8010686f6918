"""Hostile Kafka frames for a broker's listener, and the client that sends them.

The corpus: a valid request of every API and version a broker serves (every array two
entries long, every nullable field present, values drawn from a seeded random), encoded
with kio. Each frame's length fields (array counts, string and bytes lengths, tagged-field
counts and sizes, nullable-struct markers: :func:`migration.broker.kafka_bounds.length_fields`
finds them) are then mutated one at a time: the largest value of the field's width, -1,
-2, zero, one more and one less than the real value, and for varints a 5-byte 2^32-1 and a
6-byte overflow. A broker must answer such a frame or close that connection, and go on
serving the others (:func:`fuzz`).
"""

from __future__ import annotations

import dataclasses
import datetime
import io
import random
import socket
import struct
import typing
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from kio.index import load_request_schema
from kio.schema.errors import ErrorCode
from kio.serial import entity_writer

from migration.broker.kafka_bounds import length_fields
from migration.broker.kafka_wire import SUPPORTED

SIZE = struct.Struct(">i")
SASL_HANDSHAKE, SASL_AUTHENTICATE, API_VERSIONS = 17, 36, 18


def _value(hint: Any, kind: str | None, rng: random.Random) -> Any:
    args = typing.get_args(hint)
    if type(None) in args:
        hint = next(a for a in args if a is not type(None))
        args = typing.get_args(hint)
    if typing.get_origin(hint) is tuple:
        return tuple(_value(args[0], kind, rng) for _ in range(2))
    if dataclasses.is_dataclass(hint):
        return sample(hint, rng)  # type: ignore[arg-type]
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
    bits = {"int8": 7, "int16": 15, "int32": 31, "int64": 63, "uint16": 16}.get(kind or "", 7)
    return hint(rng.randrange(0, min(2**bits, 64)))


def sample(schema: type, rng: random.Random) -> Any:
    """A valid instance of a kio schema class: every field filled, arrays of two."""
    hints = typing.get_type_hints(schema)
    values = {
        f.name: _value(hints[f.name], f.metadata.get("kafka_type"), rng)
        for f in dataclasses.fields(schema)
    }
    # Nothing the fuzz sends may change the cluster for real: ask only to validate.
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
