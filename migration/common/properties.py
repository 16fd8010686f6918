"""Java ``.properties`` files, read as ``java.util.Properties.load(InputStream)`` reads
them (Kafka reads ``server.properties`` and ``controller.properties`` so), and written
so that Java reads back what was meant:

- the bytes are ISO-8859-1, one character each: a UTF-8 ``é`` is two characters to
  Java. :func:`load_properties` warns of a line holding bytes that are multi-byte
  UTF-8, naming the file, line and key (never the value); ``\\uXXXX`` is how the
  format spells a character beyond Latin-1;
- lines end at ``\\r\\n``, ``\\r`` or ``\\n``; at the start of a logical line, leading
  blanks (space, tab, form feed) are dropped, a blank line is skipped, and a line whose
  first character is then ``#`` or ``!`` is a comment, which never continues;
- a line ending in an odd number of backslashes continues on the next line, whose
  leading blanks are dropped; a backslash at the very end of the file is dropped;
- the key runs to the first unescaped ``=``, ``:`` or blank; blanks, then at most one
  ``=`` or ``:``, then blanks separate it from the value, which keeps its trailing blanks;
- ``\\t \\n \\r \\f`` and ``\\uXXXX`` are escapes (a UTF-16 surrogate pair of them is one
  character; a malformed ``\\uXXXX`` is :class:`PropertiesError` naming the line); any
  other escaped character stands for itself (``\\=`` in a key, ``\\\\`` a backslash);
- a key given twice: the last wins.

:func:`parse_properties` is Java's map exactly. :func:`read_properties` is what Kafka's
configs see of a file: Java's map, each value trimmed as Kafka's ``ConfigDef`` trims a
value it parses (``String.trim``: characters up to U+0020 off both ends).
:func:`property_line` and :func:`render_properties` write as ``Properties.store``
escapes where a character needs it, in printable ASCII only, so Java and a UTF-8 reader
agree. :func:`property_entries` keeps where each entry lies, for rewrites that keep
the rest of a file (:mod:`migration.common.properties_edit`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from migration.common.files import UnreadableFileError, read_regular
from migration.common.limits import INT32_MAX
from migration.common.text import shown

_BLANK = " \t\f"
_JAVA_TRIM = "".join(chr(c) for c in range(0x21))  # what java.lang.String.trim removes
_log = logging.getLogger(__name__)
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_WRITTEN_ESCAPES = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f"}
_LINE_END = re.compile(r"(\r\n|\r|\n)")  # Java's only (not str.splitlines' \x1c, \x85...)
_UTF8_MULTIBYTE = re.compile(
    rb"[\xc2-\xdf][\x80-\xbf]|\xe0[\xa0-\xbf][\x80-\xbf]|[\xe1-\xec\xee\xef][\x80-\xbf]{2}"
    rb"|\xed[\x80-\x9f][\x80-\xbf]|\xf0[\x90-\xbf][\x80-\xbf]{2}|[\xf1-\xf3][\x80-\xbf]{3}"
    rb"|\xf4[\x80-\x8f][\x80-\xbf]{2}"
)
_BOM = b"\xef\xbb\xbf"


class PropertiesError(ValueError):
    def __init__(self, line: int, problem: str) -> None:
        super().__init__(f"line {line}: {problem}")
        self.line = line


@dataclass(frozen=True)
class Entry:
    """One logical line: its key and value as Java reads them, the physical lines it
    spans (``first`` to ``last``, counted from 1), and ``prefix``: the text of its first
    physical line before the value (indent, key as spelled, separator) when the value
    starts on that line after a separator, else None."""

    key: str
    value: str = field(repr=False)  # (a password's value, as any other)
    first: int
    last: int
    prefix: str | None = field(repr=False)


def physical_lines(text: str) -> list[tuple[str, str]]:
    """``text`` cut at Java's line ends: (content, line end) pairs; the last line's end
    is "" when the text does not end with one."""
    parts = _LINE_END.split(text)
    lines = list(zip(parts[0:-1:2], parts[1::2], strict=True))
    if parts[-1]:
        lines.append((parts[-1], ""))
    return lines


def property_entries(text: str) -> list[Entry]:
    """Every logical line of ``text`` in order, a repeated key each time (see the module
    doc for the rules)."""
    entries: list[Entry] = []
    pending: str | None = None  # the logical line so far, while it continues
    start = first_text = 0
    lines = physical_lines(text)
    for number, (raw, _) in enumerate(lines, 1):
        line = raw.lstrip(_BLANK)
        # A continued line that holds nothing yet is still a new logical line (Java 9+).
        if not pending:
            if not line or line[0] in "#!":
                pending = None
                continue
            if pending is None:
                start = number
            first_text = number
        continues = line_continues(line)
        logical = (pending or "") + (line[:-1] if continues else line)
        if continues:
            pending = logical
            continue
        entries.append(_entry(logical, lines[first_text - 1][0], start, number))
        pending = None
    if pending is not None:  # continued at the end of the file: the backslash is dropped
        entries.append(_entry(pending, lines[first_text - 1][0], start, len(lines)))
    return entries


def line_continues(line: str) -> bool:
    """Whether a (non-comment) physical line continues on the next: it ends in an odd
    number of backslashes."""
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1


def parse_properties(text: str) -> dict[str, str]:
    """``text`` as ``Properties.load`` reads it: the last value of each key."""
    return {e.key: e.value for e in property_entries(text)}


def _entry(logical: str, first_line: str, first: int, last: int) -> Entry:
    key, value_at = _split(logical)
    indent = len(first_line) - len(first_line.lstrip(_BLANK))
    head = first_line[indent:]
    prefix = None
    if len(key) < value_at <= len(head) and head[:value_at] == logical[:value_at]:
        prefix = first_line[: indent + value_at]
    value = logical[value_at:]
    return Entry(_unescape(key, first), _unescape(value, first), first, last, prefix)


def _split(line: str) -> tuple[str, int]:
    """The key as spelled, and where the value starts."""
    i, n = 0, len(line)
    while i < n and line[i] not in "=:" + _BLANK:
        i += 2 if line[i] == "\\" else 1
    i = min(i, n)
    key, at = line[:i], i
    while at < n and line[at] in _BLANK:
        at += 1
    if at < n and line[at] in "=:":
        at += 1
        while at < n and line[at] in _BLANK:
            at += 1
    return key, at


def _unescape(text: str, line: int) -> str:
    if "\\" not in text:
        return text
    out: list[str] = []
    surrogates = False
    i = 0
    while i < len(text):
        char = text[i]
        if char != "\\" or i + 1 == len(text):
            out.append(char)
            i += 1
            continue
        escaped = text[i + 1]
        if escaped == "u":
            digits = text[i + 2 : i + 6]
            if len(digits) != 4 or any(c not in "0123456789abcdefABCDEF" for c in digits):
                raise PropertiesError(line, f"malformed \\uXXXX escape {shown(text[i : i + 6])}")
            code = int(digits, 16)
            surrogates |= 0xD800 <= code <= 0xDFFF
            out.append(chr(code))
            i += 6
        else:
            out.append(_ESCAPES.get(escaped, escaped))
            i += 2
    result = "".join(out)
    if surrogates:  # Java's strings are UTF-16: a pair of escapes is one character
        result = result.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return result


def kafka_value(value: str) -> str:
    """A value as Kafka's ``ConfigDef`` parses it: trimmed by ``String.trim``."""
    return value.strip(_JAVA_TRIM)


