"""Kafka's record bytes straight to the project's protobuf bytes: the one implementation
of Kafka -> project records (:func:`~migration.kafka_log.mapping.to_proto` goes through
it too).

A Kafka field ``PartitionId`` becomes the protobuf field ``partition_id`` of the message
of the same name (:func:`~migration.kafka_log.mapping.proto_name`): integers and bools as
varints, float64 as a double, strings, bytes and uuids as length-delimited fields,
arrays of numbers packed, arrays of structs as repeated messages, a nullable array as
its wrapper message (``ReplicaList``, ``UuidList``; written even when empty, so the
field is set), a null or absent tagged value as no field at all (an unset ``optional``),
and the int8 tri-states of :data:`~migration.kafka_log.mapping.TRI_STATE` as an
``optional bool``. Tagged fields the version does not know are skipped.

Why bytes to bytes: a batch's records are transcoded into one ``RecordBatchPayload`` and
parsed by protobuf in a single call, as the project's own log is read -- building
messages field by field from Python costs several times more.

Bad bytes raise :class:`~migration.kafka_log.codec.RecordFormatError` exactly where the
codec's reader would (lengths past the end, nulls where the version has none, tags out
of order); invalid UTF-8 is found by protobuf's parse of the batch.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from google.protobuf.message import DecodeError

from migration.common.protowire import ONE_BYTE, varint
from migration.kafka_log.codec import Buf, RecordFormatError, read_tags, read_uvarint
from migration.kafka_log.records import control_header, metadata_header
from migration.kafka_log.schema import PRIMITIVES, Field, MessageSchema, Versions
from migration.proto.metadata_pb2 import MetadataRecord, RecordBatchPayload
from migration.records.kinds import BY_TYPE_NAME

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")

# (record, field) whose int8 Kafka value is an optional bool here: value -> bool/None.
TRI_STATE: dict[tuple[str, str], dict[int, bool | None]] = {
    ("BrokerRegistrationChangeRecord", "Fenced"): {1: True, -1: False, 0: None},
    ("BrokerRegistrationChangeRecord", "InControlledShutdown"): {1: True, 0: None},
}


@cache
def proto_name(kafka_name: str) -> str:
    """``IsMigratingZkBroker`` -> ``is_migrating_zk_broker``."""
    return _CAMEL.sub("_", kafka_name).lower()


# Reads one Kafka value at pos, appends its protobuf field(s) to out, returns the new pos.
Step = Callable[[Buf, int, bytearray], int]

_FIXED = {"int8": ">b", "int16": ">h", "uint16": ">H", "int32": ">i", "int64": ">q"}
_DOUBLE_IN, _DOUBLE_OUT = struct.Struct(">d"), struct.Struct("<d")


def _key(number: int, wire: int) -> bytes:
    return varint(number << 3 | wire)


def _length(buf: Buf, pos: int, flexible: bool, wide: bool) -> tuple[int, int]:
    if flexible:
        b = buf[pos]
        if b < 0x80:
            return b - 1, pos + 1
        n, pos = read_uvarint(buf, pos)
        return n - 1, pos
    size = 4 if wide else 2
    if pos + size > len(buf):
        raise RecordFormatError(f"length past the end at byte {pos}")
    return struct.unpack_from(">i" if wide else ">h", buf, pos)[0], pos + size


def _null(name: str, nullable: bool, pos: int) -> None:
    if not nullable:
        raise RecordFormatError(f"{name}: null at byte {pos}, and this version has no null")


def _scalar_step(
    t: str, name: str, key: bytes, *, flexible: bool, nullable: bool, tri: Any = None
) -> Step:
    """One scalar field: Kafka's encoding in, the protobuf field out."""
    if t in _FIXED:
        unpack = struct.Struct(_FIXED[t]).unpack_from
        size = struct.calcsize(_FIXED[t])

        def fixed(buf: Buf, pos: int, out: bytearray) -> int:
            if pos + size > len(buf):
                raise RecordFormatError(f"{name}: past the end at byte {pos}")
            v = unpack(buf, pos)[0]
            if tri is None:
                out += key
                out += varint(v)
            elif (state := tri.get(v)) is not None:
                out += key
                out += ONE_BYTE[1 if state else 0]
            return pos + size

        return fixed
    if t == "bool":

        def boolean(buf: Buf, pos: int, out: bytearray) -> int:
            if pos >= len(buf) or buf[pos] > 1:
                raise RecordFormatError(f"{name}: not a boolean at byte {pos}")
            out += key
            out += ONE_BYTE[buf[pos]]
            return pos + 1

        return boolean
    if t == "float64":

        def double(buf: Buf, pos: int, out: bytearray) -> int:
            if pos + 8 > len(buf):
                raise RecordFormatError(f"{name}: past the end at byte {pos}")
            out += key
            out += _DOUBLE_OUT.pack(_DOUBLE_IN.unpack_from(buf, pos)[0])
            return pos + 8

        return double
    if t == "uuid":

        def uuid(buf: Buf, pos: int, out: bytearray) -> int:
            if pos + 16 > len(buf):
                raise RecordFormatError(f"{name}: past the end at byte {pos}")
            out += key
            out += b"\x10"
            out += buf[pos : pos + 16]
            return pos + 16

        return uuid
    wide = t == "bytes"

    def blob(buf: Buf, pos: int, out: bytearray) -> int:
        n, pos = _length(buf, pos, flexible, wide)
        if n < 0:
            _null(name, nullable, pos)
            return pos
        end = pos + n
        if end > len(buf):
            raise RecordFormatError(f"{name}: {n} bytes past the end at byte {pos}")
        out += key
        out += varint(n)
        out += buf[pos:end]
        return end

    return blob


