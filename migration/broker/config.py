"""``server.properties`` of a broker, ZooKeeper mode or KRaft mode
(``process.roles=broker``): Kafka's property names, validated into every problem at
once before anything starts (the CLI exits 2 on any).

KRaft mode, as Kafka's migration rolls a broker over: ``node.id`` (the old
``broker.id``; ``broker.id``, if still there, must equal it), ``controller.quorum.voters``
and ``controller.listener.names`` required; no ZooKeeper settings
(``zookeeper.connect`` and ``zookeeper.metadata.migration.enable`` are refused, naming
the step that removes them); ``inter.broker.protocol.version`` is ignored (the
quorum's metadata.version rules).

Listeners: every listener in ``listeners`` speaks Kafka's client protocol except the one
named by ``inter.broker.listener.name``, which carries the controller-to-broker RPCs
(UpdateMetadata, LeaderAndIsr, StopReplica, AlterPartition, ControlledShutdown) over
gRPC. ``advertised.listeners`` (default: ``listeners``) is what ``/brokers/ids/<id>``
and Metadata answers publish.

Security: a client listener may be ``PLAINTEXT``, ``SSL``, ``SASL_PLAINTEXT`` or
``SASL_SSL`` (Kafka's ``ssl.*`` settings, PEM or PKCS12, ``sasl.enabled.mechanisms``); the
inter-broker listener is ``PLAINTEXT`` or ``SSL`` (gRPC over TLS, mutual with
``ssl.client.auth=required``). ``authorizer.class.name`` turns Kafka's ACL authorizer on.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from migration.broker.modes import ZOOKEEPER_SETTINGS
from migration.common.ports import host_problem
from migration.common.properties import (
    ConfigError,
    Reader,
    TypedProperties,
    boolean_setting,
    integer_setting,
    read_properties,
    read_settings,
)
from migration.common.text import shown
from migration.common.tls import KEYS as TLS_KEYS
from migration.common.tls import TlsSettings, tls_settings
from migration.kafka.authorizer import KEYS as AUTHORIZER_KEYS
from migration.kafka.authorizer import AuthorizerSettings, authorizer_settings
from migration.kafka.listeners import ListenerSecurity, ListenerSettings
from migration.kafka.sasl import SASL_KEYS, sasl_settings
from migration.kafka.socket_limits import KEYS as SOCKET_KEYS
from migration.kafka.socket_limits import SocketLimits, socket_limits
from migration.observability.endpoint import KEYS as METRICS_KEYS
from migration.observability.endpoint import MetricsEndpoint, metrics_endpoint
from migration.raft.config import Address, parse_voters
from migration.records import versions
from migration.zk.client import DEFAULT_SESSION_TIMEOUT_S, ConnectString
from migration.zk.model.brokers import RESERVED_BROKER_MAX_ID, Endpoint, parse_protocol_map
from migration.zk.security import KEYS as ZK_SECURITY_KEYS
from migration.zk.security import OPEN, ZkSecurity, zk_security

log = logging.getLogger(__name__)

DEFAULT_IBP = "3.9"
# A controlled shutdown's heartbeats (each answers when its step has committed): as long
# as the controller keeps answering, up to Kafka's five minutes in all (a broker leading
# or in the ISR of a million partitions takes a hundred steps); SHUTDOWN_STALL_S with no
# answer ends it sooner (an unreachable quorum cannot hold the stop).
SHUTDOWN_TIMEOUT_S = 300.0
SHUTDOWN_STALL_S = 30.0
STOP_GRACE_S = 30.0  # after the controlled shutdown: listeners and sessions closed

KNOWN = {
    "broker.id", "zookeeper.connect", "listeners", "advertised.listeners",
    "listener.security.protocol.map", "inter.broker.listener.name", "log.dirs", "log.dir",
    "inter.broker.protocol.version", "broker.rack", "zookeeper.session.timeout.ms",
    "zookeeper.connection.timeout.ms", "zookeeper.metadata.migration.enable",
    "controller.quorum.voters", "controller.listener.names", "num.partitions",
    "default.replication.factor", "password.encoder.secret", *SOCKET_KEYS,
    "controlled.shutdown.enable", "controlled.shutdown.max.retries",
    "controller.socket.timeout.ms", "unclean.leader.election.enable", "process.roles", "node.id",
    *METRICS_KEYS, *ZK_SECURITY_KEYS, *TLS_KEYS, *SASL_KEYS, *AUTHORIZER_KEYS,
}  # fmt: skip


BrokerConfigError = ConfigError


@dataclass(frozen=True)
class BrokerConfig:
    broker_id: int
    zk_connect: ConnectString
    listeners: tuple[Endpoint, ...]  # what to bind
    advertised: tuple[Endpoint, ...]  # what to publish
    inter_broker_listener: str
    log_dir: Path
    metadata_version_max: int  # from inter.broker.protocol.version
    rack: str | None = None
    zk_session_timeout_ms: int = int(DEFAULT_SESSION_TIMEOUT_S * 1000)
    zk_connection_timeout_ms: int = int(DEFAULT_SESSION_TIMEOUT_S * 1000)
    migration_enabled: bool = False
    controller_voters: dict[int, Address] = field(default_factory=dict)
    controller_listener_names: tuple[str, ...] = ()
    num_partitions: int = 1
    default_replication_factor: int = 1
    limits: SocketLimits = field(default_factory=SocketLimits)  # the Kafka listeners'
    controlled_shutdown: bool = True
    controlled_shutdown_max_retries: int = 3
    controller_socket_timeout_ms: int = 30_000  # a controller request's answer, at most
    unclean_leader_election: bool = False
    # Encrypts password configs in ZooKeeper (Kafka's password.encoder.secret): never shown.
    password_encoder_secret: str | None = field(default=None, repr=False)
    kraft: bool = False  # process.roles=broker: the metadata log, not ZooKeeper
    metrics: MetricsEndpoint | None = None  # metrics.port / metrics.host
    zk_security: ZkSecurity = OPEN  # ZooKeeper mode: SASL/digest, TLS, zookeeper.set.acl
    listener_security: dict[str, ListenerSecurity] = field(default_factory=dict)
    authorizer: AuthorizerSettings | None = None
    # The TLS a controller channel uses (the controller listener's protocol is SSL).
    controller_tls: TlsSettings | None = None

    def client_listeners(self) -> tuple[Endpoint, ...]:
        return tuple(e for e in self.listeners if e.listener != self.inter_broker_listener)

    def listener_settings(self) -> ListenerSettings:
        """What the Kafka listeners serve with (:class:`~migration.kafka.server.KafkaServer`)."""
        return ListenerSettings(
            self.client_listeners(), self.limits, self.listener_security, self.authorizer
        )

    def grpc_tls(self) -> TlsSettings | None:
        """The process's gRPC TLS: the inter-broker listener's (SSL), else the controller
        listener's (a KRaft broker has no inter-broker server)."""
        inter = self.listener_security.get(self.inter_broker_listener)
        return inter.tls if inter is not None and inter.tls else self.controller_tls

    def stop_budget_s(self) -> float:
        """How long a stop may take: the controlled shutdown's attempts, then STOP_GRACE_S.
        Through the KRaft controller (a KRaft broker, or a ZooKeeper broker in the
        migration) SHUTDOWN_TIMEOUT_S; through the ZooKeeper controller
        controlled.shutdown.max.retries x controller.socket.timeout.ms."""
        if not self.controlled_shutdown:
            return STOP_GRACE_S
        if self.kraft:
            return SHUTDOWN_TIMEOUT_S + STOP_GRACE_S
        attempts_s = self.controlled_shutdown_max_retries * self.controller_socket_timeout_ms / 1000
        if self.migration_enabled:
            attempts_s = max(attempts_s, SHUTDOWN_TIMEOUT_S)
        return attempts_s + STOP_GRACE_S

    def internal(self) -> Endpoint:
        return next(e for e in self.listeners if e.listener == self.inter_broker_listener)


