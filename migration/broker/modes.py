"""The configs of each step of the migration, and the rewrite from one step to the next
(what ``zk2kraft broker-mode`` / ``controller-mode`` and the local clusters do).

A broker's ``server.properties``:

- ``zookeeper``: a ZooKeeper-mode broker, no migration settings;
- ``migrating``: a ZooKeeper-mode broker with ``zookeeper.metadata.migration.enable``,
  ``controller.quorum.voters``, ``controller.listener.names`` (and the controller
  listener in ``listener.security.protocol.map``);
- ``kraft``: ``process.roles=broker`` and ``node.id`` (the old ``broker.id``), the
  quorum kept, every ZooKeeper setting and ``broker.id`` removed; Kafka's ZooKeeper-mode
  authorizer (``AclAuthorizer``) becomes KRaft's ``StandardAuthorizer`` (and back).

A controller's ``controller.properties``: ``migrating`` (the flag and
``zookeeper.connect``) or ``kraft`` (finalizing: the flag false, ``zookeeper.connect``
removed).

Each rewrite keeps every other property as it was; what it needs and cannot find
(the voters to migrate, ``zookeeper.connect`` to come back from KRaft) raises
ValueError naming the option that gives it.
"""

from __future__ import annotations

from enum import StrEnum

from migration.kafka.authorizer import ACL_AUTHORIZER, STANDARD_AUTHORIZER
from migration.zk.model.brokers import SECURITY_PROTOCOLS

CONTROLLER_LISTENER = "CONTROLLER"
MIGRATION_SETTINGS = (
    "zookeeper.metadata.migration.enable", "controller.quorum.voters", "controller.listener.names",
)  # fmt: skip
ZOOKEEPER_SETTINGS = (
    "zookeeper.connect", "zookeeper.metadata.migration.enable", "zookeeper.session.timeout.ms",
    "zookeeper.connection.timeout.ms",
)  # fmt: skip


class Mode(StrEnum):
    ZOOKEEPER = "zookeeper"
    MIGRATING = "migrating"
    KRAFT = "kraft"


def mode_of(props: dict[str, str]) -> Mode:
    if props.get("process.roles", "").strip() == "broker":
        return Mode.KRAFT
    if props.get("zookeeper.metadata.migration.enable", "").strip().lower() == "true":
        return Mode.MIGRATING
    return Mode.ZOOKEEPER


def inter_broker_listener(props: dict[str, str]) -> str:
    """The brokers' inter-broker listener name: ``inter.broker.listener.name``, else the
    listener named as ``security.inter.broker.protocol`` (Kafka's rule; PLAINTEXT by
    default)."""
    return props.get("inter.broker.listener.name") or props.get(
        "security.inter.broker.protocol", "PLAINTEXT"
    )


def _protocol_map(props: dict[str, str], with_controller: bool) -> str:
    text = props.get(
        "listener.security.protocol.map", ",".join(f"{p}:{p}" for p in SECURITY_PROTOCOLS)
    )
    pairs = [e.strip().partition(":") for e in text.split(",") if e.strip()]
    protocols = {name: protocol for name, _, protocol in pairs}
    entries = [f"{n}:{p}" for n, p in protocols.items() if n != CONTROLLER_LISTENER]
    if with_controller:  # kept if given; else as secure as the inter-broker listener
        inter = protocols.get(inter_broker_listener(props), "PLAINTEXT")
        default = "SSL" if inter == "SSL" else "PLAINTEXT"
        entries.append(f"{CONTROLLER_LISTENER}:{protocols.get(CONTROLLER_LISTENER, default)}")
    return ",".join(entries)


def rewrite(
    props: dict[str, str],
    mode: Mode,
    *,
    zk_connect: str | None = None,
    voters: str | None = None,
) -> dict[str, str]:
    """``props`` rewritten for ``mode``. ``zk_connect``: needed to leave KRaft mode;
    ``voters``: needed to start migrating (unless already there)."""
    current = mode_of(props)
    out = dict(props)
    if current == Mode.KRAFT and mode != Mode.KRAFT:
        connect = zk_connect or out.get("zookeeper.connect")
        if not connect:
            raise ValueError("leaving KRaft mode needs zookeeper.connect: give --zk")
        node_id = out.pop("node.id", out.get("broker.id", ""))
        out.pop("process.roles", None)
        out = {"broker.id": node_id, "zookeeper.connect": connect, **out}
        _swap_authorizer(out, STANDARD_AUTHORIZER, ACL_AUTHORIZER)
    if mode == Mode.ZOOKEEPER:
        for key in MIGRATION_SETTINGS:
            out.pop(key, None)
        if "listener.security.protocol.map" in out:
            out["listener.security.protocol.map"] = _protocol_map(out, False)
        return out
    quorum = voters or out.get("controller.quorum.voters")
    if not quorum:
        raise ValueError(
            f"{mode.value} mode needs the controllers: give --controller-quorum-voters"
        )
    out["controller.quorum.voters"] = quorum
    out["controller.listener.names"] = CONTROLLER_LISTENER
    out["listener.security.protocol.map"] = _protocol_map(out, True)
    if mode == Mode.MIGRATING:
        out["zookeeper.metadata.migration.enable"] = "true"
        return out
    node_id = out.pop("broker.id", out.get("node.id", ""))
    for key in (*ZOOKEEPER_SETTINGS, "inter.broker.protocol.version"):
        out.pop(key, None)
    _swap_authorizer(out, ACL_AUTHORIZER, STANDARD_AUTHORIZER)
    return {"process.roles": "broker", "node.id": node_id, **out}


def _swap_authorizer(props: dict[str, str], old: str, new: str) -> None:
    """Kafka's authorizer for the mode: the same ACLs, read from ZooKeeper by
    AclAuthorizer and from the metadata log by StandardAuthorizer."""
    if props.get("authorizer.class.name", "").strip() == old:
        props["authorizer.class.name"] = new


def rewrite_controller(
    props: dict[str, str], mode: Mode, *, zk_connect: str | None = None
) -> dict[str, str]:
    """A controller's ``props`` for ``mode``: MIGRATING (needs ``zk_connect`` unless
    present) or KRAFT (finalization). ZOOKEEPER is not a controller's mode."""
    out = dict(props)
    if mode == Mode.KRAFT:
        out.pop("zookeeper.connect", None)
        out["zookeeper.metadata.migration.enable"] = "false"
        return out
    if mode != Mode.MIGRATING:
        raise ValueError("a controller is either migrating or kraft")
    connect = zk_connect or out.get("zookeeper.connect")
    if not connect:
        raise ValueError("migrating needs zookeeper.connect: give --zk")
    out["zookeeper.connect"] = connect
    out["zookeeper.metadata.migration.enable"] = "true"
    return out
