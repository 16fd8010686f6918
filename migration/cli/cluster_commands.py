"""``zk2kraft cluster start``: a local ZooKeeper-mode cluster in one line."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from migration.cli.output import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    CliError,
    exit_codes,
    print_json_line,
    prose,
)
from migration.common.text import shown


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    c = sub.add_parser("cluster", help="a local ZooKeeper-mode cluster of broker processes")
    csub = c.add_subparsers(dest="cluster_command", required=True, metavar="COMMAND")
    s = csub.add_parser(
        "start",
        help="write a server.properties per broker and run them",
        description=prose(
            """Writes a server.properties per broker into DIR and runs the brokers as
            child processes until Ctrl-C or SIGTERM (then stops them with a controlled
            shutdown). Prints the brokers' addresses (for `admin --bootstrap-server`;
            `bootstrap_servers` with --json) once every broker answers Metadata."""
        ),
    )
    s.add_argument("--zk", required=True, metavar="CONNECT", help="zookeeper.connect")
    s.add_argument("--brokers", type=int, default=3, metavar="N", help="how many (ids 1..N)")
    s.add_argument(
        "--broker-ids", metavar="IDS", help="the ids instead, e.g. a seeded tree's: 1,2,3"
    )
    s.add_argument(
        "--dir", type=Path, required=True, metavar="DIR", help="configs, log dirs, broker logs"
    )
    s.add_argument(
        "--base-port",
        type=int,
        metavar="P",
        help="broker i listens on P+2i (Kafka), P+2i+1 (default: free ports)",
    )
    s.add_argument(
        "--property", action="append", default=[], metavar="K=V", help="for every broker"
    )
    s.add_argument(
        "--json", action="store_true", help="print the cluster as one JSON line when ready"
    )
    exit_codes(
        s,
        {
            EXIT_OK: "stopped (Ctrl-C or SIGTERM)",
            EXIT_INTERRUPTED: "interrupted (Ctrl-C) before the brokers started",
        },
    )
    s.set_defaults(run=run_start)


def run_start(args: argparse.Namespace) -> int:
    from migration.local.cluster import LocalCluster  # noqa: PLC0415 - kio: see migration.cli

    if args.broker_ids:
        try:
            ids = [int(x) for x in args.broker_ids.split(",") if x.strip()]
        except ValueError:
            raise CliError(f"--broker-ids {shown(args.broker_ids)} is not a list of ids") from None
    else:
        if args.brokers < 1:
            raise CliError("--brokers must be at least 1")
        ids = list(range(1, args.brokers + 1))
    props = {}
    for item in args.property:
        key, eq, value = item.partition("=")
        if not eq:
            raise CliError(f"--property {shown(item)} is not K=V")
        props[key.strip()] = value.strip()
    cluster = LocalCluster(args.zk, ids, args.dir, args.base_port, props)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    cluster.start()
    try:
        cluster.wait_ready(120)
        if args.json:  # one line, flushed: a script reads it while the cluster runs
            print_json_line(
                {
                    "bootstrap_servers": cluster.bootstrap,
                    "brokers": {
                        b: {"port": c.port, "config": str(c.config), "log": str(c.log)}
                        for b, c in cluster.brokers.items()
                    },
                }
            )
        else:
            print(f"{len(ids)} brokers ready: --bootstrap-server {cluster.bootstrap}")
            print(f"configs and logs in {args.dir}; Ctrl-C stops them (controlled shutdown)")
            sys.stdout.flush()
        while not stop.wait(0.5):
            pass
    finally:
        cluster.stop()
    return EXIT_OK
