"""``controller.properties``: Kafka's property names, validated into every problem at
once before anything starts."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from migration.common.limits import INT64_MAX
from migration.common.ports import host_problem
from migration.common.properties import (
    ConfigError,
    Reader,
    TypedProperties,
    integer_setting,
    read_properties,
    read_settings,
)
from migration.common.text import shown
from migration.common.tls import KEYS as TLS_KEYS
from migration.common.tls import TlsSettings, tls_settings
from migration.observability.endpoint import KEYS as METRICS_KEYS
from migration.observability.endpoint import MetricsEndpoint, metrics_endpoint
from migration.raft.config import (
    DEFAULT_ELECTION_BACKOFF_MAX_MS,
    DEFAULT_ELECTION_TIMEOUT_MS,
    DEFAULT_FETCH_TIMEOUT_MS,
    Address,
    parse_voters,
)
from migration.raft.event_performance import (
    DEFAULT_ALWAYS_LOG_THRESHOLD_MS,
    DEFAULT_SAMPLE_PERIOD_MS,
)
from migration.zk.client import ConnectString
from migration.zk.model.brokers import parse_protocol_map
from migration.zk.security import KEYS as ZK_SECURITY_KEYS
from migration.zk.security import OPEN, ZkSecurity, zk_security

log = logging.getLogger(__name__)

KNOWN = {
    "node.id", "process.roles", "controller.quorum.voters", "listeners",
    "controller.listener.names", "metadata.log.dir", "log.dirs", "cluster.id",
    "controller.quorum.election.timeout.ms", "controller.quorum.fetch.timeout.ms",
    "controller.quorum.election.backoff.max.ms", "controller.quorum.request.timeout.ms",
    "metadata.log.segment.bytes", "metadata.log.max.record.bytes.between.snapshots",
    "broker.session.timeout.ms", "zookeeper.connect", "zookeeper.metadata.migration.enable",
    "zookeeper.session.timeout.ms", "zookeeper.connection.timeout.ms",
    "zookeeper.metadata.migration.max.write.behind.records", "inter.broker.listener.name",
    "zookeeper.metadata.migration.batch.bytes", "zookeeper.metadata.migration.min.batch.size",
    "inter.broker.protocol.version", "listener.security.protocol.map", "num.partitions",
    "default.replication.factor", "password.encoder.secret",
    "controller.performance.sample.period.ms", "controller.performance.always.log.threshold.ms",
    *METRICS_KEYS, *ZK_SECURITY_KEYS,
    *TLS_KEYS,
}  # fmt: skip

# How far (in committed records) ZooKeeper may fall behind the log while dual-writing
# before new metadata writes are refused (REQUEST_TIMED_OUT, retriable) until it catches
# up. Measured (see docs/proof.md): a 1,000 changes/s load keeps the lag under 100 records;
# a full sync of 100,000 partitions is ~300,000 records. The bound is what ZooKeeper can
# take back in a few seconds once it returns.
DEFAULT_MAX_WRITE_BEHIND_RECORDS = 10_000

# zookeeper.metadata.migration.min.batch.size (Kafka's name; its default is 200): the
# copy's records go to the controller this many an append, each append validated
# against a pending image rebuilt for it, a cost that grows with the topics. The copy of
# 1,000,000 partitions through a controller in process: 39.2 s at 200, 27.8 s at 2,000
# (100,000: 2.61 s and 2.06 s). The controller's batches hold at most STEP_RECORDS
# records (the smallest step it replays) whatever this is.
DEFAULT_MIN_BATCH_SIZE = 2_000


ControllerConfigError = ConfigError  # the name callers of this module know


@dataclass(frozen=True)
class ControllerConfig:
    node_id: int
    voters: dict[int, Address]
    listener: Address
    log_dir: Path
    cluster_id: str = ""
    election_timeout_ms: int = DEFAULT_ELECTION_TIMEOUT_MS
    fetch_timeout_ms: int = DEFAULT_FETCH_TIMEOUT_MS
    election_backoff_max_ms: int = DEFAULT_ELECTION_BACKOFF_MAX_MS
    request_timeout_ms: int = 2000
    segment_bytes: int = 16 * 1024 * 1024
    snapshot_bytes: int = 20 * 1024 * 1024
    session_timeout_ms: int = 9000
    num_partitions: int = 1
    default_replication_factor: int = 1
    zk_migration_enabled: bool = False
    zk_connect: str = ""
    zk_session_timeout_ms: int = 18000
    zk_connection_timeout_ms: int = 18000
    zk_security: ZkSecurity = OPEN
    inter_broker_listener: str = ""  # the ZooKeeper brokers' listener for BrokerControl RPCs
    max_write_behind_records: int = DEFAULT_MAX_WRITE_BEHIND_RECORDS
    migration_batch_bytes: int = 1024 * 1024  # the copy's largest batch
    migration_min_batch_size: int = DEFAULT_MIN_BATCH_SIZE  # the copy's records a batch
    # The brokers' secret for password configs in ZooKeeper: never in a repr or a log.
    password_encoder_secret: str | None = field(default=None, repr=False)
    metrics: MetricsEndpoint | None = None  # metrics.port / metrics.host
    # the event loop's performance log (Kafka's names and defaults)
    performance_sample_period_ms: int = DEFAULT_SAMPLE_PERIOD_MS
    performance_always_log_threshold_ms: int = DEFAULT_ALWAYS_LOG_THRESHOLD_MS
    # gRPC over TLS (the controller listener's protocol is SSL): Raft, brokers, the CLI.
    tls: TlsSettings | None = None


def _grpc_tls(
    props: dict[str, str], listener: str, inter_broker: str, problems: list[str]
) -> TlsSettings | None:
    """TLS when ``listener.security.protocol.map`` maps the controller listener to SSL.
    The brokers' inter-broker listener (which the controller calls while migrating) must
    then be SSL too: a process's gRPC is TLS everywhere or nowhere."""
    protocols = parse_protocol_map(props.get("listener.security.protocol.map", ""), problems)
    mine = protocols.get(listener, "PLAINTEXT")
    if mine not in ("PLAINTEXT", "SSL"):
        problems.append(
            f"listener.security.protocol.map: the controller listener {listener} is {mine}; "
            "controllers speak gRPC over PLAINTEXT or SSL (mutual TLS with ssl.client.auth)"
        )
    if inter_broker and protocols.get(inter_broker, "PLAINTEXT") != mine:
        problems.append(
            f"listener.security.protocol.map: {listener} is {mine} but the brokers' "
            f"{inter_broker} is {protocols.get(inter_broker, 'PLAINTEXT')}: use SSL for both or "
            "neither"
        )
    if mine != "SSL":
        return None
    tls = tls_settings(props, listener, problems)
    if not (tls.certificate_chain and tls.private_key):
        problems.append(f"the SSL controller listener {listener} needs a key store: ssl.keystore.*")
    return tls


