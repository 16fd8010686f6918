"""The metadata image at exactly one offset of a log directory, and the changes just
before it: what ZooKeeper must hold when ``/migration`` says it holds the log up to
that offset.

Read-only (no lock, nothing truncated): a running controller's log can be read. The
replay starts from the newest whole snapshot at or below the wanted offsets (or the
log's start at offset 0) and publishes batch by batch, as a controller's loader does,
so the offsets the ZooKeeper writer records are publication points here too.
"""

from __future__ import annotations

from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

from migration.common.text import shown
from migration.image.delta import RecordApplyError
from migration.image.loader import MetadataLoader
from migration.image.model import MetadataImage
from migration.image.publishing import ImageChange
from migration.kafka_log.directory import metadata_dir
from migration.kafka_log.formats import open_log
from migration.log.errors import LogError
from migration.log.files import require_dir
from migration.log.readable import ReadableLog
from migration.log.segment import SUFFIX
from migration.log.snapshots import list_snapshots
from migration.observability.progress import NullProgress, Progress


class ImageUnavailableError(LogError):
    """The log no longer (or not yet) holds the offset asked for; names both."""


@dataclass
class ImageAt:
    image: MetadataImage
    log_end_offset: int
    """The log's end (the next offset it would write), to say how far it moved on."""
    changes: list[ImageChange] = field(default_factory=list)
    """Publications after ``since`` up to the image (oldest first), when asked for, and
    with ``kafka_ahead`` those after it up to the log's end."""
    log_format: str = "zk2kraft"
    """The log's format: ``kafka`` when a Kafka controller wrote it."""


def image_at(
    log_dir: Path,
    offset: int | None,
    *,
    since: int | None = None,
    progress: Progress | None = None,
    log_format: str = "auto",
    kafka_ahead: bool = False,
) -> ImageAt:
    """The image of ``log_dir`` with every record up to ``offset`` (None: the whole
    log), and with ``since`` the publications in between ``since`` and ``offset``.
    Raises ImageUnavailableError when the log ends before ``offset`` or starts after
    ``since``/``offset`` without a snapshot that old, CorruptLogError or
    RecordApplyError when it cannot be read. ``log_format``: as
    :func:`~migration.kafka_log.formats.open_log` takes it. ``kafka_ahead``: for a log
    Kafka wrote, also the publications after ``offset`` up to the log's end (Kafka's
    writer puts changes in ZooKeeper before ``/migration`` names their offset); the
    image stays the one at ``offset``."""
    progress = progress or NullProgress()
    check_log_dir(log_dir)
    with closing(open_log(log_dir, log_format)) as log:
        if log.problems:
            raise log.problems[0]
        last = log.end_offset - 1 if offset is None else offset
        if last >= log.end_offset:
            raise ImageUnavailableError(
                f"{log_dir}: the log ends at offset {log.end_offset - 1}, before offset {last}"
            )
        start = min(last, since) if since is not None else last
        loader = _base(log, start)
        result = ImageAt(loader.image, log.end_offset, log_format=log.format)
        ahead = kafka_ahead and log.format == "kafka"
        window_from = since if since is not None else last if ahead else None
        if window_from is not None:
            loader.hooks.append(
                lambda change: (
                    result.changes.append(change) if change.image.offset > window_from else None
                )
            )
        progress.stage("replaying the log", last + 1 - (loader.last_offset + 1))
        first = max(loader.last_offset + 1, log.start_offset)
        if first <= last:
            for batch in log.read(first):
                records = [
                    (batch.base_offset + i, batch.epoch, r)
                    for i, r in enumerate(batch.records)
                    if first <= batch.base_offset + i <= last
                ]
                loader.replay_all(records)
                progress.advance(len(records))
                if batch.last_offset >= last:
                    break
        progress.done()
        result.image = loader.image
        if loader.open_transaction is not None:
            raise RecordApplyError(
                last,
                "?",
                f"offset {last} is inside transaction {shown(loader.open_transaction.name)} "
                f"(begun at offset {loader.open_transaction.begin_offset}): not an offset "
                "a controller publishes",
            )
        if ahead and last + 1 < log.end_offset:
            for batch in log.read(last + 1):
                loader.replay_all(
                    (batch.base_offset + i, batch.epoch, r)
                    for i, r in enumerate(batch.records)
                    if batch.base_offset + i > last
                )
        return result


def check_log_dir(log_dir: Path) -> None:
    """A look that reads no batch (opening a log checks every one): FileNotFoundError
    without the directory, ImageUnavailableError when it holds no segment and no
    snapshot."""
    require_dir(log_dir)
    directory = metadata_dir(log_dir)
    if not any(p.suffix == SUFFIX for p in directory.iterdir()) and not list_snapshots(directory):
        raise ImageUnavailableError(f"{log_dir}: no segments and no snapshots: not a metadata log")


def _base(log: ReadableLog, start: int) -> MetadataLoader:
    """A loader holding everything below ``start``'s batch: the newest snapshot ending
    at or before ``start``, else empty when the log begins at 0."""
    usable = [s for s in log.snapshots() if s.end_offset - 1 <= start and s.end_offset >= 0]
    for snap_id in reversed(usable):
        if snap_id.end_offset >= log.start_offset:
            records = log.read_snapshot(snap_id)  # a batch at a time
            return MetadataLoader.from_snapshot(records, snap_id.end_offset, snap_id.epoch)
    if log.start_offset == 0:
        return MetadataLoader()
    raise ImageUnavailableError(
        f"{log.directory}: the log starts at offset {log.start_offset} and no snapshot ends at or "
        f"before offset {start}: the image there can no longer be rebuilt (a newer "
        "snapshot replaced the records; audit again once ZooKeeper has caught up)"
    )
