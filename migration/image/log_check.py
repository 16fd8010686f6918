"""Check a whole log directory the way ``zk2kraft log verify`` reports it.

Read-only: nothing is truncated or repaired. Every snapshot is read whole and every
batch of every segment is checked -- its frame, CRC and records -- also the batches
below the log start offset or covered by a snapshot (Kafka keeps them on disk in the
segment that holds the log start), so damage anywhere is found. The records from the
newest whole snapshot on (or from offset 0) are replayed into an image, which catches
records that do not apply and transaction markers out of order.

Each finding names its file (and byte) and the region it is in: a snapshot, the
segments below the log start offset, the segments a snapshot covers, or the log
replayed. Errors are corruption or records a controller would refuse; warnings are what
a writable open or the next leader handles by itself (a torn tail after a crash, a
transaction left open by a crash).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from migration.common.text import shown
from migration.image.delta import RecordApplyError
from migration.image.loader import MetadataLoader
from migration.image.model import MetadataImage
from migration.kafka_log.directory import KafkaMetadataLog
from migration.kafka_log.formats import open_log
from migration.log.batch import LogBatch
from migration.log.errors import CorruptLogError
from migration.log.readable import ReadableLog
from migration.log.segment import SUFFIX
from migration.log.snapshots import SnapshotId

LOG = "the log"


@dataclass
class LogCheck:
    log_dir: str
    format: str = "zk2kraft"
    log_start_offset: int = 0
    """The log start offset (Kafka's: older offsets are served as a snapshot)."""
    start_offset: int = 0
    """The first offset the segments hold whole."""
    end_offset: int = 0
    batches: int = 0
    records: int = 0
    """Records in every batch of every segment, below the log start offset too."""
    segments: int = 0
    snapshots: int = 0
    segment_files: list[dict[str, Any]] = field(default_factory=list)
    snapshot_files: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    problems: list[dict[str, Any]] = field(default_factory=list)
    """The errors as data: region, file, byte (None: the whole file), problem."""
    warnings: list[str] = field(default_factory=list)
    image: dict[str, int] = field(default_factory=dict)
    metadata: MetadataImage = field(default=MetadataImage.EMPTY, repr=False)
    """The image replayed from the log (what ``zk diff`` compares ZooKeeper with)."""

    @property
    def ok(self) -> bool:
        return not self.errors

    def error(self, region: str, problem: str | CorruptLogError) -> None:
        """Record an error found in ``region``."""
        self.errors.append(f"{problem} [{region}]")
        if isinstance(problem, CorruptLogError):
            where = {"file": str(problem.path), "byte": problem.position}
            self.problems.append({"region": region, **where, "problem": problem.problem})
        else:
            self.problems.append({"region": region, "file": None, "byte": None, "problem": problem})

    def to_json(self) -> dict[str, Any]:
        return {
            "log_dir": self.log_dir,
            "format": self.format,
            "ok": self.ok,
            "log_start_offset": self.log_start_offset,
            "start_offset": self.start_offset,
            "end_offset": self.end_offset,
            "segments": self.segments,
            "snapshots": self.snapshots,
            "segment_files": self.segment_files,
            "snapshot_files": self.snapshot_files,
            "batches": self.batches,
            "records": self.records,
            "errors": self.errors,
            "problems": self.problems,
            "warnings": self.warnings,
            "image": self.image,
        }


def check_log(log_dir: Path, log_format: str = "auto", skip_unknown: bool = False) -> LogCheck:
    """``log_format`` and ``skip_unknown``: as :func:`~migration.kafka_log.formats.
    open_log` takes them (records skipped are warnings)."""
    check = LogCheck(str(log_dir))
    with closing(open_log(log_dir, log_format, skip_unknown=skip_unknown)) as log:
        check.format = log.format
        check.start_offset, check.end_offset = log.start_offset, log.end_offset
        check.log_start_offset = (
            log.log_start_offset if isinstance(log, KafkaMetadataLog) else log.start_offset
        )
        check.segments = len(log.segment_paths)
        for name in log.unknown_files:
            if not name.endswith(SUFFIX):  # misnamed segments are among the problems
                problem = f"{log.directory / name}: not a file a metadata log directory holds"
                check.error(LOG, problem)
        check.warnings.extend(log.reconciled)
        if log.torn_tail is not None:
            check.warnings.append(
                f"{log.torn_tail} (a write cut short by a crash; the next writable open "
                "truncates it)"
            )
        snapshots = log.snapshots()
        check.snapshots = len(snapshots)
        if not snapshots and not log.segment_paths and not log.problems:
            check.error(LOG, f"{log_dir}: no segments and no snapshots: not a metadata log")
            return check
        loader = _check_snapshots(log, snapshots, check)
        _check_segments(log, loader, check)
        if isinstance(log, KafkaMetadataLog):
            check.warnings.extend(log.warnings)
            check.warnings.extend(f"skipped {s}" for s in log.skipped)
    if loader is not None:
        if loader.open_transaction is not None:
            t = loader.open_transaction
            check.warnings.append(
                f"transaction {shown(t.name)} begun at offset {t.begin_offset} is still open "
                "(the next leader aborts it)"
            )
        check.metadata = loader.image
    check.image = check.metadata.counts()
    return check


def _check_snapshots(
    log: ReadableLog, snapshots: list[SnapshotId], check: LogCheck
) -> MetadataLoader | None:
    """Read every snapshot whole; the loader to replay the segments onto: the newest
    whole snapshot that reaches the segments, or empty when the log starts at 0 (every
    snapshot is then only checked). None: nothing to replay onto (an error says why)."""
    base: MetadataLoader | None = MetadataLoader() if log.start_offset == 0 else None
    for snap_id in snapshots:  # oldest first: the newest whole snapshot wins
        region = f"snapshot {snap_id.file_name}"
        entry: dict[str, Any] = {
            "file": snap_id.file_name,
            "end_offset": snap_id.end_offset,
            "epoch": snap_id.epoch,
            "records": 0,
            "ok": False,
        }
        check.snapshot_files.append(entry)
        counted = _counting(log.read_snapshot(snap_id), entry)  # a batch at a time
        try:
            if log.start_offset > 0 and snap_id.end_offset >= log.start_offset:
                base = MetadataLoader.from_snapshot(counted, snap_id.end_offset, snap_id.epoch)
            else:
                for _ in counted:  # checked only
                    pass
            entry["ok"] = True
        except CorruptLogError as exc:
            check.error(region, exc)
        except RecordApplyError as exc:
            check.error(region, f"{log.snapshot_path(snap_id)}: {exc}")
    if base is None:
        check.error(
            LOG,
            f"{check.log_dir}: the log starts at offset {log.start_offset} and no whole "
            "snapshot covers the offsets before it",
        )
    return base


def _counting(records: Iterator[Any], entry: dict[str, Any]) -> Iterator[Any]:
    for record in records:
        entry["records"] += 1
        yield record


def _check_segments(log: ReadableLog, loader: MetadataLoader | None, check: LogCheck) -> None:
    """Every batch of every segment, each counted and checked; the ones after what
    ``loader`` holds replayed onto it until the first damage or refused record."""
    replay_from = check.start_offset if loader is None else loader.last_offset + 1
    replaying = loader is not None
    files: dict[Path, dict[str, Any]] = {}
    at = check.start_offset  # where the next batch is due: places damage in a region
    for path, item in _every_batch(log):
        if isinstance(item, CorruptLogError):
            region = _region(check, at, replay_from)
            check.error(region, item)
            replaying = replaying and region != LOG
            continue
        batch: LogBatch = item
        at = batch.base_offset + len(batch.records)
        check.batches += 1
        check.records += len(batch.records)
        entry = files.setdefault(
            path, {"file": path.name, "first_offset": batch.base_offset, "batches": 0, "records": 0}
        )
        entry.update(batches=entry["batches"] + 1, records=entry["records"] + len(batch.records))
        entry["end_offset"] = at
        if replaying and loader is not None and at > replay_from:
            try:
                loader.replay_all(
                    (batch.base_offset + i, batch.epoch, r)
                    for i, r in enumerate(batch.records)
                    if batch.base_offset + i >= replay_from
                )
            except RecordApplyError as exc:
                check.error(LOG, f"{check.log_dir}: {exc}")
                replaying = False
    check.segment_files = [
        files.get(p, {"file": p.name, "first_offset": None, "batches": 0, "records": 0})
        for p in log.segment_paths
    ]


def _region(check: LogCheck, offset: int, replay_from: int) -> str:
    if offset < check.log_start_offset:
        return f"segments below the log start offset {check.log_start_offset}"
    if offset < replay_from:
        return f"segments the snapshot at offset {replay_from} covers"
    return LOG


def _every_batch(log: ReadableLog) -> Iterator[tuple[Path, LogBatch | CorruptLogError]]:
    """(segment, batch) for every batch with its damage in place (Kafka's format), or
    the own log's batches up to its first damage, then its problems."""
    if isinstance(log, KafkaMetadataLog):
        yield from log.every_batch()
        return
    paths = log.segment_paths
    bases = [int(p.name.removesuffix(SUFFIX)) for p in paths]
    raised: CorruptLogError | None = None
    try:
        for batch in log.read(log.start_offset) if paths else ():
            yield paths[max(bisect_right(bases, batch.base_offset) - 1, 0)], batch
    except CorruptLogError as exc:
        raised = exc
        yield exc.path, exc
    for problem in log.problems:
        if raised is None or str(problem) != str(raised):
            yield problem.path, problem
