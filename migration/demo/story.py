"""``zk2kraft demo [--rollback]``'s story on zk2kraft's own processes. A real ZooKeeper,
a seeded Kafka cluster served by real ZooKeeper-mode broker processes (they register,
elect a controller and answer Kafka's protocol), the preflight report, a dry-run copy
into a metadata log that is then verified, what a full sync of ZooKeeper from that log
would write; then the live migration by three KRaft controller processes to DUAL_WRITE
(:mod:`.live`), the brokers rolled into KRaft mode, MigrationFinished, and finalization
to KRaft (or, with ``rollback``, the checked way back to ZooKeeper), with a summary
(:mod:`.finish`). Told through the :class:`~migration.demo.view.DemoView`."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from migration.bridge.sync import compare
from migration.demo.finish import finalize, go_back, roll_to_kraft, summary
from migration.demo.live import live_migration
from migration.driver.copy import dry_run
from migration.image.log_check import check_log
from migration.kafka.admin_client import KafkaAdminClient
from migration.local import seed
from migration.local.cluster import LocalCluster
from migration.local.zookeeper import EmbeddedZooKeeper
from migration.proto import controller_pb2 as cpb
from migration.rehearse.procedure import copy_figures
from migration.zk.client import ZkClient

if TYPE_CHECKING:
    from migration.demo.view import DemoView

CHROOT = "/kafka"
SECRET = seed.SEED_PASSWORD_ENCODER_SECRET  # the seeded brokers' password.encoder.secret


def run_demo(profile: str, rollback: bool, view: DemoView) -> None:
    """The whole story on a cluster seeded with :data:`~migration.local.seed.PROFILES`'
    ``profile``; every process it starts is stopped when it returns or raises (Ctrl-C
    too), and its files are removed."""
    view.say("starting an embedded ZooKeeper server...")
    with EmbeddedZooKeeper() as zk:
        connect = zk.connect_string + CHROOT
        view.say(f"ZooKeeper {connect}: seeding a {profile} Kafka cluster")
        snap = seed.generate(seed.PROFILES[profile])
        with tempfile.TemporaryDirectory() as tmp, ZkClient(connect) as client:
            written = seed.write(client, seed.without_registrations(snap), progress=view.progress())
            view.say(f"wrote {written:,} znodes: {snap.counts()}\n")
            cluster = LocalCluster(
                connect,
                sorted(snap.brokers),
                Path(tmp) / "cluster",
                properties={"password.encoder.secret": SECRET},
            )
            view.say(f"zk2kraft cluster start --broker-ids {','.join(map(str, snap.brokers))}")
            try:  # the brokers run in sessions of their own: stopped here, also on Ctrl-C
                cluster.start()
                cluster.wait_ready(120)
                _show_cluster(cluster, view)
                _copy_offline(client, connect, Path(tmp) / "metadata-log", view)
                _migrate_live(cluster, client, connect, Path(tmp), rollback=rollback, view=view)
            finally:
                cluster.stop()


def _show_cluster(cluster: LocalCluster, view: DemoView) -> None:
    """What a Kafka client sees, through Kafka's protocol."""
    client = KafkaAdminClient(cluster.bootstrap)
    metadata = client.call("Metadata", cpb.MetadataRequest())
    partitions = sum(len(t.partitions) for t in metadata.topics)
    offline = sum(1 for t in metadata.topics for p in t.partitions if p.leader_id < 0)
    view.say(
        f"{len(cluster.brokers)} ZooKeeper-mode brokers serving Kafka's protocol at "
        f"{cluster.bootstrap}: {len(metadata.topics)} topics, {partitions:,} partitions "
        f"({offline} without a live leader)\n"
    )


def _copy_offline(client: ZkClient, connect: str, log_dir: Path, view: DemoView) -> None:
    """Before any controller runs: the preflight, the dry-run copy into ``log_dir``, the
    log verified, and what the first full sync of ZooKeeper from it would write."""
    view.preflight(client, connect)
    view.say(f"\nzk2kraft migrate --dry-run --log-dir {log_dir}")
    manifest = dry_run(client, log_dir, progress=view.progress(), password_encoder_secret=SECRET)
    view.manifest(manifest, connect)
    check = check_log(log_dir)
    view.say(
        f"\nzk2kraft log verify: {'OK' if check.ok else 'CORRUPT'} "
        f"({check.records:,} records, image {check.image})"
    )
    view.say(f"\nzk2kraft zk diff --log-dir {log_dir}: what the first full sync writes")
    view.changes(compare(client, check.metadata, None, SECRET).plan.nonempty_changes())


def _migrate_live(
    cluster: LocalCluster,
    client: ZkClient,
    connect: str,
    tmp: Path,
    *,
    rollback: bool,
    view: DemoView,
) -> None:
    """The live migration to DUAL_WRITE, the brokers rolled into KRaft mode, then
    finalization and the summary (``rollback``: the way back instead); the controllers
    are stopped when it returns or raises."""
    with live_migration(cluster, client, connect, tmp, SECRET, view=view) as (quorum, watch):
        copy = copy_figures(quorum)
        roll = roll_to_kraft(cluster, watch, view)
        if rollback:
            go_back(cluster, quorum, client, watch, view)
        else:
            summary(copy, roll, finalize(quorum, watch, view), view)
