"""A broker's session with the KRaft quorum: a ZooKeeper-mode broker's while it is
migrated (``zookeeper.metadata.migration.enable=true``), a KRaft-mode broker's always.
Registration, heartbeats, and the calls it makes to the active KRaft controller
(forwarded admin requests, AlterPartition, controlled shutdown).

Contract: the session registers (BrokerRegistration with its incarnation id, its
listeners, the metadata.version range it supports, and ``is_migrating_zk_broker`` for a
ZooKeeper-mode broker) and heartbeats every ``interval_s`` with the metadata offset its
image has reached (``metadata_offset``; a migrating ZooKeeper broker has no log and
sends -1): the controller unfences a KRaft broker once that offset reaches its
registration; a refused heartbeat (STALE_BROKER_EPOCH,
BROKER_ID_NOT_REGISTERED: a new controller lost its registration, or it was fenced
and replaced) registers again. An older incarnation still registered and unfenced
(DUPLICATE_BROKER_REGISTRATION) is waited out, as Kafka's brokers do. ``epoch`` is the
KRaft broker epoch (-1 until registered): the KRaft controller's requests carry it.

Threading: one daemon thread registers and heartbeats; :meth:`call` may be used from
any thread (the channels are shared).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from google.protobuf.message import Message

from migration.broker.config import SHUTDOWN_STALL_S, SHUTDOWN_TIMEOUT_S, BrokerConfig
from migration.common.kafka_errors import ErrorCode, KafkaError, error_name
from migration.controller.client import ControllerClient
from migration.proto import broker_pb2 as bpb
from migration.proto import controller_pb2 as cpb
from migration.records import versions
from migration.records.codes import SECURITY_PROTOCOLS
from migration.records.uuids import new_uuid, uuid_text

log = logging.getLogger(__name__)

HEARTBEAT_INTERVAL_S = 1.0  # Kafka's broker.heartbeat.interval.ms is 2000; sessions 9000
CALL_TIMEOUT_S = 5.0
SHUTDOWN_STEP_PAUSE_S = 0.05  # between them: the controller moves leaderships in steps
_REREGISTER = {ErrorCode.STALE_BROKER_EPOCH, ErrorCode.BROKER_ID_NOT_REGISTERED}


class KraftSession:
    def __init__(
        self,
        config: BrokerConfig,
        cluster_id: str,
        on_registered: Callable[[int], None],
        interval_s: float = HEARTBEAT_INTERVAL_S,
        *,
        metadata_offset: Callable[[], int] | None = None,
    ) -> None:
        """``metadata_offset`` None: a migrating ZooKeeper broker; else a KRaft broker's
        published image offset."""
        broker_id, rack, voters = config.broker_id, config.rack, config.controller_voters
        self.broker_id = broker_id
        self.cluster_id = cluster_id
        self.interval_s = interval_s
        self._on_registered = on_registered
        self._metadata_offset = metadata_offset
        self.migrating = metadata_offset is None
        self.client = ControllerClient(
            [str(a) for _, a in sorted(voters.items())],
            CALL_TIMEOUT_S,
            voters={v: str(a) for v, a in voters.items()},
        )
        self.incarnation_id = new_uuid()
        self.epoch = -1
        self.fenced = True
        self._registration = cpb.BrokerRegistrationRequest(
            broker_id=broker_id,
            cluster_id=cluster_id,
            incarnation_id=self.incarnation_id,
            is_migrating_zk_broker=self.migrating,
        )
        for e in config.advertised:
            self._registration.listeners.add(
                name=e.listener,
                host=e.host,
                port=e.port,
                security_protocol=SECURITY_PROTOCOLS.get(e.security_protocol, 0),
            )
        self._registration.features.add(
            name=versions.METADATA_VERSION,
            min_supported_version=versions.MIN_SUPPORTED_LEVEL,
            max_supported_version=config.metadata_version_max,
        )
        if rack is not None:
            self._registration.rack = rack
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kraft-session", daemon=True)

    def start(self) -> KraftSession:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        self.client.close()

    def call(self, method: str, request: Message, timeout_s: float) -> Any:
        """``method`` on the active KRaft controller (following NOT_CONTROLLER); raises
        KafkaError with Kafka's code when it cannot be answered."""
        return self.client.call(method, request, timeout_s)

    def alter_partition(
        self, request: bpb.AlterPartitionRequest, topic_ids: Mapping[str, bytes]
    ) -> bpb.AlterPartitionResponse | None:
        """A leader's AlterPartition (the ZooKeeper controller's form) to the KRaft
        controller: topics by id (``topic_ids``: name -> id), this session's broker epoch;
        the answer back in the ZooKeeper form. None when it could not be reached (retried
        on the next controller request)."""
        names: dict[str, str] = {}
        asked = cpb.AlterPartitionRequest(broker_id=self.broker_id, broker_epoch=self.epoch)
        by_topic: dict[str, cpb.AlterPartitionTopic] = {}
        for s in request.partitions:
            topic_id = topic_ids.get(s.topic_name)
            if topic_id is None:
                continue
            text = uuid_text(topic_id)
            names[text] = s.topic_name
            if text not in by_topic:
                by_topic[text] = asked.topics.add(topic_id=text)
            by_topic[text].partitions.add(
                partition_index=s.partition_index,
                leader_epoch=s.leader_epoch,
                partition_epoch=s.partition_epoch,
                isr=s.isr,
            )
        try:
            answer = self.call("AlterPartition", asked, 30.0)
        except KafkaError as exc:
            log.info("AlterPartition to the KRaft controller failed (%s); retried later", exc)
            return None
        out = bpb.AlterPartitionResponse()
        for t in answer.topics:
            for p in t.partitions:
                state = bpb.PartitionState(
                    topic_name=names.get(t.topic_id, ""),
                    partition_index=p.partition_index,
                    leader=p.leader_id,
                    leader_epoch=p.leader_epoch,
                    isr=p.isr,
                    partition_epoch=p.partition_epoch,
                    replicas=p.replicas,
                )
                if p.error_code:
                    out.partition_errors.add(
                        topic_name=state.topic_name,
                        partition_index=p.partition_index,
                        error_code=p.error_code,
                    )
                else:
                    out.partitions.append(state)
        return out

    def controlled_shutdown(
        self, budget_s: float = SHUTDOWN_TIMEOUT_S, stall_s: float = SHUTDOWN_STALL_S
    ) -> bool:
        """Ask the KRaft controller to move leadership away and fence this broker:
        heartbeats with want_shut_down, as Kafka's brokers send until told to shut down
        (the controller moves leaderships a step per heartbeat, so they follow each other
        closely). Gives up ``budget_s`` after the start, or ``stall_s`` after the last
        answer, whichever is first. True once it agreed."""
        if self.epoch < 0:
            return False
        self._stop.set()
        start = time.monotonic()
        answered = start
        while (left := min(start + budget_s, answered + stall_s) - time.monotonic()) > 0:
            try:
                answer = self._heartbeat(want_shut_down=True, timeout_s=left)
            except KafkaError as exc:
                log.warning("controlled shutdown through the KRaft controller: %s", exc)
                continue
            if answer.should_shut_down:
                return True
            answered = time.monotonic()
            time.sleep(SHUTDOWN_STEP_PAUSE_S)
        return False

    # --- the session thread -----------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                if self.epoch < 0:
                    self._register()
                else:
                    self._heartbeat()
            except KafkaError as exc:
                if exc.code in _REREGISTER:
                    log.info("broker %d: %s; registering again", self.broker_id, exc)
                    self.epoch = -1
                    continue
                log.info("broker %d: KRaft controller not reached (%s)", self.broker_id, exc)
            except Exception:
                log.exception("broker %d: KRaft session step failed", self.broker_id)
            self._stop.wait(self.interval_s)

    def _register(self) -> None:
        answer = self.client.call("BrokerRegistration", self._registration)
        if answer.error_code:
            raise KafkaError(ErrorCode(answer.error_code), "BrokerRegistration")
        self.epoch = answer.broker_epoch
        self._on_registered(self.epoch)
        log.info(
            "broker %d registered with the KRaft controller%s (broker epoch %d, incarnation %s)",
            self.broker_id,
            " as a migrating ZooKeeper broker" if self.migrating else "",
            self.epoch,
            uuid_text(self.incarnation_id),
        )
        self._heartbeat()

    def _heartbeat(
        self, want_shut_down: bool = False, timeout_s: float | None = None
    ) -> cpb.BrokerHeartbeatResponse:
        answer: cpb.BrokerHeartbeatResponse = self.client.call(
            "BrokerHeartbeat",
            cpb.BrokerHeartbeatRequest(
                broker_id=self.broker_id,
                broker_epoch=self.epoch,
                current_metadata_offset=(
                    -1 if self._metadata_offset is None else self._metadata_offset()
                ),
                want_shut_down=want_shut_down,
            ),
            timeout_s,
        )
        if answer.error_code:
            raise KafkaError(
                ErrorCode(answer.error_code), f"BrokerHeartbeat: {error_name(answer.error_code)}"
            )
        if answer.is_fenced != self.fenced:
            log.info(
                "broker %d is %s by the KRaft controller",
                self.broker_id,
                "fenced" if answer.is_fenced else "unfenced",
            )
        self.fenced = answer.is_fenced
        return answer
