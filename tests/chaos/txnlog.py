"""ZooKeeper's transaction logs (``<dataDir>/version-2/log.*``), read back to see every
write the ensemble committed, in zxid order: the chaos runs' evidence that no fenced
controller's write landed.

The format is ZooKeeper's (jute, big-endian): a file header (``ZKLG``, version, dbid),
then per transaction its Adler-32, the length-prefixed transaction (a header: session,
cxid, zxid, time, type; then the record of that type, a multi's being a vector of typed
sub-records), and an end-of-record byte. The log is preallocated with zeros: a zero
length ends it. Only the writes' paths and data are decoded (creates, sets, deletes,
checks). A write ZooKeeper refused is logged too, as an error transaction (a failed
multi: one error sub-record per op, the failing op's with its code, e.g. -103
BADVERSION for a check that found another version): :attr:`Txn.errors`.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

MAGIC = b"ZKLG"
CREATE, DELETE, SET_DATA, CHECK, MULTI, CREATE2 = 1, 2, 5, 13, 14, 15
CREATE_CONTAINER, DELETE_CONTAINER, CREATE_TTL, ERROR = 19, 20, 21, -1
CREATES = {CREATE, CREATE2, CREATE_CONTAINER, CREATE_TTL}
WITH_PATH = CREATES | {DELETE, SET_DATA, CHECK, DELETE_CONTAINER}


class TxnLogError(ValueError):
    """A transaction log that is not ZooKeeper's format (names the file and offset)."""


@dataclass(frozen=True)
class Op:
    kind: int
    path: str
    data: bytes | None  # creates and sets


@dataclass(frozen=True)
class Txn:
    zxid: int
    session: int
    ops: tuple[Op, ...]  # a refused write's: none
    multi: bool
    errors: tuple[int, ...] = ()  # a refused write's non-zero codes: nothing of it landed

    @property
    def refused(self) -> bool:
        return bool(self.errors)


class _Reader:
    def __init__(self, data: bytes, where: str) -> None:
        self.data, self.at, self.where = data, 0, where

    def take(self, n: int) -> bytes:
        if self.at + n > len(self.data):
            raise TxnLogError(f"{self.where}: truncated at byte {self.at}")
        out = self.data[self.at : self.at + n]
        self.at += n
        return out

    def int(self) -> int:
        value: int = struct.unpack(">i", self.take(4))[0]
        return value

    def long(self) -> int:
        value: int = struct.unpack(">q", self.take(8))[0]
        return value

    def buffer(self) -> bytes | None:
        n = self.int()
        return None if n < 0 else self.take(n)

    def string(self) -> str:
        raw = self.buffer()
        return "" if raw is None else raw.decode()


def _op(kind: int, record: bytes, where: str) -> Op | None:
    if kind not in WITH_PATH:
        return None
    r = _Reader(record, where)
    path = r.string()
    data = r.buffer() if kind in CREATES or kind == SET_DATA else None
    return Op(kind, path, data)


def _txn(raw: bytes, where: str) -> Txn:
    r = _Reader(raw, where)
    session, _cxid, zxid, _time, kind = r.long(), r.int(), r.long(), r.long(), r.int()
    record = raw[r.at :]
    if kind == ERROR:
        return Txn(zxid, session, (), multi=False, errors=(_Reader(record, where).int(),))
    if kind != MULTI:
        op = _op(kind, record, where)
        return Txn(zxid, session, () if op is None else (op,), multi=False)
    m = _Reader(record, where)
    ops, errors = [], []
    for _ in range(max(0, m.int())):
        sub_kind, sub = m.int(), m.buffer() or b""
        if sub_kind == ERROR:
            errors.append(_Reader(sub, where).int())
        elif (op := _op(sub_kind, sub, where)) is not None:
            ops.append(op)
    return Txn(zxid, session, tuple(ops), multi=True, errors=tuple(e for e in errors if e))


def read_log_file(path: Path) -> Iterator[Txn]:
    """The transactions of one log file, in order."""
    data = path.read_bytes()
    r = _Reader(data, str(path))
    if r.take(4) != MAGIC:
        raise TxnLogError(f"{path}: not a ZooKeeper transaction log")
    r.take(12)  # version, dbid
    while r.at + 12 <= len(data):
        r.long()  # Adler-32 of the transaction
        length = r.int()
        if length <= 0 or r.at + length + 1 > len(data):
            return  # the preallocated tail, or a write cut short by a crash
        raw = r.take(length)
        if r.take(1) != b"B":
            raise TxnLogError(f"{path}: no end-of-record byte at {r.at - 1}")
        yield _txn(raw, f"{path}@{r.at}")


def ensemble_history(data_dirs: Iterable[Path]) -> list[Txn]:
    """Every transaction any of the servers logged, once each, in zxid order (a server
    that was down has a gap; a server killed has a torn tail: the others fill them)."""
    seen: dict[int, Txn] = {}
    for data_dir in data_dirs:
        for path in sorted((data_dir / "version-2").glob("log.*")):
            for txn in read_log_file(path):
                seen.setdefault(txn.zxid, txn)
    return [seen[z] for z in sorted(seen)]
