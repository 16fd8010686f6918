"""The gates of a driven migration and the refusals between its steps, on hand-built
views of what Kafka reports: each closed while Kafka is not there yet (saying why, in
words an operator can act on) and open once it is."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from migration.image.model import (
    ZK_MIGRATION_MIGRATION,
    ZK_MIGRATION_NONE,
    ZK_MIGRATION_POST,
    ZK_MIGRATION_PRE,
    BrokerImage,
    EndpointImage,
    MetadataImage,
    PartitionImage,
    TopicImage,
)
from migration.operate.gates import (
    GATES,
    TOPICS_FREE,
    Baseline,
    Gate,
    View,
    addresses,
    broker_baseline,
    brokers_open,
    copied_open,
    dual_write_open,
    finalized_open,
    gate_for,
    kraft_back,
    migrating_back,
    no_zk_brokers_open,
    out_of_sync,
    preflight_open,
    quorum_open,
    quorum_refusal,
    reassigning,
    refusal,
    replaced,
    zk_back,
    zookeeper_open,
)
from migration.operate.inventory import Broker, Command, Controller, Inventory
from migration.operate.status import broker_modes, render_status
from migration.zk.client import ConnectString
from migration.zk.model.brokers import BrokerRegistration, Endpoint
from migration.zk.model.cluster import ClusterId, ControllerZnode, MigrationZnode
from migration.zk.model.topics import PartitionState, ReassignmentTarget, TopicAssignment
from migration.zk.tree_read import PartitionSnapshot, TopicSnapshot, Versioned, ZkSnapshot

NO_COMMAND = Command("", ())
BROKERS = (1, 2, 3)
CONTROLLERS = (3000, 3001, 3002)


def _inventory() -> Inventory:
    return Inventory(
        path=Path("/inv/inventory.toml"),
        version="3.9.2",
        kafka_home="/opt/kafka",
        zookeeper_connect=ConnectString.parse("zk1:2181/kafka"),
        zookeeper_client_config=Path("/inv/kafka1.properties"),
        brokers=tuple(
            Broker(i, f"kafka{i}", Path(f"/inv/kafka{i}.properties"), NO_COMMAND, None)
            for i in BROKERS
        ),
        controllers=tuple(
            Controller(
                i,
                f"ctl{i}",
                9093,
                Path(f"/inv/ctl{i}.properties"),
                Path(f"/m{i}"),
                NO_COMMAND,
                NO_COMMAND,
                NO_COMMAND,
                None,
            )
            for i in CONTROLLERS
        ),
    )


INV = _inventory()


# --- hand-built views ---------------------------------------------------------------------


def _registration(broker_id: int, timestamp: int = 1000) -> BrokerRegistration:
    return BrokerRegistration(broker_id, (), timestamp)


def _topic(
    name: str,
    states: dict[int, PartitionState | None],
    replicas: tuple[int, ...] = BROKERS,
    adding: dict[int, tuple[int, ...]] | None = None,
    removing: dict[int, tuple[int, ...]] | None = None,
) -> TopicSnapshot:
    assignment = TopicAssignment(
        name, {pid: replicas for pid in states}, None, adding or {}, removing or {}
    )
    partitions = {
        pid: PartitionSnapshot(state, 0) for pid, state in states.items() if state is not None
    }
    return TopicSnapshot(assignment, partitions)


def _state(leader: int = 1, isr: tuple[int, ...] = BROKERS) -> PartitionState:
    return PartitionState(leader, 5, 7, isr)


def _snap(
    brokers: dict[int, int] | None = None,
    topics: dict[str, TopicSnapshot] | None = None,
    reassignment: tuple[ReassignmentTarget, ...] = (),
    migration_offset: int | None = None,
    controller: ControllerZnode | None = None,
) -> ZkSnapshot:
    """ZooKeeper's tree: ``brokers`` id -> registration timestamp (default: every
    inventory broker at 1000), every partition in sync by default."""
    brokers = {i: 1000 for i in BROKERS} if brokers is None else brokers
    topics = {"orders": _topic("orders", {0: _state(), 1: _state(2)})} if topics is None else topics
    migration = (
        Versioned(MigrationZnode(3000, 4, migration_offset, 9), 3)
        if migration_offset is not None
        else None
    )
    return ZkSnapshot(
        cluster_id=ClusterId("MkU3OEVBNTcwNTJENDM2Qk"),
        controller=controller,
        migration=migration,
        brokers={i: _registration(i, t) for i, t in brokers.items()},
        topics=topics,
        reassignment=reassignment,
    )


def _kraft_broker(
    broker_id: int, epoch: int = 10, *, migrating: bool = False, fenced: bool = False
) -> BrokerImage:
    return BrokerImage(broker_id, b"\0" * 16, epoch, (), (), None, fenced, False, migrating)


def _image(
    brokers: dict[int, BrokerImage] | None = None,
    state: int = ZK_MIGRATION_MIGRATION,
    topics: dict[bytes, TopicImage] | None = None,
) -> MetadataImage:
    return MetadataImage(brokers=brokers or {}, topics=topics or {}, zk_migration_state=state)


def _quorum(
    leader: int = 3000, lags: dict[int, int] | None = None, error: str | None = None
) -> dict[str, Any]:
    """DescribeQuorum as quorum_json shapes it."""
    if error is not None:
        return {"bootstrap": [], "error": error}
    lags = {i: 0 for i in CONTROLLERS} if lags is None else lags
    voters = [
        {"replica_id": i, "log_end_offset": 100 - lag, "lag": lag,
         "status": "Leader" if i == leader else "Follower"}
        for i, lag in lags.items()
    ]  # fmt: skip
    return {"bootstrap": [], "error": None, "leader_id": leader, "leader_epoch": 3,
            "high_watermark": 100, "max_follower_lag": max(lags.values(), default=0),
            "voters": voters, "observers": []}  # fmt: skip


def _view(
    snap: ZkSnapshot | None = None,
    image: MetadataImage | None = None,
    log_end: int | None = 500,
    quorum: dict[str, Any] | None = None,
) -> View:
    return View(
        snap=snap,
        zk_error=None if snap is not None else "could not connect to ZooKeeper within 15s",
        image=image,
        log_end=log_end if image is not None else None,
        log_error=None if image is not None else "no metadata log in /m3000 yet",
        quorum=quorum if quorum is not None else _quorum(),
    )


def _migrating(epoch: int = 10) -> dict[int, BrokerImage]:
    return {i: _kraft_broker(i, epoch, migrating=True) for i in BROKERS}


def _kraft(epoch: int = 20) -> dict[int, BrokerImage]:
    return {i: _kraft_broker(i, epoch) for i in BROKERS}


OPEN = Baseline()


# --- what is read -------------------------------------------------------------------------


def test_out_of_sync() -> None:
    topics = {
        "a": _topic("a", {0: _state(), 1: _state(-1), 2: _state(isr=(1, 2)), 3: None}),
        "b": _topic("b", {0: _state(isr=(3, 2, 1)), 1: _state(isr=(1, 2, 3, 4))}),
    }
    assert out_of_sync(_snap(topics=topics)) == ["a-1", "a-2", "a-3", "b-1"]
    assert out_of_sync(_snap()) == []
    assert out_of_sync(_snap(topics={})) == []


def test_out_of_sync_leaves_the_replicas_being_added_out() -> None:
    """A reassignment's adding replicas are not in the ISR yet: not out of sync for that."""
    topic = _topic("a", {0: _state(isr=BROKERS)}, replicas=(1, 2, 3, 4), adding={0: (4,)})
    assert out_of_sync(_snap(topics={"a": topic})) == []
    topic = _topic("a", {0: _state(isr=(1, 2))}, replicas=(1, 2, 3, 4), adding={0: (4,)})
    assert out_of_sync(_snap(topics={"a": topic})) == ["a-0"]


