"""Strict reading and compact writing of the JSON objects Kafka keeps in znodes.

:meth:`Fields.load` is the one decoder of znode JSON: the bounds of
:mod:`migration.common.json_input` (1 MiB, 64 levels) apply, and what breaks them is a
:class:`ZnodeFormatError` naming the znode, like any other bad data. :class:`Fields`
wraps one decoded JSON object and hands out typed fields; every mismatch becomes a
:class:`ZnodeFormatError` naming the znode path and the field, so no ``KeyError``,
``TypeError``, ``JSONDecodeError`` or ``RecursionError`` ever escapes a codec.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any, NoReturn

from migration.common.json_input import JsonInputError, decode_json, utf8_text
from migration.common.text import shown
from migration.zk.errors import ZnodeFormatError

_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def render_json(obj: Mapping[str, Any]) -> bytes:
    """Compact JSON, as Kafka writes it (no spaces, UTF-8)."""
    return _encode(obj).encode("utf-8")


def _type_name(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def decode_text(path: str, raw: bytes | None) -> str:
    """The znode's data as UTF-8 text; empty or undecodable data is an error."""
    if not raw:
        raise ZnodeFormatError(path, "znode has no data")
    try:
        return utf8_text(path, raw)
    except JsonInputError as exc:
        raise ZnodeFormatError(path, exc.problem) from None


def parse_int_text(path: str, raw: bytes | None) -> int:
    """A znode holding a plain integer as text (``/controller_epoch``, legacy offsets)."""
    text = decode_text(path, raw).strip()
    try:
        return int(text, 10)
    except ValueError:
        raise ZnodeFormatError(path, f"expected an integer, found {shown(text)}") from None


class Fields:
    """Typed access to the fields of one JSON object read from znode ``path``."""

    __slots__ = ("obj", "path")

    def __init__(self, path: str, obj: Mapping[str, Any]) -> None:
        self.path = path
        self.obj = obj

    @classmethod
    def load(cls, path: str, raw: bytes | None) -> Fields:
        """Decode ``raw``, znode ``path``'s data, as a JSON object within the bounds of
        :func:`~migration.common.json_input.decode_json`; ZnodeFormatError otherwise."""
        if not raw:
            raise ZnodeFormatError(path, "znode has no data")
        try:
            obj = decode_json(path, raw)
        except JsonInputError as exc:
            raise ZnodeFormatError(path, exc.problem) from None
        if not isinstance(obj, dict):
            raise ZnodeFormatError(path, f"expected a JSON object, found {_type_name(obj)}")
        return cls(path, obj)

    def fail(self, problem: str) -> NoReturn:
        raise ZnodeFormatError(self.path, problem)

    def _get(self, name: str) -> Any:
        try:
            return self.obj[name]
        except KeyError:
            self.fail(f"missing field {shown(name)}")

    def _bad(self, name: str, want: str, value: object) -> NoReturn:
        self.fail(
            f"field {shown(name)} must be {want}, found {_type_name(value)} {shown(value, 60)}"
        )

    def has(self, name: str) -> bool:
        return name in self.obj and self.obj[name] is not None

    def version(self, accepted: range) -> int:
        """The ``version`` field, which must lie in ``accepted``."""
        value = self.integer("version")
        if value not in accepted:
            self.fail(
                f"unsupported version {value} (this codec reads "
                f"{accepted.start}..{accepted.stop - 1})"
            )
        return value

    def integer(self, name: str) -> int:
        value = self._get(name)
        if type(value) is not int:
            self._bad(name, "an integer", value)
        return value

    def opt_integer(self, name: str, default: int) -> int:
        return self.integer(name) if self.has(name) else default

    def int_or_text(self, name: str) -> int:
        """An integer that Kafka sometimes writes as a string (timestamps, block ids)."""
        value = self._get(name)
        if type(value) is int:
            return value
        if isinstance(value, str):
            try:
                return int(value, 10)
            except ValueError:
                pass
        self._bad(name, "an integer or a numeric string", value)

    def text(self, name: str) -> str:
        value = self._get(name)
        if not isinstance(value, str):
            self._bad(name, "a string", value)
        return value

    def opt_text(self, name: str) -> str | None:
        return self.text(name) if self.has(name) else None

    def int_list(self, name: str) -> tuple[int, ...]:
        return self.as_int_list(name, self._get(name))

    def as_int_list(self, name: str, value: object) -> tuple[int, ...]:
        if type(value) is not list or (value and set(map(type, value)) != {int}):
            self._bad(name, "an array of integers", value)
        return tuple(value)

    def str_list(self, name: str) -> tuple[str, ...]:
        value = self._get(name)
        if not isinstance(value, list) or any(not isinstance(v, str) for v in value):
            self._bad(name, "an array of strings", value)
        return tuple(value)

    def mapping(self, name: str) -> Mapping[str, Any]:
        value = self._get(name)
        if not isinstance(value, dict):
            self._bad(name, "an object", value)
        return value

    def opt_mapping(self, name: str) -> Mapping[str, Any]:
        return self.mapping(name) if self.has(name) else {}

    def str_map(self, name: str) -> dict[str, str]:
        value = self.mapping(name)
        for key, item in value.items():
            if not isinstance(item, str):
                self._bad(f"{name}.{key}", "a string", item)
        return dict(value)

    def objects(self, name: str) -> Iterator[Fields]:
        """The array ``name`` of objects, each validated (when reached: a caller reading
        them in turn reports the first problem of the array) and reported under
        ``name[i]``."""
        items = self.obj.get(name)
        if not isinstance(items, list):
            self.fail(f"field '{name}' must be an array")
        for i, item in enumerate(items):
            yield self.sub(f"{name}[{i}]", item)

    def sub(self, name: str, value: object) -> Fields:
        """A nested object, validated and reported under ``name``."""
        if not isinstance(value, dict):
            self._bad(name, "an object", value)
        return _Nested(self.path, value, name)


class _Nested(Fields):
    """Fields of an object nested in a znode's JSON; errors name the enclosing field."""

    __slots__ = ("prefix",)

    def __init__(self, path: str, obj: Mapping[str, Any], prefix: str) -> None:
        super().__init__(path, obj)
        self.prefix = prefix

    def fail(self, problem: str) -> NoReturn:
        raise ZnodeFormatError(self.path, f"in {self.prefix}: {problem}")
