"""Read and write any record of :mod:`.schemas` in Kafka's own encoding.

The encoding is Kafka's message format: big-endian fixed-width integers, and in a
*flexible* version compact strings, bytes and arrays (unsigned varint length + 1, 0
for null) and a tagged-field section closing every struct (unsigned varint count,
then per field: unsigned varint tag, unsigned varint size, the value). Older versions
use int16-length strings, int32-length bytes and arrays (-1 for null), no tags.

Contract:

- :meth:`StructCodec.decode` reads exactly one struct and returns a :class:`Struct`:
  every untagged field of that version, the tagged fields that were present, and the
  tagged fields this version does not know (``unknown_tags``, raw bytes), kept so they
  can be shown and written back.
- :meth:`StructCodec.encode` of a decoded struct gives back exactly the bytes it was
  read from (fields in schema order, tags in ascending order -- the only order Kafka
  writes, and the only one :meth:`decode` accepts). A value missing from ``values``
  is written as the field's default; a tagged field is written only when present.
- Bad bytes (too short, a length past the end, a null where the version allows none,
  tags out of order, invalid UTF-8) raise :class:`RecordFormatError`; nothing is read
  past the buffer, and no length is trusted before it fits the bytes that are left.

Each wire rule is implemented here once, and :mod:`.transcode` reads with the same
functions: varints (:func:`read_uvarint`), length prefixes with their null and bounds
checks (:func:`count_reader`), booleans (:func:`bool_of`), the fixed-size types'
layouts (:data:`FIXED_SIZE`) and the tagged-field section (:func:`read_tags`).
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from migration.kafka_log.schema import PRIMITIVES, Field, MessageSchema, Versions

Buf = bytes | memoryview | mmap.mmap
Reader = Callable[[Buf, int], tuple[Any, int]]
Writer = Callable[[bytearray, Any], None]

ZERO_UUID = bytes(16)


class RecordFormatError(ValueError):
    """Bytes that are not a valid encoding of the record they claim to be."""


@dataclass(slots=True)
class Struct:
    """A decoded struct: Kafka field names to values (arrays as lists, nested structs
    as :class:`Struct`, uuids as 16 bytes, nulls as None)."""

    values: dict[str, Any]
    unknown_tags: dict[int, bytes] = field(default_factory=dict)


# --- primitives ----------------------------------------------------------------------


def read_uvarint(buf: Buf, pos: int) -> tuple[int, int]:
    b = buf[pos]
    if b < 0x80:
        return b, pos + 1
    result, shift = b & 0x7F, 7
    while True:
        pos += 1
        b = buf[pos]
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos + 1
        shift += 7
        if shift > 63:
            raise RecordFormatError(f"varint longer than 10 bytes at byte {pos}")


def write_uvarint(out: bytearray, n: int) -> None:
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def read_tags(buf: Buf, pos: int) -> tuple[list[tuple[int, int, int]], int]:
    """The tagged-field section at ``pos``: (tag, start, end) of each field's value, and
    where the section ends. Tags must ascend (as Kafka writes them); every size must fit."""
    count, pos = read_uvarint(buf, pos)
    if count > len(buf) - pos:
        raise RecordFormatError(f"{count} tagged fields cannot fit at byte {pos}")
    fields = []
    last = -1
    for _ in range(count):
        tag, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        if tag <= last:
            raise RecordFormatError(f"tagged field {tag} after {last} at byte {pos}")
        end = pos + size
        if end > len(buf):
            raise RecordFormatError(f"tagged field {tag}: {size} bytes past the end")
        fields.append((tag, pos, end))
        last, pos = tag, end
    return fields, pos


def _fixed(fmt: str) -> tuple[Reader, Writer]:
    s = struct.Struct(fmt)
    unpack, pack, size = s.unpack_from, s.pack, s.size

    def read(buf: Buf, pos: int) -> tuple[Any, int]:
        if pos + size > len(buf):
            raise RecordFormatError(f"{size}-byte value past the end at byte {pos}")
        return unpack(buf, pos)[0], pos + size

    def write(out: bytearray, value: Any) -> None:
        out += pack(value)

    return read, write


NUMBERS = {"int8": "b", "int16": "h", "uint16": "H", "int32": "i", "int64": "q", "float64": "d"}
"""Kafka's fixed-width numbers: their :mod:`struct` codes (big-endian, ``>``)."""

FIXED_SIZE = {**NUMBERS, "bool": "B", "uuid": "16s"}
"""Every type of a fixed size: its :mod:`struct` code (a bool must then pass
:func:`bool_of`)."""
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


def bool_of(b: int, pos: int) -> bool:
    """Kafka's boolean byte ``b`` (read at ``pos``): 0 or 1, anything else refused."""
    if b > 1:
        raise RecordFormatError(f"boolean byte {b} at byte {pos}")
    return b == 1


def _read_bool(buf: Buf, pos: int) -> tuple[Any, int]:
    if pos >= len(buf):
        raise RecordFormatError(f"boolean past the end at byte {pos}")
    return bool_of(buf[pos], pos), pos + 1


