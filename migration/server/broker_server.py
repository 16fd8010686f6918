"""A broker process, ZooKeeper mode or KRaft mode (``process.roles=broker``): the broker's
parts, its listeners, and the Kafka way to stop (SIGTERM: controlled shutdown first,
then exit 0). A ZooKeeper-mode broker also serves the controller's RPCs on its
inter-broker listener; a KRaft broker reads the metadata log instead, and opens its
client listeners once the controller has unfenced it (caught up). Its metrics port
answers readiness (:mod:`.readiness`: registered, unfenced, serving) and liveness (the
asyncio loop serving Kafka running; a fault of a KRaft broker's Raft loop halts it).

A stop always ends: if the controlled shutdown and the closing of listeners and
sessions have not finished within its config's
:meth:`~migration.broker.config.BrokerConfig.stop_budget_s` of the signal (ZooKeeper and
the controllers both unreachable can hold a session's close or a controller's event
thread indefinitely), the process says so and exits with status 1."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import threading

from migration.broker.config import BrokerConfig
from migration.broker.kraft_broker import METADATA_LOG_DIR, KraftBroker
from migration.broker.zk_broker import ZkBroker
from migration.broker.zk_control_service import serve
from migration.controller.storage import broker_cluster_id
from migration.kafka.server import KafkaServer
from migration.observability.endpoint import MetricsServer
from migration.observability.health import running
from migration.raft.config import RaftConfig
from migration.server.broker_metrics import KraftBrokerCollector, ZkBrokerCollector
from migration.server.raft_manager import RaftManager
from migration.server.readiness import kraft_broker_readiness, zk_broker_readiness

log = logging.getLogger(__name__)


RAFT_REQUEST_TIMEOUT_MS = 2000  # a KRaft broker's requests to the controllers
UNFENCE_REPORT_S = 10.0  # how often a broker still fenced says so


async def run_broker(config: BrokerConfig) -> None:
    """Run until SIGTERM or SIGINT. Raises BrokerStartError / OSError / StorageError when
    it cannot start (nothing is left registered then). The metrics endpoint, if any,
    listens first: a port in use stops the broker before it starts anything."""
    metrics = None if config.metrics is None else MetricsServer(config.metrics, [])
    try:
        if config.kraft:
            await _run_kraft_broker(config, metrics)
        else:
            await _run_zk_broker(config, metrics)
    finally:
        if metrics is not None:
            metrics.close()


def _stop_event(config: BrokerConfig) -> asyncio.Event:
    """Set by SIGTERM or SIGINT; the first also arms the stop's deadline."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()

    def stopping() -> None:
        if not stop.is_set():
            _exit_unless_stopped_within(config.stop_budget_s(), config.broker_id)
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping)
    return stop


def _exit_unless_stopped_within(budget_s: float, broker_id: int) -> None:
    """A daemon timer: it dies with a process that stopped in time, and otherwise ends
    the process (interpreter exit waits on threads a blocked session may hold)."""

    def give_up() -> None:
        log.error(
            "broker %d did not stop within %g s of the signal (ZooKeeper or the controller "
            "unreachable?); exiting without finishing the shutdown",
            broker_id,
            budget_s,
        )
        logging.shutdown()
        os._exit(1)

    timer = threading.Timer(budget_s, give_up)
    timer.daemon = True
    timer.start()


def _serving(config: BrokerConfig, kafka: KafkaServer, mode: str) -> None:
    log.info(
        "broker %d (%s) serving Kafka clients on %s",
        config.broker_id,
        mode,
        ", ".join(f"{e.listener}:{kafka.bound[e.listener]}" for e in config.client_listeners()),
    )


def kraft_broker(config: BrokerConfig) -> KraftBroker:
    """A KRaft broker over its own Raft assembly: an observer of the quorum, its metadata
    log in ``__cluster_metadata-0`` beside ``meta.properties`` (a corrupt tail is cut and
    fetched again from the leader)."""
    cluster_id = broker_cluster_id(config.log_dir, config.broker_id)
    voters = config.controller_voters
    quorum = RaftManager(
        config.log_dir / METADATA_LOG_DIR,
        RaftConfig(node_id=config.broker_id, voters=frozenset(voters), cluster_id=cluster_id),
        voters,
        request_timeout_ms=RAFT_REQUEST_TIMEOUT_MS,
        repair_corrupt_tail=True,
        loop_name="raft-observer",
    )
    return KraftBroker(config, cluster_id, quorum)


async def _run_kraft_broker(config: BrokerConfig, metrics: MetricsServer | None) -> None:
    broker = kraft_broker(config)
    if metrics is not None:
        metrics.register(KraftBrokerCollector(broker))
    kafka = KafkaServer(broker, config.listener_settings())
    stop = _stop_event(config)
    serving = asyncio.Event()
    if metrics is not None:
        main = asyncio.get_running_loop()
        metrics.wire_health(
            lambda: kraft_broker_readiness(broker, serving.is_set(), stop.is_set()),
            lambda: running({"kafka": main.is_running()}),
        )
    try:
        broker.start()
        while not await asyncio.to_thread(broker.wait_unfenced, UNFENCE_REPORT_S):
            if stop.is_set():
                return
            log.info(
                "broker %d: still fenced (metadata offset %d); waiting for the controller",
                config.broker_id,
                broker.image().offset,
            )
        await kafka.start()
        serving.set()
        _serving(config, kafka, "KRaft mode")
        await stop.wait()
        log.info("broker %d shutting down", config.broker_id)
        if config.controlled_shutdown:
            await asyncio.to_thread(broker.controlled_shutdown)
    finally:
        await kafka.close()
        broker.stop()


async def _run_zk_broker(config: BrokerConfig, metrics: MetricsServer | None) -> None:
    broker = ZkBroker(config)
    if metrics is not None:
        metrics.register(ZkBrokerCollector(broker))
    internal = config.internal()
    control, _ = serve(broker, internal.host, internal.port)
    kafka = KafkaServer(broker, config.listener_settings())
    try:  # as Kafka: clients are served once the broker is registered and watching
        await asyncio.to_thread(broker.start)
        await kafka.start()
    except BaseException:
        control.stop(None)
        await kafka.close()
        broker.stop()
        raise
    stop = _stop_event(config)
    if metrics is not None:
        main = asyncio.get_running_loop()
        metrics.wire_health(
            lambda: zk_broker_readiness(broker, True, stop.is_set()),
            lambda: running({"kafka": main.is_running()}),
        )
    _serving(config, kafka, "ZooKeeper mode")
    await stop.wait()
    log.info("broker %d shutting down", config.broker_id)
    if config.controlled_shutdown:
        await asyncio.to_thread(broker.controlled_shutdown)
    await kafka.close()
    control.stop(1.0).wait()
    broker.stop()
