"""What the rehearsal reads off the local cluster and the steps it ran, as report sections:
each builder returns a :class:`Measured` -- the section, the phase's ``detail`` (what it
found, in one line) and the problems it shows, each named as report.json's ``problems``
says it.

Contracts:

- :func:`records_by_type` reads a controller's metadata log read-only (nothing locked,
  cut or written, so a running controller's log may be read) and counts the records of
  the migration's copy: the transaction (BeginTransactionRecord to EndTransactionRecord,
  both counted) holding a ZkMigrationStateRecord. Empty when there is none yet.
- :func:`preflight_section` turns :mod:`migration.bridge.preflight` findings into the
  report's, each with a ``fix`` (:func:`~migration.bridge.preflight.fix_of`); each
  blocker is a problem, and so is a znode the copy would stop on.
- :func:`audit_section` reads ``zk2kraft audit --json``'s stdout; an audit that could not
  run (exit 2, or output that is not the report) is not ok, its error in ``summary``.
- A problem: an audit not ok, admin requests that failed under the workload, a failed
  rollback drill, Metadata that disagreed or partitions offline during the roll, a
  finalization that did not end in KRaft.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Generic, TypeVar

from migration.bridge.preflight import Finding as PreflightFinding
from migration.bridge.preflight import PreflightReport, fix_of
from migration.image.model import ZK_MIGRATION_MIGRATION
from migration.kafka_log.formats import open_log
from migration.records.kinds import kind_of, payload
from migration.rehearse.copy_log import CopyFigures
from migration.rehearse.procedure import AuditRun, RollFigures
from migration.rehearse.procedure_back import Drill
from migration.rehearse.report import (
    Audit,
    Copy,
    DualWrite,
    Finalized,
    Finding,
    Preflight,
    Roll,
    RollbackDrill,
)
from migration.rehearse.workload import AdminWorkload, LagSampler

T = TypeVar("T")


@dataclass(frozen=True)
class Measured(Generic[T]):
    """A report section, its phase's ``detail``, and the problems it shows."""

    section: T
    detail: str
    problems: tuple[str, ...] = ()


def records_by_type(log_dir: Path) -> dict[str, int]:
    """The copy's records by type in ``log_dir`` (see the module's contract)."""
    log = open_log(log_dir)
    try:
        current: Counter[str] | None = None
        copied = False
        for _, _, record in log.records():
            name = kind_of(record).type_name
            if name == "BeginTransactionRecord":
                current, copied = Counter(), False
            if current is None:
                continue
            current[name] += 1
            if name == "ZkMigrationStateRecord":
                state = getattr(payload(record), "zk_migration_state", None)
                copied = state == ZK_MIGRATION_MIGRATION
            if name == "EndTransactionRecord":
                if copied:
                    return dict(current.most_common())
                current = None
        return {}
    finally:
        log.close()


def _finding(f: PreflightFinding) -> Finding:
    return Finding(code=f.code, message=f.message, fix=fix_of(f), path=f.path)


def preflight_section(
    report: PreflightReport, records: int, copy_problem: str = ""
) -> Measured[Preflight]:
    """The preflight's findings, and the controllers' translation of the tree in memory:
    ``records`` it makes, or ``copy_problem`` (the znode the copy would stop on)."""
    detail = f"{len(report.blockers)} blocker(s), {len(report.warnings)} warning(s)"
    if not copy_problem:
        detail += f"; the tree translates into {records:,} records"
    problems = [f"preflight blocker {f.code}: {f.message}" for f in report.blockers]
    if copy_problem:
        problems.append(f"the copy would stop: {copy_problem}")
    section = Preflight(
        ok=report.ready,
        blockers=tuple(_finding(f) for f in report.blockers),
        warnings=tuple(_finding(f) for f in report.warnings),
    )
    return Measured(section, detail, tuple(problems))


def audit_section(run: AuditRun) -> Measured[Audit]:
    """The audit's section from its run (see the module's contract)."""
    audit = _audit(run)
    return Measured(audit, audit.summary, () if audit.ok else (f"audit: {audit.summary}",))


