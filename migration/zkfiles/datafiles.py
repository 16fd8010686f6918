"""The files of a ZooKeeper data directory: which there are, which matter, their bytes.

ZooKeeper keeps ``version-2/snapshot.<hex zxid>[.gz|.snappy]`` (a whole tree, written
fuzzily while it keeps serving) and ``version-2/log.<hex zxid>`` (transaction logs,
named by their first zxid) under ``dataDir``, or the logs under a ``dataLogDir`` of
their own. Names are read as ZooKeeper's ``Util.getZxidFromName`` reads them (the part
after the first dot, in hex; anything after a further dot is only the compression).

Read-only: files are opened for reading (an uncompressed one mapped, never written),
nothing is created, locked, renamed or deleted beside them. A compressed snapshot is
decompressed into anonymous memory of its exact length, streaming, with a cap from the
file's size (:func:`stream_cap`): a decompression bomb is refused before anything is
allocated for it.
"""

from __future__ import annotations

import contextlib
import mmap
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from migration.common.limits import MAX_SNAPSHOT_EXPANSION, MAX_SNAPSHOT_STREAM_BYTES
from migration.common.snappy import xerial_blocks, xerial_into, xerial_total

VERSION_DIR = "version-2"
SNAPSHOT_PREFIX = "snapshot"
LOG_PREFIX = "log"

GZIP_MAGIC = b"\x1f\x8b"
_INFLATE_IN = 1 << 16  # compressed bytes handed to zlib at a time
_INFLATE_OUT = 1 << 20  # decompressed bytes taken from it at a time

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
    """The stream a snapshot file holds: ``raw`` itself, or gunzipped / un-snappied (by
    the file's extension) into memory of its exact length, at most
    :func:`stream_cap` bytes of it. Raises ValueError saying what is wrong with it and
    at which byte of the file; past the cap, before anything is allocated for it."""
    kind = compression_of(path.name)
    if kind == "gz":
        return _gunzipped(raw, stream_cap(len(raw)))
    if kind == "snappy":
        return _unsnappied(raw, stream_cap(len(raw)))
    return raw


def stream_cap(file_size: int) -> int:
    """The most a compressed snapshot of ``file_size`` bytes may decompress to (see
    :data:`~migration.common.limits.MAX_SNAPSHOT_EXPANSION`)."""
    return min(file_size * MAX_SNAPSHOT_EXPANSION, MAX_SNAPSHOT_STREAM_BYTES)


def _exact_buffer(size: int) -> Buffer:
    """Zeroed anonymous memory of ``size`` bytes (pages taken as they are written);
    ValueError when the machine will not give it."""
    if not size:
        return b""
    try:
        return mmap.mmap(-1, size)
    except (OSError, MemoryError, OverflowError) as exc:
        raise ValueError(f"no memory for its {size}-byte decompressed stream ({exc})") from None


def _gunzipped(raw: Buffer, cap: int) -> Buffer:
    """Every gzip member of ``raw`` (concatenated as ``GZIPInputStream`` reads them):
    counted in one pass (nothing kept), then decompressed into memory of that size."""
    size = _inflate(raw, cap, None)
    out = _exact_buffer(size)
    if isinstance(out, mmap.mmap):
        _inflate(raw, size, out)
    return out


def _inflate(raw: Buffer, cap: int, out: mmap.mmap | None) -> int:
    """The length of ``raw``'s gzip members decompressed, each piece written to ``out``
    when given; ValueError past ``cap`` bytes or for a damaged stream."""
    view = memoryview(raw)
    try:
        if view[:2] != GZIP_MAGIC:
            raise ValueError("not a gzip stream (bad magic)")
        total = pos = 0
        while pos < len(view):
            if view[pos : pos + 2] != GZIP_MAGIC:
                raise ValueError(f"gzip: bytes after the last member at byte {pos}")
            total, pos = _inflate_member(view, pos, total, cap, out)
        return total
    finally:
        view.release()


def _inflate_member(
    view: memoryview, pos: int, total: int, cap: int, out: mmap.mmap | None
) -> tuple[int, int]:
    """One gzip member from byte ``pos`` of ``view``, its output counted on from
    ``total`` (and written to ``out``): the new total and where the member ends."""
    member = zlib.decompressobj(31)
    while not member.eof:
        data: bytes | memoryview = member.unconsumed_tail
        if not data and pos < len(view):
            data = view[pos : pos + _INFLATE_IN]
            pos += len(data)
        try:
            piece = member.decompress(data, _INFLATE_OUT)
        except zlib.error as exc:
            raise ValueError(f"gzip: {exc} near byte {pos}") from None
        if not data and not piece and not member.eof:
            raise ValueError(f"gzip: stream cut short at byte {pos}")
        if total + len(piece) > cap:
            at = pos - len(member.unconsumed_tail)
            raise ValueError(f"gzip stream decompresses past {cap} bytes (at byte {at})")
        if out is not None:
            out[total : total + len(piece)] = piece
        total += len(piece)
    return total, pos - len(member.unused_data)


def _unsnappied(raw: Buffer, cap: int) -> Buffer:
    """A snappy-java stream's bytes: every block's declared length checked and summed
    first, then each decompressed into memory of that size."""
    blocks = xerial_blocks(raw)
    out = _exact_buffer(xerial_total(blocks, cap))
    if isinstance(out, mmap.mmap):
        with memoryview(out) as view:
            xerial_into(raw, blocks, view)
    return out


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
