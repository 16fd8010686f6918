"""The migration driver's pure rules: the cluster states, what holds a migration back
(quorum, brokers, cluster id, metadata.version, a stale /migration), the controller's
storage, and the RPCs it builds for ZooKeeper brokers from committed images."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from migration.controller.config import parse_config
from migration.controller.storage import (
    BOOTSTRAP,
    StorageError,
    format_storage,
    read_storage,
)
from migration.driver import readiness
from migration.driver.broker_rpcs import BrokerRpcWorker, ZkBrokerRpcs
from migration.driver.controller_port import Inputs
from migration.driver.driver import MigrationDriver
from migration.driver.states import ClusterState, Phase, cluster_state
from migration.image.delta import MetadataDelta
from migration.image.model import (
    ZK_MIGRATION_MIGRATION,
    ZK_MIGRATION_NONE,
    ZK_MIGRATION_POST,
    ZK_MIGRATION_PRE,
    MetadataImage,
)
from migration.image.publishing import ImageChange, LoadManifest
from migration.local.seed import ClusterSpec, generate
from migration.proto import broker_pb2 as bpb
from migration.proto import metadata_pb2 as mpb
from migration.records import versions
from migration.server.controller_server import resolve_storage
from migration.zk.model.cluster import MigrationZnode
from migration.zkcontroller.channel import ControllerChannel, Rpc
from migration.zkcontroller.state_requests import LEADER_DURING_DELETE

TOPIC_ID = bytes(range(1, 17))


def _apply(image: MetadataImage, *records: mpb.MetadataRecord) -> tuple[MetadataImage, Any]:
    delta = MetadataDelta(image)
    for i, r in enumerate(records):
        delta.replay(r, image.offset + 1 + i, 1)
    return delta.apply(), delta


def _broker(broker_id: int, migrating: bool = True, fenced: bool = False) -> mpb.MetadataRecord:
    r = mpb.MetadataRecord()
    reg = r.register_broker_record
    reg.broker_id, reg.is_migrating_zk_broker, reg.broker_epoch = (
        broker_id,
        migrating,
        10 + broker_id,
    )
    reg.fenced = fenced
    reg.end_points.add(name="PLAINTEXT", host="h", port=9092, security_protocol=0)
    reg.end_points.add(name="INTERNAL", host="h", port=9000 + broker_id, security_protocol=0)
    return r


def _topic(
    name: str, topic_id: bytes, partitions: dict[int, list[int]]
) -> list[mpb.MetadataRecord]:
    t = mpb.MetadataRecord()
    t.topic_record.name, t.topic_record.topic_id = name, topic_id
    out = [t]
    for p, replicas in partitions.items():
        r = mpb.MetadataRecord()
        pr = r.partition_record
        pr.partition_id, pr.topic_id, pr.leader = p, topic_id, replicas[0]
        pr.replicas.extend(replicas)
        pr.isr.extend(replicas)
        out.append(r)
    return out


# --- states ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("state", "phase", "left", "expected"),
    [
        (ZK_MIGRATION_NONE, Phase.INACTIVE, False, ClusterState.KRaft),
        (ZK_MIGRATION_PRE, Phase.WAIT_FOR_CONTROLLER_QUORUM, True, ClusterState.ZooKeeper),
        (ZK_MIGRATION_PRE, Phase.WAIT_FOR_BROKERS, True, ClusterState.MigrationEligible),
        (ZK_MIGRATION_PRE, Phase.BECOME_CONTROLLER, True, ClusterState.MigrationReady),
        (ZK_MIGRATION_PRE, Phase.ZK_MIGRATION, True, ClusterState.MigrationReady),
        (ZK_MIGRATION_MIGRATION, Phase.DUAL_WRITE, True, ClusterState.MigrationActive),
        (ZK_MIGRATION_MIGRATION, Phase.DUAL_WRITE, False, ClusterState.MigrationFinished),
        (ZK_MIGRATION_POST, Phase.INACTIVE, False, ClusterState.KRaft),
    ],
)
def test_the_cluster_state_follows_the_persisted_state_and_the_phase(
    state: int, phase: Phase, left: bool, expected: ClusterState
) -> None:
    assert cluster_state(state, phase, left) == expected


# --- readiness ---------------------------------------------------------------------------


def test_the_quorum_needs_every_answering_voter_and_a_majority_configured() -> None:
    assert readiness.quorum_problem({1: True, 2: True, 3: True}) is None
    assert readiness.quorum_problem({1: True, 2: True, 3: "did not answer"}) is None
    assert "did not answer" in readiness.quorum_note({1: True, 2: True, 3: "did not answer"})
    short = readiness.quorum_problem({1: True, 2: "x down", 3: "y down"})
    assert short is not None and "controller 2 x down" in short
    off = readiness.quorum_problem({1: True, 2: False, 3: True})
    assert off is not None and "controllers [2] are not configured" in off


def test_brokers_must_be_registered_migrating_unfenced_and_checked() -> None:
    snap = generate(ClusterSpec(brokers=3, topics=2, partitions=6))
    image, _ = _apply(
        MetadataImage.EMPTY, _broker(1), _broker(2, migrating=False), _broker(3, fenced=True)
    )
    ok = bpb.MigrationCheckResponse(broker_id=1, cluster_id="c", config_enabled=True)
    problem = readiness.broker_problem(snap, image, {1: ok}, "c")
    assert problem is not None
    assert "brokers [2] registered as KRaft brokers" in problem
    assert "brokers [3] are fenced" in problem
    assert "MigrationCheck" not in problem
    image, _ = _apply(MetadataImage.EMPTY, _broker(1), _broker(2), _broker(3))
    checks: dict[int, Any] = {
        1: ok,
        2: bpb.MigrationCheckResponse(cluster_id="other", config_enabled=True),
        3: "unreachable at h:9003: UNAVAILABLE",
    }
    problem = readiness.broker_problem(snap, image, checks, "c")
    assert problem is not None and "2 (cluster id other, not c)" in problem
    assert "3 (unreachable at h:9003" in problem
    checks = {b: ok for b in (1, 2, 3)}
    assert readiness.broker_problem(snap, image, checks, "c") is None
    # a broker an assignment names but that is not registered anywhere is awaited too
    assert readiness.expected_brokers(snap) >= set(snap.brokers)


def test_cluster_id_metadata_version_and_a_stale_migration_znode_are_named() -> None:
    assert readiness.cluster_id_problem("a", "a") is None
    mismatch = readiness.cluster_id_problem("a", "b")
    assert mismatch is not None and "a" in mismatch and "--cluster-id=b" in mismatch
    assert "no /cluster/id" in (readiness.cluster_id_problem("a", None) or "")
    old, _ = _apply(MetadataImage.EMPTY, _feature(versions.IBP_3_6_IV0))
    assert "3.6-IV1" in (readiness.metadata_version_problem(old) or "")
    new, _ = _apply(MetadataImage.EMPTY, _feature(versions.IBP_3_6_IV1))
    assert readiness.metadata_version_problem(new) is None
    assert readiness.stale_migration_problem(None) is None
    assert readiness.stale_migration_problem(MigrationZnode(-1, -1, -1, -1)) is None
    stale = readiness.stale_migration_problem(MigrationZnode(3000, 2, 500, 2))
    assert stale is not None and "offset 500" in stale and "delete /migration" in stale


def _feature(level: int) -> mpb.MetadataRecord:
    r = mpb.MetadataRecord()
    r.feature_level_record.name, r.feature_level_record.feature_level = "metadata.version", level
    return r


# --- storage -----------------------------------------------------------------------------


def test_storage_is_formatted_once_and_read_back(tmp_path: Path) -> None:
    d = tmp_path / "meta"
    made = format_storage(d, 3000, "MkU3OEVBNTcwNTJENDM2Qk", versions.IBP_3_6_IV2)
    got = read_storage(d)
    assert got == made and got.metadata_version == versions.IBP_3_6_IV2
    with pytest.raises(StorageError, match="already exists"):
        format_storage(d, 3000, "MkU3OEVBNTcwNTJENDM2Qk", versions.LATEST)
    with pytest.raises(StorageError, match="not Kafka's form"):
        format_storage(tmp_path / "other", 1, "has space", versions.LATEST)
    (d / BOOTSTRAP).write_bytes(b"\x00" * 70)
    with pytest.raises(StorageError, match=BOOTSTRAP):
        read_storage(d)


def test_a_controller_resolves_its_cluster_id_from_storage_or_config(tmp_path: Path) -> None:
    props = {
        "node.id": "1", "process.roles": "controller", "controller.quorum.voters": "1@h:9093",
        "listeners": "CONTROLLER://h:9093", "metadata.log.dir": str(tmp_path / "m"),
    }  # fmt: skip
    with pytest.raises(StorageError, match="is not formatted"):
        resolve_storage(parse_config(props, "t"))
    assert resolve_storage(parse_config({**props, "cluster.id": "x"}, "t")) == (
        "x",
        versions.LATEST,
    )
    format_storage(tmp_path / "m", 1, "formatted", versions.IBP_3_6_IV2)
    assert resolve_storage(parse_config(props, "t")) == ("formatted", versions.IBP_3_6_IV2)
    with pytest.raises(StorageError, match=r"cluster\.id=x but"):
        resolve_storage(parse_config({**props, "cluster.id": "x"}, "t"))
    with pytest.raises(StorageError, match=r"node\.id=2"):
        resolve_storage(
            parse_config({**props, "node.id": "2", "controller.quorum.voters": "2@h:9093"}, "t")
        )


# --- the RPCs to ZooKeeper brokers ---------------------------------------------------------


class RecordingChannel(ControllerChannel):
    """The channel's contract without the network: what would be sent, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[tuple[int, str, Any]] = []
        self.targets: dict[int, str] = {}

    def set_brokers(self, targets: dict[int, str]) -> None:
        self.targets = dict(targets)

    def send(self, broker_id: int, what: str, send: Any) -> None:
        assert isinstance(send, Rpc) and send.method == what
        self.sent.append((broker_id, what, send.request))