def test_reassigning_in_zookeeper_and_with_the_controllers() -> None:
    topics = {
        "a": _topic("a", {0: _state(), 1: _state()}, adding={1: (4,)}),
        "b": _topic("b", {0: _state(), 1: _state()}, removing={0: (3,)}),
    }
    targets = (ReassignmentTarget("c", 2, (1, 2)),)
    moving = PartitionImage((1, 2, 3), (1, 2, 3), (), (4,), 1, 0, 5, 5)
    leaving = PartitionImage((1, 2, 3), (1, 2, 3), (3,), (), 1, 0, 5, 5)
    still = PartitionImage((1, 2, 3), (1, 2, 3), (), (), 1, 0, 5, 5)
    image = _image(topics={
        b"d" * 16: TopicImage("d", b"d" * 16, {0: still, 1: moving}),
        b"e" * 16: TopicImage("e", b"e" * 16, {3: leaving}),
    })  # fmt: skip
    view = _view(_snap(topics=topics, reassignment=targets), image)
    assert reassigning(view) == ["a-1", "b-0", "c-2", "d-1", "e-3"]
    assert reassigning(_view(_snap())) == []
    assert reassigning(_view(None, image)) == ["d-1", "e-3"]  # ZooKeeper not read
    assert reassigning(_view(None)) == []