# The settings read alike, in the order their problems are reported: ControllerConfig
# field (its default is the setting's) and how it is read (Kafka's property names).
_SETTINGS: tuple[tuple[str, Reader], ...] = (
    ("election_backoff_max_ms", integer_setting("controller.quorum.election.backoff.max.ms", 1)),
    ("request_timeout_ms", integer_setting("controller.quorum.request.timeout.ms", 10)),
    ("segment_bytes", integer_setting("metadata.log.segment.bytes", 1024)),
    (
        "snapshot_bytes",
        integer_setting("metadata.log.max.record.bytes.between.snapshots", 1, INT64_MAX),
    ),
    ("session_timeout_ms", integer_setting("broker.session.timeout.ms", 100)),
    ("num_partitions", integer_setting("num.partitions", 1)),
    ("default_replication_factor", integer_setting("default.replication.factor", 1, 32767)),
    ("zk_session_timeout_ms", integer_setting("zookeeper.session.timeout.ms", 100)),
    ("zk_connection_timeout_ms", integer_setting("zookeeper.connection.timeout.ms", 100)),
    ("zk_security", lambda typed, _: zk_security(typed.props, typed.problems)),
    (
        "max_write_behind_records",
        integer_setting("zookeeper.metadata.migration.max.write.behind.records", 1),
    ),
    (
        "migration_batch_bytes",
        integer_setting("zookeeper.metadata.migration.batch.bytes", 1024, 8 * 1024 * 1024),
    ),
    ("migration_min_batch_size", integer_setting("zookeeper.metadata.migration.min.batch.size", 1)),
    ("metrics", lambda typed, _: metrics_endpoint(typed)),
    (
        "performance_sample_period_ms",
        integer_setting("controller.performance.sample.period.ms", 100),
    ),
    (
        "performance_always_log_threshold_ms",
        integer_setting("controller.performance.always.log.threshold.ms", 0),
    ),
)


def _voters(props: dict[str, str], node_id: int, problems: list[str]) -> dict[int, Address]:
    """controller.quorum.voters (required), which must name this node."""
    voters: dict[int, Address] = {}
    if "controller.quorum.voters" not in props:
        problems.append("controller.quorum.voters is required (id@host:port,...)")
    else:
        try:
            voters = parse_voters(props["controller.quorum.voters"])
        except ValueError as exc:
            problems.append(str(exc))
    if voters and node_id not in voters:
        problems.append(f"node.id {node_id} is not among controller.quorum.voters {sorted(voters)}")
    return voters


