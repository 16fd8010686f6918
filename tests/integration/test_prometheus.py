"""A real Prometheus scrapes a real migration: controllers and brokers expose their
metrics under Kafka's names, ZkMigrationState moves PRE_MIGRATION (2) → MIGRATION (1) in
Prometheus' own storage, the ZooKeeperUnreachable rule (from the chart's rule file) fires
while ZooKeeper is down and resolves once it returns, every controller measures its
event queue and the records it applied, ControllerDown goes pending for a controller
killed outright and clears once it is back, and a broker rolled to KRaft mode reports
MetadataType 3 as a Raft observer. No secret reaches any metrics page."""

from __future__ import annotations

import signal
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from migration.broker.modes import Mode
from migration.local.seed import ClusterSpec
from migration.local.zookeeper import EmbeddedZooKeeper
from migration.observability import catalog
from tests.broker_harness import eventually
from tests.migration_harness import MigrationRig, migration_rig
from tests.prometheus_harness import Prometheus, prometheus
from tests.tools import RULES

STATE = catalog.ZK_MIGRATION_STATE.name
ACTIVE = f"and on (instance) {catalog.ACTIVE_CONTROLLER_COUNT.name} == 1"
SECRET = "metrics-must-not-show-this"


def scrape(target: str) -> str:
    with urllib.request.urlopen(f"http://{target}/metrics", timeout=10) as answer:
        text: str = answer.read().decode()
    return text


def exported(text: str) -> set[str]:
    return {
        line.split("{")[0].split(" ")[0] for line in text.splitlines() if line and line[0] != "#"
    }


def one_value(server: Prometheus, promql: str) -> float | None:
    result = server.query(promql)
    return float(result[0]["value"][1]) if result else None


@pytest.fixture(scope="module")
def own_zookeeper() -> Iterator[EmbeddedZooKeeper]:
    """A ZooKeeper of this module's own: the test stops it."""
    with EmbeddedZooKeeper() as server:
        yield server


@pytest.fixture(scope="module")
def scraped(
    own_zookeeper: EmbeddedZooKeeper, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[MigrationRig, Prometheus, dict[str, Any]]]:
    tmp = tmp_path_factory.mktemp("prometheus")
    spec = ClusterSpec(topics=3, partitions=6, password_encoder_secret=SECRET)
    with migration_rig(own_zookeeper, tmp, spec, start_quorum=False, metrics=True) as rig:
        held = min(rig.cluster.brokers)  # restarted without the flag: the driver waits
        rig.cluster.set_mode(held, Mode.ZOOKEEPER)
        rig.cluster.restart(held)
        rig.cluster.wait_ready(90)
        targets = [rig.quorum.metrics_target(n) for n in rig.quorum.ids] + [
            f"127.0.0.1:{b.metrics_port}" for b in rig.cluster.brokers.values()
        ]
        jobs = {"controller": targets[: len(rig.quorum.ids)],
                "broker": targets[len(rig.quorum.ids) :]}  # fmt: skip
        with prometheus(tmp / "prometheus", jobs, [RULES]) as server:
            facts: dict[str, Any] = {"since": time.time(), "targets": targets, "held": held}
            controllers = "|".join(targets[: len(rig.quorum.ids)])
            state = f'max({STATE}{{instance=~"{controllers}"}})'
            rig.quorum.start_all()
            facts["eligible"] = eventually(
                lambda: one_value(server, state) == 2, 120, "state 2 scraped"
            )
            rig.cluster.set_mode(held, Mode.MIGRATING)
            rig.cluster.restart(held)
            rig.wait_phase("DUAL_WRITE")
            facts["states"] = eventually(
                lambda: (v := server.values(state, facts["since"]))[-1] == 1 and v, 60, "state 1"
            )
            yield rig, server, facts


def test_every_process_is_scraped(scraped: tuple[MigrationRig, Prometheus, dict[str, Any]]) -> None:
    _, server, facts = scraped
    assert eventually(lambda: server.scraped() == set(facts["targets"]), 30, "all targets up")