def test_broker_baseline_and_its_json() -> None:
    view = _view(_snap({1: 1234, 2: 1000}), _image({1: _kraft_broker(1, 17)}))
    assert broker_baseline(view, 1) == Baseline(zk_timestamp=1234, kraft_epoch=17)
    assert broker_baseline(view, 3) == Baseline()
    assert broker_baseline(_view(None), 1) == Baseline()
    baseline = Baseline(1234, 17, 99)
    assert Baseline.from_json(baseline.to_json()) == baseline
    assert Baseline.from_json({}) == Baseline()


# --- refusals -----------------------------------------------------------------------------


def test_refusal_none_when_all_is_well() -> None:
    assert refusal(INV, _view(_snap())) is None
    assert refusal(INV, _view(_snap({}), _image(_kraft()))) is None  # all in KRaft mode


def test_refusal_of_a_reassignment_in_flight_names_the_partition() -> None:
    targets = (ReassignmentTarget("orders", 1, (1, 2)),)
    why = refusal(INV, _view(_snap(reassignment=targets)))
    assert why is not None
    assert why.startswith("a partition reassignment is in flight (orders-1): ")
    assert "kafka-reassign-partitions --cancel" in why


def test_refusal_names_five_partitions_and_counts_the_rest() -> None:
    targets = tuple(ReassignmentTarget("t", p, (1,)) for p in range(7))
    why = refusal(INV, _view(_snap(reassignment=targets))) or ""
    assert "(t-0, t-1, t-2, t-3, t-4 and 2 more)" in why


def test_refusal_of_an_unexpected_broker() -> None:
    why = refusal(INV, _view(_snap({1: 1, 2: 1, 3: 1, 9: 1})))
    assert why == (
        "broker(s) [9] are registered but not in the inventory: add them to it (every broker "
        "is rolled), or stop them"
    )
    kraft = _kraft() | {7: _kraft_broker(7)}
    assert "broker(s) [7] are registered" in (refusal(INV, _view(_snap({}), _image(kraft))) or "")


def test_a_controller_registered_is_not_an_unexpected_broker() -> None:
    kraft = _kraft() | {3000: _kraft_broker(3000)}
    assert refusal(INV, _view(_snap({}), _image(kraft))) is None


def test_refusal_of_a_missing_broker_except_the_one_restarting() -> None:
    view = _view(_snap({1: 1, 3: 1}))
    assert refusal(INV, view) == "broker(s) [2] of the inventory are not registered: start them"
    assert refusal(INV, view, restarting=2) is None
    assert refusal(INV, view, restarting=1) == (
        "broker(s) [2] of the inventory are not registered: start them"
    )
    view = _view(_snap({1: 1}))
    assert refusal(INV, view, restarting=2) == (
        "broker(s) [3] of the inventory are not registered: start them"
    )


def test_a_broker_registered_either_way_is_not_missing() -> None:
    """Mid-roll: broker 1 in KRaft mode (gone from /brokers/ids), 2 and 3 in ZooKeeper."""
    view = _view(_snap({2: 1, 3: 1}), _image({1: _kraft_broker(1)}))
    assert refusal(INV, view) is None


def test_refusal_when_zookeeper_is_unreadable() -> None:
    assert refusal(INV, _view(None)) == (
        "ZooKeeper not read: could not connect to ZooKeeper within 15s"
    )


def _endpoint(address: str) -> tuple[str, int]:
    host, _, port = address.partition(":")
    return host, int(port)


def _at(view: View, zk: dict[int, str], kraft: dict[int, str]) -> View:
    """``view`` with each broker's registrations at ``host:port``."""
    assert view.snap is not None and view.image is not None
    brokers = {
        i: replace(r, endpoints=(Endpoint("PLAINTEXT", *_endpoint(zk[i]), "PLAINTEXT"),))
        for i, r in view.snap.brokers.items()
    }
    images = {
        i: replace(b, endpoints=(EndpointImage("PLAINTEXT", *_endpoint(kraft[i]), 0),))
        for i, b in view.image.brokers.items()
    }
    snap, image = replace(view.snap, brokers=brokers), replace(view.image, brokers=images)
    return replace(view, snap=snap, image=image)


def test_addresses_zookeepers_registration_else_the_controllers() -> None:
    view = _view(_snap({2: 1, 3: 1}), _image({1: _kraft_broker(1), 2: _kraft_broker(2)}))
    view = _at(view, {2: "kafka2:9092", 3: "kafka3:9092"}, {1: "kafka1:9092", 2: "new2:9092"})
    assert addresses(view) == {1: ["kafka1:9092"], 2: ["kafka2:9092"], 3: ["kafka3:9092"]}
    assert addresses(_view(None)) == {}


