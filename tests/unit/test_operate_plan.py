"""The plan of a real Kafka cluster's migration: its phases and steps in order, each
edit's diff, each command, the problems to fix first, and its two renderings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from migration.bridge.preflight import Finding, PreflightReport
from migration.operate.edits import MIGRATION_FLAG, values_of
from migration.operate.inventory import Inventory, load_inventory
from migration.operate.plan import (
    FINAL_STEP,
    PHASES,
    ClusterFacts,
    Files,
    Plan,
    Step,
    build_plan,
    render_text,
    roll_seconds,
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
format = "FORMAT"
start = "ssh {host} sudo systemctl start kafka-controller"
stop = "ssh {host} sudo systemctl stop kafka-controller"

[[controller]]
id = 3000
host = "ctl1"
port = 9093
properties = "ctl1.properties"
metadata_log_dir = "/var/lib/kafka/metadata"

[[controller]]
id = 3001
host = "ctl2"
port = 9093
properties = "ctl2.properties"
metadata_log_dir = "/var/lib/kafka/metadata"
""".replace(
    "FORMAT",
    "ssh {host} {kafka_home}/bin/kafka-storage.sh format -g -t {cluster_id} "
    "-c '/etc/kafka/my ctl.properties'",
)


def _broker(broker_id: int, extra: str = "") -> str:
    return (
        "# the operator's file\n"
        f"broker.id={broker_id}\n"
        f"{extra}"
        "log.dirs=/var/lib/kafka/data\n"
        "zookeeper.connect=zk1:2181,zk2:2181/kafka\n"
        "zookeeper.ssl.keystore.password=zk-secret\n"
    )


FILES = Files({i: _broker(i) for i in (1, 2, 3)}, {3000: "", 3001: ""}, _broker(1))


@pytest.fixture
def inv(tmp_path: Path) -> Inventory:
    path = tmp_path / "inventory.toml"
    path.write_text(INVENTORY, encoding="utf-8")
    return load_inventory(path)


def _steps(plan: Plan) -> dict[str, Step]:
    return {s.id: s for p in plan.phases for s in p.steps}


def test_the_phases_and_steps_in_order(inv: Inventory) -> None:
    plan = build_plan(inv, FILES, FACTS)
    assert [p.name for p in plan.phases] == [
        "preflight",
        "controllers",
        "brokers-migration",
        "copy",
        "brokers-kraft",
        "finalize",
    ]
    ids = [s.id for p in plan.phases for s in p.steps]
    assert len(ids) == len(set(ids))
    by_phase = {p.name: [s.id for s in p.steps] for p in plan.phases}
    assert by_phase["preflight"] == ["preflight.zookeeper", "preflight.brokers"]
    assert by_phase["controllers"] == [
        *[f"controllers.{c}.{a}" for c in (3000, 3001) for a in ("write", "format", "start")],
        "controllers.quorum",
    ]  # no push: the controllers' files are where zk2kraft runs
    for phase in ("brokers-migration", "brokers-kraft"):
        assert by_phase[phase] == [
            f"{phase}.{b}.{a}" for b in (1, 2, 3) for a in ("edit", "push", "restart", "back")
        ]
    assert by_phase["copy"] == ["copy.done", "copy.dual-write", "audit.before-kraft"]
    assert by_phase["finalize"] == [
        "finalize.brokers",
        "audit.before-finalize",
        *[f"finalize.{c}.{a}" for c in (3000, 3001) for a in ("edit", "stop", "start")],
        "finalize.done",
    ]
    kinds = {s.kind for p in plan.phases for s in p.steps}
    assert kinds == {"edit", "run", "gate"}
    assert plan.ready and plan.problems == ()
    # what kafka status and the live page say of a step: its phase, the last step's end
    assert [p.name for p in plan.phases] == list(PHASES)
    assert all(phase_of(s.id) == p.name for p in plan.phases for s in p.steps)
    assert ids[-1] == FINAL_STEP


