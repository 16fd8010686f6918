"""``zk2kraft broker --config server.properties``: a broker, ZooKeeper mode or KRaft mode
(``process.roles=broker``); ``zk2kraft broker-mode``: its config rewritten for the next
step of the migration (:mod:`migration.broker.modes`)."""

from __future__ import annotations

import argparse
import asyncio
import logging
from pathlib import Path

from migration.broker.config import BrokerConfigError, load_broker_config, parse_broker_config
from migration.broker.modes import Mode, rewrite
from migration.broker.process import run_broker
from migration.broker.zk_broker import BrokerStartError
from migration.cli.output import (
    EXIT_ERROR,
    EXIT_OK,
    CliError,
    error,
    print_json,
    report_config_problems,
)
from migration.controller.storage import StorageError
from migration.properties import read_properties, render_properties


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    b = sub.add_parser(
        "broker",
        help="run a broker (metadata only): ZooKeeper mode, or KRaft with process.roles=broker",
    )
    b.add_argument("--config", type=Path, required=True, help="server.properties")
    b.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        config = load_broker_config(args.config)
    except BrokerConfigError as exc:
        return report_config_problems(exc, "broker")
    if logging.getLogger().level > logging.INFO:
        logging.getLogger().setLevel(logging.INFO)
    try:
        asyncio.run(run_broker(config))
    except (BrokerStartError, StorageError) as exc:
        error(f"broker {config.broker_id}: {exc}")
        return EXIT_ERROR
    return EXIT_OK


def register_mode(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    m = sub.add_parser(
        "broker-mode",
        help="rewrite a broker's server.properties for a migration step (zookeeper, "
        "migrating, kraft)",
    )
    m.add_argument("--config", type=Path, required=True, help="server.properties (rewritten)")
    m.add_argument("--to", required=True, choices=[x.value for x in Mode])
    m.add_argument("--zk", metavar="CONNECT", help="zookeeper.connect (to leave KRaft mode)")
    m.add_argument("--controller-quorum-voters", metavar="ID@HOST:PORT,...")
    m.add_argument("--dry-run", action="store_true", help="show the changes; write nothing")
    m.add_argument("--json", action="store_true")
    m.set_defaults(run=run_mode)


def run_mode(args: argparse.Namespace) -> int:
    before = read_properties(args.config)
    try:
        after = rewrite(
            before, Mode(args.to), zk_connect=args.zk, voters=args.controller_quorum_voters
        )
    except ValueError as exc:
        raise CliError(str(exc)) from None
    try:
        parse_broker_config(after, f"{args.config} as rewritten")
    except BrokerConfigError as exc:
        return report_config_problems(exc, "broker")
    removed = sorted(k for k in before if k not in after)
    added = {k: v for k, v in after.items() if k not in before}
    changed = {k: v for k, v in after.items() if k in before and before[k] != v}
    if not args.dry_run:
        tmp = args.config.with_name(args.config.name + ".tmp")
        tmp.write_text(render_properties(after, f"zk2kraft broker-mode --to {args.to}"))
        tmp.replace(args.config)
    report = {
        "config": str(args.config),
        "mode": args.to,
        "dry_run": args.dry_run,
        "removed": removed,
        "added": added,
        "changed": changed,
    }
    if args.json:
        print_json(report)
    else:
        verb = "Would rewrite" if args.dry_run else "Rewrote"
        print(f"{verb} {args.config} for {args.to} mode")
        for k in removed:
            print(f"  - {k}")
        for k, v in {**added, **changed}.items():
            print(f"  + {k}={v}")
    return EXIT_OK
