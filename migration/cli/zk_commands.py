"""``zk2kraft zk ...``: start a real ZooKeeper, seed a Kafka cluster, export offsets."""

from __future__ import annotations

import argparse
import csv
import signal
import sys
import threading
import time
from dataclasses import fields, replace
from pathlib import Path

from migration.cli.output import EXIT_OK, CliError, print_json
from migration.observability.progress import for_stream
from migration.zk import seed
from migration.zk.client import ZkClient
from migration.zk.embedded import EmbeddedZooKeeper
from migration.zk.reader import read_snapshot


def add_zk_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--zk",
        "--zookeeper",
        dest="zk",
        required=True,
        metavar="HOST:PORT[/chroot]",
        help="the cluster's zookeeper.connect",
    )
    parser.add_argument(
        "--zk-connection-timeout-ms",
        dest="zk_timeout_ms",
        type=int,
        default=18_000,
        metavar="MS",
        help="zookeeper.connection.timeout.ms (default 18000)",
    )


def connect(args: argparse.Namespace) -> ZkClient:
    return ZkClient(args.zk, timeout_s=args.zk_timeout_ms / 1000)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    zk = sub.add_parser("zk", help="ZooKeeper tools: start, seed, export-offsets")
    zsub = zk.add_subparsers(dest="zk_command", required=True)

    start = zsub.add_parser("start", help="run a real ZooKeeper server (Ctrl-C stops it)")
    start.add_argument("--nodes", type=int, default=1, choices=(1, 3, 5))
    start.add_argument("--data-dir", type=Path, help="keep data here (default: a temp dir)")
    start.add_argument("--force-sync", action="store_true", help="fsync the transaction log")
    start.add_argument("--json", action="store_true")
    start.set_defaults(run=run_start)

    s = zsub.add_parser("seed", help="write a realistic Kafka cluster in Kafka's formats")
    add_zk_argument(s)
    s.add_argument("--profile", choices=sorted(seed.PROFILES), help="a preset size")
    for f in fields(seed.ClusterSpec):
        flag = "--" + f.name.replace("_", "-")
        if f.type in ("bool", bool):
            s.add_argument(flag, action="store_true", default=None)
        else:
            s.add_argument(flag, type=int, metavar="N")
    s.add_argument(
        "--hold",
        action="store_true",
        help="register brokers ephemerally and hold them until Ctrl-C, as live brokers do",
    )
    s.add_argument("--json", action="store_true")
    s.set_defaults(run=run_seed)

    e = zsub.add_parser(
        "export-offsets", help="dump legacy ZooKeeper-stored consumer offsets (CSV or JSON)"
    )
    add_zk_argument(e)
    e.add_argument("--json", action="store_true")
    e.set_defaults(run=run_export_offsets)


def run_start(args: argparse.Namespace) -> int:
    stop = _stop_on_signal()
    with EmbeddedZooKeeper(
        nodes=args.nodes, base_dir=args.data_dir, force_sync=args.force_sync
    ) as zk:
        info = {"connect": zk.connect_string, "nodes": args.nodes, "data_dir": str(zk.base_dir)}
        if args.json:
            print_json(info)
        else:
            print(f"ZooKeeper serving at {zk.connect_string} (data in {zk.base_dir}); Ctrl-C stops")
        sys.stdout.flush()
        stop.wait()
    return EXIT_OK


def _stop_on_signal() -> threading.Event:
    """An event SIGINT/SIGTERM set; install it before telling anyone the process is up."""
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    return stop


def spec_from_args(args: argparse.Namespace) -> seed.ClusterSpec:
    spec = seed.PROFILES[args.profile] if args.profile else seed.ClusterSpec()
    overrides = {
        f.name: getattr(args, f.name)
        for f in fields(seed.ClusterSpec)
        if getattr(args, f.name, None) is not None
    }
    try:
        return replace(spec, **overrides)
    except ValueError as exc:
        raise CliError(f"bad cluster size: {exc}") from None


def run_seed(args: argparse.Namespace) -> int:
    spec = spec_from_args(args)
    stop = _stop_on_signal() if args.hold else None
    started = time.monotonic()
    snap = seed.generate(spec)
    with connect(args) as client:
        written = seed.write(
            client,
            snap,
            ephemeral=args.hold,
            progress=for_stream(sys.stderr, enabled=not args.json),
        )
        elapsed = time.monotonic() - started
        summary = {
            "zk": args.zk,
            "znodes": written,
            "seconds": round(elapsed, 3),
            "znodes_per_second": round(written / elapsed) if elapsed else None,
            **snap.counts(),
        }
        if args.json:
            print_json(summary)
        else:
            print(
                f"seeded {written:,} znodes in {elapsed:.2f}s "
                f"({summary['znodes_per_second']:,}/s): {snap.counts()}"
            )
        if stop is not None:
            print("holding the brokers' registrations; Ctrl-C releases them", file=sys.stderr)
            stop.wait()
    return EXIT_OK


def run_export_offsets(args: argparse.Namespace) -> int:
    with connect(args) as client:
        snap = read_snapshot(client)
    rows = [
        {"group": o.group, "topic": o.topic, "partition": o.partition, "offset": o.offset}
        for o in snap.legacy_offsets
    ]
    if args.json:
        print_json(rows)
    else:
        writer = csv.DictWriter(sys.stdout, fieldnames=["group", "topic", "partition", "offset"])
        writer.writeheader()
        writer.writerows(rows)
    return EXIT_OK