def test_the_commands(inv: Inventory) -> None:
    steps = _steps(build_plan(inv, FILES, FACTS))
    assert steps["controllers.3001.format"].command == (
        "ssh",
        "ctl2",
        "/opt/kafka/bin/kafka-storage.sh",
        "format",
        "-g",
        "-t",
        CLUSTER_ID,
        "-c",
        "/etc/kafka/my ctl.properties",
    )
    assert CLUSTER_ID in steps["controllers.3001.format"].what
    assert steps["brokers-kraft.2.push"].command == (
        "scp",
        str(inv.brokers[1].properties),
        "kafka2:/etc/kafka/server.properties",
    )
    assert steps["brokers-migration.3.restart"].command == (
        "ssh",
        "kafka3",
        "sudo",
        "systemctl",
        "restart",
        "kafka",
    )
    assert steps["finalize.3000.stop"].command == (
        "ssh", "ctl1", "sudo", "systemctl", "stop", "kafka-controller",
    )  # fmt: skip
    assert steps["brokers-migration.1.back"].node == 1
    assert "3000@ctl1:9093,3001@ctl2:9093" in (steps["controllers.quorum"].waits_for or "")


def test_without_a_cluster_id_the_placeholder_is_shown(inv: Inventory) -> None:
    plan = build_plan(inv, FILES, ClusterFacts(None, frozenset({1, 2, 3}), None))
    assert "{cluster_id}" in (_steps(plan)["controllers.3000.format"].command or ())
    assert plan.problems == ("ZooKeeper holds no /cluster/id: is zookeeper.connect the cluster's?",)


def test_the_edits(inv: Inventory) -> None:
    plan = build_plan(inv, FILES, FACTS)
    steps = _steps(plan)
    write = steps["controllers.3000.write"]
    assert write.file == str(inv.controllers[0].properties) and write.node == 3000
    assert write.diff is not None
    assert "+process.roles=controller\n" in write.diff
    assert "+zookeeper.ssl.keystore.password=<redacted>\n" in write.diff
    migration = steps["brokers-migration.2.edit"].diff or ""
    assert migration.startswith(f"--- {inv.brokers[1].properties} (now)\n")
    assert f"+{MIGRATION_FLAG}=true\n" in migration
    assert "+inter.broker.protocol.version=3.9\n" in migration
    kraft = steps["brokers-kraft.2.edit"].diff or ""
    assert "-broker.id=2\n" in kraft and "+node.id=2\n" in kraft
    assert f"-{MIGRATION_FLAG}=true\n" in kraft
    assert "-zookeeper.ssl.keystore.password=<redacted>\n" in kraft
    final = steps["finalize.3000.edit"].diff or ""
    assert f"-{MIGRATION_FLAG}=true\n" in final and f"+{MIGRATION_FLAG}=false\n" in final
    assert "-zookeeper.connect=" in final
    assert "-zookeeper.ssl.keystore.password=<redacted>\n" in final
    for step in steps.values():
        assert "zk-secret" not in (step.diff or "")
    assert plan.texts_after["brokers-kraft.3.edit"].startswith("# the operator's file\n")
    finalized = values_of(plan.texts_after["finalize.3001.edit"])
    assert [k for k in finalized if k.startswith("zookeeper.")] == [MIGRATION_FLAG]
    assert finalized[MIGRATION_FLAG] == "false"
    assert finalized["process.roles"] == "controller"
    broker = values_of(plan.texts_after["brokers-kraft.3.edit"])
    assert not any(k.startswith("zookeeper.") for k in broker)
    assert broker["listener.security.protocol.map"].endswith(",CONTROLLER:PLAINTEXT")
    assert broker["process.roles"] == "broker" and broker["node.id"] == "3"


def test_an_edit_done_already_has_an_empty_diff(inv: Inventory) -> None:
    first = build_plan(inv, FILES, FACTS)
    written = {c: first.texts_after[f"controllers.{c}.write"] for c in (3000, 3001)}
    rolled = {b: first.texts_after[f"brokers-migration.{b}.edit"] for b in (1, 2, 3)}
    again = build_plan(inv, Files(rolled, written, FILES.client), FACTS)
    steps = _steps(again)
    assert steps["controllers.3000.write"].diff == ""
    assert steps["controllers.3000.write"].to_json()["done"] is True
    assert steps["brokers-migration.1.edit"].diff == ""
    assert steps["brokers-kraft.1.edit"].diff == first.phases[4].steps[0].diff
    assert steps["brokers-kraft.1.edit"].to_json()["done"] is False
    assert steps["controllers.quorum"].to_json()["done"] is None
    assert "(as wanted already)" in render_text(again)


