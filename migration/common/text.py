"""Values quoted in messages: short enough to read, never a megabyte echoed back, never a
raw control character on the operator's terminal.

Two functions, two rules:

- :func:`shown` is THE way an error or warning quotes input (paths, znode data, record
  fields, config values): Python's ``repr`` (control characters, quotes and any
  non-printable character escaped), of a bounded slice only, cut to about ``limit``
  characters with the full length said. Its cost is bounded by ``limit``, not by the
  value: a 100 MiB string or bytes is never copied, decoded or escaped whole.
- :func:`printable_line` is the backstop where lines leave the process
  (:func:`migration.cli.output.error`): a message already built is cut to
  :data:`LINE_LIMIT` characters and every control character but newline and tab escaped,
  so a bypass of :func:`shown` still prints a bounded, inert line.
"""

from __future__ import annotations

import re

LIMIT = 64
PATH_LIMIT = 320  # znode paths and file names: Kafka's longest (a 249-character topic's)
LINE_LIMIT = 4096  # the most characters of one printed message (printable_line)

# C0 and C1 controls, DEL, and the Unicode format/separator characters a terminal or an
# editor may act on (bidi overrides, line/paragraph separators); newline and tab stay.
_CONTROL = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)


def shown(value: object, limit: int = LIMIT, *, bare: bool = False) -> str:
    """``value`` as an error or warning quotes it: at most about ``limit`` + 40 characters,
    holding no control character.

    A ``str`` is shown as ``repr`` shows it; ``bytes`` (and ``bytearray``/``memoryview``)
    as ``repr`` of bytes (``b'...'``). Past ``limit`` characters of ``repr`` the text is cut
    and the value's full length said: ``'abc...'... (1,048,576 characters)`` (``bytes``
    for bytes). Only ``value[:limit + 1]`` is ever escaped, so the cost is bounded by
    ``limit`` whatever the value's size. Other objects are shown by their ``repr`` cut the
    same way (an int too large for ``repr`` is described by its bit length).

    ``bare=True`` (for znode paths and the like, where quotes would only be noise): the
    text itself, unquoted, when it is printable (``str.isprintable``; for bytes, valid
    UTF-8 that is) and within ``limit``; otherwise exactly as without ``bare``.
    """
    if isinstance(value, bytearray | memoryview):
        return _shown_sequence(bytes(value[: limit + 1]), len(value), limit, bare)
    if isinstance(value, str | bytes):
        return _shown_sequence(value, len(value), limit, bare)
    try:
        text = repr(value)
    except ValueError:  # an int past sys.get_int_max_str_digits()
        bits = value.bit_length() if isinstance(value, int) else 0
        return f"<an integer of {bits:,} bits>"
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text):,} characters)"


def _shown_sequence(value: str | bytes, size: int, limit: int, bare: bool) -> str:
    unit = "bytes" if isinstance(value, bytes) else "characters"
    head = value[: limit + 1]
    if bare and size <= limit:
        text = head.decode("utf-8", "strict") if isinstance(head, bytes) and _utf8(head) else head
        if isinstance(text, str) and text.isprintable():
            return text
    text = repr(head)
    if size <= limit and len(text) <= limit:
        return text
    return f"{text[:limit]}... ({size:,} {unit})"


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8", "strict")
    except UnicodeDecodeError:
        return False
    return True


def printable_line(message: str, limit: int = LINE_LIMIT) -> str:
    """``message`` (a line the tool prints, input in it already quoted by :func:`shown`)
    made safe to print whatever went into it: cut to ``limit`` characters with the full
    length said, every control character except newline and tab escaped as ``\\xNN`` /
    ``\\uNNNN``. A message that needs neither is returned unchanged."""
    if len(message) > limit:
        message = f"{message[:limit]}... (cut: {len(message):,} characters)"
    return inert(message)


def inert(text: str) -> str:
    """``text`` with every control character except newline and tab escaped as
    ``\\xNN`` / ``\\uNNNN`` (the rule of :func:`printable_line`, without its cut):
    for text that leaves the process whole, such as the migration page's."""
    return _CONTROL.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
