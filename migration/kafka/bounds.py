"""Every length in a Kafka frame checked against the bytes that remain, before kio decodes.

kio's native decoder reserves room for an array (or string, or bytes) from the length the
frame claims, before it reads a single element: a Metadata v9 request whose topics array
claimed 2^32-2 entries in a 26-byte frame made it ask for 32 GiB, and the allocator
aborted the whole process. :func:`check` walks a frame exactly as the schema lays it out
(kio's dataclasses: fixed-size fields, legacy and compact strings, bytes and arrays,
nullable structs, tagged fields) without building anything, and refuses the first length
that claims more bytes than remain (an array of N entries needs at least N bytes, a string
or bytes of L bytes needs L), and a null (-1) where the schema does not allow one, as
Kafka's own readers do (kio would hand the handlers a None they cannot take). Once a frame
passes, whatever kio reserves is bounded by the frame's own size (itself bounded by
``socket.request.max.bytes``).

The walk is compiled once per schema into closures (no per-field type inspection per
frame); :func:`length_fields` lists where a frame's length fields are, for the fuzz tests.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable
from dataclasses import MISSING, dataclass
from functools import cache
from typing import Any

from kio.serial import entity_reader
from kio.static.constants import EntityType


class FrameError(ValueError):
    """A request frame that cannot be answered: the connection is closed (Kafka does the
    same); the message names what was wrong."""


class _Walk:
    """One pass over one frame: the bytes, the end of the region being read, and (for the
    fuzz corpus) where each length field was found."""

    __slots__ = ("buf", "lengths")

    def __init__(self, buf: bytes | memoryview, record: bool) -> None:
        self.buf = buf
        self.lengths: list[tuple[int, int, str]] | None = [] if record else None

    def need(self, pos: int, n: int, end: int, what: str) -> int:
        if n > end - pos:
            raise FrameError(f"{what} claims {n} bytes, {max(end - pos, 0)} remain")
        return pos + n

    def uvarint(self, pos: int, end: int, what: str) -> tuple[int, int]:
        """Kafka's unsigned varint (at most 5 bytes: an int32's range)."""
        start, value, shift = pos, 0, 0
        while True:
            if pos >= end:
                raise FrameError(f"{what}: a varint cut short")
            byte = self.buf[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                if self.lengths is not None:
                    self.lengths.append((start, pos - start, "uvarint"))
                return value, pos
            shift += 7
            if shift > 28:
                raise FrameError(f"{what}: a varint longer than 5 bytes")

    def signed(self, pos: int, end: int, width: int, what: str) -> tuple[int, int]:
        after = self.need(pos, width, end, what)
        if self.lengths is not None:
            self.lengths.append((pos, width, f"int{width * 8}"))
        return int.from_bytes(self.buf[pos:after], "big", signed=True), after

    def count(
        self, pos: int, end: int, compact: bool, nullable: bool, what: str
    ) -> tuple[int, int]:
        """An array's entry count (-1: null, where the schema allows it), never more than
        the bytes that remain."""
        if compact:
            raw, pos = self.uvarint(pos, end, what)
            n = raw - 1
        else:
            n, pos = self.signed(pos, end, 4, what)
        if n < -1 or (n == -1 and not nullable):
            raise FrameError(f"{what}: a length of {n}")
        if n > end - pos:
            raise FrameError(f"{what} claims {n} entries, {end - pos} bytes remain")
        return n, pos

    def blob(
        self, pos: int, end: int, what: str, *, compact: bool, nullable: bool, width: int
    ) -> int:
        """A string's or bytes' length (-1: null, where allowed), then the bytes."""
        if compact:
            raw, pos = self.uvarint(pos, end, what)
            n = raw - 1
        else:
            n, pos = self.signed(pos, end, width, what)
        if n < -1 or (n == -1 and not nullable):
            raise FrameError(f"{what}: a length of {n}")
        return pos if n == -1 else self.need(pos, n, end, what)


Step = Callable[[_Walk, int, int], int]  # (walk, position, end of region) -> next position

_FIXED = {
    "bool": 1, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "error_code": 2,
    "int32": 4, "uint32": 4, "timedelta_i32": 4, "int64": 8, "uint64": 8,
    "timedelta_i64": 8, "datetime_i64": 8, "float64": 8, "uuid": 16,
}  # fmt: skip


def _fixed(width: int, what: str) -> Step:
    return lambda w, pos, end: w.need(pos, width, end, what)


def _primitive(kind: str, compact: bool, nullable: bool, what: str) -> Step:
    if kind in _FIXED:
        return _fixed(_FIXED[kind], what)
    if kind in ("string", "bytes", "records"):
        width = 2 if kind == "string" else 4  # a legacy length's width
        return lambda w, pos, end: w.blob(
            pos, end, what, compact=compact, nullable=nullable, width=width
        )
    raise TypeError(f"{what}: kafka_type {kind!r} is not known to the frame check")


def _array(element: Step, compact: bool, nullable: bool, what: str) -> Step:
    def step(w: _Walk, pos: int, end: int) -> int:
        n, pos = w.count(pos, end, compact, nullable, what)
        for _ in range(n):
            pos = element(w, pos, end)
        return pos

    return step


def _nullable_struct(inner: Step, what: str) -> Step:
    def step(w: _Walk, pos: int, end: int) -> int:
        marker, pos = w.signed(pos, end, 1, what)
        return pos if marker < 0 else inner(w, pos, end)

    return step


def _tagged(known: dict[int, Step], what: str) -> Step:
    """A flexible struct's tagged fields: a count, then (tag, size, value) each; a known
    tag's value is walked inside its own size."""

    def step(w: _Walk, pos: int, end: int) -> int:
        n, pos = w.uvarint(pos, end, f"{what} tagged fields")
        if n > end - pos:
            raise FrameError(f"{what} claims {n} tagged fields, {end - pos} bytes remain")
        for _ in range(n):
            tag, pos = w.uvarint(pos, end, f"{what} tag")
            size, pos = w.uvarint(pos, end, f"{what} tag {tag}")
            stop = w.need(pos, size, end, f"{what} tag {tag}")
            if tag in known and known[tag](w, pos, stop) != stop:
                raise FrameError(f"{what} tag {tag}: its value does not fill its {size} bytes")
            pos = stop
        return pos

    return step


