"""A ZooKeeper-mode broker process: the broker's parts, its two kinds of listener, and
the Kafka way to stop (SIGTERM: controlled shutdown first, then exit 0)."""

from __future__ import annotations

import asyncio
import logging
import signal

from migration.broker.config import BrokerConfig
from migration.broker.control_service import serve
from migration.broker.kafka_server import KafkaServer
from migration.broker.zk_broker import ZkBroker

log = logging.getLogger(__name__)


async def run_broker(config: BrokerConfig) -> None:
    """Run until SIGTERM or SIGINT. Raises BrokerStartError / OSError when it cannot
    start (nothing is left registered then)."""
    broker = ZkBroker(config)
    internal = config.internal()
    control, _ = serve(broker, internal.host, internal.port)
    kafka = KafkaServer(broker, config.client_listeners(), config.socket_request_max_bytes)
    try:  # as Kafka: clients are served once the broker is registered and watching
        await asyncio.to_thread(broker.start)
        await kafka.start()
    except BaseException:
        control.stop(None)
        await kafka.close()
        broker.stop()
        raise
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    log.info(
        "broker %d serving Kafka clients on %s",
        config.broker_id,
        ", ".join(f"{e.listener}:{kafka.bound[e.listener]}" for e in config.client_listeners()),
    )
    await stop.wait()
    log.info("broker %d shutting down", config.broker_id)
    if config.controlled_shutdown:
        await asyncio.to_thread(broker.controlled_shutdown)
    await kafka.close()
    control.stop(1.0).wait()
    broker.stop()
