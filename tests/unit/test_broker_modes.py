"""The configs of each migration step and the rewrites between them (``broker-mode``,
``controller-mode``): what each step adds and removes, and that each result is a
config the process accepts. The commands on real files: tests/integration/test_mode_commands.py."""

from __future__ import annotations

import pytest

from migration.broker.config import parse_broker_config
from migration.broker.modes import Mode, mode_of, rewrite, rewrite_controller
from migration.controller.config import parse_config

VOTERS = "3000@c0:9093,3001@c1:9093"
ZK_MODE = {
    "broker.id": "2",
    "zookeeper.connect": "zk:2181/kafka",
    "listeners": "PLAINTEXT://:9092,INTERNAL://:9093",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT",
    "inter.broker.listener.name": "INTERNAL",
    "log.dirs": "/data",
    "inter.broker.protocol.version": "3.9",
    "broker.rack": "r1",
}


def test_a_broker_goes_zookeeper_migrating_kraft_and_back() -> None:
    migrating = rewrite(ZK_MODE, Mode.MIGRATING, voters=VOTERS)
    assert mode_of(migrating) == Mode.MIGRATING
    assert migrating["controller.quorum.voters"] == VOTERS
    assert migrating["listener.security.protocol.map"].endswith(",CONTROLLER:PLAINTEXT")
    assert parse_broker_config(migrating, "m").migration_enabled

    kraft = rewrite(migrating, Mode.KRAFT)
    assert mode_of(kraft) == Mode.KRAFT
    assert kraft["node.id"] == "2" and "broker.id" not in kraft
    assert not {k for k in kraft if k.startswith("zookeeper.")}
    assert "inter.broker.protocol.version" not in kraft and kraft["broker.rack"] == "r1"
    assert parse_broker_config(kraft, "k").kraft

    back = rewrite(kraft, Mode.MIGRATING, zk_connect="zk:2181/kafka")
    assert back["broker.id"] == "2" and "node.id" not in back and "process.roles" not in back
    assert parse_broker_config(back, "b").migration_enabled

    plain = rewrite(back, Mode.ZOOKEEPER)
    assert mode_of(plain) == Mode.ZOOKEEPER
    assert plain["listener.security.protocol.map"] == "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT"
    assert not {"controller.quorum.voters", "controller.listener.names"} & set(plain)
    assert parse_broker_config(plain, "p") is not None


def test_what_a_step_needs_is_named() -> None:
    with pytest.raises(ValueError, match="--controller-quorum-voters"):
        rewrite(ZK_MODE, Mode.MIGRATING)
    kraft = rewrite(rewrite(ZK_MODE, Mode.MIGRATING, voters=VOTERS), Mode.KRAFT)
    with pytest.raises(ValueError, match="--zk"):
        rewrite(kraft, Mode.ZOOKEEPER)
    with pytest.raises(ValueError, match="migrating or kraft"):
        rewrite_controller({}, Mode.ZOOKEEPER)


def test_a_controller_is_finalized_by_dropping_zookeeper() -> None:
    props = {
        "process.roles": "controller", "node.id": "3000", "controller.quorum.voters": VOTERS,
        "listeners": "CONTROLLER://c0:9093", "metadata.log.dir": "/m",
    }  # fmt: skip
    migrating = rewrite_controller(props, Mode.MIGRATING, zk_connect="zk:2181/kafka")
    migrating["inter.broker.listener.name"] = "INTERNAL"
    assert parse_config(migrating, "c").zk_migration_enabled
    final = rewrite_controller(migrating, Mode.KRAFT)
    assert "zookeeper.connect" not in final
    assert final["zookeeper.metadata.migration.enable"] == "false"
    assert not parse_config(final, "c").zk_migration_enabled
