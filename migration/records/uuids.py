"""Kafka uuids: 16 bytes, written as 22 characters of URL-safe base64 without padding."""

from __future__ import annotations

import base64
import os

ZERO = bytes(16)


def uuid_text(raw: bytes) -> str:
    """The 22-character form of a 16-byte uuid (ValueError for any other length)."""
    if len(raw) != 16:
        raise ValueError(f"a Kafka uuid has 16 bytes, not {len(raw)}")
    return base64.urlsafe_b64encode(raw)[:22].decode()


def uuid_bytes(text: str) -> bytes:
    """The 16 bytes of a 22-character uuid (ValueError when it is not one)."""
    if len(text) != 22:
        raise ValueError(f"{text!r} is not a 22-character Kafka uuid")
    try:
        raw = base64.urlsafe_b64decode(text + "==")
    except ValueError:
        raise ValueError(f"{text!r} is not a 22-character Kafka uuid") from None
    if len(raw) != 16 or uuid_text(raw) != text:
        raise ValueError(f"{text!r} is not a 22-character Kafka uuid")
    return raw


def new_uuid() -> bytes:
    """A random uuid that, as Kafka's own, is never zero and never prints starting
    with '-' (which command-line tools would take for an option)."""
    while True:
        raw = os.urandom(16)
        if raw != ZERO and not uuid_text(raw).startswith("-"):
            return raw
