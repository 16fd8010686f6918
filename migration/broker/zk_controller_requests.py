"""A ZooKeeper-mode broker's requests to the controller (Kafka's AlterPartitionManager
and the controlled shutdown of KafkaServer): AlterPartition, to add live followers back
to the ISR of partitions led here, and ControlledShutdown, to move leadership away before
the broker stops.

Each goes to whichever controller owns the cluster: the KRaft controller (through the
:class:`~.kraft_session.KraftSession`) while one owns ``/controller`` and this broker
migrates; else the ZooKeeper controller, in-process when this broker is the active one,
over its inter-broker listener otherwise (:func:`controller_stub`).
Nothing here reads ZooKeeper, so a ZooKeeper outage holds a controlled shutdown no
longer than its retries' budget.

Threading: called on the broker's worker thread (AlterPartition) or the stopping thread
(ControlledShutdown); what it reads of the broker (the ``/controller`` owner, the KRaft
session, the controller this broker runs) is read through the callables given, at each
use.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import grpc

from migration.broker.config import BrokerConfig
from migration.broker.kraft_session import KraftSession
from migration.broker.zk_metadata_cache import MetadataCache
from migration.common import rpc
from migration.common.kafka_errors import error_counts
from migration.proto import broker_pb2 as bpb
from migration.proto import broker_pb2_grpc
from migration.zk.model.cluster import ControllerZnode
from migration.zkcontroller.controller import ZkController

log = logging.getLogger(__name__)

_CHANNELS: dict[str, grpc.Channel] = {}  # one per controller endpoint, for the process


def controller_stub(
    owner: ControllerZnode | None, cache: MetadataCache, listener: str
) -> broker_pb2_grpc.BrokerControlStub | None:
    """A stub to the current ZooKeeper controller (``owner``)'s ``listener``, found in
    the metadata cache as Kafka's brokers find it (None: no ZooKeeper controller, or not
    yet known to this broker with such a listener). Nothing is read from ZooKeeper, so a
    ZooKeeper outage cannot hold a caller (a controlled shutdown) here."""
    if owner is None or owner.is_kraft:
        return None
    known = cache.brokers().get(owner.broker_id)
    endpoints = known.endpoints if known is not None else ()
    endpoint = next((e for e in endpoints if e.name == listener), None)
    if endpoint is None:
        return None
    target = f"{endpoint.host}:{endpoint.port}"
    if target not in _CHANNELS:
        _CHANNELS[target] = rpc.channel(target)
    return broker_pb2_grpc.BrokerControlStub(_CHANNELS[target])


class ControllerRequests:
    """The requests of broker ``config.broker_id``, whose state is in ``cache``."""

    def __init__(
        self,
        config: BrokerConfig,
        cache: MetadataCache,
        *,
        owner: Callable[[], ControllerZnode | None],
        kraft: Callable[[], KraftSession | None],
        controller: Callable[[], ZkController | None],
    ) -> None:
        self.config = config
        self.broker_id = config.broker_id
        self.cache = cache
        self._owner = owner
        self._kraft = kraft
        self._controller = controller

    def kraft_owned(self) -> bool:
        """A KRaft controller owns ``/controller`` and this broker migrates to it."""
        owner = self._owner()
        return self._kraft() is not None and owner is not None and owner.is_kraft

    def alter_partition(self, wanted: list[bpb.PartitionState]) -> None:
        """Ask for the ISR changes ``wanted`` and apply what is answered to the cache;
        a controller that cannot be reached or refuses is asked again by the caller
        (with the next controller request)."""
        request = bpb.AlterPartitionRequest(
            broker_id=self.broker_id, broker_epoch=self.cache.broker_epoch, partitions=wanted
        )
        controller = self._controller()
        kraft = self._kraft()
        if self.kraft_owned():
            assert kraft is not None
            answer = kraft.alter_partition(request, self.cache.topics()[1])
            if answer is None:
                return
        elif controller is not None and controller.active:
            answer = controller.alter_partition(request)
        else:
            stub = controller_stub(self._owner(), self.cache, self.config.inter_broker_listener)
            if stub is None:
                return
            try:
                answer = stub.AlterPartition(request, timeout=30)
            except grpc.RpcError as exc:  # the controller moved or stopped: retried later
                log.info("AlterPartition not answered (%s); retried on the next change", exc.code())
                return
        self.cache.altered(list(answer.partitions))
        self.cache.refused(wanted, list(answer.partition_errors))
        if answer.error_code or answer.partition_errors:
            log.info(
                "AlterPartition for %d partitions: %s, %d partition errors %s (each asked "
                "again once its state or the live brokers change)",
                len(wanted),
                answer.error_message or "ok",
                len(answer.partition_errors),
                error_counts(e.error_code for e in answer.partition_errors),
            )

    def controlled_shutdown(self) -> bool:
        """Ask the controller to move leadership away; True once nothing is left led
        here. ``controlled.shutdown.max.retries`` attempts, each answered or given up
        within ``controller.socket.timeout.ms``: an unreachable controller or ZooKeeper
        holds the stop for at most their product."""
        kraft = self._kraft()
        if self.kraft_owned():
            assert kraft is not None
            done = kraft.controlled_shutdown()
            log.info(
                "broker %d: controlled shutdown through the KRaft controller %s",
                self.broker_id,
                "complete" if done else "failed",
            )
            return done
        request = bpb.ControlledShutdownRequest(
            broker_id=self.broker_id, broker_epoch=self.cache.broker_epoch
        )
        timeout_s = self.config.controller_socket_timeout_ms / 1000
        for attempt in range(self.config.controlled_shutdown_max_retries):
            try:
                controller = self._controller()
                if controller is not None and controller.active:
                    answer = controller.controlled_shutdown(request, timeout_s)
                else:
                    stub = controller_stub(
                        self._owner(), self.cache, self.config.inter_broker_listener
                    )
                    if stub is None:
                        time.sleep(0.5)
                        continue
                    answer = stub.ControlledShutdown(request, timeout=timeout_s)
            except Exception as exc:
                log.warning("controlled shutdown attempt %d failed: %s", attempt + 1, exc)
                time.sleep(0.5)
                continue
            if answer.error_code == 0 and not answer.remaining:
                log.info("broker %d: controlled shutdown complete", self.broker_id)
                return True
            log.info(
                "controlled shutdown: %d partitions still led here (%s)",
                len(answer.remaining),
                answer.error_message or "no other live ISR member",
            )
            time.sleep(0.5)
        return False
