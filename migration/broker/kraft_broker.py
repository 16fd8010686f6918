"""A KRaft-mode broker (``process.roles=broker``): the metadata log fetched as a Raft
observer and replayed into an image, a session with the quorum, and the same Kafka
client APIs a ZooKeeper-mode broker serves, answered from that image.

Contract:

- **Storage**: the cluster id comes from ``meta.properties`` in the first log dir (a
  ZooKeeper-mode run's version 0 is rewritten as version 1 with ``node.id``); the
  metadata log lives beside it in ``__cluster_metadata-0`` (a ZooKeeper-mode broker
  discards it when rolled back). Nothing of ZooKeeper is read or written.
- **Metadata**: a Raft observer (never a voter) fetches the committed log from the
  leader (snapshots too when it is far behind); the transaction-aware loader publishes
  images, so a copy still open is never visible.
- **Registration**: registers (a new incarnation id each start; the controller answers
  the broker epoch), heartbeats with its image's offset, and stays fenced until that
  offset reaches its registration; clients are served once it is unfenced. A migrating
  registration of the same id (its ZooKeeper-mode run) is replaced once that run's
  controlled shutdown fenced it.
- **Writes**: every admin request is forwarded to the active controller; a topic
  request answers once this broker's own image shows the result. ``validate_only`` is
  judged locally by the controller's handlers and writes nothing.
- **ISR**: as the leader of a partition whose ISR lacks a live replica (metadata-only
  followers are in sync once alive), it asks the controller to add it back
  (AlterPartition), after each image change.
- **Stop**: SIGTERM asks for a controlled shutdown (leadership moved, fenced) first.

Threading: the Raft loop owns the log; images arrive on the publisher thread and are
replaced whole (read from any thread); the session and the ISR work have their own
threads; the Kafka listeners call the Backend methods from worker threads.
"""

from __future__ import annotations

import heapq
import logging
import random
import threading
import time
from collections.abc import Callable, Collection
from typing import Any, Protocol

from migration.broker.admin_rules import AdminSettings, dry_run
from migration.broker.config import BrokerConfig
from migration.broker.forwarding import forward
from migration.broker.kraft_session import KraftSession
from migration.broker.short_isrs import ShortIsrs
from migration.common.kafka_errors import KafkaError, error_counts
from migration.controller.context import STEP_RECORDS
from migration.image.committed import CommittedMetadata
from migration.image.model import MetadataImage
from migration.image.publishing import ImageChange
from migration.proto import controller_pb2 as cpb
from migration.raft.node import RaftNode
from migration.records.uuids import uuid_bytes, uuid_text

log = logging.getLogger(__name__)

METADATA_TYPE_KRAFT = 3  # Kafka's MetadataType gauge
METADATA_LOG_DIR = "__cluster_metadata-0"


PROMISE_S = 30.0
"""How long a promise holds: a refusal describes the controller's pending state, which
a controller that loses its leadership may never commit."""


class Promises:
    """The partition epochs AlterPartition answers described that this broker's image
    has not reached yet. Asked again before the image has them, a request could only be
    refused (INVALID_UPDATE_VERSION), and each refusal is the controller's loop's time.
    Owned by one thread."""

    def __init__(self) -> None:
        self._given: dict[tuple[bytes, int], tuple[int, float]] = {}  # -> (epoch, when)

    def __len__(self) -> int:
        return len(self._given)

    def awaited(self, topic_id: bytes, index: int, partition_epoch: int) -> bool:
        """Whether an answer promised the partition a newer epoch than ``partition_epoch``."""
        found = self._given.get((topic_id, index))
        return found is not None and found[0] > partition_epoch

    def note(self, image: MetadataImage, answer: Any, now: float) -> None:
        """Each partition of ``answer`` (granted or refused, it describes the
        controller's state) whose partition epoch ``image`` has not reached."""
        for t in answer.topics:
            topic_id = uuid_bytes(t.topic_id)
            for p in t.partitions:
                key = (topic_id, p.partition_index)
                if p.partition_epoch > _partition_epoch(image, key):
                    self._given[key] = (p.partition_epoch, now)

    def settle(self, image: MetadataImage, now: float) -> None:
        """Forget what ``image`` has reached or no longer holds, and what is
        :data:`PROMISE_S` old (``now`` is ``time.monotonic()``)."""
        for key, (epoch, given) in list(self._given.items()):
            if _partition_epoch(image, key) >= epoch or now - given > PROMISE_S:
                del self._given[key]


