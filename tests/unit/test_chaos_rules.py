"""The chaos suite's own rules, without processes: plans from seeds, the ledger of
acknowledged writes, and the fencing check over ZooKeeper's history."""

from __future__ import annotations

import json
from types import SimpleNamespace

from migration.image.model import MetadataImage
from tests.chaos.checks import (
    claim_evidence,
    copy_catch_ups,
    fencing_evidence,
    held_partitions,
    unclaimed,
)
from tests.chaos.plan import FAULTS, STAGES, make_plan
from tests.chaos.txnlog import CHECK, CREATE, DELETE, SET_DATA, Op, Txn
from tests.chaos.workload import ABSENT, Entity, Ledger, config_value, topic_partitions
from tests.zk_timeline import Timeline, topic_config

CHROOT = "/clusters/c1"


def test_a_seed_is_one_plan_and_every_fault_fits_its_stage_and_ending() -> None:
    for seed in range(300):
        plan = make_plan(seed)
        assert plan == make_plan(seed)
        assert sorted(plan.roll_order) == [1, 2, 3]
        stages = [STAGES.index(f.stage) for f in plan.faults]
        assert stages == sorted(stages)
        for fault in plan.faults:
            assert fault.stage in FAULTS[fault.kind]
            if plan.ending == "rollback-active":
                assert fault.stage in ("copy", "dual-write")
            if plan.ending != "finalize":
                assert fault.stage != "finished"
        assert 2 <= len(plan.faults) <= 4
    kinds = {f.kind for s in range(300) for f in make_plan(s).faults}
    endings = {make_plan(s).ending for s in range(300)}
    assert kinds == set(FAULTS) and len(endings) == 3


def test_the_ledger_names_what_an_image_lacks_and_accepts_either_state_of_a_retired_one() -> None:
    timeline = Timeline()
    timeline.create_topic("kept", [[1, 2], [2, 3]])
    timeline.commit(topic_config("kept", "retention.ms", "1000"))
    image = timeline.image
    ledger = Ledger()
    ledger.entities = {
        "topic:kept": Entity("topic:kept", topic_partitions("kept"), 2, acked_at="copy"),
        "config": Entity(
            "config", config_value(2, "kept", "retention.ms"), "1000", acked_at="roll"
        ),
        "topic:gone": Entity("topic:gone", topic_partitions("gone"), ABSENT, acked_at="roll"),
    }
    assert ledger.missing(image) == []
    ledger.entities["topic:kept"].expected = 3
    assert ledger.missing(image) == ["topic:kept: holds 2, acknowledged (3,) (copy)"]
    assert ledger.missing(image, {"roll"}) == []  # acknowledged in another phase
    ledger.entities["topic:kept"].possible = (2, 3)  # not acknowledged: either
    assert ledger.missing(image) == []
    assert ledger.missing(MetadataImage.EMPTY, {"roll"}) == [
        "config: holds 'absent', acknowledged ('1000',) (roll)"
    ]


def _migration(epoch: int, offset: int) -> bytes:
    return json.dumps(
        {"version": 0, "kraft_controller_id": 3000, "kraft_controller_epoch": epoch,
         "kraft_metadata_offset": offset, "kraft_metadata_epoch": epoch}
    ).encode()  # fmt: skip


def _txn(zxid: int, *ops: Op, multi: bool = True) -> Txn:
    return Txn(zxid, session=1, ops=ops, multi=multi)


