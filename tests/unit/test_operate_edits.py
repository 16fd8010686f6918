"""Each properties file's change at each step of Kafka 3.9's migration: the right keys,
every other line kept, nothing left to do the second time, secrets never shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from migration.broker.modes import CONTROLLER_LISTENER, Mode, rewrite
from migration.common.properties import parse_properties, physical_lines, property_entries
from migration.kafka.authorizer import ACL_AUTHORIZER, STANDARD_AUTHORIZER
from migration.operate.edits import (
    MIGRATION_FLAG,
    Changes,
    apply,
    broker_kraft_changes,
    broker_migration_changes,
    controller_changes,
    controller_finalize_changes,
    file_problems,
    shown_diff,
    values_of,
)
from migration.operate.inventory import Broker, Command, Controller, Inventory
from migration.zk.client import ConnectString

VOTERS = "3000@ctl1.example.com:9093,3001@ctl2.example.com:9093"
CONNECT = "zk1:2181,zk2:2181,zk3:2181/kafka"
NO_COMMAND = Command("", ())


def _inventory() -> Inventory:
    brokers = tuple(
        Broker(i, f"kafka{i}.example.com", Path(f"/inv/kafka{i}/server.properties"),
               NO_COMMAND, None)
        for i in (1, 2)
    )  # fmt: skip
    controllers = tuple(
        Controller(i, f"ctl{i - 2999}.example.com", 9093, Path(f"/inv/ctl{i}.properties"),
                   Path(f"/var/lib/kafka/meta{i}"), NO_COMMAND, NO_COMMAND, NO_COMMAND, None)
        for i in (3000, 3001)
    )  # fmt: skip
    return Inventory(
        path=Path("/inv/inventory.toml"),
        version="3.9.2",
        kafka_home="/opt/kafka",
        zookeeper_connect=ConnectString.parse(CONNECT),
        zookeeper_client_config=brokers[0].properties,
        brokers=brokers,
        controllers=controllers,
    )


INV = _inventory()

BROKER = (
    "# Licensed to the Apache Software Foundation (ASF) under one or more\n"
    "# contributor license agreements.\n"
    "\n"
    "############################# Server Basics #############################\n"
    "\n"
    "# The id of the broker. This must be set to a unique integer for each broker.\n"
    "broker.id=1\n"
    "\n"
    "############################# Socket Server Settings #############################\n"
    "listeners=PLAINTEXT://kafka1.example.com:9092,INTERNAL://kafka1.example.com:9094\n"
    "advertised.listeners=PLAINTEXT://kafka1.example.com:9092,INTERNAL://kafka1.example.com:9094\n"
    "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,\\\n"
    "    INTERNAL:SASL_SSL\n"
    "inter.broker.listener.name = INTERNAL\n"
    "sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512\n"
    "listener.name.internal.scram-sha-512.sasl.jaas.config="
    "org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
    '    username="kafka" \\\n'
    '    password="jaas-secret";\n'
    "num.network.threads=3\n"
    "\n"
    "############################# Log Basics #############################\n"
    "log.dirs=/var/lib/kafka/data\n"
    "num.partitions=1\n"
    "\n"
    "############################# Zookeeper #############################\n"
    "# Zookeeper connection string (see zookeeper docs for details).\n"
    "zookeeper.connect=zk1:2181,zk2:2181,zk3:2181/kafka\n"
    "zookeeper.connection.timeout.ms=18000\n"
    "zookeeper.ssl.client.enable=true\n"
    "zookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty\n"
    "zookeeper.ssl.keystore.location=/etc/kafka/zk.keystore.jks\n"
    "zookeeper.ssl.keystore.password=zk-secret\n"
    "zookeeper.set.acl=true\n"
    "\n"
    "authorizer.class.name=kafka.security.authorizer.AclAuthorizer\n"
    "super.users=User:admin;User:kafka\n"
    "inter.broker.protocol.version=3.8\n"
    "group.initial.rebalance.delay.ms=0\n"
)  # fmt: skip

PLAIN_BROKER = (  # Kafka's own config/server.properties, trimmed: no protocol map
    "broker.id=2\n"
    "#listeners=PLAINTEXT://:9092\n"
    "num.network.threads=3\n"
    "log.dirs=/tmp/kafka-logs\n"
    "zookeeper.connect=zk1:2181,zk2:2181,zk3:2181/kafka\n"
    "zookeeper.connection.timeout.ms=18000\n"
    "group.initial.rebalance.delay.ms=0"  # no line end at the end
)

ZK_CLIENT = {
    "zookeeper.connection.timeout.ms": "18000",
    "zookeeper.ssl.client.enable": "true",
    "zookeeper.clientCnxnSocket": "org.apache.zookeeper.ClientCnxnSocketNetty",
    "zookeeper.ssl.keystore.location": "/etc/kafka/zk.keystore.jks",
    "zookeeper.ssl.keystore.password": "zk-secret",
    "zookeeper.set.acl": "true",
}


def _kept(before: str, after: str, changes: Changes) -> None:
    """Every physical line of ``before`` outside the changed keys' entries is in ``after``,
    in order and byte for byte; ``after`` holds nothing else but the changed keys."""

    def others(text: str) -> list[str]:
        touched = {
            n
            for e in property_entries(text)
            if e.key in changes
            for n in range(e.first, e.last + 1)
        }
        return [c + end for n, (c, end) in enumerate(physical_lines(text), 1) if n not in touched]

    kept, now = others(before), others(after)
    if not before.endswith("\n") and kept and any(v is not None for v in changes.values()):
        kept[-1] += "\n"  # a key appended after a last line without its end
    assert now == kept
    expected = parse_properties(before)
    for key, value in changes.items():
        if value is None:
            expected.pop(key, None)
        else:
            expected[key] = value
    assert parse_properties(after) == expected


def test_broker_migration_changes() -> None:
    changes = broker_migration_changes(INV, BROKER)
    assert changes == {
        MIGRATION_FLAG: "true",
        "controller.quorum.voters": VOTERS,
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": (
            "PLAINTEXT:PLAINTEXT,INTERNAL:SASL_SSL,CONTROLLER:PLAINTEXT"
        ),
        "inter.broker.protocol.version": "3.9",
    }
    after = apply(BROKER, changes)
    _kept(BROKER, after, changes)
    assert after == BROKER.replace(
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,\\\n    INTERNAL:SASL_SSL\n",
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,INTERNAL:SASL_SSL,CONTROLLER:PLAINTEXT\n",
    ).replace("inter.broker.protocol.version=3.8\n", "inter.broker.protocol.version=3.9\n") + (
        f"controller.quorum.voters={VOTERS}\n"
        "controller.listener.names=CONTROLLER\n"
        f"{MIGRATION_FLAG}=true\n"
    )  # fmt: skip
    assert broker_migration_changes(INV, after) == {}


KAFKA_DEFAULT_MAP = "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"


def test_broker_migration_changes_with_kafkas_default_protocol_map() -> None:
    changes = broker_migration_changes(INV, PLAIN_BROKER)
    assert changes == {
        MIGRATION_FLAG: "true",
        "controller.quorum.voters": VOTERS,
        "controller.listener.names": CONTROLLER_LISTENER,
        "listener.security.protocol.map": f"{KAFKA_DEFAULT_MAP},CONTROLLER:PLAINTEXT",
        "inter.broker.protocol.version": "3.9",
    }
    after = apply(PLAIN_BROKER, changes)
    _kept(PLAIN_BROKER, after, changes)
    assert after.startswith(PLAIN_BROKER + "\n")
    assert broker_migration_changes(INV, after) == {}


def test_an_ssl_inter_broker_listener_puts_the_controller_listener_on_ssl() -> None:
    text = PLAIN_BROKER.replace("broker.id=2\n", "broker.id=2\ninter.broker.listener.name=SSL\n")
    changes = broker_migration_changes(INV, text)
    assert changes["listener.security.protocol.map"] == f"{KAFKA_DEFAULT_MAP},CONTROLLER:SSL"
    after = apply(text, changes)
    _kept(text, after, changes)
    assert broker_migration_changes(INV, after) == {}
    controller = controller_changes(INV, INV.controllers[0], "", after, after)
    assert controller["listener.security.protocol.map"] == "CONTROLLER:SSL,SSL:SSL"


@pytest.mark.parametrize("protocol", ["SASL_SSL", "SASL_PLAINTEXT", "PLAINTEXT"])
def test_an_inter_broker_listener_not_on_ssl_puts_the_controller_on_plaintext(
    protocol: str,
) -> None:
    text = (
        f"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,INTERNAL:{protocol}\n"
        "inter.broker.listener.name=INTERNAL\n"
    )
    changes = broker_migration_changes(INV, text)
    assert changes["listener.security.protocol.map"] == (
        f"PLAINTEXT:PLAINTEXT,INTERNAL:{protocol},CONTROLLER:PLAINTEXT"
    )


def test_the_changes_are_modes_rewrite() -> None:
    """The broker rules are migration.broker.modes' (what broker-mode and the local
    clusters write), plus the IBP, and without Kafka's zookeeper.* client settings."""
    rolled = apply(BROKER, broker_migration_changes(INV, BROKER))
    migrating = rewrite(values_of(BROKER), Mode.MIGRATING, voters=VOTERS)
    assert values_of(rolled) == migrating | {"inter.broker.protocol.version": "3.9"}
    after = apply(rolled, broker_kraft_changes(INV, rolled, 1))
    kraft = rewrite(values_of(rolled), Mode.KRAFT, voters=VOTERS)
    assert values_of(after) == {k: v for k, v in kraft.items() if not k.startswith("zookeeper.")}


