"""The inventory of a real Kafka cluster: defaults merged, paths resolved, and every
problem of a bad one reported at once."""

from __future__ import annotations

from pathlib import Path

import pytest

from migration.common.properties import ConfigError
from migration.operate.inventory import Command, load_inventory
from migration.zk.client import ConnectString

KAFKA = '[kafka]\nversion = "3.9.2"\nhome = "/opt/kafka"\n'
ZOOKEEPER = '[zookeeper]\nconnect = "zk1:2181,zk2:2181,zk3:2181/kafka"\n'
DEFAULTS = """
[defaults.broker]
restart = "ssh {host} sudo systemctl restart kafka"
push = "scp {properties} {host}:/etc/kafka/server.properties"

[defaults.controller]
format = "ssh {host} kafka-storage.sh format -g -t {cluster_id} -c /etc/kafka/ctl.properties"
start = "ssh {host} sudo systemctl start kafka-controller"
stop = "ssh {host} sudo systemctl stop kafka-controller"
"""
BROKERS = """
[[broker]]
id = 1
host = "kafka1.example.com"
properties = "kafka1/server.properties"

[[broker]]
id = 2
host = "kafka2.example.com"
properties = "kafka2/server.properties"
restart = "ssh {host} sudo systemctl restart kafka2"
"""
CONTROLLERS = """
[[controller]]
id = 3000
host = "ctl1.example.com"
port = 9093
properties = "ctl1/controller.properties"
metadata_log_dir = "/var/lib/kafka/metadata"

[[controller]]
id = 3001
host = "ctl2.example.com"
port = 9093
properties = "ctl2/controller.properties"
metadata_log_dir = "meta"
"""
VALID = KAFKA + ZOOKEEPER + DEFAULTS + BROKERS + CONTROLLERS