@pytest.mark.parametrize(
    ("broker_s", "controller_s", "seconds"),
    [(30.0, 10.0, 200.0), (12.34, None, 74.0), (None, 10.0, None), (0.05, 0.04, 0.4)],
)
def test_the_estimate(
    inv: Inventory, broker_s: float | None, controller_s: float | None, seconds: float | None
) -> None:
    plan = build_plan(
        inv, FILES, FACTS, broker_restart_s=broker_s, controller_restart_s=controller_s
    )
    estimate = plan.estimate()
    assert estimate == {
        "formula": "2 x 3 brokers x T_broker + 2 controllers x T_controller",
        "broker_restart_seconds": broker_s,
        "controller_restart_seconds": controller_s,
        "rolls_seconds": seconds,
    }
    if broker_s is not None:
        expected = roll_seconds(3, broker_s, 2, controller_s or 0.0)
        assert estimate["rolls_seconds"] == round(expected, 1)
        assert f"= {seconds:g} s" in render_text(plan)
    else:
        assert "give --broker-restart-seconds" in render_text(plan)


def test_roll_seconds() -> None:
    assert roll_seconds(3, 60.0) == 360.0
    assert roll_seconds(3, 60.0, 3, 20.0) == 420.0
    assert roll_seconds(0, 60.0, 1, 5.0) == 5.0


def test_a_missing_and_an_unexpected_broker(inv: Inventory) -> None:
    plan = build_plan(inv, FILES, ClusterFacts(CLUSTER_ID, frozenset({1, 3, 4, 7}), None))
    assert plan.problems == (
        "broker(s) [2] of the inventory not registered in /brokers/ids: start them",
        "broker(s) [4, 7] registered in /brokers/ids are not in the inventory: add them "
        "(every broker is rolled)",
    )
    assert not plan.ready
    brokers = plan.to_json()["brokers"]
    assert [b["registered"] for b in brokers] == [True, False, True]


def test_a_zookeeper_error_and_a_file_problem(inv: Inventory) -> None:
    files = Files({1: _broker(1), 2: _broker(9), 3: _broker(3)}, FILES.controllers, FILES.client)
    facts = ClusterFacts(None, frozenset(), None, "could not connect to ZooKeeper within 18s")
    plan = build_plan(inv, files, facts)
    assert plan.problems == (
        "ZooKeeper not read: could not connect to ZooKeeper within 18s",
        f"broker 2 ({inv.brokers[1].properties}): broker.id='9', not 2",
    )
    text = render_text(plan)
    assert text.startswith(
        "Plan: zk1:2181,zk2:2181/kafka (cluster id not read, Kafka 3.9.2) to KRaft: "
        "3 broker(s), 2 controller(s)\nNOT ready:\n"
        "  - ZooKeeper not read: could not connect to ZooKeeper within 18s\n"
    )
    assert plan.to_json()["zookeeper_error"] == "could not connect to ZooKeeper within 18s"


def test_preflight_blockers_are_problems(inv: Inventory) -> None:
    report = PreflightReport(
        blockers=(Finding("blocker", "REASSIGNMENT_IN_PROGRESS", "a reassignment in flight"),),
        warnings=(Finding("warning", "PENDING_TOPIC_DELETION", "topic t pending deletion"),),
    )
    plan = build_plan(inv, FILES, ClusterFacts(CLUSTER_ID, frozenset({1, 2, 3}), report))
    assert plan.problems == ("preflight: REASSIGNMENT_IN_PROGRESS: a reassignment in flight",)
    document = plan.to_json()
    assert document["preflight"]["ready"] is False
    json.dumps(document)


