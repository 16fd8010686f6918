"""``zk2kraft log export --format kafka``: a log's image as a Kafka metadata directory.

``out`` receives what a Kafka controller's ``metadata.log.dir`` holds after it loaded a
snapshot: ``meta.properties`` (version 1), ``bootstrap.checkpoint`` (the finalized
feature levels, metadata.version first) and ``__cluster_metadata-0/`` with the
snapshot ``<end offset>-<epoch>.checkpoint`` and ``partition.metadata``.
``kafka-metadata-shell --snapshot`` and ``kafka-dump-log --cluster-metadata-decoder``
read the snapshot; zk2kraft's own reader reads the directory back to the same image.

The snapshot header's LastContainedLogTimestamp is -1: an image does not keep the
time of its last record.

Contract: ``out`` must be empty or absent (nothing is overwritten); the image is the
source's at ``offset`` (default: its end), read with :func:`~migration.image.at_offset.
image_at` (either format).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from migration.common.files import ensure_dir
from migration.image.at_offset import image_at
from migration.image.snapshot_records import image_records
from migration.kafka_log.directory import METADATA_PARTITION, metadata_dir
from migration.kafka_log.side_files import (
    meta_properties_text,
    partition_metadata_text,
    read_meta_properties,
)
from migration.kafka_log.writer import snapshot_batches, write_snapshot
from migration.log.snapshots import SnapshotId, write_whole
from migration.observability.progress import Progress
from migration.proto.metadata_pb2 import FeatureLevelRecord, MetadataRecord
from migration.records.uuids import new_uuid, uuid_text
from migration.records.versions import METADATA_VERSION

BOOTSTRAP_FILE = "bootstrap.checkpoint"


class ExportError(ValueError):
    """An export that cannot be made as asked (named cause)."""


@dataclass(frozen=True)
class Exported:
    out: Path
    snapshot: Path
    end_offset: int
    epoch: int
    records: int
    cluster_id: str


def _cluster_id(source: Path, given: str | None) -> str:
    if given:
        return given
    for where in (source, source.parent, metadata_dir(source).parent):
        props = read_meta_properties(where)
        if props and props.get("cluster.id"):
            return props["cluster.id"]
    raise ExportError(f"{source}: no meta.properties names the cluster: give --cluster-id")


def export_kafka(
    source: Path,
    out: Path,
    *,
    offset: int | None = None,
    cluster_id: str | None = None,
    node_id: int = 1,
    log_format: str = "auto",
    progress: Progress | None = None,
) -> Exported:
    if out.exists() and any(out.iterdir()):
        raise ExportError(f"{out}: not empty; export writes into a new directory")
    cluster = _cluster_id(source, cluster_id)
    at = image_at(source, offset, progress=progress, log_format=log_format)
    image = at.image
    snapshot_id = SnapshotId(image.offset + 1, image.epoch)
    partition_dir = out / METADATA_PARTITION
    ensure_dir(partition_dir)
    records = list(image_records(image))
    snapshot = write_snapshot(partition_dir, snapshot_id, records, last_contained_timestamp=-1)
    write_whole(partition_dir / "partition.metadata", [partition_metadata_text().encode()])
    levels = sorted(image.features.items(), key=lambda kv: (kv[0] != METADATA_VERSION, kv[0]))
    bootstrap = [
        MetadataRecord(feature_level_record=FeatureLevelRecord(name=name, feature_level=level))
        for name, level in levels
    ]
    write_whole(out / BOOTSTRAP_FILE, snapshot_batches(bootstrap, 0, last_contained_timestamp=0))
    text = meta_properties_text(cluster, node_id, uuid_text(new_uuid()))
    write_whole(out / "meta.properties", [text.encode()])
    return Exported(out, snapshot, snapshot_id.end_offset, snapshot_id.epoch, len(records), cluster)