def test_the_state_series_moves_from_pre_migration_to_migration(
    scraped: tuple[MigrationRig, Prometheus, dict[str, Any]],
) -> None:
    rig, server, facts = scraped
    states = [int(v) for v in facts["states"]]
    assert 2 in states and states[-1] == 1, states
    assert states.index(1) > states.index(2)  # 2 first, then 1, never back
    assert 2 not in states[states.index(1) :]
    assert one_value(server, f"max({catalog.MIGRATION_STATE.name})") == 4  # MigrationActive
    eventually(  # a leader change shows two until the old leader's next scrape
        lambda: one_value(server, f"sum({catalog.ACTIVE_CONTROLLER_COUNT.name})") == 1,
        60,
        "one active controller",
    )
    migrating = one_value(server, f"max({catalog.MIGRATING_ZK_BROKER_COUNT.name})")
    assert migrating == len(rig.cluster.brokers)
    eventually(  # led by a KRaft controller: Dual (the restarted one learns it last)
        lambda: len(server.query(f"{catalog.METADATA_TYPE.name} == 2")) == len(rig.cluster.brokers),
        60,
        "every broker Dual",
    )
    phases = server.query(f"{catalog.DRIVER_PHASE.name} == 1 {ACTIVE}")
    assert [p["metric"]["phase"] for p in phases] == ["DUAL_WRITE"]
    synced = one_value(server, f"max({catalog.ZK_WRITE_SNAPSHOT_TIME.name}_count)")
    assert synced is not None and synced >= 1  # the full sync after the copy


def test_controllers_export_the_catalog_and_no_secret(
    scraped: tuple[MigrationRig, Prometheus, dict[str, Any]],
) -> None:
    rig, _, _ = scraped
    wanted = {
        s.name
        for s in catalog.ALL
        if catalog.Where.CONTROLLER in s.where or catalog.Where.ACTIVE in s.where
    } | {catalog.RAFT_CURRENT_LEADER.name, catalog.FEATURES.name}
    wanted.remove(catalog.ZK_CONNECTED.name)  # once it has a session: the active one
    for node in rig.quorum.ids:
        text = scrape(rig.quorum.metrics_target(node))
        names = exported(text)
        missing = {w for w in wanted if w not in names and w + "_count" not in names}
        assert not missing, (node, missing)
        assert SECRET not in text
    for child in rig.cluster.brokers.values():
        text = scrape(f"127.0.0.1:{child.metrics_port}")
        assert catalog.METADATA_TYPE.name in exported(text)
        assert SECRET not in text


def test_an_alert_fires_while_zookeeper_is_down_and_resolves_after(
    own_zookeeper: EmbeddedZooKeeper,
    scraped: tuple[MigrationRig, Prometheus, dict[str, Any]],
) -> None:
    _, server, _ = scraped
    assert "ZooKeeperUnreachable" not in server.firing()
    own_zookeeper.kill(1)
    try:
        eventually(lambda: "ZooKeeperUnreachable" in server.firing(), 120, "alert firing")
    finally:
        own_zookeeper.restart(1)
    eventually(lambda: "ZooKeeperUnreachable" not in server.firing(), 120, "alert resolved")
    assert one_value(server, f"max({catalog.ZK_CONNECTED.name} {ACTIVE})") == 1


