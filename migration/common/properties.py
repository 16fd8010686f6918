"""Java ``.properties`` text, read by ``java.util.Properties.load``'s rules (what Kafka
reads ``server.properties`` and ``controller.properties`` with):

- a line whose first non-blank character is ``#`` or ``!`` is a comment; blank lines
  are skipped;
- a line ending in an odd number of backslashes continues on the next line, whose
  leading blanks are dropped (a comment line never continues);
- the key runs to the first unescaped ``=``, ``:`` or blank; blanks, then at most one
  ``=`` or ``:``, then blanks separate it from the value;
- ``\\t \\n \\r \\f`` and ``\\uXXXX`` are escapes, any other escaped character stands for
  itself (``\\=`` in a key, ``\\\\`` for a backslash).

Values lose trailing blanks too (Kafka trims every typed value it parses). A malformed
``\\uXXXX`` raises :class:`PropertiesError` naming the line.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from migration.common.files import UnreadableFileError, read_regular
from migration.common.limits import INT32_MAX
from migration.common.text import shown

_BLANK = " \t\f"
_log = logging.getLogger(__name__)
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


class PropertiesError(ValueError):
    def __init__(self, line: int, problem: str) -> None:
        super().__init__(f"line {line}: {problem}")
        self.line = line


def parse_properties(text: str) -> dict[str, str]:
    props: dict[str, str] = {}
    for number, line in _logical_lines(text):
        key, value = _split(line)
        props[_unescape(key, number)] = _unescape(value, number).rstrip(_BLANK)
    return props


def _logical_lines(text: str) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    pending: str | None = None
    start = 0
    # Java breaks lines at \n, \r and \r\n only (str.splitlines also breaks at \x1c-\x1e,
    # \x85, \u2028...: characters a value may hold).
    for number, raw in enumerate(_LINE_BREAK.split(text.removesuffix("\n")), 1):
        line = raw.lstrip(_BLANK)
        if pending is None:
            if not line or line[0] in "#!":
                continue
            start = number
            pending = ""
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2:
            pending += line[:-1]
            continue
        out.append((start, pending + line))
        pending = None
    if pending:
        out.append((start, pending))
    return out


def _split(line: str) -> tuple[str, str]:
    i, n = 0, len(line)
    while i < n and line[i] not in "=:" + _BLANK:
        i += 2 if line[i] == "\\" else 1
    key, rest = line[:i], line[i:].lstrip(_BLANK)
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(_BLANK)
    return key, rest


def _unescape(text: str, line: int) -> str:
    if "\\" not in text:
        return text
    out: list[str] = []
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
                raise PropertiesError(line, f"malformed \\uXXXX escape {text[i : i + 6]!r}")
            out.append(chr(int(digits, 16)))
            i += 6
        else:
            out.append(_ESCAPES.get(escaped, escaped))
            i += 2
    return "".join(out)


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


class ConfigError(Exception):
    """A configuration file or map is unusable: names the source and every problem."""

    def __init__(self, source: str, problems: list[str]) -> None:
        super().__init__(f"{source}: " + "; ".join(problems))
        self.source = source
        self.problems = problems


PROPERTIES_MAX_BYTES = 1024 * 1024  # a server.properties with inline PEMs is a few KiB


def read_properties(path: Path) -> dict[str, str]:
    """The file by Java's ``.properties`` rules, at most :data:`PROPERTIES_MAX_BYTES`. It
    must be UTF-8 text without a byte-order mark (Kafka would read a BOM as part of the
    first key): ConfigError naming the file and byte, or line, otherwise."""
    try:
        data = read_regular(path, PROPERTIES_MAX_BYTES)
    except (OSError, UnreadableFileError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError(str(path), [f"cannot read: {reason}"]) from None
    if data.startswith(b"\xef\xbb\xbf"):
        raise ConfigError(
            str(path),
            [
                "starts with a UTF-8 byte-order mark, which Kafka reads as part of the first "
                "key: save the file without it"
            ],
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            str(path), [f"not UTF-8 text (byte {exc.start} is {data[exc.start]:#04x})"]
        ) from None
    try:
        return parse_properties(text)
    except PropertiesError as exc:
        raise ConfigError(str(path), [str(exc)]) from None


def render_properties(props: dict[str, str], header: str = "") -> str:
    """``props`` as ``.properties`` text that :func:`parse_properties` reads back equal:
    backslashes, key separators and line breaks escaped."""

    def escape(text: str, key: bool) -> str:
        out = text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
        out = out.replace("\t", "\\t").replace("\f", "\\f")
        if key:
            for c in "=: ":
                out = out.replace(c, "\\" + c)
            if out[:1] in ("#", "!"):
                out = "\\" + out
        elif out[:1] == " ":
            out = "\\" + out  # a leading blank of a value is kept only escaped
        return out

    lines = [f"# {line}" for line in header.splitlines()]
    lines += [f"{escape(k, True)}={escape(v, False)}" for k, v in props.items()]
    return "\n".join(lines) + "\n"