def _listener(
    props: dict[str, str], names: list[str], mine: Address | None, problems: list[str]
) -> Address:
    """The one listener of ``listeners`` that controller.listener.names names (its port
    that of this node's voter entry ``mine``); Address("", 0) when there is none."""
    entries = [e.strip() for e in props.get("listeners", "").split(",") if e.strip()]
    ours = [e for e in entries if e.partition("://")[0] in names]
    if len(ours) != 1:
        problems.append(
            f"listeners={shown(props.get('listeners', ''))} must hold exactly one listener "
            f"named in controller.listener.names ({', '.join(names)}), e.g. CONTROLLER://localhost:9093"
        )
        return Address("", 0)
    host, colon, port = ours[0].partition("://")[2].rpartition(":")
    bad_host = host_problem(host.strip("[]")) if host else None
    if not colon or not port.isdigit() or not 0 < int(port) < 65536:
        problems.append(f"listener {shown(ours[0])} has no valid port (1-65535)")
        return Address("", 0)
    if bad_host:
        problems.append(f"listener {shown(ours[0])}: {bad_host}")
        return Address("", 0)
    listener = Address(host.strip("[]") or "0.0.0.0", int(port))
    if mine is not None and mine.port != listener.port:
        problems.append(
            f"listener port {listener.port} differs from this node's voter entry {mine}"
        )
    return listener


def _zookeeper(props: dict[str, str], migration: bool, problems: list[str]) -> tuple[str, str]:
    """(zookeeper.connect, inter.broker.listener.name): both required by a migration."""
    zk_connect = props.get("zookeeper.connect", "").strip()
    inter_broker = props.get("inter.broker.listener.name", "").strip()
    if zk_connect:
        try:
            ConnectString.parse(zk_connect)
        except ValueError as exc:
            problems.append(f"zookeeper.connect: {exc}")
    if migration and not zk_connect:
        problems.append(
            "zookeeper.metadata.migration.enable=true needs zookeeper.connect (the "
            "ZooKeeper ensemble of the cluster being migrated, with its chroot)"
        )
    if migration and not inter_broker:
        problems.append(
            "zookeeper.metadata.migration.enable=true needs inter.broker.listener.name: the "
            "ZooKeeper brokers' listener the controller sends UpdateMetadata/LeaderAndIsr to"
        )
    return zk_connect, inter_broker


def parse_config(props: dict[str, str], source: str) -> ControllerConfig:
    """The controller's config from ``props`` (read from ``source``); ConfigError naming
    every problem at once. Unknown properties are warned of, not refused (Kafka's way)."""
    typed = TypedProperties(props)
    problems = typed.problems
    node_id = typed.integer("node.id", None)
    roles = {r.strip() for r in props.get("process.roles", "").split(",") if r.strip()}
    if roles != {"controller"}:
        problems.append(
            f"process.roles={shown(props.get('process.roles', ''))}: zk2kraft runs dedicated "
            "controllers (process.roles=controller)"
        )
    voters = _voters(props, node_id, problems)
    names = [n.strip() for n in props.get("controller.listener.names", "CONTROLLER").split(",")]
    listener = _listener(props, names, voters.get(node_id), problems)
    log_dir = props.get("metadata.log.dir") or props.get("log.dirs", "").split(",")[0].strip()
    if not log_dir:
        problems.append("metadata.log.dir (or log.dirs) is required")
    election = typed.integer(
        "controller.quorum.election.timeout.ms", DEFAULT_ELECTION_TIMEOUT_MS, 10
    )
    fetch = typed.integer("controller.quorum.fetch.timeout.ms", DEFAULT_FETCH_TIMEOUT_MS, 10)
    if fetch <= election // 2:
        problems.append(
            f"controller.quorum.fetch.timeout.ms={fetch} should exceed half the election timeout"
        )
    migration = typed.boolean("zookeeper.metadata.migration.enable", False)
    zk_connect, inter_broker = _zookeeper(props, migration, problems)
    config = ControllerConfig(
        node_id=node_id,
        voters=voters,
        listener=listener,
        log_dir=Path(log_dir),
        # Optional here: `storage format --cluster-id` records it in meta.properties.
        cluster_id=props.get("cluster.id", "").strip(),
        election_timeout_ms=election,
        fetch_timeout_ms=fetch,
        zk_migration_enabled=migration,
        zk_connect=zk_connect,
        inter_broker_listener=inter_broker,
        password_encoder_secret=props.get("password.encoder.secret") or None,
        **read_settings(typed, _SETTINGS, ControllerConfig),
        tls=_grpc_tls(props, names[0], inter_broker, problems),
    )
    typed.finish(source, KNOWN | {k for k in props if k.startswith("listener.name.")})
    return config


def load_config(path: Path) -> ControllerConfig:
    return parse_config(read_properties(path), str(path))
