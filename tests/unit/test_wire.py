"""The jute encoders/decoders for multi-read and write multis, and multi batching."""

from __future__ import annotations

import struct

import pytest

from migration.bridge.plan import is_notification
from migration.zk.multiread import MultiRead, NodeData, ReadError, ReadOp
from migration.zk.multiwrite import (
    CreateMode,
    MultiWrite,
    WriteError,
    WriteOp,
    batches,
    check,
    create,
    set_data,
)

STAT = struct.Struct("!qqqqiiiqiiq")


def _header(op: int, done: int, err: int) -> bytes:
    return struct.pack("!iBi", op, done, err)


def test_multiread_request_encoding() -> None:
    raw = MultiRead([(ReadOp.GET_DATA, "/a"), (ReadOp.GET_CHILDREN, "/bc")]).serialize()
    assert raw == (
        _header(4, 0, -1)
        + struct.pack("!i", 2)
        + b"/a"
        + b"\x00"
        + _header(8, 0, -1)
        + struct.pack("!i", 3)
        + b"/bc"
        + b"\x00"
        + _header(-1, 1, -1)
    )


def test_multiread_response_decoding() -> None:
    stat = STAT.pack(1, 2, 3, 4, 7, 0, 0, 99, 5, 2, 6)
    raw = (
        b"junk"
        + _header(4, 0, 0)
        + struct.pack("!i", 5)
        + b"hello"
        + stat
        + _header(4, 0, 0)
        + struct.pack("!i", -1)
        + stat
        + _header(8, 0, 0)
        + struct.pack("!i", 2)
        + struct.pack("!i", 1)
        + b"x"
        + struct.pack("!i", 2)
        + "é".encode()
        + _header(-1, 0, -101)
        + struct.pack("!i", -101)
        + _header(-1, 1, -1)
    )
    results = MultiRead.deserialize(raw, 4)
    assert results == [
        NodeData(b"hello", 7, 99, 2),
        NodeData(b"", 7, 99, 2),
        ("x", "é"),
        ReadError(-101),
    ]
    assert isinstance(results[3], ReadError) and results[3].no_node


def test_multiread_rejects_unknown_op() -> None:
    with pytest.raises(ValueError, match="unexpected op type 3"):
        MultiRead.deserialize(_header(3, 0, 0), 0)


def test_multiwrite_encoding_and_results() -> None:
    ops = [create("/a", b"x"), set_data("/b", b"yy", 3), check("/c", 4)]
    raw = MultiWrite(ops, chroot="/root").serialize()
    assert raw.startswith(_header(1, 0, -1) + struct.pack("!i", 7) + b"/root/a")
    assert raw.endswith(_header(-1, 1, -1))
    reply = (
        _header(1, 0, 0)
        + struct.pack("!i", 2)
        + b"/a"
        + _header(5, 0, 0)
        + STAT.pack(0, 0, 0, 0, 4, 0, 0, 0, 2, 0, 0)
        + _header(13, 0, 0)
        + _header(-1, 0, -103)
        + struct.pack("!i", -103)
        + _header(-1, 1, -1)
    )
    assert MultiWrite.deserialize(reply, 0) == ["/a", 4, True, WriteError(-103)]


def test_batches_respect_the_byte_budget() -> None:
    ops = [create(f"/n{i}", b"x" * 900) for i in range(100)]
    chunks = list(batches(ops, max_bytes=10_000))
    assert [op for chunk in chunks for op in chunk] == ops
    assert all(sum(op.size() for op in c) <= 10_000 for c in chunks)
    assert len(chunks) > 5


def test_an_op_over_the_budget_is_refused() -> None:
    with pytest.raises(ValueError, match="/big"):
        list(batches([create("/big", b"x" * 2_000_000)]))


def test_an_attached_op_never_starts_a_batch() -> None:
    """A change notification lands in the same multi as the change it announces."""
    notice = create("/config/changes/config_change_", b"y" * 60, CreateMode.PERSISTENT_SEQUENTIAL)
    ops = []
    for i in range(100):
        ops += [set_data(f"/config/topics/t{i}", b"x" * 300), notice]
    chunks = list(batches(ops, 2_000, attached=is_notification))
    assert [op for chunk in chunks for op in chunk] == ops
    assert len(chunks) > 10
    for chunk in chunks:
        assert chunk[0].kind == WriteOp.SET_DATA and chunk[-1] == notice
        assert sum(op.size() for op in chunk) <= 2_000
