"""``zk2kraft kafka plan``: the migration of a real Apache Kafka 3.9 cluster, described
by an inventory (:mod:`migration.operate.inventory`), as the concrete steps it takes --
each properties file's exact diff, each command, each gate and what it waits for, and
the rolls' estimated duration. Reads the files and ZooKeeper; changes nothing. Exit 0:
ready to start; 1: problems to fix first (listed)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from migration.cli.output import EXIT_NOT_READY, EXIT_OK, exit_codes, print_json
from migration.observability.progress import for_stream
from migration.operate.inventory import load_inventory
from migration.operate.plan import build_plan, render_text
from migration.operate.reading import read_cluster, read_files


def _seconds(text: str) -> float:
    value = float(text)
    if not 0 < value < 86_400:
        raise argparse.ArgumentTypeError(f"{text} is not a number of seconds in (0, 86400)")
    return value


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    k = sub.add_parser("kafka", help="drive a real Apache Kafka 3.9 cluster's own migration")
    ksub = k.add_subparsers(dest="kafka_command", required=True, metavar="COMMAND")
    p = ksub.add_parser(
        "plan", help="the migration as concrete steps for this cluster (changes nothing)"
    )
    p.add_argument(
        "--inventory", type=Path, required=True, metavar="FILE",
        help="the cluster's inventory (TOML: ZooKeeper, brokers, controllers; see "
        "docs/kafka-clusters.md)",
    )  # fmt: skip
    p.add_argument(
        "--broker-restart-seconds", type=_seconds, metavar="S",
        help="one of your brokers' restart, timed (log recovery included): the estimate's T_broker",
    )  # fmt: skip
    p.add_argument(
        "--controller-restart-seconds", type=_seconds, metavar="S",
        help="a controller's restart: the estimate's T_controller",
    )  # fmt: skip
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")
    exit_codes(p, {EXIT_OK: "the plan is ready to run", EXIT_NOT_READY: "problems to fix first"})
    p.set_defaults(run=run_plan)


def run_plan(args: argparse.Namespace) -> int:
    inv = load_inventory(args.inventory)
    cluster = read_cluster(inv, for_stream(sys.stderr, enabled=not args.json))
    plan = build_plan(
        inv,
        read_files(inv),
        cluster,
        broker_restart_s=args.broker_restart_seconds,
        controller_restart_s=args.controller_restart_seconds,
    )
    if args.json:
        print_json(plan.to_json())
    else:
        sys.stdout.write(render_text(plan))
    return EXIT_OK if plan.ready else EXIT_NOT_READY
