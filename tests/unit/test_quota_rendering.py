"""Quotas as Kafka writes them into ZooKeeper: long and int quotas as integers, double
quotas as Java prints a double (the dual-write differential found zk2kraft writing
``request_percentage`` as ``50`` where Kafka's dual-write writes ``50.0``)."""

from __future__ import annotations

import json

import pytest

from migration.bridge.mirror import render_config
from migration.zk.model import configs


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (50.0, "50.0"),
        (0.0, "0.0"),
        (12.5, "12.5"),
        (0.001, "0.001"),
        (9999999.0, "9999999.0"),
        (1e7, "1.0E7"),
        (12345678.0, "1.2345678E7"),
        (1.5e-4, "1.5E-4"),
        (1e300, "1.0E300"),
    ],
)
def test_java_double_text(value: float, text: str) -> None:
    assert configs.java_double_text(value) == text
    assert float(text) == value


def test_each_quota_key_rendered_by_its_type() -> None:
    assert configs.render_quota("request_percentage", 50.0) == "50.0"
    assert configs.render_quota("controller_mutation_rate", 2.5) == "2.5"
    assert configs.render_quota("producer_byte_rate", 1024.0) == "1024"
    assert configs.render_quota("connection_creation_rate", 10.0) == "10"


def test_a_quota_znode_is_written_as_kafka_writes_it() -> None:
    raw = render_config(
        "/config/clients/app-9", {"consumer_byte_rate": 2048.0, "request_percentage": 50.0}, None
    )
    assert json.loads(raw) == {
        "version": 1,
        "config": {"consumer_byte_rate": "2048", "request_percentage": "50.0"},
    }
