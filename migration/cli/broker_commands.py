"""``zk2kraft broker --config server.properties``: a broker, ZooKeeper mode or KRaft mode
(``process.roles=broker``)."""

from __future__ import annotations

import argparse
import asyncio

from migration.broker.config import BrokerConfig, load_broker_config
from migration.cli.output import (
    DATA_ERROR,
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_NOT_READY,
    EXIT_OK,
    IO_ERROR,
    error,
    exit_codes,
    prose,
    serving,
)
from migration.cli.shared_options import add_config_argument, with_config
from migration.controller.storage import StorageError


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    b = sub.add_parser(
        "broker",
        help="run a broker (metadata only): ZooKeeper mode, or KRaft with process.roles=broker",
        description=prose(
            """Runs one broker (metadata only: no produce or fetch) until SIGTERM or
            Ctrl-C, which first asks the controller to move leadership away (controlled
            shutdown). ZooKeeper mode: registers in /brokers/ids, runs for controller,
            serves Kafka's client protocol. KRaft mode (process.roles=broker, node.id):
            see docs/operations.md#finishing-kraft-mode-brokers-and-finalization. Every
            configuration problem is listed before anything starts (exit 2). See
            docs/configuration.md#a-zookeeper-mode-cluster."""
        ),
    )
    add_config_argument(b, "server.properties")
    exit_codes(
        b,
        {
            EXIT_OK: "stopped (controlled shutdown)",
            EXIT_NOT_READY: "did not stop within its shutdown budget",
            EXIT_ERROR: "a configuration or start-up problem: nothing started",
            EXIT_INTERRUPTED: "interrupted (Ctrl-C) while starting, before it serves",
        },
    )
    b.set_defaults(run=run)


@with_config(load_broker_config, "broker")
def run(args: argparse.Namespace, config: BrokerConfig) -> int:
    from migration.broker.zk_broker import BrokerStartError  # noqa: PLC0415 - kio: see migration.cli
    from migration.server.broker_server import run_broker  # noqa: PLC0415 - kio: see migration.cli

    try:
        serving(config.grpc_tls())
        asyncio.run(run_broker(config))
    except (BrokerStartError, StorageError, OSError) as exc:
        error(
            f"broker {config.broker_id}: {exc}",
            DATA_ERROR if isinstance(exc, StorageError) else IO_ERROR,
        )
        return EXIT_ERROR
    return EXIT_OK