class TypedProperties:
    """Typed reads of a properties map that collect every problem instead of stopping at
    the first (Kafka's config classes report one; an operator fixing a file wants all).
    A bad or missing value yields the fallback and a line in ``problems``."""

    def __init__(self, props: dict[str, str]) -> None:
        self.props = props
        self.problems: list[str] = []

    def integer(
        self, key: str, default: int | None, minimum: int = 0, maximum: int = INT32_MAX
    ) -> int:
        text = self.props.get(key)
        if text is None:
            if default is None:
                self.problems.append(f"{key} is required")
                return minimum
            return default
        try:
            value = int(text)
        except ValueError:
            self.problems.append(f"{key}={shown(text)} is not an integer")
            return minimum
        if not minimum <= value <= maximum:
            self.problems.append(f"{key}={shown(value)} is outside [{minimum}, {maximum}]")
            return minimum
        return value

    def finish(self, source: str, known: set[str]) -> None:
        """Raise ConfigError listing every problem; warn of unknown keys (Kafka ignores
        them, and a typo is the usual cause)."""
        if self.problems:
            raise ConfigError(source, self.problems)
        for key in sorted(set(self.props) - known):
            _log.warning("%s: unknown property %s (ignored)", source, key)

    def boolean(self, key: str, default: bool) -> bool:
        text = self.props.get(key)
        if text is None:
            return default
        if text.strip().lower() not in ("true", "false"):
            self.problems.append(f"{key}={shown(text)} is not true or false")
            return default
        return text.strip().lower() == "true"


Reader = Callable[[TypedProperties, Any], Any]
"""How a setting is read: from the typed properties, given its default."""


def integer_setting(key: str, minimum: int = 0, maximum: int = INT32_MAX) -> Reader:
    """Property ``key``, an integer in ``[minimum, maximum]`` (:meth:`TypedProperties.integer`)."""
    return lambda typed, default: typed.integer(key, default, minimum, maximum)


def boolean_setting(key: str) -> Reader:
    """Property ``key``, true or false (:meth:`TypedProperties.boolean`)."""
    return lambda typed, default: typed.boolean(key, default)


