"""Opening a log directory: what recovery trusts, cuts, drops and refuses.

Rules (see :mod:`.metadata_log` for the whole contract):

- every batch's CRC is checked and its records decoded;
- a torn tail of the last segment (zero fill, a header cut short, a batch running past
  the end of the file with no whole batch after it) is cut, with a WARNING;
- anything else is corruption -- a whole batch with a bad CRC or undecodable records,
  whole batches after a bad one, epochs going back, a gap between segments, a file named
  like a segment that is not one -- and stops a writable open (``CorruptLogError``,
  nothing changed), unless ``repair_corrupt_tail`` lets a voter of a larger quorum cut
  a corrupt last segment at the damage (ERROR);
- segments cut off by a gap just below a segment starting within the latest snapshot
  are an interrupted snapshot install's leftovers: dropped; a log ending below its
  latest snapshot restarts at it;
- a read-only open changes nothing: it collects problems and says what a writable open
  would do.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from migration.common.files import fsync_dir
from migration.log.errors import CorruptLogError
from migration.log.lock import LOCK_FILE
from migration.log.segment import SUFFIX, Segment, parse_segment_name, segment_name
from migration.log.snapshots import PARTIAL, SnapshotId, list_snapshots

log = logging.getLogger("migration.log.metadata_log")

QUORUM_STATE_FILE = "quorum-state"  # Raft's election state lives beside the log
# A side file of an unreleased build (the voter set lives in the log and its snapshots
# now: migration.raft.voters); a left-over is tolerated and never read.
QUORUM_VOTERS_FILE = "quorum-voters"
# ... and what `storage format` writes beside the log (migration.controller.storage).
_OTHER_FILES = {
    LOCK_FILE, QUORUM_STATE_FILE, QUORUM_STATE_FILE + ".tmp", "meta.properties",
    "bootstrap.checkpoint", QUORUM_VOTERS_FILE, QUORUM_VOTERS_FILE + ".tmp",
}  # fmt: skip


def is_log_file(name: str) -> bool:
    """Whether ``name`` is something a log directory holds."""
    return (
        name in _OTHER_FILES
        or parse_segment_name(name) is not None
        or SnapshotId.parse(name.removesuffix(PARTIAL)) is not None
    )


@dataclass
class Recovery:
    """Opens the segments of ``directory`` into ``segments`` (a list the log owns, so a
    failed open can close what was opened) and records what it found and did."""

    directory: Path
    read_only: bool
    repair_corrupt_tail: bool
    segments: list[Segment]
    problems: list[CorruptLogError] = field(default_factory=list)  # read-only: refused
    torn_tail: CorruptLogError | None = None  # read-only: what a writer would cut
    recovered_bytes: int = 0  # bytes a writable open cut
    reconciled: list[str] = field(default_factory=list)  # what it did (would do) by itself
    unknown_files: list[str] = field(default_factory=list)  # names a log dir does not hold

    @property
    def end_offset(self) -> int:
        return self.segments[-1].next_offset if self.segments else 0

    def latest_snapshot(self) -> SnapshotId | None:
        snapshots = list_snapshots(self.directory)
        return snapshots[-1] if snapshots else None

    def run(self) -> SnapshotId | None:
        """Open and check every segment; returns the latest snapshot."""
        names = sorted(p.name for p in self.directory.iterdir())
        self.unknown_files = [n for n in names if not is_log_file(n)]
        for name in self.unknown_files:
            if name.endswith(SUFFIX):
                self._corrupt(
                    CorruptLogError(
                        self.directory / name,
                        None,
                        "named like a segment but not <20-digit base offset>.log "
                        "(a renamed or foreign file; its records would be skipped)",
                    )
                )
        bases = sorted(b for n in names if (b := parse_segment_name(n)) is not None)
        latest = self.latest_snapshot()
        for i, base in enumerate(bases):
            path = self.directory / segment_name(base)
            try:
                seg, problem = Segment.open(path, base, self.read_only)
            except CorruptLogError as exc:
                self._corrupt(exc)
                continue
            prev = self.segments[-1] if self.segments else None
            self.segments.append(seg)
            if (
                prev is not None
                and prev.next_offset != base
                and latest
                and base <= latest.end_offset
            ):
                self._drop_leftovers(latest)
                prev = None
            if prev is not None and prev.next_offset != base:
                self._corrupt(
                    CorruptLogError(
                        seg.path,
                        None,
                        f"segment starts at offset {base} but the previous one ends at "
                        f"{prev.next_offset}: records are missing",
                    )
                )
            if prev is not None and prev.epochs and seg.epochs and seg.epochs[0] < prev.epochs[-1]:
                self._corrupt(
                    CorruptLogError(
                        seg.path,
                        0,
                        f"first batch has epoch {seg.epochs[0]}, older than the epoch "
                        f"{prev.epochs[-1]} the previous segment ends with",
                    )
                )
            if problem is not None:
                last = i == len(bases) - 1
                self._bad_tail(seg, problem.position, problem.problem, problem.torn, last)
        if latest is not None and self.segments and self.end_offset < latest.end_offset:
            self._restart_at_snapshot(latest)
        return latest

    def _drop_leftovers(self, latest: SnapshotId) -> None:
        """A gap just below a segment that starts within the latest snapshot: the
        segments before it hold only offsets the snapshot covers -- what a snapshot
        install that crashed had not deleted yet. Drop them (read-only: skip them)."""
        *leftovers, seg = self.segments
        self.segments[:] = [seg]
        note = (
            f"{self.directory}: {len(leftovers)} segment(s) below {seg.path.name} are "
            f"covered by snapshot {latest.file_name} and cut off by a gap: left by an "
            "interrupted snapshot install; dropped"
        )
        self.reconciled.append(note)
        for old in leftovers:
            old.close()
            if not self.read_only:
                old.path.unlink()
        if not self.read_only:
            log.warning("%s", note)
            fsync_dir(self.directory)

    def _restart_at_snapshot(self, latest: SnapshotId) -> None:
        """The whole log ends below the latest snapshot: restart it there (Kafka's rule)."""
        note = (
            f"{self.directory}: the log ends at {self.end_offset}, below the latest snapshot "
            f"{latest.file_name}: the log restarts at offset {latest.end_offset}"
        )
        self.reconciled.append(note)
        if self.read_only:
            return
        log.warning("%s", note)
        for seg in self.segments:
            seg.close()
            seg.path.unlink()
        self.segments.clear()
        fsync_dir(self.directory)

    def _bad_tail(self, seg: Segment, position: int, problem: str, torn: bool, last: bool) -> None:
        """Invalid bytes from ``position`` on: cut a torn tail of the last segment;
        anything else is corruption (cut only when repair was asked for)."""
        error = CorruptLogError(seg.path, position, problem)
        if not last or not (torn or self.repair_corrupt_tail):
            self._corrupt(error)
            return
        if self.read_only:
            self.torn_tail = error
            return
        self.recovered_bytes = seg.size_on_disk() - position
        if torn:
            log.warning(
                "%s: cutting %d bytes after the last valid batch (%s): "
                "an unfinished write before a crash",
                seg.path,
                self.recovered_bytes,
                problem,
            )
        else:
            log.error(
                "%s: CORRUPT at byte %d (%s): cutting %d bytes there; this voter fetches "
                "the records back from the quorum's leader",
                seg.path,
                position,
                problem,
                self.recovered_bytes,
            )
        seg.truncate_bytes(position)
        seg.flush()

    def _corrupt(self, error: CorruptLogError) -> None:
        if not self.read_only:
            raise error
        self.problems.append(error)
