"""Each properties file's change at each step of Kafka 3.9's migration, worked out from
the file as it is, as Kafka's documentation has the operator make it by hand:

- a broker, rolled with the migration flag: ``zookeeper.metadata.migration.enable=true``,
  the quorum (``controller.quorum.voters``, ``controller.listener.names``), the
  controller listener in ``listener.security.protocol.map`` and
  ``inter.broker.protocol.version`` at the release's (:func:`broker_migration_changes`);
- a broker, rolled into KRaft mode: ``broker.id`` becomes ``node.id``,
  ``process.roles=broker``, the migration flag, every ``zookeeper.*`` client setting and
  ``inter.broker.protocol.version`` removed, the ZooKeeper-based ``AclAuthorizer``
  replaced by KRaft's ``StandardAuthorizer`` (:func:`broker_kraft_changes`);
- a controller, provisioned: its role, id, quorum and listener, the migration flag, the
  brokers' ZooKeeper (``zookeeper.connect`` and their ``zookeeper.*`` client settings),
  their inter-broker listener and its protocol, the authorizer and super users, and its
  ``log.dirs`` (:func:`controller_changes`);
- a controller, finalized: the migration flag and every ``zookeeper.*`` setting removed
  (:func:`controller_finalize_changes`).

A change is ``{key: new value, or None to remove}``, applied with
:func:`~migration.common.properties_edit.edited_properties` (every other line kept as
it is). :func:`file_problems` checks the files against the inventory before anything
changes. :func:`shown_diff` is the change as a unified diff with secret values redacted.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping

from migration.common.properties import kafka_value, physical_lines, property_entries
from migration.common.properties_edit import edited_properties
from migration.common.text import shown
from migration.operate.inventory import Controller, Inventory
from migration.records.secrets import REDACTED, is_sensitive_config
from migration.zk.client import ConnectString

Changes = dict[str, str | None]

MIGRATION_FLAG = "zookeeper.metadata.migration.enable"
ACL_AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
KAFKA_DEFAULT_PROTOCOL_MAP = (
    "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"
)
"""``listener.security.protocol.map`` when a file does not set it (Kafka's default)."""


def values_of(text: str) -> dict[str, str]:
    """A properties text as Kafka's configs see it (last value of each key, trimmed)."""
    return {e.key: kafka_value(e.value) for e in property_entries(text)}


def _protocol_map(values: Mapping[str, str]) -> dict[str, str]:
    text = values.get("listener.security.protocol.map") or KAFKA_DEFAULT_PROTOCOL_MAP
    pairs = (item.strip().partition(":") for item in text.split(",") if item.strip())
    return {name.strip(): protocol.strip() for name, _, protocol in pairs}


def _map_text(protocols: Mapping[str, str]) -> str:
    return ",".join(f"{name}:{protocol}" for name, protocol in protocols.items())


def inter_broker_listener(values: Mapping[str, str]) -> str:
    """The brokers' inter-broker listener name: ``inter.broker.listener.name``, else the
    listener named as ``security.inter.broker.protocol`` (Kafka's rule)."""
    return values.get("inter.broker.listener.name") or values.get(
        "security.inter.broker.protocol", "PLAINTEXT"
    )


def _changed(values: Mapping[str, str], wanted: Changes) -> Changes:
    """``wanted`` less what the file already says (an idempotent step changes nothing)."""
    return {k: v for k, v in wanted.items() if values.get(k) != v}


def broker_migration_changes(inv: Inventory, text: str) -> Changes:
    """None for a broker already in KRaft mode (``process.roles`` set): past this step."""
    values = values_of(text)
    if "process.roles" in values:
        return {}
    wanted: Changes = {
        MIGRATION_FLAG: "true",
        "controller.quorum.voters": inv.voters,
        "controller.listener.names": inv.listener,
        "inter.broker.protocol.version": inv.ibp,
    }
    protocols = _protocol_map(values)
    if protocols.get(inv.listener) != inv.security_protocol:
        protocols[inv.listener] = inv.security_protocol
        wanted["listener.security.protocol.map"] = _map_text(protocols)
    return _changed(values, wanted)


def broker_kraft_changes(inv: Inventory, text: str, broker_id: int) -> Changes:
    values = values_of(text)
    wanted: Changes = {
        "process.roles": "broker",
        "node.id": str(broker_id),
        "broker.id": None,
        "inter.broker.protocol.version": None,
        "controller.quorum.voters": inv.voters,
        "controller.listener.names": inv.listener,
    }
    wanted |= {key: None for key in values if key.startswith("zookeeper.")}
    if values.get("authorizer.class.name") == ACL_AUTHORIZER:
        wanted["authorizer.class.name"] = STANDARD_AUTHORIZER
    return {k: v for k, v in _changed(values, wanted).items() if v is not None or k in values}


def controller_changes(
    inv: Inventory, controller: Controller, text: str, broker_text: str, client_text: str
) -> Changes:
    """The controller's file (``text``, empty when new) made a migrating controller of
    the brokers whose settings ``broker_text`` (one broker's file) and ``client_text``
    (the ZooKeeper client settings' file) hold."""
    broker = values_of(broker_text)
    inter = inter_broker_listener(broker)
    broker_protocols = _protocol_map(broker)
    protocols = {inv.listener: inv.security_protocol}
    protocols[inter] = broker_protocols.get(inter, inter)
    wanted: Changes = {
        "process.roles": "controller",
        "node.id": str(controller.id),
        "controller.quorum.voters": inv.voters,
        "controller.listener.names": inv.listener,
        "listeners": f"{inv.listener}://{controller.host}:{controller.port}",
        "listener.security.protocol.map": _map_text(protocols),
        "inter.broker.listener.name": inter,
        "log.dirs": str(controller.metadata_log_dir),
        MIGRATION_FLAG: "true",
        "zookeeper.connect": str(inv.zookeeper_connect),
    }
    wanted |= {
        k: v
        for k, v in values_of(client_text).items()
        if k.startswith("zookeeper.") and k not in (MIGRATION_FLAG, "zookeeper.connect")
    }
    if broker.get("authorizer.class.name") == ACL_AUTHORIZER:
        wanted["authorizer.class.name"] = STANDARD_AUTHORIZER
        if "super.users" in broker:
            wanted["super.users"] = broker["super.users"]
    return _changed(values_of(text), wanted)


def controller_finalize_changes(text: str) -> Changes:
    values = values_of(text)
    return {key: None for key in values if key.startswith("zookeeper.")}


def file_problems(inv: Inventory, texts: Mapping[int, str]) -> list[str]:
    """What in the brokers' files (``texts``: broker id -> its file's text) contradicts
    the inventory: a ``broker.id`` that is another's, a ``zookeeper.connect`` naming
    another ZooKeeper, a broker already in KRaft mode."""
    problems = []
    for broker in inv.brokers:
        text = texts.get(broker.id)
        if text is None:
            continue
        values = values_of(text)
        where = f"broker {broker.id} ({broker.properties})"
        if "process.roles" in values:
            continue  # in KRaft mode already: the run's state, not a contradiction
        if _integer(values.get("broker.id", str(broker.id))) != broker.id:
            problems.append(f"{where}: broker.id={shown(values['broker.id'])}, not {broker.id}")
        connect = values.get("zookeeper.connect")
        if connect is None:
            problems.append(f"{where}: no zookeeper.connect (not a ZooKeeper-mode broker)")
        elif not _same_zookeeper(connect, inv.zookeeper_connect):
            problems.append(
                f"{where}: zookeeper.connect={shown(connect)}, not the inventory's "
                f"{inv.zookeeper_connect}"
            )
    return problems


def _integer(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def _same_zookeeper(text: str, connect: ConnectString) -> bool:
    try:
        return ConnectString.parse(text) == connect
    except ValueError:
        return False


def redacted(text: str, changed: frozenset[str] = frozenset()) -> str:
    """``text`` with the value of every secret setting replaced by ``<redacted>``
    (``<redacted, changed>`` for the keys in ``changed``)."""
    lines = physical_lines(text)
    entries = {e.first: e for e in property_entries(text) if is_sensitive_config(e.key)}
    out, skip_to = [], 0
    for number, (content, end) in enumerate(lines, 1):
        if number <= skip_to:
            continue
        e = entries.get(number)
        if e is None:
            out.append(content + end)
            continue
        mark = f"{REDACTED[:-1]}, changed>" if e.key in changed else REDACTED
        out.append(f"{e.key}={mark}{lines[e.last - 1][1]}")
        skip_to = e.last
    return "".join(out)


def apply(text: str, changes: Changes) -> str:
    return edited_properties(text, changes) if changes else text


def shown_diff(path: str, before: str, after: str) -> str:
    """The change of ``path`` from ``before`` to ``after`` as a unified diff, secrets
    redacted; empty when nothing changes."""
    old, new = values_of(before), values_of(after)
    changed = frozenset(k for k in new if is_sensitive_config(k) and k in old and old[k] != new[k])
    return "".join(
        difflib.unified_diff(
            redacted(before).splitlines(keepends=True),
            redacted(after, changed).splitlines(keepends=True),
            fromfile=f"{path} (now)",
            tofile=f"{path} (after)",
            lineterm="\n",
        )
    )
