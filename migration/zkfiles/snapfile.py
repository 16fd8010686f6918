"""One ZooKeeper snapshot file (``snapshot.<hex zxid>``) parsed into znodes.

The stream (after any gzip/snappy, see :mod:`migration.zkfiles.datafiles`) is what
``FileSnap.serialize`` writes: a FileHeader (magic ``ZKSN``, version, dbid); the
session list (count, then session id and timeout each); the ACL cache (count, then an
id and a vector of ACLs each); the znodes depth first, each its path and DataNode
(data buffer, ACL id, StatPersisted), the root first under the path ``""``, until the
path ``"/"``; then a seal: the Adler32 of every byte before it and the string ``"/"``.
ZooKeeper 3.6+ appends a ZxidDigest (zxid, digest version, digest) and its own seal,
3.9 the last processed zxid and a seal: each is checked when present.

A snapshot is valid only whole: any damage (a bad length, a znode whose parent is
missing, a checksum that does not match) raises :class:`SnapshotError` with the byte
offset in the stream, and the caller falls back to an older snapshot as ZooKeeper does.

Speed: one pass over the bytes with precompiled structs, two unpacks and two slices per
znode, no per-field objects, parents found by depth (no lookup); each znode is kept as
a :data:`~migration.zkfiles.datatree.Znode`.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass

from migration.common.snappy import SNAPPY_MAGIC
from migration.common.text import PATH_LIMIT, shown
from migration.zk.jute import (
    ACL_PERMS_LEN,
    FILE_HEADER,
    INT,
    LONG,
    NODE_TAIL,
    SEAL_END,
    SEAL_SIZE,
    SESSION_ENTRY,
    SNAP_MAGIC,
    is_session_owner,
)
from migration.zkfiles.datafiles import GZIP_MAGIC, Buffer, adler32, compression_of
from migration.zkfiles.datatree import Children, Znode, znode

PROGRESS_STEP = 1 << 22  # bytes between progress reports
_DIGEST = struct.Struct("!qiq")  # ZxidDigest: zxid, digestVersion, digest (version >= 2)
_LAST_ZXID_SECTION = LONG.size + SEAL_SIZE
_MAX_DEPTH = 4096  # levels of znodes (ZooKeeper's paths are bounded by jute.maxbuffer)


class SnapshotError(ValueError):
    """A snapshot that ZooKeeper would not restore from: ``offset`` is the byte of its
    (decompressed) stream where the damage was found."""

    def __init__(self, offset: int, problem: str) -> None:
        super().__init__(f"at byte {offset}: {problem}")
        self.offset = offset
        self.problem = problem


@dataclass
class SnapshotContents:
    """A parsed snapshot: znodes and their children by path (UTF-8 bytes, the root
    under ``b""``),
    the sessions it lists (id -> timeout), the ephemerals by owning session, its znode
    count."""

    nodes: dict[bytes, Znode]
    children: dict[bytes, Children]
    sessions: dict[int, int]
    ephemerals: dict[int, set[bytes]]
    znodes: int


def check_shape(name: str, raw: Buffer) -> None:
    """ZooKeeper's quick test before reading a snapshot (``SnapStream.isValidSnapshot``):
    a plain one ends with a seal's ``"/"``; a compressed one starts with its magic."""
    kind = compression_of(name)
    if kind == "gz" and raw[:2] != GZIP_MAGIC:
        raise SnapshotError(0, "not a gzip stream")
    if kind == "snappy" and raw[: len(SNAPPY_MAGIC)] != SNAPPY_MAGIC:
        raise SnapshotError(0, "not a snappy stream")
    if not kind and (len(raw) < 10 or raw[-len(SEAL_END) :] != SEAL_END):
        raise SnapshotError(
            max(len(raw) - len(SEAL_END), 0), "does not end with a seal (cut short)"
        )