def test_refusal_of_a_broker_replaced_during_the_migration() -> None:
    began = {1: ["kafka1:9092"], 2: ["kafka2:9092"], 3: ["kafka3:9092"]}
    view = _view(_snap({2: 1, 3: 1}), _image({1: _kraft_broker(1)}))
    same = _at(view, {2: "kafka2:9092", 3: "kafka3:9092"}, {1: "kafka1:9092"})
    assert replaced(same, began) is None
    assert refusal(INV, same, began=began) is None
    moved = _at(view, {2: "kafka2:9092", 3: "kafka3:9092"}, {1: "10.0.0.9:9092"})
    why = refusal(INV, moved, began=began)
    assert why == replaced(moved, began)
    assert why is not None and why.startswith(
        "broker 1 registers from 10.0.0.9:9092, not kafka1:9092 as when the migration began"
    )
    assert "KAFKA-20762" in why
    assert refusal(INV, moved) is None  # no baseline: nothing to compare with
    assert replaced(moved, {2: ["kafka2:9092"]}) is None  # broker 1 not seen then


def test_quorum_refusal_and_quorum_open() -> None:
    assert quorum_refusal(_view(_snap())) is None
    assert quorum_refusal(_view(quorum=_quorum(error="connection refused"))) == (
        "the quorum did not answer: connection refused"
    )
    no_leader = "the controller quorum has no leader: a majority of the controllers must run"
    assert quorum_refusal(_view(quorum=_quorum(leader=-1))) == no_leader
    assert quorum_open(INV, _view(quorum=_quorum(leader=-1)), OPEN) == no_leader
    assert quorum_open(INV, _view(None), OPEN) is None  # ZooKeeper not needed
    assert quorum_open(INV, _view(quorum=_quorum(lags={3000: 0, 3001: 0})), OPEN) == (
        "the quorum's voters are [3000, 3001], not the inventory's controllers"
    )
    lagging = _quorum(lags={3000: 0, 3001: 12, 3002: 3})
    assert quorum_open(INV, _view(quorum=lagging), OPEN) == (
        "voter(s) [3001, 3002] not caught up with the leader"
    )
    assert quorum_open(INV, _view(quorum=_quorum(error="timed out")), OPEN) == (
        "the quorum did not answer: timed out"
    )


# --- gates --------------------------------------------------------------------------------


def test_preflight_open_and_brokers_open() -> None:
    assert preflight_open(INV, _view(None), OPEN) == (
        "ZooKeeper not read: could not connect to ZooKeeper within 15s"
    )
    assert preflight_open(INV, _view(replace(_snap(), cluster_id=None)), OPEN) == (
        "ZooKeeper holds no /cluster/id"
    )
    assert brokers_open(INV, _view(_snap()), OPEN) is None
    assert brokers_open(INV, _view(_snap({1: 1, 2: 1, 4: 1})), OPEN) == (
        "/brokers/ids holds [1, 2, 4], the inventory names [1, 2, 3]"
    )


def test_migrating_back() -> None:
    gate = migrating_back(2)
    before = Baseline(zk_timestamp=1000, kraft_epoch=None)
    restarted = {1: 1000, 2: 2000, 3: 1000}
    assert gate(INV, _view(_snap(restarted), _image(_migrating())), before) is None
    assert gate(INV, _view(_snap(restarted), _image(_migrating())), OPEN) is None


def test_migrating_back_not_yet() -> None:
    gate = migrating_back(2)
    before = Baseline(zk_timestamp=1000)
    restarted = {1: 1000, 2: 2000, 3: 1000}
    assert gate(INV, _view(_snap(restarted)), before) == (
        "the metadata log not read: no metadata log in /m3000 yet"
    )
    assert gate(INV, _view(None, _image(_migrating())), before) == (
        "ZooKeeper not read: could not connect to ZooKeeper within 15s"
    )
    assert gate(INV, _view(_snap({1: 1000, 3: 1000}), _image(_migrating())), before) == (
        "broker 2 not registered in /brokers/ids yet"
    )
    for timestamp in (1000, 999):  # the registration from before the restart
        view = _view(_snap({1: 1000, 2: timestamp, 3: 1000}), _image(_migrating()))
        assert gate(INV, view, before) == (
            "broker 2's registration is the one from before its restart"
        )


