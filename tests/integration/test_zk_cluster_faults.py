"""The legacy ZooKeeper controller under faults, with real broker processes: SIGKILL of
the controller and of a broker, controlled shutdown on SIGTERM, a stale controller's
LeaderAndIsr, and a seeded tree served by brokers that register themselves."""

from __future__ import annotations

import json
import signal
import threading
from pathlib import Path

import grpc
import pytest
from kazoo.exceptions import NoNodeError

from migration.common.kafka_errors import ErrorCode
from migration.local import seed
from migration.local.cluster import LocalCluster
from migration.local.zookeeper import EmbeddedZooKeeper
from migration.proto import broker_pb2 as bpb
from migration.proto import broker_pb2_grpc
from migration.zk import paths
from migration.zk.client import ZkClient
from migration.zk.reader import read_snapshot
from tests.broker_harness import controller_of, create_topic, eventually, leaders, running_cluster

pytestmark = pytest.mark.slow


def _all_led(cluster: LocalCluster, topic: str, brokers: list[int], excluded: int) -> bool:
    views = [leaders(cluster, b, topic) for b in brokers]
    return (
        bool(views[0])
        and all(v == views[0] for v in views)
        and all(leader >= 0 and leader != excluded for leader, _ in views[0].values())
    )


def test_sigkill_of_the_controller_elects_another_with_a_higher_epoch(
    zk_server: EmbeddedZooKeeper, tmp_path: Path
) -> None:
    with running_cluster(zk_server, tmp_path, [1, 2, 3]) as (cluster, zk):
        create_topic(cluster, "before", 3, 3)
        old, epoch = controller_of(zk)
        cluster.kill(old)

        def new_controller() -> tuple[int, int] | None:
            try:  # between elections there is no /controller to read
                owner, now = controller_of(zk)
            except NoNodeError:
                return None
            return (owner, now) if owner != old else None

        _, new_epoch = eventually(
            new_controller, what="a new controller"
        )  # once the session expires
        assert new_epoch == epoch + 1
        survivors = [b for b in (1, 2, 3) if b != old]
        eventually(lambda: _all_led(cluster, "before", survivors, old), what="leaders moved")
        create_topic(cluster, "after", 4, 2)  # the new controller gives it leaders
        eventually(lambda: _all_led(cluster, "after", survivors, old), what="new topic led")
        state = json.loads(zk.get(paths.partition_state("after", 0))[0])
        assert state["controller_epoch"] == new_epoch


def test_sigkill_of_a_broker_moves_its_leaders_within_the_isr(
    zk_server: EmbeddedZooKeeper, tmp_path: Path
) -> None:
    with running_cluster(zk_server, tmp_path, [1, 2, 3]) as (cluster, zk):
        create_topic(cluster, "moving", 6, 3)
        controller, _ = controller_of(zk)
        victim = next(b for b in (1, 2, 3) if b != controller)
        before = leaders(cluster, controller, "moving")
        assert any(leader == victim for leader, _ in before.values())
        cluster.kill(victim)
        survivors = [b for b in (1, 2, 3) if b != victim]
        eventually(lambda: _all_led(cluster, "moving", survivors, victim), what="re-elected")
        for pid, (leader, isr) in leaders(cluster, survivors[0], "moving").items():
            assert victim not in isr and leader in isr
            state = json.loads(zk.get(paths.partition_state("moving", pid))[0])
            assert state["leader"] == leader and state["isr"] == isr
            if before[pid][0] == victim:
                assert state["leader_epoch"] >= 1


def test_controlled_shutdown_never_leaves_a_partition_offline(
    zk_server: EmbeddedZooKeeper, tmp_path: Path
) -> None:
    with running_cluster(zk_server, tmp_path, [1, 2, 3]) as (cluster, zk):
        create_topic(cluster, "steady", 6, 3)
        controller, _ = controller_of(zk)
        leaving = next(b for b in (1, 2, 3) if b != controller)
        watcher = next(b for b in (1, 2, 3) if b not in (leaving,))
        offline: list[dict[int, tuple[int, list[int]]]] = []
        done = threading.Event()

        def watch() -> None:
            while not done.is_set():
                view = leaders(cluster, watcher, "steady")
                if any(leader < 0 for leader, _ in view.values()):
                    offline.append(view)

        t = threading.Thread(target=watch)
        t.start()
        try:
            cluster.signal(leaving, signal.SIGTERM)
            assert cluster.wait_exit(leaving) == 0
        finally:
            done.set()
            t.join()
        assert offline == []
        for leader, isr in leaders(cluster, watcher, "steady").values():
            assert leader != leaving and leaving not in isr


