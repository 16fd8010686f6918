"""snappy-java's stream framing, which ZooKeeper's ``.snappy`` snapshots and Kafka's
snappy-compressed record batches both use, and raw snappy blocks, bounded.

``SnappyOutputStream`` writes an 8-byte magic, a version and a compatible version
(int32s), then blocks of (int32 length, raw snappy block); a stream appended to another
starts again with the header. The raw blocks are decoded by cramjam.

Bounded: a raw block states its decompressed length in its first bytes, read before
anything is decompressed. A length the block cannot encode (snappy's densest element, a
3-byte copy, writes 64 bytes: at most 64/3 bytes out per byte in) is refused, as is a
stream whose blocks together pass the caller's limit; output is written into one
buffer of the exact total, never joined. Every error is a ValueError naming the byte
of the stream where the offending block starts.
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass

import cramjam

SNAPPY_MAGIC = b"\x82SNAPPY\x00"
SNAPPY_HEADER_SIZE = len(SNAPPY_MAGIC) + 8
SNAPPY_MAX_EXPANSION = 22
"""Above 64/3, snappy's own bound: a block of n bytes never decompresses past 22n."""

_INT = struct.Struct(">i")
_SNAPPY_MAGIC_HEAD = _INT.unpack_from(SNAPPY_MAGIC)[0]

Input = bytes | bytearray | memoryview | mmap.mmap


@dataclass(frozen=True, slots=True)
class SnappyBlock:
    """One raw block of a snappy-java stream: its compressed bytes ``start:end`` in the
    stream and the length it declares (checked against what the block can encode)."""

    start: int
    end: int
    size: int


def raw_snappy_length(block: Input, at: int = 0) -> int:
    """The decompressed length a raw snappy block declares, read without decompressing
    it; ValueError (naming byte ``at``, where the block starts) when the block is
    shorter than any encoding of that length."""
    try:
        size = cramjam.snappy.decompress_raw_len(block)
    except cramjam.DecompressionError as exc:
        raise ValueError(f"snappy block at byte {at}: {exc}") from None
    if size > len(block) * SNAPPY_MAX_EXPANSION:
        raise ValueError(
            f"snappy block at byte {at} declares {size} bytes, more than its "
            f"{len(block)} bytes can encode (at most {SNAPPY_MAX_EXPANSION}x)"
        )
    return size


def raw_snappy_into(block: Input, out: memoryview, at: int = 0) -> None:
    """Decompress a raw snappy block into ``out``, exactly its declared length (see
    :func:`raw_snappy_length`); ValueError naming byte ``at`` when it does not."""
    try:
        written = cramjam.snappy.decompress_raw_into(block, out)
    except cramjam.DecompressionError as exc:
        raise ValueError(f"snappy block at byte {at}: {exc}") from None
    if written != len(out):
        raise ValueError(f"snappy block at byte {at}: {written} bytes, declared {len(out)}")


def xerial_blocks(raw: Input) -> list[SnappyBlock]:
    """The raw blocks of a snappy-java stream, their framing and declared lengths
    checked, nothing decompressed. ValueError says what is wrong and where."""
    view = memoryview(raw)
    try:
        if view[: len(SNAPPY_MAGIC)] != SNAPPY_MAGIC or len(view) < SNAPPY_HEADER_SIZE:
            raise ValueError("not a snappy-java stream (bad magic)")
        blocks: list[SnappyBlock] = []
        pos, size = SNAPPY_HEADER_SIZE, len(view)
        while pos < size:
            if pos + 4 > size:
                raise ValueError(f"snappy block length cut short at byte {pos}")
            (length,) = _INT.unpack_from(view, pos)
            if length == _SNAPPY_MAGIC_HEAD and view[pos : pos + len(SNAPPY_MAGIC)] == SNAPPY_MAGIC:
                pos += SNAPPY_HEADER_SIZE  # a concatenated stream
                continue
            if length < 0 or pos + 4 + length > size:
                raise ValueError(f"snappy block at byte {pos} runs past the end of the stream")
            start, end = pos + 4, pos + 4 + length
            declared = raw_snappy_length(view[start:end], pos)
            blocks.append(SnappyBlock(start, end, declared))
            pos = end
        return blocks
    finally:
        view.release()


def xerial_total(blocks: list[SnappyBlock], limit: int) -> int:
    """The stream's decompressed length; ValueError naming the block that takes it past
    ``limit`` bytes."""
    total = 0
    for block in blocks:
        total += block.size
        if total > limit:
            raise ValueError(
                f"snappy stream decompresses past {limit} bytes "
                f"(the block at byte {block.start - 4})"
            )
    return total


def xerial_into(raw: Input, blocks: list[SnappyBlock], out: memoryview) -> None:
    """Decompress ``blocks`` (from :func:`xerial_blocks` on ``raw``) one after the
    other into ``out``, which holds exactly their total."""
    view = memoryview(raw)
    try:
        at = 0
        for block in blocks:
            raw_snappy_into(
                view[block.start : block.end], out[at : at + block.size], block.start - 4
            )
            at += block.size
    finally:
        view.release()


def xerial_snappy(raw: Input, limit: int | None = None) -> bytearray:
    """The bytes a snappy-java stream holds, at most ``limit`` of them (None: only the
    format's own bound, :data:`SNAPPY_MAX_EXPANSION` times the stream). ValueError
    says what is wrong with it."""
    blocks = xerial_blocks(raw)
    out = bytearray(
        xerial_total(blocks, len(raw) * SNAPPY_MAX_EXPANSION if limit is None else limit)
    )
    with memoryview(out) as view:
        xerial_into(raw, blocks, view)
    return out