def _endpoints(
    key: str, text: str, protocols: dict[str, str], problems: list[str]
) -> tuple[Endpoint, ...]:
    out: list[Endpoint] = []
    for entry in (e.strip() for e in text.split(",") if e.strip()):
        name, sep, hostport = entry.partition("://")
        host, colon, port = hostport.rpartition(":")
        host = host.strip("[]")
        if not sep or not colon or not port.isdigit() or not 0 <= int(port) < 65536:
            problems.append(f"{key}: {shown(entry)} is not NAME://host:port")
            continue
        if host and (why := host_problem(host)):
            problems.append(f"{key}: {why}")
            continue
        if name not in protocols:
            problems.append(f"{key}: listener {name} is not in listener.security.protocol.map")
            continue
        out.append(Endpoint(name, host, int(port), protocols[name]))
    names = [e.listener for e in out]
    if len(set(names)) != len(names):
        problems.append(f"{key}: a listener name appears twice in {shown(text)}")
    return tuple(out)


def _listener_security(
    props: dict[str, str], listeners: tuple[Endpoint, ...], inter: str, problems: list[str]
) -> dict[str, ListenerSecurity]:
    out: dict[str, ListenerSecurity] = {}
    for e in listeners:
        protocol = e.security_protocol
        if e.listener == inter and protocol.startswith("SASL_"):
            problems.append(
                f"inter.broker.listener.name {inter} uses {protocol}: the controller's RPCs "
                "run over gRPC, secured by TLS (SSL, with ssl.client.auth=required)"
            )
            continue
        tls = tls_settings(props, e.listener, problems) if protocol.endswith("SSL") else None
        if tls is not None and not (tls.certificate_chain and tls.private_key):
            problems.append(f"listener {e.listener} ({protocol}) needs a key store: ssl.keystore.*")
        sasl = sasl_settings(props, e.listener, problems) if protocol.startswith("SASL_") else None
        out[e.listener] = ListenerSecurity(tls, sasl)
    return out


