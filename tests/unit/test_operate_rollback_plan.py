"""The way back to ZooKeeper as steps: each broker's edit puts back exactly what its
rolls changed (as the run's ``.bak`` files had it), and nothing the operator changed
since; a missing ``.bak`` is a problem; the phases in order, every step id unique."""

from __future__ import annotations

from pathlib import Path
from typing import get_args

import pytest

from migration.kafka.authorizer import ACL_AUTHORIZER, STANDARD_AUTHORIZER
from migration.operate.edits import (
    MIGRATION_FLAG,
    Changes,
    apply,
    broker_kraft_changes,
    broker_migration_changes,
    values_of,
)
from migration.operate.gates import gate_for
from migration.operate.inventory import Inventory, load_inventory
from migration.operate.plan import ClusterFacts, Files, Plan, Step, StepKind, render_text
from migration.operate.rollback_plan import (
    KRAFT_BAK,
    MIGRATION_BAK,
    ROLLBACK_PHASES,
    backup,
    build_rollback_plan,
    undo,
)
from migration.operate.status import phase_of

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qk"
FACTS = ClusterFacts(CLUSTER_ID, frozenset({1, 2, 3}), None)
INVENTORY = """
[kafka]
version = "3.9.2"

[zookeeper]
connect = "zk1:2181,zk2:2181/kafka"

[defaults.broker]
restart = "ssh {host} sudo systemctl restart kafka"
push = "scp {properties} {host}:/etc/kafka/server.properties"

[[broker]]
id = 1
host = "kafka1"
properties = "kafka1.properties"

[[broker]]
id = 2
host = "kafka2"
properties = "kafka2.properties"

[[broker]]
id = 3
host = "kafka3"
properties = "kafka3.properties"

[defaults.controller]
format = "ssh {host} kafka-storage.sh format -g -t {cluster_id} -c /etc/kafka/ctl.properties"
start = "ssh {host} sudo systemctl start kafka-controller"
stop = "ssh {host} sudo systemctl stop kafka-controller"

[[controller]]
id = 3000
host = "ctl1"
port = 9093
properties = "ctl1.properties"
metadata_log_dir = "/var/lib/kafka/meta3000"

[[controller]]
id = 3001
host = "ctl2"
port = 9093
properties = "ctl2.properties"
metadata_log_dir = "/var/lib/kafka/meta3001"
"""

PHASES = [
    "rollback-kraft-brokers",
    "rollback-controllers",
    "rollback-zookeeper",
    "rollback-brokers",
    "rollback-deprovision",
    "rollback-verify",
]


def _original(broker_id: int) -> str:
    """A ZooKeeper-mode broker's file as the operator wrote it."""
    return (
        "# the operator's file\n"
        f"broker.id={broker_id}\n"
        f"listeners=PLAINTEXT://kafka{broker_id}:9092,INTERNAL://kafka{broker_id}:9094\n"
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,INTERNAL:SSL\n"
        "inter.broker.listener.name=INTERNAL\n"
        "log.dirs=/var/lib/kafka/data\n"
        "inter.broker.protocol.version=3.8\n"
        "zookeeper.connect=zk1:2181,zk2:2181/kafka\n"
        "zookeeper.connection.timeout.ms=18000\n"
        "zookeeper.ssl.client.enable=true\n"
        "zookeeper.ssl.keystore.password=zk-secret\n"
        f"authorizer.class.name={ACL_AUTHORIZER}\n"
        "super.users=User:admin\n"
    )


@pytest.fixture
def inv(tmp_path: Path) -> Inventory:
    path = tmp_path / "inventory.toml"
    path.write_text(INVENTORY, encoding="utf-8")
    return load_inventory(path)


def _migrated(inv: Inventory, text: str) -> str:
    return apply(text, broker_migration_changes(inv, text))


def _kraft(inv: Inventory, text: str, broker_id: int) -> str:
    return apply(text, broker_kraft_changes(inv, text, broker_id))


def _roll(inv: Inventory, broker_id: int, to: str) -> str:
    """Broker ``broker_id``'s file taken to ``to`` ("zookeeper", "migrating" or "kraft")
    as a run does: each edit written over the file, the file as it was kept beside it in
    ``<file>.before-<phase>.bak``. The file's text is returned."""
    path = next(b.properties for b in inv.brokers if b.id == broker_id)
    text = _original(broker_id)
    if to in ("migrating", "kraft"):
        path.with_name(path.name + MIGRATION_BAK).write_text(text, encoding="latin-1")
        text = _migrated(inv, text)
    if to == "kraft":
        path.with_name(path.name + KRAFT_BAK).write_text(text, encoding="latin-1")
        text = _kraft(inv, text, broker_id)
    path.write_text(text, encoding="latin-1")
    return text


