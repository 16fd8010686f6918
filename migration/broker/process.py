"""A broker process, ZooKeeper mode or KRaft mode (``process.roles=broker``): the broker's
parts, its listeners, and the Kafka way to stop (SIGTERM: controlled shutdown first,
then exit 0). A ZooKeeper-mode broker also serves the controller's RPCs on its
inter-broker listener; a KRaft broker reads the metadata log instead, and opens its
client listeners once the controller has unfenced it (caught up)."""

from __future__ import annotations

import asyncio
import logging
import signal

from migration.broker.config import BrokerConfig
from migration.broker.control_service import serve
from migration.broker.kafka_server import KafkaServer
from migration.broker.kraft_broker import KraftBroker
from migration.broker.zk_broker import ZkBroker
from migration.observability.broker_metrics import KraftBrokerCollector, ZkBrokerCollector
from migration.observability.endpoint import MetricsServer

log = logging.getLogger(__name__)


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


def _stop_event() -> asyncio.Event:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    return stop


def _serving(config: BrokerConfig, kafka: KafkaServer, mode: str) -> None:
    log.info(
        "broker %d (%s) serving Kafka clients on %s",
        config.broker_id,
        mode,
        ", ".join(f"{e.listener}:{kafka.bound[e.listener]}" for e in config.client_listeners()),
    )


async def _run_kraft_broker(config: BrokerConfig, metrics: MetricsServer | None) -> None:
    broker = KraftBroker(config)
    if metrics is not None:
        metrics.register(KraftBrokerCollector(broker))
    kafka = KafkaServer(broker, config)
    stop = _stop_event()
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
    kafka = KafkaServer(broker, config)
    try:  # as Kafka: clients are served once the broker is registered and watching
        await asyncio.to_thread(broker.start)
        await kafka.start()
    except BaseException:
        control.stop(None)
        await kafka.close()
        broker.stop()
        raise
    stop = _stop_event()
    _serving(config, kafka, "ZooKeeper mode")
    await stop.wait()
    log.info("broker %d shutting down", config.broker_id)
    if config.controlled_shutdown:
        await asyncio.to_thread(broker.controlled_shutdown)
    await kafka.close()
    control.stop(1.0).wait()
    broker.stop()
