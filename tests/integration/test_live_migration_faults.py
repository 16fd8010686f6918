"""The live migration under faults, with real processes: controllers SIGKILLed mid-copy
and mid-dual-write, a zombie leader (SIGSTOP/SIGCONT), ZooKeeper stopped, a ZooKeeper
broker SIGKILLed, and a ``/migration`` left from an earlier attempt."""

from __future__ import annotations

import json
import shutil
import signal
import threading
import time
from pathlib import Path
from typing import Any

import grpc
import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from migration.bridge.sync import compare
from migration.common.kafka_errors import ErrorCode
from migration.local.seed import ClusterSpec
from migration.local.zookeeper import EmbeddedZooKeeper
from migration.log.metadata_log import MetadataLog
from migration.proto import controller_pb2 as cpb
from migration.proto import controller_pb2_grpc
from migration.zk import paths
from migration.zk.model.cluster import MigrationZnode, parse_migration, render_migration
from tests.broker_harness import eventually, zk_answering
from tests.migration_harness import MigrationRig, format_storage, migration_rig, replay_log

pytestmark = pytest.mark.slow


def _zk_equals_active_log(rig: MigrationRig) -> dict[str, Any]:
    status = eventually(
        lambda: (
            (s := rig.status())["driver_phase"] == "DUAL_WRITE"
            and s["zk_write_behind_lag"] == 0
            and s
        ),
        timeout_s=120,
        what="dual-writing with ZooKeeper caught up",
    )
    image = replay_log(rig.quorum.root / f"log{status['active_controller']}")
    planned = compare(
        rig.zk, image, status["zk_controller_epoch"], rig.quorum.extra["password.encoder.secret"]
    ).plan
    assert [f"{op.kind.name} {op.path}" for op in planned.ops] == []
    return status


def _transaction_markers(log_dir: Path) -> list[str]:
    with MetadataLog(log_dir, read_only=True) as log:
        return [
            which
            for _, _, record in log.records(0)
            if (which := record.WhichOneof("record") or "").endswith("transaction_record")
        ]


def _copy_open(log_dir: Path) -> bool:
    """Whether ``log_dir`` (a live follower's) holds the copy's BeginTransaction and no
    End yet: the copy is half-way."""
    try:
        markers = _transaction_markers(log_dir)
    except Exception:  # read beside a writer: a torn tail
        return False
    return markers == ["begin_transaction_record"]


def test_a_leader_killed_mid_copy_leaves_an_aborted_transaction_and_one_committed_copy(
    zk_server: EmbeddedZooKeeper, tmp_path: Path
) -> None:
    # 20,000 partitions in batches of ~2 KiB: a copy of hundreds of commit rounds
    spec = ClusterSpec(topics=40, partitions=20_000, replication_factor=3)
    with migration_rig(
        zk_server,
        tmp_path,
        spec,
        controller_props={"zookeeper.metadata.migration.batch.bytes": "2048"},
    ) as rig:
        # the copy streams before the claim, in WAIT_FOR_BROKERS
        first = rig.wait_phase("WAIT_FOR_BROKERS", timeout_s=180)["active_controller"]
        follower = next(n for n in rig.quorum.ids if n != first)
        eventually(
            lambda: _copy_open(rig.quorum.root / f"log{follower}"),
            timeout_s=120,
            what="the copy's transaction open on a follower",
        )
        rig.quorum.children[first].signal(signal.SIGSTOP)  # no further append
        rig.quorum.kill(first, signal.SIGKILL)
        status = eventually(
            lambda: (
                (s := rig.status())["driver_phase"] == "DUAL_WRITE"
                and s["active_controller"] != first
                and s
            ),
            timeout_s=240,
            what="the next leader migrates",
        )
        log_dir = rig.quorum.root / f"log{status['active_controller']}"
        # the half-way copy was aborted, then exactly one copy committed
        assert _transaction_markers(log_dir) == [
            "begin_transaction_record", "abort_transaction_record",
            "begin_transaction_record", "end_transaction_record",
        ]  # fmt: skip
        image = replay_log(log_dir)
        assert image.counts()["partitions"] == sum(
            len(t.assignment.partitions) for t in rig.seeded.topics.values()
        )
        _zk_equals_active_log(rig)