def _files(texts: dict[int, str]) -> Files:
    return Files(texts, {3000: "", 3001: ""}, texts[1])


def _steps(plan: Plan) -> dict[str, Step]:
    return {s.id: s for p in plan.phases for s in p.steps}


def _ids(plan: Plan) -> list[str]:
    return [s.id for p in plan.phases for s in p.steps]


# --- undo ---------------------------------------------------------------------------------


def _rule(text: str) -> Changes:
    """A rule that sets a, removes b and adds c (whatever the text)."""
    values = values_of(text)
    wanted: Changes = {"a": "2", "b": None, "c": "3"}
    return {k: v for k, v in wanted.items() if values.get(k) != v and (v or k in values)}


def test_undo_puts_back_exactly_the_keys_the_rule_changed() -> None:
    before = "# keep me\na=1\nb=2\nd=4\n"
    after = apply(before, _rule(before))
    assert values_of(after) == {"a": "2", "c": "3", "d": "4"}
    put_back = undo(_rule, before)
    assert put_back(after) == {"a": "1", "b": "2", "c": None}
    restored = apply(after, put_back(after))
    assert values_of(restored) == values_of(before)
    assert restored.startswith("# keep me\n")


def test_undo_leaves_the_operators_changes_since_alone() -> None:
    before = "a=1\nb=2\nd=4\n"
    after = apply(before, _rule(before))
    since = apply(after, {"d": "5", "e": "6"})  # the operator's, after the roll
    put_back = undo(_rule, before)
    changes = put_back(since)
    assert changes == {"a": "1", "b": "2", "c": None}
    assert values_of(apply(since, changes)) == {"a": "1", "b": "2", "d": "5", "e": "6"}


def test_undo_is_idempotent() -> None:
    before = "a=1\nb=2\n"
    put_back = undo(_rule, before)
    once = apply(apply(before, _rule(before)), put_back(apply(before, _rule(before))))
    assert put_back(once) == {}
    assert apply(once, put_back(once)) == once
    assert put_back(before) == {}  # never rolled: nothing to put back


def test_undo_of_a_rule_that_changed_nothing_changes_nothing() -> None:
    before = "a=2\nc=3\n"
    assert _rule(before) == {}
    assert undo(_rule, before)("a=9\nc=8\nb=1\n") == {}


def test_undo_of_a_key_changed_once_more_since() -> None:
    """A key the rule changed is the rule's: put back even if changed again since."""
    before = "a=1\n"
    put_back = undo(_rule, before)
    assert put_back("a=7\nc=3\n") == {"a": "1", "c": None}


def test_undo_of_the_kraft_roll_gives_back_the_migrating_broker(inv: Inventory) -> None:
    migrating = _migrated(inv, _original(1))
    kraft = _kraft(inv, migrating, 1)
    put_back = undo(lambda text: broker_kraft_changes(inv, text, 1), migrating)
    back = apply(kraft, put_back(kraft))
    assert values_of(back) == values_of(migrating)
    assert values_of(back)[MIGRATION_FLAG] == "true"
    assert values_of(back)["authorizer.class.name"] == ACL_AUTHORIZER
    assert put_back(back) == {}


