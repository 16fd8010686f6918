"""The way back to ZooKeeper, checked: where the migration is, what the operator must do
from there (the rollback table's row as numbered steps), the checks that must pass
before ZooKeeper is touched, and the one write that hands the cluster back.

Contract:

- :func:`assess` reads ``/controller``, ``/controller_epoch``, ``/migration`` and every
  partition state from ZooKeeper, and, when given, the quorum's ``migration status``
  and the metadata logs of controllers; it writes nothing. Each check is a
  :class:`Finding` with a stable ``code``; any failed one blocks the write. A malformed
  ``/controller``, ``/controller_epoch`` or ``/migration`` (bad JSON, or JSON beyond the
  bounds of :mod:`migration.common.json_input`) raises ``ZnodeFormatError`` naming it:
  without them the phase cannot be told.
- The write (:func:`hand_back`) is ONE multi, every op version-checked against what
  :func:`assess` read: delete ``/controller`` and ``/migration``, and raise
  ``/controller_epoch`` to at least every partition state's controller epoch, so the
  ZooKeeper controller elected next (its epoch one above) is obeyed by every broker
  and may rewrite every partition state. Anything changed meanwhile fails the multi
  and nothing is written.
- The write-behind lag counts the records after ``/migration``'s offset, up to the end
  of the most advanced log's image, that ZooKeeper must hold: control records (leader
  changes, voter and ``kraft.version`` records) and Kafka's idle NoOpRecords are never
  written to ZooKeeper, so a new leader's LeaderChange and NoOps, written while the
  controllers were stopped one by one, are no lag.
- Finalized (POST_MIGRATION) is refused outright: ZooKeeper stopped being written then,
  and handing it back would lose every change since.
"""

from __future__ import annotations

import time
from contextlib import closing
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from kazoo.exceptions import NoNodeError

from migration.image.log_check import check_log
from migration.image.model import ZK_MIGRATION_POST, MetadataImage
from migration.kafka_log.formats import open_log
from migration.records.kinds import kind_of
from migration.zk import paths
from migration.zk.client import ZkClient
from migration.zk.model.cluster import (
    ControllerZnode,
    MigrationZnode,
    parse_controller,
    parse_controller_epoch,
    parse_migration,
    render_controller_epoch,
)
from migration.zk.multiwrite import Op, check, delete, set_data
from migration.zk.reader import read_snapshot

SETTLE_S = 3.0  # how long /migration must stay still: longer than the driver's poll backoff


class Phase(StrEnum):
    """The rollback table's rows."""

    ZOOKEEPER = "ZooKeeper"  # no KRaft claim, no /migration: nothing to hand back
    MIGRATION_ACTIVE = "MigrationActive"  # dual-writing, every broker in ZooKeeper mode
    KRAFT_BROKERS = "KRaftBrokers"  # some or all brokers in KRaft mode (MigrationFinished)
    FINALIZED = "Finalized"  # POST_MIGRATION: no way back


@dataclass(frozen=True)
class Finding:
    code: str
    ok: bool
    message: str


@dataclass
class Assessment:
    phase: Phase
    controller: tuple[ControllerZnode, int] | None  # /controller and its version
    migration: tuple[MigrationZnode, int] | None
    controller_epoch: tuple[int, int] | None  # value, version
    max_state_epoch: int  # the highest controller epoch in a partition state (-1: none)
    findings: list[Finding] = field(default_factory=list)
    log_offset: int | None = None  # the end of the most advanced log's image

    @property
    def blocked(self) -> list[Finding]:
        return [f for f in self.findings if not f.ok]

    @property
    def kraft_controller_epoch(self) -> int:
        """The KRaft controller's epoch as ZooKeeper holds it (``/controller``'s claim, or
        ``/migration``'s); -1 when neither says."""
        epochs = [-1]
        claim = self.controller[0].kraft_controller_epoch if self.controller else None
        if claim is not None:
            epochs.append(claim)
        if self.migration is not None:
            epochs.append(self.migration[0].kraft_controller_epoch)
        return max(epochs)

    @property
    def new_controller_epoch(self) -> int:
        """What ``/controller_epoch`` is raised to: at least every partition state's
        controller epoch and the KRaft controller's epoch (Kafka's documented check),
        so the ZooKeeper controller elected next, one above it, wins everywhere."""
        current = self.controller_epoch[0] if self.controller_epoch else 0
        return max(current, self.max_state_epoch, self.kraft_controller_epoch)

    def ops(self) -> list[Op]:
        """The one multi that hands ZooKeeper back (empty when there is nothing to do:
        no migration started, or finalized)."""
        if self.phase in (Phase.ZOOKEEPER, Phase.FINALIZED):
            return []
        out: list[Op] = []
        if self.controller_epoch is not None:
            value, version = self.controller_epoch
            new = self.new_controller_epoch
            out.append(
                set_data(paths.CONTROLLER_EPOCH, render_controller_epoch(new), version)
                if new != value
                else check(paths.CONTROLLER_EPOCH, version)
            )
        if self.controller is not None and self.controller[0].is_kraft:
            out.append(delete(paths.CONTROLLER, self.controller[1]))
        if self.migration is not None:
            out.append(delete(paths.MIGRATION, self.migration[1]))
        return out


