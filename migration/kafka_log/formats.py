"""Which format a metadata log directory is in, and opening it read-only.

``zk2kraft`` is the project's own log (:mod:`migration.log`), ``kafka`` a Kafka
controller's ``__cluster_metadata`` (:mod:`.directory`). ``auto`` tells them apart by
the first batch's magic byte (Kafka's record batch: 2 at byte 16; the project's frame:
1 at byte 8), else by Kafka's side files or the ``__cluster_metadata-0`` directory.
"""

from __future__ import annotations

import os
from pathlib import Path

from migration.common.text import shown
from migration.kafka_log.directory import SIDE_FILES, KafkaMetadataLog, metadata_dir
from migration.log.errors import CorruptLogError
from migration.log.files import open_regular, require_dir
from migration.log.metadata_log import MetadataLog
from migration.log.readable import ReadableLog
from migration.log.segment import parse_segment_name
from migration.log.snapshots import SnapshotId

FORMATS = ("auto", "zk2kraft", "kafka")
KAFKA_MAGIC_AT = 16
OWN_MAGIC_AT = 8


def _first_bytes(path: Path) -> bytes:
    fd = open_regular(path, os.O_RDONLY)
    try:
        return os.pread(fd, KAFKA_MAGIC_AT + 1, 0)
    finally:
        os.close(fd)


def detect_format(log_dir: Path) -> str:
    """``kafka`` or ``zk2kraft`` (FileNotFoundError without the directory)."""
    require_dir(log_dir)
    directory = metadata_dir(log_dir)
    if directory != log_dir:
        return "kafka"
    names = sorted(p.name for p in directory.iterdir())
    for name in names:
        if parse_segment_name(name) is None and SnapshotId.parse(name) is None:
            continue
        try:
            head = _first_bytes(directory / name)
        except CorruptLogError:  # not a regular file: the reader names it
            continue
        if len(head) > KAFKA_MAGIC_AT and head[KAFKA_MAGIC_AT] == 2:
            return "kafka"
        if len(head) > OWN_MAGIC_AT and head[OWN_MAGIC_AT] == 1:
            return "zk2kraft"
    return "kafka" if any(n in SIDE_FILES[1:] for n in names) else "zk2kraft"


def open_log(log_dir: Path, log_format: str = "auto", *, skip_unknown: bool = False) -> ReadableLog:
    """The log in ``log_dir``, read-only (nothing locked, cut or written)."""
    if log_format not in FORMATS:
        raise ValueError(f"log format {shown(log_format)}: one of {', '.join(FORMATS)}")
    if log_format == "auto":
        log_format = detect_format(log_dir)
    if log_format == "kafka":
        return KafkaMetadataLog(log_dir, skip_unknown=skip_unknown)
    return MetadataLog(log_dir, read_only=True)