def _partition_epoch(image: MetadataImage, key: tuple[bytes, int]) -> int:
    """The partition's epoch in ``image``; a partition it lacks has reached every
    promise (it is gone, or a later image brings it)."""
    topic = image.topics.get(key[0])
    partition = topic.partitions.get(key[1]) if topic is not None else None
    return partition.partition_epoch if partition is not None else 1 << 62


def live_brokers(image: MetadataImage) -> set[int]:
    """The brokers an ISR may hold: unfenced and not in controlled shutdown."""
    return {
        b for b, reg in image.brokers.items() if not reg.fenced and not reg.in_controlled_shutdown
    }


def follow(short: ShortIsrs[tuple[bytes, int]], change: ImageChange) -> None:
    """``short`` (as of ``change.previous``) brought to ``change.image``: the changed
    partitions only, or every one after a full-image change."""
    if change.delta is None:
        _index_whole(short, change.image)
        return
    for topic_id in change.delta.deleted_topics:
        for index in change.previous.topics[topic_id].partitions:
            short.put((topic_id, index), None)
    for topic_id, topic_delta in change.delta.topics.items():
        for index, p in topic_delta.partitions.items():
            short.put((topic_id, index), p)


def _index_whole(short: ShortIsrs[tuple[bytes, int]], image: MetadataImage) -> None:
    short.clear()
    for topic_id, topic in image.topics.items():
        for index, p in topic.partitions.items():
            short.put((topic_id, index), p)


def isr_to_expand(
    image: MetadataImage,
    broker_id: int,
    limit: int = STEP_RECORDS,
    promises: Promises | None = None,
    short: Collection[tuple[bytes, int]] | None = None,
) -> cpb.AlterPartitionRequest | None:
    """AlterPartition for the partitions ``broker_id`` leads whose ISR lacks a live
    (unfenced, not shutting down) replica, at most ``limit`` of them (the rest after the
    next image: the controller handles a request on its quorum's event loop, which must
    stay responsive), none of them awaiting a newer epoch ``promises`` hold; None when
    there are none. ``short``: those partitions as ``image``'s :class:`ShortIsrs` gives
    them for its live brokers (None: found by walking every partition of ``image``)."""
    promises = promises if promises is not None else Promises()
    live = live_brokers(image)
    if broker_id not in live:  # fenced or shutting down itself: the controller refuses it
        return None
    if short is None:
        whole: ShortIsrs[tuple[bytes, int]] = ShortIsrs(broker_id)
        _index_whole(whole, image)
        short = whole.of(live)
    request = cpb.AlterPartitionRequest(broker_id=broker_id)
    wanted: cpb.AlterPartitionTopic | None = None
    wanted_id, asked = b"", 0
    # the first in order: a step's worth, and each promise that may be skipped
    for topic_id, index in heapq.nsmallest(limit + len(promises), short):
        p = image.topics[topic_id].partitions[index]
        if promises.awaited(topic_id, index, p.partition_epoch):
            continue
        if asked == limit:
            break
        asked += 1
        if wanted is None or wanted_id != topic_id:
            wanted, wanted_id = request.topics.add(topic_id=uuid_text(topic_id)), topic_id
        wanted.partitions.add(
            partition_index=index,
            leader_epoch=p.leader_epoch,
            partition_epoch=p.partition_epoch,
            isr=[r for r in p.replicas if r in p.isr or r in live],
        )
    return request if request.topics else None


class MetadataQuorum(Protocol):
    """What a KRaft broker needs of its Raft assembly (an observer's: see
    :class:`migration.server.raft_manager.RaftManager`)."""

    @property
    def committed(self) -> CommittedMetadata: ...
    @property
    def raft(self) -> RaftNode: ...
    def start(self) -> None: ...
    def close(self) -> None: ...


