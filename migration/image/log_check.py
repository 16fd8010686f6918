"""Check a whole log directory the way ``zk2kraft log verify`` reports it.

Read-only: nothing is truncated or repaired. Every segment and snapshot is read with
its CRCs checked, the records are replayed into an image (which catches records
that do not apply and transaction markers out of order), and the findings are
returned, each naming its file or offset. Errors are corruption or records a
controller would refuse; warnings are what a writable open or the next leader
handles by itself (a torn tail after a crash, a transaction left open by a crash).
"""

from __future__ import annotations

from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from migration.image.delta import RecordApplyError
from migration.image.loader import MetadataLoader
from migration.image.model import MetadataImage
from migration.kafka_log.directory import KafkaMetadataLog
from migration.kafka_log.formats import open_log
from migration.log.errors import CorruptLogError
from migration.log.segment import SUFFIX


@dataclass
class LogCheck:
    log_dir: str
    format: str = "zk2kraft"
    start_offset: int = 0
    end_offset: int = 0
    batches: int = 0
    records: int = 0
    segments: int = 0
    snapshots: int = 0
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    image: dict[str, int] = field(default_factory=dict)
    metadata: MetadataImage = field(default=MetadataImage.EMPTY, repr=False)
    """The image replayed from the log (what ``zk diff`` compares ZooKeeper with)."""

    @property
    def ok(self) -> bool:
        return not self.errors

    def to_json(self) -> dict[str, Any]:
        return {
            "log_dir": self.log_dir,
            "format": self.format,
            "ok": self.ok,
            "start_offset": self.start_offset,
            "end_offset": self.end_offset,
            "segments": self.segments,
            "snapshots": self.snapshots,
            "batches": self.batches,
            "records": self.records,
            "errors": self.errors,
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
        check.segments = len(log.segment_paths)
        check.errors.extend(str(p) for p in log.problems)
        check.errors.extend(
            f"{log.directory / name}: not a file a metadata log directory holds"
            for name in log.unknown_files
            if not name.endswith(SUFFIX)  # misnamed segments are among the problems
        )
        check.warnings.extend(log.reconciled)
        if log.torn_tail is not None:
            check.warnings.append(
                f"{log.torn_tail} (a write cut short by a crash; the next writable open "
                "truncates it)"
            )
        snapshots = log.snapshots()
        check.snapshots = len(snapshots)
        if not snapshots and not log.segment_paths and not log.problems:
            check.errors.append(f"{log_dir}: no segments and no snapshots: not a metadata log")
            return check
        base: MetadataLoader | None = MetadataLoader() if log.start_offset == 0 else None
        for snap_id in snapshots:  # oldest first: the newest whole snapshot wins
            records = log.read_snapshot(snap_id)  # a batch at a time
            try:
                if log.start_offset > 0 and snap_id.end_offset >= log.start_offset:
                    base = MetadataLoader.from_snapshot(records, snap_id.end_offset, snap_id.epoch)
                else:
                    for _ in records:  # checked only
                        pass
            except CorruptLogError as exc:
                check.errors.append(str(exc))
        replaying = base is not None
        if base is None:
            check.errors.append(
                f"{log_dir}: the log starts at offset {log.start_offset} and no whole "
                "snapshot covers the offsets before it"
            )
            base = MetadataLoader()
        loader = base
        from_offset = max(loader.last_offset + 1, log.start_offset)
        try:
            for batch in log.read(from_offset):
                check.batches += 1
                check.records += len(batch.records)
                if replaying:
                    try:
                        loader.replay_all(
                            (batch.base_offset + i, batch.epoch, r)
                            for i, r in enumerate(batch.records)
                            if batch.base_offset + i >= from_offset
                        )
                    except RecordApplyError as exc:
                        check.errors.append(f"{log_dir}: {exc}")
                        replaying = False
        except CorruptLogError as exc:
            check.errors.append(str(exc))
        if isinstance(log, KafkaMetadataLog):
            check.warnings.extend(log.warnings)
            check.warnings.extend(f"skipped {s}" for s in log.skipped)
    if loader.open_transaction is not None:
        t = loader.open_transaction
        check.warnings.append(
            f"transaction {t.name!r} begun at offset {t.begin_offset} is still open "
            "(the next leader aborts it)"
        )
    check.metadata = loader.image
    check.image = loader.image.counts()
    return check