def test_a_controller_listener_in_the_map_already_is_kept() -> None:
    text = "listener.security.protocol.map=PLAINTEXT:PLAINTEXT, CONTROLLER:PLAINTEXT\n"
    assert "listener.security.protocol.map" not in broker_migration_changes(INV, text)


def test_a_controller_listener_on_another_protocol_is_kept() -> None:
    """Modes' rule: a protocol map that names CONTROLLER already keeps its protocol, and
    the controllers are given the same one (their listener must match the brokers')."""
    text = "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:SSL\n"
    changes = broker_migration_changes(INV, text)
    assert "listener.security.protocol.map" not in changes
    controller = controller_changes(INV, INV.controllers[0], "", text, text)
    assert controller["listener.security.protocol.map"] == "CONTROLLER:SSL,PLAINTEXT:PLAINTEXT"


def test_broker_migration_changes_keep_every_other_key() -> None:
    """Nothing the operator set is removed by the first roll (``_towards`` removes only
    what the rule's wanted map lacks, and the migrating rewrite keeps every key)."""
    changes = broker_migration_changes(INV, BROKER)
    assert all(value is not None for value in changes.values())
    assert set(values_of(BROKER)) <= set(values_of(apply(BROKER, changes)))


def test_a_broker_in_kraft_mode_has_no_migration_changes() -> None:
    rolled = apply(BROKER, broker_migration_changes(INV, BROKER))
    kraft = apply(rolled, broker_kraft_changes(INV, rolled, 1))
    assert broker_migration_changes(INV, kraft) == {}


