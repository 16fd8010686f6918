"""The rehearsal, start to end: production's tree read once, then the whole migration run
on a local copy of it, measured phase by phase into a :class:`~.report.Report`.

Contracts:

- Production is only read: :func:`~migration.zk.tree_copy.read_tree` on the source the
  caller opened (a live ensemble or ZooKeeper's files), once; the source is closed right
  after (production's ZooKeeper session ends there). Everything after runs on
  this machine: an embedded ZooKeeper loaded with the copy under the same chroot, local
  ZooKeeper-mode brokers with production's broker ids (each registering with the rack
  its production registration has; endpoints local), three local controllers.
- The preflight runs on the copy as production has it, the brokers' registrations
  included (created as ephemerals, as production's are, by a session closed before the
  local brokers start), with the controllers' translation of the whole tree run in
  memory (a znode that would stop the copy -- an encrypted password config without
  production's password.encoder.secret, say -- is found here, not minutes later). A
  blocker or such a znode stops the rehearsal there: each one is a problem.
- Phases, in order (:data:`PHASES`); each recorded by the recorder, its ``detail`` saying
  what it found. A phase that raises ends the rehearsal: the problem names the phase
  and the error; the sections it did not reach stay ``None``. An audit difference, a
  failed rollback drill, admin requests that failed under the workload, Metadata that
  did not agree, or a finalization that did not reach KRaft are problems too.
- The report is written (:func:`~.report.write_reports`) whatever happened, also when
  the rehearsal is interrupted (KeyboardInterrupt, re-raised after); every local
  process is stopped and, unless ``keep``, every local directory removed.
- Errors before anything local started (the source cannot be read) are raised to the
  caller; so is a machine without ZooKeeper's jars or Java.
"""

from __future__ import annotations

import shutil
import signal
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from migration.bridge.preflight import (
    REGISTRATION_FINDINGS,
    PreflightReport,
    run_preflight,
)
from migration.driver import next_steps
from migration.local.cluster import LocalCluster
from migration.local.quorum import LocalQuorum
from migration.local.zookeeper import EmbeddedZooKeeper, ZooKeeperUnavailableError
from migration.observability.progress import Progress
from migration.rehearse import procedure, report, tree_facts
from migration.rehearse.estimate import estimate, measurements_from
from migration.rehearse.measure import audit_section, preflight_section, records_by_type
from migration.rehearse.procedure import WAIT_S, PhaseWatch, Say, quiet
from migration.rehearse.procedure_back import rollback_from_active
from migration.rehearse.workload import under_load
from migration.zk import paths
from migration.zk.client import ZkClient
from migration.zk.datatree import OfflineTree
from migration.zk.reader import read_snapshot
from migration.zk.snapshot import ZkSnapshot
from migration.zk.tree_copy import TreeCopy, load_tree, read_tree

PHASES = (
    "read",
    "load",
    "preflight",
    "brokers",
    "controllers",
    "enable-migration",
    "copy",
    "dual-write",
    "audit",
    "rollback-drill",
    "second-migration",
    "roll-to-kraft",
    "finalize",
)
CONTROLLERS = 3


@dataclass(frozen=True)
class Options:
    """What the rehearsal is given: the opened source, where the reports go, whether the
    local cluster's directories stay, production's password.encoder.secret (the copy and
    the audit decrypt password configs with it; never written anywhere but the local
    controllers' and brokers' properties) and the file it came from."""

    source: ZkClient | OfflineTree
    source_kind: report.SourceKind
    source_name: str
    out: Path
    keep: bool = False
    secret: str | None = None
    secret_file: Path | None = None
    workload_s: float = 10.0
    progress: Progress | None = None
    say: Say = quiet


@dataclass
class Outcome:
    report: report.Report
    json_path: Path | None
    html_path: Path | None
    kept: Path | None  # the local cluster's directories, with --keep


def _connect_of(zk: EmbeddedZooKeeper, chroot: str) -> str:
    return zk.connect_string + (chroot if chroot not in ("", "/") else "")


def _as_rehearsed(found: PreflightReport, tree: TreeCopy) -> PreflightReport:
    """Production's preflight as the copy shows it; ZooKeeper's files taken while no
    broker was registered (a backup of a stopped cluster) do not block the rehearsal on
    that: it starts the brokers the partition assignments name, and those findings are
    kept as warnings (production's own preflight must see the brokers registered)."""
    if tree.registrations:
        return found
    moved = [f for f in found.blockers if f.code in REGISTRATION_FINDINGS]
    note = "the source holds no broker registration (stopped brokers?); rehearsed with "
    note += "the brokers the assignments name; on production: "
    return replace(
        found,
        blockers=tuple(f for f in found.blockers if f.code not in REGISTRATION_FINDINGS),
        warnings=(
            *found.warnings,
            *(replace(f, severity="warning", message=note + f.message) for f in moved),
        ),
    )


