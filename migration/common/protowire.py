"""Protobuf's wire format where the project writes it by hand (framing records it has
already serialized, transcoding Kafka's records): the varint, once."""

from __future__ import annotations

ONE_BYTE = [bytes((n,)) for n in range(0x80)]
"""The varints of 0..127: one byte each."""


def varint(n: int) -> bytes:
    """``n`` as a protobuf varint; a negative integer as its 64-bit two's complement (as
    protobuf writes an int32 or int64 field)."""
    if 0 <= n < 0x80:
        return ONE_BYTE[n]
    if n < 0:
        n += 1 << 64
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)