@pytest.mark.parametrize(
    "kraft",
    [{}, {2: _kraft_broker(2)}],
    ids=["not registered with the controllers", "registered, not migrating"],
)
def test_migrating_back_not_with_the_controllers_gives_the_hint(
    kraft: dict[int, BrokerImage],
) -> None:
    view = _view(_snap({1: 1000, 2: 2000, 3: 1000}), _image(kraft))
    assert migrating_back(2)(INV, view, Baseline(zk_timestamp=1000)) == (
        "broker 2 not registered with the controllers as a migrating ZooKeeper broker (is "
        "zookeeper.metadata.migration.enable set, and the controller listener reachable "
        "from it?)"
    )


def test_migrating_back_waits_for_the_partitions_in_sync() -> None:
    topics = {"orders": _topic("orders", {0: _state(isr=(1, 3)), 1: _state()})}
    view = _view(_snap({1: 1000, 2: 2000, 3: 1000}, topics), _image(_migrating()))
    assert migrating_back(2)(INV, view, Baseline(zk_timestamp=1000)) == (
        "1 partition(s) not in sync: orders-0"
    )


def test_kraft_back() -> None:
    gate = kraft_back(2)
    before = Baseline(zk_timestamp=1000, kraft_epoch=10)
    kraft = _migrating(10) | {2: _kraft_broker(2, 11)}
    assert gate(INV, _view(_snap({1: 1000, 3: 1000}), _image(kraft)), before) is None
    assert gate(INV, _view(_snap({}), _image(_kraft())), OPEN) is None


@pytest.mark.parametrize(
    ("zk", "broker", "expected"),
    [
        ({1: 1, 3: 1}, None, "broker 2 not registered again with the controllers yet"),
        ({1: 1, 3: 1}, _kraft_broker(2, 10), "broker 2 not registered again with the "
         "controllers yet"),  # the epoch from before its restart
        ({1: 1, 3: 1}, _kraft_broker(2, 9), "broker 2 not registered again with the "
         "controllers yet"),
        ({1: 1, 3: 1}, _kraft_broker(2, 11, migrating=True), "broker 2 registered as a "
         "ZooKeeper-mode broker still"),
        ({1: 1, 3: 1}, _kraft_broker(2, 11, fenced=True), "broker 2 fenced (catching up with "
         "the metadata log)"),
        ({1: 1, 2: 1, 3: 1}, _kraft_broker(2, 11), "broker 2 still in /brokers/ids "
         "(ZooKeeper mode)"),
    ],
    ids=["unregistered", "same epoch", "older epoch", "still migrating", "fenced",
         "still in /brokers/ids"],
)  # fmt: skip
def test_kraft_back_not_yet(zk: dict[int, int], broker: BrokerImage | None, expected: str) -> None:
    kraft = _migrating(10)
    del kraft[2]
    if broker is not None:
        kraft[2] = broker
    view = _view(_snap(zk), _image(kraft))
    assert kraft_back(2)(INV, view, Baseline(zk_timestamp=1000, kraft_epoch=10)) == expected


def test_kraft_back_needs_the_log_and_the_partitions_in_sync() -> None:
    gate = kraft_back(2)
    assert gate(INV, _view(_snap({})), OPEN) == (
        "the metadata log not read: no metadata log in /m3000 yet"
    )
    topics = {"orders": _topic("orders", {0: _state(-1), 1: _state()})}
    assert gate(INV, _view(_snap({}, topics), _image(_kraft())), OPEN) == (
        "1 partition(s) not in sync: orders-0"
    )


def test_copied_open() -> None:
    for state in (ZK_MIGRATION_NONE, ZK_MIGRATION_PRE):
        why = copied_open(INV, _view(_snap(migration_offset=-1), _image(state=state)), OPEN)
        assert why == (
            f"Kafka's copy not done (ZkMigrationState {state}): the controllers wait for "
            "every broker to register with them, then copy"
        )
    written = "/migration not written by the active controller yet"
    assert copied_open(INV, _view(_snap(), _image()), OPEN) == written
    assert copied_open(INV, _view(_snap(migration_offset=-1), _image()), OPEN) == written
    assert copied_open(INV, _view(_snap(migration_offset=0), _image()), OPEN) == written
    assert copied_open(INV, _view(_snap(migration_offset=42), _image()), OPEN) is None
    assert copied_open(INV, _view(_snap(migration_offset=42)), OPEN) == (
        "the metadata log not read: no metadata log in /m3000 yet"
    )


