"""The measurements behind the metrics (latency windows, windowed rates, Raft commit
latency), the image counts, the exposition of a summary, and the metrics settings of
both configs. A metrics port that is taken or not of this machine:
tests/integration/test_metrics.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from migration.broker.config import BrokerConfigError, parse_broker_config
from migration.controller.config import ControllerConfigError, parse_config
from migration.controller.storage import StorageError, format_storage, formatted_as
from migration.image.model import BrokerImage, MetadataImage, PartitionImage, TopicImage
from migration.image.publishing import ImageChange, LoadManifest
from migration.observability import catalog
from migration.observability.endpoint import MetricsEndpoint
from migration.observability.exposition import summary
from migration.observability.samples import LatencyWindow, WindowedRate
from migration.raft.metrics import RaftMetrics
from migration.records import versions
from migration.server.node_metrics import ImageCounts, LatestImage
from tests.unit.test_broker_config import GOOD as BROKER
from tests.unit.test_controller_config import GOOD as CONTROLLER


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_latency_window_keeps_recent_quantiles_and_lifetime_totals() -> None:
    window = LatencyWindow(size=100)
    assert window.summary().count == 0 and window.summary().max_ms == 0.0
    for ms in range(1, 201):  # the first 100 fall out of the window
        window.record(float(ms))
    s = window.summary()
    assert s.count == 200 and s.total_ms == sum(range(1, 201))
    assert dict(s.quantiles)[0.5] == 150.0 and dict(s.quantiles)[0.99] == 199.0
    assert s.max_ms == 200.0 and s.mean_ms == 150.5


def test_a_timed_block_is_recorded_even_when_it_raises() -> None:
    clock = Clock()
    window = LatencyWindow(clock=clock)
    with pytest.raises(RuntimeError), window.time():
        clock.now += 0.25
        raise RuntimeError("fenced")
    assert window.summary().max_ms == 250.0


def test_a_windowed_rate_reads_a_steady_load_and_decays_to_zero() -> None:
    clock = Clock()
    rate = WindowedRate(window_s=30, clock=clock)
    for _ in range(60):
        rate.record(10)
        clock.now += 1
    assert rate.rate() == pytest.approx(10.0, rel=0.05)
    clock.now += 31
    assert rate.rate() == 0.0


def test_commit_latency_is_measured_from_append_to_the_high_watermark() -> None:
    raft = RaftMetrics()
    raft.appended(last_offset=9, count=10, now_ms=100.0)
    raft.appended(last_offset=19, count=10, now_ms=110.0)
    raft.committed(high_watermark=10, now_ms=130.0)  # the first batch only
    assert raft.commit_latency.summary().count == 1
    raft.committed(high_watermark=20, now_ms=150.0)
    s = raft.commit_latency.summary()
    assert (s.count, s.max_ms, s.mean_ms) == (2, 40.0, 35.0)
    raft.appended(last_offset=29, count=10, now_ms=160.0)
    raft.new_leadership()  # an earlier term's batch is not this leader's to measure
    raft.committed(high_watermark=30, now_ms=900.0)
    assert raft.commit_latency.summary().count == 2
    assert raft.append_records.rate() > 0


def image(*leaders: int) -> MetadataImage:
    partitions = {
        i: PartitionImage((1, 2), (1,), (), (), leader, 0, 0, 0) for i, leader in enumerate(leaders)
    }
    broker = BrokerImage(1, b"", 1, (), (), None, False, False, True)
    fenced = BrokerImage(2, b"", 1, (), (), None, True, False, False)
    return MetadataImage(
        features={versions.METADATA_VERSION: versions.LATEST},
        brokers={1: broker, 2: fenced},
        topics={b"t" * 16: TopicImage("t", b"t" * 16, partitions)},
        topic_ids={"t": b"t" * 16},
    )


def test_image_counts_and_their_cache() -> None:
    counts = ImageCounts.of(image(1, -1, 2, -1))
    assert counts == ImageCounts(
        topics=1, partitions=4, offline=2, fenced=1, active=1, migrating_zk=1
    )
    latest = LatestImage()
    first = image(1)
    latest.publish(ImageChange(MetadataImage.EMPTY, first, None, LoadManifest(0, 0, 1)))
    assert latest.counts()[1] is latest.counts()[1]  # counted once per image
    second = image(-1)
    latest.publish(ImageChange(first, second, None, LoadManifest(1, 1, 1)))
    assert latest.counts()[1].offline == 1


def test_a_summary_is_exposed_as_the_jmx_exporter_renders_a_timer() -> None:
    window = LatencyWindow()
    window.record(5.0)

    class One:
        def collect(self):  # type: ignore[no-untyped-def]
            yield summary(catalog.ZK_WRITE_DELTA_TIME, window.summary())

    registry = CollectorRegistry()
    registry.register(One())
    text = generate_latest(registry).decode()
    name = catalog.ZK_WRITE_DELTA_TIME.name
    assert f'{name}{{quantile="0.99"}} 5.0' in text
    assert f"{name}_count 1.0" in text and f"{name}_sum 5.0" in text
    assert f"# TYPE {name} summary" in text


def test_metrics_settings_in_both_configs() -> None:
    assert parse_config(CONTROLLER, "c").metrics is None
    config = parse_config({**CONTROLLER, "metrics.port": "9404"}, "c")
    assert config.metrics == MetricsEndpoint("0.0.0.0", 9404)
    broker = parse_broker_config({**BROKER, "metrics.port": "0", "metrics.host": "127.0.0.1"}, "s")
    assert broker.metrics == MetricsEndpoint("127.0.0.1", 0)
    with pytest.raises(ControllerConfigError) as bad:
        parse_config({**CONTROLLER, "metrics.port": "70000", "metrics.host": "a b"}, "c")
    assert "metrics.port=70000 is outside [0, 65535]" in str(bad.value)
    assert "metrics.host" in str(bad.value)
    with pytest.raises(BrokerConfigError, match=r"metrics\.host is set but metrics\.port is not"):
        parse_broker_config({**BROKER, "metrics.host": "127.0.0.1"}, "s")


def test_formatting_again_is_harmless_only_for_the_same_node_and_cluster(tmp_path: Path) -> None:
    assert formatted_as(tmp_path / "m", 3000, "MkU3OEVBNTcwNTJENDM2Qk") is None
    made = format_storage(tmp_path / "m", 3000, "MkU3OEVBNTcwNTJENDM2Qk", versions.LATEST)
    assert formatted_as(tmp_path / "m", 3000, "MkU3OEVBNTcwNTJENDM2Qk") == made
    with pytest.raises(StorageError, match=r"formatted for cluster MkU3OEVBNTcwNTJENDM2Qk"):
        formatted_as(tmp_path / "m", 3001, "MkU3OEVBNTcwNTJENDM2Qk")