def _write_bool(out: bytearray, value: Any) -> None:
    out.append(1 if value else 0)


def _read_uuid(buf: Buf, pos: int) -> tuple[Any, int]:
    if pos + 16 > len(buf):
        raise RecordFormatError(f"uuid past the end at byte {pos}")
    return bytes(buf[pos : pos + 16]), pos + 16


def _write_uuid(out: bytearray, value: Any) -> None:
    if len(value) != 16:
        raise ValueError(f"a uuid is 16 bytes, not {len(value)}")
    out += value


CountReader = Callable[[Buf, int], tuple[int, int]]
"""Reads one field's length prefix at pos: (n, where the items start), n -1 for null."""


def count_reader(
    name: str, *, flexible: bool, nullable: bool, wide: bool, unit: int = 1
) -> CountReader:
    """The reader of one field's length prefix (a string's, bytes' or array's), built
    once per field and version: compact (unsigned varint of n + 1, 0 for null) when
    ``flexible``, else int32 when ``wide`` (bytes, arrays) or int16 (strings), -1 for
    null. A null the version has none of, or n items of ``unit`` bytes (an item's
    least size: 1 for a byte of a string, a struct or a string element) that cannot
    fit in the bytes left, are RecordFormatError; a varint cut short is IndexError."""

    def checked(buf: Buf, n: int, pos: int) -> tuple[int, int]:
        if n < 0:
            if not nullable:
                raise RecordFormatError(f"{name}: null at byte {pos}, and this version has no null")
            return -1, pos
        if n * unit > len(buf) - pos:
            raise RecordFormatError(f"{name}: a length of {n} runs past the end at byte {pos}")
        return n, pos

    def compact(buf: Buf, pos: int) -> tuple[int, int]:
        n = buf[pos]
        if 0 < n < 0x80 and (n - 1) * unit <= len(buf) - pos - 1:  # the common case
            return n - 1, pos + 1
        n, pos = read_uvarint(buf, pos)
        return checked(buf, n - 1, pos)

    fixed = _INT32 if wide else _INT16

    def classic(buf: Buf, pos: int) -> tuple[int, int]:
        if pos + fixed.size > len(buf):
            raise RecordFormatError(f"length past the end at byte {pos}")
        return checked(buf, fixed.unpack_from(buf, pos)[0], pos + fixed.size)

    return compact if flexible else classic


def _write_length(out: bytearray, n: int, flexible: bool, wide: bool) -> None:
    if flexible:
        write_uvarint(out, n + 1)
    else:
        out += (_INT32 if wide else _INT16).pack(n)


def _blob(name: str, flexible: bool, nullable: bool, text: bool) -> tuple[Reader, Writer]:
    wide = not text  # bytes have an int32 length, strings an int16 one

    count = count_reader(name, flexible=flexible, nullable=nullable, wide=wide)

    def read(buf: Buf, pos: int) -> tuple[Any, int]:
        n, pos = count(buf, pos)
        if n < 0:
            return None, pos
        end = pos + n
        raw = bytes(buf[pos:end])
        if not text:
            return raw, end
        try:
            return raw.decode(), end
        except UnicodeDecodeError:
            raise RecordFormatError(f"{name}: not UTF-8 at byte {pos}") from None

    def write(out: bytearray, value: Any) -> None:
        if value is None:
            if not nullable:
                raise ValueError(f"{name}: null, and this version has no null")
            _write_length(out, -1, flexible, wide)
            return
        raw = value.encode() if text else value
        _write_length(out, len(raw), flexible, wide)
        out += raw

    return read, write


def _array(
    name: str, flexible: bool, nullable: bool, item: tuple[Reader, Writer]
) -> tuple[Reader, Writer]:
    read_item, write_item = item

    count = count_reader(name, flexible=flexible, nullable=nullable, wide=True)

    def read(buf: Buf, pos: int) -> tuple[Any, int]:
        n, pos = count(buf, pos)
        if n < 0:
            return None, pos
        items = []
        for _ in range(n):
            value, pos = read_item(buf, pos)
            items.append(value)
        return items, pos

    def write(out: bytearray, value: Any) -> None:
        if value is None:
            if not nullable:
                raise ValueError(f"{name}: null, and this version has no null")
            _write_length(out, -1, flexible, True)
            return
        _write_length(out, len(value), flexible, True)
        for v in value:
            write_item(out, v)

    return read, write


def _scalar(type_name: str, name: str, flexible: bool, nullable: bool) -> tuple[Reader, Writer]:
    if type_name in NUMBERS:
        return _fixed(">" + NUMBERS[type_name])
    if type_name == "bool":
        return _read_bool, _write_bool
    if type_name == "uuid":
        return _read_uuid, _write_uuid
    return _blob(name, flexible, nullable, text=type_name == "string")


# --- fields and structs --------------------------------------------------------------