def read_settings(
    typed: TypedProperties, settings: Iterable[tuple[str, Reader]], config: type
) -> dict[str, Any]:
    """Each setting by its field of the dataclass ``config``, read in the order given
    (the order its problems are reported in), with that field's default."""
    defaults = {f.name: f.default for f in fields(config)}
    return {name: read(typed, defaults[name]) for name, read in settings}


class ConfigError(Exception):
    """A configuration file or map is unusable: names the source and every problem."""

    def __init__(self, source: str, problems: list[str]) -> None:
        super().__init__(f"{source}: " + "; ".join(problems))
        self.source = source
        self.problems = problems


PROPERTIES_MAX_BYTES = 1024 * 1024  # a server.properties with inline PEMs is a few KiB


@dataclass(frozen=True)
class PropertiesFile:
    """A ``.properties`` file as read: ``text`` is its bytes as ISO-8859-1 (so
    ``text.encode("latin-1")`` is the file again), ``entries`` its logical lines."""

    path: Path
    text: str = field(repr=False)  # (secrets among its values)
    entries: tuple[Entry, ...] = field(repr=False)

    def kafka_values(self) -> dict[str, str]:
        """What Kafka's configs see: the last value of each key, trimmed."""
        return {e.key: kafka_value(e.value) for e in self.entries}


def load_properties(path: Path) -> PropertiesFile:
    """The file at ``path`` (at most :data:`PROPERTIES_MAX_BYTES`) read by Java's rules.
    ConfigError naming the file when it cannot be read, starts with a UTF-8 byte-order
    mark (Kafka would read it as part of the first key) or holds a malformed escape; a
    warning for each logical line holding multi-byte UTF-8 (see the module doc)."""
    try:
        data = read_regular(path, PROPERTIES_MAX_BYTES)
    except (OSError, UnreadableFileError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError(str(path), [f"cannot read: {reason}"]) from None
    if data.startswith(_BOM):
        raise ConfigError(
            str(path),
            [
                "starts with a UTF-8 byte-order mark, which Kafka reads as part of the first "
                "key: save the file without it"
            ],
        )
    text = data.decode("latin-1")
    try:
        entries = tuple(property_entries(text))
    except PropertiesError as exc:
        raise ConfigError(str(path), [str(exc)]) from None
    lines = physical_lines(text)
    for e in entries:
        raw = "".join(content for content, _ in lines[e.first - 1 : e.last])
        if _UTF8_MULTIBYTE.search(raw.encode("latin-1")):
            _log.warning(
                "%s: line %d (%s) holds bytes that are multi-byte UTF-8, but Java and Kafka "
                "read a .properties file as ISO-8859-1, a character a byte, so Kafka sees "
                "other characters than the UTF-8 ones: write each such character as a "
                "\\uXXXX escape (é as \\u00e9)",
                path,
                e.first,
                shown(e.key),
            )
    return PropertiesFile(path, text, entries)


def read_properties(path: Path) -> dict[str, str]:
    """The file's values as Kafka's configs see them (:func:`load_properties`,
    :meth:`PropertiesFile.kafka_values`)."""
    return load_properties(path).kafka_values()


def _escaped(text: str, key: bool) -> str:
    """``text`` as ``Properties.store`` spells it where a character needs escaping:
    backslashes and line breaks always, a key's blanks and ``= : # !``, a value's leading
    blank and leading ``=`` or ``:`` (a value may follow a blank separator), and every
    character outside printable ASCII as ``\\uXXXX`` (UTF-16 units, as Java's are)."""
    out: list[str] = []
    for i, c in enumerate(text):
        if c in _WRITTEN_ESCAPES:
            out.append(_WRITTEN_ESCAPES[c])
        elif (key and c in " =:#!") or (i == 0 and c in " =:"):
            out.append("\\" + c)
        else:
            out.append(_ascii(c))
    return "".join(out)


def _ascii(c: str) -> str:
    """``c`` itself when printable ASCII, else its ``\\uXXXX`` escapes (UTF-16 units)."""
    if " " <= c <= "~":
        return c
    units = c.encode("utf-16-be", "surrogatepass")
    return "".join(f"\\u{units[j]:02X}{units[j + 1]:02X}" for j in range(0, len(units), 2))


def property_line(key: str, value: str, prefix: str | None = None) -> str:
    """One line (no line end) that Java reads as ``key`` = ``value``; ``prefix``: the
    key and separator as already spelled (an :class:`Entry`'s), kept."""
    return (prefix if prefix is not None else _escaped(key, True) + "=") + _escaped(value, False)


def render_properties(props: dict[str, str], header: str = "") -> str:
    """``props`` as ``.properties`` text (printable ASCII) that :func:`parse_properties`
    reads back equal, after ``header`` as comment lines."""
    lines = ["# " + "".join(map(_ascii, line)) for line in header.splitlines()]
    lines += [property_line(k, v) for k, v in props.items()]
    return "\n".join(lines) + "\n"
