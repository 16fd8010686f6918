"""``zk2kraft demo``: a real ZooKeeper, a seeded Kafka cluster, the preflight report."""

from __future__ import annotations

import argparse
import sys

from migration.cli.output import EXIT_OK
from migration.cli.preflight_command import preflight, print_report
from migration.observability.progress import for_stream
from migration.zk import seed
from migration.zk.client import ZkClient
from migration.zk.embedded import EmbeddedZooKeeper

CHROOT = "/kafka"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    d = sub.add_parser("demo", help="embedded ZooKeeper + seeded cluster + preflight")
    d.add_argument("--profile", choices=sorted(seed.PROFILES), default="medium")
    d.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    print("starting an embedded ZooKeeper server...", flush=True)
    with EmbeddedZooKeeper() as zk:
        connect = zk.connect_string + CHROOT
        print(f"ZooKeeper {connect}: seeding a {args.profile} Kafka cluster", flush=True)
        snap = seed.generate(seed.PROFILES[args.profile])
        # The seeding session holds the brokers' ephemeral registrations, as live brokers do.
        with ZkClient(connect) as brokers:
            written = seed.write(brokers, snap, ephemeral=True, progress=for_stream(sys.stderr))
            print(f"wrote {written:,} znodes: {snap.counts()}\n", flush=True)
            with ZkClient(connect) as client:
                report = preflight(client)
            print_report(report, connect, sys.stdout)
    return EXIT_OK
