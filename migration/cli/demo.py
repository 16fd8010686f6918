"""``zk2kraft demo [--rollback]``: the whole story on embedded defaults. A real ZooKeeper,
a seeded Kafka cluster served by real ZooKeeper-mode broker processes (they register,
elect a controller and answer Kafka's protocol), the preflight report, a dry-run copy
into a metadata log that is then verified, what a full sync of ZooKeeper from that log
would write; then the live migration by three KRaft controller processes to DUAL_WRITE,
the brokers rolled into KRaft mode, MigrationFinished, and finalization to KRaft (or,
with ``--rollback``, the checked way back to ZooKeeper), with a summary."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from migration.bridge.sync import compare
from migration.cli.migrate_command import print_manifest
from migration.cli.output import EXIT_OK
from migration.cli.preflight_command import preflight, print_report
from migration.cli.zk_commands import print_changes
from migration.driver.copy import dry_run
from migration.image.log_check import check_log
from migration.local import seed
from migration.local.zookeeper import EmbeddedZooKeeper
from migration.observability.progress import for_stream
from migration.proto import controller_pb2 as cpb
from migration.zk.client import ZkClient

if TYPE_CHECKING:
    from migration.local.cluster import LocalCluster

CHROOT = "/kafka"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    d = sub.add_parser(
        "demo",
        help="the whole migration on a seeded local cluster: preflight, a dry-run copy, the "
        "live migration, finalization (--rollback: the way back; --kafka: on Apache Kafka)",
    )
    d.add_argument(
        "--profile",
        choices=sorted(seed.PROFILES),
        default="medium",
        help="the seeded cluster's size (default medium)",
    )
    d.add_argument(
        "--rollback",
        action="store_true",
        help="after the brokers are in KRaft mode, go back to ZooKeeper instead of finalizing",
    )
    d.add_argument(
        "--kafka",
        action="store_true",
        help="the story on real Apache Kafka 3.9.2 processes, driven from an inventory "
        "(kafka plan, kafka migrate; with --rollback, kafka rollback from dual-write)",
    )
    d.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.kafka:
        from migration.cli.demo_kafka import run_kafka_demo  # noqa: PLC0415 - only for --kafka

        return run_kafka_demo(args)
    from migration.cli.demo_finish import (  # noqa: PLC0415 - kio: see migration.cli
        finalize,
        go_back,
        roll_to_kraft,
        summary,
    )
    from migration.cli.demo_migration import live_migration  # noqa: PLC0415 - kio: see migration.cli
    from migration.local.cluster import LocalCluster  # noqa: PLC0415 - kio: see migration.cli
    from migration.rehearse.procedure import copy_figures  # noqa: PLC0415 - kio: see migration.cli

    print("starting an embedded ZooKeeper server...", flush=True)
    with EmbeddedZooKeeper() as zk:
        connect = zk.connect_string + CHROOT
        print(f"ZooKeeper {connect}: seeding a {args.profile} Kafka cluster", flush=True)
        snap = seed.generate(seed.PROFILES[args.profile])
        with tempfile.TemporaryDirectory() as tmp, ZkClient(connect) as client:
            written = seed.write(
                client, seed.without_registrations(snap), progress=for_stream(sys.stderr)
            )
            print(f"wrote {written:,} znodes: {snap.counts()}\n", flush=True)
            cluster = LocalCluster(
                connect,
                sorted(snap.brokers),
                Path(tmp) / "cluster",
                properties={"password.encoder.secret": seed.SEED_PASSWORD_ENCODER_SECRET},
            )
            print(f"zk2kraft cluster start --broker-ids {','.join(map(str, snap.brokers))}")
            try:  # the brokers run in sessions of their own: stopped here, also on Ctrl-C
                cluster.start()
                cluster.wait_ready(120)
                _show_cluster(cluster)
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
                with live_migration(cluster, client, connect, Path(tmp), secret) as (q, watch):
                    copy = copy_figures(q)
                    roll = roll_to_kraft(cluster, watch)
                    if args.rollback:
                        go_back(cluster, q, client, watch)
                    else:
                        summary(copy, roll, finalize(q, watch))
            finally:
                cluster.stop()
    return EXIT_OK


def _show_cluster(cluster: LocalCluster) -> None:
    """What a Kafka client sees, through Kafka's protocol."""
    from migration.kafka.admin_client import KafkaAdminClient  # noqa: PLC0415 - kio: see migration.cli

    client = KafkaAdminClient(cluster.bootstrap)
    metadata = client.call("Metadata", cpb.MetadataRequest())
    partitions = sum(len(t.partitions) for t in metadata.topics)
    offline = sum(1 for t in metadata.topics for p in t.partitions if p.leader_id < 0)
    print(
        f"{len(cluster.brokers)} ZooKeeper-mode brokers serving Kafka's protocol at "
        f"{cluster.bootstrap}: {len(metadata.topics)} topics, {partitions:,} partitions "
        f"({offline} without a live leader)\n",
        flush=True,
    )
