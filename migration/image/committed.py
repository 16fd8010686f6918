"""CommittedMetadata: a node's committed image, kept up with its metadata log.

It listens to Raft (``on_commit``, ``on_snapshot_installed``), replays every record
below the high watermark through the transaction-aware loader, and hands each
publication to the registered publishers, each on its own thread
(:mod:`.publishing`). It also takes the node's snapshots: every
``snapshot_bytes`` of committed records, when no transaction is open, followed by
retention (older snapshots and the segments they cover are deleted).

Threading: everything but the publishers and the snapshot writer runs on the Raft loop
thread, which owns the log. A snapshot is written from the (immutable) committed image
on a thread of its own, one at a time: a 1,000,000-partition image takes ~10 s to
encode, and a loop held that long answers no fetch, so the quorum would elect again;
the writer rests as long as it works, so it takes at most half the GIL.
The file appears whole or not at all (written aside, then renamed); retention runs
back on the loop once it is there, and a failed write is raised on the loop (the
process halts, as on any metadata-log I/O failure). A snapshot loaded (at start, or
installed from the leader) is published as a full-image change. Register it with Raft
*before* anything that reads its image on a commit (the quorum controller), so the
image is current when they look.

Metrics (Kafka's, read by a scrape from another thread): the last applied record's
offset, its batch's append time and the lag from that append to its replay here
(measured when it is applied, as Kafka does), and ``metadata_errors``: every record
that fails to replay (counted, then raised: the loop halts the process, as a Kafka
controller does on a metadata loading fault) and every publisher that raises (counted
and reported; later changes still arrive, as Kafka's publishing faults).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import nullcontext
from pathlib import Path

from migration.common.gc_pause import freeze_long_lived, gc_paused
from migration.image.loader import MetadataLoader, OpenTransaction
from migration.image.model import MetadataImage
from migration.image.publishing import (
    ImageChange,
    LoadManifest,
    MetadataPublisher,
    PublisherThread,
    log_publisher_error,
)
from migration.image.snapshot_records import image_records
from migration.log.metadata_log import MetadataLog
from migration.log.snapshots import SnapshotId, read_snapshot, write_snapshot
from migration.observability.samples import Tally
from migration.proto.metadata_pb2 import MetadataRecord

log = logging.getLogger(__name__)

DEFAULT_SNAPSHOT_BYTES = 20 * 1024 * 1024  # metadata.log.max.record.bytes.between.snapshots
# A snapshot writer rests as long as it worked, every SNAPSHOT_STEP_RECORDS records: it
# shares the GIL with the loop, and at a million partitions (~10 s of encoding, on every
# controller at the same offsets) the loop's events took seconds while one was written.
SNAPSHOT_STEP_RECORDS = 5_000
# A commit of this many records or more (a copy's batch, a follower catching up) is
# replayed with the collector paused, and what it leaves alive is frozen: replayed with
# the collector running, a million-partition copy left ~400,000 partitions a settle
# interval for each settle to walk (~0.2 s with every thread stopped, on each follower).
# Commits arrive in steps of raft.core.COMMIT_STEP_RECORDS, so this must not exceed it.
BULK_COMMIT_RECORDS = 1_000
_rest = time.sleep  # the writer's rest (a test's seam)


class CommittedMetadata:
    def __init__(
        self,
        metadata_log: MetadataLog,
        snapshot_bytes: int = DEFAULT_SNAPSHOT_BYTES,
        on_publisher_error: Callable[[MetadataPublisher, BaseException], None] | None = None,
    ) -> None:
        self.log = metadata_log
        self.snapshot_bytes = snapshot_bytes
        self._on_publisher_error = on_publisher_error
        self._threads: list[PublisherThread] = []
        self._loader = self._load_snapshot()
        self._bytes_since_snapshot = 0
        self._writing: _SnapshotWrite | None = None
        self.metadata_errors = Tally()
        self.last_applied_timestamp_ms = 0  # the last applied batch's append time; 0 none yet
        self.last_applied_lag_ms = 0  # its append until its replay here
        # The control records a snapshot ending at an offset carries after its header
        # (Raft's voter set in force there: migration.raft.voters); none until wired.
        self.snapshot_control: Callable[[int], list[MetadataRecord]] = lambda _end: []

    # --- what readers see (loop thread) --------------------------------------------------------

    @property
    def image(self) -> MetadataImage:
        """The last published image (records of an open transaction are not in it)."""
        return self._loader.image

    @property
    def last_offset(self) -> int:
        """The last offset replayed (published or inside an open transaction)."""
        return self._loader.last_offset

    @property
    def open_transaction(self) -> OpenTransaction | None:
        return self._loader.open_transaction

    # --- publishers ------------------------------------------------------------------------------

    def register(self, publisher: MetadataPublisher) -> None:
        """Add a publisher; it first receives the current image as a full-image change."""
        thread = PublisherThread(publisher, self._publisher_failed)
        self._threads.append(thread)
        image = self.image
        manifest = LoadManifest(image.offset, image.offset, image.epoch, from_snapshot=True)
        thread.submit(ImageChange(MetadataImage.EMPTY, image, None, manifest))

    def wait_published(self, timeout_s: float) -> bool:
        """Whether every publisher caught up with what was handed to it (tests, shutdown)."""
        return all(t.wait_idle(timeout_s) for t in self._threads)

    def close(self) -> None:
        for thread in self._threads:
            thread.close()
        self._threads = []
        self.wait_snapshot_written(None)  # a snapshot cut short is left aside, never used
        self._writing = None

    def wait_snapshot_written(self, timeout_s: float | None) -> bool:
        """Whether no snapshot is being written any more (its retention runs on the loop's
        next commit)."""
        writing = self._writing
        if writing is not None:
            writing.thread.join(timeout_s)
        return writing is None or not writing.thread.is_alive()

    def _publish(self, change: ImageChange) -> None:
        for thread in self._threads:
            thread.submit(change)

    def _publisher_failed(self, publisher: MetadataPublisher, exc: BaseException) -> None:
        """A publisher's thread: counted, then reported."""
        self.metadata_errors.add()
        (self._on_publisher_error or log_publisher_error)(publisher, exc)

    # --- RaftListener (loop thread) ---------------------------------------------------------------

    def on_leader_change(self, leader_id: int | None, epoch: int) -> None:
        pass

    def on_commit(self, high_watermark: int) -> None:
        start = self._loader.last_offset + 1
        if start >= high_watermark:
            return
        bulk = high_watermark - start >= BULK_COMMIT_RECORDS
        with gc_paused() if bulk else nullcontext():
            self._replay(start, high_watermark)
        self._maybe_snapshot()

    def _replay(self, start: int, high_watermark: int) -> None:
        try:
            for batch in self.log.read(start):
                for offset, record in enumerate(batch.records, batch.base_offset):
                    if start <= offset < high_watermark:
                        self._loader.replay(record, offset, batch.epoch)
                        self._bytes_since_snapshot += record.ByteSize()
                self.last_applied_lag_ms = int(time.time() * 1000) - batch.timestamp_ms
                self.last_applied_timestamp_ms = batch.timestamp_ms
                if batch.next_offset >= high_watermark:
                    break  # never decode the next batch (appended, not committed)
            self._loader.publish()
        except Exception:
            self.metadata_errors.add()  # raised on: the loop halts the process
            raise

    def on_snapshot_installed(self, snapshot_id: SnapshotId) -> None:
        previous = self.image
        self._loader = self._load_snapshot()
        self._bytes_since_snapshot = 0
        image = self.image
        manifest = LoadManifest(image.offset, image.offset, image.epoch, from_snapshot=True)
        self._publish(ImageChange(previous, image, None, manifest))

    # --- snapshots ------------------------------------------------------------------------------

    def _load_snapshot(self) -> MetadataLoader:
        """A loader on the latest snapshot's image (or an empty one), logged with its
        time: at a start, what a node replays before its log's tail."""
        latest = self.log.latest_snapshot()
        if latest is None:
            loader = MetadataLoader()
        else:
            started = time.monotonic()
            loader = MetadataLoader.from_snapshot(
                read_snapshot(self.log.snapshot_path(latest)), latest.end_offset, latest.epoch
            )
            log.info(
                "metadata image loaded from the snapshot at offset %d (epoch %d) in %.2f s "
                "(%d topics)", latest.end_offset, latest.epoch, time.monotonic() - started,
                len(loader.image.topics),
            )  # fmt: skip
        loader.hooks.append(self._publish)
        freeze_long_lived()  # the image just loaded: long-lived
        return loader

    def _maybe_snapshot(self) -> None:
        self._retain_written()
        if self._writing is not None or self._bytes_since_snapshot < self.snapshot_bytes:
            return
        if self._loader.open_transaction is not None:
            return
        image = self.image
        snapshot_id = SnapshotId(image.offset + 1, image.epoch)
        if snapshot_id.end_offset <= 0 or snapshot_id == self.log.latest_snapshot():
            return
        self.log.check_snapshot(snapshot_id)
        self._bytes_since_snapshot = 0
        control = self.snapshot_control(snapshot_id.end_offset)
        self._writing = _SnapshotWrite(self.log.directory, snapshot_id, image, control)

    def _retain_written(self) -> None:
        """Retention for the snapshot written on its thread, once it is there (loop)."""
        writing = self._writing
        if writing is None or writing.thread.is_alive():
            return
        self._writing = None
        if writing.error is not None:
            raise writing.error
        self.log.delete_snapshots_before(writing.snapshot_id)
        deleted = self.log.delete_segments_below(writing.snapshot_id.end_offset)
        log.info(
            "snapshot at offset %d, %d segment(s) deleted", writing.snapshot_id.end_offset, deleted
        )


