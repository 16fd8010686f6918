"""Each properties file's change at each step of Kafka 3.9's migration, worked out from
the file as it is, as Kafka's documentation has the operator make it by hand. The mode
rules are :mod:`migration.broker.modes`' (those ``broker-mode``/``controller-mode`` and
the local clusters use); what a real Kafka node needs beyond them is added here:

- a broker, rolled with the migration flag: the migration settings and
  ``inter.broker.protocol.version`` at the release's (:func:`broker_migration_changes`);
- a broker, rolled into KRaft mode: ``broker.id`` becomes ``node.id``,
  ``process.roles=broker``, every ``zookeeper.*`` client setting (``zookeeper.ssl.*``
  too) and ``inter.broker.protocol.version`` removed, ``AclAuthorizer`` replaced by
  KRaft's ``StandardAuthorizer`` (:func:`broker_kraft_changes`);
- a controller, provisioned: its role, id, quorum and listener, the migration flag, the
  brokers' ZooKeeper (``zookeeper.connect`` and their ``zookeeper.*`` client settings),
  their inter-broker listener and its protocol, the authorizer and super users, and its
  ``log.dirs`` (:func:`controller_changes`);
- a controller, finalized: the migration flag ``false`` and every other ``zookeeper.*``
  setting removed (:func:`controller_finalize_changes`).

A change is ``{key: new value, or None to remove}``, applied with
:func:`~migration.common.properties_edit.edited_properties` (every other line kept as
it is). :func:`file_problems` checks the files against the inventory before anything
changes. :func:`shown_diff` is a change as a unified diff with secret values redacted
(``<redacted, changed>`` where a secret changes).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping

from migration.broker.modes import (
    CONTROLLER_LISTENER,
    Mode,
    inter_broker_listener,
    mode_of,
    rewrite,
    rewrite_controller,
)
from migration.common.properties import kafka_value, physical_lines, property_entries
from migration.common.properties_edit import edited_properties
from migration.common.text import shown
from migration.kafka.authorizer import STANDARD_AUTHORIZER
from migration.operate.inventory import Controller, Inventory
from migration.records.secrets import REDACTED, is_sensitive_config
from migration.zk.client import ConnectString

Changes = dict[str, str | None]

MIGRATION_FLAG = "zookeeper.metadata.migration.enable"
PROTOCOL_MAP = "listener.security.protocol.map"
AUTHORIZER = "authorizer.class.name"


def values_of(text: str) -> dict[str, str]:
    """A properties text as Kafka's configs see it (last value of each key, trimmed)."""
    return {e.key: kafka_value(e.value) for e in property_entries(text)}


def _protocols(value: str) -> dict[str, str]:
    pairs = (item.strip().partition(":") for item in value.split(",") if item.strip())
    return {name.strip(): protocol.strip() for name, _, protocol in pairs}


def _towards(values: Mapping[str, str], wanted: Mapping[str, str]) -> Changes:
    """The changes that make ``values`` read as ``wanted``: keys set, and keys it lacks
    removed; a protocol map equal but for its spelling (blanks) is left as written."""
    changes: Changes = {k: v for k, v in wanted.items() if values.get(k) != v}
    changes |= {k: None for k in values if k not in wanted}
    new, old = changes.get(PROTOCOL_MAP), values.get(PROTOCOL_MAP)
    if new is not None and old is not None and _protocols(new) == _protocols(old):
        del changes[PROTOCOL_MAP]
    return changes


def _without_zookeeper(props: Mapping[str, str], keep: tuple[str, ...] = ()) -> dict[str, str]:
    """``props`` without Kafka's ZooKeeper client settings (every ``zookeeper.*`` key but
    those of ``keep``)."""
    return {k: v for k, v in props.items() if not k.startswith("zookeeper.") or k in keep}


def broker_migration_changes(inv: Inventory, text: str) -> Changes:
    """Empty for a broker already in KRaft mode: past this step."""
    values = values_of(text)
    if mode_of(values) == Mode.KRAFT:
        return {}
    wanted = rewrite(values, Mode.MIGRATING, voters=inv.voters)
    return _towards(values, wanted | {"inter.broker.protocol.version": inv.ibp})