def test_full_then_incremental_requests_follow_kafkas_order_and_headers() -> None:
    image, _ = _apply(
        MetadataImage.EMPTY,
        _broker(1), _broker(2), _broker(3, migrating=False),
        *_topic("t", TOPIC_ID, {0: [1, 2], 1: [2, 3]}),
    )  # fmt: skip
    channel = RecordingChannel()
    rpcs = ZkBrokerRpcs(3000, 9, "INTERNAL", channel)
    assert rpcs.full(image) == 2
    assert channel.targets == {1: "h:9001", 2: "h:9002"}  # KRaft brokers read the log
    kinds = [(b, what) for b, what, _ in channel.sent]
    assert kinds == [(1, "UpdateMetadata"), (2, "UpdateMetadata"), (1, "LeaderAndIsr"),
                     (2, "LeaderAndIsr")]  # fmt: skip
    first = channel.sent[0][2]
    assert first.type == bpb.FULL and first.header.is_kraft_controller
    assert (first.header.controller_id, first.header.controller_epoch) == (3000, 9)
    assert first.header.broker_epoch == 11  # broker 1's KRaft registration epoch
    assert {b.id: b.kraft for b in first.live_brokers} == {1: False, 2: False, 3: True}
    assert len(first.partition_states) == 2
    lai = {b: [s.partition_index for s in r.partition_states] for b, w, r in channel.sent[2:]}
    assert lai == {1: [0], 2: [0, 1]}

    channel.sent.clear()
    removal = mpb.MetadataRecord()
    removal.remove_topic_record.topic_id = TOPIC_ID
    after, delta = _apply(image, removal)
    rpcs.publish(ImageChange(image, after, delta, LoadManifest(5, 5, 1)))
    stops = {b: r for b, w, r in channel.sent if w == "StopReplica"}
    assert sorted(stops) == [1, 2] and all(r.delete_partitions for r in stops.values())
    updates = [r for _, w, r in channel.sent if w == "UpdateMetadata"]
    assert updates and all(
        s.leader == LEADER_DURING_DELETE for u in updates for s in u.partition_states
    )
    assert all(u.type == bpb.INCREMENTAL for u in updates)


