"""What reading a metadata log needs, whichever format holds it.

:class:`~migration.log.metadata_log.MetadataLog` (the project's own log) and
:class:`~migration.kafka_log.directory.KafkaMetadataLog` (Kafka's ``__cluster_metadata``)
both offer it; the image, ``log verify`` and the audit read through it alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

from migration.log.batch import LogBatch
from migration.log.errors import CorruptLogError
from migration.log.snapshots import SnapshotId
from migration.proto.metadata_pb2 import MetadataRecord


class ReadableLog(Protocol):
    directory: Path
    format: str  # "zk2kraft" or "kafka"

    @property
    def problems(self) -> list[CorruptLogError]:
        """What makes the log unreadable past a point (corruption), oldest first."""

    @property
    def torn_tail(self) -> CorruptLogError | None:
        """A last write cut short by a crash (a warning: a writer cuts it)."""

    @property
    def reconciled(self) -> list[str]: ...

    @property
    def unknown_files(self) -> list[str]: ...

    @property
    def segment_paths(self) -> list[Path]: ...

    @property
    def start_offset(self) -> int: ...

    @property
    def end_offset(self) -> int: ...

    def read(self, from_offset: int | None = None) -> Iterator[LogBatch]:
        """Batches from the one holding ``from_offset``; CorruptLogError on bad bytes."""

    def records(self, from_offset: int | None = None) -> Iterator[tuple[int, int, MetadataRecord]]:
        """(offset, epoch, record) from ``from_offset`` on."""

    def snapshots(self) -> list[SnapshotId]:
        """Whole snapshots by name, oldest first."""

    def snapshot_path(self, snapshot_id: SnapshotId) -> Path: ...

    def read_snapshot(self, snapshot_id: SnapshotId) -> Iterator[MetadataRecord]:
        """A snapshot's records without header and footer; CorruptLogError when bad."""

    def close(self) -> None: ...