def test_every_acknowledged_change_reaches_zookeeper_after_a_leader_is_killed(
    zk_server: EmbeddedZooKeeper, tmp_path: Path
) -> None:
    with migration_rig(zk_server, tmp_path) as rig:
        rig.wait_phase("DUAL_WRITE")
        admin = AdminClient({"bootstrap.servers": rig.cluster.bootstrap})
        acked: list[str] = []
        stop = threading.Event()

        def write() -> None:
            n = 0
            while not stop.is_set():
                name = f"during-failover-{n}"
                n += 1
                try:
                    admin.create_topics([NewTopic(name, 1, 2)])[name].result(timeout=60)
                except Exception:
                    continue  # not acknowledged: may or may not exist
                acked.append(name)

        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        eventually(lambda: len(acked) >= 5, what="writes acknowledged before the kill")
        first = rig.status()["active_controller"]
        rig.quorum.kill(first, signal.SIGKILL)
        eventually(
            lambda: (
                (s := rig.status())["active_controller"] not in (-1, first)
                and s["driver_phase"] == "DUAL_WRITE"
            ),
            timeout_s=120,
            what="a new leader dual-writing",
        )
        count = len(acked)
        eventually(lambda: len(acked) >= count + 5, what="writes acknowledged after the kill")
        stop.set()
        writer.join(timeout=90)
        _zk_equals_active_log(rig)
        for name in acked:
            assert rig.zk.kazoo.exists(paths.topic(name)) is not None, name


def test_a_zombie_leader_writes_nothing_to_zookeeper_and_steps_down(
    zk_server: EmbeddedZooKeeper, tmp_path: Path
) -> None:
    with migration_rig(zk_server, tmp_path) as rig:
        old = rig.wait_phase("DUAL_WRITE")["active_controller"]
        rig.quorum.children[old].signal(signal.SIGSTOP)
        try:
            new = eventually(
                lambda: (
                    (s := rig.status())["active_controller"] not in (-1, old)
                    and s["driver_phase"] == "DUAL_WRITE"
                    and s
                ),
                timeout_s=120,
                what="another controller takes over",
            )
            for name in ("while-zombie-1", "while-zombie-2"):
                answer = _create_once(rig, new["active_controller"], name)
                assert answer.topics[0].error_code == 0
        finally:
            rig.quorum.children[old].signal(signal.SIGCONT)
        eventually(
            lambda: "not the active controller" in rig.status(old)["outcome"],
            timeout_s=60,
            what="the old leader steps down",
        )
        time.sleep(1)  # what a zombie would write it writes now (a hang guard, not timed)
        migration = parse_migration(paths.MIGRATION, rig.zk.get(paths.MIGRATION)[0])
        assert (migration.kraft_controller_id, migration.kraft_controller_epoch) == (
            new["active_controller"],
            new["kraft_epoch"],
        )
        _zk_equals_active_log(rig)
        assert rig.zk.kazoo.exists(paths.topic("while-zombie-2")) is not None


def test_zookeeper_down_pauses_writes_at_the_bound_and_everything_resumes(
    tmp_path: Path,
) -> None:
    bound = 3
    with (
        EmbeddedZooKeeper(base_dir=tmp_path / "zk") as own_zk,
        migration_rig(
            own_zk,
            tmp_path / "rig",
            controller_props={"zookeeper.metadata.migration.max.write.behind.records": str(bound)},
        ) as rig,
    ):
        rig.wait_phase("DUAL_WRITE")
        client = rig.quorum.client(timeout_s=60)
        active = rig.status()["active_controller"]
        own_zk.kill(1)
        created: list[str] = []
        refusal = None
        for n in range(4 * bound):  # each topic is two records
            answer = _create_once(rig, active, f"zk-down-{n}")
            if answer.error.error_code:
                refusal = answer.error
                break
            assert answer.topics[0].error_code == 0
            created.append(f"zk-down-{n}")
        assert refusal is not None and refusal.error_code == ErrorCode.REQUEST_TIMED_OUT
        assert "max.write.behind.records" in refusal.error_message
        assert rig.status()["zk_write_behind_lag"] > bound
        # the brokers' own writes are still served: heartbeats keep them unfenced
        cluster = client.call("DescribeCluster", cpb.DescribeClusterRequest())
        assert sorted(b.broker_id for b in cluster.brokers if not b.fenced) == [1, 2, 3]
        own_zk.restart(1)
        zk_answering(rig.zk)  # the test's own session may have expired meanwhile
        _zk_equals_active_log(rig)
        for name in created:
            assert rig.zk.kazoo.exists(paths.topic(name)) is not None
        answer = _create_once(rig, rig.status()["active_controller"], "after-zk")
        assert answer.topics[0].error_code == 0


def _create_once(rig: MigrationRig, node: int, name: str) -> cpb.CreateTopicsResponse:
    """One CreateTopics to controller ``node``, not retried (the answer as sent)."""
    with grpc.insecure_channel(rig.quorum.endpoint(node)) as channel:
        return controller_pb2_grpc.ControllerStub(channel).CreateTopics(
            cpb.CreateTopicsRequest(
                topics=[cpb.CreatableTopic(name=name, num_partitions=1, replication_factor=1)]
            ),
            timeout=60,
        )