def test_the_worker_sends_what_the_calls_send_in_their_order() -> None:
    """BrokerRpcWorker: the full pair and a change after it, built on its own thread, reach
    each broker as the synchronous calls send them; a failed task makes the next change
    go out as the full pair."""
    image, _ = _apply(
        MetadataImage.EMPTY, _broker(1), _broker(2), *_topic("t", TOPIC_ID, {0: [1, 2]})
    )
    removal = mpb.MetadataRecord()
    removal.remove_topic_record.topic_id = TOPIC_ID
    after, delta = _apply(image, removal)
    change = ImageChange(image, after, delta, LoadManifest(5, 5, 1))

    direct = RecordingChannel()
    rpcs = ZkBrokerRpcs(3000, 9, "INTERNAL", direct)
    rpcs.full(image)
    rpcs.publish(change)
    queued = RecordingChannel()
    worker = BrokerRpcWorker(ZkBrokerRpcs(3000, 9, "INTERNAL", queued))
    assert worker.full(image) == 2
    worker.publish(change)
    worker.settle()
    assert [(b, w) for b, w, _ in queued.sent] == [(b, w) for b, w, _ in direct.sent]

    failing = FailingOnce()
    worker = BrokerRpcWorker(ZkBrokerRpcs(3000, 9, "INTERNAL", failing))
    worker.full(image)  # its first send fails: the task is logged and given up
    worker.publish(change)
    worker.settle()
    updates = [r for _, w, r in failing.sent if w == "UpdateMetadata"]
    assert updates and all(u.type == bpb.FULL for u in updates)