class KraftBroker:
    """The broker's parts; :meth:`start` joins the quorum, :meth:`stop` ends it."""

    name = "kraft-broker"  # as an image publisher
    metadata_type = METADATA_TYPE_KRAFT

    def __init__(self, config: BrokerConfig, cluster_id: str, quorum: MetadataQuorum) -> None:
        self.config = config
        self.broker_id = config.broker_id
        self.metadata_version_max = config.metadata_version_max
        self.cluster_id = cluster_id
        self.settings = AdminSettings(config.num_partitions, config.default_replication_factor)
        self._image = MetadataImage.EMPTY
        self._changed = threading.Condition()
        self._isr_wanted = threading.Event()
        self._short: ShortIsrs[tuple[bytes, int]] = ShortIsrs(self.broker_id)  # _image's
        self._promises = Promises()  # the ISR thread's
        self._stopped = threading.Event()
        self.quorum = quorum
        self.session = KraftSession(
            config, self.cluster_id, lambda _: None, metadata_offset=lambda: self._image.offset
        )
        self._isr_thread = threading.Thread(target=self._isr_loop, name="isr", daemon=True)

    # --- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        self.quorum.committed.register(self)
        self.quorum.start()
        self.session.start()
        self._isr_thread.start()
        log.info(
            "broker %d: metadata type 3 (KRaft): fetching the metadata log from the quorum "
            "as an observer (cluster %s)",
            self.broker_id,
            self.cluster_id,
        )

    def wait_unfenced(self, timeout_s: float) -> bool:
        """Whether the controller unfenced this broker (caught up) within ``timeout_s``."""
        return self.wait(lambda _: not self.session.fenced, timeout_s)

    def controlled_shutdown(self) -> bool:
        done = self.session.controlled_shutdown()
        log.info(
            "broker %d: controlled shutdown through the KRaft controller %s",
            self.broker_id,
            "complete" if done else "failed",
        )
        return done

    def stop(self) -> None:
        self._stopped.set()
        self._isr_wanted.set()
        self.session.stop()
        self.quorum.close()

    # --- the image (publisher thread) --------------------------------------------------------

    def publish(self, change: ImageChange) -> None:
        with self._changed:
            follow(self._short, change)
            self._image = change.image
            self._changed.notify_all()
        self._isr_wanted.set()

    # --- the Backend of the Kafka APIs -------------------------------------------------

    def image(self) -> MetadataImage:
        return self._image

    def wait(self, predicate: Callable[[MetadataImage], bool], timeout_s: float) -> bool:
        """Whether ``predicate`` held of the image within ``timeout_s`` (rechecked on
        each publication and every 100 ms, for predicates on the session)."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while not predicate(self._image):
                left = deadline - time.monotonic()
                if left <= 0 or self._stopped.is_set():
                    return False
                self._changed.wait(min(left, 0.1))
            return True

    def controller_id(self) -> int:
        """A random live broker, as Kafka's KRaft brokers answer: every broker forwards."""
        live = sorted(b for b, reg in self._image.brokers.items() if not reg.fenced)
        return random.choice(live) if live else -1

    def write(self, method: str, request: Any, validate_only: bool, timeout_ms: int) -> Any:
        return forward(
            self.session,
            lambda m, r: dry_run(self._image, self.settings, m, r),
            self.wait,
            method,
            request,
            validate_only=validate_only,
            timeout_ms=timeout_ms,
        )

    # --- ISR expansion (this broker as a leader) -----------------------------------------

    def _isr_loop(self) -> None:
        while not self._stopped.is_set():
            self._isr_wanted.wait()
            self._isr_wanted.clear()
            if self._stopped.is_set() or self.session.fenced:
                continue
            with self._changed:  # the image and its index, together
                image = self._image
                short = self._short.of(live_brokers(image))
            self._promises.settle(image, time.monotonic())
            request = isr_to_expand(image, self.broker_id, promises=self._promises, short=short)
            if request is None:
                continue
            request.broker_epoch = self.session.epoch
            try:
                answer = self.session.call("AlterPartition", request, 30.0)
            except KafkaError as exc:  # retried on the next image change
                log.info("AlterPartition not answered (%s)", exc)
                continue
            self._promises.note(image, answer, time.monotonic())
            codes = [p.error_code for t in answer.topics for p in t.partitions if p.error_code]
            if codes:
                log.info(
                    "AlterPartition: %d partition errors %s (retried on the next change)",
                    len(codes),
                    error_counts(codes),
                )
