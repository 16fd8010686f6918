"""Kafka's wire format through kio: request frames in, response frames out.

kio carries every message schema (one dataclass per API version) and the codecs; this
module only frames them (a 4-byte size, then the header, then the body) and builds
responses generically: :func:`build` takes plain values (ints, strings, bytes ids,
lists of dicts) and fills a response class of any version with what that version has,
so a handler is written once for every version it serves. Fields a version lacks are
dropped; fields a handler does not give take the schema default, or zero.
"""

from __future__ import annotations

import datetime
import io
import struct
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode
from kio.serial import entity_writer

from migration.kafka.bounds import FrameError, SchemaField, decode, schema_fields

SIZE = struct.Struct(">i")
HEAD = struct.Struct(">hhi")  # api key, api version, correlation id
API_VERSIONS = 18

# Kafka's api keys -> (name, lowest version served, highest). The versions are exactly
# those kio carries (Kafka 4.x dropped the older ones): librdkafka and kafka-python
# negotiate down to them.
SUPPORTED: dict[int, tuple[str, int, int]] = {
    3: ("Metadata", 0, 13),
    17: ("SaslHandshake", 1, 1),
    18: ("ApiVersions", 0, 4),
    19: ("CreateTopics", 2, 7),
    20: ("DeleteTopics", 1, 6),
    29: ("DescribeAcls", 1, 3),
    30: ("CreateAcls", 1, 3),
    31: ("DeleteAcls", 1, 3),
    32: ("DescribeConfigs", 1, 4),
    33: ("AlterConfigs", 0, 2),
    36: ("SaslAuthenticate", 0, 2),
    37: ("CreatePartitions", 0, 3),
    44: ("IncrementalAlterConfigs", 0, 1),
    45: ("AlterPartitionReassignments", 0, 1),
    46: ("ListPartitionReassignments", 0, 0),
    48: ("DescribeClientQuotas", 0, 1),
    49: ("AlterClientQuotas", 0, 1),
    50: ("DescribeUserScramCredentials", 0, 0),
    51: ("AlterUserScramCredentials", 0, 0),
    60: ("DescribeCluster", 0, 2),
}


@dataclass(frozen=True, slots=True)
class Request:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body: Any  # the kio request dataclass

    @property
    def api_name(self) -> str:
        return SUPPORTED[self.api_key][0]


def peek_header(frame: bytes) -> tuple[int, int, int]:
    """(api key, api version, correlation id) of a frame; FrameError when too short."""
    if len(frame) < HEAD.size:
        raise FrameError(f"a request frame of {len(frame)} bytes has no header")
    return HEAD.unpack_from(frame)


def api_name(api_key: int) -> str:
    """Kafka's name of a served API (``api key N`` for any other)."""
    return SUPPORTED.get(api_key, (f"api key {api_key}",))[0]


def served(api_key: int, api_version: int) -> bool:
    entry = SUPPORTED.get(api_key)
    return entry is not None and entry[1] <= api_version <= entry[2]


def parse_request(frame: bytes) -> Request:
    """Decode a frame of an API and version in :data:`SUPPORTED`; FrameError otherwise
    (an unknown api key or version, a truncated or malformed header or body)."""
    api_key, api_version, correlation_id = peek_header(frame)
    if not served(api_key, api_version):
        raise FrameError(f"{api_name(api_key)} version {api_version} is not served")
    schema = load_request_schema(api_key, api_version)
    try:
        header, used = decode(schema.__header_schema__, frame)
        body, _ = decode(schema, frame, used)
    except Exception as exc:  # kio raises assorted errors on malformed bytes
        raise FrameError(
            f"malformed {SUPPORTED[api_key][0]} v{api_version} request: {exc}"
        ) from None
    return Request(api_key, api_version, correlation_id, header.client_id, body)


@dataclass(frozen=True, slots=True)
class Encoded:
    """A response body already encoded (a handler's cached answer): only the header,
    with the request's correlation id, is written in front of it."""

    schema: type
    body: bytes


def encode_body(body: Any) -> Encoded:
    out = io.BytesIO()
    entity_writer(type(body))(out, body)
    return Encoded(type(body), out.getvalue())


def encode_response(api_key: int, api_version: int, correlation_id: int, body: Any) -> bytes:
    """The size-prefixed response frame: the version's response header, then ``body``
    (a kio response, or an :class:`Encoded` one)."""
    encoded = body if isinstance(body, Encoded) else encode_body(body)
    header_schema = encoded.schema.__header_schema__  # type: ignore[attr-defined]
    out = io.BytesIO()
    out.write(b"\0\0\0\0")
    entity_writer(header_schema)(out, header_schema(correlation_id=correlation_id))
    out.write(encoded.body)
    data = out.getbuffer()
    SIZE.pack_into(data, 0, len(data) - 4)
    return bytes(data)


def response(api_key: int, api_version: int, values: Mapping[str, Any]) -> Any:
    """The kio response of ``api_key`` at ``api_version`` built from plain ``values``."""
    return build(load_response_schema(api_key, api_version), values)


# --- the generic builder ---------------------------------------------------------------


def build(cls: type, values: Mapping[str, Any]) -> Any:
    kwargs: dict[str, Any] = {}
    for f in schema_fields(cls):
        if f.name in values:
            kwargs[f.name] = _coerce(f, values[f.name])
        elif not f.has_default:
            kwargs[f.name] = _zero(f)
    return cls(**kwargs)


def _coerce(f: SchemaField, value: Any) -> Any:
    if value is None:
        return None if f.optional else _zero(f)
    if f.entity is not None:
        if f.is_tuple:
            return tuple(build(f.entity, v) for v in value)
        return build(f.entity, value)
    if f.is_tuple:
        return tuple(value)
    kind = f.kafka_type
    if kind == "error_code":
        return ErrorCode(int(value))
    if kind in ("timedelta_i32", "timedelta_i64"):
        return datetime.timedelta(milliseconds=int(value))
    if kind == "uuid":
        return uuid.UUID(bytes=bytes(value)) if len(value) == 16 else uuid.UUID(str(value))
    return value


def _zero(f: SchemaField) -> Any:
    if f.optional:  # a nullable field, array or entity: null
        return None
    if f.is_tuple:
        return ()
    if f.entity is not None:
        return build(f.entity, {})
    kind = f.kafka_type or ""
    if kind == "error_code":
        return ErrorCode.none
    if kind.startswith("timedelta"):
        return datetime.timedelta(0)
    if kind == "uuid":
        return uuid.UUID(int=0)
    if kind == "bool":
        return False
    if kind == "string":
        return ""
    if kind in ("bytes", "records"):
        return b""
    return 0