def _read(client: ZkClient, path: str) -> tuple[bytes, int] | None:
    try:
        return client.get(path)
    except NoNodeError:
        return None


def _status_findings(status: dict[str, Any] | None, reach: str | None) -> list[Finding]:
    if status is None:
        if reach is None:
            return []  # not asked: /migration standing still is the evidence
        return [
            Finding("kraft-controller-inactive", True, f"no KRaft controller answered ({reach})")
        ]
    if status["active_controller"] >= 0 and status["zk_migration_state"] != "POST_MIGRATION":
        return [
            Finding(
                "kraft-controller-active",
                False,
                f"KRaft controller {status['active_controller']} is active "
                f"({status['driver_phase']}): stop every controller first, or it claims "
                "ZooKeeper back",
            )
        ]
    return [Finding("kraft-controller-inactive", True, "the quorum has no active controller")]


def assess(
    client: ZkClient,
    *,
    status: dict[str, Any] | None = None,
    status_problem: str | None = None,
    log_dirs: tuple[Path, ...] = (),
    settle_s: float = SETTLE_S,
) -> Assessment:
    """Where the migration is and whether ZooKeeper may be handed back. ``status`` is
    ``migration status --json`` when a controller answered (``status_problem`` says
    why not)."""
    raw = _read(client, paths.CONTROLLER)
    controller = (parse_controller(paths.CONTROLLER, raw[0]), raw[1]) if raw else None
    raw = _read(client, paths.MIGRATION)
    migration = (parse_migration(paths.MIGRATION, raw[0]), raw[1]) if raw else None
    raw = _read(client, paths.CONTROLLER_EPOCH)
    epoch = (parse_controller_epoch(paths.CONTROLLER_EPOCH, raw[0]), raw[1]) if raw else None
    snap = read_snapshot(client, parts=frozenset({"topics"}))
    states = [
        p.state.controller_epoch
        for t in snap.topics.values()
        for p in t.partitions.values()
        if p.state is not None
    ]
    kraft_owned = controller is not None and controller[0].is_kraft
    findings = _status_findings(status, status_problem)
    if migration is not None and settle_s > 0:
        findings.append(_settled(client, migration[1], settle_s))
    newest, image, log_offset, log_findings = _newest_log(log_dirs)
    findings += log_findings
    zk_state = status["zk_migration_state"] if status else None
    kraft_brokers: list[int] = list(status["kraft_brokers"]) if status else []
    finalized = zk_state == "POST_MIGRATION"
    if image is not None:
        kraft_brokers = sorted(b for b, r in image.brokers.items() if not r.is_migrating_zk_broker)
        finalized = finalized or image.zk_migration_state == ZK_MIGRATION_POST
    started = kraft_owned or migration is not None
    phase = _phase_of(started=started, finalized=finalized, kraft_brokers=kraft_brokers)
    if finalized:
        findings.append(_FINALIZED)
    elif started:
        findings += _way_back_findings(
            kraft_brokers,
            known=image is not None or status is not None,
            logged=image is not None,
            migration=migration,
            newest=newest,
            log_offset=log_offset,
        )
    return Assessment(
        phase=phase,
        controller=controller,
        migration=migration,
        controller_epoch=epoch,
        max_state_epoch=max(states, default=-1),
        findings=findings,
        log_offset=log_offset,
    )


_FINALIZED = Finding(
    "finalized",
    False,
    "the migration is finalized (POST_MIGRATION): ZooKeeper has not been written "
    "since, so handing it back would lose every metadata change made after; "
    "there is no way back",
)


def _settled(client: ZkClient, version: int, settle_s: float) -> Finding:
    """Whether ``/migration`` (at ``version``) stays unchanged for ``settle_s``: a KRaft
    controller still running writes it."""
    time.sleep(settle_s)
    again = _read(client, paths.MIGRATION)
    moved = again is None or again[1] != version
    return Finding(
        "kraft-controller-active" if moved else "migration-znode-still",
        not moved,
        f"{paths.MIGRATION} changed within {settle_s:g}s: a KRaft controller is still "
        "writing ZooKeeper; stop every controller first"
        if moved
        else f"{paths.MIGRATION} did not change in {settle_s:g}s (version {version})",
    )