def default_of(f: Field) -> Any:
    """A field's value when a version lacks it or a writer leaves it out."""
    if f.default == "null":
        return None
    if f.default is not None:
        return f.default
    t = f.type
    if t.startswith("[]"):
        return []
    if t in ("bool",):
        return False
    if t == "float64":
        return 0.0
    if t in ("int8", "int16", "uint16", "int32", "int64"):
        return 0
    if t == "string":
        return ""
    if t == "bytes":
        return b""
    if t == "uuid":
        return ZERO_UUID
    return Struct({g.name: default_of(g) for g in f.fields})


def _codec(f: Field, version: int, flexible: bool) -> tuple[Reader, Writer]:
    nullable = version in Versions.parse(f.nullable_versions)
    t = f.type
    if t.startswith("[]"):
        element = t[2:]
        if element in PRIMITIVES:
            item = _scalar(element, f.name, flexible, False)
        else:
            item = _struct_rw(StructCodec.of(f.fields, version, flexible))
        return _array(f.name, flexible, nullable, item)
    if t in PRIMITIVES:
        return _scalar(t, f.name, flexible, nullable)
    codec = StructCodec.of(f.fields, version, flexible)
    read, write = _struct_rw(codec)
    if not nullable:
        return read, write

    def read_nullable(buf: Buf, pos: int) -> tuple[Any, int]:  # int8 -1 marks a null struct
        if pos >= len(buf):
            raise RecordFormatError(f"{f.name}: past the end at byte {pos}")
        if buf[pos] == 0xFF:
            return None, pos + 1
        return read(buf, pos + 1)

    def write_nullable(out: bytearray, value: Any) -> None:
        out.append(0xFF if value is None else 1)
        if value is not None:
            write(out, value)

    return read_nullable, write_nullable


def _struct_rw(codec: StructCodec) -> tuple[Reader, Writer]:
    return codec.decode, codec.encode


@dataclass(frozen=True, slots=True)
class _Tagged:
    name: str
    read: Reader
    write: Writer


class StructCodec:
    """The reader and writer of one struct at one version (built once, then cached)."""

    def __init__(self, fields: tuple[Field, ...], version: int, flexible: bool) -> None:
        self.flexible = flexible
        self.untagged: list[tuple[str, Reader, Writer, Any]] = []
        self.tagged: dict[int, _Tagged] = {}
        for f in fields:
            if version not in Versions.parse(f.versions):
                continue
            read, write = _codec(f, version, flexible)
            if f.tag is not None and flexible and version in Versions.parse(f.tagged_versions):
                self.tagged[f.tag] = _Tagged(f.name, read, write)
            else:
                self.untagged.append((f.name, read, write, default_of(f)))
        self._tag_of = {t.name: tag for tag, t in self.tagged.items()}

    @staticmethod
    @cache
    def of(fields: tuple[Field, ...], version: int, flexible: bool) -> StructCodec:
        return StructCodec(fields, version, flexible)

    def decode(self, buf: Buf, pos: int) -> tuple[Struct, int]:
        values: dict[str, Any] = {}
        for name, read, _, _ in self.untagged:
            values[name], pos = read(buf, pos)
        result = Struct(values)
        if not self.flexible:
            return result, pos
        fields, pos = read_tags(buf, pos)
        for tag, start, end in fields:
            known = self.tagged.get(tag)
            if known is None:
                result.unknown_tags[tag] = bytes(buf[start:end])
                continue
            value, used = known.read(buf[:end], start)
            if used != end:
                raise RecordFormatError(f"tagged field {tag} ({known.name}): wrong size")
            values[known.name] = value
        return result, pos

    def encode(self, out: bytearray, value: Struct) -> None:
        values = value.values
        for name, _, write, default in self.untagged:
            write(out, values.get(name, default))
        if not self.flexible:
            return
        tags: list[tuple[int, bytes]] = list(value.unknown_tags.items())
        for name, tag in self._tag_of.items():
            if name in values:
                buf = bytearray()
                self.tagged[tag].write(buf, values[name])
                tags.append((tag, bytes(buf)))
        tags.sort()
        write_uvarint(out, len(tags))
        for tag, data in tags:
            write_uvarint(out, tag)
            write_uvarint(out, len(data))
            out += data


def message_codec(schema: MessageSchema, version: int) -> StructCodec:
    """The codec of ``schema`` at ``version`` (KeyError-free: the caller checked the
    version is valid)."""
    flexible = version in Versions.parse(schema.flexible_versions)
    return StructCodec.of(schema.fields, version, flexible)


def decode_message(schema: MessageSchema, version: int, buf: Buf, pos: int = 0) -> Struct:
    """One whole message: every byte from ``pos`` on must belong to it."""
    try:
        value, end = message_codec(schema, version).decode(buf, pos)
    except (IndexError, struct.error) as exc:
        raise RecordFormatError(
            f"{schema.name} v{version}: cut short: a field runs past its byte {len(buf) - pos} "
            f"({exc})"
        ) from None
    if end != len(buf):
        raise RecordFormatError(f"{schema.name} v{version}: {len(buf) - end} bytes left over")
    return value


def encode_message(schema: MessageSchema, version: int, value: Struct) -> bytes:
    out = bytearray()
    message_codec(schema, version).encode(out, value)
    return bytes(out)
