"""The chaos suite's ``partition-active-from-voters``, without a cluster: whether a
majority remains without the cut-off leader decides what the fault expects (seed
380022: a follower halted on EIO earlier in the stage, so no leader could be elected
and no claim could come), and what ZooKeeper must not show when none remains."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kazoo.exceptions import NoNodeError

from migration.zk import paths
from migration.zk.model.cluster import (
    EMPTY_MIGRATION,
    ControllerZnode,
    MigrationZnode,
    render_controller,
    render_migration,
)
from tests.chaos import net_faults
from tests.chaos.net_faults import majority_without, minority_problems, partition_active_from_voters
from tests.chaos.plan import Fault

IDS = [3000, 3001, 3002]


def test_a_majority_without_the_active_needs_every_other_voter_of_three_running() -> None:
    assert majority_without(IDS, 3000, IDS)
    assert majority_without(IDS, 3000, [3001, 3002])  # the active's own process aside
    assert not majority_without(IDS, 3000, [3000, 3002])  # 3001 halted (seed 380022)
    assert not majority_without(IDS, 3000, [3000])
    five = [1, 2, 3, 4, 5]
    assert majority_without(five, 1, [1, 2, 3, 5]) and not majority_without(five, 1, [1, 2, 3])


def test_with_no_majority_no_claim_and_nothing_uncommitted_may_reach_zookeeper() -> None:
    claim, epoch, hw = (3000, 1), 1, 124

    def problems(after: tuple[int, int], m: MigrationZnode | None) -> list[str]:
        return minority_problems(3000, claim, after, m, epoch, hw)

    assert problems(claim, None) == []
    assert problems(claim, EMPTY_MIGRATION) == []
    assert problems((-1, -1), None) != []  # a claim gone: not the one before the cut
    assert problems((3002, 2), None) != []  # elected without a majority: split brain
    assert minority_problems(3000, (-1, -1), (3000, 1), None, epoch, hw) == []  # its own
    assert problems(claim, MigrationZnode(3000, 1, 123, 1)) == []  # committed
    assert "not committed" in problems(claim, MigrationZnode(3000, 1, 124, 1))[0]
    assert "epoch 2" in problems(claim, MigrationZnode(3002, 2, 10, 2))[0]


# --- the fault against a fake run --------------------------------------------------------


@dataclass
class FakeProxy:
    state: str = "open"

    def cut(self) -> None:
        self.state = "cut"

    def blackhole(self) -> None:
        self.state = "blackhole"

    def heal(self) -> None:
        self.state = "open"


@dataclass
class FakeChild:
    running: bool = True


@dataclass
class FakeQuorum:
    children: dict[int, FakeChild]

    @property
    def ids(self) -> list[int]:
        return list(self.children)

    def running(self) -> list[int]:
        return [n for n, c in self.children.items() if c.running]


@dataclass
class FakeZk:
    claim: tuple[int, int]
    migration: MigrationZnode | None = None

    def get(self, path: str) -> tuple[bytes, int]:
        if path == paths.CONTROLLER:
            return render_controller(ControllerZnode(self.claim[0], 0, self.claim[1])), 0
        if self.migration is None:
            raise NoNodeError()
        return render_migration(self.migration), 0


@dataclass
class FakeLinks:
    controllers: dict[tuple[int, int], FakeProxy]

    def around(self, node: int) -> list[FakeProxy]:
        return [p for (i, j), p in self.controllers.items() if node in (i, j)]

    def heal(self, proxies: list[FakeProxy]) -> None:
        for p in proxies:
            p.heal()


@dataclass
class FakeRig:
    quorum: FakeQuorum
    zk_before: FakeZk
    links: FakeLinks
    leader_after_cut: int | None  # who wins once the active is cut off (None: nobody)
    zk_after_cut: FakeZk | None  # what ZooKeeper holds once it is (None: unchanged)

    def cut(self) -> bool:
        return all(p.state != "open" for p in self.links.around(3000))

    @property
    def zk(self) -> FakeZk:
        return self.zk_after_cut if self.cut() and self.zk_after_cut else self.zk_before

    def status(self, node: int | None = None) -> dict[str, Any]:
        if not self.cut():
            return {"active_controller": 3000, "driver_phase": "ZK_MIGRATION",
                    "kraft_epoch": 1, "high_watermark": 124}  # fmt: skip
        active = -1 if node == 3000 or self.leader_after_cut is None else self.leader_after_cut
        return {"active_controller": active, "driver_phase": "INACTIVE",
                "kraft_epoch": 1, "high_watermark": 124}  # fmt: skip


@dataclass
class FakeRun:
    rig: FakeRig
    links: FakeLinks
    proxies: dict[int, list[FakeProxy]]
    events: list[dict[str, Any]] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)

    def note(self, event: str, **details: Any) -> None:
        self.events.append({"event": event, **details})

    def status(self) -> dict[str, Any]:
        return self.rig.status()

    def active(self, fault: Fault) -> tuple[int, str]:
        return 3000, "ZK_MIGRATION"


def _run(running: list[int], after_cut: FakeZk | None, leader: int | None) -> FakeRun:
    quorum = FakeQuorum({n: FakeChild(n in running) for n in IDS})
    links = FakeLinks({(i, j): FakeProxy() for i in IDS for j in IDS if i != j})
    rig = FakeRig(quorum, FakeZk((3000, 1), None), links, leader, after_cut)
    return FakeRun(rig, links, {n: [FakeProxy(), FakeProxy()] for n in IDS})


FAULT = Fault("partition-active-from-voters", "copy", 0.0,
              {"blackhole": 0, "hold_s": 0.0, "zk_held": 0})  # fmt: skip


def test_seed_380022_a_halted_follower_leaves_no_majority_and_no_claim_is_expected() -> None:
    run = _run([3000, 3002], after_cut=None, leader=None)  # 3001 halted on EIO
    partition_active_from_voters(run, FAULT)  # type: ignore[arg-type]
    [fact] = run.facts["voter_partitions"]
    assert fact["case"] == "no-majority" and fact["running"] == [3000, 3002]
    assert fact["high_watermark"] == 124 and fact["claim"] == [3000, 1]
    said = [e["event"] for e in run.events]
    assert "cut-off leader resigned: no majority to elect another" in said
    assert "new leader claimed ZooKeeper" not in said and said[-1] == "partition healed"
    assert all(p.state == "open" for p in run.links.controllers.values())


def test_with_no_majority_an_uncommitted_write_of_the_cut_off_leader_fails_the_fault() -> None:
    landed = FakeZk((3000, 1), MigrationZnode(3000, 1, 500, 1))  # past the high watermark
    run = _run([3000, 3002], after_cut=landed, leader=None)
    try:
        partition_active_from_voters(run, FAULT)  # type: ignore[arg-type]
    except AssertionError as exc:
        assert "not committed" in str(exc)
    else:
        raise AssertionError("an uncommitted /migration passed")
    assert all(p.state == "open" for p in run.links.controllers.values())


def test_with_every_voter_running_the_fault_waits_for_the_new_claim(monkeypatch: Any) -> None:
    monkeypatch.setattr(net_faults, "CLAIM_WAIT_S", 5.0)
    run = _run(IDS, after_cut=FakeZk((3002, 2), None), leader=3002)
    partition_active_from_voters(run, FAULT)  # type: ignore[arg-type]
    [fact] = run.facts["voter_partitions"]
    assert fact["case"] == "new-leader" and (fact["new_leader"], fact["claim_epoch"]) == (3002, 2)
    claimed = [e for e in run.events if e["event"] == "new leader claimed ZooKeeper"]
    assert claimed == [{"event": "new leader claimed ZooKeeper", "node": 3002, "epoch": 2,
                        "old": 3000, "zk_held": False}]  # fmt: skip