def test_dual_write_open() -> None:
    # /migration at the log's last offset (its end - 1): caught up
    assert dual_write_open(INV, _view(_snap(migration_offset=499), _image()), OPEN) is None
    assert dual_write_open(INV, _view(_snap(migration_offset=600), _image()), OPEN) is None
    assert dual_write_open(INV, _view(_snap(migration_offset=400), _image()), OPEN) == (
        "/migration at offset 400, the metadata log at 499: writing behind"
    )
    assert dual_write_open(INV, _view(_snap(), _image()), OPEN) == (
        "/migration at offset -1, the metadata log at 499: writing behind"
    )
    # the baseline's log end (when the gate began), not the log's end now
    view = _view(_snap(migration_offset=400), _image(), log_end=900)
    assert (view.zk_offset(), _view(_snap(), _image()).zk_offset()) == (400, None)
    assert dual_write_open(INV, view, Baseline(log_end=401)) is None
    assert dual_write_open(INV, view, Baseline(log_end=402)) == (
        "/migration at offset 400, the metadata log at 401: writing behind"
    )
    assert dual_write_open(INV, _view(_snap(migration_offset=499)), OPEN) == (
        "the metadata log not read: no metadata log in /m3000 yet"
    )


def test_no_zk_brokers_open() -> None:
    assert no_zk_brokers_open(INV, _view(_snap({}), _image(_kraft())), OPEN) is None


def test_no_zk_brokers_open_names_the_zookeeper_mode_brokers() -> None:
    kraft = _kraft() | {3: _kraft_broker(3, migrating=True)}
    view = _view(_snap({1: 1}), _image(kraft))  # 1 in /brokers/ids, 3 migrating
    assert no_zk_brokers_open(INV, view, OPEN) == (
        "broker(s) [1, 3] still in ZooKeeper mode: roll them into KRaft mode first"
    )


def test_no_zk_brokers_open_names_the_unregistered_ones() -> None:
    """Kafka's KAFKA-20960 case (docs/field-bugs.md#fb-30): a broker in neither
    /brokers/ids nor the controllers' registrations (down) is not a KRaft broker;
    finalizing without it is refused."""
    kraft = _kraft()
    del kraft[2]
    assert no_zk_brokers_open(INV, _view(_snap({}), _image(kraft)), OPEN) == (
        "broker(s) [2] not registered with the controllers"
    )
    assert no_zk_brokers_open(INV, _view(_snap({}), _image({})), OPEN) == (
        "broker(s) [1, 2, 3] not registered with the controllers"
    )
    assert no_zk_brokers_open(INV, _view(_snap({})), OPEN) == (
        "the metadata log not read: no metadata log in /m3000 yet"
    )


def test_finalized_open() -> None:
    assert finalized_open(INV, _view(None, _image(state=ZK_MIGRATION_POST)), OPEN) is None
    assert finalized_open(INV, _view(_snap(), _image()), OPEN) == (
        f"ZkMigrationState {ZK_MIGRATION_MIGRATION}, not POST_MIGRATION yet"
    )
    assert finalized_open(INV, _view(_snap()), OPEN) == (
        "the metadata log not read: no metadata log in /m3000 yet"
    )


def test_zk_back() -> None:
    gate = zk_back(2)
    before = Baseline(zk_timestamp=1000)
    assert gate(INV, _view(_snap({1: 1000, 2: 2000, 3: 1000})), before) is None
    assert gate(INV, _view(_snap()), OPEN) is None  # no baseline: registered is enough
    assert gate(INV, _view(_snap({1: 1000, 3: 1000})), before) == (
        "broker 2 not registered in /brokers/ids yet"
    )
    assert gate(INV, _view(_snap()), before) == (
        "broker 2's registration is the one from before its restart"
    )
    topics = {"orders": _topic("orders", {0: _state(), 1: _state(isr=(2,))})}
    assert gate(INV, _view(_snap({1: 1000, 2: 2000, 3: 1000}, topics)), before) == (
        "1 partition(s) not in sync: orders-1"
    )
    assert gate(INV, _view(None), before) == (
        "ZooKeeper not read: could not connect to ZooKeeper within 15s"
    )


