"""The Kafka-side bench's pure half (:mod:`tests.benchmarks.kafka_side`): times read off
both engines' log lines, and how far zk2kraft is ahead (no duration is asserted of a
run: these are fixed texts)."""

from __future__ import annotations

from tests.benchmarks import kafka_side

KAFKA_LOG = """\
[2026-11-28 22:37:13,299] INFO [KRaftMigrationDriver id=3000] 3000 transitioning from WAIT_FOR_BROKERS to BECOME_CONTROLLER state (org.apache.kafka.metadata.migration.KRaftMigrationDriver)
[2026-11-28 22:37:13,400] INFO [KRaftMigrationDriver id=3000] Claimed ZK controller leadership in 5000 ns. Transitioned migration state from A to B (org.apache.kafka.metadata.migration.KRaftMigrationDriver)
a continuation line without a timestamp
[2026-11-28 22:37:15,830] INFO [KRaftMigrationDriver id=3000] 3000 transitioning from KRAFT_CONTROLLER_TO_BROKER_COMM to DUAL_WRITE state (org.apache.kafka.metadata.migration.KRaftMigrationDriver)
[2026-11-28 22:37:16,000] INFO [KRaftMigrationDriver id=3000] 3000 transitioning from DUAL_WRITE to DUAL_WRITE state (org.apache.kafka.metadata.migration.KRaftMigrationDriver)
"""  # noqa: E501
ZK2KRAFT_LOG = """\
2026-11-28 22:37:13,000 INFO migration.driver.driver: migration driver [BECOME_CONTROLLER]: waiting
2026-11-28 22:37:13,050 INFO migration.driver.driver: migration driver [ZK_MIGRATION]: claimed ZooKeeper: /controller names KRaft controller 1 (epoch 1), /controller_epoch is 2
2026-11-28 22:37:13,250 INFO migration.driver.driver: migration driver [DUAL_WRITE]: brokers told
"""  # noqa: E501


def test_claim_to_dual_write_is_read_off_either_engines_lines() -> None:
    kafka = kafka_side.span_ms(KAFKA_LOG, kafka_side.claimed("kafka"), kafka_side.is_dual_write)
    ours = kafka_side.span_ms(
        ZK2KRAFT_LOG, kafka_side.claimed("zk2kraft"), kafka_side.is_dual_write
    )
    assert (kafka, ours) == (2430.0, 200.0)
    assert kafka_side.span_ms("", kafka_side.claimed("kafka"), kafka_side.is_dual_write) is None


def test_the_first_and_the_last_dual_write_line() -> None:
    first = kafka_side.first_at(KAFKA_LOG, kafka_side.is_dual_write)
    last = kafka_side.last_at(KAFKA_LOG, kafka_side.is_dual_write)
    assert first is not None and last is not None
    assert (first.second, first.microsecond, last.second) == (15, 830_000, 16)
    assert kafka_side.first_at(KAFKA_LOG, lambda line: "nothing such" in line) is None


def test_ahead_is_above_one_when_zk2kraft_is_ahead_for_costs_and_rates() -> None:
    ours = {"write_pause_ms": 100, "copy_records_per_s": 50_000, "failover_ms": 0}
    kafka = {"write_pause_ms": 250, "copy_records_per_s": 10_000, "failover_ms": 900}
    ratios = kafka_side.ahead(ours, kafka)
    assert ratios["write_pause_ms"] == 2.5
    assert ratios["copy_records_per_s"] == 5.0
    assert ratios["failover_ms"] is None  # zero is not a measurement
    assert ratios["controllers_peak_rss_mib"] is None  # missing on both sides


def test_the_table_names_every_figure_and_what_was_not_measured() -> None:
    ours: dict[str, object] = {"write_pause_ms": 100}
    kafka: dict[str, object] = {"version": "3.9.2"}
    engines = {"zk2kraft": ours, "kafka": kafka}
    result = {
        "profile": "medium",
        "partitions": 10_000,
        "brokers": 6,
        "replication_factor": 3,
        "engines": engines,
    }
    lines = kafka_side.table(result | {"ahead": kafka_side.ahead(ours, kafka)})
    assert len([line for line in lines if "not measured" in line]) == len(kafka_side.FIGURES)
    assert lines[0].startswith(
        "kafka-side medium (10,000 partitions, 6 brokers, replication factor 3): Apache Kafka 3.9"
    )


def test_a_side_run_alone_shows_the_other_as_not_run_and_no_ratio() -> None:
    ours: dict[str, object] = {"write_pause_ms": 602, "copy_records": 127_520, "wall_s": 380.0}
    result = {
        "profile": "large",
        "partitions": 100_000,
        "brokers": 12,
        "replication_factor": 1,
        "engines": {"zk2kraft": ours},
        "ahead": kafka_side.ahead(ours, {}),
    }
    lines = kafka_side.table(result)
    assert lines[0].endswith("Apache Kafka (not run) against zk2kraft, one side run alone")
    pause = next(line for line in lines if line.lstrip().startswith("copy's write pause"))
    assert pause.split()[-5:] == ["602", "ms", "not", "run", "-"]  # no ratio
    assert [line for line in lines if line.startswith("  kafka")] == []
    assert any(line.startswith("  zk2kraft: 127520 records") for line in lines)