def _controller_tls(
    props: dict[str, str], protocols: dict[str, str], names: tuple[str, ...], problems: list[str]
) -> TlsSettings | None:
    """How this broker reaches the controllers: TLS when the controller listener's
    protocol is SSL (its own ssl.* settings: the trust store, and the key store for
    mutual TLS)."""
    if not names or protocols.get(names[0]) != "SSL":
        return None
    return tls_settings(props, names[0], problems)


def _identity(
    props: dict[str, str], typed: TypedProperties, problems: list[str]
) -> tuple[bool, int, ConnectString]:
    """(KRaft mode, the broker's id, zookeeper.connect): process.roles=broker is KRaft
    mode (node.id, no ZooKeeper settings), none ZooKeeper mode (broker.id and
    zookeeper.connect); other roles are refused."""
    roles = props.get("process.roles", "").strip()
    kraft = roles == "broker"
    if roles and not kraft:
        problems.append(
            f"process.roles={shown(roles)}: this command runs brokers (process.roles=broker); "
            "controllers run with `zk2kraft controller`"
        )
    zk_connect = ConnectString("", "")
    if kraft:
        broker_id = _kraft_node_id(props, typed, problems)
        for key in ZOOKEEPER_SETTINGS:
            if key in props:
                problems.append(
                    f"{key} is a ZooKeeper-mode setting: remove it from a KRaft broker "
                    "(process.roles=broker)"
                )
    else:
        broker_id = _zk_broker_id(props, typed, problems)
        try:
            zk_connect = ConnectString.parse(props.get("zookeeper.connect", ""))
        except ValueError as exc:
            problems.append(
                "zookeeper.connect is required" if "zookeeper.connect" not in props else str(exc)
            )
    return kraft, broker_id, zk_connect