def test_a_leader_and_isr_from_an_older_controller_epoch_is_refused(
    zk_server: EmbeddedZooKeeper, tmp_path: Path
) -> None:
    with running_cluster(zk_server, tmp_path, [1, 2]) as (cluster, zk):
        _, epoch = controller_of(zk)
        stub = broker_pb2_grpc.BrokerControlStub(
            grpc.insecure_channel(f"127.0.0.1:{cluster.brokers[1].internal_port}")
        )
        stale = bpb.LeaderAndIsrRequest(
            header=bpb.ControllerHeader(controller_id=9, controller_epoch=epoch - 1)
        )
        answer = stub.LeaderAndIsr(stale, timeout=10)
        assert answer.error_code == ErrorCode.STALE_CONTROLLER_EPOCH
        answer = stub.UpdateMetadata(bpb.UpdateMetadataRequest(header=stale.header), timeout=10)
        assert answer.error_code == ErrorCode.STALE_CONTROLLER_EPOCH
        # and AlterPartition reaches only the controller
        not_controller = next(b for b in (1, 2) if b != controller_of(zk)[0])
        other = broker_pb2_grpc.BrokerControlStub(
            grpc.insecure_channel(f"127.0.0.1:{cluster.brokers[not_controller].internal_port}")
        )
        refused = other.AlterPartition(bpb.AlterPartitionRequest(broker_id=1), timeout=10)
        assert refused.error_code == ErrorCode.NOT_CONTROLLER


def test_alter_partition_shrinks_the_isr_with_kafkas_checks(
    zk_server: EmbeddedZooKeeper, tmp_path: Path
) -> None:
    with running_cluster(zk_server, tmp_path, [1, 2, 3]) as (cluster, zk):
        create_topic(cluster, "shrink", 1, 3)
        controller, _ = controller_of(zk)
        state = json.loads(zk.get(paths.partition_state("shrink", 0))[0])
        version = zk.get(paths.partition_state("shrink", 0))[1]
        leader = state["leader"]
        stub = broker_pb2_grpc.BrokerControlStub(
            grpc.insecure_channel(f"127.0.0.1:{cluster.brokers[controller].internal_port}")
        )
        epoch_of = zk.kazoo.exists(paths.broker(leader)).czxid
        follower = next(r for r in state["isr"] if r != leader)
        shrunk = [r for r in state["isr"] if r != follower]

        def ask(leader_epoch: int, partition_epoch: int) -> bpb.AlterPartitionResponse:
            return stub.AlterPartition(  # type: ignore[no-any-return]
                bpb.AlterPartitionRequest(
                    broker_id=leader,
                    broker_epoch=epoch_of,
                    partitions=[
                        bpb.PartitionState(
                            topic_name="shrink", partition_index=0, leader_epoch=leader_epoch,
                            partition_epoch=partition_epoch, isr=shrunk,
                        )
                    ],
                ),
                timeout=30,
            )  # fmt: skip

        stale = ask(state["leader_epoch"], version + 5)
        assert [e.error_code for e in stale.partition_errors] == [ErrorCode.INVALID_UPDATE_VERSION]
        fenced = ask(state["leader_epoch"] - 1, version) if state["leader_epoch"] else None
        if fenced is not None:
            assert fenced.partition_errors[0].error_code == ErrorCode.FENCED_LEADER_EPOCH
        done = ask(state["leader_epoch"], version)
        assert done.error_code == 0 and not done.partition_errors
        assert list(done.partitions[0].isr) == shrunk
        after = json.loads(zk.get(paths.partition_state("shrink", 0))[0])
        assert after["isr"] == shrunk and after["leader_epoch"] == state["leader_epoch"]
        eventually(lambda: leaders(cluster, follower, "shrink")[0][1] == shrunk)


def test_a_seeded_tree_is_served_by_brokers_that_register_themselves(
    zk_server: EmbeddedZooKeeper, tmp_path: Path
) -> None:
    spec = seed.ClusterSpec(brokers=3, topics=20, partitions=60)
    snap = seed.generate(spec)
    connect = f"{zk_server.connect_string}/seeded-{tmp_path.name}"
    with ZkClient(connect) as zk:
        seed.write(zk, seed.without_registrations(snap))
        epoch_before = int(zk.get(paths.CONTROLLER_EPOCH)[0])
        cluster = LocalCluster(
            connect,
            sorted(snap.brokers),
            tmp_path,
            properties={"zookeeper.session.timeout.ms": "6000"},
        )
        cluster.start()
        try:
            cluster.wait_ready(90)
            _, epoch = controller_of(zk)
            assert epoch == epoch_before + 1
            some = sorted(snap.topics)[0]
            count = len(snap.topics[some].assignment.partitions)
            eventually(lambda: len(leaders(cluster, sorted(snap.brokers)[0], some)) == count)
            served = cluster.metadata(sorted(snap.brokers)[-1])
            assert {t.name for t in served.topics} == set(snap.topics)  # type: ignore[attr-defined]
            after = read_snapshot(zk)
            assert sorted(after.brokers) == sorted(snap.brokers)
            assert after.topics.keys() == snap.topics.keys()
        finally:
            cluster.stop()