def parse_snapshot(buf: Buffer, advance: Callable[[int], None] | None = None) -> SnapshotContents:
    """Parse and verify a whole snapshot stream; ``advance(n)`` is told of the bytes
    read as it goes. Raises :class:`SnapshotError`."""
    try:
        magic = FILE_HEADER.unpack_from(buf, 0)[0]
    except struct.error:
        raise SnapshotError(0, "shorter than a file header") from None
    if magic != SNAP_MAGIC:
        raise SnapshotError(0, f"bad magic {magic:#010x} (a snapshot starts with ZKSN)")
    pos = FILE_HEADER.size
    try:
        sessions, pos = _sessions(buf, pos)
        pos = _skip_acl_cache(buf, pos)
    except struct.error:
        raise SnapshotError(pos, "cut short in its session list or ACL cache") from None
    tell = advance or (lambda n: None)
    tell(pos)
    nodes, children, ephemerals, pos = _nodes(buf, pos, tell)
    checksum = _seal(buf, pos, 0, 1, "the znodes")
    _trailer(buf, pos, checksum)
    tell(len(buf) - pos)
    return SnapshotContents(nodes, children, sessions, ephemerals, len(nodes))


def _sessions(buf: Buffer, pos: int) -> tuple[dict[int, int], int]:
    (count,) = INT.unpack_from(buf, pos)
    end = pos + 4 + SESSION_ENTRY.size * count
    if count < 0 or end > len(buf):
        raise SnapshotError(pos, f"session count {count} does not fit the file")
    return dict(SESSION_ENTRY.iter_unpack(buf[pos + 4 : end])), end


def _skip_acl_cache(buf: Buffer, pos: int) -> int:
    """ReferenceCountedACLCache: count, then (long id, vector<ACL>) each; an ACL is
    perms (int) and an Id of two strings. The offline tree does not keep ACLs."""
    (count,) = INT.unpack_from(buf, pos)
    if count < 0 or count > len(buf):
        raise SnapshotError(pos, f"ACL cache count {count} does not fit the file")
    pos += 4
    for _ in range(count):
        (acls,) = INT.unpack_from(buf, pos + 8)
        if acls < 0:
            raise SnapshotError(pos + 8, "an ACL cache entry without its ACL vector")
        pos += 12
        for _ in range(acls):
            scheme = ACL_PERMS_LEN.unpack_from(buf, pos)[1]
            pos += ACL_PERMS_LEN.size + max(scheme, 0)
            (ident,) = INT.unpack_from(buf, pos)
            pos += 4 + max(ident, 0)
    return pos


def _nodes(
    buf: Buffer, pos: int, advance: Callable[[int], None]
) -> tuple[dict[bytes, Znode], dict[bytes, Children], dict[int, set[bytes]], int]:
    """The znodes until the ``"/"`` end marker; returns them and the seal's offset.

    The snapshot lists them depth first (``DataTree.serializeNode``), so a znode's
    parent is the last znode read one level up: kept per depth, it is found without
    a lookup."""
    unpack_int = INT.unpack_from
    unpack_tail = NODE_TAIL.unpack_from
    tail_size = NODE_TAIL.size
    last = len(buf) - 4  # the last offset a length field can start at
    nodes: dict[bytes, Znode] = {}
    children: dict[bytes, Children] = {}
    ephemerals: dict[int, set[bytes]] = {}
    path = b""
    reported = pos
    mark = pos + PROGRESS_STEP
    # per depth: the last znode read there, and its children list once it has one
    last_at: list[bytes] = [b""] * _MAX_DEPTH
    kids_at: list[bytes | list[bytes] | None] = [None] * _MAX_DEPTH
    try:
        nodes[b""], plen, pos = _root(buf, pos)
        while plen != 1:
            if plen <= 0:
                raise SnapshotError(pos, f"znode path length {plen}")
            end = pos + plen
            if end > last:  # never slice (nor quote) a "path" running past the file
                raise SnapshotError(pos - 4, f"znode path length {plen} runs past the end")
            path = buf[pos:end]
            (dlen,) = unpack_int(buf, end)
            pos = end + 4
            if dlen > 0:
                end = pos + dlen
                if end > last:
                    raise SnapshotError(
                        pos - 4, f"{_text(path)}: data length {dlen} runs past the end"
                    )
                data = buf[pos:end]
                pos = end
            elif dlen < -1:
                raise SnapshotError(pos - 4, f"{_text(path)}: data length {dlen}")
            else:
                data = b""
            version, owner, plen = unpack_tail(buf, pos)
            pos += tail_size
            nodes[path] = (data, version, owner) if version or owner else data
            depth = path.count(b"/")
            parent = last_at[depth - 1]
            if not path.startswith(parent):
                raise SnapshotError(pos, f"{_text(path)}: its parent is not the znode before it")
            kids = kids_at[depth - 1]
            if kids is None:  # an only child is kept alone, as most are
                kids_at[depth - 1] = children[parent] = path
            elif isinstance(kids, bytes):
                kids_at[depth - 1] = children[parent] = [kids, path]
            else:
                kids.append(path)
            last_at[depth] = path
            kids_at[depth] = None
            if owner and is_session_owner(owner):
                ephemerals.setdefault(owner, set()).add(path)
            if pos > mark:
                advance(pos - reported)
                reported, mark = pos, pos + PROGRESS_STEP
    except struct.error:
        raise SnapshotError(pos, f"cut short (after {_text(path) or 'the root'})") from None
    except IndexError:
        raise SnapshotError(pos, f"{_text(path)}: deeper than {_MAX_DEPTH - 1} levels") from None
    if buf[pos : pos + 1] != b"/":
        raise SnapshotError(pos, "the end marker is not '/'")
    advance(pos + 1 - reported)
    return nodes, children, ephemerals, pos + 1


