"""server.properties of a ZooKeeper-mode broker: Kafka's names, every problem at once.
The command and the stopping process, run as child processes:
tests/integration/test_broker_config.py."""

from __future__ import annotations

import pytest

from migration.broker.config import (
    SHUTDOWN_TIMEOUT_S,
    STOP_GRACE_S,
    BrokerConfigError,
    parse_broker_config,
)
from migration.records import versions

GOOD = {
    "broker.id": "3",
    "zookeeper.connect": "zk1:2181,zk2:2181/kafka",
    "listeners": "PLAINTEXT://:9092,INTERNAL://127.0.0.1:9093",
    "advertised.listeners": "PLAINTEXT://broker3.example:9092,INTERNAL://127.0.0.1:9093",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT",
    "inter.broker.listener.name": "INTERNAL",
    "log.dirs": "/var/lib/kafka/a,/var/lib/kafka/b",
    "inter.broker.protocol.version": "3.6",
    "broker.rack": "r1",
    "password.encoder.secret": "do-not-show",
}
MIGRATING = {
    "zookeeper.metadata.migration.enable": "true",
    "controller.quorum.voters": "3000@c1:9093",
    "controller.listener.names": "CONTROLLER",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
}


def test_a_good_config_reads_as_kafka_means_it() -> None:
    config = parse_broker_config(GOOD, "server.properties")
    assert config.broker_id == 3
    assert config.zk_connect.chroot == "/kafka" and config.zk_connect.hosts == "zk1:2181,zk2:2181"
    assert [e.listener for e in config.client_listeners()] == ["PLAINTEXT"]
    assert config.internal().port == 9093
    assert config.advertised[0].host == "broker3.example"
    assert str(config.log_dir) == "/var/lib/kafka/a"
    assert config.metadata_version_max == versions.IBP_3_6_IV2
    assert config.zk_session_timeout_ms == 18000
    assert "do-not-show" not in repr(config)


def test_every_problem_is_named_at_once() -> None:
    bad = {
        "broker.id": "-1",
        "listeners": "PLAINTEXT://:99999,SSL://:9094",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,BAD",
        "inter.broker.listener.name": "MISSING",
        "inter.broker.protocol.version": "2.0-IV1",
        "zookeeper.session.timeout.ms": "soon",
        "zookeeper.metadata.migration.enable": "yes",
        "controller.quorum.voters": "3000@",
        "controller.listener.names": "CONTROLLER",
    }
    with pytest.raises(BrokerConfigError) as caught:
        parse_broker_config(bad, "server.properties")
    text = "\n".join(caught.value.problems)
    for needle in (
        "broker.id is required",
        "zookeeper.connect is required",
        "is not NAME://host:port",
        "listener SSL (SSL) needs a key store",
        "'BAD' is not NAME:PROTOCOL",
        "inter.broker.listener.name MISSING",
        "log.dirs is required",
        "inter.broker.protocol.version='2.0-IV1'",
        "zookeeper.session.timeout.ms='soon' is not an integer",
        "zookeeper.metadata.migration.enable='yes' is not true or false",
        "controller.quorum.voters",
        "controller.listener.names: CONTROLLER",
    ):
        assert needle in text, (needle, text)


def test_migration_settings_need_their_companions() -> None:
    props = {**GOOD, "zookeeper.metadata.migration.enable": "true", "broker.id": "300"}
    props["inter.broker.protocol.version"] = "3.3"
    props["controller.quorum.voters"] = "300@c1:9093"
    with pytest.raises(BrokerConfigError) as caught:
        parse_broker_config(props, "s")
    text = "; ".join(caught.value.problems)
    assert "needs controller.listener.names" in text
    assert "3.4 or later" in text
    assert "collides with a controller id" in text


KRAFT = {
    "process.roles": "broker",
    "node.id": "3",
    "controller.quorum.voters": "3000@c0:9093,3001@c1:9093,3002@c2:9093",
    "controller.listener.names": "CONTROLLER",
    "listeners": "PLAINTEXT://:9092,INTERNAL://127.0.0.1:9093",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
    "inter.broker.listener.name": "INTERNAL",
    "log.dirs": "/var/lib/kafka/a",
}


def test_a_kraft_mode_broker_reads_node_id_and_the_quorum() -> None:
    config = parse_broker_config(KRAFT, "server.properties")
    assert config.kraft and config.broker_id == 3
    assert sorted(config.controller_voters) == [3000, 3001, 3002]
    assert config.metadata_version_max == versions.LATEST
    assert not config.migration_enabled


def test_a_kraft_mode_broker_refuses_zookeeper_settings_and_a_second_id() -> None:
    props = {
        **KRAFT,
        "zookeeper.connect": "zk:2181",
        "zookeeper.metadata.migration.enable": "true",
        "broker.id": "4",
    }
    del props["controller.listener.names"]
    with pytest.raises(BrokerConfigError) as caught:
        parse_broker_config(props, "s")
    text = "; ".join(caught.value.problems)
    assert "zookeeper.connect is a ZooKeeper-mode setting: remove it" in text
    assert "zookeeper.metadata.migration.enable is a ZooKeeper-mode setting" in text
    assert "broker.id='4' and node.id=3 differ" in text
    assert "process.roles=broker needs controller.listener.names" in text
    with pytest.raises(BrokerConfigError) as caught:
        parse_broker_config({**KRAFT, "process.roles": "controller"}, "s")
    assert "zk2kraft controller" in "; ".join(caught.value.problems)
    with pytest.raises(BrokerConfigError) as caught:
        parse_broker_config({k: v for k, v in KRAFT.items() if k != "node.id"}, "s")
    assert "node.id is required with process.roles=broker" in "; ".join(caught.value.problems)


def test_a_stop_is_bounded_by_the_controlled_shutdown_settings() -> None:
    default = parse_broker_config(GOOD, "server.properties")
    assert (default.controlled_shutdown_max_retries, default.controller_socket_timeout_ms) == (
        3,
        30_000,
    )
    assert default.stop_budget_s() == 3 * 30 + STOP_GRACE_S
    quick = parse_broker_config(
        {**GOOD, "controlled.shutdown.max.retries": "1", "controller.socket.timeout.ms": "2000"},
        "server.properties",
    )
    assert quick.stop_budget_s() == 2 + STOP_GRACE_S
    off = parse_broker_config({**GOOD, "controlled.shutdown.enable": "false"}, "server.properties")
    assert off.stop_budget_s() == STOP_GRACE_S
    migrating = parse_broker_config({**GOOD, **MIGRATING}, "server.properties")
    assert migrating.stop_budget_s() == SHUTDOWN_TIMEOUT_S + STOP_GRACE_S
