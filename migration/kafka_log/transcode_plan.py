"""The plan of :mod:`.transcode`: each record version's schema interpreted once into
typed steps that read Kafka's encoding and append the protobuf encoding of the same
values (the mapping is :mod:`.transcode`'s docstring).

A :data:`Step` reads one Kafka value (or a run of them) and appends its protobuf
field(s); a struct's step runs its fields' steps in order, then its tagged section.
Consecutive fixed-size fields are one step (one ``struct`` read and, when their
integers are under 128, one write), as are consecutive arrays of integers. The wire
rules are :mod:`.codec`'s functions, never restated here: length prefixes with their
null and bounds checks (:func:`~migration.kafka_log.codec.count_reader`), booleans
(:func:`~migration.kafka_log.codec.bool_of`), the fixed-size layouts
(:data:`~migration.kafka_log.codec.FIXED_SIZE`) and the tagged section
(:func:`~migration.kafka_log.codec.read_tags`). Bad bytes raise RecordFormatError from
those (IndexError or struct.error for a value cut short: the caller names it).
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from migration.common.protowire import ONE_BYTE, varint
from migration.kafka_log.codec import (
    FIXED_SIZE,
    NUMBERS,
    Buf,
    CountReader,
    RecordFormatError,
    bool_of,
    count_reader,
    read_tags,
)
from migration.kafka_log.schema import PRIMITIVES, Field, Versions

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


Step = Callable[[Buf, int, bytearray], int]
"""Reads one Kafka value (or a run of them) at pos, appends its protobuf field(s) to
out and returns the new pos. A record version's plan is a tree of these, built once
from its schema; the wire rules themselves are :mod:`.codec`'s."""

Emit = Callable[[bytearray, Any], None]
"""Appends the protobuf bytes of a value a fixed-size run unpacked (after its key,
if it has one)."""

_DOUBLE = struct.Struct("<d").pack


def field_key(number: int, wire: int) -> bytes:
    """A protobuf field's key: its number and wire type (0 varint, 1 double, 2
    length-delimited) as a varint."""
    return varint(number << 3 | wire)


@dataclass(frozen=True, slots=True)
class _Fixed:
    """A fixed-size field of a run: its Kafka name and type, the protobuf bytes that
    precede its value (its key; a uuid's also its length, 16), and its emitter (None:
    an integer, a bool or a uuid, written after the key as its varint or bytes)."""

    name: str
    type: str
    key: bytes
    emit: Emit | None


def _fixed_field(record: str, f: Field, fd: Any) -> _Fixed:
    if (tri := TRI_STATE.get((record, f.name))) is not None:
        return _Fixed(f.name, f.type, b"", _tri_state(field_key(fd.number, 0), tri))
    if f.type == "uuid":
        return _Fixed(f.name, f.type, field_key(fd.number, 2) + b"\x10", None)
    if f.type == "float64":
        return _Fixed(f.name, f.type, field_key(fd.number, 1), _double)
    return _Fixed(f.name, f.type, field_key(fd.number, 0), None)


def _double(out: bytearray, v: Any) -> None:
    out += _DOUBLE(v)


def _tri_state(key: bytes, tri: dict[int, bool | None]) -> Emit:
    def tri_state(out: bytearray, v: Any) -> None:  # no state: an unset optional
        if (state := tri.get(v)) is not None:
            out += key
            out += ONE_BYTE[state]

    return tri_state


def _fixed_run(run: list[_Fixed]) -> Step:
    """Consecutive fixed-size fields, read with one ``struct`` call (bounds checked
    once, each bool by :func:`~migration.kafka_log.codec.bool_of`) and, when every
    integer is under 128 (each varint one byte), written with one (:func:`_template`);
    else field by field."""
    codes = [FIXED_SIZE[f.type] for f in run]
    fmt = struct.Struct(">" + "".join(codes))
    unpack, size, first = fmt.unpack_from, fmt.size, run[0].name
    bools = [
        (i, struct.calcsize(">" + "".join(codes[:i])))
        for i, f in enumerate(run)
        if f.type == "bool"
    ]
    plan = [(f.key, f.emit, f.type == "uuid") for f in run]

    def each(values: tuple[Any, ...], out: bytearray) -> None:
        for (key, emit, raw), v in zip(plan, values, strict=False):
            out += key
            if emit is not None:
                emit(out, v)
            elif raw:
                out += v
            else:
                out += ONE_BYTE[v] if 0 <= v < 0x80 else varint(v)

    def read(buf: Buf, pos: int) -> tuple[Any, ...]:
        if pos + size > len(buf):
            raise RecordFormatError(f"{first}: past the end at byte {pos}")
        values = unpack(buf, pos)
        for i, at in bools:
            bool_of(values[i], pos + at)
        return values

    template = _template(run)
    if template is None:

        def fixed(buf: Buf, pos: int, out: bytearray) -> int:
            each(read(buf, pos), out)
            return pos + size

        return fixed
    pack, keys, high, width = template

    def templated(buf: Buf, pos: int, out: bytearray) -> int:
        if pos + size > len(buf):
            raise RecordFormatError(f"{first}: past the end at byte {pos}")
        values = unpack(buf, pos) if not bools else read(buf, pos)
        try:
            filled = int.from_bytes(pack(*values))
        except struct.error:  # an integer outside 0..255
            filled = high
        if filled & high:
            each(values, out)
        else:
            out += (filled | keys).to_bytes(width)
        return pos + size

    return templated