def _phase_of(*, started: bool, finalized: bool, kraft_brokers: list[int]) -> Phase:
    """The rollback table's row: finalized, not started, or started with or without
    brokers in KRaft mode."""
    if finalized:
        return Phase.FINALIZED
    if not started:
        return Phase.ZOOKEEPER
    return Phase.KRAFT_BROKERS if kraft_brokers else Phase.MIGRATION_ACTIVE


def _way_back_findings(
    kraft_brokers: list[int],
    *,
    known: bool,
    logged: bool,
    migration: tuple[MigrationZnode, int] | None,
    newest: Path | None,
    log_offset: int | None,
) -> list[Finding]:
    """What stands between a started, unfinalized migration and ZooKeeper: brokers in
    KRaft mode (``known``: whether a status or a log said which), and what the log
    (``logged``: one was read) owes ZooKeeper beyond ``/migration``."""
    findings = []
    if kraft_brokers:
        findings.append(
            Finding(
                "kraft-brokers-remain",
                False,
                f"brokers {kraft_brokers} run in KRaft mode: roll each back to ZooKeeper "
                "mode (with the migration flag) first; they cannot read ZooKeeper",
            )
        )
    elif known:
        findings.append(Finding("kraft-brokers-remain", True, "no broker runs in KRaft mode"))
    if not logged:
        findings.append(
            Finding(
                "log-dir-missing",
                False,
                "pass --log-dir with a controller's metadata.log.dir: without the log the "
                "write-behind lag, the KRaft brokers and finalization cannot be checked",
            )
        )
    elif migration is not None and log_offset is not None and newest is not None:
        findings.append(_lag_finding(newest, migration[0].kraft_metadata_offset, log_offset))
    elif migration is None:
        findings.append(
            Finding(
                "write-behind-lag",
                False,
                f"{paths.MIGRATION} is missing while a KRaft controller owns "
                f"{paths.CONTROLLER}: what ZooKeeper holds cannot be told",
            )
        )
    return findings


def _lag_finding(newest: Path, held: int, log_offset: int) -> Finding:
    """The write-behind lag: the metadata records of the log in ``newest`` (its image
    ending at ``log_offset``) after ``held``, the offset ``/migration`` says ZooKeeper
    holds; control and no-op records do not count."""
    lag = owed_to_zookeeper(newest, held, log_offset)
    after = max(0, log_offset - held)
    return Finding(
        "write-behind-lag",
        lag <= 0,
        f"{paths.MIGRATION} holds the log up to offset {held}; the most advanced "
        f"log's image ends at offset {log_offset}"
        + (
            f": {lag} metadata records were never written to ZooKeeper "
            "(start the quorum again and let it catch up, then stop it)"
            if lag > 0
            else ": lag 0"
            + (
                f" (the {after} records after it are control or no-op records, "
                "which ZooKeeper never holds)"
                if after
                else ""
            )
        ),
    )


def _newest_log(
    log_dirs: tuple[Path, ...],
) -> tuple[Path | None, MetadataImage | None, int | None, list[Finding]]:
    """The most advanced of ``log_dirs``, its image and the image's last offset."""
    best: MetadataImage | None = None
    best_dir: Path | None = None
    findings = []
    for d in log_dirs:
        checked = check_log(d)
        if checked.errors:
            findings.append(
                Finding("log-unreadable", False, f"{d}: {'; '.join(checked.errors[:3])}")
            )
            continue
        if best is None or checked.metadata.offset > best.offset:
            best, best_dir = checked.metadata, d
    return best_dir, best, (best.offset if best is not None else None), findings


def owed_to_zookeeper(log_dir: Path, held: int, upto: int) -> int:
    """The records of ``log_dir`` at offsets ``held`` < offset <= ``upto`` that ZooKeeper
    must hold: all but control records and Kafka's idle NoOpRecords (they change nothing
    ZooKeeper holds, only ``/migration``'s offset moves past them; a leader elected while
    the quorum was being stopped leaves its LeaderChange and NoOps past ``/migration``).
    Offsets only a snapshot covers all count (they cannot be told)."""
    if upto <= held:
        return 0
    with closing(open_log(log_dir)) as log:
        if held + 1 < log.start_offset:
            return upto - held
        owed = 0
        for offset, _, record in log.records(held + 1):
            if offset > upto:
                break
            if not kind_of(record).changes_nothing:
                owed += 1
        return owed


def hand_back(client: ZkClient, assessment: Assessment) -> list[Op]:
    """Write the assessment's multi (refused while any check failed); the ops written."""
    if assessment.blocked:
        raise RuntimeError("refusing to write: " + "; ".join(f.code for f in assessment.blocked))
    ops = assessment.ops()
    if ops:
        client.multi_write(ops)
    return ops
