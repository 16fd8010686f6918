"""The rest of the migration, the Kafka way: ZooKeeper-mode brokers restarted one by one
into KRaft mode while real Kafka clients read Metadata through both kinds (they agree,
nothing goes offline), MigrationFinished (still dual-writing), finalization refused
while a ZooKeeper broker remains, then finalized by restarting the controllers without
the flag: KRaft, and ZooKeeper never written again."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any, NamedTuple

import pytest
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from kafka import KafkaAdminClient, TopicPartition
from kafka.errors import NoReassignmentInProgressError
from kafka.protocol.metadata import MetadataRequest

from migration.broker.modes import Mode
from migration.local.zookeeper import EmbeddedZooKeeper
from migration.zk import paths
from migration.zk.client import ZkClient
from migration.zk.model.cluster import parse_controller
from tests.broker_harness import eventually
from tests.migration_harness import (
    MigrationRig,
    admin_via,
    migration_rig,
    restart_controllers,
    results_of,
)
from tests.page_checks import Seen, later, see

BROKERS = [1, 2, 3]
FLAG = "zookeeper.metadata.migration.enable"

Shape = tuple[
    tuple[tuple[int, str, int], ...],
    dict[str, dict[int, tuple[int, tuple[int, ...], tuple[int, ...]]]],
]


def metadata_via(rig: MigrationRig, broker: int) -> Shape:
    """Metadata (every topic) as ``broker`` answers it, through kafka-python pinned to
    that broker: (brokers, {topic: {partition: (leader, replicas, isr)}})."""
    client = KafkaAdminClient(
        bootstrap_servers=f"127.0.0.1:{rig.cluster.brokers[broker].port}",
        request_timeout_ms=10_000,
    )
    try:

        async def ask() -> Any:
            request = MetadataRequest(topics=None, allow_auto_topic_creation=False)
            return (await client._manager.send(request, node_id=broker)).to_dict()

        answer = client._manager.run(ask)
    finally:
        client.close()
    brokers = tuple(sorted((b["node_id"], b["host"], b["port"]) for b in answer["brokers"]))
    topics = {
        t["name"]: {
            p["partition_index"]: (
                p["leader_id"],
                tuple(sorted(p["replica_nodes"])),
                tuple(sorted(p["isr_nodes"])),
            )
            for p in t["partitions"]
        }
        for t in answer["topics"]
    }
    return brokers, topics


def offline(shape: Shape) -> list[str]:
    return [f"{t}-{p}" for t, parts in shape[1].items() for p, s in parts.items() if s[0] < 0]


class Sample(NamedTuple):
    zk: int
    kraft: int
    same: bool
    settled: bool  # taken wholly while the roll had converged and nothing was changing


class Sampler(threading.Thread):
    """Asks Metadata through one ZooKeeper-mode and one KRaft-mode broker, again and
    again, while brokers are rolled; keeps every pair and every offline partition. The
    fixture marks a stretch in which nothing changes (``settled``: from the roll's
    convergence, for a few samples, before the controllers restart), where the two
    kinds must agree every time; while a broker restarts they may differ for a
    moment (its liveness, ISRs), and then agree."""

    def __init__(self, rig: MigrationRig) -> None:
        super().__init__(daemon=True)
        self.rig = rig
        self.pairs: list[Sample] = []
        self.offline: list[str] = []
        self.stop = threading.Event()
        self.kraft: set[int] = set()
        self.restarting: int | None = None
        self.settled = False

    def run(self) -> None:
        asyncio.set_event_loop(asyncio.new_event_loop())
        while not self.stop.wait(0.2):
            up = [b for b in BROKERS if b != self.restarting]
            zk = [b for b in up if b not in self.kraft]
            kraft = [b for b in up if b in self.kraft]
            if not zk or not kraft:
                continue
            settled = self.settled
            try:
                a, b = metadata_via(self.rig, zk[0]), metadata_via(self.rig, kraft[0])
            except Exception:
                continue  # a broker stopping under the sampler: not a sample
            self.offline += offline(a) + offline(b)
            self.pairs.append(Sample(zk[0], kraft[0], a == b, settled and self.settled))


def agree(rig: MigrationRig, zk_broker: int, kraft_broker: int) -> Shape:
    """Hang guard until both answer the same Metadata, with every partition led."""

    def same() -> Shape | None:
        a, b = metadata_via(rig, zk_broker), metadata_via(rig, kraft_broker)
        return a if a == b and not offline(a) else None

    return eventually(same, 60, f"Metadata through {zk_broker} and {kraft_broker} agree")


def tree(zk: ZkClient) -> dict[str, bytes]:
    """Every znode below the chroot and its bytes."""
    out: dict[str, bytes] = {}
    todo = ["/"]
    while todo:
        path = todo.pop()
        data, _ = zk.kazoo.get(path)
        out[path] = data
        todo += [f"{path.rstrip('/')}/{c}" for c in zk.kazoo.get_children(path)]
    return out


@pytest.fixture(scope="module")
def lifecycle(
    zk_server: EmbeddedZooKeeper, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[MigrationRig, dict[str, Any]]]:
    tmp = tmp_path_factory.mktemp("lifecycle")
    with migration_rig(zk_server, tmp, metrics=True) as rig:
        facts: dict[str, Any] = {}
        rig.wait_phase("DUAL_WRITE")
        sampler = Sampler(rig)
        sampler.start()
        for b in BROKERS[:2]:  # two of three into KRaft mode
            rig.cluster.set_mode(b, Mode.KRAFT)
            sampler.restarting = b
            rig.cluster.restart(b)
            rig.cluster.wait_ready(90, expected=BROKERS)
            sampler.kraft.add(b)
            sampler.restarting = None
            facts[f"agreed-{b}"] = agree(rig, 3, b)
        # the roll converged once every KRaft-mode broker agrees with the ZooKeeper-mode
        # one (the sampler asks the first of them, which heard of the second's return
        # on its own time): nothing changes until the next step
        for b in BROKERS[:2]:
            agree(rig, 3, b)
        sampler.settled = True
        eventually(lambda: sum(1 for s in sampler.pairs if s.settled) >= 3, 60, "settled samples")
        # a controller failover may fence a broker that misses heartbeats meanwhile (Kafka's
        # rule too): the two kinds may differ for a moment again, as while a broker restarts
        sampler.settled = False
        facts["two_rolled"] = rig.status()
        # Chromium's view, asserted by its own test (a skip without Chromium, not an error
        # of every test here)
        facts["page_rolling"] = later(
            lambda: see(rig, "MigrationActive", "MigrationActive-rolling")
        )

        # finalization refused while broker 3 is still in ZooKeeper mode
        restart_controllers(rig, **{FLAG: "false"})
        facts["refused"] = eventually(
            lambda: (s := rig.status())["outcome"].startswith("finalization refused") and s,
            60,
            "finalization refused",
        )
        admin = admin_via(rig, 3)  # the ZooKeeper-mode broker forwards it
        results_of(admin.create_topics([NewTopic("while-refused", 2, 3)]))
        facts["refused_topic_in_zk"] = eventually(
            lambda: rig.zk.kazoo.exists(paths.topic("while-refused")), 60, "dual-written"
        )
        restart_controllers(rig, **{FLAG: "true"})  # the operator takes it back
        rig.wait_phase("DUAL_WRITE")

        rig.cluster.set_mode(3, Mode.KRAFT)
        sampler.restarting = 3
        rig.cluster.restart(3)
        rig.cluster.wait_ready(90, expected=BROKERS)
        sampler.restarting = None
        sampler.stop.set()
        sampler.join()
        facts["sampler"] = sampler
        facts["finished"] = eventually(
            lambda: (s := rig.status())["state"] == "MigrationFinished" and s, 60, "finished"
        )
        admin = admin_via(rig, 2)
        results_of(admin.create_topics([NewTopic("while-finished", 3, 3)]))
        facts["finished_topic_in_zk"] = eventually(
            lambda: rig.zk.kazoo.exists(paths.topic("while-finished")), 60, "dual-written"
        )
        facts["page_finished"] = later(lambda: see(rig, "MigrationFinished"))

        # finalize: controllers restarted without the flag and without zookeeper.connect
        restart_controllers(rig, **{FLAG: "false", "zookeeper.connect": None})
        facts["final"] = eventually(
            lambda: (s := rig.status())["state"] == "KRaft" and s, 60, "finalized"
        )
        facts["tree_after_finalize"] = tree(rig.zk)
        facts["page_kraft"] = later(lambda: see(rig, "KRaft"))
        yield rig, facts


def test_brokers_roll_into_kraft_mode_with_metadata_agreeing_and_nothing_offline(
    lifecycle: tuple[MigrationRig, dict[str, Any]],
) -> None:
    rig, facts = lifecycle
    sampler: Sampler = facts["sampler"]
    assert sampler.pairs, "the sampler compared Metadata during the rolling restart"
    assert sampler.offline == []
    agreed = sum(1 for s in sampler.pairs if s.same)
    settled = [s for s in sampler.pairs if s.settled]
    print(f"Metadata samples: {len(sampler.pairs)}, agreeing {agreed}, settled {len(settled)}")
    # once the roll converged, and through the controllers' restarts, every answer agreed
    assert settled, "the sampler compared Metadata after the roll converged"
    assert [s for s in settled if not s.same] == []
    # each step converged: same topics, partitions, leaders, ISRs and brokers, all led
    brokers, topics = facts["agreed-2"]
    assert [b[0] for b in brokers] == BROKERS
    assert len(topics) >= 4 and all(len(s[2]) == 3 for p in topics.values() for s in p.values())

    two = facts["two_rolled"]
    assert two["zk_brokers"] == [3] and two["kraft_brokers"] == [1, 2]
    assert two["state"] == "MigrationActive"
    for b in BROKERS:
        log = rig.cluster.brokers[b].log.read_text()
        assert "metadata type 3 (KRaft)" in log
        assert "controlled shutdown through the KRaft controller complete" in log
        # the KRaft registration replaced the migrating one; ZooKeeper's is gone
        assert f"broker {b} registered with the KRaft controller (broker epoch" in log
        assert not rig.zk.kazoo.exists(paths.broker(b))
        meta = (rig.cluster.brokers[b].config.parent / "data" / "meta.properties").read_text()
        assert f"node.id={b}" in meta and "version=1" in meta


def test_migration_finished_keeps_dual_writing_and_finalization_waits_for_zk_brokers(
    lifecycle: tuple[MigrationRig, dict[str, Any]],
) -> None:
    _, facts = lifecycle
    refused = facts["refused"]
    assert "ZooKeeper-mode brokers [3] are still registered" in refused["outcome"]
    assert "dual-writing goes on" in refused["outcome"]
    assert refused["zk_migration_state"] == "MIGRATION"
    assert facts["refused_topic_in_zk"]

    finished = facts["finished"]
    assert finished["state_code"] == 5 and finished["zk_brokers"] == []
    assert finished["kraft_brokers"] == BROKERS and finished["driver_phase"] == "DUAL_WRITE"
    assert facts["finished_topic_in_zk"]

    final = facts["final"]
    assert final["state_code"] == 6 and final["zk_migration_state"] == "POST_MIGRATION"
    assert "finalized" in final["outcome"]
    assert final["driver_phase"] == "INACTIVE"  # nothing left to migrate: no phase


def test_the_live_page_follows_the_roll_to_kraft_and_finalization_in_a_browser(
    lifecycle: tuple[MigrationRig, dict[str, Any]],
) -> None:
    _, facts = lifecycle
    rolling: Seen = facts["page_rolling"].get()
    assert 'id="state">MigrationActive<' in rolling.dom
    assert rolling.broker_modes() == {1: "kraft", 2: "kraft", 3: "migrating"}
    # a broker already in KRaft mode: the way back starts by rolling it back
    assert "roll them back first" in rolling.dom
    assert rolling.json["rollback"]["runbook"].startswith("runbooks/rollback.md#2-")

    finished: Seen = facts["page_finished"].get()
    assert 'id="state">MigrationFinished<' in finished.dom
    assert 'id="phase">DUAL_WRITE<' in finished.dom
    assert finished.broker_modes() == dict.fromkeys(BROKERS, "kraft")
    assert "Audit: ZooKeeper holds what KRaft committed" in finished.dom
    assert finished.json["no_way_back"] is False
    assert finished.json["migration_znode"]["kraft_metadata_offset"] > 0

    final: Seen = facts["page_kraft"].get()
    assert 'id="state">KRaft<' in final.dom
    assert final.broker_modes() == dict.fromkeys(BROKERS, "kraft")
    assert "No way back: the migration is finalized." in final.dom
    assert final.json["rollback"] is None and final.json["no_way_back"] is True
    assert final.json["zk_migration_state"] == "POST_MIGRATION"
    assert final.json["next_step"]["title"] == "Retire ZooKeeper"
    assert all(b["fenced"] is False for b in final.json["brokers"])


def test_after_finalization_zookeeper_never_changes_again(
    lifecycle: tuple[MigrationRig, dict[str, Any]],
) -> None:
    rig, facts = lifecycle
    admin = admin_via(rig, 1)
    results_of(admin.create_topics([NewTopic("after-finalize", 4, 3)]))
    resource = ConfigResource(ResourceType.TOPIC, "after-finalize")
    resource.add_incremental_config(
        ConfigEntry("retention.ms", "1234", incremental_operation=AlterConfigOpType.SET)
    )
    results_of(admin.incremental_alter_configs([resource]))
    acl = AclBinding(
        ResourceType.TOPIC, "after-finalize", ResourcePatternType.LITERAL, "User:alice", "*",
        AclOperation.READ, AclPermissionType.ALLOW,
    )  # fmt: skip
    results_of(admin.create_acls([acl]))
    results_of(admin.delete_topics(["while-refused"]))
    # served from the KRaft brokers' images
    eventually(
        lambda: (
            "after-finalize" in metadata_via(rig, 3)[1]
            and "while-refused" not in metadata_via(rig, 2)[1]
        ),
        60,
        "the changes in every broker's image",
    )
    assert tree(rig.zk) == facts["tree_after_finalize"]
    owner = parse_controller(paths.CONTROLLER, rig.zk.get(paths.CONTROLLER)[0])
    assert owner.is_kraft  # left as the last dual-write left it


def test_a_kraft_broker_killed_comes_back_from_its_own_log_and_validates_locally(
    lifecycle: tuple[MigrationRig, dict[str, Any]],
) -> None:
    rig, _ = lifecycle
    admin = admin_via(rig, 2)
    checked = admin.create_topics([NewTopic("only-checked", 2, 3)], validate_only=True)
    checked["only-checked"].result(timeout=60)
    bad = admin.create_topics([NewTopic("too-many-replicas", 1, 9)], validate_only=True)
    with pytest.raises(Exception, match="INVALID_REPLICATION_FACTOR"):
        bad["too-many-replicas"].result(timeout=60)
    assert "only-checked" not in metadata_via(rig, 2)[1]  # validated, never written

    metadata_log = rig.cluster.brokers[2].config.parent / "data" / "__cluster_metadata-0"
    assert any(metadata_log.glob("*.log"))
    rig.cluster.kill(2)  # SIGKILL: no controlled shutdown; the controller fences it later
    rig.cluster.start(2)
    rig.cluster.wait_ready(90, expected=BROKERS)
    agree(rig, 1, 2)
    log = rig.cluster.brokers[2].log.read_text()
    assert log.count("metadata type 3 (KRaft)") >= 2


def test_a_partition_reassigned_through_a_kraft_broker_moves_and_completes(
    lifecycle: tuple[MigrationRig, dict[str, Any]],
) -> None:
    """kafka-python's AlterPartitionReassignments through a KRaft-mode broker (forwarded
    to the controller): the leader moved off, the broker added joins the ISR through its
    new leader's AlterPartition, and the controller completes the move; none is listed
    after, and a cancel then answers NO_REASSIGNMENT_IN_PROGRESS."""
    rig, _ = lifecycle
    admin = admin_via(rig, 1)
    results_of(admin.create_topics([NewTopic("moved", 1, 2)]))
    shape = eventually(lambda: "moved" in (s := metadata_via(rig, 1))[1] and s, 60, "created")
    leader, replicas, _ = shape[1]["moved"][0]
    target = [*(r for r in replicas if r != leader), min(set(BROKERS) - set(replicas))]
    moved = TopicPartition("moved", 0)
    client = KafkaAdminClient(
        bootstrap_servers=f"127.0.0.1:{rig.cluster.brokers[1].port}", request_timeout_ms=30_000
    )
    try:
        assert client.alter_partition_reassignments({moved: target}) == {moved: None}
        done = (target[0], tuple(sorted(target)), tuple(sorted(target)))
        eventually(lambda: metadata_via(rig, 2)[1]["moved"][0] == done, 60, "the move done")
        assert client.list_partition_reassignments() == {}
        cancel = client.alter_partition_reassignments({moved: None})
        assert cancel == {moved: NoReassignmentInProgressError}
    finally:
        client.close()
