"""The inventory: one TOML file describing an Apache Kafka cluster as its operator knows
it -- where ZooKeeper is, each broker (its ``server.properties`` and how to restart it),
the KRaft controllers to add (their listener, properties file, metadata directory and how
to format, start and stop them) and the Kafka release::

    [kafka]
    version = "3.9.2"             # the cluster's release: 3.9.1 or later
    home = "/opt/kafka"           # optional: {kafka_home} in the commands

    [zookeeper]
    connect = "zk1:2181,zk2:2181,zk3:2181/kafka"   # the brokers' zookeeper.connect
    client_config = "/etc/kafka/server.properties" # optional: Kafka's zookeeper.* client
                                                   # settings (default: the first broker's)

    [defaults.broker]             # optional: any broker key but id and host
    restart = "ssh {host} sudo systemctl restart kafka"

    [[broker]]
    id = 1
    host = "kafka1.example.com"
    properties = "kafka1/server.properties"     # this host's copy of the broker's file
    push = "scp {properties} {host}:/etc/kafka/server.properties"  # optional

    [defaults.controller]         # {cluster_id}: ZooKeeper's, read by zk2kraft
    format = "ssh {host} kafka-storage.sh format -g --cluster-id={cluster_id} -c ctl.properties"
    start = "ssh {host} sudo systemctl start kafka-controller"
    stop = "ssh {host} sudo systemctl stop kafka-controller"

    [[controller]]
    id = 3000
    host = "ctl1.example.com"
    port = 9093                   # its CONTROLLER listener
    properties = "ctl1/controller.properties"
    metadata_log_dir = "/var/lib/kafka/metadata"   # its metadata.log.dir

The controllers listen on ``CONTROLLER``, on the protocol the brokers' migration settings
give it (PLAINTEXT, or SSL when the brokers talk SSL among themselves); settings beyond
these (TLS key stores, SASL) go in each controller's file before the migration writes
the rest of it.

Contracts:

- ``properties`` paths are files zk2kraft reads and edits where it runs (relative ones
  from the inventory's directory); a node whose file lives on its own host names a
  ``push`` command that copies the edited file there. A broker's file must exist; a
  controller's may not yet (zk2kraft writes it).
- Commands are templates split as a POSIX shell would (``shlex``) and run without a
  shell; each placeholder is replaced inside its own word, so a value (a host name) is
  never parsed as shell text. Placeholders: ``{id}``, ``{host}``, ``{properties}``,
  ``{kafka_home}``, and ``{cluster_id}`` in a controller's ``format``.
- :func:`load_inventory` reports every problem at once (:class:`ConfigError` naming the
  file and each key); an unknown key is a problem (a typo would silently change nothing).
- The inventory holds no secrets: those stay in the nodes' own properties files.
"""

from __future__ import annotations

import re
import shlex
import string
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from migration.common.files import UnreadableFileError, read_regular
from migration.common.limits import INT32_MAX
from migration.common.properties import ConfigError
from migration.common.text import shown
from migration.zk.client import ConnectString

INVENTORY_MAX_BYTES = 1024 * 1024
SUPPORTED_RELEASE = re.compile(r"3\.9\.[1-9]\d*")
"""The releases whose migration zk2kraft drives: 3.9.1 and later, ZooKeeper mode's last
line (3.9.0 lacks migration fixes Kafka's documentation requires)."""

PLACEHOLDERS = frozenset({"id", "host", "properties", "kafka_home"})
FORMAT_PLACEHOLDERS = PLACEHOLDERS | {"cluster_id"}
_NAME = re.compile(r"[A-Za-z0-9._-]+")  # a host name, or a listener name (letters, _)
_IPV6 = re.compile(r"\[[0-9A-Fa-f:.]+\]")  # an IPv6 address, as Kafka's listeners spell it


@dataclass(frozen=True)
class Command:
    """A command template (see the module doc): ``template`` as written, ``words`` as
    split."""

    template: str
    words: tuple[str, ...]

    def argv(self, values: Mapping[str, str]) -> list[str]:
        """The command to run: each placeholder in each word replaced by its value."""
        return [word.format_map(dict(values)) for word in self.words]


@dataclass(frozen=True)
class Broker:
    id: int
    host: str
    properties: Path
    restart: Command
    push: Command | None


@dataclass(frozen=True)
class Controller:
    id: int
    host: str
    port: int
    properties: Path
    metadata_log_dir: Path
    format: Command
    start: Command
    stop: Command
    push: Command | None