def test_broker_kraft_changes() -> None:
    rolled = apply(BROKER, broker_migration_changes(INV, BROKER))
    changes = broker_kraft_changes(INV, rolled, 1)
    assert changes == {
        "process.roles": "broker",
        "node.id": "1",
        "broker.id": None,
        "inter.broker.protocol.version": None,
        MIGRATION_FLAG: None,
        **{key: None for key in ZK_CLIENT},
        "zookeeper.connect": None,
        "authorizer.class.name": STANDARD_AUTHORIZER,
    }
    after = apply(rolled, changes)
    _kept(rolled, after, changes)
    assert not any(key.startswith("zookeeper.") for key in values_of(after))
    assert "# Zookeeper connection string (see zookeeper docs for details).\n" in after
    assert values_of(after)["super.users"] == "User:admin;User:kafka"
    assert broker_kraft_changes(INV, after, 1) == {}


def test_broker_kraft_changes_remove_only_what_is_there() -> None:
    rolled = apply(PLAIN_BROKER, broker_migration_changes(INV, PLAIN_BROKER))
    changes = broker_kraft_changes(INV, rolled, 2)
    assert changes == {
        "process.roles": "broker",
        "node.id": "2",
        "broker.id": None,
        "inter.broker.protocol.version": None,
        "zookeeper.connect": None,
        "zookeeper.connection.timeout.ms": None,
        MIGRATION_FLAG: None,
    }
    after = apply(rolled, changes)
    _kept(rolled, after, changes)
    assert "authorizer.class.name" not in values_of(after)
    assert broker_kraft_changes(INV, after, 2) == {}