class Rehearsal:
    """One rehearsal (see the module's contract); :meth:`run` once."""

    def __init__(self, options: Options) -> None:
        self.o = options
        self.rec = report.Recorder()
        self.report = report.Report(
            started=self.rec.started,
            finished=self.rec.started,
            machine=report.Machine.this_one(),
            phases=self.rec.phases,
        )
        self.work = Path(tempfile.mkdtemp(prefix="zk2kraft-rehearse-"))
        self.cluster: LocalCluster | None = None
        self.quorum: LocalQuorum | None = None
        self.controller_restarts: list[float] = []
        self.cluster_id = ""

    def say(self, line: str) -> None:
        self.o.say(line)

    @contextmanager
    def phase(self, name: str) -> Iterator[report.PhaseRecord]:
        """The recorder's phase, announced when it starts and ends."""
        self.say(f"== {name}")
        with self.rec.phase(name) as record:
            yield record
        self.say(f"== {name}: {record.seconds:.1f} s; {record.detail}")

    def run(self) -> Outcome:
        """The rehearsal; the report is written whatever happens (see the contract)."""
        try:
            with self.phase("read") as p:
                tree = read_tree(self.o.source, self.o.progress)
                p.detail = f"{tree.znodes:,} znodes, {tree.bytes:,} bytes read once"
        except BaseException:
            self._cleanup()
            raise
        finally:
            self.o.source.close()  # production's session ends before anything local starts
        try:
            self._local(tree)
        except KeyboardInterrupt:
            self.report.problems.append("interrupted: the rehearsal did not finish")
            self._finish()
            raise
        except ZooKeeperUnavailableError:
            self._cleanup()
            raise
        except Exception as exc:
            failed = next((p.name for p in reversed(self.rec.phases) if not p.ok), "?")
            self.report.problems.append(f"phase {failed} failed: {type(exc).__name__}: {exc}")
        return self._finish()

    def _finish(self) -> Outcome:
        self.report.finished = self.rec.now()
        if self.report.copy is not None:  # nothing to scale before the copy was measured
            self.report.estimate = estimate(
                measurements_from(self.report, CONTROLLERS, tuple(self.controller_restarts))
            )
        self.report.runbook = self._runbook()
        try:
            json_path, html_path = report.write_reports(self.report, self.o.out)
        finally:
            kept = self._cleanup()
        return Outcome(self.report, json_path, html_path, kept)

    def _stop_processes(self) -> None:
        """The local brokers, then the controllers, stopped (SIGTERM: the brokers' controlled
        shutdown still finds their controller; each killed past its stop budget)."""
        if self.quorum is not None or self.cluster is not None:
            self.say("stopping the local brokers and controllers")
        try:
            if self.cluster is not None:
                self.cluster.stop()
        finally:
            try:
                if self.quorum is not None:
                    try:
                        self.quorum.stop_all(signal.SIGTERM)
                    except TimeoutError:  # one did not stop in time: none is left running
                        self.quorum.stop_all(signal.SIGKILL)
            finally:
                self.quorum = self.cluster = None

    def _cleanup(self) -> Path | None:
        """Stop every local process; remove the local directories unless ``keep``."""
        self._stop_processes()
        if self.o.keep:
            return self.work
        shutil.rmtree(self.work, ignore_errors=True)
        return None

    def _runbook(self) -> list[report.RunbookStep]:
        values = {}
        if self.report.source is not None:
            values["BROKER_IDS"] = " ".join(map(str, self.report.source.broker_ids))
            if self.o.source_kind == "zookeeper":
                values["ZK"] = self.o.source_name
        return [
            report.RunbookStep(
                step.runbook, step.title, tuple(next_steps.fill(c, values) for c in step.commands)
            )
            for step in next_steps.production_steps()
        ]

    def _local(self, tree: TreeCopy) -> None:
        with EmbeddedZooKeeper(
            base_dir=self.work / "zookeeper", heap_mb=tree_facts.heap_mb(tree)
        ) as zk:
            connect = _connect_of(zk, tree.chroot)
            with ZkClient(connect) as client:
                with self.phase("load") as p:
                    written = load_tree(client, tree, self.o.progress)
                    p.detail = f"{written:,} znodes into a local ZooKeeper at {connect}"
                snap = self._preflight(connect, tree)
                if self.report.problems:
                    return
                try:
                    self._migrate(connect, client, tree, snap)
                finally:  # while their ZooKeeper still runs: they stop at once
                    self._stop_processes()

    def _preflight(self, connect: str, tree: TreeCopy) -> ZkSnapshot:
        with self.phase("preflight") as p:
            with ZkClient(connect) as session:  # production's registrations, as ephemerals
                for bid, raw in sorted(tree.registrations.items()):
                    session.kazoo.create(paths.broker(bid), raw, ephemeral=True, makepath=True)
                started = time.monotonic()
                snap = read_snapshot(session)
                found = _as_rehearsed(
                    run_preflight(snap, tree.read_s + time.monotonic() - started), tree
                )
            self.report.preflight = preflight_section(found)
            self.cluster_id = tree_facts.cluster_id(tree)
            self.report.source = report.Source(
                kind=self.o.source_kind,
                name=self.o.source_name,
                chroot=tree.chroot,
                znodes=tree.znodes,
                bytes=tree.bytes,
                read_s=tree.read_s,
                cluster_id=self.cluster_id,
                broker_ids=tuple(tree_facts.broker_ids(tree, snap)),
                counts=snap.counts(),
            )
            for f in found.blockers:
                self.report.problems.append(f"preflight blocker {f.code}: {f.message}")
            records = self._translates(snap)
            p.detail = f"{len(found.blockers)} blocker(s), {len(found.warnings)} warning(s)"
            if records >= 0:
                p.detail += f"; the tree translates into {records:,} records"
        return snap

    def _translates(self, snap: ZkSnapshot) -> int:
        """The records the copy will make of the tree, or -1 with the problem named."""
        records, problem = tree_facts.translates(snap, self.o.secret)
        if problem:
            self.report.problems.append(f"the copy would stop: {problem}")
        return records

    def _migrate(self, connect: str, client: ZkClient, tree: TreeCopy, snap: ZkSnapshot) -> None:
        assert self.report.source is not None
        ids = list(self.report.source.broker_ids)
        say = self.say
        with self.phase("brokers") as p:
            props = {"password.encoder.secret": self.o.secret} if self.o.secret else {}
            self.cluster = cluster = LocalCluster(
                connect, ids, self.work / "cluster", properties=props,
                broker_properties=tree_facts.racks(tree),
            )  # fmt: skip
            cluster.start()
            cluster.wait_ready(WAIT_S)
            p.detail = f"ZooKeeper-mode brokers {ids} serving at {cluster.bootstrap}"
        with self.phase("controllers") as p:
            self.quorum = quorum = procedure.provision_controllers(
                cluster, self.cluster_id, self.work / "quorum", self.o.secret, say
            )
            watch = PhaseWatch(quorum, say)
            watch.until(lambda r: r["driver_phase"] == "WAIT_FOR_BROKERS")
            p.detail = f"controllers {quorum.ids} waiting for the brokers"
        with self.phase("enable-migration") as p:
            restarts = procedure.roll_with_flag(cluster, quorum, watch, say)
            self._restarts(restarts)
            p.detail = f"{len(restarts)} brokers restarted with the migration flag"
        with self.phase("copy") as p:
            procedure.until_dual_write(quorum, watch, say)
            self._copy(quorum)
            copied = self.report.copy
            assert copied is not None
            p.detail = (
                f"{copied.records:,} records copied in {copied.copy_ms:.0f} ms, metadata writes "
                f"paused {copied.write_pause_ms:.0f} ms (during the last broker's restart)"
            )
        with self.phase("dual-write") as p:
            p.detail = self._dual_write(cluster, quorum, watch)
        with self.phase("audit") as p:
            run = procedure.audit(connect, quorum, json=True, secret_file=self.o.secret_file)
            self.report.audit = audit = audit_section(run)
            p.detail = audit.summary
            if not audit.ok:
                self.report.problems.append(f"audit: {audit.summary}")
        with self.phase("rollback-drill") as p:
            self._drill(cluster, quorum, client, watch)
            p.detail = self.report.rollback_drill.detail if self.report.rollback_drill else ""
        with self.phase("second-migration") as p:
            since = procedure.output_offsets(quorum)
            procedure.start_controllers(quorum, self.cluster_id, say)
            self._restarts(procedure.roll_with_flag(cluster, quorum, watch, say))
            procedure.until_dual_write(quorum, watch, say, since)
            again = procedure.copy_figures(quorum, since)
            p.detail = f"migrated again: {again.records:,} records copied in {again.copy_ms:.0f} ms"
        with self.phase("roll-to-kraft") as p:
            roll = procedure.roll_to_kraft(cluster, watch, say)
            self._restarts(roll.restarts)
            self.report.roll = report.Roll(
                seconds=roll.seconds,
                brokers=tuple(ids),
                offline_partitions=len(roll.offline),
                metadata_agreed=roll.agreed,
            )
            p.detail = (
                f"every broker in KRaft mode: MigrationFinished; {roll.comparisons} Metadata "
                f"comparisons, {len(roll.offline)} partition(s) seen offline"
            )
            if not roll.agreed:
                self.report.problems.append(
                    "roll: Metadata through the two kinds of broker disagreed"
                )
            if roll.offline:
                self.report.problems.append(
                    f"roll: {len(roll.offline)} partition(s) offline during the roll "
                    f"({', '.join(sorted(roll.offline)[:5])})"
                )
        with self.phase("finalize") as p:
            started = time.monotonic()
            final = self._finalize(quorum, watch)
            self.report.finalized = report.Finalized(
                ok=final == "KRaft", seconds=time.monotonic() - started, state=final
            )
            p.detail = f"controllers restarted without the flag: {final}"

    def _restarts(self, restarts: list[procedure.Restart]) -> None:
        for r in restarts:
            to: report.BrokerMode = r.to  # type: ignore[assignment]
            self.report.restarts.append(report.Restart(r.broker, to, r.seconds))

    def _copy(self, quorum: LocalQuorum) -> None:
        figures = procedure.copy_figures(quorum)
        node = figures.controller
        by_type = records_by_type(quorum.log_dir(node)) if node is not None else {}
        paused = figures.paused_at
        self.report.copy = report.Copy(
            records=figures.records,
            records_by_type=by_type,
            copy_ms=figures.copy_ms,
            write_pause_ms=figures.write_pause_ms,
            pause_started_s=self.report.since_start(paused) if paused is not None else None,
        )

    def _dual_write(self, cluster: LocalCluster, quorum: LocalQuorum, watch: PhaseWatch) -> str:
        """The workload for ``workload_s`` seconds, the lag sampled beside it, until
        ZooKeeper has caught up (:func:`~.workload.under_load`)."""
        self.say(f"a synthetic admin workload through the brokers for {self.o.workload_s:g} s")
        load, sampler = under_load(
            cluster.bootstrap,
            min(3, len(cluster.broker_ids)),
            quorum.bootstrap,
            seconds=self.o.workload_s,
            recording=self.rec,
            caught_up=lambda: watch.until(lambda r: r["zk_write_behind_lag"] == 0),
        )
        self.report.dual_write = report.DualWrite(
            changes=load.changes,
            by_kind=dict(load.by_kind),
            errors=load.errors,
            max_lag=sampler.max_lag,
            lag=tuple(sampler.samples),
            latency_ms=tuple(load.latency_ms),
        )
        if load.errors:
            self.report.problems.append(
                f"dual-write: {load.errors} of {load.changes} admin request(s) failed: "
                + "; ".join(load.problems[:3])
            )
        return (
            f"{load.changes:,} metadata changes ({load.rounds} rounds of {len(load.by_kind)} "
            f"kinds), {load.errors} error(s); write-behind lag at most {sampler.max_lag}"
        )

    def _drill(
        self, cluster: LocalCluster, quorum: LocalQuorum, client: ZkClient, watch: PhaseWatch
    ) -> None:
        drill = rollback_from_active(cluster, quorum, client, watch, self.say)
        self._restarts(drill.restarts)
        failed = [f.code for f in drill.findings if not f.ok]
        detail = (
            f"back to ZooKeeper from MigrationActive in {drill.seconds:.1f} s: "
            + (", ".join(drill.written) or "nothing written")
            + (
                f"; broker {drill.zk_controller} elected ZooKeeper controller"
                if drill.zk_controller is not None
                else ""
            )
            if drill.ok
            else f"refused or failed: {', '.join(failed) or 'no finding'}"
        )
        self.report.rollback_drill = report.RollbackDrill(
            ok=drill.ok,
            seconds=drill.seconds,
            from_state="MigrationActive",
            findings=tuple(report.DrillFinding(f.code, f.ok, f.message) for f in drill.findings),
            detail=detail,
        )
        if not drill.ok:
            self.report.problems.append(f"rollback drill: {detail}")

    def _finalize(self, quorum: LocalQuorum, watch: PhaseWatch) -> str:
        """finalize.md section 4, each controller's restart timed (for the estimate)."""
        watch.until(lambda r: r["zk_write_behind_lag"] == 0)
        before = time.monotonic()
        status = procedure.finalize(quorum, watch, self.say)
        self.controller_restarts.append((time.monotonic() - before) / CONTROLLERS)
        state = str(status["state"])
        if state != "KRaft":
            self.report.problems.append(f"finalization ended in {state}, not KRaft")
        return state


def rehearse(options: Options) -> Outcome:
    """Run one rehearsal (see the module's contract)."""
    return Rehearsal(options).run()
