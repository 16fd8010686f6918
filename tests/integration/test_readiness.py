"""Readiness and liveness on the metrics port, from live processes: one voter of three
started alone knows no leader and answers 503 saying so, as does a KRaft-mode broker
that cannot register; once the other voters start, the quorum forms and every
controller (the leader, and each follower caught up with its high watermark) and the
broker (registered, unfenced, serving) answer 200, while /metrics is still served
beside them."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from migration.broker.modes import Mode
from migration.local.cluster import PROTOCOLS, LocalCluster
from migration.local.quorum import broker_migration_properties
from migration.observability.health import LIVE_PATH, READY_PATH
from tests.broker_harness import eventually
from tests.quorum_harness import Quorum

pytestmark = pytest.mark.timeout(180)

BROKER = 7


def probe(target: str, path: str) -> tuple[int, dict[str, Any]]:
    """The status and JSON body of ``GET http://target/path``."""
    try:
        with urllib.request.urlopen(f"http://{target}{path}", timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def ready(target: str) -> dict[str, Any]:
    """The body of a 200 answer to the readiness path; {} (falsy) for a 503."""
    status, body = probe(target, READY_PATH)
    assert body["ready"] == (status == 200), body
    return body if status == 200 else {}


def wait_ready(target: str) -> dict[str, Any]:
    return eventually(lambda: ready(target), 90, f"{target} ready")


@pytest.fixture
def quorum(tmp_path: Path) -> Iterator[Quorum]:
    q = Quorum(tmp_path / "quorum", metrics=True)
    try:
        yield q
    finally:
        q.stop_all()


@pytest.fixture
def kraft_broker(tmp_path: Path, quorum: Quorum) -> Iterator[LocalCluster]:
    """One KRaft-mode broker of ``quorum``'s cluster (not started), its storage as a
    ZooKeeper-mode run of it leaves it."""
    cluster = LocalCluster(
        "127.0.0.1:1/unused",  # a KRaft-mode broker keeps no ZooKeeper setting
        [BROKER],
        tmp_path / "brokers",
        properties=broker_migration_properties(quorum, PROTOCOLS),
        metrics=True,
    )
    cluster.set_mode(BROKER, Mode.KRAFT)
    data = cluster.brokers[BROKER].config.parent / "data"
    data.mkdir()
    (data / "meta.properties").write_text(
        f"version=0\nbroker.id={BROKER}\ncluster.id={quorum.cluster_id}\n"
    )
    try:
        yield cluster
    finally:
        cluster.stop()


def test_a_lone_voter_is_not_ready_until_the_quorum_forms(
    quorum: Quorum, kraft_broker: LocalCluster
) -> None:
    first, *others = quorum.ids
    lone = quorum.metrics_target(first)
    quorum.start(first)
    status, body = eventually(lambda: probe(lone, READY_PATH), 60, "controller answers")
    assert status == 503 and body["ready"] is False
    assert body["reason"].startswith("no leader known"), body
    assert body["leader_id"] is None and body["node_id"] == first
    live, alive = probe(lone, LIVE_PATH)
    assert live == 200 and alive["live"] is True, alive

    kraft_broker.start(BROKER)
    broker = f"127.0.0.1:{kraft_broker.brokers[BROKER].metrics_port}"
    status, body = eventually(
        lambda: (a := probe(broker, READY_PATH))[1]["reason"] != "starting" and a,
        60,
        "broker checks wired",
    )
    assert status == 503 and body["reason"] == "not registered with the KRaft controller", body

    for node in others:
        quorum.start(node)
    answers = {node: wait_ready(quorum.metrics_target(node)) for node in quorum.ids}
    leader = quorum.wait_leader()
    assert answers[leader]["reason"] == "the leader and active controller"
    for node in [*others, first]:
        if node != leader:
            assert answers[node]["reason"] == f"following {leader}, caught up", answers[node]
            assert answers[node]["lag"] >= 0 and answers[node]["high_watermark"] > 0
    serving = wait_ready(broker)
    assert serving["reason"] == "registered, unfenced and serving", serving
    assert serving["fenced"] is False and serving["broker_epoch"] >= 0
    with urllib.request.urlopen(f"http://{lone}/metrics", timeout=10) as answer:
        assert b"kafka_server_raftmetrics_current_state" in answer.read()