def _packed_ints(
    name: str, t: str, key: bytes, *, flexible: bool, nullable: bool, wrap: bool
) -> Step:
    """An array of integers: packed (inside its wrapper message when nullable)."""
    size = struct.calcsize(_FIXED[t])
    code = _FIXED[t][1]
    unpackers = [struct.Struct(f">{n}{code}").unpack_from for n in range(16)]

    def ints(buf: Buf, pos: int, out: bytearray) -> int:
        n, pos = _length(buf, pos, flexible, True)
        if n <= 0:
            if n < 0:
                _null(name, nullable, pos)
            elif wrap:  # an empty list, which is not null
                out += key
                out += b"\x00"
            return pos
        end = pos + n * size
        if end > len(buf):
            raise RecordFormatError(f"{name}: {n} elements past the end at byte {pos}")
        unpack = unpackers[n] if n < 16 else struct.Struct(f">{n}{code}").unpack_from
        values = unpack(buf, pos)
        try:  # ids under 128, the common case: each varint is the id's own byte
            body = bytes(values)
            if not body.isascii():
                raise ValueError
        except ValueError:
            body = b"".join([varint(v) for v in values])
        if wrap:  # ReplicaList { repeated int32 ids = 1 }: field 1, packed
            inner = b"\x0a" + varint(len(body)) + body
            out += key
            out += varint(len(inner))
            out += inner
        else:
            out += key
            out += varint(len(body))
            out += body
        return end

    return ints


def _repeated(
    name: str, key: bytes, item: Step, *, flexible: bool, nullable: bool, wrap: bool
) -> Step:
    """An array of strings, uuids or structs: one field per element (inside the
    wrapper message when nullable)."""

    def items(buf: Buf, pos: int, out: bytearray) -> int:
        n, pos = _length(buf, pos, flexible, True)
        if n < 0:
            _null(name, nullable, pos)
            return pos
        if n > len(buf) - pos:
            raise RecordFormatError(f"{name}: {n} elements cannot fit at byte {pos}")
        target = bytearray() if wrap else out
        for _ in range(n):
            pos = item(buf, pos, target)
        if wrap:
            out += key
            out += varint(len(target))
            out += target
        return pos

    return items


_INLINE = {"int8": "b", "int16": "h", "uint16": "H", "int32": "i", "int64": "q",
           "bool": "B", "float64": "d", "uuid": "16s"}  # fmt: skip


