"""Values quoted in messages: short enough to read, never a megabyte echoed back."""

from __future__ import annotations

LIMIT = 64


def shown(value: object, limit: int = LIMIT) -> str:
    """``repr(value)``, cut to about ``limit`` characters with the full length said."""
    text = repr(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(str(value)):,} characters)"