def test_a_killed_zookeeper_broker_loses_leadership_through_the_kraft_controller(
    zk_server: EmbeddedZooKeeper, tmp_path: Path
) -> None:
    with migration_rig(
        zk_server, tmp_path, controller_props={"broker.session.timeout.ms": "3000"}
    ) as rig:
        rig.wait_phase("DUAL_WRITE")
        metadata: Any = rig.cluster.metadata(1)
        victim = next(p.leader_id for t in metadata.topics for p in t.partitions)
        led = {
            (t.name, p.partition_index)
            for t in metadata.topics
            for p in t.partitions
            if p.leader_id == victim
        }
        rig.cluster.kill(victim)
        others = [b for b in (1, 2, 3) if b != victim]

        def moved(broker: int) -> bool:
            m: Any = rig.cluster.metadata(broker)
            now = {(t.name, p.partition_index): p.leader_id for t in m.topics for p in t.partitions}
            return all(now[k] not in (victim, -1) for k in led)

        for b in others:
            eventually(lambda x=b: moved(x), timeout_s=60, what=f"broker {b} told the new leaders")
        for topic, p in led:
            state = json.loads(rig.zk.get(paths.partition_state(topic, p))[0])
            assert state["leader"] != victim and victim not in state["isr"]
        _zk_equals_active_log(rig)


def test_a_stale_migration_znode_is_refused_and_zookeeper_left_unchanged(
    zk_server: EmbeddedZooKeeper, tmp_path: Path
) -> None:
    with migration_rig(zk_server, tmp_path, start_quorum=False) as rig:
        left = MigrationZnode(7, 3, 1234, 3)
        rig.zk.kazoo.create(paths.MIGRATION, render_migration(left))
        controller_before = rig.zk.get(paths.CONTROLLER)[0]
        epoch_before = rig.zk.get(paths.CONTROLLER_EPOCH)[0]
        rig.quorum.start_all()
        status = eventually(
            lambda: (s := rig.status())["outcome"].startswith("refusing to migrate") and s,
            what="the driver refuses",
        )
        assert "/migration" in status["outcome"] and "delete /migration" in status["outcome"]
        assert status["state"] == "ZooKeeper" and status["zk_migration_state"] == "PRE_MIGRATION"
        assert status["migration_znode"]["kraft_metadata_offset"] == 1234
        time.sleep(1)  # still refusing on later polls (a hang guard, not timed)
        assert rig.status()["outcome"].startswith("refusing to migrate")
        assert rig.zk.get(paths.CONTROLLER)[0] == controller_before
        assert rig.zk.get(paths.CONTROLLER_EPOCH)[0] == epoch_before
        assert parse_migration(paths.MIGRATION, rig.zk.get(paths.MIGRATION)[0]) == left


def test_a_copy_committed_without_its_migration_znode_is_recovered_from_the_log(
    zk_server: EmbeddedZooKeeper, tmp_path: Path
) -> None:
    """The crash between the copy's commit and the ``/migration`` write: every controller
    killed, ``/migration`` back to "not copied"; the next leader does not stall or copy
    again, it writes ``/migration`` from the log."""
    with migration_rig(zk_server, tmp_path) as rig:
        rig.wait_phase("DUAL_WRITE")
        rig.quorum.stop_all()
        rig.zk.kazoo.set(paths.MIGRATION, render_migration(MigrationZnode(-1, -1, -1, -1)))
        rig.quorum.start_all()
        status = _zk_equals_active_log(rig)
        output = rig.quorum.output(status["active_controller"])
        assert "was never written after the copy committed" in output
        markers = _transaction_markers(rig.quorum.root / f"log{status['active_controller']}")
        assert markers.count("end_transaction_record") == 1  # not copied again
        assert status["migration_znode"]["kraft_metadata_offset"] > 0


def test_the_driver_refuses_another_cluster_and_an_old_metadata_version(
    zk_server: EmbeddedZooKeeper, tmp_path: Path
) -> None:
    with migration_rig(zk_server, tmp_path, start_quorum=False) as rig:
        for node in rig.quorum.ids:
            done = format_storage(rig.quorum, node, "AnotherClusterId00000w")
            assert done.returncode == 0, done.stderr
        rig.quorum.start_all()
        refused = eventually(
            lambda: "refusing to migrate another cluster" in (s := rig.status())["outcome"] and s
        )
        assert "AnotherClusterId00000w" in refused["outcome"]
        assert rig.cluster_id in refused["outcome"]
        rig.quorum.stop_all()
        for node in rig.quorum.ids:
            shutil.rmtree(rig.quorum.root / f"log{node}")
            done = format_storage(rig.quorum, node, rig.cluster_id, "--release-version", "3.5")
            assert done.returncode == 0, done.stderr
        rig.quorum.start_all()
        old = eventually(
            lambda: "a migration needs at least" in (s := rig.status())["outcome"] and s
        )
        assert "3.6-IV1" in old["outcome"]
        assert b"kraftControllerEpoch" not in rig.zk.get(paths.CONTROLLER)[0]
