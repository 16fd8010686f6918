"""What the rehearsal reads off the local cluster and the tools it ran, as report sections:
the copy's records by type from the controller's metadata log, the preflight's findings
with what to do about each, the audit's ``--json`` answer.

Contracts:

- :func:`records_by_type` reads a controller's metadata log read-only (nothing locked,
  cut or written, so a running controller's log may be read) and counts the records of
  the migration's copy: the transaction (BeginTransactionRecord to EndTransactionRecord,
  both counted) holding a ZkMigrationStateRecord. Empty when there is none yet.
- :func:`preflight_section` turns :mod:`migration.bridge.preflight` findings into the
  report's, each with a ``fix`` (:data:`FIXES`, else the finding's own words, which name
  the fix).
- :func:`audit_section` reads ``zk2kraft audit --json``'s stdout; an audit that could not
  run (exit 2, or output that is not the report) is not ok, its error in ``summary``.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from migration.bridge.preflight import Finding as PreflightFinding
from migration.bridge.preflight import PreflightReport
from migration.kafka_log.formats import open_log
from migration.records.kinds import kind_of
from migration.rehearse.procedure import AuditRun
from migration.rehearse.report import Audit, Finding, Preflight

FIXES = {
    "NO_KAFKA_CLUSTER": "check zookeeper.connect's chroot: it must be the brokers' own",
    "CLUSTER_ID_MISSING": "start one Kafka broker against this ZooKeeper so it writes /cluster/id",
    "MALFORMED_ZNODE": "repair or delete the znode (Kafka's own tools rewrite most of them)",
    "NO_REGISTERED_BROKERS": "start the brokers: the migration needs every broker running",
    "BROKER_NOT_MIGRATION_CAPABLE": "upgrade the broker to Kafka 3.4 or later and set "
    "inter.broker.protocol.version to 3.4 or later",
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


def records_by_type(log_dir: Path) -> dict[str, int]:
    """The copy's records by type in ``log_dir`` (see the module's contract)."""
    log = open_log(log_dir)
    try:
        current: Counter[str] | None = None
        for _, _, record in log.records():
            name = kind_of(record).type_name
            if name == "BeginTransactionRecord":
                current = Counter()
            if current is None:
                continue
            current[name] += 1
            if name == "EndTransactionRecord":
                if current["ZkMigrationStateRecord"]:
                    return dict(current.most_common())
                current = None
        return {}
    finally:
        log.close()


def _finding(f: PreflightFinding) -> Finding:
    return Finding(code=f.code, message=f.message, fix=FIXES.get(f.code, f.message), path=f.path)


def preflight_section(report: PreflightReport) -> Preflight:
    return Preflight(
        ok=report.ready,
        blockers=tuple(_finding(f) for f in report.blockers),
        warnings=tuple(_finding(f) for f in report.warnings),
    )


def audit_section(run: AuditRun) -> Audit:
    """The audit's section from its run (see the module's contract)."""
    try:
        answer: Any = json.loads(run.stdout) if run.stdout.strip() else None
    except ValueError:
        answer = None
    if not isinstance(answer, dict) or "consistent" not in answer:
        error = answer.get("error", {}) if isinstance(answer, dict) else {}
        words = error.get("message") if isinstance(error, dict) else None
        last = (run.stderr.strip().splitlines() or ["no output"])[-1]
        return Audit(
            ok=False,
            seconds=run.seconds,
            exit_code=run.exit_code,
            differences=0,
            summary=f"the audit could not run: {words or last}"[:500],
        )
    by_kind = answer.get("differences", {})
    differences = sum(by_kind.values()) if isinstance(by_kind, dict) else int(by_kind or 0)
    rows = answer.get("rows", {})
    compared = rows.get("zookeeper") if isinstance(rows, dict) else None
    summary = (
        f"{'consistent' if answer['consistent'] else f'{differences:,} difference(s)'}: "
        f"ZooKeeper against the metadata log at offset {answer.get('offset')}"
        + (f" ({compared:,} ZooKeeper entities compared)" if isinstance(compared, int) else "")
    )
    return Audit(
        ok=bool(answer["consistent"]) and run.exit_code == 0,
        seconds=run.seconds,
        exit_code=run.exit_code,
        differences=differences,
        summary=summary,
    )
