"""ZooKeeper's write multi (opcode 14) with a lean encoder, carried through kazoo.

kazoo's own ``Transaction`` builds a namedtuple per operation; seeding a million
partitions and dual-writing at the migration's pace want less. :class:`MultiWrite`
encodes create / set_data / check / delete straight into jute bytes, and
:func:`batches` cuts a stream of operations into multis that stay under a byte budget
(ZooKeeper closes the connection on a request larger than ``jute.maxbuffer``, 1 MiB by
default).

Atomicity is ZooKeeper's: all operations of one multi apply, or none. The result list
holds, per operation, the created path, a :class:`~migration.zk.multiread.NodeData`-less
``True``/version, or a :class:`WriteError` with ZooKeeper's code (the failing operation
carries the real code; those before it 0, those after it -2 RUNTIMEINCONSISTENCY).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from enum import IntEnum
from typing import ClassVar

from migration.zk.jute import INT, MULTI_END, MULTI_HEADER, STAT
from migration.zk.security import OPEN

AclFn = Callable[[str], bytes]
"""The jute-encoded ACL a create at a path (inside the chroot) carries; by default
world:anyone with all rights, Kafka's without ``zookeeper.set.acl`` (OPEN_ACL_UNSAFE)."""
open_acl: AclFn = OPEN.acl_bytes


DEFAULT_MULTI_BYTES = 512 * 1024
# What a multi request carries besides its operations: the packet length, xid and
# opcode in front, and the closing MULTI_END header.
REQUEST_OVERHEAD = 4 + 8 + len(MULTI_END)
ERR_ROLLED_BACK = (0, -2)  # ops before / after the failing one in a failed multi


class WriteOp(IntEnum):
    CREATE = 1
    DELETE = 2
    SET_DATA = 5
    CHECK = 13


class CreateMode(IntEnum):
    PERSISTENT = 0
    EPHEMERAL = 1
    PERSISTENT_SEQUENTIAL = 2


@dataclass(frozen=True, slots=True)
class Op:
    """One operation of a write multi. ``version`` -1 means 'any version'. The data is
    left out of the repr: it may be SCRAM material or an encrypted password. ``None``
    data is jute's null buffer (length -1), which Kafka sends for the znodes it creates
    without data; readers see it as empty data."""

    kind: WriteOp
    path: str
    data: bytes | None = field(default=b"", repr=False)
    version: int = -1
    mode: CreateMode = CreateMode.PERSISTENT

    def encode(self, chroot: str, acl: AclFn = open_acl) -> bytes:
        raw_path = (chroot + self.path).encode("utf-8")
        head = MULTI_HEADER.pack(self.kind, 0, -1) + INT.pack(len(raw_path)) + raw_path
        if self.kind == WriteOp.CREATE:
            return head + self._buffer() + acl(self.path) + INT.pack(self.mode)
        if self.kind == WriteOp.SET_DATA:
            return head + self._buffer() + INT.pack(self.version)
        return head + INT.pack(self.version)  # DELETE and CHECK

    def _buffer(self) -> bytes:
        if self.data is None:
            return INT.pack(-1)
        return INT.pack(len(self.data)) + self.data

    def size(self, chroot: str = "", acl: AclFn = open_acl) -> int:
        """Exactly ``len(self.encode(chroot, acl))``, without encoding."""
        head = MULTI_HEADER.size + 4 + len((chroot + self.path).encode("utf-8"))
        data = len(self.data) if self.data is not None else 0
        if self.kind == WriteOp.CREATE:
            return head + 4 + data + len(acl(self.path)) + 4
        if self.kind == WriteOp.SET_DATA:
            return head + 4 + data + 4
        return head + 4


def create(path: str, data: bytes | None = None, mode: CreateMode = CreateMode.PERSISTENT) -> Op:
    """Create ``path``; without ``data`` the znode gets null data, as Kafka creates its
    parents (``/brokers/ids``, ``.../partitions/<p>``, ``/admin/delete_topics/<t>``)."""
    return Op(WriteOp.CREATE, path, data, -1, mode)


def set_data(path: str, data: bytes | None, version: int = -1) -> Op:
    return Op(WriteOp.SET_DATA, path, data, version)


def check(path: str, version: int) -> Op:
    return Op(WriteOp.CHECK, path, b"", version)


def delete(path: str, version: int = -1) -> Op:
    return Op(WriteOp.DELETE, path, b"", version)


@dataclass(frozen=True, slots=True)
class WriteError:
    code: int


WriteResult = str | int | bool | WriteError
"""Created path (create), new data version (set_data), True (check, delete), or error."""


class MultiWrite:
    """A kazoo request object for ZooKeeper's write ``multi`` (opcode 14).

    kazoo treats opcode 14 as its own Transaction on the way back and strips the chroot
    from created paths.
    """

    type: ClassVar[int] = 14

    __slots__ = ("ops", "payload")

    def __init__(self, ops: list[Op], chroot: str = "", acl: AclFn = open_acl) -> None:
        self.ops = ops
        self.payload = b"".join(op.encode(chroot, acl) for op in ops) + MULTI_END

    def serialize(self) -> bytes:
        return self.payload

    @classmethod
    def deserialize(cls, buf: bytes | bytearray | memoryview, offset: int) -> list[WriteResult]:
        results: list[WriteResult] = []
        while True:
            op_type, done, _err = MULTI_HEADER.unpack_from(buf, offset)
            offset += MULTI_HEADER.size
            if done:
                return results
            if op_type == WriteOp.CREATE:
                (length,) = INT.unpack_from(buf, offset)
                offset += 4
                results.append(bytes(buf[offset : offset + length]).decode("utf-8"))
                offset += length
            elif op_type == WriteOp.SET_DATA:
                stat = STAT.unpack_from(buf, offset)
                offset += STAT.size
                results.append(int(stat[4]))
            elif op_type in (WriteOp.DELETE, WriteOp.CHECK):
                results.append(True)
            elif op_type == -1:
                (code,) = INT.unpack_from(buf, offset)
                offset += 4
                results.append(WriteError(code))
            else:
                raise ValueError(f"multi response carries unexpected op type {op_type}")

    def __repr__(self) -> str:
        return f"MultiWrite({len(self.ops)} ops)"


def batches(
    ops: Iterable[Op],
    max_bytes: int = DEFAULT_MULTI_BYTES,
    chroot: str = "",
    attached: Callable[[Op], bool] | None = None,
    acl: AclFn = open_acl,
) -> Iterator[list[Op]]:
    """Cut ``ops`` into consecutive lists whose whole request (operations with their
    paths under ``chroot``, plus :data:`REQUEST_OVERHEAD`) is at most ``max_bytes``.
    An operation for which ``attached`` is true never starts a list: it stays with the
    operation before it (a change notification with its change).

    A single operation larger than the budget is refused (ZooKeeper would drop the
    connection rather than answer).
    """
    batch: list[Op] = []
    size = REQUEST_OVERHEAD
    for op in ops:
        op_size = op.size(chroot, acl)
        if REQUEST_OVERHEAD + op_size > max_bytes:
            raise ValueError(f"{op.path}: {op_size} bytes exceed the {max_bytes}-byte multi budget")
        if batch and size + op_size > max_bytes:
            carried = [batch.pop()] if attached is not None and attached(op) and batch else []
            if batch:
                yield batch
            batch = carried
            size = REQUEST_OVERHEAD + sum(o.size(chroot, acl) for o in carried)
            if size + op_size > max_bytes:
                raise ValueError(f"{op.path}: does not fit one multi with the change it follows")
        batch.append(op)
        size += op_size
    if batch:
        yield batch