def test_zookeeper_open() -> None:
    zk_controller = ControllerZnode(2, 1700000000000)
    kraft_controller = ControllerZnode(3000, 1700000000000, kraft_controller_epoch=6)
    assert zookeeper_open(INV, _view(_snap(controller=zk_controller)), OPEN) is None
    not_yet = "no ZooKeeper-mode broker in /controller yet"
    assert zookeeper_open(INV, _view(_snap()), OPEN) == not_yet
    assert zookeeper_open(INV, _view(_snap(controller=kraft_controller)), OPEN) == not_yet
    view = _view(_snap(controller=zk_controller, migration_offset=7))
    assert zookeeper_open(INV, view, OPEN) == (
        "/migration is there again: is a KRaft controller still running?"
    )
    view = _view(_snap({1: 1, 2: 1}, controller=zk_controller))
    assert zookeeper_open(INV, view, OPEN) == (
        "/brokers/ids holds [1, 2], the inventory names [1, 2, 3]"
    )
    topics = {"orders": _topic("orders", {0: None, 1: _state()})}
    view = _view(_snap(topics=topics, controller=zk_controller))
    assert zookeeper_open(INV, view, OPEN) == "1 partition(s) not in sync: orders-0"
    assert zookeeper_open(INV, _view(None), OPEN) == (
        "ZooKeeper not read: could not connect to ZooKeeper within 15s"
    )


def _without_topics(view: View) -> View:
    """``view`` as ``read_view(topics=False)`` reads it: ZooKeeper's topics left out."""
    assert view.snap is not None
    return replace(view, snap=replace(view.snap, topics={}), topics_read=False)


def test_a_view_without_the_topics_opens_no_gate_that_judges_partitions() -> None:
    """Each gate and refusal that judges partitions, open on the view read whole, stays
    closed on the same view read without ZooKeeper's topics (saying so) rather than
    finding no partition out of sync; the gates of TOPICS_FREE answer as before."""
    no_topics = "ZooKeeper's topics not read in this view"
    zk_controller = ControllerZnode(2, 1700000000000)
    whole = {
        migrating_back(2): (
            _view(_snap({1: 1000, 2: 2000, 3: 1000}), _image(_migrating())),
            Baseline(zk_timestamp=1000),
        ),
        kraft_back(2): (
            _view(_snap({1: 1000, 3: 1000}), _image(_migrating(10) | {2: _kraft_broker(2, 11)})),
            Baseline(zk_timestamp=1000, kraft_epoch=10),
        ),
        zk_back(2): (_view(_snap({1: 1000, 2: 2000, 3: 1000})), Baseline(zk_timestamp=1000)),
        zookeeper_open: (_view(_snap(controller=zk_controller)), OPEN),
    }
    for gate, (view, before) in whole.items():
        assert gate not in TOPICS_FREE
        assert gate(INV, view, before) is None
        assert gate(INV, _without_topics(view), before) == no_topics
    assert preflight_open(INV, _without_topics(_view(_snap())), OPEN) == no_topics
    assert refusal(INV, _view(_snap())) is None
    assert refusal(INV, _without_topics(_view(_snap()))) == no_topics
    free = _view(_snap(migration_offset=499), _image(_migrating()))
    for gate in TOPICS_FREE:
        assert gate(INV, _without_topics(free), OPEN) == gate(INV, free, OPEN)
    assert set(TOPICS_FREE) < set(GATES.values())


# --- which gate ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("step_id", "gate"),
    [
        ("preflight.zookeeper", preflight_open),
        ("preflight.brokers", brokers_open),
        ("controllers.quorum", quorum_open),
        ("copy.done", copied_open),
        ("copy.dual-write", dual_write_open),
        ("finalize.brokers", no_zk_brokers_open),
        ("finalize.done", finalized_open),
        ("rollback-controllers.written-behind", dual_write_open),
        ("rollback-verify.zookeeper", zookeeper_open),
    ],
)
def test_gate_for_a_cluster_gate(step_id: str, gate: Gate) -> None:
    assert gate_for(step_id) is gate
    assert GATES[step_id] is gate


@pytest.mark.parametrize(
    ("step_id", "expected"),
    [
        ("brokers-migration.2.back", "broker 2 not registered in /brokers/ids yet"),
        ("rollback-kraft-brokers.2.back", "broker 2 not registered in /brokers/ids yet"),
        ("rollback-brokers.2.back", "broker 2 not registered in /brokers/ids yet"),
        ("brokers-kraft.2.back", "broker 2 not registered again with the controllers yet"),
    ],
)
def test_gate_for_a_broker_gate(step_id: str, expected: str) -> None:
    gate = gate_for(step_id)
    assert gate is not None
    migrating = _migrating()
    del migrating[2]
    assert gate(INV, _view(_snap({1: 1000, 3: 1000}), _image(migrating)), OPEN) == expected