def test_render_text_makes_file_text_inert(inv: Inventory) -> None:
    files = Files(
        {i: _broker(i, "ssl.cipher.suites=\x1b[31mred\u202e\n") for i in (1, 2, 3)},
        FILES.controllers,
        FILES.client,
    )
    plan = build_plan(inv, files, FACTS)
    text = render_text(plan)
    assert "\x1b" not in text and "\u202e" not in text
    assert "ssl.cipher.suites=\\x1b[31mred\\u202e" in text
    assert text.startswith(
        f"Plan: zk1:2181,zk2:2181/kafka (cluster id {CLUSTER_ID}, Kafka 3.9.2) to KRaft: "
        "3 broker(s), 2 controller(s)\nReady to start.\n\n1. preflight: check the cluster\n"
    )
    assert (
        "   [run]  controller 3000: format its metadata directory with ZooKeeper's cluster id "
        f"{CLUSTER_ID}: ssh ctl1 /opt/kafka/bin/kafka-storage.sh format -g -t {CLUSTER_ID} "
        "-c '/etc/kafka/my ctl.properties'\n"
    ) in text
    assert "   [gate] the controller quorum up: waits for DescribeQuorum at " in text
    assert f"          +{MIGRATION_FLAG}=true\n" in text
    assert "zk-secret" not in text


def test_to_json_is_json(inv: Inventory) -> None:
    plan = build_plan(inv, FILES, FACTS, broker_restart_s=30.0)
    document = json.loads(json.dumps(plan.to_json()))
    assert document["cluster_id"] == CLUSTER_ID
    assert document["kafka_version"] == "3.9.2"
    assert document["zookeeper_connect"] == "zk1:2181,zk2:2181/kafka"
    assert document["ready"] is True and document["problems"] == []
    assert document["preflight"] is None and document["zookeeper_error"] is None
    assert document["controllers"] == [
        {"id": 3000, "host": "ctl1", "port": 9093},
        {"id": 3001, "host": "ctl2", "port": 9093},
    ]
    assert document["phases"][0]["name"] == "preflight"
    format_step = document["phases"][1]["steps"][1]
    assert format_step["id"] == "controllers.3000.format"
    assert format_step["command"][6] == CLUSTER_ID
    assert document["estimate"]["rolls_seconds"] == 180.0
    assert "zk-secret" not in json.dumps(document)


def test_an_edit_of_a_secret_alone_is_not_done(inv: Inventory) -> None:
    first = build_plan(inv, FILES, FACTS)
    written = first.texts_after["controllers.3000.write"]
    old = written.replace("zk-secret", "old-secret")
    plan = build_plan(inv, Files(FILES.brokers, {3000: old, 3001: ""}, FILES.client), FACTS)
    assert plan.texts_after["controllers.3000.write"] != old  # the edit changes the file
    assert _steps(plan)["controllers.3000.write"].to_json()["done"] is False


def test_the_controllers_listen_as_the_brokers_migration_settings_say(inv: Inventory) -> None:
    """No [quorum] any more: CONTROLLER, on the protocol modes' rule gives it (SSL when
    the inter-broker listener is SSL), the same in the brokers' and controllers' files."""
    ssl = "inter.broker.listener.name=SSL\n"
    files = Files({i: _broker(i, ssl) for i in (1, 2, 3)}, FILES.controllers, _broker(1, ssl))
    plan = build_plan(inv, files, FACTS)
    controller = values_of(plan.texts_after["controllers.3000.write"])
    assert controller["listener.security.protocol.map"] == "CONTROLLER:SSL,SSL:SSL"
    assert controller["listeners"] == "CONTROLLER://ctl1:9093"
    broker = values_of(plan.texts_after["brokers-migration.1.edit"])
    assert broker["listener.security.protocol.map"].endswith(",CONTROLLER:SSL")
    assert broker["controller.listener.names"] == "CONTROLLER"


def test_a_plan_built_again_once_a_broker_is_in_kraft_mode(inv: Inventory) -> None:
    first = build_plan(inv, FILES, FACTS)
    written = {c: first.texts_after[f"controllers.{c}.write"] for c in (3000, 3001)}
    kraft = {b: first.texts_after[f"brokers-kraft.{b}.edit"] for b in (1, 2, 3)}
    again = build_plan(inv, Files(kraft, written, FILES.client), FACTS)
    steps = _steps(again)
    assert steps["controllers.3000.write"].done
    assert steps["brokers-migration.1.edit"].done and steps["brokers-kraft.1.edit"].done
    assert not steps["finalize.3000.edit"].done