@dataclass(frozen=True)
class Inventory:
    """A validated inventory (see the module doc); ``path`` is the file it was read from."""

    path: Path
    version: str
    kafka_home: str
    zookeeper_connect: ConnectString
    zookeeper_client_config: Path
    brokers: tuple[Broker, ...]
    controllers: tuple[Controller, ...]

    @property
    def voters(self) -> str:
        """``controller.quorum.voters`` for these controllers."""
        return ",".join(f"{c.id}@{c.host}:{c.port}" for c in self.controllers)

    @property
    def ibp(self) -> str:
        """``inter.broker.protocol.version`` the migration needs: the release's major.minor."""
        return ".".join(self.version.split(".")[:2])

    def values(self, node: Broker | Controller, **more: str) -> dict[str, str]:
        """The placeholders' values for ``node``'s commands."""
        return {
            "id": str(node.id),
            "host": node.host,
            "properties": str(node.properties),
            "kafka_home": self.kafka_home,
            **more,
        }


_TOP = {"kafka", "zookeeper", "defaults", "broker", "controller"}
_BROKER_KEYS = {"id", "host", "properties", "restart", "push"}
_CONTROLLER_KEYS = {
    "id", "host", "port", "properties", "metadata_log_dir", "format", "start", "stop", "push",
}  # fmt: skip