def _template(run: list[_Fixed]) -> tuple[Callable[..., bytes], int, int, int] | None:
    """The protobuf bytes of a run whose integers are all under 128, as one number:
    (pack, keys, high, width): ``pack(*values)`` lays the values out with zeros where
    the keys go (an integer or bool as one byte, a uuid's 16 bytes, a double
    little-endian), ``keys`` is the keys with zeros where the values go, to OR in;
    ``high`` has the top bit of every integer's byte (one set: that value needs a
    longer varint); ``width`` is the bytes' length. None for a run with a tri-state
    (written or not by its value)."""
    if any(f.emit not in (None, _double) for f in run):
        return None
    value_codes = {"uuid": "16s", "float64": "d"}
    fmt = "<" + "".join("x" * len(f.key) + value_codes.get(f.type, "B") for f in run)
    zeros = [bytes(struct.calcsize("<" + value_codes.get(f.type, "B"))) for f in run]
    keys = b"".join(f.key + z for f, z in zip(run, zeros, strict=True))
    high = b"".join(
        bytes(len(f.key)) + (z if f.type in value_codes else b"\x80")
        for f, z in zip(run, zeros, strict=True)
    )
    return struct.Struct(fmt).pack, int.from_bytes(keys), int.from_bytes(high), len(keys)


def _blob(name: str, key: bytes, *, flexible: bool, nullable: bool, wide: bool) -> Step:
    """A string or bytes (``wide``: int32 length when not flexible): a null writes
    nothing; invalid UTF-8 is left to protobuf's parse."""

    count = count_reader(name, flexible=flexible, nullable=nullable, wide=wide)

    def blob(buf: Buf, pos: int, out: bytearray) -> int:
        n, pos = count(buf, pos)
        if n < 0:
            return pos
        end = pos + n
        out += key
        out += varint(n)
        out += buf[pos:end]
        return end

    return blob


_INT_ARRAYS = {f"[]{t}" for t in NUMBERS if t != "float64"}


@dataclass(frozen=True, slots=True)
class _Ints:
    """An array of integers, packed (inside its wrapper message when nullable): how
    its count is read, its element's struct code and size, its key, and what is
    written for an empty array and before n (< 16) ids of one byte each."""

    count: CountReader
    code: str
    size: int
    unpackers: tuple[Callable[[Buf, int], tuple[Any, ...]], ...]  # of n < 16 elements
    key: bytes
    wrap: bool
    empty: bytes
    heads: tuple[bytes, ...]


def _int_array(f: Field, version: int, flexible: bool, fd: Any) -> _Ints:
    nullable = version in Versions.parse(f.nullable_versions)
    name, key, code = f.name, field_key(fd.number, 2), NUMBERS[f.type[2:]]
    wrap = _is_wrapper(fd)
    size = struct.calcsize(">" + code)
    count = count_reader(name, flexible=flexible, nullable=nullable, wide=True, unit=size)
    # before n ids of one byte each: the key, the length (and when wrapped,
    # ReplicaList's field 1, packed, and its length)
    inner = [b"\x0a" + ONE_BYTE[n] if wrap else b"" for n in range(16)]
    heads = tuple(key + varint(len(i) + n) + i for n, i in enumerate(inner))
    unpackers = tuple(struct.Struct(f">{n}{code}").unpack_from for n in range(16))
    empty = key + b"\x00" if wrap else b""  # an empty list, which is not null
    return _Ints(count, code, size, unpackers, key, wrap, empty, heads)


def _packed_ints(arrays: list[_Ints]) -> Step:
    """Consecutive arrays of integers (replicas, ISR, ...), one step."""
    plan = [(a.count, a.unpackers, a.size, a.empty, a.heads, a) for a in arrays]

    def ints(buf: Buf, pos: int, out: bytearray) -> int:
        for count, unpackers, size, empty, heads, array in plan:
            n, pos = count(buf, pos)
            if n <= 0:
                if n == 0:
                    out += empty
                continue
            if n < 16:
                values = unpackers[n](buf, pos)
            else:
                values = struct.unpack_from(f">{n}{array.code}", buf, pos)
            pos += n * size
            try:  # ids under 128, the common case: each varint is the id's own byte
                body = bytes(values)
                if n < 16 and body.isascii():
                    out += heads[n]
                    out += body
                    continue
            except ValueError:
                pass
            _varints(array, values, out)
        return pos

    return ints


def _varints(array: _Ints, values: tuple[Any, ...], out: bytearray) -> None:
    body = b"".join([varint(v) for v in values])
    if array.wrap:  # ReplicaList { repeated int32 ids = 1 }: field 1, packed
        body = b"\x0a" + varint(len(body)) + body
    out += array.key
    out += varint(len(body))
    out += body