def test_controller_changes_for_a_new_controller() -> None:
    controller = INV.controllers[0]
    changes = controller_changes(INV, controller, "", BROKER, BROKER)
    assert changes == {
        "process.roles": "controller",
        "node.id": "3000",
        "controller.quorum.voters": VOTERS,
        "controller.listener.names": "CONTROLLER",
        "listeners": "CONTROLLER://ctl1.example.com:9093",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,INTERNAL:SASL_SSL",
        "inter.broker.listener.name": "INTERNAL",
        "log.dirs": "/var/lib/kafka/meta3000",
        MIGRATION_FLAG: "true",
        "zookeeper.connect": CONNECT,
        **ZK_CLIENT,
        "authorizer.class.name": STANDARD_AUTHORIZER,
        "super.users": "User:admin;User:kafka",
    }
    written = apply("", changes)
    assert parse_properties(written) == changes
    assert controller_changes(INV, controller, written, BROKER, BROKER) == {}


def test_controller_changes_keep_an_existing_file() -> None:
    controller = INV.controllers[1]
    now = "# provisioned by hand\nnode.id=9\n\nnum.io.threads=8\nlog.dirs=/var/lib/kafka/meta3001\n"
    client = (
        "# ZooKeeper TLS only\nzookeeper.ssl.client.enable=true\nzookeeper.connect=other:2181\n"
    )
    changes = controller_changes(INV, controller, now, PLAIN_BROKER, client)
    assert changes == {
        "process.roles": "controller",
        "node.id": "3001",
        "controller.quorum.voters": VOTERS,
        "controller.listener.names": "CONTROLLER",
        "listeners": "CONTROLLER://ctl2.example.com:9093",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "inter.broker.listener.name": "PLAINTEXT",
        MIGRATION_FLAG: "true",
        "zookeeper.connect": CONNECT,  # the inventory's, not the client file's
        "zookeeper.ssl.client.enable": "true",
    }
    after = apply(now, changes)
    _kept(now, after, changes)
    assert after.startswith("# provisioned by hand\nnode.id=3001\n\nnum.io.threads=8\n")


def test_controller_changes_name_the_inter_broker_listener_by_its_protocol() -> None:
    broker = "security.inter.broker.protocol=SSL\nzookeeper.connect=zk1\n"
    changes = controller_changes(INV, INV.controllers[0], "", broker, broker)
    assert changes["inter.broker.listener.name"] == "SSL"
    protocols = changes["listener.security.protocol.map"] or ""
    assert protocols.startswith("CONTROLLER:") and protocols.endswith(",SSL:SSL")
    assert "authorizer.class.name" not in changes


def test_an_ssl_inter_broker_protocol_puts_the_controller_listener_on_ssl() -> None:
    broker = "security.inter.broker.protocol=SSL\nzookeeper.connect=zk1\n"
    changes = broker_migration_changes(INV, broker)
    assert (changes["listener.security.protocol.map"] or "").endswith(",CONTROLLER:SSL")
    controller = controller_changes(INV, INV.controllers[0], "", broker, broker)
    assert controller["listener.security.protocol.map"] == "CONTROLLER:SSL,SSL:SSL"


def test_controller_finalize_changes() -> None:
    written = apply("", controller_changes(INV, INV.controllers[0], "", BROKER, BROKER))
    changes = controller_finalize_changes(written)
    assert changes == {MIGRATION_FLAG: "false", "zookeeper.connect": None} | {
        key: None for key in ZK_CLIENT
    }  # the flag false is Kafka's default: the same as the documented removal
    after = apply(written, changes)
    _kept(written, after, changes)
    values = values_of(after)
    assert [k for k in values if k.startswith("zookeeper.")] == [MIGRATION_FLAG]
    assert values[MIGRATION_FLAG] == "false"
    assert values["authorizer.class.name"] == STANDARD_AUTHORIZER
    assert values["process.roles"] == "controller"
    assert values["controller.quorum.voters"] == VOTERS
    assert controller_finalize_changes(after) == {}


def test_controller_finalize_changes_of_a_flag_removed_by_hand() -> None:
    text = "process.roles=controller\nnode.id=3000\nzookeeper.connect=zk1:2181\n"
    assert controller_finalize_changes(text) == {
        MIGRATION_FLAG: "false",
        "zookeeper.connect": None,
    }
    done = f"process.roles=controller\nnode.id=3000\n{MIGRATION_FLAG}=false\n"
    assert controller_finalize_changes(done) == {}


