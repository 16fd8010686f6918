"""A ZooKeeper data directory read offline into an :class:`OfflineTree`.

:func:`open_data_dir` restores the tree as ZooKeeper restores itself at start-up
(``FileTxnSnapLog.restore``), without a server and without writing anything:

1. the newest snapshot that reads whole and whose checksums match (a damaged one is
   skipped for the one before it, with a warning naming it and why);
2. the logs that may hold what follows it (the last one starting at or before its
   zxid + 1, and every later one), each transaction after the snapshot's zxid replayed
   in order (:mod:`migration.zkfiles.replay`);
3. a torn tail (the last log's final record cut short, without its ``'B'``, or with a
   bad checksum, and nothing valid after it) is cut with a warning, as a crash leaves
   it; damage followed by more data, or in a log another log does not take over from
   at the next zxid, is a :class:`ZkDataDirError` naming the file and the byte;
4. the ephemerals of sessions that are no longer open are dropped (``loadData``).

What ZooKeeper would refuse is refused: no valid snapshot, logs without any snapshot,
a transaction type it cannot read. ZooKeeper refuses a checksum mismatch in the last
record too; here that record is cut as a torn tail, with a warning that says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from migration.common.gc_pause import gc_paused
from migration.observability.progress import NullProgress, Progress
from migration.zkfiles.datafiles import (
    DataFiles,
    ZkDataDirError,
    compression_of,
    decompressed,
    find_data_files,
    mapped,
)
from migration.zkfiles.datatree import OfflineTree
from migration.zkfiles.replay import Replay
from migration.zkfiles.snapfile import SnapshotContents, SnapshotError, check_shape, parse_snapshot
from migration.zkfiles.txnlog import LogScan, TxnFormatError, decode, txn_zxid

__all__ = ["OfflineTree", "ZkDataDirError", "open_data_dir"]


def open_data_dir(
    dirs: Sequence[Path], chroot: str = "", progress: Progress | None = None
) -> OfflineTree:
    """Read ZooKeeper's files under ``dirs`` (a ``dataDir``, or ``dataDir`` and
    ``dataLogDir``; each may name its ``version-2/``) into a tree whose reads are
    inside ``chroot``. Progress is reported per file, in bytes. Raises
    :class:`ZkDataDirError` (see the module doc)."""
    progress = progress or NullProgress()
    files = find_data_files(dirs)
    warnings: list[str] = []
    with gc_paused():
        snap_zxid, snap_path, contents = _newest_snapshot(files, progress, warnings)
        replay = Replay(contents)
        logs = _Logs(files, snap_zxid, replay, progress, warnings)
        logs.run()
        replay.drop_dead_sessions()
    progress.done()
    source = f"{snap_path.name} (zxid {snap_zxid:#x}, {contents.znodes:,} znodes)"
    if logs.read:
        names = ", ".join(p.name for p in logs.read)
        source += (
            f" + {len(logs.read)} log file(s) ({names}): {logs.applied:,} transactions "
            f"replayed, to zxid {logs.last_zxid:#x}"
        )
    return OfflineTree(
        contents.nodes,
        contents.children,
        chroot=chroot,
        zxid=max(snap_zxid, logs.last_zxid),
        source=source,
        warnings=warnings,
        open_sessions=frozenset(replay.sessions),
    )


def _newest_snapshot(
    files: DataFiles, progress: Progress, warnings: list[str]
) -> tuple[int, Path, SnapshotContents]:
    if not files.snapshots:
        raise ZkDataDirError(
            files.dirs[0],
            f"no snapshot.* file beside {len(files.logs)} log file(s): ZooKeeper refuses "
            "to restore from logs alone",
        )
    bad: list[tuple[Path, str, int]] = []
    for zxid, path in files.snapshots:
        with mapped(path) as raw:
            try:
                check_shape(path.name, raw)
                stream = decompressed(path, raw)
                progress.stage(f"snapshot {path.name}", len(stream))
                contents = parse_snapshot(stream, progress.advance)
            except SnapshotError as exc:
                inside = " of its decompressed stream" if compression_of(path.name) else ""
                where = f"bad snapshot at byte {exc.offset}{inside}"
                bad.append((path, f"{where}: {exc.problem}", exc.offset))
                continue
            except ValueError as exc:
                bad.append((path, f"bad snapshot: {exc}", 0))
                continue
        warnings.extend(f"{p}: {problem}; skipped for {path.name}" for p, problem, _ in bad)
        return zxid, path, contents
    first, problem, offset = bad[0]
    others = "".join(f"; {p.name}: {why}" for p, why, _ in bad[1:])
    raise ZkDataDirError(first, f"{problem} (no valid snapshot{others})", offset)


class _Logs:
    """The logs after a snapshot replayed in order (``FileTxnIterator`` from its zxid
    + 1: transactions before it skipped, every one after applied)."""

    def __init__(
        self,
        files: DataFiles,
        snap_zxid: int,
        replay: Replay,
        progress: Progress,
        warnings: list[str],
    ) -> None:
        self.logs = files.logs_from(snap_zxid + 1)
        self.snap_zxid = snap_zxid
        self.replay = replay
        self.progress = progress
        self.warnings = warnings
        self.read: list[Path] = []
        self.applied = 0
        self.last_zxid = snap_zxid
        self.started = False

    def run(self) -> None:
        for index, (first, path) in enumerate(self.logs):
            following = self.logs[index + 1] if index + 1 < len(self.logs) else None
            with mapped(path) as buf:
                self.progress.stage(f"log {path.name}", len(buf))
                try:
                    scan = LogScan(buf, first)
                except TxnFormatError as exc:
                    raise ZkDataDirError(path, f"bad log at byte 0: {exc}", 0) from None
                done = 0
                for offset, body in scan:
                    self._record(path, offset, body)
                    self.progress.advance(offset + len(body) + 13 - done)
                    done = offset + len(body) + 13
                self.progress.advance(len(buf) - done)
                self.read.append(path)
                if scan.damage is not None:
                    self._damaged(path, scan, following)

    def _record(self, path: Path, offset: int, body: bytes) -> None:
        zxid = txn_zxid(body)
        if not self.started and zxid <= self.snap_zxid:
            return  # in the snapshot already (fast-forward)
        try:
            zxid, changes = decode(body)
        except TxnFormatError as exc:
            raise ZkDataDirError(path, f"bad record at byte {offset}: {exc}", offset) from None
        previous = self.last_zxid
        if zxid <= previous and self.started:
            self.warnings.append(
                f"{path}: the record at byte {offset} (zxid {zxid:#x}) does not follow "
                f"zxid {previous:#x}; replayed anyway, as ZooKeeper does"
            )
        elif zxid > previous + 1 and zxid >> 32 == previous >> 32:
            self.warnings.append(
                f"{path}: transactions {previous + 1:#x}-{zxid - 1:#x} are in no log "
                f"(the record at byte {offset} follows {previous:#x})"
            )
        self.started = True
        self.replay.apply(changes)
        self.applied += 1
        self.last_zxid = max(zxid, previous)

    def _damaged(self, path: Path, scan: LogScan, following: tuple[int, Path] | None) -> None:
        damage = scan.damage
        assert damage is not None
        where = f"bad record at byte {damage.offset}: {damage.problem}"
        if damage.followed:
            raise ZkDataDirError(path, f"{where}, and data follows it", damage.offset)
        resumes = txn_zxid(scan.last) + 1 if scan.last else scan.first_zxid
        if following is not None and following[0] != resumes:
            raise ZkDataDirError(
                path,
                f"{where}, in a log that is not the last ({following[1].name} does not "
                f"resume at zxid {resumes:#x})",
                damage.offset,
            )
        refused = (
            "; ZooKeeper itself refuses to start on a bad checksum"
            if damage.problem == "CRC mismatch"
            else ""
        )
        self.warnings.append(
            f"{path}: torn tail cut at byte {damage.offset} ({damage.problem}, nothing "
            f"valid after it: a write a crash cut short{refused}); the log ends at zxid "
            f"{resumes - 1:#x}"
        )
