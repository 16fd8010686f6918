"""``zk2kraft demo --kafka [--rollback]`` (``make demo KAFKA=1``): the same story on real
Apache Kafka 3.9.2 processes. An embedded ZooKeeper, three ZooKeeper-mode Kafka brokers
run from their own ``server.properties`` (:mod:`migration.local.kafka_cluster`), a topic
made by Kafka's own tool, the inventory, ``kafka plan``, then ``kafka migrate`` to the end
-- the controllers provisioned, the brokers rolled with the flag, Kafka's copy, the
dual-write audited, the brokers rolled into KRaft mode, finalization -- or, with
``--rollback``, up to dual-write and ``kafka rollback`` back to ZooKeeper; each step as
it is taken, and where the migration is at the end (``migration status --kafka``)."""

from __future__ import annotations

import argparse
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from migration.cli.kafka_status import print_kafka_status
from migration.cli.output import EXIT_NOT_READY, EXIT_OK
from migration.common.text import printable_line
from migration.local.kafka_cluster import CONTROLLERS, VERSION, local_kafka_cluster
from migration.local.kafka_release import kafka_release
from migration.local.zookeeper import EmbeddedZooKeeper
from migration.operate.inventory import load_inventory
from migration.operate.kafka_state import kafka_status
from migration.operate.plan import build_plan, render_text
from migration.operate.reading import read_cluster, read_files
from migration.operate.run import Runner, RunOptions, RunStoppedError, StoppedAtError
from migration.zk.client import ZkClient


def say(line: str) -> None:
    print(f"{datetime.now(UTC):%H:%M:%S} {printable_line(line)}", flush=True)


def run_kafka_demo(args: argparse.Namespace) -> int:
    print("starting an embedded ZooKeeper server...", flush=True)
    with EmbeddedZooKeeper() as zk, tempfile.TemporaryDirectory() as tmp:
        connect = f"{zk.connect_string}/kafka"
        print(f"starting Apache Kafka {VERSION}: three ZooKeeper-mode brokers on {connect}")
        with local_kafka_cluster(connect, Path(tmp)) as cluster:
            kafka_release(VERSION).run_tool(
                "topics", "--bootstrap-server", cluster.bootstrap, "--create",
                "--topic", "orders", "--partitions", "6", "--replication-factor", "3",
                work_dir=Path(tmp),
            )  # fmt: skip
            print(f"brokers at {cluster.bootstrap}; topic orders made by kafka-topics\n")
            print(f"The inventory, {cluster.inventory}:\n{cluster.inventory.read_text()}")
            inv = load_inventory(cluster.inventory)
            print(f"zk2kraft kafka plan --inventory {cluster.inventory}")
            print(render_text(build_plan(inv, read_files(inv), read_cluster(inv))))
            until = "brokers-kraft" if args.rollback else None
            print(f"zk2kraft kafka migrate --inventory {cluster.inventory}"
                  + (f" --until {until}" if until else ""), flush=True)  # fmt: skip
            runner = Runner(inv, say, RunOptions(gate_timeout_s=600, until=until))
            try:
                try:
                    runner.migrate()
                except StoppedAtError:
                    print(f"\nzk2kraft kafka rollback --inventory {cluster.inventory}")
                    Runner(inv, say, RunOptions(gate_timeout_s=600)).rollback()
            except RunStoppedError as exc:
                print(f"stopped: {printable_line(str(exc))}")
                return EXIT_NOT_READY
            print("\nzk2kraft migration status --kafka")
            log_dir = cluster.metadata_dir(CONTROLLERS[0])
            print_kafka_status(
                kafka_status(
                    connect,
                    lambda: ZkClient(connect),
                    log_dir if log_dir.exists() else None,
                    ",".join(f"127.0.0.1:{port}" for port in cluster.controller_ports.values())
                    if not args.rollback
                    else None,
                )
            )
    return EXIT_OK