def test_backup(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    assert backup(path, KRAFT_BAK) is None
    (tmp_path / f"server.properties{KRAFT_BAK}").write_bytes(b"a=\xe9\n")
    assert backup(path, KRAFT_BAK) == "a=\xe9\n"  # latin-1, as Java reads it
    (tmp_path / f"server.properties{MIGRATION_BAK}").mkdir()
    assert backup(path, MIGRATION_BAK) is None  # not a file


# --- the plan -----------------------------------------------------------------------------


def test_brokers_in_kraft_mode_go_back_with_the_flag_then_without(inv: Inventory) -> None:
    texts = {i: _roll(inv, i, "kraft") for i in (1, 2, 3)}
    plan = build_rollback_plan(inv, _files(texts), FACTS, dual_writing=True)
    assert plan.ready and plan.problems == ()
    assert [p.name for p in plan.phases] == PHASES == list(ROLLBACK_PHASES)
    assert all(phase_of(s.id) == p.name for p in plan.phases for s in p.steps)
    assert "audit.before-rollback" in [s.id for p in plan.phases for s in p.steps]
    by_phase = {p.name: [s.id for s in p.steps] for p in plan.phases}
    actions = ("edit", "push", "restart", "back")
    for phase in ("rollback-kraft-brokers", "rollback-brokers"):
        assert by_phase[phase] == [f"{phase}.{b}.{a}" for b in (1, 2, 3) for a in actions]
    for b in (1, 2, 3):
        original = _original(b)
        migrating = _migrated(inv, original)
        with_flag = plan.texts_after[f"rollback-kraft-brokers.{b}.edit"]
        assert values_of(with_flag) == values_of(migrating)  # ZooKeeper mode, migrating
        assert values_of(with_flag)[MIGRATION_FLAG] == "true"
        assert "process.roles" not in values_of(with_flag)
        assert values_of(with_flag)["broker.id"] == str(b)
        back = plan.texts_after[f"rollback-brokers.{b}.edit"]
        assert values_of(back) == values_of(original)  # exactly the operator's values
        assert back.startswith("# the operator's file\n")


def test_the_steps_edits_and_commands(inv: Inventory) -> None:
    texts = {i: _roll(inv, i, "kraft") for i in (1, 2, 3)}
    steps = _steps(build_rollback_plan(inv, _files(texts), FACTS, dual_writing=True))
    edit = steps["rollback-kraft-brokers.2.edit"]
    assert (edit.kind, edit.node, edit.file) == ("edit", 2, str(inv.brokers[1].properties))
    assert not edit.done and edit.change is not None
    diff = edit.diff or ""
    assert "+broker.id=2\n" in diff and "-node.id=2\n" in diff
    assert f"+{MIGRATION_FLAG}=true\n" in diff and "-process.roles=broker\n" in diff
    assert f"-authorizer.class.name={STANDARD_AUTHORIZER}\n" in diff
    assert "+zookeeper.ssl.keystore.password=<redacted>\n" in diff
    assert steps["rollback-kraft-brokers.2.push"].command == (
        "scp", str(inv.brokers[1].properties), "kafka2:/etc/kafka/server.properties",
    )  # fmt: skip
    assert steps["rollback-kraft-brokers.2.restart"].command == (
        "ssh", "kafka2", "sudo", "systemctl", "restart", "kafka",
    )  # fmt: skip
    assert steps["rollback-kraft-brokers.2.back"].node == 2
    assert steps["rollback-controllers.3001.stop"].command == (
        "ssh", "ctl2", "sudo", "systemctl", "stop", "kafka-controller",
    )  # fmt: skip
    assert steps["rollback-zookeeper.hand-back"].kind == "zookeeper"
    deprovision = steps["rollback-deprovision.3001"]
    assert (deprovision.kind, deprovision.node) == ("deprovision", 3001)
    assert deprovision.file == "/var/lib/kafka/meta3001"
    assert steps["rollback-verify.zookeeper"].kind == "gate"
    final = steps["rollback-brokers.2.edit"].diff or ""
    assert f"-{MIGRATION_FLAG}=true\n" in final and "+inter.broker.protocol.version=3.8\n" in final
    for step in steps.values():
        assert "zk-secret" not in (step.diff or "")


def test_the_rollback_takes_every_kind_of_step_and_the_plan_shows_each(inv: Inventory) -> None:
    texts = {i: _roll(inv, i, "kraft") for i in (1, 2, 3)}
    plan = build_rollback_plan(inv, _files(texts), FACTS, dual_writing=True)
    kinds = set(get_args(StepKind))
    assert {s.kind for s in _steps(plan).values()} == kinds
    shown = render_text(plan)
    for kind in kinds:
        assert f"[{kind}]" in shown


def test_the_edit_rule_applied_to_the_file_as_it_is_when_the_step_runs(
    inv: Inventory,
) -> None:
    """The step's rule is applied to the file then: the operator's change since the
    roll (a key the rolls did not touch) is kept, the rolls' keys are put back."""
    texts = {i: _roll(inv, i, "kraft") for i in (1, 2, 3)}
    steps = _steps(build_rollback_plan(inv, _files(texts), FACTS, dual_writing=True))
    now = apply(texts[1], {"num.io.threads": "16", "log.dirs": "/data2"})
    rule = steps["rollback-kraft-brokers.1.edit"].change
    assert rule is not None
    with_flag = apply(now, rule(now))
    expected = values_of(_migrated(inv, _original(1)))
    assert values_of(with_flag) == expected | {"num.io.threads": "16", "log.dirs": "/data2"}
    assert rule(with_flag) == {}  # idempotent
    second = steps["rollback-brokers.1.edit"].change
    assert second is not None
    back = apply(with_flag, second(with_flag))
    expected = values_of(_original(1))
    assert values_of(back) == expected | {"num.io.threads": "16", "log.dirs": "/data2"}
    assert second(back) == {}


def test_each_broker_from_where_it_is(inv: Inventory) -> None:
    """Broker 1 in KRaft mode, 2 migrating, 3 never rolled: 1 comes back through both
    phases, 2 through the second, 3 through neither."""
    texts = {1: _roll(inv, 1, "kraft"), 2: _roll(inv, 2, "migrating"), 3: _roll(inv, 3, "zk")}
    plan = build_rollback_plan(inv, _files(texts), FACTS, dual_writing=True)
    assert plan.ready
    ids = _ids(plan)
    assert [i for i in ids if i.startswith("rollback-kraft-brokers.")] == [
        f"rollback-kraft-brokers.1.{a}" for a in ("edit", "push", "restart", "back")
    ]
    assert [i for i in ids if i.startswith("rollback-brokers.")] == [
        f"rollback-brokers.{b}.{a}" for b in (1, 2) for a in ("edit", "push", "restart", "back")
    ]
    for b in (1, 2):
        assert values_of(plan.texts_after[f"rollback-brokers.{b}.edit"]) == values_of(_original(b))
    assert not any(".3." in i for i in ids)


def test_a_rollback_done_has_no_broker_step(inv: Inventory) -> None:
    texts = {i: _roll(inv, i, "kraft") for i in (1, 2, 3)}
    first = build_rollback_plan(inv, _files(texts), FACTS, dual_writing=True)
    back = {i: first.texts_after[f"rollback-brokers.{i}.edit"] for i in (1, 2, 3)}
    again = build_rollback_plan(inv, _files(back), FACTS, dual_writing=False)
    assert again.ready
    assert [p.name for p in again.phases] == PHASES
    assert again.phases[0].steps == () and again.phases[3].steps == ()
    assert not any(s.kind == "edit" for p in again.phases for s in p.steps)


def test_a_broker_back_with_the_flag_is_rolled_without_it(inv: Inventory) -> None:
    """Resumed after the first rollback phase: no KRaft broker left, the migrating ones
    rolled without the flag, from their .before-brokers-migration.bak."""
    texts = {i: _roll(inv, i, "kraft") for i in (1, 2, 3)}
    first = build_rollback_plan(inv, _files(texts), FACTS, dual_writing=True)
    with_flag = {i: first.texts_after[f"rollback-kraft-brokers.{i}.edit"] for i in (1, 2, 3)}
    again = build_rollback_plan(inv, _files(with_flag), FACTS, dual_writing=True)
    assert again.phases[0].steps == ()
    steps = _steps(again)
    assert [s.id for s in again.phases[3].steps if s.kind == "edit"] == [
        f"rollback-brokers.{b}.edit" for b in (1, 2, 3)
    ]
    assert not steps["rollback-brokers.3.edit"].done
    assert (
        again.texts_after["rollback-brokers.3.edit"] == first.texts_after["rollback-brokers.3.edit"]
    )


def test_a_missing_kraft_bak_is_a_problem_naming_the_file(inv: Inventory) -> None:
    texts = {i: _roll(inv, i, "kraft") for i in (1, 2, 3)}
    path = inv.brokers[1].properties
    path.with_name(path.name + KRAFT_BAK).unlink()
    plan = build_rollback_plan(inv, _files(texts), FACTS, dual_writing=True)
    assert not plan.ready
    assert plan.problems == (
        f"broker 2: {path} is in KRaft mode and kafka2.properties{KRAFT_BAK} is gone: put "
        "its ZooKeeper-mode settings back by hand",
    )
    ids = _ids(plan)
    assert "rollback-kraft-brokers.2.edit" not in ids
    assert "rollback-brokers.2.edit" not in ids  # still in KRaft mode: no flag to remove
    assert "rollback-kraft-brokers.1.edit" in ids and "rollback-brokers.3.edit" in ids


def test_a_missing_migration_bak_is_a_problem_naming_the_file(inv: Inventory) -> None:
    texts = {1: _roll(inv, 1, "kraft"), 2: _roll(inv, 2, "migrating"), 3: _roll(inv, 3, "zk")}
    for b in inv.brokers[:2]:
        b.properties.with_name(b.properties.name + MIGRATION_BAK).unlink()
    plan = build_rollback_plan(inv, _files(texts), FACTS, dual_writing=True)
    assert plan.problems == tuple(
        f"broker {b}: kafka{b}.properties{MIGRATION_BAK} is gone: remove the migration "
        "settings by hand"
        for b in (1, 2)
    )
    ids = _ids(plan)
    assert "rollback-kraft-brokers.1.edit" in ids  # its KRaft .bak is there
    assert not any(i.startswith("rollback-brokers.") for i in ids)


@pytest.mark.parametrize("dual_writing", [True, False])
def test_the_controller_phase(inv: Inventory, dual_writing: bool) -> None:
    texts = {i: _roll(inv, i, "migrating") for i in (1, 2, 3)}
    plan = build_rollback_plan(inv, _files(texts), FACTS, dual_writing=dual_writing)
    assert [p.name for p in plan.phases] == PHASES
    controllers = [s.id for s in plan.phases[1].steps]
    stops = ["rollback-controllers.3000.stop", "rollback-controllers.3001.stop"]
    if dual_writing:
        assert controllers == [
            "rollback-controllers.written-behind", "audit.before-rollback",
            "rollback-controllers.brokers", *stops,
        ]  # fmt: skip
    else:  # Kafka never copied: nothing written behind to wait for
        assert controllers == ["rollback-controllers.brokers", *stops]
    assert [s.id for s in plan.phases[2].steps] == ["rollback-zookeeper.hand-back"]
    assert [s.id for s in plan.phases[4].steps] == [
        "rollback-deprovision.3000", "rollback-deprovision.3001",
    ]  # fmt: skip
    assert [s.id for s in plan.phases[5].steps] == ["rollback-verify.zookeeper"]


@pytest.mark.parametrize("dual_writing", [True, False])
def test_every_step_id_is_unique_and_every_gate_is_opened(
    inv: Inventory, dual_writing: bool
) -> None:
    texts = {1: _roll(inv, 1, "kraft"), 2: _roll(inv, 2, "kraft"), 3: _roll(inv, 3, "migrating")}
    plan = build_rollback_plan(inv, _files(texts), FACTS, dual_writing=dual_writing)
    ids = _ids(plan)
    assert len(ids) == len(set(ids))
    for step in (s for p in plan.phases for s in p.steps if s.kind == "gate"):
        assert gate_for(step.id) is not None or step.id.startswith("audit."), step.id
        assert step.waits_for


def test_the_inventory_path_is_where_the_bak_files_are(inv: Inventory, tmp_path: Path) -> None:
    assert inv.brokers[0].properties == tmp_path / "kafka1.properties"
    texts = {i: _roll(inv, i, "kraft") for i in (1, 2, 3)}
    assert (tmp_path / f"kafka1.properties{KRAFT_BAK}").is_file()
    assert (tmp_path / f"kafka1.properties{MIGRATION_BAK}").is_file()
    assert "process.roles" in values_of(texts[1])


def test_a_turn_a_killed_run_began_is_taken_again_whole(inv: Inventory) -> None:
    """Killed after broker 1's edit back to ZooKeeper mode: its file no longer says KRaft,
    but its push, restart and gate are still to come."""
    texts = {
        1: _roll(inv, 1, "kraft"),
        2: _roll(inv, 2, "migrating"),
        3: _roll(inv, 3, "migrating"),
    }
    plan = build_rollback_plan(inv, _files(texts), FACTS, True)
    edit = _steps(plan)["rollback-kraft-brokers.1.edit"]
    assert edit.change is not None
    texts[1] = apply(texts[1], edit.change(texts[1]))  # the edit landed, then the kill
    done = ["rollback-kraft-brokers.1.edit"]
    resumed = _ids(build_rollback_plan(inv, _files(texts), FACTS, True, done))
    assert {"rollback-kraft-brokers.1.restart", "rollback-kraft-brokers.1.back"} <= set(resumed)
    finished = [*done, "rollback-kraft-brokers.1.restart", "rollback-kraft-brokers.1.back"]
    after = _ids(build_rollback_plan(inv, _files(texts), FACTS, True, finished))
    assert not any(i.startswith("rollback-kraft-brokers.") for i in after)
