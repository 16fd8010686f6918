"""ZooKeeper transaction logs (``log.<hex zxid>``): their records, and each record's
transaction as the changes it makes to the tree.

A log is a FileHeader (magic ``ZKLG``) then records: the Adler32 of the record's
buffer (long), the buffer (int length + TxnHeader + transaction + the optional 3.6+
TxnDigest), and the end-of-record byte ``'B'``. ZooKeeper preallocates logs with
zeros, so a record of length 0 ends the log.

:class:`LogScan` walks the records; where one is damaged (cut short, no ``'B'``, a
checksum that does not match) it stops and records a :class:`Damage`, saying whether
anything follows it (a later valid record, or any byte that is not preallocation).
The caller decides: a torn tail is cut, damage with data after it is refused.

:func:`decode` turns a record's buffer into :class:`Change` values, ZooKeeper's
``DataTree.processTxn`` read for what it does to znodes and sessions: creates of every
kind (with the ephemeral owner ZooKeeper stores: the session, or EphemeralType's
container / TTL encodings), deletes, setData (the new version is in the transaction),
session opens and closes, multis (one that failed changes nothing). setACL, check,
error and the transaction digest change nothing a read sees. A type ZooKeeper cannot
read either (``SerializeUtils.deserializeTxn``) raises :class:`TxnFormatError`.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from enum import IntEnum
from typing import NamedTuple

from migration.common.text import PATH_LIMIT, shown
from migration.zk.jute import (
    CONTAINER_OWNER,
    FILE_HEADER,
    INT,
    LONG,
    TXN_HEADER,
    TXNLOG_MAGIC,
    ttl_owner,
)
from migration.zkfiles.datafiles import Buffer, all_zero

RECORD_HEAD = struct.Struct("!qi")  # Adler32, buffer length
SUB_TXN_HEAD = struct.Struct("!ii")  # a multi's sub-transaction: type, buffer length
END_OF_RECORD = 0x42  # 'B'
_ZXID_AT = RECORD_HEAD.size + 12  # a record's zxid: after its head, clientId and cxid
_SEARCH_LIMIT = 64  # candidate records tried after damage


class TxnType(IntEnum):
    """ZooDefs.OpCode values that appear in transaction logs."""

    ERROR = -1
    CREATE = 1
    DELETE = 2
    SET_DATA = 5
    SET_ACL = 7
    CHECK = 13
    MULTI = 14
    CREATE2 = 15
    RECONFIG = 16
    CREATE_CONTAINER = 19
    DELETE_CONTAINER = 20
    CREATE_TTL = 21
    CREATE_SESSION = -10
    CLOSE_SESSION = -11


_MULTI_SUBTYPES = frozenset(
    {
        TxnType.CREATE,
        TxnType.CREATE_TTL,
        TxnType.CREATE_CONTAINER,
        TxnType.DELETE,
        TxnType.DELETE_CONTAINER,
        TxnType.SET_DATA,
        TxnType.ERROR,
        TxnType.CHECK,
    }
)
_NO_CHANGE = frozenset({TxnType.SET_ACL, TxnType.CHECK, TxnType.ERROR})


class Change(NamedTuple):
    """One change to the tree: ``kind`` is CREATE (``value``: the ephemeral owner),
    DELETE, SET_DATA (``value``: the new version), CREATE_SESSION (``value``: the
    session) or CLOSE_SESSION (``value``: the session; ``paths``: what the close names
    besides the session's ephemerals)."""

    kind: TxnType
    path: bytes = b""
    data: bytes = b""
    value: int = 0
    paths: tuple[bytes, ...] = ()


class TxnFormatError(ValueError):
    """A transaction this reader (and ZooKeeper) cannot decode."""


class Damage(NamedTuple):
    offset: int
    problem: str
    followed: bool  # a valid record, or bytes that are not zeros, come after it


class LogScan:
    """The records of one log: iterate for ``(offset, buffer)``; afterwards ``damage``
    is None (a clean end) or where and how the log broke off. ``first_zxid`` (from the
    file's name) helps find a valid record after damage in the first record."""

    def __init__(self, buf: Buffer, first_zxid: int) -> None:
        self.buf = buf
        self.first_zxid = first_zxid
        self.last: bytes | None = None  # the last valid record's buffer
        self.damage: Damage | None = None
        if len(buf) >= FILE_HEADER.size and FILE_HEADER.unpack_from(buf, 0)[0] != TXNLOG_MAGIC:
            raise TxnFormatError("not a transaction log (its magic is not ZKLG)")

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        buf, size = self.buf, len(self.buf)
        if size < FILE_HEADER.size:
            problem = "empty (created before its header was written)" if size == 0 else ""
            self._stop(0, problem or "cut short in its file header", None)
            return
        pos = FILE_HEADER.size
        while True:
            if pos + RECORD_HEAD.size > size:
                if pos < size and not all_zero(buf, pos):
                    self._stop(pos, "cut short in a record's header", None)
                return
            crc, length = RECORD_HEAD.unpack_from(buf, pos)
            if length == 0 and crc == 0 and all_zero(buf, pos):
                return  # preallocated zeros: the end
            body_end = pos + RECORD_HEAD.size + length
            if length <= 0:
                self._stop(pos, f"record length {length}", pos + RECORD_HEAD.size)
                return
            if body_end >= size:
                self._stop(pos, f"a {length}-byte record cut short by the end of the file", None)
                return
            if buf[body_end] != END_OF_RECORD:
                self._stop(pos, "no end-of-record byte 'B'", body_end + 1)
                return
            body = buf[pos + RECORD_HEAD.size : body_end]
            if zlib.adler32(body) != crc:
                self._stop(pos, "CRC mismatch", body_end + 1)
                return
            self.last = body
            yield pos, body
            pos = body_end + 1

    def _stop(self, offset: int, problem: str, extent_end: int | None) -> None:
        followed = self._record_after(offset) or (
            extent_end is not None and not all_zero(self.buf, extent_end)
        )
        self.damage = Damage(offset, problem, followed)

    def _record_after(self, offset: int) -> bool:
        """Whether a valid record with the next zxid(s) starts after ``offset``."""
        buf = self.buf
        last = self.last
        expected = txn_zxid(last) + 1 if last and len(last) >= TXN_HEADER.size else self.first_zxid
        for zxid in (expected, expected + 1):
            needle = LONG.pack(zxid)
            hit = buf.find(needle, offset + _ZXID_AT + 1)
            for _ in range(_SEARCH_LIMIT):
                if hit < 0:
                    break
                if _valid_record(buf, hit - _ZXID_AT):
                    return True
                hit = buf.find(needle, hit + 1)
        return False


def _valid_record(buf: Buffer, pos: int) -> bool:
    if pos < FILE_HEADER.size or pos + RECORD_HEAD.size > len(buf):
        return False
    crc, length = RECORD_HEAD.unpack_from(buf, pos)
    end = pos + RECORD_HEAD.size + length
    return bool(
        length > 0
        and end < len(buf)
        and buf[end] == END_OF_RECORD
        and zlib.adler32(buf[pos + RECORD_HEAD.size : end]) == crc
    )


def txn_zxid(body: bytes) -> int:
    """The zxid in a record's TxnHeader."""
    return int(TXN_HEADER.unpack_from(body, 0)[2])


def decode(body: bytes) -> tuple[int, list[Change]]:
    """A record's buffer -> (zxid, the changes its transaction makes, in order)."""
    try:
        session, _cxid, zxid, _time, kind = TXN_HEADER.unpack_from(body, 0)
        changes = _changes(body, TXN_HEADER.size, len(body), kind, session)
    except (struct.error, IndexError) as exc:
        raise TxnFormatError(f"transaction cut short or malformed ({exc})") from None
    return zxid, changes


_CREATES = frozenset(
    {TxnType.CREATE, TxnType.CREATE2, TxnType.CREATE_CONTAINER, TxnType.CREATE_TTL}
)


def _changes(b: bytes, pos: int, end: int, kind: int, session: int) -> list[Change]:
    """The changes of the transaction of type ``kind`` in ``b[pos:end]``."""
    if kind in _CREATES:
        return [_create(b, pos, end, kind, session)]
    if kind in (TxnType.DELETE, TxnType.DELETE_CONTAINER):
        return [Change(TxnType.DELETE, _string(b, pos, end)[0])]
    if kind in (TxnType.SET_DATA, TxnType.RECONFIG):
        path, pos = _string(b, pos, end)
        data, pos = _buffer(b, pos, end)
        return [Change(TxnType.SET_DATA, path, data, INT.unpack_from(b, pos)[0])]
    if kind == TxnType.MULTI:
        return _multi(b, pos, end, session)
    if kind == TxnType.CREATE_SESSION:
        return [Change(TxnType.CREATE_SESSION, value=session)]
    if kind == TxnType.CLOSE_SESSION:
        return [Change(TxnType.CLOSE_SESSION, value=session, paths=_close_paths(b, pos, end))]
    if kind in _NO_CHANGE:
        return []
    raise TxnFormatError(f"unknown transaction type {kind}")


def _create(b: bytes, pos: int, end: int, kind: int, session: int) -> Change:
    """CreateTxn (path, data, acl, ephemeral, parentCVersion; a V0 create lacks the
    last), CreateContainerTxn (path, data, acl, parentCVersion) or CreateTTLTxn (the
    same, then the ttl)."""
    path, pos = _string(b, pos, end)
    data, pos = _buffer(b, pos, end)
    pos = _skip_acls(b, pos)
    if kind == TxnType.CREATE_CONTAINER:
        return Change(TxnType.CREATE, path, data, CONTAINER_OWNER)
    if kind == TxnType.CREATE_TTL:
        return Change(TxnType.CREATE, path, data, ttl_owner(LONG.unpack_from(b, pos + 4)[0]))
    if pos >= end:
        raise TxnFormatError(f"a create of {shown(path, PATH_LIMIT, bare=True)} cut short")
    return Change(TxnType.CREATE, path, data, session if b[pos] else 0)


def _multi(b: bytes, pos: int, end: int, session: int) -> list[Change]:
    """MultiTxn: vector of (type, buffer); any error sub-transaction means the multi
    failed and ZooKeeper applies none of it."""
    (count,) = INT.unpack_from(b, pos)
    pos += 4
    subs: list[tuple[int, int, int]] = []
    for _ in range(max(count, 0)):
        kind, length = SUB_TXN_HEAD.unpack_from(b, pos)
        pos += SUB_TXN_HEAD.size
        if kind not in _MULTI_SUBTYPES:
            raise TxnFormatError(f"a multi carries a transaction of type {kind}")
        if length < 0 or pos + length > end:
            raise TxnFormatError(f"a multi's sub-transaction of {length} bytes runs past it")
        subs.append((kind, pos, pos + length))
        pos += length
    if any(kind == TxnType.ERROR for kind, _, _ in subs):
        return []
    changes: list[Change] = []
    for kind, start, stop in subs:
        if kind in _CREATES:
            changes.append(_create(b, start, stop, kind, session))
        else:
            changes.extend(_changes(b, start, stop, kind, session))
    return changes


def _close_paths(b: bytes, pos: int, end: int) -> tuple[bytes, ...]:
    """CloseSessionTxn's paths (3.6+), or none: an older close carries nothing, and a
    close followed only by a TxnDigest is read as ZooKeeper would fail to, as none."""
    try:
        (count,) = INT.unpack_from(b, pos)
        paths: list[bytes] = []
        pos += 4
        for _ in range(max(count, 0)):
            path, pos = _string(b, pos, end)
            paths.append(path)
    except (struct.error, TxnFormatError):
        return ()
    return tuple(paths)


def _string(b: bytes, pos: int, end: int) -> tuple[bytes, int]:
    """A ustring, kept as its UTF-8 bytes (the tree is keyed by them)."""
    (length,) = INT.unpack_from(b, pos)
    stop = pos + 4 + max(length, 0)
    if stop > end:
        raise TxnFormatError(f"a string of {length} bytes runs past the transaction")
    return b[pos + 4 : stop], stop


def _buffer(b: bytes, pos: int, end: int) -> tuple[bytes, int]:
    (length,) = INT.unpack_from(b, pos)
    stop = pos + 4 + max(length, 0)
    if stop > end:
        raise TxnFormatError(f"a buffer of {length} bytes runs past the transaction")
    return b[pos + 4 : stop], stop


_last_acls = [b""]  # the last ACL vector skipped: creates mostly repeat one


def _skip_acls(b: bytes, pos: int) -> int:
    """Past a vector<ACL> (perms, then an Id of two strings each)."""
    known = _last_acls[0]
    if known and b.startswith(known, pos):
        return pos + len(known)
    start = pos
    (count,) = INT.unpack_from(b, pos)
    pos += 4
    for _ in range(max(count, 0)):
        (scheme,) = INT.unpack_from(b, pos + 4)
        pos += 8 + max(scheme, 0)
        (ident,) = INT.unpack_from(b, pos)
        pos += 4 + max(ident, 0)
    _last_acls[0] = b[start:pos]
    return pos
