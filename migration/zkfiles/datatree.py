"""A ZooKeeper tree held in memory, answering reads as a live ZooKeeper would.

:class:`OfflineTree` is what :func:`migration.zkfiles.datadir.open_data_dir` builds from a
data directory; :func:`~migration.zk.reader.read_snapshot` and
:func:`~migration.zk.tree.list_trees` read it through the same
:class:`~migration.zk.multiread.TreeReader` calls they send a
:class:`~migration.zk.client.ZkClient`, with the same answers: paths inside ``chroot``,
GET_DATA a :class:`NodeData` (data, version, ephemeral owner, number of children; null
data reads as ``b""``, as the live decoder reads it), GET_CHILDREN the child names (in
no particular order, as ZooKeeper lists them), a missing znode ``ReadError(-101)``.
ACLs are not kept: whoever can read the files reads every znode.

Storage, two dicts by full path, kept as the UTF-8 bytes the files hold (a path is
decoded only when a listing returns it; a read's path is encoded, lossless either way
with ``surrogateescape``): ``nodes`` (a :data:`Znode`: the data alone when version and
owner are 0, as most znodes are, else a (data, version, owner) tuple: neither is tracked
by the garbage collector) and ``children`` (the full paths of a znode's children, for
those that have any). The root is kept under ``b""``, and ``"/"`` reads it too
(ZooKeeper's own alias).

Threading: reads never change the tree; several threads may read at once.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Self

from migration.zk.client import READ_BATCH, READ_DEPTH
from migration.zk.jute import ERR_NO_NODE
from migration.zk.multiread import NodeData, ReadError, ReadOp, ReadResult

Znode = bytes | tuple[bytes, int, int]
"""One znode: its data, or (data, version, ephemeral owner) when either is not 0."""
Children = bytes | list[bytes] | dict[bytes, None]
"""A znode's children by full path: an only child alone (most znodes with children
have one: a partition's ``state``), several in a list, or in a dict (keys) once one
was removed during replay (removal is then O(1) however wide the parent)."""


def child_count(kids: Children | None) -> int:
    if kids is None:
        return 0
    return 1 if isinstance(kids, bytes) else len(kids)


def znode(data: bytes, version: int, owner: int) -> Znode:
    return (data, version, owner) if version or owner else data


def owner_of(node: Znode) -> int:
    return node[2] if isinstance(node, tuple) else 0


_MISSING = ReadError(ERR_NO_NODE)
_UTF8 = ("utf-8", "surrogateescape")


def normal_chroot(chroot: str) -> str:
    """``""`` or ``/a/b``, as :class:`~migration.zk.client.ConnectString` keeps one."""
    inner = chroot.strip("/")
    return "/" + inner if inner else ""


class OfflineTree:
    """A read-only tree restored from ZooKeeper's files (see the module doc).

    ``zxid``: the last transaction applied; ``source``: which files it came from;
    ``warnings``: what was skipped or cut on the way (each names its file);
    ``open_sessions``: the sessions still open at ``zxid``, whose ephemerals it holds.
    """

    def __init__(
        self,
        nodes: dict[bytes, Znode],
        children: dict[bytes, Children],
        *,
        chroot: str = "",
        zxid: int = 0,
        source: str = "",
        warnings: Sequence[str] = (),
        open_sessions: frozenset[int] = frozenset(),
    ) -> None:
        self._nodes = nodes
        self._children = children
        self.chroot = normal_chroot(chroot)
        self.zxid = zxid
        self.source = source
        self.warnings = tuple(warnings)
        self.open_sessions = open_sessions

    @property
    def znode_count(self) -> int:
        """Every znode, ZooKeeper's own (``/zookeeper`` ...) and the root included."""
        return len(self._nodes)

    def _read_chunk(self, chunk: Sequence[tuple[ReadOp, str]]) -> list[ReadResult]:
        nodes, children, chroot = self._nodes, self._children, self.chroot
        results: list[ReadResult] = []
        append = results.append
        for op, path in chunk:
            full = (chroot + path).encode("utf-8", "surrogateescape")
            if full == b"/":
                full = b""
            node = nodes.get(full)
            if node is None:
                append(_MISSING)
            elif op == ReadOp.GET_DATA:
                count = child_count(children.get(full))
                if isinstance(node, tuple):
                    append(NodeData(node[0], node[1], node[2], count))
                else:
                    append(NodeData(node, 0, 0, count))
            else:
                kids = children.get(full)
                start = len(full) + 1
                if kids is None:
                    append(())
                elif isinstance(kids, bytes):
                    append((kids[start:].decode(*_UTF8),))
                else:
                    append(tuple([p[start:].decode(*_UTF8) for p in kids]))
        return results

    def iter_multi_read(
        self,
        ops: Sequence[tuple[ReadOp, str]],
        *,
        batch: int = READ_BATCH,
        depth: int = READ_DEPTH,
    ) -> Iterator[list[ReadResult]]:
        """:meth:`ZkClient.iter_multi_read <migration.zk.client.ZkClient.iter_multi_read>`
        over the files: ``ops`` answered ``batch`` at a time, in order (``depth`` has
        nothing to pipeline here)."""
        for start in range(0, len(ops), batch):
            yield self._read_chunk(ops[start : start + batch])

    def multi_read(self, ops: Sequence[tuple[ReadOp, str]], **kw: int) -> list[ReadResult]:
        """:meth:`iter_multi_read`, gathered into one list."""
        return [r for chunk in self.iter_multi_read(ops, **kw) for r in chunk]

    def close(self) -> None:
        """Nothing to release (the files were closed once read)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"OfflineTree({len(self._nodes):,} znodes, zxid {self.zxid:#x}, {self.source})"