class _Reader:
    """Typed reads of the TOML tables that collect every problem (the module doc)."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.problems: list[str] = []

    def table(self, where: str, value: Any, known: set[str]) -> dict[str, Any]:
        if not isinstance(value, dict):
            self.problems.append(f"{where} is not a table")
            return {}
        for key in sorted(set(value) - known):
            self.problems.append(
                f"{where}.{shown(key)} is not an inventory key (known: {', '.join(sorted(known))})"
            )
        return value

    def text(self, where: str, table: Mapping[str, Any], key: str, required: bool = True) -> str:
        value = table.get(key)
        if value is None:
            if required:
                self.problems.append(f"{where}.{key} is required")
            return ""
        if not isinstance(value, str) or not value.strip():
            self.problems.append(f"{where}.{key} is not a non-empty string")
            return ""
        if any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
            self.problems.append(f"{where}.{key} holds control characters: {shown(value)}")
            return ""
        return value

    def integer(self, where: str, table: Mapping[str, Any], key: str, low: int, high: int) -> int:
        value = table.get(key)
        if value is None:
            self.problems.append(f"{where}.{key} is required")
            return low
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            self.problems.append(
                f"{where}.{key}={shown(value)} is not an integer in [{low}, {high}]"
            )
            return low
        return value

    def host(self, where: str, table: Mapping[str, Any]) -> str:
        host = self.text(where, table, "host")
        if host and not (_NAME.fullmatch(host) or _IPV6.fullmatch(host)):
            self.problems.append(f"{where}.host {shown(host)} is not a host name or address")
        return host

    def path(self, where: str, table: Mapping[str, Any], key: str) -> Path:
        text = self.text(where, table, key)
        return self.base / text if text else Path()

    def command(
        self,
        where: str,
        table: Mapping[str, Any],
        key: str,
        known: frozenset[str] = PLACEHOLDERS,
        required: bool = True,
    ) -> Command | None:
        template = self.text(where, table, key, required)
        if not template:
            return None
        try:
            words = tuple(shlex.split(template))
        except ValueError as exc:
            self.problems.append(f"{where}.{key}: {exc} in {shown(template)}")
            return None
        for word in words:
            try:
                fields = [(f, spec, conv) for _, f, spec, conv in string.Formatter().parse(word)]
            except ValueError as exc:
                self.problems.append(f"{where}.{key}: {exc} in {shown(word)}")
                return None
            names = {f for f, _, _ in fields if f is not None}
            if any(spec or conv for f, spec, conv in fields if f is not None):
                self.problems.append(
                    f"{where}.{key}: a placeholder takes no conversion or format "
                    f"(write {{host}}, not {{host!r}} or {{host:x}}) in {shown(word)}"
                )
                return None
            unknown = sorted(n for n in names if n not in known)
            if unknown:
                self.problems.append(
                    f"{where}.{key}: unknown placeholder {{{shown(unknown[0], bare=True)}}} "
                    f"(known: {', '.join('{' + k + '}' for k in sorted(known))})"
                )
                return None
        if not words or not all(words):
            self.problems.append(f"{where}.{key} has an empty word: {shown(template)}")
            return None
        return Command(template, words)


def load_inventory(path: Path) -> Inventory:
    """The inventory at ``path``, validated (every problem at once: :class:`ConfigError`
    naming the file)."""
    source = str(path)
    try:
        data = read_regular(path, INVENTORY_MAX_BYTES)
    except (OSError, UnreadableFileError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError(source, [f"cannot read: {reason}"]) from None
    try:
        document = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(source, [f"not TOML: {exc}"]) from None
    r = _Reader(path.parent)
    r.table("the inventory", document, _TOP)

    kafka = r.table("kafka", document.get("kafka", {}), {"version", "home"})
    version = r.text("kafka", kafka, "version")
    if version and not SUPPORTED_RELEASE.fullmatch(version):
        r.problems.append(
            f"kafka.version {shown(version)}: zk2kraft drives the migration of Kafka 3.9.1 "
            "or later (ZooKeeper mode's last line, with every migration fix); upgrade the "
            "cluster first"
        )
    home = r.text("kafka", kafka, "home", required=False) or "/opt/kafka"

    zookeeper = r.table("zookeeper", document.get("zookeeper", {}), {"connect", "client_config"})
    connect = ConnectString("", "")
    if text := r.text("zookeeper", zookeeper, "connect"):
        try:
            connect = ConnectString.parse(text)
        except ValueError as exc:
            r.problems.append(str(exc))

    defaults = r.table("defaults", document.get("defaults", {}), {"broker", "controller"})
    broker_defaults = r.table(
        "defaults.broker", defaults.get("broker", {}), _BROKER_KEYS - {"id", "host"}
    )
    controller_defaults = r.table(
        "defaults.controller", defaults.get("controller", {}), _CONTROLLER_KEYS - {"id", "host"}
    )
    brokers = _brokers(r, document.get("broker", []), broker_defaults)
    controllers = _controllers(r, document.get("controller", []), controller_defaults)

    files = [b.properties for b in brokers] + [c.properties for c in controllers]
    files = [f.resolve() for f in files if f != Path()]  # however each is spelled
    for twice in sorted({str(f) for f in files if files.count(f) > 1}):
        r.problems.append(f"{twice} is the properties file of two nodes: each has its own")
    taken = {b.id for b in brokers} & {c.id for c in controllers}
    if taken:
        r.problems.append(
            f"controller ids {sorted(taken)} are broker ids too: in a migration every node id "
            "is unique across brokers and controllers"
        )
    client_config = r.text("zookeeper", zookeeper, "client_config", required=False)
    if r.problems:
        raise ConfigError(source, r.problems)
    return Inventory(
        path=path,
        version=version,
        kafka_home=home,
        zookeeper_connect=connect,
        zookeeper_client_config=(
            path.parent / client_config if client_config else brokers[0].properties
        ),
        brokers=tuple(brokers),
        controllers=tuple(controllers),
    )


def _nodes(r: _Reader, name: str, value: Any) -> list[Any]:
    if not isinstance(value, list) or not value:
        r.problems.append(f"no [[{name}]]: the inventory names every {name}")
        return []
    return value


def _unique(r: _Reader, name: str, ids: list[int]) -> None:
    seen: set[int] = set()
    for node_id in ids:
        if node_id in seen:
            r.problems.append(f"{name} id {node_id} is given twice")
        seen.add(node_id)


def _brokers(r: _Reader, value: Any, defaults: dict[str, Any]) -> list[Broker]:
    brokers = []
    for i, entry in enumerate(_nodes(r, "broker", value)):
        where = f"broker[{i}]"
        table = defaults | r.table(where, entry, _BROKER_KEYS)
        restart = r.command(where, table, "restart")
        push = r.command(where, table, "push", required=False)
        broker = Broker(
            id=r.integer(where, table, "id", 0, INT32_MAX),
            host=r.host(where, table),
            properties=r.path(where, table, "properties"),
            restart=restart or Command("", ()),
            push=push,
        )
        brokers.append(broker)
    _unique(r, "broker", [b.id for b in brokers])
    return brokers


def _controllers(r: _Reader, value: Any, defaults: dict[str, Any]) -> list[Controller]:
    controllers = []
    for i, entry in enumerate(_nodes(r, "controller", value)):
        where = f"controller[{i}]"
        table = defaults | r.table(where, entry, _CONTROLLER_KEYS)
        empty = Command("", ())
        controllers.append(
            Controller(
                id=r.integer(where, table, "id", 0, INT32_MAX),
                host=r.host(where, table),
                port=r.integer(where, table, "port", 1, 65535),
                properties=r.path(where, table, "properties"),
                metadata_log_dir=r.path(where, table, "metadata_log_dir"),
                format=r.command(where, table, "format", FORMAT_PLACEHOLDERS) or empty,
                start=r.command(where, table, "start") or empty,
                stop=r.command(where, table, "stop") or empty,
                push=r.command(where, table, "push", required=False),
            )
        )
    _unique(r, "controller", [c.id for c in controllers])
    return controllers