def test_fencing_passes_fenced_writes_and_names_a_fenced_controllers_write() -> None:
    migration = f"{CHROOT}/migration"
    topic = f"{CHROOT}/brokers/topics/t"
    history = [
        _txn(1, Op(CREATE, topic, b"{}"), multi=False),  # the ZooKeeper era: not guarded
        _txn(2, Op(CREATE, migration, _migration(1, 0)), multi=False),
        _txn(3, Op(CHECK, migration, None), Op(SET_DATA, topic, b"{}")),
        _txn(4, Op(SET_DATA, migration, _migration(1, 40)), Op(SET_DATA, topic, b"{}")),
        _txn(5, Op(SET_DATA, migration, _migration(2, 41))),
        _txn(6, Op(CREATE, f"{CHROOT}/brokers/ids/1", b"{}"), multi=False),  # not metadata
        _txn(7, Op(CREATE, "/elsewhere/brokers/topics/t", b"{}"), multi=False),  # not ours
    ]
    clean = fencing_evidence(history, CHROOT)
    assert clean.problems == [] and clean.fenced_writes == 2 and clean.transactions == 7

    zombie = _txn(8, Op(SET_DATA, migration, _migration(1, 60)), Op(DELETE, topic, None))
    unfenced = _txn(9, Op(SET_DATA, f"{CHROOT}/config/topics/t", b"{}"), multi=False)
    found = fencing_evidence([*history, zombie, unfenced], CHROOT).problems
    assert found == [
        "zxid 0x8: /migration went back (2, 41) -> (1, 60)",
        f"zxid 0x9: unfenced write to ['{CHROOT}/config/topics/t']",
    ]
    handed_back = _txn(10, Op(DELETE, migration, None))
    after = _txn(11, Op(SET_DATA, topic, b"{}"), multi=False)  # the ZooKeeper controller's again
    assert fencing_evidence([*history, handed_back, after], CHROOT).problems == []


def _controller(node: int, epoch: int | None) -> bytes:
    znode = {"version": 2, "brokerid": node, "timestamp": "1"}
    return json.dumps(znode if epoch is None else {**znode, "kraftControllerEpoch": epoch}).encode()


def test_after_a_claim_no_older_epoch_and_nothing_of_the_deposed_controller_lands() -> None:
    migration, controller = f"{CHROOT}/migration", f"{CHROOT}/controller"
    topic, epoch_check = f"{CHROOT}/brokers/topics/t", f"{CHROOT}/controller_epoch"
    a, b = 0xA, 0xB  # the two controllers' ZooKeeper sessions

    def txn(zxid: int, session: int, *ops: Op, errors: tuple[int, ...] = ()) -> Txn:
        return Txn(zxid, session, ops, multi=True, errors=errors)

    history = [
        Txn(1, 0xC, (Op(CREATE, controller, _controller(1, None)),), multi=False),  # ZK mode
        txn(2, 0xC, Op(CHECK, epoch_check, None), Op(SET_DATA, topic, b"{}")),
        txn(3, a, Op(DELETE, controller, None), Op(CREATE, controller, _controller(3000, 4))),
        txn(4, a, Op(CHECK, epoch_check, None), Op(SET_DATA, migration, _migration(4, 10))),
        txn(5, a, Op(SET_DATA, topic, b"{}"), Op(SET_DATA, migration, _migration(4, 11))),
        txn(6, b, Op(DELETE, controller, None), Op(CREATE, controller, _controller(3001, 6))),
        txn(7, a, errors=(-103, -2)),  # the deposed controller's dual-write, refused
        txn(8, 0xC, errors=(-103, -2)),  # and the ZooKeeper-mode controller's
        txn(9, b, Op(SET_DATA, migration, _migration(6, 11))),
        txn(10, b, Op(SET_DATA, topic, b"{}"), Op(SET_DATA, migration, _migration(6, 12))),
    ]
    clean = claim_evidence(history, CHROOT)
    assert clean.problems == []
    assert clean.claims == [(3, 3000, 4), (6, 3001, 6)]
    assert (clean.checked, clean.refused) == (4, 2)

    landed = txn(11, a, Op(SET_DATA, topic, b"{}"), Op(SET_DATA, migration, _migration(4, 12)))
    stale = txn(12, 0xD, Op(SET_DATA, migration, _migration(5, 13)))
    older_claim = txn(13, 0xD, Op(CREATE, controller, _controller(3002, 6)))
    assert claim_evidence([*history, landed, stale, older_claim], CHROOT).problems == [
        f"zxid 0xb: a deposed controller's write landed after the claim (6, 3001, 6): "
        f"['{topic}', '{migration}']",
        "zxid 0xb: /migration written in epoch 4 after the claim (6, 3001, 6)",
        # a session never seen before, writing as 3000 (its /migration names it): deposed
        f"zxid 0xc: a deposed controller's write landed after the claim (6, 3001, 6): "
        f"['{migration}']",
        "zxid 0xc: /migration written in epoch 5 after the claim (6, 3001, 6)",
        "zxid 0xd: claim in epoch 6 after (6, 3001, 6)",
    ]