def test_a_stopped_controller_whose_session_expired_resigns_and_rejoins(
    zk_server: EmbeddedZooKeeper, tmp_path: Path
) -> None:
    """SIGSTOP the controller past the session timeout: another broker takes over; on
    SIGCONT the old one finds its session gone, stops acting, registers again, and the
    cluster has one controller."""
    with running_cluster(zk_server, tmp_path, [1, 2, 3]) as (cluster, zk):
        create_topic(cluster, "paused", 3, 3)
        old, epoch = controller_of(zk)
        cluster.signal(old, signal.SIGSTOP)
        try:
            eventually(
                lambda: zk.kazoo.exists(paths.CONTROLLER) and controller_of(zk)[0] != old,
                what="a new controller while the old one is stopped",
            )
        finally:
            cluster.signal(old, signal.SIGCONT)
        new, new_epoch = controller_of(zk)
        assert new_epoch == epoch + 1
        eventually(
            lambda: str(old) in zk.kazoo.get_children(paths.BROKER_IDS), what="re-registered"
        )
        assert controller_of(zk) == (new, new_epoch)
        eventually(lambda: _all_led(cluster, "paused", [1, 2, 3], -2), what="all agree")
        create_topic(cluster, "after-pause", 2, 3)
        eventually(lambda: _all_led(cluster, "after-pause", [1, 2, 3], -2))


def test_a_deposed_controller_cannot_write(zk: ZkClient) -> None:
    """Every controller write carries check(/controller_epoch @ the version it won)."""
    from migration.zk.multiwrite import create
    from migration.zkcontroller.controller import ZkController
    from migration.zkcontroller.partition_states import ControllerMovedError

    zk.kazoo.create(paths.CONTROLLER_EPOCH, b"5", makepath=True)
    controller = ZkController(zk, 1, epoch=5, epoch_version=0, internal_listener="INTERNAL")
    controller.states.write([create("/won")])
    zk.kazoo.set(paths.CONTROLLER_EPOCH, b"6")  # another controller was elected
    with pytest.raises(ControllerMovedError):
        controller.states.write([create("/lost")])
    assert zk.kazoo.exists("/won") is not None and zk.kazoo.exists("/lost") is None


def test_a_broker_whose_log_dir_belongs_to_another_cluster_refuses_to_start(
    zk_server: EmbeddedZooKeeper, tmp_path: Path
) -> None:
    connect = f"{zk_server.connect_string}/other-{tmp_path.name}"
    cluster = LocalCluster(connect, [7], tmp_path)
    data = tmp_path / "broker-7" / "data"
    data.mkdir(parents=True)
    (data / "meta.properties").write_text("version=0\nbroker.id=7\ncluster.id=SomeOtherCluster\n")
    cluster.start()
    assert cluster.wait_exit(7) == 2
    log = cluster.brokers[7].log.read_text()
    assert "INCONSISTENT_CLUSTER_ID" in log and "SomeOtherCluster" in log
    with ZkClient(connect) as zk:
        assert zk.kazoo.get_children(paths.BROKER_IDS) == []


def test_a_password_config_without_the_encoder_secret_is_refused(
    zk_server: EmbeddedZooKeeper, tmp_path: Path
) -> None:
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ResourceType,
    )

    with running_cluster(zk_server, tmp_path, [1]) as (cluster, zk):
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        entry = ConfigEntry(
            "listener.name.internal.ssl.keystore.password",
            "hunter2",
            incremental_operation=AlterConfigOpType.SET,
        )
        resource = ConfigResource(ResourceType.BROKER, "1", incremental_configs=[entry])
        (future,) = admin.incremental_alter_configs([resource]).values()
        with pytest.raises(Exception, match=r"password\.encoder\.secret") as refused:
            future.result(timeout=60)
        assert "INVALID_CONFIG" in str(refused.value) and "hunter2" not in str(refused.value)
        assert zk.kazoo.exists(paths.config_entity("brokers", "1")) is None


def test_brokers_stop_within_their_budget_when_zookeeper_is_gone(tmp_path: Path) -> None:
    """SIGTERM with ZooKeeper unreachable: every broker (the controller too, whose event
    thread waits on ZooKeeper) gives up its controlled shutdown after
    controlled.shutdown.max.retries x controller.socket.timeout.ms and exits 0."""
    with EmbeddedZooKeeper(base_dir=tmp_path / "zk") as own:
        props = {"controlled.shutdown.max.retries": "1", "controller.socket.timeout.ms": "2000"}
        with running_cluster(own, tmp_path / "brokers", [1, 2, 3], **props) as (cluster, _):
            own.kill(1)
            for b in (1, 2, 3):
                cluster.signal(b, signal.SIGTERM)
            codes = {b: cluster.wait_exit(b, timeout_s=60) for b in (1, 2, 3)}  # hang guard
    assert codes == {1: 0, 2: 0, 3: 0}
