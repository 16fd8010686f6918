"""Kafka uuids: 16 bytes, written as 22 characters of URL-safe base64 without padding.

The one rule for reading a uuid's text (:func:`uuid_bytes`) is Kafka's own
(``Uuid.fromString``, which decodes with Java's URL-safe base64 decoder): 22 characters
of the URL-safe alphabet, optionally followed by ``==``, decoding to 16 bytes. The last
character carries four bits beyond the 128; Java's decoder ignores them, so Kafka takes
``K16VvIw3TLmaYnQ6XjK4P2`` for the same uuid as ``K16VvIw3TLmaYnQ6XjK4Pw``, and so does
zk2kraft. Everything zk2kraft writes is the canonical form (:func:`uuid_text`, as
Kafka's ``Uuid.toString``); :func:`canonical_uuid` gives it for any accepted text.
"""

from __future__ import annotations

import base64
import os
import re

from migration.common.text import shown

ZERO = bytes(16)

_TEXT = re.compile(r"[A-Za-z0-9_-]{22}(?:==)?")


def uuid_text(raw: bytes) -> str:
    """The 22-character form of a 16-byte uuid (ValueError for any other length)."""
    if len(raw) != 16:
        raise ValueError(f"a Kafka uuid has 16 bytes, not {len(raw)}")
    return base64.urlsafe_b64encode(raw)[:22].decode()


def uuid_bytes(text: str) -> bytes:
    """The 16 bytes of a uuid's text, by Kafka's rule (see the module doc); ValueError,
    naming the text, when Kafka would refuse it too."""
    if not _TEXT.fullmatch(text):
        raise ValueError(
            f"{shown(text)} is not a Kafka uuid (22 characters of URL-safe base64, A-Z a-z 0-9 - _)"
        )
    # the 4 bits past the 128th are dropped, as Java's decoder drops them
    return base64.urlsafe_b64decode(text[:22] + "==")


def canonical_uuid(text: str) -> str:
    """``text`` as Kafka prints the uuid it denotes (ValueError as :func:`uuid_bytes`)."""
    return uuid_text(uuid_bytes(text))


def new_uuid() -> bytes:
    """A random uuid that, as Kafka's own, is never zero and never prints starting
    with '-' (which command-line tools would take for an option)."""
    while True:
        raw = os.urandom(16)
        if raw != ZERO and not uuid_text(raw).startswith("-"):
            return raw
