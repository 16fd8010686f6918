"""JSON from outside the process (znodes, files, peers' answers), decoded within bounds.

Contract: :func:`decode_json` returns the decoded value, or raises
:class:`JsonInputError` (a ``ValueError``) naming the source and saying what is wrong.
Nothing else escapes it, whatever the bytes: in particular never a ``RecursionError``
(the standard decoder recurses once per nesting level and gives up at the interpreter's
recursion limit, 1,000 by default), because the nesting is measured first.

The bounds, the one rule for every JSON value the project reads:

- :data:`MAX_DEPTH` = 64 levels of arrays and objects. Kafka's own znodes are at most
  four deep (a topic znode: object, ``partitions`` object, replica array); the
  quorum-state file is one. 64 leaves room for any future format and stays far below
  the recursion limit.
- :data:`MAX_BYTES` = 1 MiB, ZooKeeper's ``jute.maxbuffer`` default: no znode a
  default server accepts is bigger.

The nesting is measured by a scan over the raw bytes, not by decoding: brackets inside
strings do not count (a topic named ``[[[`` is one level deep), and the scan runs only
when the value has more opening brackets than :data:`MAX_DEPTH` at all (a partition
state has two), in C-speed passes (``bytes.translate`` / ``replace``) otherwise.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any

MAX_DEPTH = 64
MAX_BYTES = 1 << 20

_decode = json.JSONDecoder().decode
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'[]{}"\\')
_NOT_BRACKET = _NOT_STRUCTURE + b'"\\'
_AS_ARRAYS = bytes.maketrans(b"{}", b"[]")
_STEP = {ord("["): 1, ord("]"): -1}


class JsonInputError(ValueError):
    """``source`` does not hold a usable JSON value; ``problem`` says why (never the
    value itself beyond a short quote)."""

    def __init__(self, source: str, problem: str) -> None:
        super().__init__(f"{source}: {problem}")
        self.source = source
        self.problem = problem

    def __reduce__(self) -> tuple[type[JsonInputError], tuple[str, str]]:
        return (JsonInputError, (self.source, self.problem))


def decode_json(
    source: str, raw: bytes, *, max_bytes: int = MAX_BYTES, max_depth: int = MAX_DEPTH
) -> Any:
    """``raw`` (UTF-8 JSON) decoded; :class:`JsonInputError` naming ``source`` when it is
    bigger than ``max_bytes``, nested deeper than ``max_depth``, not UTF-8 or not JSON."""
    if len(raw) > max_bytes:
        raise JsonInputError(source, f"more than {max_bytes:,} bytes of JSON")
    if nesting_exceeds(raw, max_depth):
        raise JsonInputError(source, f"JSON nested more than {max_depth} levels deep")
    text = utf8_text(source, raw)
    try:
        return _decode(text)
    except ValueError as exc:  # JSONDecodeError, or an integer of more than 4,300 digits
        raise JsonInputError(source, f"invalid JSON: {str(exc)[:200]}") from None


def utf8_text(source: str, raw: bytes) -> str:
    """``raw`` as UTF-8 text; :class:`JsonInputError` naming ``source`` and the first bad
    byte otherwise."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise JsonInputError(
            source, f"data is not UTF-8 ({exc.reason} at byte {exc.start})"
        ) from None


def nesting_exceeds(raw: bytes, limit: int) -> bool:
    """Whether arrays and objects in ``raw`` nest more than ``limit`` deep, counting only
    brackets outside strings. For text that is not JSON the answer is an upper bound of
    how deep a decoder gets before it fails, so False always means "safe to decode"."""
    if raw.count(b"[") + raw.count(b"{") <= limit:
        return False  # fewer openings than the limit, strings included
    if b"\\" in raw:  # escapes: strings found by the grammar (rare in Kafka's znodes)
        brackets = _STRING.sub(b"", raw).translate(_AS_ARRAYS, _NOT_BRACKET)
    else:  # without escapes every quote opens or closes a string: drop what lies inside
        kept = raw.translate(_AS_ARRAYS, _NOT_STRUCTURE).replace(b'""', b"")
        brackets = b"".join(kept.split(b'"')[0::2]) if b'"' in kept else kept
    level = brackets
    for _ in range(limit):  # each pass removes the innermost level of balanced brackets
        inner = level.replace(b"[]", b"")
        if not inner:
            return False
        if inner == level:
            break  # unbalanced (not JSON): measure exactly below
        level = inner
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0) > limit
