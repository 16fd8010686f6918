"""ZooKeeper's multi-read request (opcode 22, ZooKeeper 3.6+) carried through kazoo.

kazoo sends any object that has a ``type`` opcode and ``serialize()``, and decodes the
reply with ``deserialize(buffer, offset)``; this module supplies such an object for
``multiRead``: many getData/getChildren operations answered in one round trip, each
with its own result (a missing znode fails only its own operation, unlike a write
multi). One request costs the client and the server a fraction of what as many single
requests cost, which is what makes the snapshot reader fast.

Wire format (jute): the request is a sequence of ``MultiHeader(type, done=false, err=-1)``
followed by the operation's request body, closed by ``MultiHeader(-1, true, -1)``. The
response is a sequence of ``MultiHeader(type, done, err)`` each followed by the result
body: GetDataResponse (buffer + Stat), GetChildrenResponse (vector of strings) or, for
type -1, an ErrorResponse (int code).

Threading: instances are immutable; kazoo calls ``deserialize`` on its connection thread.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import ClassVar, Protocol

from migration.zk.jute import ERR_NO_NODE, INT, MULTI_END, MULTI_HEADER, STAT


class ReadOp(IntEnum):
    """The operations a multi-read may carry (ZooDefs.OpCode)."""

    GET_DATA = 4
    GET_CHILDREN = 8


@dataclass(frozen=True, slots=True)
class NodeData:
    """The data and the interesting part of the Stat of one znode; ``null``: ZooKeeper
    holds null data (jute length -1, as Kafka creates its parents), ``data`` is then
    ``b""``; readers that do not care see both alike, and so does equality (ZooKeeper's
    files read offline cannot tell them apart)."""

    data: bytes
    version: int
    ephemeral_owner: int
    num_children: int
    null: bool = field(default=False, compare=False)


@dataclass(frozen=True, slots=True)
class ReadError:
    """A failed operation inside a multi-read; ``code`` is ZooKeeper's error code."""

    code: int

    @property
    def no_node(self) -> bool:
        return self.code == ERR_NO_NODE


ReadResult = NodeData | tuple[str, ...] | ReadError


class TreeReader(Protocol):
    """What the crawlers (:func:`migration.zk.reader.read_snapshot`,
    :func:`migration.zk.tree.list_trees`) read a tree through: a live
    :class:`~migration.zk.client.ZkClient` or a data directory read offline
    (:class:`~migration.zkfiles.datatree.OfflineTree`). Paths are inside ``chroot``; results
    come in the order of ``ops``, a missing znode as ``ReadError(ERR_NO_NODE)``."""

    @property
    def chroot(self) -> str: ...

    def iter_multi_read(
        self, ops: Sequence[tuple[ReadOp, str]], *, batch: int = ..., depth: int = ...
    ) -> Iterator[list[ReadResult]]: ...

    def multi_read(self, ops: Sequence[tuple[ReadOp, str]], **kw: int) -> list[ReadResult]: ...


def _encode_path(path: str) -> bytes:
    raw = path.encode("utf-8")
    return INT.pack(len(raw)) + raw


class MultiRead:
    """A kazoo request object for ZooKeeper's ``multiRead``.

    ``paths`` must already carry the client's chroot prefix (kazoo does not rewrite
    custom requests). Results come back in the order of ``ops``.
    """

    type: ClassVar[int] = 22

    __slots__ = ("ops",)

    def __init__(self, ops: list[tuple[ReadOp, str]]) -> None:
        self.ops = ops

    def serialize(self) -> bytes:
        parts: list[bytes] = []
        for op, path in self.ops:
            parts.append(MULTI_HEADER.pack(op, 0, -1))
            parts.append(_encode_path(path))
            parts.append(b"\x00")  # watch = false
        parts.append(MULTI_END)
        return b"".join(parts)

    @classmethod
    def deserialize(cls, buf: bytes | bytearray | memoryview, offset: int) -> list[ReadResult]:
        results: list[ReadResult] = []
        header_unpack = MULTI_HEADER.unpack_from
        int_unpack = INT.unpack_from
        stat_unpack = STAT.unpack_from
        stat_size = STAT.size
        view = memoryview(buf)
        while True:
            op_type, done, _err = header_unpack(buf, offset)
            offset += 9
            if done:
                return results
            if op_type == ReadOp.GET_DATA:
                (length,) = int_unpack(buf, offset)
                offset += 4
                if length < 0:
                    data = b""
                else:
                    data = bytes(view[offset : offset + length])
                    offset += length
                stat = stat_unpack(buf, offset)
                offset += stat_size
                results.append(NodeData(data, stat[4], stat[7], stat[9], length < 0))
            elif op_type == ReadOp.GET_CHILDREN:
                (count,) = int_unpack(buf, offset)
                offset += 4
                children: list[str] = []
                for _ in range(max(count, 0)):
                    (length,) = int_unpack(buf, offset)
                    offset += 4
                    children.append(str(view[offset : offset + length], "utf-8"))
                    offset += length
                results.append(tuple(children))
            elif op_type == -1:
                (code,) = int_unpack(buf, offset)
                offset += 4
                results.append(ReadError(code))
            else:
                raise ValueError(f"multiRead response carries unexpected op type {op_type}")

    def __repr__(self) -> str:
        return f"MultiRead({len(self.ops)} ops)"
