"""Kafka's config rules: what a topic or broker may be given (validate_config)."""

from __future__ import annotations

import pytest

from migration.controller.config_rules import validate_config
from migration.records.codes import BROKER_RESOURCE, TOPIC_RESOURCE


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("my.plugin.setting", "anything"),  # custom keys: plugins read them
        ("listener.name.internal.ssl.keystore.location", "/etc/k.jks"),
        ("listener.name.external.sasl.enabled.mechanisms", "SCRAM-SHA-512"),
        ("log.retention.ms", "86400000"),
        ("log.cleaner.threads", "2"),
        ("ssl.keystore.password", "hunter2"),
    ],
)
def test_broker_configs_kafka_accepts(name: str, value: str) -> None:
    assert validate_config(BROKER_RESOURCE, name, value) is None


@pytest.mark.parametrize(
    ("name", "value", "why"),
    [
        ("broker.id", "3", "static broker config"),
        ("zookeeper.connect", "zk:2181", "static broker config"),
        ("log.segment.bytes", "2147483648", "at most 2147483647"),
        ("num.io.threads", "0", "at least 1"),
        ("log.cleaner.min.cleanable.ratio", "nan", "between 0 and 1"),
    ],
)
def test_broker_configs_kafka_refuses(name: str, value: str, why: str) -> None:
    problem = validate_config(BROKER_RESOURCE, name, value)
    assert problem is not None and why in problem


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("leader.replication.throttled.replicas", "0:1,1:2"),
        ("follower.replication.throttled.replicas", "*"),
        ("message.timestamp.before.max.ms", "3600000"),
        ("compression.zstd.level", "-5"),
        ("compression.gzip.level", "9"),
        ("message.format.version", "2.8-IV1"),
        ("min.cleanable.dirty.ratio", "0.5"),
    ],
)
def test_topic_configs_kafka_accepts(name: str, value: str) -> None:
    assert validate_config(TOPIC_RESOURCE, name, value) is None


@pytest.mark.parametrize(
    ("name", "value", "why"),
    [
        ("leader.replication.throttled.replicas", "0-1", "p:b"),
        ("compression.lz4.level", "18", "at most 17"),
        ("retention.ms", "9223372036854775808", "at most 9223372036854775807"),
        ("no.such.topic.config", "1", "unknown topic config"),
    ],
)
def test_topic_configs_kafka_refuses(name: str, value: str, why: str) -> None:
    problem = validate_config(TOPIC_RESOURCE, name, value)
    assert problem is not None and why in problem


@pytest.mark.parametrize("resource", [TOPIC_RESOURCE, BROKER_RESOURCE])
def test_deleting_is_never_refused_for_the_name(resource: int) -> None:
    for name in ("no.such.config", "broker.id", "retention.ms"):
        assert validate_config(resource, name, None) is None