class _SnapshotWrite:
    """One snapshot of ``image`` being written to ``directory`` on a thread of its own."""

    def __init__(
        self,
        directory: Path,
        snapshot_id: SnapshotId,
        image: MetadataImage,
        control: list[MetadataRecord],
    ) -> None:
        self.snapshot_id = snapshot_id
        self.control = control
        self.error: BaseException | None = None
        self.thread = threading.Thread(
            target=self._write, args=(directory, image), name="snapshot-writer", daemon=True
        )
        self.thread.start()

    def _write(self, directory: Path, image: MetadataImage) -> None:
        try:
            records = _half_the_time(image_records(image))
            write_snapshot(directory, self.snapshot_id, records, self.control)
        except BaseException as exc:  # raised on the loop by _retain_written
            self.error = exc


def _half_the_time(records: Iterator[MetadataRecord]) -> Iterator[MetadataRecord]:
    """``records``, sleeping after each SNAPSHOT_STEP_RECORDS as long as the step took
    (its consumer's encoding and writing included): the writer holds the GIL at most
    half the time."""
    started = time.monotonic()
    for count, record in enumerate(records, 1):
        yield record
        if count % SNAPSHOT_STEP_RECORDS == 0:
            _rest(time.monotonic() - started)
            started = time.monotonic()
