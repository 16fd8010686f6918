"""Both stores read at the same offset: ZooKeeper once (``/migration`` just before and
just after: its offset says which log offset ZooKeeper holds; without it, a dry run and
the whole log), and the image at exactly that offset, replayed from a controller's
``--log-dir`` or from the quorum's log fetched into the driver's own temporary
directory; each side as an :class:`~migration.audit.rows.Exporter` by the same rules
(the controller epoch partition states may name, the entity kinds the metadata.version
leaves in ZooKeeper).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from migration.audit.errors import AuditError
from migration.audit.in_flight import in_flight_digests
from migration.audit.options import AuditOptions
from migration.audit.rows import Exporter, Hasher
from migration.bridge.mirror import ImageView, SnapshotView
from migration.image.at_offset import ImageAt, image_at
from migration.image.model import MetadataImage
from migration.log.metadata_log import FlushPolicy, MetadataLog
from migration.observability.progress import Progress
from migration.raft.log_fetch import fetch_log
from migration.records.versions import IBP_3_5_IV2, IBP_3_6_IV2, METADATA_VERSION
from migration.zk import paths
from migration.zk.client import ZkClient
from migration.zk.fence import read_migration
from migration.zk.multiread import TreeReader
from migration.zk.reader import read_snapshot
from migration.zk.tree_read import ZkSnapshot
from migration.zkfiles.datadir import ZkDataDirError, open_data_dir
from migration.zkfiles.datatree import OfflineTree

log = logging.getLogger(__name__)


@dataclass
class ZkRead:
    snapshot: ZkSnapshot
    offset: int | None
    """``/migration``'s offset after the read; None without ``/migration``."""
    since: int | None
    """``/migration``'s offset before the read, when it moved during it."""
    kraft_epoch: int = -1
    """``/migration``'s KRaft controller epoch (-1 without it)."""


def _open_zookeeper(options: AuditOptions, progress: Progress) -> ZkClient | OfflineTree:
    if options.zk_data_dirs:
        try:
            return open_data_dir(options.zk_data_dirs, options.zk_chroot, progress)
        except ZkDataDirError as exc:
            raise AuditError(str(exc)) from None
    return ZkClient(options.zk, timeout_s=options.zk_timeout_s, security=options.zk_security)


def read_zookeeper(client: TreeReader, progress: Progress) -> ZkRead:
    before = read_migration(client)
    snap = read_snapshot(client, progress)
    after = read_migration(client)
    if snap.malformed:
        first = snap.malformed[0]
        raise AuditError(
            f"ZooKeeper holds malformed data: {first} ({len(snap.malformed)} malformed "
            "znode(s) in all; zk2kraft preflight lists them)"
        )
    if after is None:
        return ZkRead(snap, None, None)
    offset = after[0].kraft_metadata_offset
    if offset < 0:
        raise AuditError(
            f"{paths.MIGRATION} says the initial copy has not completed (offset {offset}): "
            "ZooKeeper holds no log offset yet to compare with"
        )
    since = None
    if before is not None and before[1] != after[1] and before[0].kraft_metadata_offset >= 0:
        since = before[0].kraft_metadata_offset  # the writer wrote behind during the read
    return ZkRead(snap, offset, since, after[0].kraft_controller_epoch)


@dataclass
class Sides:
    read: ZkRead
    zk: Exporter
    kraft: Exporter
    at: ImageAt
    excluded: frozenset[str]
    in_flight: list[tuple[str, str, int]]
    timings: dict[str, float]