def _listeners(
    props: dict[str, str], protocols: dict[str, str], problems: list[str]
) -> tuple[tuple[Endpoint, ...], tuple[Endpoint, ...], str]:
    """(listeners, advertised listeners, inter.broker.listener.name): an advertised
    listener without a host is localhost's; the inter-broker listener is one of the
    listeners, with a client listener besides it."""
    declared = props.get("listeners", "PLAINTEXT://:9092")
    listeners = _endpoints("listeners", declared, protocols, problems)
    advertised = _endpoints(
        "advertised.listeners", props.get("advertised.listeners", declared), protocols, problems
    )
    advertised = tuple(
        e if e.host else Endpoint(e.listener, "localhost", e.port, e.security_protocol)
        for e in advertised
    )
    if {e.listener for e in advertised} != {e.listener for e in listeners} and listeners:
        problems.append("advertised.listeners must name the same listeners as listeners")
    inter = props.get("inter.broker.listener.name", "").strip()
    # as declared, valid or not: each problem is reported once, where it is
    names = [e.strip().partition("://")[0] for e in declared.split(",") if e.strip()]
    if not inter:
        problems.append(
            "inter.broker.listener.name is required: the listener the controller's RPCs "
            f"reach this broker on (one of {', '.join(names) or 'listeners'})"
        )
    elif names and inter not in names:
        problems.append(f"inter.broker.listener.name {inter} is not among listeners {names}")
    elif len(names) < 2:
        problems.append(
            "listeners needs a client listener besides the inter-broker one "
            f"({inter}), e.g. PLAINTEXT://:9092,{inter}://:9093"
        )
    return listeners, advertised, inter


def _protocol_level(props: dict[str, str], problems: list[str]) -> tuple[str, int | None]:
    """inter.broker.protocol.version as written and its metadata.version level (None:
    not a release zk2kraft knows)."""
    ibp_text = props.get("inter.broker.protocol.version", DEFAULT_IBP).strip()
    level = versions.ibp_level(ibp_text)
    if level is None:
        problems.append(
            f"inter.broker.protocol.version={shown(ibp_text)} is not a release zk2kraft "
            f"knows ({', '.join(versions.IBP_RELEASES)})"
        )
    return ibp_text, level


def _quorum(
    props: dict[str, str], protocols: dict[str, str], problems: list[str]
) -> tuple[dict[int, Address], tuple[str, ...]]:
    """(controller.quorum.voters, controller.listener.names), each name a listener of
    listener.security.protocol.map."""
    voters: dict[int, Address] = {}
    if "controller.quorum.voters" in props:
        try:
            voters = parse_voters(props["controller.quorum.voters"])
        except ValueError as exc:
            problems.append(str(exc))
    controller_names = tuple(
        n.strip() for n in props.get("controller.listener.names", "").split(",") if n.strip()
    )
    for name in controller_names:
        if name not in protocols:
            problems.append(
                f"controller.listener.names: {name} is not in listener.security.protocol.map"
            )
    return voters, controller_names


def _quorum_needed(
    why: str, voters: dict[int, Address], names: tuple[str, ...], problems: list[str]
) -> None:
    """A KRaft broker, or a ZooKeeper broker in the migration (``why``), reaches the
    controllers: it needs their voters and listener names."""
    if not voters:
        problems.append(f"{why} needs controller.quorum.voters")
    if not names:
        problems.append(f"{why} needs controller.listener.names")


# The settings read alike, in the order their problems are reported: BrokerConfig field
# (its default is the setting's) and how it is read (Kafka's property names).
_SETTINGS: tuple[tuple[str, Reader], ...] = (
    ("num_partitions", integer_setting("num.partitions", 1)),
    ("default_replication_factor", integer_setting("default.replication.factor", 1, 32767)),
    ("limits", lambda typed, _: socket_limits(typed)),
    ("controlled_shutdown", boolean_setting("controlled.shutdown.enable")),
    ("controlled_shutdown_max_retries", integer_setting("controlled.shutdown.max.retries", 1)),
    ("controller_socket_timeout_ms", integer_setting("controller.socket.timeout.ms", 100)),
    ("unclean_leader_election", boolean_setting("unclean.leader.election.enable")),
    ("metrics", lambda typed, _: metrics_endpoint(typed)),
)