def _write(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "inventory.toml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def _problems(tmp_path: Path, text: str | bytes) -> list[str]:
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_inventory(path)
    assert info.value.source == str(path)
    return info.value.problems


def _one(problems: list[str], *parts: str) -> str:
    """The one problem holding every part."""
    found = [p for p in problems if all(part in p for part in parts)]
    assert len(found) == 1, (parts, problems)
    return found[0]


def test_a_valid_inventory_merges_defaults_and_resolves_paths(tmp_path: Path) -> None:
    inv = load_inventory(_write(tmp_path, VALID))
    assert inv.path == tmp_path / "inventory.toml"
    assert (inv.version, inv.ibp, inv.kafka_home) == ("3.9.2", "3.9", "/opt/kafka")
    assert inv.zookeeper_connect == ConnectString("zk1:2181,zk2:2181,zk3:2181", "/kafka")
    assert not hasattr(inv, "listener") and not hasattr(inv, "security_protocol")
    b1, b2 = inv.brokers
    assert (b1.id, b1.host, b1.properties) == (
        1,
        "kafka1.example.com",
        tmp_path / "kafka1/server.properties",
    )
    assert b1.restart.template == "ssh {host} sudo systemctl restart kafka"
    assert b2.restart.template == "ssh {host} sudo systemctl restart kafka2"  # its own wins
    assert b1.push is not None and b2.push is not None
    assert b2.push.argv(inv.values(b2)) == [
        "scp",
        str(tmp_path / "kafka2/server.properties"),
        "kafka2.example.com:/etc/kafka/server.properties",
    ]
    c1, c2 = inv.controllers
    assert (c1.id, c1.port, c1.properties) == (3000, 9093, tmp_path / "ctl1/controller.properties")
    assert c1.metadata_log_dir == Path("/var/lib/kafka/metadata")
    assert c2.metadata_log_dir == tmp_path / "meta"
    assert c1.push is None
    assert c1.format.argv(inv.values(c1, cluster_id="MkU3OEVBNTcwNTJENDM2Qk"))[5:7] == [
        "-t",
        "MkU3OEVBNTcwNTJENDM2Qk",
    ]
    assert c2.stop.words == ("ssh", "{host}", "sudo", "systemctl", "stop", "kafka-controller")
    assert inv.voters == "3000@ctl1.example.com:9093,3001@ctl2.example.com:9093"
    assert inv.zookeeper_client_config == b1.properties  # the first broker's by default


def test_optional_settings(tmp_path: Path) -> None:
    text = (
        (
            '[kafka]\nversion = "3.9.1"\n'
            '[zookeeper]\nconnect = "zk"\nclient_config = "zk/client.properties"\n' + DEFAULTS
        )
        + BROKERS
        + CONTROLLERS
    )
    inv = load_inventory(_write(tmp_path, text))
    assert inv.kafka_home == "/opt/kafka"  # the default
    assert inv.zookeeper_connect == ConnectString("zk:2181", "")
    assert inv.zookeeper_client_config == tmp_path / "zk/client.properties"


@pytest.mark.parametrize(
    "quorum",
    [
        '[quorum]\nlistener = "KRAFT_CTL"\nsecurity_protocol = "SASL_SSL"\n',
        '[quorum]\nlistener = "CONTROLLER"\n',
        "[quorum]\n",
    ],
)
def test_a_quorum_table_is_an_unknown_key(tmp_path: Path, quorum: str) -> None:
    """The controller listener is always CONTROLLER, on the protocol the brokers'
    migration settings give it: a ``[quorum]`` table (gone) would silently change
    nothing, so it is refused like any other unknown key."""
    problems = _problems(tmp_path, VALID.replace("[[broker]]", quorum + "[[broker]]", 1))
    assert problems == [
        "the inventory.'quorum' is not an inventory key (known: broker, controller, "
        "defaults, kafka, zookeeper)"
    ]


def test_an_absolute_properties_path_is_kept(tmp_path: Path) -> None:
    text = VALID.replace('"kafka1/server.properties"', '"/etc/kafka/server.properties"')
    inv = load_inventory(_write(tmp_path, text))
    assert inv.brokers[0].properties == Path("/etc/kafka/server.properties")
    assert inv.zookeeper_client_config == Path("/etc/kafka/server.properties")


def test_a_placeholder_value_stays_one_word() -> None:
    words = ("ssh", "{host}", "cat", "{properties}", "x{id}y")
    command = Command("ssh {host} cat '{properties}' x{id}y", words)
    values = {"host": "h; rm -rf /", "properties": "/a b/$(reboot) `x` | y > z", "id": "1 2"}
    assert command.argv(values) == [
        "ssh",
        "h; rm -rf /",
        "cat",
        "/a b/$(reboot) `x` | y > z",
        "x1 2y",
    ]
    assert Command("", ("{host}",)).argv({"host": "{id}"}) == ["{id}"]  # never re-expanded


def test_a_path_with_blanks_and_metacharacters_stays_one_word(tmp_path: Path) -> None:
    odd = "my files/k1 'x' \\\"$(reboot)\\\" ; `id` | * > y.properties"
    text = VALID.replace('"kafka1/server.properties"', f'"{odd}"')
    inv = load_inventory(_write(tmp_path, text))
    b1 = inv.brokers[0]
    assert b1.properties == tmp_path / "my files/k1 'x' \"$(reboot)\" ; `id` | * > y.properties"
    assert b1.push is not None
    assert b1.push.argv(inv.values(b1)) == [
        "scp",
        str(b1.properties),
        "kafka1.example.com:/etc/kafka/server.properties",
    ]


def test_a_command_is_split_as_a_shell_would(tmp_path: Path) -> None:
    text = VALID.replace(
        'restart = "ssh {host} sudo systemctl restart kafka2"',
        'restart = "ssh {host} \'sudo systemctl restart kafka\' \\"{id}\\""',
    )
    inv = load_inventory(_write(tmp_path, text))
    b2 = inv.brokers[1]
    assert b2.restart.argv(inv.values(b2)) == [
        "ssh",
        "kafka2.example.com",
        "sudo systemctl restart kafka",
        "2",
    ]


def test_every_problem_at_once(tmp_path: Path) -> None:
    text = """
typo = 1
[kafka]
version = "3.8.1"
colour = "blue"
[zookeeper]
connect = "zk1:99999"
[defaults.broker]
id = 7
colour = "red"
[defaults.controller]
format = "kafka-storage.sh format -t {cluster_id}"
start = "start {host}"
stop = "stop {host}"
[[broker]]
id = true
host = "kafka1"
properties = "a.properties"
restart = "ssh {hots} restart"
prot = 1
[[broker]]
id = -1
host = "kafka\\u001b[31m2"
properties = "b.properties"
restart = "ssh {host} 'unbalanced"
[[broker]]
id = 5
host = "kafka5"
properties = "b.properties"
restart = "r {cluster_id}"
[[broker]]
id = 5
host = "kafka6"
properties = "c.properties"
restart = "r"
[[broker]]
host = "kafka7"
[[controller]]
id = 5
host = "ctl1"
port = 0
properties = "c1.properties"
metadata_log_dir = "/m"
[[controller]]
id = 3001
host = "ctl2"
port = 65536
properties = "c2.properties"
metadata_log_dir = "/m"
speed = 2
[[controller]]
id = 3001
host = "ctl3"
port = 9093
properties = "c3.properties"
"""
    problems = _problems(tmp_path, text)
    _one(problems, "the inventory.'typo' is not an inventory key")
    _one(problems, "kafka.'colour' is not an inventory key")
    _one(problems, "kafka.version '3.8.1'", "3.9.1 or later")
    _one(problems, "zookeeper.connect", "'zk1:99999'")
    _one(problems, "defaults.broker.'id' is not an inventory key")
    _one(problems, "defaults.broker.'colour' is not an inventory key")
    _one(problems, "broker[0].'prot' is not an inventory key")
    _one(problems, "broker[0].id=True is not an integer in [0, 2147483647]")
    _one(problems, "broker[0].restart: unknown placeholder {hots}")
    _one(problems, "broker[1].id=-1 is not an integer")
    _one(problems, "broker[1].host holds control characters", "\\x1b[31m")
    _one(problems, "broker[1].restart", "No closing quotation")
    _one(problems, "broker[2].restart: unknown placeholder {cluster_id}")
    _one(problems, "broker id 5 is given twice")
    _one(problems, "broker[4].properties is required")
    _one(problems, "broker[4].restart is required")
    _one(problems, "controller[0].port=0 is not an integer in [1, 65535]")
    _one(problems, "controller[1].port=65536 is not an integer in [1, 65535]")
    _one(problems, "controller[1].'speed' is not an inventory key")
    _one(problems, "controller id 3001 is given twice")
    _one(problems, "controller[2].metadata_log_dir is required")
    _one(problems, "b.properties is the properties file of two nodes")
    _one(problems, "controller ids [5] are broker ids too")
    assert not any("\x1b" in p for p in problems)  # quoted, never raw


@pytest.mark.parametrize(
    ("where", "old", "new", "expected"),
    [
        ("version", '"3.9.2"', '"3.9"', "kafka.version '3.9'"),
        ("version", '"3.9.2"', '"4.0.0"', "kafka.version '4.0.0'"),
        ("version", '"3.9.2"', "3.9", "kafka.version is not a non-empty string"),
        ("connect", '"zk1:2181,zk2:2181,zk3:2181/kafka"', '"zk1:2181,,zk2"', "'zk1:2181,,zk2'"),
        ("connect", '"zk1:2181,zk2:2181,zk3:2181/kafka"', '"zk1:0"', "'zk1:0'"),
        ("connect", '"zk1:2181,zk2:2181,zk3:2181/kafka"', '"  "', "zookeeper.connect is not"),
        ("port", "port = 9093\nproperties = \"ctl1", 'port = 9093.0\nproperties = "ctl1',
         "controller[0].port=9093.0 is not an integer"),
        ("port", "port = 9093\nproperties = \"ctl1", 'port = "9093"\nproperties = "ctl1',
         "controller[0].port='9093' is not an integer"),
        ("host", '"kafka1.example.com"', '"kafka 1"', "broker[0].host 'kafka 1' is not a host"),
        ("host", '"kafka1.example.com"', '"kafka1\\nrm"', "broker[0].host holds control"),
        ("host", '"kafka1.example.com"', '"k\\u0000"', "broker[0].host holds control"),
        ("quorum", "[[broker]]", '[quorum]\nsecurity_protocol = "TLS"\n[[broker]]',
         "the inventory.'quorum' is not an inventory key"),
        ("format", "-t {cluster_id}", "-t {cluster_id} {bogus}",
         "controller[0].format: unknown placeholder {bogus}"),
        ("format", "-t {cluster_id}", "-t {cluster_id",
         "controller[0].format: expected '}' before end of string"),
        ("table", ZOOKEEPER, "", "zookeeper.connect is required"),
    ],
)  # fmt: skip
def test_a_bad_value_is_named(
    tmp_path: Path, where: str, old: str, new: str, expected: str
) -> None:
    assert old in VALID, where
    _one(_problems(tmp_path, VALID.replace(old, new, 1)), expected)


def test_a_table_that_is_not_one(tmp_path: Path) -> None:
    text = "zookeeper = 3\n" + VALID.replace(ZOOKEEPER, "").replace(
        "id = 2\n", "id = 2\n[[broker.x]]\n"
    )
    problems = _problems(tmp_path, text)
    _one(problems, "zookeeper is not a table")
    _one(problems, "zookeeper.connect is required")
    _one(problems, "broker[1].'x' is not an inventory key")


def test_a_command_of_an_empty_word(tmp_path: Path) -> None:
    text = VALID.replace('"ssh {host} sudo systemctl stop kafka-controller"', "\"''\"")
    _one(_problems(tmp_path, text), "controller[0].stop")


def test_a_controller_id_that_is_a_broker_id(tmp_path: Path) -> None:
    text = VALID.replace("id = 3000", "id = 2").replace("id = 3001", "id = 1")
    assert _problems(tmp_path, text) == [
        "controller ids [1, 2] are broker ids too: in a migration every node id is unique "
        "across brokers and controllers"
    ]


def test_two_nodes_sharing_one_file(tmp_path: Path) -> None:
    text = VALID.replace('"ctl2/controller.properties"', f'"{tmp_path}/kafka1/server.properties"')
    (problem,) = _problems(tmp_path, text)
    assert problem == (
        f"{tmp_path}/kafka1/server.properties is the properties file of two nodes: each has its own"
    )


def test_two_nodes_sharing_one_file_spelled_differently(tmp_path: Path) -> None:
    text = VALID.replace('"ctl2/controller.properties"', '"kafka1/../kafka1/server.properties"')
    _one(_problems(tmp_path, text), "the properties file of two nodes")


def test_no_broker_and_no_controller(tmp_path: Path) -> None:
    problems = _problems(tmp_path, KAFKA + ZOOKEEPER + DEFAULTS)
    assert problems == [
        "no [[broker]]: the inventory names every broker",
        "no [[controller]]: the inventory names every controller",
    ]
    _one(
        _problems(tmp_path, KAFKA + ZOOKEEPER + "[broker]\nid = 1\n" + CONTROLLERS), "no [[broker]]"
    )


def test_missing_tables(tmp_path: Path) -> None:
    problems = _problems(tmp_path, DEFAULTS + BROKERS + CONTROLLERS)
    assert problems == ["kafka.version is required", "zookeeper.connect is required"]


def test_cluster_id_only_in_a_controllers_format(tmp_path: Path) -> None:
    text = VALID.replace("systemctl start kafka-controller", "start {cluster_id}")
    assert _problems(tmp_path, text) == [
        f"controller[{i}].start: unknown placeholder {{cluster_id}} (known: {{host}}, {{id}}, "
        "{kafka_home}, {properties})"
        for i in (0, 1)
    ]
    text = VALID.replace('push = "scp {properties}', 'push = "scp {cluster_id} {properties}')
    assert len(_problems(tmp_path, text)) == 2  # each broker, through the defaults


@pytest.mark.parametrize("template", ["ssh {host!x} restart", "ssh {host:{hots}} restart"])
def test_a_placeholder_argv_cannot_fill_is_a_problem(tmp_path: Path, template: str) -> None:
    text = VALID.replace("ssh {host} sudo systemctl restart kafka2", template)
    _one(_problems(tmp_path, text), "broker[1].restart")


def test_a_bracketed_ipv6_host(tmp_path: Path) -> None:
    text = VALID.replace('"ctl1.example.com"', '"[2001:db8::1]"')
    assert load_inventory(_write(tmp_path, text)).controllers[0].host == "[2001:db8::1]"


def test_not_toml_and_not_utf8(tmp_path: Path) -> None:
    (problem,) = _problems(tmp_path, "[kafka\nversion = 3")
    assert problem.startswith("not TOML: ")
    (problem,) = _problems(tmp_path, VALID.encode() + b"\n# caf\xe9\n")
    assert problem.startswith("not TOML: ") and "utf-8" in problem


def test_an_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_inventory(tmp_path / "missing.toml")
    assert info.value.problems == ["cannot read: No such file or directory"]