def test_file_problems() -> None:
    texts = {
        1: BROKER,
        2: PLAIN_BROKER.replace("broker.id=2", "broker.id=7").replace(CONNECT, "zk9:2181/kafka"),
    }
    assert file_problems(INV, texts) == [
        "broker 2 (/inv/kafka2/server.properties): broker.id='7', not 2",
        "broker 2 (/inv/kafka2/server.properties): zookeeper.connect='zk9:2181/kafka', not the "
        f"inventory's {CONNECT}",
    ]
    no_zk = "broker.id=1\nlog.dirs=/data\n"
    assert file_problems(INV, {1: no_zk}) == [
        "broker 1 (/inv/kafka1/server.properties): no zookeeper.connect (not a ZooKeeper-mode "
        "broker)"
    ]
    assert file_problems(INV, {1: "zookeeper.connect=zk1:2181,zk2:2181,zk3:2181\n"}) != []


@pytest.mark.parametrize(
    "connect",
    ["zk1,zk2,zk3/kafka", "zk1:2181, zk2 ,zk3:2181/kafka/", " zk1:2181,zk2:2181,zk3:2181/kafka "],
)
def test_the_same_zookeeper_up_to_the_default_port(connect: str) -> None:
    assert file_problems(INV, {1: f"zookeeper.connect={connect}\n"}) == []


def test_a_broker_in_kraft_mode_already_is_skipped() -> None:
    kraft = "process.roles=broker\nnode.id=1\nbroker.id=5\n"
    assert file_problems(INV, {1: kraft, 2: PLAIN_BROKER}) == []
    assert file_problems(INV, {}) == []  # a file not read: nothing said


def test_shown_diff_redacts_secrets() -> None:
    rolled = apply(BROKER, broker_migration_changes(INV, BROKER))
    after = apply(rolled, broker_kraft_changes(INV, rolled, 1))
    diff = shown_diff(
        rolled, after, "kafka1/server.properties (now)", "kafka1/server.properties (after)"
    )
    assert diff.startswith(
        "--- kafka1/server.properties (now)\n+++ kafka1/server.properties (after)\n"
    )
    assert "-zookeeper.ssl.keystore.password=<redacted>\n" in diff
    assert "-broker.id=1\n" in diff and "+node.id=1\n" in diff
    assert f"+authorizer.class.name={STANDARD_AUTHORIZER}\n" in diff
    assert f"-authorizer.class.name={ACL_AUTHORIZER}\n" in diff
    assert "zk-secret" not in diff

    jaas = "listener.name.internal.scram-sha-512.sasl.jaas.config"
    old = f"a=1\n{jaas}=Login required \\\n    password=old-secret;\nb=2\n"
    new = f"a=2\n{jaas}=Login required password=new-secret;\nb=2\n"
    diff = shown_diff(old, new, "f", "f")
    assert "secret;" not in diff and "password=" not in diff
    assert f"-{jaas}=<redacted>\n" in diff  # redacted on both sides, the change shown
    assert f"+{jaas}=<redacted, changed>\n" in diff
    assert "-a=1\n" in diff and "+a=2\n" in diff


def test_shown_diff_of_a_new_file_redacts_its_secrets() -> None:
    changes = controller_changes(INV, INV.controllers[0], "", BROKER, BROKER)
    diff = shown_diff("", apply("", changes), "ctl", "ctl")
    assert "+zookeeper.ssl.keystore.password=<redacted>\n" in diff
    assert "zk-secret" not in diff


def test_shown_diff_is_empty_when_nothing_changes() -> None:
    assert shown_diff(BROKER, BROKER, "f", "f") == ""
    assert shown_diff(BROKER, apply(BROKER, {}), "f", "f") == ""


def test_shown_diff_shows_that_a_secret_changes() -> None:
    before = "zookeeper.ssl.keystore.password=old\n"
    after = apply(before, {"zookeeper.ssl.keystore.password": "new"})
    assert after != before
    assert shown_diff(before, after, "f", "f") != ""


def test_a_broker_id_spelled_with_a_leading_zero() -> None:
    assert file_problems(INV, {1: f"broker.id=01\nzookeeper.connect={CONNECT}\n"}) == []
