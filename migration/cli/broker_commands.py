"""``zk2kraft broker --config server.properties``: a broker, ZooKeeper mode or KRaft mode
(``process.roles=broker``)."""

from __future__ import annotations

import argparse
import asyncio
import logging
from pathlib import Path

from migration import rpc
from migration.broker.config import BrokerConfigError, load_broker_config
from migration.cli.output import EXIT_ERROR, EXIT_OK, error, report_config_problems
from migration.controller.storage import StorageError


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    b = sub.add_parser(
        "broker",
        help="run a broker (metadata only): ZooKeeper mode, or KRaft with process.roles=broker",
    )
    b.add_argument("--config", type=Path, required=True, help="server.properties")
    b.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from migration.broker.process import run_broker  # noqa: PLC0415 - kio: see migration.cli
    from migration.broker.zk_broker import BrokerStartError  # noqa: PLC0415 - kio: see migration.cli

    try:
        config = load_broker_config(args.config)
    except BrokerConfigError as exc:
        return report_config_problems(exc, "broker")
    if logging.getLogger().level > logging.INFO:
        logging.getLogger().setLevel(logging.INFO)
    try:
        rpc.use_tls(config.grpc_tls())
        asyncio.run(run_broker(config))
    except (BrokerStartError, StorageError, OSError) as exc:
        error(f"broker {config.broker_id}: {exc}")
        return EXIT_ERROR
    return EXIT_OK
