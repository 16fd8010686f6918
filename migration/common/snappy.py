"""snappy-java's stream framing, which ZooKeeper's ``.snappy`` snapshots and Kafka's
snappy-compressed record batches both use.

``SnappyOutputStream`` writes an 8-byte magic, a version and a compatible version
(int32s), then blocks of (int32 length, raw snappy block); a stream appended to another
starts again with the header. The raw blocks are decoded by cramjam.
"""

from __future__ import annotations

import mmap
import struct

import cramjam

SNAPPY_MAGIC = b"\x82SNAPPY\x00"
SNAPPY_HEADER_SIZE = len(SNAPPY_MAGIC) + 8
_INT = struct.Struct(">i")
_SNAPPY_MAGIC_HEAD = _INT.unpack_from(SNAPPY_MAGIC)[0]


def xerial_snappy(raw: bytes | memoryview | mmap.mmap) -> bytes:
    """The bytes a snappy-java stream holds. ValueError says what is wrong with it."""
    view = memoryview(raw)
    if view[: len(SNAPPY_MAGIC)] != SNAPPY_MAGIC or len(view) < SNAPPY_HEADER_SIZE:
        raise ValueError("not a snappy-java stream (bad magic)")
    blocks: list[bytes] = []
    pos, size = SNAPPY_HEADER_SIZE, len(view)
    while pos < size:
        if pos + 4 > size:
            raise ValueError(f"snappy block length cut short at byte {pos}")
        (length,) = _INT.unpack_from(view, pos)
        if (
            length == _SNAPPY_MAGIC_HEAD
            and bytes(view[pos : pos + len(SNAPPY_MAGIC)]) == SNAPPY_MAGIC
        ):
            pos += SNAPPY_HEADER_SIZE  # a concatenated stream
            continue
        if length < 0 or pos + 4 + length > size:
            raise ValueError(f"snappy block at byte {pos} runs past the end of the stream")
        try:
            blocks.append(
                bytes(cramjam.snappy.decompress_raw(bytes(view[pos + 4 : pos + 4 + length])))
            )
        except cramjam.DecompressionError as exc:
            raise ValueError(f"snappy block at byte {pos}: {exc}") from None
        pos += 4 + length
    return b"".join(blocks)