def test_gate_for_each_broker_gate_kind_is_the_phase_rule() -> None:
    """brokers-migration and rollback-kraft-brokers wait for a migrating ZooKeeper broker,
    brokers-kraft for a KRaft one, rollback-brokers for /brokers/ids alone."""
    zk_only = _view(_snap({1: 1000, 2: 2000, 3: 1000}), _image({}))
    migrating = _view(_snap({1: 1000, 2: 2000, 3: 1000}), _image(_migrating()))
    kraft = _view(_snap({1: 1000, 3: 1000}), _image(_migrating() | {2: _kraft_broker(2, 11)}))
    before = Baseline(zk_timestamp=1000, kraft_epoch=10)

    def opens(step_id: str) -> list[bool]:
        gate = gate_for(step_id)
        assert gate is not None
        return [gate(INV, v, before) is None for v in (zk_only, migrating, kraft)]

    assert opens("brokers-migration.2.back") == [False, True, False]
    assert opens("rollback-kraft-brokers.2.back") == [False, True, False]
    assert opens("brokers-kraft.2.back") == [False, False, True]
    assert opens("rollback-brokers.2.back") == [True, True, False]
    assert opens("brokers-kraft.3.back") == [False, False, False]  # broker 3's own gate
    assert opens("brokers-migration.3.back") == [False, False, False]  # 3: the old timestamp


@pytest.mark.parametrize(
    "step_id",
    [
        "audit.before-kraft",
        "audit.before-finalize",
        "audit.before-rollback",
        "brokers-migration.2.edit",
        "brokers-kraft.2.restart",
        "controllers.3000.start",
        "finalize.3000.edit",
        "rollback-zookeeper.hand-back",
        "rollback-deprovision.3000",
        "unknown.2.back",
        "",
    ],
)
def test_gate_for_what_is_not_a_gate_this_module_opens(step_id: str) -> None:
    assert gate_for(step_id) is None


# --- kafka status: the brokers by mode ----------------------------------------------------


def test_broker_modes_as_the_cluster_reports_them() -> None:
    kraft = {1: _kraft_broker(1), 2: _kraft_broker(2, migrating=True)}
    view = _view(_snap(brokers={2: 1000, 3: 1000}), _image(kraft))
    assert broker_modes(_inventory(), view) == {1: "kraft", 2: "migrating", 3: "zookeeper"}
    nobody = _view(_snap(brokers={}), _image({}))
    assert set(broker_modes(_inventory(), nobody).values()) == {"unregistered"}


def test_the_status_text_says_the_way_back_or_that_there_is_none() -> None:
    status: dict[str, Any] = {
        "inventory": "inv.toml", "rolling_back": False, "phase": "brokers-kraft",
        "step": "brokers-kraft.2.back", "last_done": "brokers-kraft.2.restart", "steps_done": 31,
        "waiting_for": "broker 2 fenced (catching up with the metadata log)",
        "zk_migration_state": "MIGRATION", "zk_write_behind_lag": 0,
        "brokers": [{"id": 1, "mode": "kraft"}, {"id": 2, "mode": "unregistered"}],
        "last_audit": {"step": "audit.before-kraft", "at": "2026-11-29T05:00:00+00:00",
                       "verdict": "CONSISTENT", "differences": 0},
        "way_back": "zk2kraft kafka rollback --inventory inv.toml",
        "errors": {"zookeeper": None, "metadata_log": None},
    }  # fmt: skip
    text = render_status(status)
    assert "Brokers:             1 kraft, 2 unregistered" in text
    assert "CONSISTENT at 2026-11-29T05:00:00+00:00 (audit.before-kraft)" in text
    assert "zk2kraft kafka rollback --inventory inv.toml" in text
    assert "none: the migration is finalized" in render_status(status | {"way_back": None})


def test_a_stopped_kraft_mode_broker_is_missing() -> None:
    """A KRaft-mode broker that stopped stays registered with the controllers, fenced."""
    kraft = _kraft() | {3: _kraft_broker(3, 20, fenced=True)}
    view = _view(_snap(brokers={}), _image(kraft))
    assert refusal(_inventory(), view) == (
        "broker(s) [3] of the inventory are not registered: start them"
    )
    assert refusal(_inventory(), view, restarting=3) is None  # its own restart


def test_the_controllers_stop_only_with_no_broker_in_kraft_mode() -> None:
    gate = GATES["rollback-controllers.brokers"]
    assert gate(_inventory(), _view(_snap(), _image(_migrating())), OPEN) is None
    kraft = _migrating() | {2: _kraft_broker(2, 30)}
    why = gate(_inventory(), _view(_snap(), _image(kraft)), OPEN)
    assert why is not None and "[2] registered with the controllers in KRaft mode" in why
    assert gate(_inventory(), _view(_snap(), None), OPEN) is None  # no controller ever ran