def test_controllers_measure_their_event_queue_and_what_they_applied(
    scraped: tuple[MigrationRig, Prometheus, dict[str, Any]],
) -> None:
    rig, server, _ = scraped
    voters = len(rig.quorum.ids)

    def count(promql: str) -> float | None:
        return one_value(server, f"count({promql})")

    for spec in (catalog.EVENT_QUEUE_TIME, catalog.EVENT_QUEUE_PROCESSING_TIME):
        assert count(f"{spec.name}_count > 0") == voters, spec.name
        assert count(f'{spec.name}{{quantile="0.99"}} >= 0') == voters, spec.name
    assert count(f"{catalog.NEW_ACTIVE_CONTROLLERS.name} >= 1") == voters  # each saw one
    assert count(f"{catalog.LAST_APPLIED_RECORD_TIMESTAMP.name} > 0") == voters
    assert count(f"{catalog.LAST_APPLIED_RECORD_LAG_MS.name} >= 0") == voters
    assert one_value(server, f"max({catalog.METADATA_ERRORS.name})") == 0
    assert one_value(server, f"max({catalog.TIMED_OUT_BROKER_HEARTBEATS.name})") == 0
    # every controller has applied everything committed (the high watermark is the next
    # offset), once a quiet moment lets the three scrapes agree
    applied = f"{catalog.LAST_APPLIED_RECORD_OFFSET.name} + 1"
    caught_up = f"{applied} == on (instance, job) {catalog.RAFT_HIGH_WATERMARK.name}"
    eventually(lambda: count(caught_up) == voters, 60, "every controller applied to the hwm")
    # the process's own health, on controllers and brokers alike
    assert count('process_resident_memory_bytes{job="controller"} > 0') == voters
    brokers = len(rig.cluster.brokers)
    assert count('python_gc_collections_total{job="broker",generation="0"}') == brokers


def test_a_controller_killed_outright_makes_controller_down_pending_until_it_returns(
    scraped: tuple[MigrationRig, Prometheus, dict[str, Any]],
) -> None:
    """ControllerDown's `for:` is minutes; its pending state is the rule matching, which
    is what this checks end to end (scrape, `up`, the rule) without waiting for it."""
    rig, server, _ = scraped
    active = catalog.ACTIVE_CONTROLLER_COUNT.name
    follower = next(
        n for n in rig.quorum.ids
        if one_value(server, f'{active}{{instance="{rig.quorum.metrics_target(n)}"}}') == 0
    )  # fmt: skip
    target = rig.quorum.metrics_target(follower)
    assert not server.active("ControllerDown")
    rig.quorum.kill(follower, signal.SIGKILL)
    try:
        down = eventually(lambda: server.active("ControllerDown"), 30, "ControllerDown pending")
        assert [(a["instance"], a["job"], a["state"]) for a in down] == [
            (target, "controller", "pending")
        ]
        assert not server.active("AllControllersDown")  # two of three still answer
    finally:
        rig.quorum.start(follower)
    eventually(lambda: not server.active("ControllerDown"), 60, "ControllerDown cleared")
    assert one_value(server, f'up{{instance="{target}"}}') == 1


def test_a_kraft_broker_reports_metadata_type_3_as_an_observer(
    scraped: tuple[MigrationRig, Prometheus, dict[str, Any]],
) -> None:
    rig, server, facts = scraped
    rolled = facts["held"]
    rig.cluster.set_mode(rolled, Mode.KRAFT)
    rig.cluster.restart(rolled)
    rig.cluster.wait_ready(90, expected=sorted(rig.cluster.brokers))
    target = f"127.0.0.1:{rig.cluster.brokers[rolled].metrics_port}"
    kraft = eventually(
        lambda: server.query(f'{catalog.METADATA_TYPE.name}{{instance="{target}"}} == 3'),
        60,
        "MetadataType 3 scraped",
    )
    assert kraft
    observer = eventually(
        lambda: server.query(
            f'{catalog.RAFT_CURRENT_STATE.name}{{instance="{target}",current_state="observer"}}'
        ),
        30,
        "observer scraped",
    )
    assert observer
    # an observer knows the quorum's high watermark from its first fetch on; a scrape
    # before that fetch reads 0
    high_watermark = f'{catalog.RAFT_HIGH_WATERMARK.name}{{instance="{target}"}} > 0'
    assert eventually(lambda: server.query(high_watermark), 30, "the high watermark fetched")
    assert Path(rig.cluster.brokers[rolled].config).read_text().count("process.roles=broker") == 1
