"""``zk2kraft demo``: a real ZooKeeper, a seeded Kafka cluster, the preflight report, a
dry-run copy into a metadata log that is then verified, and what a full sync of
ZooKeeper from that log would write."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from migration.cli.migrate_command import print_manifest
from migration.cli.output import EXIT_OK
from migration.cli.preflight_command import preflight, print_report
from migration.cli.zk_commands import print_changes
from migration.driver.copy import dry_run
from migration.image.log_check import check_log
from migration.observability.progress import for_stream
from migration.zk import seed
from migration.zk.client import ZkClient
from migration.zk.embedded import EmbeddedZooKeeper
from migration.zk.sync import compare

CHROOT = "/kafka"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    d = sub.add_parser(
        "demo", help="embedded ZooKeeper + seeded cluster + preflight + dry-run copy"
    )
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
            with ZkClient(connect) as client, tempfile.TemporaryDirectory() as tmp:
                report = preflight(client)
                print_report(report, connect, sys.stdout)
                log_dir = Path(tmp) / "metadata-log"
                print(f"\nzk2kraft migrate --dry-run --log-dir {log_dir}", flush=True)
                manifest = dry_run(
                    client,
                    log_dir,
                    progress=for_stream(sys.stderr),
                    password_encoder_secret=seed.SEED_PASSWORD_ENCODER_SECRET,
                )
                print_manifest(manifest, connect, sys.stdout)
                check = check_log(log_dir)
                print(
                    f"\nzk2kraft log verify: {'OK' if check.ok else 'CORRUPT'} "
                    f"({check.records:,} records, image {check.image})"
                )
                print(f"\nzk2kraft zk diff --log-dir {log_dir}: what the first full sync writes")
                secret = seed.SEED_PASSWORD_ENCODER_SECRET
                print_changes(
                    compare(client, check.metadata, None, secret).plan.nonempty_changes(),
                    sys.stdout,
                )
    return EXIT_OK