def _repeated(
    name: str, key: bytes, item: Step, *, flexible: bool, nullable: bool, wrap: bool
) -> Step:
    """An array of strings, uuids or structs: one field per element (inside the
    wrapper message when nullable)."""

    count = count_reader(name, flexible=flexible, nullable=nullable, wide=True)

    def items(buf: Buf, pos: int, out: bytearray) -> int:
        n, pos = count(buf, pos)
        target = bytearray() if wrap else out
        for _ in range(n):  # none for a null (-1)
            pos = item(buf, pos, target)
        if wrap and n >= 0:
            out += key
            out += varint(len(target))
            out += target
        return pos

    return items


def struct_step(
    record: str, fields: tuple[Field, ...], version: int, flexible: bool, d: Any
) -> Step:
    """A struct's fields and tagged fields (``record``'s, at ``version``), into the
    message described by ``d`` (its protobuf descriptor): a plan of steps in the
    schema's order, a run of fixed-size fields one step, consecutive integer arrays
    one step, the tagged section (when ``flexible``) last."""
    steps: list[Step] = []
    tagged: dict[int, Step] = {}
    run: list[_Fixed] = []
    arrays: list[_Ints] = []
    for f in fields:
        if version not in Versions.parse(f.versions):
            continue
        fd = d.fields_by_name[proto_name(f.name)]
        if f.tag is not None and flexible and version in Versions.parse(f.tagged_versions):
            tagged[f.tag] = _field_step(record, f, version, flexible, fd)
            continue
        if f.type not in FIXED_SIZE and run:
            steps.append(_fixed_run(run))
            run = []
        if f.type not in _INT_ARRAYS and arrays:
            steps.append(_packed_ints(arrays))
            arrays = []
        if f.type in FIXED_SIZE:
            run.append(_fixed_field(record, f, fd))
        elif f.type in _INT_ARRAYS:
            arrays.append(_int_array(f, version, flexible, fd))
        else:
            steps.append(_field_step(record, f, version, flexible, fd))
    if run:
        steps.append(_fixed_run(run))
    if arrays:
        steps.append(_packed_ints(arrays))
    if flexible:
        steps.append(_tag_section(tagged))
    return _sequence(steps)


def _sequence(steps: list[Step]) -> Step:
    """The steps one after another (a struct's plan)."""
    if len(steps) == 1:
        return steps[0]
    plan = tuple(steps)

    def sequence(buf: Buf, pos: int, out: bytearray) -> int:
        for step in plan:
            pos = step(buf, pos, out)
        return pos

    return sequence


def _tag_section(tagged: dict[int, Step]) -> Step:
    """The tagged fields (read by :func:`~migration.kafka_log.codec.read_tags`): the
    known ones each within its own size, the others skipped."""

    def tags(buf: Buf, pos: int, out: bytearray) -> int:
        if buf[pos] == 0:  # none, nearly always
            return pos + 1
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
    key_len = field_key(fd.number, 2)
    if t in FIXED_SIZE:
        return _fixed_run([_fixed_field(record, f, fd)])
    if t in ("string", "bytes"):
        return _blob(f.name, key_len, flexible=flexible, nullable=nullable, wide=t == "bytes")
    if not t.startswith("[]"):  # a struct
        body = struct_step(record, f.fields, version, flexible, fd.message_type)
        return _submessage(body, key_len)
    if t in _INT_ARRAYS:
        return _packed_ints([_int_array(f, version, flexible, fd)])
    element = t[2:]
    wrap = _is_wrapper(fd)
    if element in PRIMITIVES:
        inner = fd.message_type.fields_by_name["ids"] if wrap else fd
        item = _field_step(record, Field(f.name, element, f.versions), version, flexible, inner)
    else:
        body = struct_step(record, f.fields, version, flexible, fd.message_type)
        item = _submessage(body, key_len)
    return _repeated(f.name, key_len, item, flexible=flexible, nullable=nullable, wrap=wrap)


def _is_wrapper(fd: Any) -> bool:
    """A nullable array's field: a message of one repeated field, ``ids``."""
    return fd.message_type is not None and [g.name for g in fd.message_type.fields] == ["ids"]


def _submessage(body: Step, key: bytes) -> Step:
    def message(buf: Buf, pos: int, out: bytearray) -> int:
        return _delimited(out, key, body, buf, pos)

    return message


def _delimited(out: bytearray, key: bytes, body: Step, buf: Buf, pos: int) -> int:
    """A length-delimited protobuf field: ``key``, the length, then what ``body``
    writes of the Kafka value at ``pos``, appended to ``out`` in place. Returns the
    position after the value."""
    out += key
    at = len(out)
    out.append(0)
    pos = body(buf, pos, out)
    fill_length(out, at)
    return pos


def fill_length(out: bytearray, at: int) -> None:
    """Write the length of what follows the byte at ``at`` (kept for it) into it, as a
    varint: in that byte when under 128, else widened in place."""
    n = len(out) - at - 1
    if n < 0x80:
        out[at] = n
    else:
        out[at : at + 1] = varint(n)