def test_a_deposed_controller_is_known_by_its_id_whatever_its_session() -> None:
    migration, controller = f"{CHROOT}/migration", f"{CHROOT}/controller"
    topic = f"{CHROOT}/brokers/topics/t"

    def txn(zxid: int, session: int, *ops: Op, errors: tuple[int, ...] = ()) -> Txn:
        return Txn(zxid, session, ops, multi=True, errors=errors)

    def migrated(node: int, epoch: int, offset: int) -> bytes:
        value = json.loads(_migration(epoch, offset))
        return json.dumps({**value, "kraft_controller_id": node}).encode()

    history = [
        txn(1, 0xA, Op(CREATE, controller, _controller(3000, 4))),
        txn(2, 0xA, Op(SET_DATA, migration, migrated(3000, 4, 10))),
        txn(3, 0xB, Op(DELETE, controller, None), Op(CREATE, controller, _controller(3001, 6))),
        txn(4, 0xB, Op(SET_DATA, migration, migrated(3001, 6, 11))),
    ]
    assert claim_evidence(history, CHROOT).problems == []
    # 3000 reconnects with a new session: a write naming it still comes from the deposed
    again = txn(5, 0xE, Op(SET_DATA, topic, b"{}"), Op(SET_DATA, migration, migrated(3000, 6, 12)))
    assert claim_evidence([*history, again], CHROOT).problems == [
        f"zxid 0x5: a deposed controller's write landed after the claim (3, 3001, 6): "
        f"['{topic}', '{migration}']",
    ]
    # its new session's refused writes count as the deposed controller's, once known
    refused = [again, txn(6, 0xE, errors=(-103,))]
    found = claim_evidence([*history, *refused], CHROOT)
    assert found.refusals == [(6, 3000, 6)] and found.refused == 1
    # winning a later claim, it writes again as the latest claimant
    back = [
        txn(7, 0xE, Op(DELETE, controller, None), Op(CREATE, controller, _controller(3000, 8))),
        txn(8, 0xE, Op(SET_DATA, migration, migrated(3000, 8, 13))),
    ]
    assert claim_evidence([*history, *back], CHROOT).problems == []


def test_a_run_that_reached_the_copy_without_a_claim_checked_nothing() -> None:
    nothing = claim_evidence([], CHROOT)
    assert unclaimed(nothing, reached_copy=False) == []
    (line,) = unclaimed(nothing, reached_copy=True)
    assert line.startswith("no KRaft controller's claim of ZooKeeper")
    claimed = claim_evidence(
        [Txn(1, 0xA, (Op(CREATE, f"{CHROOT}/controller", _controller(3000, 4)),), multi=False)],
        CHROOT,
    )
    assert unclaimed(claimed, reached_copy=True) == []


def test_a_held_partition_says_whether_a_deposed_write_was_refused() -> None:
    controller = f"{CHROOT}/controller"
    history = [
        Txn(1, 0xA, (Op(CREATE, controller, _controller(3000, 4)),), multi=False),
        Txn(2, 0xB, (Op(DELETE, controller, None), Op(CREATE, controller, _controller(3001, 6))),
            multi=True),
        Txn(3, 0xA, (), multi=True, errors=(-103,)),
    ]  # fmt: skip
    claims = claim_evidence(history, CHROOT)
    event = {"event": "new leader claimed ZooKeeper", "node": 3001, "epoch": 6, "old": 3000}
    run = SimpleNamespace(events=[{**event, "zk_held": True}, {**event, "zk_held": False}])
    assert held_partitions(run, claims) == [  # type: ignore[arg-type]
        {"old": 3000, "claim_epoch": 6, "deposed_writes_refused": 1, "exercised": True}
    ]
    quiet = claim_evidence(history[:2], CHROOT)
    assert held_partitions(run, quiet)[0]["exercised"] is False  # type: ignore[arg-type]


def test_the_copys_catch_ups_are_counted_from_every_controllers_log() -> None:
    first = (
        "... [BECOME_CONTROLLER]: every broker is ready: [1, 2, 3]; 120 records streamed ... "
        "(2 catch-up rounds before the claim appended 14 records)\n"
        "... the copy's catch-up after the claim: 3 paths changed since the pre-copy's read "
        "(4 watch events), 2 entities read again, 2 records appended\n"
    )
    second = "... (0 catch-up rounds before the claim appended 0 records)\n"
    assert copy_catch_ups([first, second, ""]) == {"before_claim": 14, "after_claim": 2}
