"""``zk2kraft demo --kafka [--rollback]`` (``make demo KAFKA=1``): the same story on real
Apache Kafka 3.9.2 processes. An embedded ZooKeeper, three ZooKeeper-mode Kafka brokers
run from their own ``server.properties`` (:mod:`migration.local.kafka_cluster`), a topic
made by Kafka's own tool, the inventory, ``kafka plan``, then ``kafka migrate`` to the end
-- the controllers provisioned, the brokers rolled with the flag, Kafka's copy, the
dual-write audited, the brokers rolled into KRaft mode, finalization -- or, with
``--rollback``, up to dual-write and ``kafka rollback`` back to ZooKeeper; each step as
it is taken, and where the migration is at the end (``migration status --kafka``), told
through the :class:`~migration.demo.view.DemoView`."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

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

if TYPE_CHECKING:
    from migration.demo.view import DemoView


def timed(view: DemoView) -> Callable[[str], None]:
    """The runner's lines as the demo tells them: each stamped with the time (UTC)."""

    def say(line: str) -> None:
        view.say(f"{datetime.now(UTC):%H:%M:%S} {printable_line(line)}")

    return say


def run_kafka_demo(rollback: bool, view: DemoView) -> bool:
    """The story to its end (``rollback``: up to dual-write, then back); False when the
    run stopped on the way (a gate not passed: said why), True otherwise. Every process
    it starts is stopped when it returns or raises."""
    say = timed(view)
    view.say("starting an embedded ZooKeeper server...")
    with EmbeddedZooKeeper() as zk, tempfile.TemporaryDirectory() as tmp:
        connect = f"{zk.connect_string}/kafka"
        view.say(f"starting Apache Kafka {VERSION}: three ZooKeeper-mode brokers on {connect}")
        with local_kafka_cluster(connect, Path(tmp)) as cluster:
            kafka_release(VERSION).run_tool(
                "topics", "--bootstrap-server", cluster.bootstrap, "--create",
                "--topic", "orders", "--partitions", "6", "--replication-factor", "3",
                work_dir=Path(tmp),
            )  # fmt: skip
            view.say(f"brokers at {cluster.bootstrap}; topic orders made by kafka-topics\n")
            view.say(f"The inventory, {cluster.inventory}:\n{cluster.inventory.read_text()}")
            inv = load_inventory(cluster.inventory)
            view.say(f"zk2kraft kafka plan --inventory {cluster.inventory}")
            view.say(render_text(build_plan(inv, read_files(inv), read_cluster(inv))))
            until = "brokers-kraft" if rollback else None
            view.say(f"zk2kraft kafka migrate --inventory {cluster.inventory}"
                     + (f" --until {until}" if until else ""))  # fmt: skip
            runner = Runner(inv, say, RunOptions(gate_timeout_s=600, until=until))
            try:
                try:
                    runner.migrate()
                except StoppedAtError:
                    view.say(f"\nzk2kraft kafka rollback --inventory {cluster.inventory}")
                    Runner(inv, say, RunOptions(gate_timeout_s=600)).rollback()
            except RunStoppedError as exc:
                view.say(f"stopped: {printable_line(str(exc))}")
                return False
            view.say("\nzk2kraft migration status --kafka")
            log_dir = cluster.metadata_dir(CONTROLLERS[0])
            view.kafka_status(
                kafka_status(
                    connect,
                    lambda: ZkClient(connect),
                    log_dir if log_dir.exists() else None,
                    ",".join(f"127.0.0.1:{port}" for port in cluster.controller_ports.values())
                    if not rollback
                    else None,
                )
            )
    return True
