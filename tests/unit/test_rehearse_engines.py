"""The rehearsal's engines: which one runs (:func:`kafka_engine.choose`), whether Kafka's
brokers fit the machine's open-files limit, and the copy's figures read from either kind
of controller log (:mod:`migration.rehearse.copy_log`): zk2kraft's controllers' output
and Apache Kafka's ``server.log``, in the forms each writes."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from migration.local import kafka_service
from migration.local.kafka_release import KafkaUnavailableError
from migration.rehearse import kafka_engine, tree_facts
from migration.rehearse.copy_log import copy_figures_in, log_sizes, text_since
from migration.zk import paths
from migration.zk.model.topics import TopicAssignment, render_topic
from migration.zk.tree_copy import CopiedNode, TreeCopy

KAFKA_LOG = """\
[2026-11-28 22:37:13,131] INFO [KRaftMigrationDriver id=3000] 3000 transitioning from WAIT_FOR_CONTROLLER_QUORUM to WAIT_FOR_BROKERS state (org.apache.kafka.metadata.migration.KRaftMigrationDriver)
[2026-11-28 22:37:13,299] INFO [KRaftMigrationDriver id=3000] 3000 transitioning from WAIT_FOR_BROKERS to BECOME_CONTROLLER state (org.apache.kafka.metadata.migration.KRaftMigrationDriver)
[2026-11-28 22:37:13,557] INFO [KRaftMigrationDriver id=3000] 3000 transitioning from BECOME_CONTROLLER to ZK_MIGRATION state (org.apache.kafka.metadata.migration.KRaftMigrationDriver)
[2026-11-28 22:37:14,916] INFO [KRaftMigrationDriver id=3000] Completed migration of metadata from ZooKeeper to KRaft. 43 records were generated in 1351 ms across 1 batches. The average time spent waiting on a batch was 162.00 ms. (org.apache.kafka.metadata.migration.KRaftMigrationDriver)
[2026-11-28 22:37:15,830] INFO [KRaftMigrationDriver id=3000] 3000 transitioning from KRAFT_CONTROLLER_TO_BROKER_COMM to DUAL_WRITE state (org.apache.kafka.metadata.migration.KRaftMigrationDriver)
[2026-11-28 22:37:16,000] INFO [KRaftMigrationDriver id=3000] 3000 transitioning from DUAL_WRITE to DUAL_WRITE state (org.apache.kafka.metadata.migration.KRaftMigrationDriver)
"""  # noqa: E501 - Kafka's lines as its log4j layout writes them
STANDBY_LOG = """\
[2026-11-28 22:37:11,496] INFO [KRaftMigrationDriver id=3002] 3002 transitioning from UNINITIALIZED to INACTIVE state (org.apache.kafka.metadata.migration.KRaftMigrationDriver)
"""  # noqa: E501


def test_kafkas_own_figures_come_from_the_controller_that_copied() -> None:
    figures = copy_figures_in({3002: STANDBY_LOG, 3000: KAFKA_LOG})
    assert (figures.controller, figures.records, figures.copy_ms) == (3000, 43, 1351.0)
    assert figures.write_pause_ms == pytest.approx(2531.0)  # BECOME_CONTROLLER to DUAL_WRITE
    local = datetime(2026, 11, 28, 22, 37, 13, 299000)
    assert figures.paused_at == local.astimezone(UTC)


def test_a_log_with_no_copy_gives_empty_figures() -> None:
    figures = copy_figures_in({3002: STANDBY_LOG})
    assert figures.controller is None and figures.records == 0 and figures.paused_at is None


def test_zk2kraft_controllers_output_is_read_too() -> None:
    own = (
        "2026-11-28 22:37:13,000 INFO migration driver [BECOME_CONTROLLER] claimed\n"
        "2026-11-28 22:37:13,100 INFO 12 records were generated in 80 ms\n"
        "2026-11-28 22:37:13,600 INFO migration driver [DUAL_WRITE]\n"
    )
    figures = copy_figures_in({1: own})
    assert (figures.records, figures.copy_ms) == (12, 80.0)
    assert figures.write_pause_ms == pytest.approx(600.0)


def test_a_log_is_read_on_from_where_it_ended(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(KAFKA_LOG)
    since = log_sizes({3000: log, 3001: tmp_path / "absent.log"})
    assert since == {3000: len(KAFKA_LOG.encode()), 3001: 0}
    with log.open("a") as f:
        f.write("more\n")
    assert text_since(log, since[3000]) == "more\n"
    assert text_since(tmp_path / "absent.log", 0) == ""


@pytest.fixture
def kafka_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kafka_engine, "kafka_release", lambda version: None)


@pytest.fixture
def kafka_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(version: str) -> None:
        raise KafkaUnavailableError(f"Apache Kafka {version} is not installed: run `make kafka`")

    monkeypatch.setattr(kafka_engine, "kafka_release", missing)


@pytest.mark.usefixtures("kafka_installed")
def test_auto_takes_kafka_when_installed_up_to_the_broker_limit() -> None:
    chosen = kafka_engine.choose("auto", kafka_engine.MAX_BROKERS)
    assert (chosen.name, chosen.version) == ("kafka", "3.9.2") and "installed" in chosen.why
    bigger = kafka_engine.choose("auto", kafka_engine.MAX_BROKERS + 1)
    assert bigger.name == "zk2kraft" and "--engine kafka" in bigger.why
    assert kafka_engine.choose("kafka", 40).name == "kafka"  # asked for: however many
    assert kafka_engine.choose("zk2kraft", 3).name == "zk2kraft"


@pytest.mark.usefixtures("kafka_missing")
def test_without_kafka_auto_says_why_and_kafka_is_refused() -> None:
    chosen = kafka_engine.choose("auto", 3)
    assert chosen.name == "zk2kraft" and "make kafka" in chosen.why
    with pytest.raises(KafkaUnavailableError):
        kafka_engine.choose("kafka", 3)


def test_the_kafka_engines_runbook_is_the_runbooks_own() -> None:
    """Each step's section exists in the runbook and its commands are the section's own."""
    text = (Path(__file__).parents[2] / "runbooks" / "kafka-clusters.md").read_text()
    sections = text.split("\n## ")
    for step in kafka_engine.RUNBOOK:
        anchor = step.runbook.split("#", 1)[1]
        section = next(s for s in sections if _anchor(s.splitlines()[0]) == anchor)
        for command in step.commands:
            assert command in section, (anchor, command)


def _anchor(heading: str) -> str:
    """A Markdown heading as GitHub anchors it."""
    kept = "".join(c for c in heading.lower() if c.isalnum() or c in " -")
    return kept.strip().replace(" ", "-")


def test_a_broker_whose_logs_outnumber_the_open_files_limit_is_refused_before_it_starts() -> None:
    """The busiest broker's replicas, counted from the topic znodes as Kafka writes them
    (a topic znode that does not parse left to the preflight), against the limit its
    Kafka JVM would run under: Kafka keeps a file open for each partition log."""
    topics = {
        "a": TopicAssignment("a", {0: (1, 2), 1: (2, 3), 2: (2, 1)}, "AAAAAAAAAAAAAAAAAAAAAA"),
        "b": TopicAssignment("b", {0: (3,)}),
    }
    nodes = [CopiedNode(paths.topic(n), render_topic(t)) for n, t in topics.items()]
    nodes += [
        CopiedNode(paths.topic("bad"), b"{not json"),
        CopiedNode(paths.partition_state("a", 0), b'{"leader":1}'),  # below a topic: not one
    ]
    tree = TreeCopy("/", tuple(nodes), {}, (), len(nodes), 0, 0.0)
    hosted = tree_facts.replicas_by_broker(tree)
    assert hosted == {1: 2, 2: 3, 3: 2}

    kafka_engine.check_open_files(hosted, limit=kafka_engine.OPEN_FILES_BESIDE_LOGS + 3)
    with pytest.raises(RuntimeError) as refused:
        kafka_engine.check_open_files(hosted, limit=kafka_engine.OPEN_FILES_BESIDE_LOGS + 2)
    assert str(refused.value).startswith(
        "broker 2 would host 3 partition logs, and Kafka keeps a file open for each"
    )
    assert "open-files limit of 1,002" in str(refused.value)
    kafka_engine.check_open_files({}, limit=1)  # no topic: nothing to refuse

    # each start given a start's usual time and more for the busiest broker's logs
    start_s = tree_facts.kafka_start_timeout_s(hosted)
    assert start_s == pytest.approx(kafka_service.START_S + 3 * 0.05)
    assert tree_facts.kafka_start_timeout_s({}) == kafka_service.START_S


class _Clock:
    """Time that passes only when the wait sleeps."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_the_catch_up_waits_while_zookeeper_moves_and_gives_up_when_it_stands() -> None:
    """The catch-up ends when its reading says so; its hang guard runs from the last move
    of ``/migration``'s offset, not from its start."""
    clock, said = _Clock(), []
    stall = int(kafka_engine.WAIT_S // kafka_engine.LAG_SAMPLE_S)
    # not read yet; then ZooKeeper moving by one every half-guard, far past one guard
    readings: list[tuple[int | None, str | None]] = [(None, "not read")]
    readings += [(100 + i // (stall // 2), "behind") for i in range(4 * stall)]
    readings.append((110, None))
    it = iter(readings)
    kafka_engine.until_caught_up(lambda: next(it), said.append, clock, clock.sleep)
    assert next(it, None) is None  # read until it was caught up, not past it
    assert clock.now > 3 * kafka_engine.WAIT_S
    assert said[0] == "ZooKeeper catching up: behind"

    clock = _Clock()
    with pytest.raises(TimeoutError) as stood:  # ZooKeeper stands: given up one guard later
        kafka_engine.until_caught_up(lambda: (107, "behind"), said.append, clock, clock.sleep)
    assert str(stood.value) == f"ZooKeeper did not catch up in {kafka_engine.WAIT_S:g} s: behind"
    assert kafka_engine.WAIT_S < clock.now <= kafka_engine.WAIT_S + 2 * kafka_engine.LAG_SAMPLE_S