class FailingOnce(RecordingChannel):
    """A channel whose first send fails."""

    def send(self, broker_id: int, what: str, send: Any) -> None:
        if not hasattr(self, "failed"):
            self.failed = True
            raise RuntimeError("the first send fails")
        super().send(broker_id, what, send)


def test_a_broker_in_controlled_shutdown_is_still_live_in_update_metadata() -> None:
    """Its leaderships move a step at a time: until the last step it still leads some
    partitions, which a ZooKeeper-mode broker would show offline were it not live."""
    shutting = mpb.MetadataRecord()
    shutting.broker_registration_change_record.broker_id = 2
    shutting.broker_registration_change_record.broker_epoch = 12
    shutting.broker_registration_change_record.in_controlled_shutdown = 1
    image, _ = _apply(
        MetadataImage.EMPTY,
        _broker(1), _broker(2), _broker(3, fenced=True), shutting,
        *_topic("t", TOPIC_ID, {0: [2, 1]}),
    )  # fmt: skip
    assert image.brokers[2].in_controlled_shutdown
    channel = RecordingChannel()
    ZkBrokerRpcs(3000, 9, "INTERNAL", channel).full(image)
    update = channel.sent[0][2]
    assert [b.id for b in update.live_brokers] == [1, 2]  # not the fenced one
    assert [b.shutting_down for b in update.live_brokers] == [False, True]  # no ISR takes it
    assert not update.partition_states[0].offline_replicas


# --- the driver off the leadership ---------------------------------------------------------


class Follower:
    """A controller port that is never active (a follower's)."""

    def inputs(self) -> Inputs:
        return Inputs(
            node_id=2, active=False, leader_id=1, epoch=3, image=MetadataImage.EMPTY,
            high_watermark=0,
        )  # fmt: skip

    def refuse_admin_writes(self, why: str | None) -> None:
        pass


def test_a_follower_does_not_keep_the_changes_published_to_it(tmp_path: Path) -> None:
    config = parse_config(
        {
            "node.id": "2", "process.roles": "controller", "controller.quorum.voters": "2@h:9093",
            "listeners": "CONTROLLER://h:9093", "metadata.log.dir": str(tmp_path),
        },
        "t",
    )  # fmt: skip
    driver = MigrationDriver(config, "cluster", Follower())  # type: ignore[arg-type]
    for offset in range(5):
        manifest = LoadManifest(offset, offset, 3)
        driver.publish(ImageChange(MetadataImage.EMPTY, MetadataImage.EMPTY, None, manifest))
    assert driver.queued_changes == 5
    driver.start()
    try:
        deadline = time.monotonic() + 30
        while driver.queued_changes:
            assert time.monotonic() < deadline, "the follower still holds what was published"
            time.sleep(0.05)
        assert "not the active controller" in driver.status().outcome
    finally:
        driver.stop()