def read_sides(
    options: AuditOptions,
    progress: Progress,
    tmp: Path,
    jvm_launched: threading.Event | None = None,
) -> Sides:
    """Both stores read at the same offset, as exporters (``tmp``: where a log fetched
    from the quorum is kept; ``jvm_launched``: awaited before the fetch opens a gRPC
    channel, see :func:`_from_quorum`)."""
    timings: dict[str, float] = {}
    t = time.monotonic()
    with _open_zookeeper(options, progress) as tree:
        zk_read = read_zookeeper(tree, progress)
    timings["read_zookeeper"] = time.monotonic() - t
    snap = zk_read.snapshot
    t = time.monotonic()
    if options.log_dir is not None:
        at = image_at(
            options.log_dir,
            zk_read.offset,
            since=zk_read.since,
            progress=progress,
            kafka_ahead=zk_read.offset is not None,
        )
    else:
        at = _from_quorum(options, zk_read, tmp, progress, jvm_launched)
    timings["replay_log"] = time.monotonic() - t
    epoch = epoch_bound(zk_read, at.log_format)
    secret = options.password_encoder_secret
    excluded = frozenset(snap.pending_deletions - at.image.topic_ids.keys())
    gated = version_gated(at.image)
    hasher = Hasher()

    kafka = at.log_format == "kafka"

    def exporter_for(image: MetadataImage) -> Exporter:
        view = ImageView(image, epoch, secret)
        return Exporter(view, hasher, epoch, excluded, excluded_kinds=gated, kafka_rules=kafka)

    return Sides(
        zk_read,
        Exporter(
            SnapshotView(snap, secret),
            hasher,
            epoch,
            excluded,
            excluded_kinds=gated,
            kafka_rules=kafka,
        ),
        exporter_for(at.image),
        at,
        excluded,
        list(in_flight_digests(at.changes, exporter_for)),
        timings,
    )


def _from_quorum(
    options: AuditOptions,
    zk_read: ZkRead,
    tmp: Path,
    progress: Progress,
    jvm_launched: threading.Event | None,
) -> ImageAt:
    """The image at ZooKeeper's offset from the quorum's log, fetched into ``tmp``.

    PySpark launches its JVM by forking this process (``preexec_fn``: a real fork, not
    posix_spawn). A fork while gRPC's threads and epoll set are live leaves the child
    in gRPC's fork handlers, which may fail it (an epoll error, then Spark's
    JAVA_GATEWAY_EXITED); so the fetch's first channel waits for ``jvm_launched``."""
    if not options.bootstrap:
        raise AuditError("give the metadata log: --log-dir DIR or --bootstrap-controller HOST:PORT")
    cluster = zk_read.snapshot.cluster_id
    if cluster is None:
        raise AuditError(f"ZooKeeper has no {paths.CLUSTER_ID}: not a Kafka cluster's tree")
    if jvm_launched is not None:
        jvm_launched.wait()
    log.info("fetching the log from the quorum")
    progress.stage("fetching the log", 0)
    with MetadataLog(tmp / "log", flush=FlushPolicy.never()) as copy:
        fetched = fetch_log(options.bootstrap, cluster.id, copy, zk_read.offset)
    progress.done()
    at = image_at(tmp / "log", zk_read.offset, since=zk_read.since, progress=progress)
    at.log_end_offset = fetched.high_watermark
    return at


def epoch_bound(zk_read: ZkRead, log_format: str) -> int:
    """The controller epoch partition states may name: ``/controller_epoch``'s; for a log
    Kafka wrote, also ``/migration``'s KRaft epoch -- Kafka's migration writes partition
    states with its Raft epoch, which may be above ``/controller_epoch``."""
    snap = zk_read.snapshot
    epoch = snap.controller_epoch.value if snap.controller_epoch is not None else 0
    return max(epoch, zk_read.kraft_epoch) if log_format == "kafka" else epoch


VERSION_GATED = {"scram_credential": IBP_3_5_IV2, "delegation_token": IBP_3_6_IV2}
"""Entity kinds KRaft holds only from a metadata.version on: below it a migration (Kafka's
or this one) leaves them in ZooKeeper, and comparing them would be no finding."""


def version_gated(image: MetadataImage) -> frozenset[str]:
    level = image.features.get(METADATA_VERSION)
    if level is None:
        return frozenset()
    return frozenset(kind for kind, needed in VERSION_GATED.items() if level < needed)