def _struct_step(
    record: str, fields: tuple[Field, ...], version: int, flexible: bool, d: Any
) -> Step:
    """A struct's fields and tagged fields, into the message described by ``d``.

    Compiled once into one Python function: runs of fixed-size fields are read with a
    single ``struct`` call and written inline; other fields call their step."""
    tagged: dict[int, Step] = {}
    env: dict[str, Any] = {
        "RecordFormatError": RecordFormatError, "V": ONE_BYTE, "varint": varint,
        "DOUBLE": _DOUBLE_OUT.pack, "tags": None,
    }  # fmt: skip
    lines = ["def step(buf, pos, out):"]
    run: list[tuple[str, Field, bytes]] = []

    def flush_run() -> None:
        if not run:
            return
        fmt = ">" + "".join(_INLINE[t] for t, _, _ in run)
        unpack = struct.Struct(fmt)
        env[f"U{len(env)}"] = unpack.unpack_from
        names = [f"v{i}" for i in range(len(run))]
        lines.append(f"    if pos + {unpack.size} > len(buf):")
        lines.append(
            f"        raise RecordFormatError(f'{run[0][1].name}: past the end at byte {{pos}}')"
        )
        lines.append(f"    {', '.join(names)}, = U{len(env) - 1}(buf, pos)")
        lines.append(f"    pos += {unpack.size}")
        for (t, f, key), v in zip(run, names, strict=True):
            k = f"K{len(env)}"
            env[k] = key
            if (tri := TRI_STATE.get((record, f.name))) is not None:
                env[f"T{k}"] = tri
                lines.append(f"    s = T{k}.get({v})")
                lines.append(f"    if s is not None: out += {k}; out += V[1 if s else 0]")
            elif t == "bool":
                lines.append(f"    if {v} > 1: raise RecordFormatError('{f.name}: not a boolean')")
                lines.append(f"    out += {k}; out += V[{v}]")
            elif t == "uuid":
                env[k] = key + b"\x10"
                lines.append(f"    out += {k}; out += {v}")
            elif t == "float64":
                lines.append(f"    out += {k}; out += DOUBLE({v})")
            else:
                lines.append(f"    out += {k}; out += V[{v}] if 0 <= {v} < 128 else varint({v})")
        run.clear()

    for f in fields:
        if version not in Versions.parse(f.versions):
            continue
        fd = d.fields_by_name[proto_name(f.name)]
        step = _field_step(record, f, version, flexible, fd)
        if f.tag is not None and flexible and version in Versions.parse(f.tagged_versions):
            tagged[f.tag] = step
        elif f.type in _INLINE:
            wire = 1 if f.type == "float64" else 2 if f.type == "uuid" else 0
            run.append((f.type, f, _key(fd.number, wire)))
        else:
            flush_run()
            name = f"S{len(env)}"
            env[name] = step
            if f.type == "[]int32" and flexible and not fd.message_type:
                lines.extend(_inline_ids(name, _key(fd.number, 2), env))
            elif f.type.startswith("[]") and flexible and not fd.message_type:
                # an empty array (compact length 0) writes nothing: no call for it
                lines.append("    if buf[pos] == 1: pos += 1")
                lines.append(f"    else: pos = {name}(buf, pos, out)")
            else:
                lines.append(f"    pos = {name}(buf, pos, out)")
    flush_run()
    if flexible:
        env["tags"] = _tag_section(tagged)
        lines.append("    if buf[pos] == 0: return pos + 1  # no tagged fields")
        lines.append("    return tags(buf, pos, out)")
    else:
        lines.append("    return pos")
    exec("\n".join(lines), env)
    compiled: Step = env["step"]
    return compiled


_IDS = [struct.Struct(f">{n}i").unpack_from for n in range(16)]


def _inline_ids(step: str, key: bytes, env: dict[str, Any]) -> list[str]:
    """Source for an array of up to 15 broker ids under 128 (replicas, ISR: nearly every
    one), read and written inline; anything else goes to the field's ``step``."""
    k = f"K{len(env)}"
    env[k], env["IDS"] = key, _IDS
    return [
        "    c = buf[pos]",
        "    if c == 1: pos += 1  # empty: nothing to write",
        "    elif c <= 16 and pos + 4 * c - 3 <= len(buf):",
        "        try: b = bytes(IDS[c - 1](buf, pos + 1))",
        "        except ValueError: b = b'\\x80'",
        f"        if b.isascii(): out += {k}; out += V[c - 1]; out += b; pos += 4 * c - 3",
        f"        else: pos = {step}(buf, pos, out)",
        f"    else: pos = {step}(buf, pos, out)",
    ]


def _tag_section(tagged: dict[int, Step]) -> Step:
    def tags(buf: Buf, pos: int, out: bytearray) -> int:
        fields, pos = read_tags(buf, pos)
        for tag, start, end in fields:
            known = tagged.get(tag)
            if known is not None and known(buf[:end], start, out) != end:
                raise RecordFormatError(f"tagged field {tag}: wrong size")
        return pos

    return tags