def parse_broker_config(props: dict[str, str], source: str) -> BrokerConfig:
    """The broker's config from ``props`` (read from ``source``); ConfigError naming
    every problem at once. Unknown properties are warned of, not refused (Kafka's way)."""
    typed = TypedProperties(props)
    problems = typed.problems
    kraft, broker_id, zk_connect = _identity(props, typed, problems)
    protocols = parse_protocol_map(props.get("listener.security.protocol.map"), problems)
    listeners, advertised, inter = _listeners(props, protocols, problems)
    log_dirs = props.get("log.dirs", props.get("log.dir", "")).strip()
    if not log_dirs:
        problems.append("log.dirs is required (its first directory holds meta.properties)")
    ibp_text, level = _protocol_level(props, problems)
    migration = typed.boolean("zookeeper.metadata.migration.enable", False)
    voters, controller_names = _quorum(props, protocols, problems)
    if kraft:
        _quorum_needed("process.roles=broker", voters, controller_names, problems)
    if migration:
        _quorum_needed("zookeeper.metadata.migration.enable", voters, controller_names, problems)
        if level is not None and level < versions.IBP_3_4_IV0:
            problems.append(
                "zookeeper.metadata.migration.enable needs inter.broker.protocol.version "
                f"3.4 or later (have {ibp_text})"
            )
    if broker_id in voters:
        problems.append(
            f"{'node.id' if kraft else 'broker.id'} {broker_id} collides with a controller id "
            "in the voters"
        )
    session = typed.integer("zookeeper.session.timeout.ms", 18000, 1000)
    config = BrokerConfig(
        broker_id=broker_id,
        zk_connect=zk_connect,
        listeners=listeners,
        advertised=advertised,
        inter_broker_listener=inter,
        log_dir=Path(log_dirs.split(",")[0].strip()),
        metadata_version_max=versions.LATEST if kraft else level or versions.LATEST,
        rack=props.get("broker.rack", "").strip() or None,
        zk_session_timeout_ms=session,
        zk_connection_timeout_ms=typed.integer("zookeeper.connection.timeout.ms", session, 100),
        migration_enabled=migration,
        controller_voters=voters,
        controller_listener_names=controller_names,
        password_encoder_secret=props.get("password.encoder.secret") or None,
        kraft=kraft,
        **read_settings(typed, _SETTINGS, BrokerConfig),
        zk_security=OPEN if kraft else zk_security(props, problems),
        listener_security=_listener_security(props, listeners, inter, problems),
        authorizer=authorizer_settings(props, kraft, problems),
        controller_tls=_controller_tls(props, protocols, controller_names, problems),
    )
    if controller_names and inter and not kraft:
        _same_grpc_security(protocols, controller_names[0], inter, problems)
    typed.finish(source, KNOWN | {k for k in props if k.startswith("listener.name.")})
    return config


def _same_grpc_security(
    protocols: dict[str, str], controller: str, inter: str, problems: list[str]
) -> None:
    """A ZooKeeper broker's gRPC, to the controllers and from them, is TLS on both
    listeners or on neither."""
    if (protocols.get(controller) == "SSL") != (protocols.get(inter, "PLAINTEXT") == "SSL"):
        problems.append(
            f"listener.security.protocol.map: {controller} and {inter} must both be "
            "SSL or neither: a process's gRPC is TLS everywhere or nowhere"
        )


def _zk_broker_id(props: dict[str, str], typed: TypedProperties, problems: list[str]) -> int:
    if props.get("broker.id", "").strip() in ("", "-1"):
        problems.append(
            "broker.id is required (>= 0): generated broker ids are not supported, and a "
            "migration to KRaft refuses them (node.id must equal the old broker.id)"
        )
        return 0
    return typed.integer("broker.id", None, 0, RESERVED_BROKER_MAX_ID)


def _kraft_node_id(props: dict[str, str], typed: TypedProperties, problems: list[str]) -> int:
    if not props.get("node.id", "").strip():
        problems.append(
            "node.id is required with process.roles=broker: the broker.id this broker had "
            "in ZooKeeper mode"
        )
        return 0
    node_id = typed.integer("node.id", None, 0, RESERVED_BROKER_MAX_ID)
    old = props.get("broker.id", "").strip()
    if old and old != str(node_id):
        problems.append(f"broker.id={shown(old)} and node.id={node_id} differ: keep one, equal")
    return node_id


def load_broker_config(path: Path) -> BrokerConfig:
    return parse_broker_config(read_properties(path), str(path))