def _audit(run: AuditRun) -> Audit:
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


def copy_section(figures: CopyFigures, log_dir: Path | None, started: datetime) -> Measured[Copy]:
    """The copy as the controller that made it logged it (``figures``), its records by type
    from that controller's ``log_dir``; the pause's start in seconds since ``started``."""
    paused = figures.paused_at
    copy = Copy(
        records=figures.records,
        records_by_type=records_by_type(log_dir) if log_dir is not None else {},
        copy_ms=figures.copy_ms,
        write_pause_ms=figures.write_pause_ms,
        pause_started_s=(paused - started).total_seconds() if paused is not None else None,
    )
    detail = (
        f"{copy.records:,} records copied in {copy.copy_ms:.0f} ms, metadata writes paused "
        f"{copy.write_pause_ms:.0f} ms"
    )
    return Measured(copy, detail)


def dual_write_section(load: AdminWorkload, sampler: LagSampler) -> Measured[DualWrite]:
    """The workload as it went, the lag as sampled beside it (their series as recorded)."""
    section = DualWrite(
        changes=load.changes,
        by_kind=dict(load.by_kind),
        errors=load.errors,
        max_lag=sampler.max_lag,
        lag=tuple(sampler.samples),
        latency_ms=tuple(load.latency_ms),
    )
    detail = (
        f"{load.changes:,} metadata changes ({load.rounds} rounds of {len(load.by_kind)} "
        f"kinds), {load.errors} error(s); write-behind lag at most {sampler.max_lag}"
    )
    problems: tuple[str, ...] = ()
    if load.errors:
        problems = (
            f"dual-write: {load.errors} of {load.changes} admin request(s) failed: "
            + "; ".join(load.problems[:3]),
        )
    return Measured(section, detail, problems)


def drill_section(drill: Drill) -> Measured[RollbackDrill]:
    """The rollback drill from MigrationActive: what it wrote, or which checks failed."""
    if drill.ok:
        detail = f"back to ZooKeeper from MigrationActive in {drill.seconds:.1f} s: " + (
            ", ".join(drill.written) or "nothing written"
        )
        if drill.zk_controller is not None:
            detail += f"; broker {drill.zk_controller} elected ZooKeeper controller"
    else:
        failed = [f.code for f in drill.findings if not f.ok]
        detail = f"refused or failed: {', '.join(failed) or 'no finding'}"
    section = RollbackDrill(
        ok=drill.ok,
        seconds=drill.seconds,
        from_state="MigrationActive",
        findings=tuple(drill.findings),
        detail=detail,
    )
    return Measured(section, detail, () if drill.ok else (f"rollback drill: {detail}",))


def roll_section(roll: RollFigures) -> Measured[Roll]:
    """The roll into KRaft mode: the brokers in the order rolled, Metadata through both
    kinds of broker, partitions offline."""
    section = Roll(
        seconds=roll.seconds,
        brokers=tuple(r.broker for r in roll.restarts),
        offline_partitions=len(roll.offline),
        metadata_agreed=roll.agreed,
    )
    detail = (
        f"every broker in KRaft mode: MigrationFinished; {roll.comparisons} Metadata "
        f"comparisons, {len(roll.offline)} partition(s) seen offline"
    )
    problems = []
    if not roll.agreed:
        problems.append("roll: Metadata through the two kinds of broker disagreed")
    if roll.offline:
        problems.append(
            f"roll: {len(roll.offline)} partition(s) offline during the roll "
            f"({', '.join(sorted(roll.offline)[:5])})"
        )
    return Measured(section, detail, tuple(problems))


def finalized_section(state: str, seconds: float) -> Measured[Finalized]:
    """Finalization: the cluster's state once the controllers restarted without the flag."""
    ok = state == "KRaft"
    return Measured(
        Finalized(ok=ok, seconds=seconds, state=state),
        f"controllers restarted without the flag: {state}",
        () if ok else (f"finalization ended in {state}, not KRaft",),
    )
