"""ZooKeeper's data directory read offline equals the live tree of the same server.

A real ZooKeeper with a small snapCount (snapshots taken mid-stream, fuzzy; logs
rolled), plain / gzip / snappy snapshots, the logs in a dataLogDir of their own for one
case, driven by seeded Kafka-shaped writes and SIGKILLed twice at random moments (with
multis in flight), restarted each time. Then the files are read while it runs and once
more after a last SIGKILL: every znode (data, version, ephemeral owner, children) and
``read_snapshot`` agree with the live reads, and nothing under the directories changed.
Set ZK2KRAFT_SEED to replay a run; the seed is printed (shown on failure).
"""

from __future__ import annotations

import os
import random
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from migration.local.zookeeper import EmbeddedZooKeeper
from migration.zk import paths
from migration.zk.client import ZkClient
from migration.zk.multiread import ReadOp
from migration.zk.multiwrite import CreateMode, create
from migration.zk.reader import read_snapshot
from migration.zk.tree import list_trees
from migration.zkfiles.datadir import open_data_dir
from tests.zk_files import KafkaWorkload, answering, dir_digest, restart_after_crash, walk

CHROOT = "/kafka"
STEPS = 160
ODD_PATHS = ["/", "", "/kafka/", "/kafka", "/zookeeper/config", "/nope", "/kafka/brokers/ids"]


@pytest.mark.parametrize(
    ("compression", "logs_apart"),
    [("", True), ("gz", False), ("snappy", False)],
    ids=["plain-datalogdir", "gz", "snappy"],
)
def test_files_read_offline_equal_the_live_tree(
    tmp_path: Path, compression: str, logs_apart: bool
) -> None:
    seed_value = int(os.environ.get("ZK2KRAFT_SEED", random.randrange(2**32)))
    print(f"ZK2KRAFT_SEED={seed_value}")
    rng = random.Random(seed_value)
    log_dir = tmp_path / "txnlog"
    config = {"snapCount": "40", **({"dataLogDir": str(log_dir)} if logs_apart else {})}
    method = {"zookeeper.snapshot.compression.method": compression}
    with EmbeddedZooKeeper(base_dir=tmp_path, extra_config=config, jvm_properties=method) as zk:
        data_dir = zk.servers[0].data_dir
        dirs = [data_dir, log_dir] if logs_apart else [data_dir]
        connect = zk.connect_string + CHROOT
        workload = KafkaWorkload(zk, connect, rng, dirs)
        with ZkClient(connect) as holder, ZkClient(connect) as leaving:
            workload.seed_cluster(holder)
            leaving.multi_write(
                [create(paths.broker(7), workload.registration, CreateMode.EPHEMERAL)]
            )
            crashes = set(rng.sample(range(STEPS), 2))
            sessions = [holder, leaving]
            for step in range(STEPS):
                if step in crashes:
                    workload.crash(sessions)
                if step == STEPS // 2:
                    leaving.close()  # its registration goes with its session
                    sessions.remove(leaving)
                workload.step()
            workload.close()
            # a registration of a session open at the end (the first one's session may
            # have expired across a restart: ZooKeeper 3.8.0 can leave a client that
            # connects while it starts unanswered until the session times out)
            holder.multi_write(
                [create(paths.broker(42), workload.registration, CreateMode.EPHEMERAL)]
            )
            with ZkClient(zk.connect_string) as whole, ZkClient(connect) as kafka:
                live_tree = walk(whole)
                live_odd = whole.multi_read([(ReadOp.GET_DATA, p) for p in ODD_PATHS])
                live_snap = read_snapshot(kafka)
                live_lists = list_trees(kafka, ["/brokers", "/config"])
            holder_session = holder.kazoo.client_id[0]

            offline = open_data_dir(dirs)
            offline_kafka = open_data_dir(dirs, CHROOT + "/")
            assert walk(offline) == live_tree, f"seed {seed_value}: {offline.source}"
            assert offline.multi_read([(ReadOp.GET_DATA, p) for p in ODD_PATHS]) == live_odd
            offline_snap = read_snapshot(offline_kafka)
            assert offline_snap == replace(live_snap, malformed=offline_snap.malformed)
            assert list(map(str, offline_snap.malformed)) == list(map(str, live_snap.malformed))
            assert list_trees(offline_kafka, ["/brokers", "/config"]) == live_lists
            assert offline_kafka.chroot == CHROOT
            assert holder_session in offline.open_sessions
            assert live_tree[f"{CHROOT}{paths.broker(42)}"][2] == holder_session
            assert f"{CHROOT}{paths.broker(7)}" not in live_tree

            zk.kill(1)  # the directory of a server killed now holds the same tree
            before = {d: dir_digest(d) for d in dirs}
            killed = open_data_dir(dirs)
            assert {d: dir_digest(d) for d in dirs} == before, "the read changed the files"
            assert walk(killed) == live_tree, f"seed {seed_value}: {killed.source}"
            assert killed.zxid >= offline.zxid
            print(offline.source, *offline.warnings, sep="\n")

            restart_after_crash(zk, dirs)
            answering(holder)
        # killed with writes in flight: the files hold what ZooKeeper restores (no session
        # with ephemerals left open: one could expire before the live read below)
        workload = KafkaWorkload(zk, connect, rng, dirs)
        workload.crash([], restart=False)
        copies = [tmp_path / f"copy{i}" for i in range(len(dirs))]
        for directory, copy in zip(dirs, copies, strict=True):
            shutil.copytree(directory, copy)
        workload.close()
        restart_after_crash(zk, dirs)
        with ZkClient(zk.connect_string) as whole:
            restored = walk(whole)
        crashed = open_data_dir(copies)
        assert walk(crashed) == restored, f"seed {seed_value}: {crashed.source}"
        print(crashed.source, *crashed.warnings, sep="\n")