def _root(buf: Buffer, pos: int) -> tuple[Znode, int, int]:
    """The root znode at ``pos`` (an empty path); returns it, the next znode's path
    length (read with the root's stat tail) and the offset of that path. SnapshotError
    (at the offset reached) when the file ends first."""
    try:
        (plen,) = INT.unpack_from(buf, pos)
        if plen != 0:
            raise SnapshotError(pos, "the first znode is not the root")
        (dlen,) = INT.unpack_from(buf, pos + 4)
        pos += 8
        data = buf[pos : pos + dlen] if dlen > 0 else b""
        pos += max(dlen, 0)
        version, owner, plen = NODE_TAIL.unpack_from(buf, pos)
    except struct.error:
        raise SnapshotError(pos, "cut short (after the root)") from None
    return znode(data, version, owner), plen, pos + NODE_TAIL.size


def _text(path: bytes) -> str:
    """A znode path as an error quotes it (:func:`.text.shown`, bare when plain)."""
    return shown(path, PATH_LIMIT, bare=True)


def _seal(buf: Buffer, pos: int, start: int, checksum: int, what: str) -> int:
    """Check the seal at ``pos`` against the Adler32 of the stream before it (carried on
    from ``checksum`` of ``buf[:start]``); returns the Adler32 up to ``pos``."""
    if pos + SEAL_SIZE > len(buf):
        raise SnapshotError(pos, f"cut short before the checksum of {what}")
    (stored,) = LONG.unpack_from(buf, pos)
    if buf[pos + LONG.size : pos + SEAL_SIZE] != SEAL_END:
        raise SnapshotError(pos + LONG.size, f"the seal after {what} is not '/'")
    actual = adler32(buf, start, pos, checksum)
    if stored != actual:
        raise SnapshotError(
            pos, f"checksum mismatch: Adler32 {actual:#010x} of {what}, the seal says {stored:#x}"
        )
    return actual


def _trailer(buf: Buffer, pos: int, checksum: int) -> None:
    """The optional sections after the first seal (each verified by its own seal):
    ZooKeeper 3.6+'s ZxidDigest, 3.9's last processed zxid. Fewer bytes than a digest
    are ignored, as ZooKeeper ignores a digest it cannot read."""
    start, pos = pos, pos + SEAL_SIZE
    rest = len(buf) - pos
    if rest == _LAST_ZXID_SECTION:  # the last zxid alone (digests turned off)
        _seal(buf, pos + LONG.size, start, checksum, "the last zxid")
        return
    if rest < _DIGEST.size:
        return
    digest_version = _DIGEST.unpack_from(buf, pos)[1]
    end = pos + _DIGEST.size
    if digest_version < 2:  # before version 2 the digest was a hex string
        (length,) = INT.unpack_from(buf, pos + 12)
        end = pos + 16 + max(length, 0)
    checksum = _seal(buf, end, start, checksum, "the digest")
    start, pos = end, end + SEAL_SIZE
    if len(buf) - pos >= _LAST_ZXID_SECTION:
        _seal(buf, pos + LONG.size, start, checksum, "the last zxid")
