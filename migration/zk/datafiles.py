"""The files of a ZooKeeper data directory: which there are, which matter, their bytes.

ZooKeeper keeps ``version-2/snapshot.<hex zxid>[.gz|.snappy]`` (a whole tree, written
fuzzily while it keeps serving) and ``version-2/log.<hex zxid>`` (transaction logs,
named by their first zxid) under ``dataDir``, or the logs under a ``dataLogDir`` of
their own. Names are read as ZooKeeper's ``Util.getZxidFromName`` reads them (the part
after the first dot, in hex; anything after a further dot is only the compression).

Read-only: files are opened for reading (an uncompressed one mapped, never written),
nothing is created, locked, renamed or deleted beside them. A compressed snapshot is
decompressed into memory.
"""

from __future__ import annotations

import contextlib
import gzip
import mmap
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from migration.common.snappy import xerial_snappy

VERSION_DIR = "version-2"
SNAPSHOT_PREFIX = "snapshot"
LOG_PREFIX = "log"

GZIP_MAGIC = b"\x1f\x8b"

Buffer = bytes | mmap.mmap
"""A whole file's (or decompressed stream's) bytes: struct, zlib and slicing take both."""


class ZkDataDirError(RuntimeError):
    """A ZooKeeper data directory that cannot be read as ZooKeeper would restore it.

    ``str()`` starts with the file (or directory) concerned and, where it applies, names
    the byte offset of the damage: ``<file>: bad record at byte 4321: CRC mismatch``.
    """

    def __init__(self, file: Path | str, problem: str, offset: int | None = None) -> None:
        super().__init__(f"{file}: {problem}")
        self.file = str(file)
        self.problem = problem
        self.offset = offset


def zxid_from_name(name: str, prefix: str) -> int:
    """The zxid in a file name (``log.1a2b``, ``snapshot.1a2b.gz``), or -1 when the name
    is not ``<prefix>.<hex>...`` (ZooKeeper's ``Util.getZxidFromName``)."""
    parts = name.split(".")
    if len(parts) < 2 or parts[0] != prefix or not parts[1] or len(parts[1]) > 16:
        return -1
    try:
        zxid = int(parts[1], 16)
    except ValueError:
        return -1
    return zxid if zxid < 1 << 63 else -1


def compression_of(name: str) -> str:
    """``gz``, ``snappy`` or ``""``: the stream a snapshot's last extension names
    (ZooKeeper's ``SnapStream.getStreamMode``; anything else is read uncompressed)."""
    last = name.rsplit(".", 1)[-1].lower()
    return last if last in ("gz", "snappy") and name.count(".") >= 2 else ""


@dataclass(frozen=True)
class DataFiles:
    """What a data directory holds: ``snapshots`` newest first, ``logs`` oldest first,
    each as (zxid from the name, path)."""

    dirs: tuple[Path, ...]
    snapshots: tuple[tuple[int, Path], ...]
    logs: tuple[tuple[int, Path], ...]

    def logs_from(self, zxid: int) -> list[tuple[int, Path]]:
        """The logs that may hold ``zxid`` and what follows it, oldest first: those
        named ``zxid`` or later, and the last one named before it (``FileTxnIterator``)."""
        later = [entry for entry in self.logs if entry[0] >= zxid]
        earlier = [entry for entry in self.logs if entry[0] < zxid]
        return earlier[-1:] + later


def _version_dir(directory: Path) -> Path | None:
    """``directory/version-2``, or ``directory`` itself when it is that directory (or
    holds ZooKeeper's files directly); None when neither exists."""
    nested = directory / VERSION_DIR
    if nested.is_dir():
        return nested
    if directory.is_dir() and (
        directory.name == VERSION_DIR
        or any(_zk_files(directory, SNAPSHOT_PREFIX))
        or any(_zk_files(directory, LOG_PREFIX))
    ):
        return directory
    return None


def _zk_files(directory: Path, prefix: str) -> Iterator[tuple[int, Path]]:
    for path in directory.iterdir():
        zxid = zxid_from_name(path.name, prefix)
        if zxid >= 0 and path.is_file():
            yield zxid, path


def find_data_files(dirs: Sequence[Path]) -> DataFiles:
    """The snapshots and logs under ``dirs``: one ``dataDir``, or ``dataDir`` and
    ``dataLogDir`` (each the directory ZooKeeper was configured with, or its
    ``version-2/``). Raises :class:`ZkDataDirError` when there is neither a snapshot nor
    a log."""
    if not dirs:
        raise ValueError("no ZooKeeper data directory given")
    found: list[Path] = []
    snapshots: list[tuple[int, Path]] = []
    logs: list[tuple[int, Path]] = []
    for directory in map(Path, dirs):
        try:
            version = _version_dir(directory)
            if version is None or version.resolve() in [d.resolve() for d in found]:
                continue
            found.append(version)
            snapshots += _zk_files(version, SNAPSHOT_PREFIX)
            logs += _zk_files(version, LOG_PREFIX)
        except OSError as exc:
            raise ZkDataDirError(directory, f"cannot be listed ({exc.strerror or exc})") from None
    snapshots.sort(key=lambda e: -e[0])
    logs.sort(key=lambda e: e[0])
    if not snapshots and not logs:
        named = " and ".join(str(d) for d in dirs)
        raise ZkDataDirError(
            named,
            f"not a ZooKeeper data directory (no {VERSION_DIR}/ with snapshot.* or log.* files)",
        )
    return DataFiles(tuple(found), tuple(snapshots), tuple(logs))


@contextlib.contextmanager
def mapped(path: Path) -> Iterator[Buffer]:
    """The bytes of ``path``, mapped read-only (an empty file: ``b""``); a file that
    cannot be opened is a :class:`ZkDataDirError`."""
    with contextlib.ExitStack() as stack:
        try:
            f = stack.enter_context(path.open("rb"))
            size = f.seek(0, 2)
            view = (
                stack.enter_context(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ))
                if size
                else b""
            )
        except OSError as exc:
            raise ZkDataDirError(path, f"cannot be read ({exc.strerror or exc})") from None
        yield view


def decompressed(path: Path, raw: Buffer) -> Buffer:
    """The stream a snapshot file holds: ``raw`` itself, or gunzipped / un-snappied
    (by the file's extension). Raises ValueError saying what is wrong with it."""
    kind = compression_of(path.name)
    if kind == "gz":
        if raw[:2] != GZIP_MAGIC:
            raise ValueError("not a gzip stream (bad magic)")
        try:
            return gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:
            raise ValueError(f"gzip: {exc}") from None
    if kind == "snappy":
        return xerial_snappy(raw)
    return raw


def all_zero(buf: Buffer, start: int, chunk: int = 1 << 20) -> bool:
    """Whether every byte of ``buf`` from ``start`` on is zero (ZooKeeper preallocates
    its logs with zeros: what follows the last record)."""
    for offset in range(start, len(buf), chunk):
        piece = buf[offset : offset + chunk]
        if piece.count(0) != len(piece):
            return False
    return True


def adler32(buf: Buffer, start: int, end: int, value: int = 1) -> int:
    """Adler32 of ``buf[start:end]`` carried on from ``value`` (java.util.zip.Adler32,
    what ZooKeeper seals its files with), without copying a mapped file."""
    view = memoryview(buf)
    try:
        piece = view[start:end]
        try:
            return zlib.adler32(piece, value)
        finally:
            piece.release()
    finally:
        view.release()