@dataclass(frozen=True, slots=True)
class SchemaField:
    """One field of a kio schema class, as the wire sees it."""

    name: str
    kafka_type: str | None  # None for a nested schema (alone or in an array)
    entity: type | None  # the nested schema class
    is_tuple: bool  # an array
    optional: bool  # nullable (the array itself, for an array)
    has_default: bool
    tag: int | None  # a tagged field's tag


@cache
def schema_fields(cls: type) -> tuple[SchemaField, ...]:
    """The fields of a kio schema class, in wire order: the one reading of kio's type
    hints (the frame check and the response builder share it)."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        args = typing.get_args(hint)
        optional = type(None) in args
        if optional:
            hint = next(a for a in args if a is not type(None))
            args = typing.get_args(hint)
        is_tuple = typing.get_origin(hint) is tuple
        inner = args[0] if is_tuple else hint
        out.append(
            SchemaField(
                name=f.name,
                kafka_type=f.metadata.get("kafka_type"),
                entity=inner if dataclasses.is_dataclass(inner) else None,  # type: ignore[arg-type]
                is_tuple=is_tuple,
                optional=optional,
                has_default=f.default is not MISSING or f.default_factory is not MISSING,
                tag=int(f.metadata["tag"]) if "tag" in f.metadata else None,
            )
        )
    return tuple(out)


@cache
def _entity(schema: type) -> Step:
    """The walk of one kio schema class, compiled once."""
    flexible = bool(getattr(schema, "__flexible__", False))
    header = getattr(schema, "__type__", None) is EntityType.header
    steps: list[Step] = []
    tagged: dict[int, Step] = {}
    for f in schema_fields(schema):
        what = f"{schema.__name__}.{f.name}"
        # A request header's client id is a legacy string in every header version.
        compact = flexible and not (header and f.name == "client_id")
        if f.entity is not None:
            step = _entity(f.entity)
            if not f.is_tuple and f.optional:
                step = _nullable_struct(step, what)
        else:
            # An array's elements are never null; a string or bytes field may be.
            nullable = f.optional and not f.is_tuple
            step = _primitive(f.kafka_type or "", compact, nullable, what)
        if f.is_tuple:
            step = _array(step, compact, f.optional, what)
        if f.tag is not None:
            tagged[f.tag] = step
        else:
            steps.append(step)
    if flexible:
        steps.append(_tagged(tagged, schema.__name__))

    def walk(w: _Walk, pos: int, end: int) -> int:
        for step in steps:
            pos = step(w, pos, end)
        return pos

    return walk


def check(schema: type, frame: bytes | memoryview, offset: int = 0) -> int:
    """Walk ``frame`` from ``offset`` as ``schema`` lays it out; the offset after it.
    FrameError names the first field whose length claims more than the frame holds (or
    that is cut short, or negative where only -1, null, is allowed)."""
    return _entity(schema)(_Walk(frame, False), offset, len(frame))


def decode(schema: type, frame: bytes, offset: int = 0) -> tuple[Any, int]:
    """kio's ``entity_reader(schema)(frame, offset)``, after :func:`check`: the decoded
    value and the offset after it. FrameError for a length that claims too much; kio's
    own errors for anything else malformed."""
    check(schema, frame, offset)
    value: Any
    value, used = entity_reader(schema)(frame, offset)
    return value, used


def length_fields(schema: type, frame: bytes, offset: int = 0) -> list[tuple[int, int, str]]:
    """(offset, width, kind) of every length and count field of a valid ``frame`` laid
    out as ``schema``, in order; kind is ``uvarint``, ``int8`` (a nullable struct's
    marker), ``int16`` or ``int32``."""
    w = _Walk(frame, True)
    _entity(schema)(w, offset, len(frame))
    assert w.lengths is not None
    return w.lengths