def _field_step(record: str, f: Field, version: int, flexible: bool, fd: Any) -> Step:
    nullable = version in Versions.parse(f.nullable_versions)
    t = f.type
    key_len = _key(fd.number, 2)
    if t.startswith("[]"):
        element = t[2:]
        wrap = fd.message_type is not None and [g.name for g in fd.message_type.fields] == ["ids"]
        if element in _FIXED:
            return _packed_ints(
                f.name, element, key_len, flexible=flexible, nullable=nullable, wrap=wrap
            )
        if element in PRIMITIVES:
            inner = fd.message_type.fields_by_name["ids"] if wrap else fd
            item = _scalar_step(
                element, f.name, _key(inner.number, 2), flexible=flexible, nullable=False
            )
        else:
            body = _struct_step(record, f.fields, version, flexible, fd.message_type)
            item = _submessage(body, key_len)
        return _repeated(f.name, key_len, item, flexible=flexible, nullable=nullable, wrap=wrap)
    if t in PRIMITIVES:
        wire = 1 if t == "float64" else 2 if t in ("string", "bytes", "uuid") else 0
        tri = TRI_STATE.get((record, f.name))
        return _scalar_step(
            t, f.name, _key(fd.number, wire), flexible=flexible, nullable=nullable, tri=tri
        )
    return _submessage(_struct_step(record, f.fields, version, flexible, fd.message_type), key_len)


def _submessage(body: Step, key: bytes) -> Step:
    def message(buf: Buf, pos: int, out: bytearray) -> int:
        inner = bytearray()
        pos = body(buf, pos, inner)
        out += key
        out += varint(len(inner))
        out += inner
        return pos

    return message


@dataclass(frozen=True, slots=True)
class _Envelope:
    """How one record type and version becomes a MetadataRecord envelope."""

    name: str
    version: int
    body: Step  # the record's fields into its message's fields
    key: bytes  # the envelope's field for this record type (length-delimited)


_ENVELOPES: dict[tuple[str, int], _Envelope] = {}
_BY_HEAD: dict[bytes, tuple[_Envelope, int]] = {}
"""A metadata record value's first three bytes (frame, api key and version, each a
one-byte varint) -> its envelope and where its body starts: one lookup per record."""


def _envelope_of(schema: MessageSchema, version: int) -> _Envelope:
    found = _ENVELOPES.get((schema.name, version))
    if found is None:
        kind = BY_TYPE_NAME[schema.name]
        fd = MetadataRecord.DESCRIPTOR.fields_by_name[kind.field]
        flexible = version in Versions.parse(schema.flexible_versions)
        body = _struct_step(schema.name, schema.fields, version, flexible, fd.message_type)
        found = _Envelope(schema.name, version, body, _key(fd.number, 2))
        _ENVELOPES[schema.name, version] = found
    return found


def _append(payload: bytearray, env: _Envelope, value: Buf, pos: int) -> None:
    body = bytearray()
    try:
        end = env.body(value, pos, body)
    except (IndexError, struct.error) as exc:
        raise RecordFormatError(
            f"{env.name} v{env.version}: cut short: a field runs past its byte "
            f"{len(value) - pos} ({exc})"
        ) from None
    if end != len(value):
        raise RecordFormatError(f"{env.name} v{env.version}: {len(value) - end} bytes left over")
    head = env.key + varint(len(body))
    payload += b"\x0a"  # RecordBatchPayload.records
    payload += varint(len(head) + len(body))
    payload += head
    payload += body


def add_metadata(payload: bytearray, value: Buf | None) -> None:
    """Append a metadata record's value to ``payload`` as a MetadataRecord (a
    RecordBatchPayload element). UnknownRecordError / RecordFormatError when it is
    not one; ``payload`` is then unchanged."""
    hit = _BY_HEAD.get(bytes(value[:3])) if value is not None else None
    if hit is None:
        schema, version, pos = metadata_header(value)
        hit = (_envelope_of(schema, version), pos)
        if pos == 3:
            _BY_HEAD[bytes(value[:3])] = hit  # type: ignore[index]
    assert value is not None
    _append(payload, hit[0], value, hit[1])


def add_control(payload: bytearray, key: Buf | None, value: Buf | None) -> None:
    """Append a control record to ``payload`` as a MetadataRecord."""
    schema, version = control_header(key, value)
    assert value is not None
    _append(payload, _envelope_of(schema, version), value, 0)


_NO_OP = _key(MetadataRecord.DESCRIPTOR.fields_by_name["no_op_record"].number, 2) + b"\x00"


def add_no_op(payload: bytearray) -> None:
    """Append a NoOpRecord (where a skipped record stood: it changes nothing)."""
    payload += b"\x0a" + varint(len(_NO_OP)) + _NO_OP


def parse_payload(payload: bytes | bytearray) -> list[MetadataRecord]:
    """The records of a RecordBatchPayload, parsed in one call."""
    try:
        return list(RecordBatchPayload.FromString(bytes(payload)).records)
    except DecodeError as exc:  # e.g. a string that is not UTF-8
        raise RecordFormatError(f"records that are not valid: {exc}") from None
