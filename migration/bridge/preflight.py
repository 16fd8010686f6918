"""Is this ZooKeeper-based Kafka cluster ready to migrate? Checks on one snapshot.

Each check reads the :class:`ZkSnapshot` only (no live ZooKeeper), and yields findings
with a stable UPPER_SNAKE ``code``, the znode concerned and a message an operator can
act on. Blockers stop the migration; warnings say what the migration will do that the
operator may not expect. The ladder runs every check and reports all findings.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from google.protobuf import json_format

from migration.bridge.translate import CopyError
from migration.common.text import PATH_LIMIT, printable_line, shown
from migration.proto import preflight_pb2
from migration.records import versions
from migration.records.versions import IBP_3_4_IV0 as MIGRATION_METADATA_VERSION
from migration.records.versions import METADATA_VERSION
from migration.zk import paths
from migration.zk.model.brokers import RESERVED_BROKER_MAX_ID, BrokerRegistration
from migration.zk.tree_read import ZkSnapshot

MAX_FINDINGS_PER_CODE = 200
ASSUMED_COPY_RECORDS_PER_S = 100_000.0
"""A conservative translate-and-commit rate for the estimate: the dry run measured
~270k records/s translating and appending with an fsync per batch on one node; a
quorum's commits cost more. ``zk2kraft migrate --dry-run`` measures the operator's own."""

Severity = Literal["blocker", "warning"]

NO_REGISTERED_BROKERS = "NO_REGISTERED_BROKERS"
UNREGISTERED_BROKER = "UNREGISTERED_BROKER"
REGISTRATION_FINDINGS = frozenset({NO_REGISTERED_BROKERS, UNREGISTERED_BROKER})
"""The findings about brokers not registered now (a copy of a stopped cluster has none)."""
BROKER_MIGRATION_NOT_ENABLED = "BROKER_MIGRATION_NOT_ENABLED"
COPY_BLOCKERS = frozenset(
    {"NO_KAFKA_CLUSTER", "CLUSTER_ID_MISSING", "MALFORMED_ZNODE", "TOPIC_ID_MISSING"}
)
"""The blockers about the data itself: what the copy cannot take (the dry run and the
live copy refuse a tree with any of them, with these codes: :func:`refuse_uncopyable`).
The other blockers are about the cluster as it runs (brokers down or too old, partitions
offline, a reassignment under way, a migration left over): they stop the live migration,
not a copy of the data."""

MIGRATION_IBP = "3.9"
BROKER_MIGRATION_SETTINGS: tuple[tuple[str, str], ...] = (
    ("zookeeper.metadata.migration.enable", "true"),
    (
        "controller.quorum.voters",
        "the KRaft controllers as id@host:port,... (or controller.quorum.bootstrap.servers)",
    ),
    (
        "controller.listener.names",
        "the controllers' listener (CONTROLLER), mapped in listener.security.protocol.map",
    ),
    (
        "inter.broker.protocol.version",
        f"{MIGRATION_IBP} (on Kafka 3.9.1 or later; Kafka's migration needs at least 3.4)",
    ),
)
"""What step 3 (runbooks/migration.md, "Enable the migration on the brokers") sets in
each ZooKeeper-mode broker's ``server.properties`` before its restart: the one list the
preflight's fix and the rehearsal's report both give."""


def settings_text() -> str:
    """:data:`BROKER_MIGRATION_SETTINGS` as one line: ``name=value; ...``."""
    return "; ".join(f"{name}={value}" for name, value in BROKER_MIGRATION_SETTINGS)


FIXES: dict[str, str] = {
    "NO_KAFKA_CLUSTER": "check zookeeper.connect's chroot: it must be the brokers' own",
    "CLUSTER_ID_MISSING": "start one Kafka broker against this ZooKeeper so it writes /cluster/id",
    "MALFORMED_ZNODE": "repair or delete the znode (Kafka's own tools rewrite most of them)",
    "NO_REGISTERED_BROKERS": "start the brokers: the migration needs every broker running",
    "BROKER_NOT_MIGRATION_CAPABLE": "upgrade the brokers to Kafka 3.9.1 or later (a rolling "
    f"upgrade), then raise inter.broker.protocol.version to {MIGRATION_IBP} and roll them "
    "again; Kafka migrates nothing below 3.4",
    BROKER_MIGRATION_NOT_ENABLED: "nothing before starting: this is step 3 of "
    "runbooks/migration.md. Once the controllers run, restart each broker with " + settings_text(),
    "GENERATED_BROKER_ID": "give each broker a fixed broker.id (at most reserved.broker.max.id)",
    "OFFLINE_PARTITION": "bring the partition's replicas back, or delete the topic",
    "UNREGISTERED_BROKER": "start the broker, or reassign its replicas away from it",
    "UNDER_REPLICATED_PARTITIONS": "let the followers catch up before migrating",
    "TOPIC_ID_MISSING": "let a Kafka 2.8+ controller assign topic ids (restart the controller)",
    "REASSIGNMENT_IN_PROGRESS": "let the reassignment finish, or cancel it "
    "(kafka-reassign-partitions --cancel)",
    "MIGRATION_ALREADY_ACTIVE": "a migration is under way: follow runbooks/migration.md from "
    "where `zk2kraft migration status` says it is",
    "STALE_MIGRATION_ZNODE": "delete /migration (and /controller) as runbooks/rollback.md says",
    "PENDING_TOPIC_DELETION": "nothing: the migration completes the deletion",
    "LEGACY_CONSUMER_OFFSETS": "move the consumer groups' offsets to Kafka "
    "(offsets.storage=kafka) first, or accept they are not migrated",
}
"""What an operator does about each finding, by its code (every code has one)."""


@dataclass(frozen=True, slots=True)
class Finding:
    """One blocker or warning. Its text is printed and put in JSON as is, so it is made
    safe here: ``path`` (a znode's, from ZooKeeper) as :func:`.text.shown` quotes a path
    (plain when plain, else escaped and cut), ``message`` bounded and its control
    characters escaped (:func:`.text.printable_line`, the backstop: its input is quoted
    through ``shown`` where it is built)."""

    severity: Severity
    code: str
    message: str
    path: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "message", printable_line(self.message))
        if self.path is not None:
            object.__setattr__(self, "path", shown(self.path, PATH_LIMIT, bare=True))


@dataclass(frozen=True)
class PreflightReport:
    blockers: tuple[Finding, ...]
    warnings: tuple[Finding, ...]
    estimate: dict[str, Any] = field(default_factory=dict)

    @property
    def ready(self) -> bool:
        return not self.blockers

    def to_proto(self) -> preflight_pb2.PreflightReport:
        def finding(f: Finding) -> preflight_pb2.Finding:
            return preflight_pb2.Finding(code=f.code, message=f.message, path=f.path)

        return preflight_pb2.PreflightReport(
            ready=self.ready,
            blockers=[finding(f) for f in self.blockers],
            warnings=[finding(f) for f in self.warnings],
            estimate=preflight_pb2.Estimate(**self.estimate),
        )

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` contract, as defined by proto/migration/proto/preflight.proto."""
        return json_format.MessageToDict(
            self.to_proto(),
            preserving_proto_field_name=True,
            always_print_fields_with_no_presence=True,
        )


def fix_of(finding: Finding) -> str:
    """What to do about ``finding`` (:data:`FIXES`)."""
    return FIXES.get(finding.code, finding.message)


def _blocker(code: str, message: str, path: str | None = None) -> Finding:
    return Finding("blocker", code, message, path)


def _warning(code: str, message: str, path: str | None = None) -> Finding:
    return Finding("warning", code, message, path)


Check = Callable[[ZkSnapshot], Iterator[Finding]]


def check_cluster_present(s: ZkSnapshot) -> Iterator[Finding]:
    if s.cluster_id is None and not s.brokers and not s.topics:
        where = s.chroot or "/"
        yield _blocker(
            "NO_KAFKA_CLUSTER",
            f"no Kafka cluster under {where}: no /cluster/id, brokers or topics "
            "(is zookeeper.connect's chroot right?)",
            paths.CLUSTER_ID,
        )
    elif s.cluster_id is None:
        yield _blocker(
            "CLUSTER_ID_MISSING",
            "the cluster has no id; start a Kafka broker once so it writes /cluster/id",
            paths.CLUSTER_ID,
        )


def check_malformed(s: ZkSnapshot) -> Iterator[Finding]:
    for err in s.malformed:
        yield _blocker("MALFORMED_ZNODE", err.problem, err.path)


FEATURES_REGISTRATION = 5
"""The ``/brokers/ids/<id>`` version that carries ``features``: Kafka writes it from
inter.broker.protocol.version 2.7 on, and version 4 below."""


def migration_flag_missing(broker: BrokerRegistration) -> bool:
    """Registered by a broker able to migrate once configured for it, with nothing in
    ZooKeeper showing the migration flag: a version-5 registration with no
    ``metadata.version`` feature. Before step 3 that is every broker. After it, only
    zk2kraft's own brokers show the flag there: Apache Kafka 3.9's brokers write
    ``"features":{}`` with the flag set too (seen on real 3.9.2), and tell only the KRaft
    controllers, in their registration (``isMigratingZkBroker``, which ``migration status
    --kafka`` shows). Kafka, not the registration, knows whether the broker runs 3.4 or
    later: step 3's settings say what it needs."""
    return broker.version >= FEATURES_REGISTRATION and METADATA_VERSION not in broker.features


def check_brokers(s: ZkSnapshot) -> Iterator[Finding]:
    """Blockers: no broker registered; a broker too old to migrate (a registration
    before version 5, i.e. inter.broker.protocol.version below 2.7, or a
    ``metadata.version`` range below 3.4-IV0); a generated broker id. A broker merely
    without the migration flag is a warning (:func:`migration_flag_missing`): setting it
    is the procedure's own step 3, done after the preflight."""
    if not s.brokers and (s.topics or s.cluster_id):
        yield _blocker(
            NO_REGISTERED_BROKERS,
            "no broker is registered in /brokers/ids; the brokers must be running when the "
            "migration starts",
            paths.BROKER_IDS,
        )
    for bid, broker in sorted(s.brokers.items()):
        path = paths.broker(bid)
        mv = broker.features.get(METADATA_VERSION)
        if broker.version < FEATURES_REGISTRATION:
            yield _blocker(
                "BROKER_NOT_MIGRATION_CAPABLE",
                f"broker {bid} registered with registration v{broker.version}, which Kafka "
                "writes below inter.broker.protocol.version 2.7: it must run Kafka 3.4 or "
                f"later with inter.broker.protocol.version {MIGRATION_IBP} to migrate",
                path,
            )
        elif mv is not None and mv.max_version < MIGRATION_METADATA_VERSION:
            yield _blocker(
                "BROKER_NOT_MIGRATION_CAPABLE",
                f"broker {bid} supports metadata.version up to {versions.name(mv.max_version)}"
                f", below {versions.name(MIGRATION_METADATA_VERSION)}: its "
                "inter.broker.protocol.version is too old to migrate",
                path,
            )
        elif migration_flag_missing(broker):
            yield _warning(
                BROKER_MIGRATION_NOT_ENABLED,
                f"broker {bid}'s registration shows no migration flag (no metadata.version "
                "in its features): step 3 restarts it with the migration settings (an Apache "
                "Kafka broker never shows the flag in ZooKeeper; `zk2kraft migration status "
                "--kafka` reads it from the KRaft controllers)",
                path,
            )
        if bid > RESERVED_BROKER_MAX_ID:
            yield _blocker(
                "GENERATED_BROKER_ID",
                f"broker id {bid} is above reserved.broker.max.id ({RESERVED_BROKER_MAX_ID}): "
                "it was generated; KRaft needs a fixed broker.id in each broker's config",
                path,
            )


def check_partitions(s: ZkSnapshot) -> Iterator[Finding]:
    registered = set(s.brokers)
    missing_refs: dict[int, list[str]] = defaultdict(list)
    offline: list[Finding] = []
    under_replicated = 0
    for name, topic in s.topics.items():
        if name in s.pending_deletions:
            continue
        for pid, replicas in topic.assignment.partitions.items():
            for b in replicas:
                if b not in registered:
                    missing_refs[b].append(f"{name}-{pid}")
            part = topic.partitions.get(pid)
            state = part.state if part else None
            if state is None:
                continue
            if state.leader == -1:
                offline.append(
                    _blocker(
                        "OFFLINE_PARTITION",
                        f"partition {name}-{pid} has no leader (ISR {list(state.isr)})",
                        paths.partition_state(name, pid),
                    )
                )
            elif state.leader not in registered:
                missing_refs[state.leader].append(f"{name}-{pid} (leader)")
            if len(state.isr) < len(replicas):
                under_replicated += 1
    for b, refs in sorted(missing_refs.items()):
        sample = ", ".join(refs[:3]) + (f" and {len(refs) - 3} more" if len(refs) > 3 else "")
        yield _blocker(
            UNREGISTERED_BROKER,
            f"broker {b} is named by {len(refs)} partition(s) ({sample}) but is not registered; "
            "start it (offline brokers block the migration) or reassign its replicas",
            paths.broker(b),
        )
    yield from offline
    if under_replicated:
        yield _warning(
            "UNDER_REPLICATED_PARTITIONS",
            f"{under_replicated} partition(s) have an ISR smaller than their replica set; "
            "they migrate as they are",
        )


def check_topic_ids(s: ZkSnapshot) -> Iterator[Finding]:
    for name, topic in s.topics.items():
        if topic.assignment.topic_id is None and name not in s.pending_deletions:
            yield _blocker(
                "TOPIC_ID_MISSING",
                f"topic {name} has no topic_id; a controller on inter.broker.protocol.version "
                ">= 2.8 assigns one at start-up",
                paths.topic(name),
            )


def check_reassignments(s: ZkSnapshot) -> Iterator[Finding]:
    if s.reassignment:
        yield _blocker(
            "REASSIGNMENT_IN_PROGRESS",
            f"{len(s.reassignment)} partition reassignment(s) pending in "
            f"{paths.REASSIGN_PARTITIONS}; let them finish or cancel them first",
            paths.REASSIGN_PARTITIONS,
        )
    for name, topic in s.topics.items():
        moving = sorted(set(topic.assignment.adding) | set(topic.assignment.removing))
        if moving:
            yield _blocker(
                "REASSIGNMENT_IN_PROGRESS",
                f"topic {name} partitions {moving} are being reassigned (adding/removing "
                "replicas); let the reassignment finish first",
                paths.topic(name),
            )


def check_migration_state(s: ZkSnapshot) -> Iterator[Finding]:
    if s.migration is None:
        return
    m = s.migration.value
    if s.controller is not None and s.controller.is_kraft:
        yield _warning(
            "MIGRATION_ALREADY_ACTIVE",
            f"KRaft controller {s.controller.broker_id} (epoch "
            f"{s.controller.kraft_controller_epoch}) already controls the cluster; "
            f"/migration is at offset {m.kraft_metadata_offset}",
            paths.MIGRATION,
        )
    elif m.copy_done:
        yield _blocker(
            "STALE_MIGRATION_ZNODE",
            f"/migration is left over from an earlier migration (offset {m.kraft_metadata_offset})"
            "; a new migration would skip the ZooKeeper-to-KRaft copy and overwrite ZooKeeper. "
            "Delete /migration (and /controller) as the rollback runbook says",
            paths.MIGRATION,
        )


def check_pending_deletions(s: ZkSnapshot) -> Iterator[Finding]:
    for name in sorted(s.pending_deletions):
        yield _warning(
            "PENDING_TOPIC_DELETION",
            f"topic {name} is being deleted: the migration completes the deletion and does "
            "not copy it",
            paths.delete_topic(name),
        )


def check_legacy_offsets(s: ZkSnapshot) -> Iterator[Finding]:
    per_group = Counter(o.group for o in s.legacy_offsets)
    for group, count in sorted(per_group.items()):
        yield _warning(
            "LEGACY_CONSUMER_OFFSETS",
            f"consumer group {group} keeps {count} offset(s) in ZooKeeper; they are not "
            "metadata and are lost when ZooKeeper is retired (export them with "
            "'zk2kraft zk export-offsets')",
            paths.consumer_group(group),
        )


CHECKS: tuple[Check, ...] = (
    check_cluster_present,
    check_malformed,
    check_brokers,
    check_partitions,
    check_topic_ids,
    check_reassignments,
    check_migration_state,
    check_pending_deletions,
    check_legacy_offsets,
)


def estimate(s: ZkSnapshot, read_seconds: float) -> dict[str, Any]:
    """Records the copy will write, by type, and how long the copy will hold."""
    live = {n: t for n, t in s.topics.items() if n not in s.pending_deletions}
    records = {
        "TopicRecord": len(live),
        "PartitionRecord": sum(len(t.assignment.partitions) for t in live.values()),
        "ConfigRecord": sum(len(c) for n, c in s.topic_configs.items() if n in live)
        + sum(len(c) for c in s.broker_configs.values()),
        "ClientQuotaRecord": sum(len(v) for v in s.quotas.values()),
        "UserScramCredentialRecord": sum(len(c) for c in s.scram.values()),
        "AccessControlEntryRecord": sum(len(r.entries) for r in s.acls),
        "DelegationTokenRecord": len(s.delegation_tokens),
        "ProducerIdsRecord": int(s.producer_id_block is not None),
        "FeatureLevelRecord": 1,
        "ZkMigrationStateRecord": 1,
        "BeginTransactionRecord": 1,
        "EndTransactionRecord": 1,
    }
    total = sum(records.values())
    return {
        "records": records,
        "total_records": total,
        "znodes_read": s.znodes_read,
        "read_seconds": round(read_seconds, 3),
        "expected_copy_seconds": round(read_seconds + total / ASSUMED_COPY_RECORDS_PER_S, 3),
    }


class CopyRefusedError(CopyError):
    """The copy refuses the tree: the preflight finds blockers in :data:`COPY_BLOCKERS`
    (``findings``, each with its code and znode). ``path``/``problem`` are the first's;
    ``str()`` names it with its code and counts the others by code."""

    def __init__(self, findings: tuple[Finding, ...]) -> None:
        first = findings[0]
        others = Counter(f.code for f in findings[1:])
        more = ", ".join(f"{n} {code}" for code, n in sorted(others.items()))
        tail = f" (and {more}: run zk2kraft preflight for all of them)" if more else ""
        super().__init__(first.path or "/", f"{first.code}: {first.message}{tail}")
        self.findings = findings


COPY_CHECKS: tuple[Check, ...] = (check_cluster_present, check_malformed, check_topic_ids)
"""The checks that can yield :data:`COPY_BLOCKERS` (the copy runs only these)."""


def copy_blockers(s: ZkSnapshot) -> tuple[Finding, ...]:
    """The preflight's blockers in :data:`COPY_BLOCKERS`, from the preflight's checks."""
    return tuple(
        f for f in _findings(s, COPY_CHECKS) if f.severity == "blocker" and f.code in COPY_BLOCKERS
    )


def refuse_uncopyable(s: ZkSnapshot) -> None:
    """Raise :class:`CopyRefusedError` when the preflight finds a blocker the copy cannot
    take (:data:`COPY_BLOCKERS`): the copies refuse exactly what the preflight reports."""
    found = copy_blockers(s)
    if found:
        raise CopyRefusedError(found)


def run_preflight(s: ZkSnapshot, read_seconds: float = 0.0) -> PreflightReport:
    """Every check of :data:`CHECKS` on ``s``: blockers, warnings and the estimate. At
    most :data:`MAX_FINDINGS_PER_CODE` findings of one code are listed, one more saying
    how many are not."""
    findings = _findings(s, CHECKS)
    return PreflightReport(
        blockers=tuple(f for f in findings if f.severity == "blocker"),
        warnings=tuple(f for f in findings if f.severity == "warning"),
        estimate=estimate(s, read_seconds),
    )


def _findings(s: ZkSnapshot, checks: tuple[Check, ...]) -> list[Finding]:
    findings: list[Finding] = []
    for check in checks:
        per_code: Counter[str] = Counter()
        for finding in check(s):
            per_code[finding.code] += 1
            if per_code[finding.code] <= MAX_FINDINGS_PER_CODE:
                findings.append(finding)
        for code, count in per_code.items():
            if count > MAX_FINDINGS_PER_CODE:
                severity = next(f.severity for f in findings if f.code == code)
                findings.append(
                    Finding(severity, code, f"{count - MAX_FINDINGS_PER_CODE} more not listed")
                )
    return findings