def broker_kraft_changes(inv: Inventory, text: str, broker_id: int) -> Changes:
    values = values_of(text)
    wanted = _without_zookeeper(rewrite(values, Mode.KRAFT, voters=inv.voters))
    return _towards(values, wanted | {"node.id": str(broker_id)})


def controller_changes(
    inv: Inventory, controller: Controller, text: str, broker_text: str, client_text: str
) -> Changes:
    """The controller's file (``text``, empty when new) made a migrating controller of
    the brokers whose settings ``broker_text`` (one broker's file) and ``client_text``
    (the ZooKeeper client settings' file) hold: the controller listener on the protocol
    the brokers' migration settings give it, their inter-broker listener and its
    protocol, their ZooKeeper and its client settings, and -- brokers on the
    AclAuthorizer -- KRaft's StandardAuthorizer with their super users (another
    authorizer is the operator's to configure). Only sets keys: whatever else the file
    holds is the operator's."""
    broker = values_of(broker_text)
    connect = str(inv.zookeeper_connect)  # a broker in KRaft mode has it no more
    migrating = rewrite(broker, Mode.MIGRATING, voters=inv.voters, zk_connect=connect)
    broker_protocols = _protocols(migrating[PROTOCOL_MAP])
    inter = inter_broker_listener(broker)
    protocols = {
        CONTROLLER_LISTENER: broker_protocols[CONTROLLER_LISTENER],
        inter: broker_protocols.get(inter, inter),
    }
    wanted = {
        "process.roles": "controller",
        "node.id": str(controller.id),
        "controller.quorum.voters": inv.voters,
        "controller.listener.names": CONTROLLER_LISTENER,
        "listeners": f"{CONTROLLER_LISTENER}://{controller.host}:{controller.port}",
        PROTOCOL_MAP: ",".join(f"{name}:{protocol}" for name, protocol in protocols.items()),
        "inter.broker.listener.name": inter,
        "log.dirs": str(controller.metadata_log_dir),
    }
    wanted |= {k: v for k, v in values_of(client_text).items() if k.startswith("zookeeper.")}
    wanted = rewrite_controller(wanted, Mode.MIGRATING, zk_connect=str(inv.zookeeper_connect))
    if rewrite(broker, Mode.KRAFT, voters=inv.voters).get(AUTHORIZER) == STANDARD_AUTHORIZER:
        wanted[AUTHORIZER] = STANDARD_AUTHORIZER  # the brokers' ACLs, read from the log
        if "super.users" in broker:
            wanted["super.users"] = broker["super.users"]
    values = values_of(text)
    if "metadata.log.dir" in values:  # Kafka's log goes there, not to log.dirs
        wanted["metadata.log.dir"] = str(controller.metadata_log_dir)
    return {k: v for k, v in wanted.items() if values.get(k) != v}


def controller_finalize_changes(text: str) -> Changes:
    """The migration flag off and every other ZooKeeper setting removed."""
    values = values_of(text)
    wanted = _without_zookeeper(rewrite_controller(values, Mode.KRAFT), (MIGRATION_FLAG,))
    return _towards(values, wanted)


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


def shown_diff(before: str, after: str, fromfile: str, tofile: str) -> str:
    """The change from ``before`` to ``after`` as a unified diff, secrets redacted (a
    changed secret shows ``<redacted, changed>``); empty when nothing changes."""
    old, new = values_of(before), values_of(after)
    changed = frozenset(k for k in new if is_sensitive_config(k) and k in old and old[k] != new[k])
    return "".join(
        difflib.unified_diff(
            _lines(redacted(before)), _lines(redacted(after, changed)), fromfile, tofile
        )
    )


def _lines(text: str) -> list[str]:
    """``text``'s lines, each ending in ``\\n`` (a last line without one too)."""
    return [content + "\n" for content, _ in physical_lines(text)]
